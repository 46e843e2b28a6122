"""ThreadSafeStore: the informer cache's dict of objects plus its indices, behind one lock.

client-go's ``threadSafeMap``. :class:`~kinformer.Indexer` puts a key function in front of it;
listers and ``SharedIndexInformer.get_indexer()`` read through that. Keys are explicit strings
here. Each index maps an index value to a ``{key: object}`` dict, so ``by_index`` hands back
objects without a second lookup, and the values each key was indexed under are remembered, so
updates and deletes never call index functions on the old object (and survive an object mutated in
place by mistake). That bookkeeping is :mod:`kinformer.cache._indexing`'s, shared with the compact
store.
"""

from __future__ import annotations

import builtins
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kinformer import errors, meta
from kinformer.cache import _indexing

IndexFunc = _indexing.IndexFunc
"""Computes the index values of an object (client-go ``IndexFunc``)."""

Indexers = _indexing.Indexers
"""Index name -> index function."""


def _unknown_index(name: str) -> errors.IndexerError:
    return errors.IndexerError(f"Index with name {name} does not exist")


class IndexedMap:
    """The machinery shared by :class:`ThreadSafeStore` and :class:`~kinformer.Indexer`.

    Writes are ``_write``/``_delete``/``_replace`` by explicit key; the subclasses give them their
    public names, so the hot paths cost no extra call. :meth:`add_new` is public on both.
    """

    # (key function, index name, index function) that _write may read inline; see _ns_at
    _standard: tuple[Callable[[Any], str], str, IndexFunc] | None = None

    __slots__ = (
        "__weakref__",  # the collector policy tracks a stopped informer's cache (kinformer._gc)
        "_fns",
        "_indexers",
        "_indices",
        "_items",
        "_key_func",
        "_key_values",
        "_lock",
        "_names",
        "_ns_at",
        "_rv",
        "_rv_obj",
        "_slots",
    )

    def __init__(
        self, indexers: Indexers | None = None, key_func: Callable[[Any], str] | None = None
    ) -> None:
        self._key_func = key_func or _no_key_func
        self._lock = threading.Lock()  # guards everything below; indices always agree with _items
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # Parallel tuples, rebuilt (never mutated) when indexers or indices change wholesale, so
        # a writer can compute index values outside the lock and detect a change under it.
        self._names: tuple[str, ...] = tuple(self._indexers)
        self._fns: tuple[IndexFunc, ...] = tuple(self._indexers.values())
        self._indices: dict[str, _indexing.Index] = {name: {} for name in self._indexers}
        self._key_values: dict[str, _indexing.KeyValues] = {name: {} for name in self._indexers}
        self._slots = self._make_slots()
        self._ns_at = self._standard_at()
        self._rv = ""
        self._rv_obj: Any = None  # the last object written; its RV is the store's RV when set

    def _make_slots(self) -> _indexing.Slots:
        """Per index, in indexer order: its map, its key -> values map, its position in _fns."""
        return _indexing.slots(self._indexers, self._indices, self._key_values)

    def _standard_at(self) -> int:
        """The position of the standard namespace index in ``_fns`` when ``_write`` may read it
        and the key inline (see ``_standard``), else -1."""
        standard = self._standard
        if standard is None or self._key_func is not standard[0]:
            return -1
        _, name, fn = standard
        if self._indexers.get(name) is not fn:
            return -1
        return self._names.index(name)

    # -- writes ------------------------------------------------------------------------------

    def _write(self, obj: Any, key: str | None = None) -> None:
        """Store ``obj`` under ``key`` (default: the key function's), replacing, and reindex.

        Indexer's ``add``/``update`` is this very function, so a write costs one call.
        """
        ns_at = self._ns_at  # read before _fns: add_indexers sets it after, and only appends
        object_key = meta.object_key  # the one key format, a local for this hot path
        fns = self._fns
        values: Sequence[Sequence[str]] | None = None
        if key is None:
            # The fast path of the usual cache (Indexer: "namespace/name" keys and the standard
            # namespace index) for a decoded object: its key and namespace are read here, in
            # one look at its metadata, instead of calling the key function and the index
            # function, which read the same two fields (about 0.3 µs of a 2 µs add). Any other
            # object, key function or index takes the general path below, to the same result.
            md = obj.get("metadata") if ns_at >= 0 and type(obj) is dict else None
            if type(md) is dict and type(name := md.get("name")) is str and (
                    not (ns := md.get("namespace")) or type(ns) is str):
                key = object_key(ns, name)
                own = (ns or "",)
                n = len(fns)
                check = _indexing.check
                if n == 1:
                    values = (own,)
                elif n == 2:
                    values = (own, check(fns[1](obj))) if ns_at == 0 else (check(fns[0](obj)), own)
                else:
                    values = [own if i == ns_at else check(fn(obj)) for i, fn in enumerate(fns)]
            else:
                try:
                    key = self._key_func(obj)
                except Exception as exc:
                    raise errors.KeyFuncError(
                        f"couldn't create key for object {meta.shown(obj)}: {exc}"
                    ) from exc
        lock = self._lock
        if values is None:
            if not fns:
                lock.acquire()
                try:
                    if not self._fns:
                        self._items[key] = obj
                        self._rv_obj = obj
                        return
                finally:
                    lock.release()
                fns = self._fns
            n = len(fns)  # unrolled for the usual one or two indexes: no comprehension frame
            check = _indexing.check  # values that cannot be indexed fail here, outside the lock
            if n == 1:
                values = (check(fns[0](obj)),)
            elif n == 2:
                values = (check(fns[0](obj)), check(fns[1](obj)))
            else:
                values = _indexing.index_values(fns, obj)
        lock.acquire()
        try:
            if fns is not self._fns:  # add_indexers ran meanwhile: rare, recompute under the lock
                values = _indexing.index_values(self._fns, obj)
            items = self._items
            if key in items:
                items[key] = obj
                self._rv_obj = obj
                _indexing.reindex(self._slots, key, obj, values, None)
                return
            items[key] = obj
            self._rv_obj = obj
            for index, key_values, i in self._slots:  # a new key: nothing to take out first
                vals = values[i]
                if len(vals) == 1:
                    # _indexing.insert's one-value case, inline: the usual add indexes one value
                    # per index, and a call per index costs about a tenth of an add
                    key_values[key] = v = vals[0]
                    bucket = index.get(v)
                    if bucket is None:
                        index[v] = {key: obj}
                    else:
                        bucket[key] = obj
                else:
                    _indexing.insert(index, key_values, key, obj, vals)
        finally:
            lock.release()

    def add_new(self, items: dict[str, Any]) -> bool:
        """Store many objects under keys not stored yet, in one pass and one lock hold.

        ``items`` maps each object's key to it. The same end state as adding each item in order
        (the last one sets the store's resourceVersion), atomically. Returns False and changes
        nothing when a key is already stored or the indexers changed meanwhile; an index
        function error propagates and changes nothing. Callers then add the items one by one
        (the informer applies a first list this way, in batches).
        """
        return self._add_new(items)

    def _add_new(
        self, items: dict[str, Any],
        known: tuple[str, IndexFunc, Sequence[tuple[str, int]]] | None = None,
    ) -> bool:
        """:meth:`add_new`; ``known`` is ``(name, fn, runs)``: when the index ``name`` has the
        function ``fn``, each item has one value under it, given in item order by ``runs`` of
        ``(value, how many in a row)``, so ``fn`` is not called (the caller vouches for it)."""
        if not items:
            return True
        fns = self._fns
        names = self._names  # read after _fns: add_indexers sets _names first, then _fns
        columns: builtins.list[builtins.list[Sequence[str]] | None] = []
        objs: builtins.list[Any] | None = None
        # names may be longer (add_indexers ran meanwhile: the check under the lock says so)
        for name, fn in zip(names, fns, strict=False):  # values outside the lock, may raise
            if known is not None and fn is known[1] and name == known[0]:
                columns.append(None)
                continue
            if objs is None:
                objs = list(items.values())
            check = _indexing.check
            columns.append([check(fn(obj)) for obj in objs])
        last = next(reversed(items.values()))
        lock = self._lock
        lock.acquire()
        try:
            if fns is not self._fns:
                return False
            stored = self._items
            if not stored.keys().isdisjoint(items.keys()):  # a view: the smaller is walked
                return False
            stored.update(items)
            self._rv_obj = last
            for index, key_values, i in self._slots:
                column = columns[i]
                if column is None:
                    assert known is not None
                    _indexing.index_runs(index, key_values, items, known[2])
                else:
                    _indexing.index_into(index, key_values, zip(items.items(), column, strict=True))
            return True
        finally:
            lock.release()

    def _delete(self, key: str, obj: Any = None) -> None:
        """Remove ``key`` and its index entries; a missing key is a no-op.

        ``obj``, when given, is the deleted object's final state: its resourceVersion becomes the
        store's (a bare key leaves the store's resourceVersion alone).
        """
        lock = self._lock
        lock.acquire()
        try:
            if obj is not None:
                self._rv_obj = obj
            self._unindex_locked(key)
        finally:
            lock.release()

    def _unindex_locked(self, key: str) -> Any:
        """Remove ``key`` and its index entries; return the object it held (_MISSING if none)."""
        old = self._items.pop(key, _MISSING)
        if old is _MISSING:
            return old
        for index, key_values, _ in self._slots:
            values = key_values.pop(key, None)
            if values is not None:
                _indexing.drop(index, key, values)
        return old

    def apply_batch(self, changes: Sequence[tuple[str, Any, bool]]) -> builtins.list[Any]:
        """Apply writes and deletions of distinct keys in one lock hold: one transaction.

        ``changes`` holds ``(key, obj, delete)``: ``delete`` False stores ``obj`` under
        ``key``; True removes ``key``, ``obj`` being the deleted object's final state. Returns,
        per change, the object ``key`` held before (None when it held none), or
        :data:`NOT_APPLIED` for a write whose index function raised: that change alone is left
        out (logged by the caller), the others are applied. Readers see all of the batch or none.
        """
        fns = self._fns
        values: builtins.list[Sequence[Sequence[str]] | None]
        if not fns:  # nothing to index: no values to compute
            values = [None if delete else () for _key, _obj, delete in changes]
        else:
            values = []
            for _key, obj, delete in changes:  # index values outside the lock, as a single write
                if delete:
                    values.append(None)
                    continue
                try:
                    values.append(_indexing.index_values(fns, obj))
                except Exception:
                    values.append(_FAILED)
        olds: builtins.list[Any] = []
        append = olds.append
        last = _MISSING  # the object that sets the store's resourceVersion, set once at the end
        lock = self._lock
        lock.acquire()
        try:
            recompute = fns is not self._fns
            items = self._items
            slots = self._slots
            for (key, obj, delete), vals in zip(changes, values, strict=True):
                if vals is _FAILED:
                    append(NOT_APPLIED)
                    continue
                if delete:
                    old = self._unindex_locked(key)
                    append(None if old is _MISSING else old)
                    if obj is not None:
                        last = obj
                    continue
                if recompute:  # add_indexers ran meanwhile: rare, recompute under the lock
                    try:
                        vals = _indexing.index_values(self._fns, obj)
                    except Exception:
                        append(NOT_APPLIED)
                        continue
                append(items.get(key))
                items[key] = obj
                last = obj
                if slots:
                    assert vals is not None
                    _indexing.reindex(slots, key, obj, vals, None)
        finally:
            if last is not _MISSING:
                self._rv_obj = last
            lock.release()
        return olds

    def replace_keyed(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Make ``items`` (key -> object) the whole content atomically, indexes rebuilt."""
        self._replace(items, resource_version)

    def bookmark(self, resource_version: str) -> None:
        """Note that the cache has caught up to ``resource_version`` with no object changing.

        :meth:`last_store_sync_resource_version` reports it until the next write.
        """
        with self._lock:
            self._rv = resource_version
            self._rv_obj = None

    def _replace(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Swap in ``items`` as the whole content, rebuilding every index from scratch."""
        new_items = dict(items)
        fns = self._fns
        built = self._build(fns, new_items)
        with self._lock:
            if fns is not self._fns:
                built = self._build(self._fns, new_items)
            self._items = new_items
            self._indices, self._key_values = built
            self._slots = self._make_slots()
            self._rv = resource_version
            self._rv_obj = None

    def _build(
        self, fns: tuple[IndexFunc, ...], items: Mapping[str, Any]
    ) -> tuple[dict[str, _indexing.Index], dict[str, _indexing.KeyValues]]:
        names = self._names[: len(fns)]  # names only grow, and change before _fns does
        indices: dict[str, _indexing.Index] = {}
        key_values: dict[str, _indexing.KeyValues] = {}
        for name, fn in zip(names, fns, strict=True):
            indices[name], key_values[name] = _indexing.index_all(fn, items)
        return indices, key_values

    def add_indexers(self, indexers: Indexers) -> None:
        """Register more indexers and index the items already stored under them.

        Raises :class:`~kinformer.IndexerConflictError` naming every name that already
        exists, adding none. Index functions run under the lock here (writers wait meanwhile).
        """
        with self._lock:
            conflict = sorted(set(indexers) & set(self._indexers))
            if conflict:
                raise errors.IndexerConflictError(f"indexer conflict: {conflict}")
            built = {name: _indexing.index_all(fn, self._items) for name, fn in indexers.items()}
            for name, fn in indexers.items():
                self._indexers[name] = fn
                self._indices[name], self._key_values[name] = built[name]
            self._names = tuple(self._indexers)
            self._fns = tuple(self._indexers.values())
            self._slots = self._make_slots()
            self._ns_at = self._standard_at()

    # -- reads -------------------------------------------------------------------------------

    def _get(self, key: str) -> Any | None:
        """The object stored under ``key``, or None."""
        lock = self._lock
        lock.acquire()
        try:
            return self._items.get(key)
        finally:
            lock.release()

    def snapshot(self) -> dict[str, Any]:
        """A copy of the whole content, key -> object, taken atomically."""
        with self._lock:
            return dict(self._items)

    def list(self) -> builtins.list[Any]:
        """Every stored object, in no particular order."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Every key, in no particular order."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """Stored objects sharing any of ``obj``'s values of the named index (no duplicates)."""
        fn = self._indexers.get(index_name)
        if fn is None:
            raise _unknown_index(index_name)
        values = fn(obj)
        with self._lock:
            index = self._indices.get(index_name)
            if index is None:
                raise _unknown_index(index_name)
            if len(values) == 1:
                bucket = index.get(values[0])
                return list(bucket.values()) if bucket else []
            union: dict[str, Any] = {}
            for v in values:
                bucket = index.get(v)
                if bucket:
                    union.update(bucket)
            return list(union.values())

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """Stored objects whose named index includes ``indexed_value`` ([] for an unknown value)."""
        lock = self._lock
        lock.acquire()
        try:
            index = self._indices.get(index_name)
            if index is None:
                raise _unknown_index(index_name)
            bucket = index.get(indexed_value)
            return list(bucket.values()) if bucket else []
        finally:
            lock.release()

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Keys whose named index includes ``indexed_value`` ([] for an unknown value)."""
        with self._lock:
            index = self._indices.get(index_name)
            if index is None:
                raise _unknown_index(index_name)
            bucket = index.get(indexed_value)
            return list(bucket) if bucket else []

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value the named index currently holds; [] (not an error) for an unknown index."""
        with self._lock:
            index = self._indices.get(index_name)
            return list(index) if index is not None else []

    def get_indexers(self) -> Mapping[str, IndexFunc]:
        """A live, read-only view of the registered index functions."""
        return types.MappingProxyType(self._indexers)

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the last replace or of the last object written, "" if none."""
        with self._lock:
            obj, rv = self._rv_obj, self._rv
        if obj is not None:
            found = meta.resource_version(obj)
            if found:  # an object without one (None, or "") leaves the replace's version
                return found
        return rv


class ThreadSafeStore(IndexedMap):
    """A key -> object map with secondary indices; every operation is atomic under one lock.

    Reads (``get``, ``list``, ``by_index``...) see one consistent snapshot and return the stored
    objects themselves: treat them as read-only, since mutating one corrupts the indices of
    everyone sharing the cache. Index functions run before the lock is taken (for
    ``add_indexers``: under it, over the current items); if one raises, the store is unchanged
    and the error propagates. Never blocks beyond the lock.
    """

    __slots__ = ()

    def add(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key`` (replacing any object there) and update every index."""
        self._write(obj, key)

    update = add
    delete = IndexedMap._delete
    get = IndexedMap._get
    replace = IndexedMap._replace

    def resync(self) -> None:
        """Nothing to do for a store (kept for the ``Store`` shape)."""


_MISSING = object()
_FAILED: Sequence[Sequence[str]] = ((),)  # an index value list no index function returns: a marker

NOT_APPLIED: Any = object()
"""What :meth:`IndexedMap.apply_batch` reports for a write whose index function raised."""


def _no_key_func(obj: Any) -> str:
    raise errors.KeyFuncError("ThreadSafeStore needs explicit keys")
