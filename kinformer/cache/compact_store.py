"""The compact cache: every object kept as compact bytes, decoded afresh on every read.

Decoded, a 5 KB Pod costs about 30 KB of Python objects; kept as the bytes of its JSON it costs
little more than those bytes, and bytes are no work for the cyclic collector. The bytes are its
compact JSON with orjson installed, else :mod:`marshal`'s form, which the standard library
decodes faster than JSON (:mod:`kinformer.cache.packed` says how each is chosen and read). A
:class:`CompactIndexer` is what a :class:`~kinformer.SharedIndexInformer` built with
``compact=True`` caches into: the same :class:`~kinformer.cache.store.InformerIndexer` seam as
:class:`~kinformer.Indexer` (client-go's ``Indexer`` interface plus the informer's batched
writes), but each object is encoded once when it is stored, its key and index values are computed
then, from the decoded object, and every read (``get``, ``get_by_key``, ``list``, ``index``,
``by_index``) decodes the stored bytes into a new object. A compact informer encodes each object
earlier still, as it arrives, and hands the cache a :class:`~kinformer.cache.packed.Packed` stub
carrying the bytes and index values (:meth:`CompactIndexer.pack`): a large list is then never
held decoded whole. Every reader therefore holds its own
copy: changing it changes nothing in the cache or for anyone else, and the mutation detector has
nothing to find. The price is a decode per object read (orjson decodes a 5 KB Pod in about ten
microseconds, marshal in about fifteen). Only JSON objects can be kept: one that cannot be encoded
fails its write as a failing index function does.

An informer's handlers receive the objects of its notifications; :class:`FreshObjects` wraps each
handler of a compact informer so that it is handed a copy of its own (see :func:`fresh`).

>>> from kinformer import meta_namespace_index_func
>>> indexer = CompactIndexer(indexers={"namespace": meta_namespace_index_func})
>>> indexer.add({"metadata": {"namespace": "default", "name": "web"}})
>>> first = indexer.get_by_key("default/web")
>>> first["metadata"]["name"] = "changed"
>>> indexer.get_by_key("default/web")["metadata"]["name"]
'web'
>>> indexer.index_keys("namespace", "default")
['default/web']
"""

from __future__ import annotations

import builtins
import threading
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kinformer import errors, meta, transforms
from kinformer.cache import _indexing, packed
from kinformer.cache.store import (
    DeletedFinalStateUnknown,
    IndexedStore,
    InformerIndexer,
    KeyFunc,
    KeyListerGetter,
    Store,
    meta_namespace_key_func,
)
from kinformer.cache.thread_safe_store import NOT_APPLIED, Indexers, IndexFunc

__all__ = ["CompactIndexer", "FreshObjects", "fresh"]

_FAILED = object()  # a write whose index values or encoding could not be computed


