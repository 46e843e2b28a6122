"""ThreadSafeStore: the informer cache's dict of objects plus its indices, behind one lock.

client-go's ``threadSafeMap``. :class:`~kinformer.Indexer` puts a key function in front of it;
listers and ``SharedIndexInformer.get_indexer()`` read through that. Keys are explicit strings
here. Each index maps an index value to a ``{key: object}`` dict, so ``by_index`` hands back
objects without a second lookup, and the values each key was indexed under are remembered, so
updates and deletes never call index functions on the old object (and survive an object mutated in
place by mistake).
"""

from __future__ import annotations

import builtins
import itertools
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kinformer import errors, meta

IndexFunc = Callable[[Any], Sequence[str]]
"""Computes the index values of an object (client-go ``IndexFunc``)."""

Indexers = Mapping[str, IndexFunc]
"""Index name -> index function."""

_Index = dict[str, dict[str, Any]]  # index value -> {key: object}
# key -> the values the key is indexed under: the one value itself (the usual case), or a tuple of
# them. Neither is a container the cyclic collector has to keep tracking, unlike the lists index
# functions return; that keeps a large cache cheap for the collector to walk.
_KeyValues = dict[str, Any]


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
        self._indices: dict[str, _Index] = {name: {} for name in self._indexers}
        self._key_values: dict[str, _KeyValues] = {name: {} for name in self._indexers}
        self._slots: tuple[tuple[_Index, _KeyValues, int], ...] = self._make_slots()
        self._ns_at = self._standard_at()
        self._rv = ""
        self._rv_obj: Any = None  # the last object written; its RV is the store's RV when set

    def _make_slots(self) -> tuple[tuple[_Index, _KeyValues, int], ...]:
        """Per index, in indexer order: its map, its key -> values map, its position in _fns."""
        return tuple(
            (self._indices[name], self._key_values[name], i)
            for i, name in enumerate(self._indexers)
        )

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
                key = ns + "/" + name if ns else name
                own = (ns or "",)
                n = len(fns)
                if n == 1:
                    values = (own,)
                elif n == 2:
                    values = (own, fns[1](obj)) if ns_at == 0 else (fns[0](obj), own)
                else:
                    values = [own if i == ns_at else fn(obj) for i, fn in enumerate(fns)]
            else:
                try:
                    key = self._key_func(obj)
                except Exception as exc:
                    raise errors.KeyFuncError(
                        f"couldn't create key for object {obj!r:.200}: {exc}"
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
            if n == 1:
                values = (fns[0](obj),)
            elif n == 2:
                values = (fns[0](obj), fns[1](obj))
            else:
                values = _index_values(fns, obj)
        lock.acquire()
        try:
            if fns is not self._fns:  # add_indexers ran meanwhile: rare, recompute under the lock
                values = _index_values(self._fns, obj)
            items = self._items
            if key in items:
                items[key] = obj
                self._rv_obj = obj
                self._reindex_locked(key, obj, values)
                return
            items[key] = obj
            self._rv_obj = obj
            # a new key, inline (_reindex_locked's work with nothing indexed before): no call
            for index, key_values, i in self._slots:
                vals = values[i]
                if len(vals) == 1:
                    key_values[key] = v = vals[0]
                    bucket = index.get(v)
                    if bucket is None:
                        index[v] = {key: obj}
                    else:
                        bucket[key] = obj
                else:
                    key_values[key] = several = tuple(vals)
                    _put_each(index, several, key, obj)
        finally:
            lock.release()

    def _reindex_locked(self, key: str, obj: Any, values: Sequence[Sequence[str]]) -> None:
        """Point every index at ``obj`` under ``key``, ``values`` being its values per index."""
        for index, key_values, i in self._slots:  # no zip(): it costs more than the work
            vals = values[i]
            if len(vals) == 1:  # the usual case, unrolled: one value, kept as itself
                v = vals[0]
                old = key_values.get(key)
                key_values[key] = v
                if old is not None:
                    if old == v:  # the same value: only the object reference changes
                        index[v][key] = obj
                        continue
                    _unindex(index, key, old)
                bucket = index.get(v)
                if bucket is None:
                    index[v] = {key: obj}
                else:
                    bucket[key] = obj
                continue
            new = tuple(vals)
            old = key_values.get(key)
            key_values[key] = new
            if old is not None:
                if old == new:
                    for v in new:
                        index[v][key] = obj
                    continue
                _unindex(index, key, old)
            _put_each(index, new, key, obj)

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
            columns.append([fn(obj) for obj in objs])
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
                    _index_one_each(index, key_values, items, known[2])
                else:
                    _index_into(index, key_values, zip(items.items(), column, strict=True))
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
                _unindex(index, key, values)
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
                    values.append(_index_values(fns, obj))
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
            reindex = self._reindex_locked if self._slots else None
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
                        vals = _index_values(self._fns, obj)
                    except Exception:
                        append(NOT_APPLIED)
                        continue
                append(items.get(key))
                items[key] = obj
                last = obj
                if reindex is not None:
                    assert vals is not None
                    reindex(key, obj, vals)
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
    ) -> tuple[dict[str, _Index], dict[str, _KeyValues]]:
        names = self._names[: len(fns)]  # names only grow, and change before _fns does
        indices: dict[str, _Index] = {}
        key_values: dict[str, _KeyValues] = {}
        for name, fn in zip(names, fns, strict=True):
            indices[name], key_values[name] = _index_all(fn, items)
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
            built = {name: _index_all(fn, self._items) for name, fn in indexers.items()}
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