class CompactIndexer:
    """A thread-safe, indexed cache keeping each object as compact JSON bytes.

    Keyed by ``key_func`` (``namespace/name`` by default) and indexed by ``indexers``, as
    :class:`~kinformer.Indexer` is, with the same errors: a key-function failure raises
    :class:`~kinformer.KeyFuncError` and an unknown index name :class:`~kinformer.IndexerError`
    (``list_index_func_values`` excepted), both leaving the cache unchanged. Key, index values
    and bytes are computed outside the lock from the object written, never again; every read
    decodes outside the lock and returns new objects, which the caller may change freely.
    """

    __slots__ = (
        "__weakref__",  # the collector policy tracks a stopped informer's cache (kinformer._gc)
        "_fns",
        "_indexers",
        "_indices",
        "_items",
        "_key_func",
        "_key_values",
        "_lock",
        "_rv",
        "_slots",
        "_values",
    )

    def __init__(self, key_func: KeyFunc = meta_namespace_key_func,
                 indexers: Indexers | None = None) -> None:
        self._key_func = key_func
        self._lock = threading.Lock()  # guards everything below; indices always agree with _items
        self._items: dict[str, bytes] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # rebuilt, never mutated, when indexers change: a writer computing index values outside
        # the lock sees under it whether they still fit
        self._fns: tuple[IndexFunc, ...] = tuple(self._indexers.values())
        # each index: index value -> {key: the object's bytes} (see kinformer.cache._indexing)
        self._indices: dict[str, _indexing.Index] = {name: {} for name in self._indexers}
        self._key_values: dict[str, _indexing.KeyValues] = {name: {} for name in self._indexers}
        self._slots = self._make_slots()
        self._rv = ""  # the resourceVersion of the last object written, replace or bookmark
        self._values: dict[str, str] = {}  # index value -> the one string kept for it (_value)

    def _make_slots(self) -> _indexing.Slots:
        return _indexing.slots(self._indexers, self._indices, self._key_values)

    # -- keys and encoding --------------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """``obj``'s key under the key function; raises :class:`~kinformer.KeyFuncError`."""
        try:
            return self._key_func(obj)
        except Exception as exc:
            raise errors.KeyFuncError(f"couldn't create key for object {meta.shown(obj)}: {exc}") from exc

    @property
    def key_func(self) -> KeyFunc:
        """The key function this cache uses."""
        return self._key_func

    def pack(self, obj: Any) -> Any:
        """``obj`` encoded and indexed now, as a :class:`~kinformer.cache.packed.Packed` stub
        this cache stores as it is (see :mod:`kinformer.cache.packed`)."""
        return packed.pack(obj, self._fns)

    def packer(self) -> transforms.Transform:
        """:meth:`pack` as a transform. Where the cache keeps JSON, it is a
        :class:`~kinformer.transforms.JSONTransform`, which also takes an object with its JSON as
        the server sent it and keeps that as it is rather than encoding it again (a listed object
        whose lister could cut its bytes out of the list body)."""
        return _JSONPacker(self) if packed.kept_as_json else _Packer(self)

    def _prepare(self, obj: Any, fns: tuple[IndexFunc, ...]) -> tuple[bytes, Sequence[Sequence[str]]]:
        """``obj``'s bytes and index values; raises what the encoder or an index function raises."""
        if type(obj) is packed.Packed:
            if obj.fns is fns:  # packed under these index functions: nothing left to compute
                return obj.data, obj.index_values
            return obj.data, _indexing.index_values(fns, packed.decoded(obj)) if fns else ()
        values = _indexing.index_values(fns, obj) if fns else ()
        return packed.keep(obj), values

    # -- writes -------------------------------------------------------------------------------

    def add(self, obj: Any, key: str | None = None) -> None:
        """Store ``obj`` (encoded) under its key, replacing what was there, and index it.

        ``key``, when given, must be :meth:`key_of` ``(obj)``. An object that cannot be encoded
        as JSON raises ``TypeError`` and changes nothing.
        """
        if key is None:
            key = self.key_of(obj)
        fns = self._fns
        data, values = self._prepare(obj, fns)
        rv = meta.resource_version(obj) or ""
        with self._lock:
            if fns is not self._fns:  # add_indexers ran meanwhile: rare, recompute under the lock
                values = _indexing.index_values(self._fns, packed.decoded(obj))
            self._put_locked(key, data, values)
            if rv:
                self._rv = rv

    update = add
    """``update(obj, key=None)``: the same as :meth:`add`."""

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key; a missing key is a no-op."""
        key = self.key_of(obj)
        rv = meta.resource_version(obj) or ""
        with self._lock:
            self._pop_locked(key)
            if rv:
                self._rv = rv

    def add_new(self, items: dict[str, Any],
                namespace_runs: meta.NamespaceRuns | None = None) -> bool:
        """Store many objects under keys not stored yet, all or none, in one lock hold.

        False, with nothing changed, when a key is stored already or the indexers changed
        meanwhile; an encoding or index function error propagates and changes nothing.
        ``namespace_runs`` is not used: every object is encoded here anyway, and its index
        values are read as it is (a packed object carries them already).
        """
        if not items:
            return True
        fns = self._fns
        prepared = [(key, *self._prepare(obj, fns)) for key, obj in items.items()]
        rv = meta.resource_version(next(reversed(items.values()))) or ""
        with self._lock:
            if fns is not self._fns or not self._items.keys().isdisjoint(items.keys()):
                return False
            self._put_new_locked(prepared)
            if rv:
                self._rv = rv
            return True

    def apply_batch(self, changes: Sequence[tuple[str, Any, bool]]) -> builtins.list[Any]:
        """Apply writes and deletions of distinct keys in one transaction.

        As :meth:`kinformer.Indexer.apply_batch`: ``(key, obj, delete)`` changes; returns per
        change the object the key held before (None when none), or
        :data:`~kinformer.cache.thread_safe_store.NOT_APPLIED` for a write whose encoding or
        index function failed, which alone is left out. An object held before comes back as a
        :class:`~kinformer.cache.packed.Packed` stub of its bytes (:func:`fresh` decodes it
        whole), as a compact informer's objects travel to its handlers: a relist that replaces
        every object then holds each old one decoded only while its stub is made, not all of
        them at once until every handler has seen them.
        """
        fns = self._fns
        prepared: builtins.list[Any] = []
        for _key, obj, delete in changes:  # bytes and index values outside the lock
            if delete:
                prepared.append(None)
                continue
            try:
                prepared.append(self._prepare(obj, fns))
            except Exception:
                prepared.append(_FAILED)
        olds: builtins.list[Any] = []
        rv = ""
        with self._lock:
            recompute = fns is not self._fns
            for (key, obj, delete), ready in zip(changes, prepared, strict=True):
                if ready is _FAILED:
                    olds.append(NOT_APPLIED)
                    continue
                if delete:
                    olds.append(self._pop_locked(key))
                elif recompute:
                    try:
                        values = _indexing.index_values(self._fns, packed.decoded(obj))
                    except Exception:
                        olds.append(NOT_APPLIED)
                        continue
                    olds.append(self._put_locked(key, ready[0], values))
                else:
                    olds.append(self._put_locked(key, *ready))
                if obj is not None:
                    rv = meta.resource_version(obj) or rv
            if rv:
                self._rv = rv
        stub = packed.stub_of
        return [old if old is None or old is NOT_APPLIED else stub(old) for old in olds]

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Make ``objs`` the whole content atomically; later duplicates win.

        Every object is keyed, encoded and indexed first: one failure raises and leaves the
        cache unchanged.
        """
        items = {self.key_of(obj): obj for obj in objs}
        self.replace_keyed(items, resource_version)

    def replace_keyed(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Make ``items`` (key -> object) the whole content atomically, indexes rebuilt."""
        while True:
            fns = self._fns
            prepared = [(key, *self._prepare(obj, fns)) for key, obj in items.items()]
            with self._lock:
                if fns is not self._fns:  # add_indexers ran meanwhile: prepare again
                    continue
                # built aside and swapped in: a reader without the lock (get_by_key, len) sees
                # the old content or the new, never a half-filled one
                old = (self._indices, self._key_values, self._slots, self._values)
                content: dict[str, bytes] = {}  # self._items stays the old content until the swap
                self._values = {}
                self._indices = {name: {} for name in self._indexers}
                self._key_values = {name: {} for name in self._indexers}
                self._slots = self._make_slots()
                try:
                    self._put_new_locked(prepared, content)
                except BaseException:
                    self._indices, self._key_values, self._slots, self._values = old
                    raise
                self._items = content
                self._rv = resource_version
                return

    def bookmark(self, resource_version: str) -> None:
        """Note that the cache has caught up to ``resource_version`` with no object changing."""
        with self._lock:
            self._rv = resource_version

    def resync(self) -> None:
        """Nothing to do for a cache (kept for the ``Store`` shape)."""

    def add_indexers(self, indexers: Indexers) -> None:
        """Register more indexers and index the stored objects under them (each decoded once).

        Raises :class:`~kinformer.IndexerConflictError` naming every name that already exists,
        adding none; an index function error propagates and adds none. Runs under the lock.
        """
        with self._lock:
            conflict = sorted(set(indexers) & set(self._indexers))
            if conflict:
                raise errors.IndexerConflictError(f"indexer conflict: {conflict}")
            fns = tuple(indexers.values())
            built: builtins.list[tuple[_indexing.Index, _indexing.KeyValues]] = [({}, {}) for _ in fns]
            for key, data in self._items.items():
                obj = packed.load(data)
                for (index, key_values), fn in zip(built, fns, strict=True):
                    _indexing.insert(index, key_values, key, data, fn(obj), self._value)
            for name, fn, (index, key_values) in zip(indexers, fns, built, strict=True):
                self._indexers[name] = fn
                self._indices[name], self._key_values[name] = index, key_values
            self._fns = tuple(self._indexers.values())
            self._slots = self._make_slots()

    def _put_locked(self, key: str, data: bytes, values: Sequence[Sequence[str]]) -> bytes | None:
        """Store ``data`` under ``key`` and index it; return the bytes the key held (or None)."""
        key = _own(key)
        old = self._items.get(key)
        self._items[key] = data
        _indexing.reindex(self._slots, key, data, values, self._value)
        return old

    def _put_new_locked(self, prepared: Iterable[tuple[str, bytes, Sequence[Sequence[str]]]],
                        items: dict[str, bytes] | None = None) -> None:
        """Store and index ``(key, bytes, index values)`` under keys not stored yet (into
        ``items`` instead of the stored ones when given)."""
        if items is None:
            items = self._items
        slots, insert, value = self._slots, _indexing.insert, self._value
        kept = self._values
        for key, data, values in prepared:
            key = _own(key)
            items[key] = data
            for index, key_values, i in slots:
                vals = values[i]
                if len(vals) == 1 and (v := kept.get(vals[0])) is not None:
                    # insert's one-value case, inline, for a value kept already (nearly every
                    # object of a first list): a call per object costs a tenth of this loop
                    key_values[key] = v
                    bucket = index.get(v)
                    if bucket is None:
                        index[v] = {key: data}
                    else:
                        bucket[key] = data
                else:
                    insert(index, key_values, key, data, vals, value)
                    kept = self._values  # a new value may have renewed the map

    def _value(self, value: str) -> str:
        """The one string this cache keeps for an index value, its own (:func:`_own`), under the
        lock: 50,000 objects of 10 namespaces keep 10 namespace strings, not 50,000.

        Values no index holds any more are forgotten once they outnumber the live ones.
        """
        kept = self._values.get(value)
        if kept is None:
            kept = _own(value)
            if len(self._values) > 2 * sum(len(index) for index in self._indices.values()) + 64:
                # the indexes' own keys are the strings kept: the live values, as they are
                self._values = {v: v for index in self._indices.values() for v in index}
            self._values[kept] = kept  # not value itself: a string among the decoded object's
        return kept

    def _pop_locked(self, key: str) -> bytes | None:
        """Remove ``key`` and its index entries; return the bytes it held (or None)."""
        old = self._items.pop(key, None)
        if old is not None:
            for index, key_values, _ in self._slots:
                values = key_values.pop(key, None)
                if values is not None:
                    _indexing.drop(index, key, values)
        return old

    # -- reads: each decodes afresh, outside the lock ------------------------------------------

    def get_by_key(self, key: str) -> Any | None:
        """A new copy of the object stored under ``key``, or None."""
        data = self._items.get(key)  # one dict lookup: atomic, and bytes never change
        return None if data is None else packed.load(data)

    def get(self, obj: Any) -> Any | None:
        """A new copy of the object with ``obj``'s key, or None."""
        return self.get_by_key(self.key_of(obj))

    def list(self) -> builtins.list[Any]:
        """A new copy of every stored object, in no particular order."""
        with self._lock:
            raw = builtins.list(self._items.values())
        load = packed.load
        return [load(data) for data in raw]

    def list_keys(self) -> builtins.list[str]:
        """Every key, in no particular order."""
        with self._lock:
            return builtins.list(self._items)

    def snapshot(self) -> Mapping[str, Any]:
        """The whole content, taken atomically: a mapping that decodes each object when read."""
        with self._lock:
            return _Decoding(dict(self._items))

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """New copies of the objects sharing any of ``obj``'s values of the named index."""
        fn = self._indexers.get(index_name)
        if fn is None:
            raise errors.IndexerError(f"Index with name {index_name} does not exist")
        values = fn(obj)
        union: dict[str, bytes] = {}
        with self._lock:
            index = self._bucket_map(index_name)
            for v in values:
                bucket = index.get(v)
                if bucket:
                    union.update(bucket)
        load = packed.load
        return [load(data) for data in union.values()]

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """New copies of the objects whose named index includes ``indexed_value``."""
        with self._lock:
            bucket = self._bucket_map(index_name).get(indexed_value)
            raw = builtins.list(bucket.values()) if bucket else []
        load = packed.load
        return [load(data) for data in raw]

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Keys whose named index includes ``indexed_value`` ([] for an unknown value)."""
        with self._lock:
            bucket = self._bucket_map(index_name).get(indexed_value)
            return builtins.list(bucket) if bucket else []

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value the named index holds; [] (not an error) for an unknown index."""
        with self._lock:
            index = self._indices.get(index_name)
            return builtins.list(index) if index is not None else []

    def get_indexers(self) -> Mapping[str, IndexFunc]:
        """A live, read-only view of the registered index functions."""
        return types.MappingProxyType(self._indexers)

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the last object written, replace or bookmark; "" if none."""
        return self._rv

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _bucket_map(self, index_name: str) -> _indexing.Index:
        index = self._indices.get(index_name)
        if index is None:
            raise errors.IndexerError(f"Index with name {index_name} does not exist")
        return index

    def __repr__(self) -> str:
        return f"<CompactIndexer objects={len(self._items)} indexes={sorted(self._indexers)}>"


class _Packer:
    """A compact cache's :meth:`CompactIndexer.pack`, as a transform (a
    :class:`~kinformer.transforms.Packer`). An object it cannot pack (an index function raises,
    the encoder refuses a value) comes back as it is: the cache's own write then fails it
    alone, logged, as a dict cache's does, instead of failing the whole list it came in."""

    __slots__ = ("_indexer",)
    packs = True  # keeps nothing of the decoded object

    def __init__(self, indexer: CompactIndexer) -> None:
        self._indexer = indexer

    def __call__(self, obj: Any) -> Any:
        try:  # a transform's object is its own: nothing reads it once packed
            return packed.pack(obj, self._indexer._fns, consume=True)
        except Exception:  # the cache's own write fails it alone, as a dict cache's does
            return obj

    def __repr__(self) -> str:
        return f"<packer of {self._indexer!r}>"


class _JSONPacker(_Packer):
    """:class:`_Packer` as a :class:`~kinformer.transforms.JSONTransform`, for a cache keeping JSON."""

    __slots__ = ()

    def with_json(self, obj: Any, data: bytes) -> Any:
        try:
            return packed.pack(obj, self._indexer._fns, data)
        except Exception:  # an index function that raises: the cache's write fails it alone
            return obj


def _own(text: str) -> str:
    """A new string equal to ``text``, made now.

    A key or index value computed from a decoded object is a string allocated among that
    object's; kept in the cache, it would hold their whole memory block (the allocator's arena)
    after the object itself is freed, and a cache of such strings holds nearly every block the
    objects filled. Its own copy, made as it is stored, lies among the cache's other strings.
    """
    return "".join((text, ""))  # joined, even to nothing, a string is copied


class _Decoding(Mapping[str, Any]):
    """A snapshot of a compact cache: key -> bytes, each object decoded when looked up."""

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[str, bytes]) -> None:
        self._raw = raw

    def __getitem__(self, key: str) -> Any:
        return packed.load(self._raw[key])

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def fresh(obj: Any) -> Any:
    """A new copy of a JSON object (through its bytes); a DeletedFinalStateUnknown gets a
    copy of its ``obj``; None stays None."""
    if obj is None:
        return None
    if type(obj) is DeletedFinalStateUnknown:
        return DeletedFinalStateUnknown(obj.key, fresh(obj.obj))
    if type(obj) is packed.Packed:  # its bytes are at hand
        return packed.load(obj.data)
    return packed.load(packed.keep(obj))


class FreshObjects:
    """An event handler wrapper handing ``handler`` its own copy of every object (:func:`fresh`).

    A compact informer wraps each of its handlers in one: the objects of a notification are
    shared by every handler it reaches, so each handler changes only its copy. The copy is
    made on the handler's own delivery thread, when the notification is delivered.
    """

    __slots__ = ("handler",)

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.handler.on_add(fresh(obj), is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self.handler.on_update(fresh(old), fresh(new))

    def on_delete(self, obj: Any) -> None:
        self.handler.on_delete(fresh(obj))

    def __repr__(self) -> str:
        return repr(self.handler)


def _check_protocols(
    indexer: CompactIndexer,
) -> tuple[Store, IndexedStore, InformerIndexer, KeyListerGetter]:
    return indexer, indexer, indexer, indexer  # mypy proves CompactIndexer satisfies every seam