def _index_values(fns: tuple[IndexFunc, ...], obj: Any) -> Sequence[Sequence[str]]:
    """Every index function's values for ``obj``; unrolled for the usual one to three indexes."""
    n = len(fns)
    if n == 1:
        return (fns[0](obj),)
    if n == 2:
        return (fns[0](obj), fns[1](obj))
    if n == 3:
        return (fns[0](obj), fns[1](obj), fns[2](obj))
    return [fn(obj) for fn in fns]


def _index_all(fn: IndexFunc, items: Mapping[str, Any]) -> tuple[_Index, _KeyValues]:
    """Index every item with one function."""
    index: _Index = {}
    key_values: _KeyValues = {}
    _index_into(index, key_values, ((item, fn(item[1])) for item in items.items()))
    return index, key_values


def _index_into(
    index: _Index, key_values: _KeyValues, entries: Iterable[tuple[tuple[str, Any], Sequence[str]]]
) -> None:
    """Add ``((key, obj), values)`` entries for keys not indexed yet to one index."""
    for (key, obj), vals in entries:
        if len(vals) != 1:  # several values: the rare case, kept as a tuple
            key_values[key] = new = tuple(vals)
            _put_each(index, new, key, obj)
        else:  # the usual case, inlined: one value, kept as itself
            key_values[key] = v = vals[0]
            bucket = index.get(v)
            if bucket is None:
                index[v] = {key: obj}
            else:
                bucket[key] = obj


def _index_one_each(
    index: _Index, key_values: _KeyValues, items: Mapping[str, Any], runs: Sequence[tuple[str, int]]
) -> None:
    """Add ``items`` (key -> object, keys not indexed yet) to one index, where each item has one
    value: ``runs`` give them in item order, ``(value, how many in a row)``."""
    covered = sum(count for _, count in runs)
    if covered != len(items):
        raise ValueError(f"index value runs for {covered} items, not {len(items)}")
    if len(runs) <= len(items) // 64 + 1:
        # A list comes from the API server in key order, so its objects of one namespace come
        # together: each run of one value is indexed by C-level copies, not a Python step per
        # object (add_new of 100,000 objects of one namespace: 23-25 ms with the loop below,
        # 13 ms so). Same end state, insertion order included; values scattered over many
        # runs take the loop.
        if len(runs) == 1 and not index:  # one value for all (a namespaced informer's list)
            value = runs[0][0]
            index[value] = bucket = dict(items)
            key_values.update(dict.fromkeys(bucket, value))  # from a plain dict: presized
            return
        keys, objs = builtins.list(items), builtins.list(items.values())
        start = 0
        for value, count in runs:
            end = start + count
            run_keys = keys[start:end]
            key_values.update(dict.fromkeys(run_keys, value))
            found = index.get(value)
            if found is None:
                index[value] = dict(zip(run_keys, objs[start:end], strict=True))
            else:
                found.update(zip(run_keys, objs[start:end], strict=True))
            start = end
        return
    values = itertools.chain.from_iterable(itertools.repeat(v, count) for v, count in runs)
    for (key, obj), v in zip(items.items(), values, strict=True):
        key_values[key] = v
        one = index.get(v)
        if one is None:
            index[v] = {key: obj}
        else:
            one[key] = obj


def _put_each(index: _Index, values: Iterable[str], key: str, obj: Any) -> None:
    """Put ``obj`` under ``key`` in one index, under each of ``values``."""
    for v in values:
        bucket = index.get(v)
        if bucket is None:
            index[v] = {key: obj}
        else:
            bucket[key] = obj


def _unindex(index: _Index, key: str, values: Any) -> None:
    """Take ``key`` out of one index under ``values`` (as :data:`_KeyValues` keeps them)."""
    for v in values if type(values) is tuple else (values,):
        bucket = index.get(v)
        if bucket is not None:
            bucket.pop(key, None)
            if not bucket:  # an index value with no key left is dropped
                del index[v]

