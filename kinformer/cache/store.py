"""Store and Indexer: keys, index functions, and the keyed cache informers fill.

client-go ``tools/cache`` store.go and index.go. Key functions turn an object into its
``"namespace/name"`` key; :class:`Indexer` puts one in front of a
:class:`~kinformer.ThreadSafeStore`. The reflector writes through the
:class:`Store` protocol, listers read through :class:`IndexedStore`, and ``DeltaFIFO`` asks its
``known_objects`` (:class:`KeyListerGetter`) what the cache holds. Objects are decoded JSON dicts
or the official client's model objects (``obj.metadata.name``), read through ``kinformer.meta``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kinformer import errors, meta
from kinformer.cache.thread_safe_store import IndexedMap, Indexers, IndexFunc

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "IndexFunc",
    "IndexedStore",
    "Indexer",
    "Indexers",
    "InformerIndexer",
    "KeyFunc",
    "KeyListerGetter",
    "ObjectName",
    "Store",
    "deletion_handling_meta_namespace_key_func",
    "index_func_to_key_func_adapter",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
]

KeyFunc = Callable[[Any], str]
"""Computes an object's store key."""

object_key = meta.object_key  # the one key format: "namespace/name", or "name" when cluster-scoped

NAMESPACE_INDEX = "namespace"
"""The name under which informers usually register :func:`meta_namespace_index_func`."""


class ExplicitKey(str):
    """A string that key functions return as is: a key standing in for an object."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A deletion seen only through a relist: ``key``, and ``obj``, the last state known locally.

    ``obj`` may be stale, or None when nothing was known. Delete handlers must accept this
    wrapper in place of an object.
    """

    key: str
    obj: Any


def meta_namespace_key_func(obj: Any) -> str:
    """``"namespace/name"``, or ``"name"`` for a cluster-scoped object.

    An :class:`ExplicitKey` is returned verbatim; an object without metadata raises
    :class:`~kinformer.KeyFuncError` (``object has no meta: ...``).
    """
    # It runs on every write to a FIFO or cache, so decoded JSON is read here inline rather than
    # through kinformer.meta (one call and the type checks less); everything else goes there.
    try:
        metadata = obj["metadata"]
        ns = metadata.get("namespace")
        name = metadata["name"]
        if type(name) is str:
            return f"{ns}/{name}" if ns else name  # meta.object_key, inline: no frame per key
    except (KeyError, TypeError, AttributeError):
        pass
    if isinstance(obj, ExplicitKey):
        return str.__str__(obj)
    return object_key(*meta.namespace_and_name(obj))


def deletion_handling_meta_namespace_key_func(obj: Any) -> str:
    """Like :func:`meta_namespace_key_func`, but a DeletedFinalStateUnknown gives its ``key``."""
    # an informer keys every change it applies with this: decoded JSON is read inline once more
    if type(obj) is dict and type(metadata := obj.get("metadata")) is dict:
        ns = metadata.get("namespace")
        name = metadata.get("name")
        if type(name) is str and (not ns or type(ns) is str):
            return f"{ns}/{name}" if ns else name  # meta.object_key, inline
    if type(obj) is DeletedFinalStateUnknown:
        return obj.key
    return meta_namespace_key_func(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; ``"name"`` -> ``("", "name")``.

    Raises :class:`~kinformer.errors.InvalidKeyError` (a ValueError) for more than one ``/``, and
    for a cluster-aware key (``"root:a|ns/name"``, which :func:`~kinformer.split_cluster_aware_key`
    splits): no namespace holds a ``|``, so splitting one here would lose its cluster. Names are
    not validated: ``""`` gives ``("", "")`` and ``"ns/"`` gives ``("ns", "")``.
    """
    if "|" in key:
        raise errors.InvalidKeyError(
            f'"{key}" is a cluster-aware key: split it with split_cluster_aware_key')
    parts = key.split("/")
    if len(parts) == 1:
        return "", key
    if len(parts) == 2:
        return parts[0], parts[1]
    raise errors.InvalidKeyError(f'unexpected key format: "{key}"')


@dataclass(frozen=True, slots=True)
class ObjectName:
    """A namespace and name, printed as a store key (client-go ``ObjectName``)."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, key: str) -> ObjectName:
        """The name a store key stands for (see :func:`split_meta_namespace_key`)."""
        return cls(*split_meta_namespace_key(key))

    def __str__(self) -> str:
        return object_key(self.namespace, self.name)


def meta_namespace_index_func(obj: Any) -> list[str]:
    """``[namespace]`` of an object (``[""]`` when cluster-scoped); KeyFuncError without meta."""
    try:  # decoded JSON inline, as in meta_namespace_key_func: it runs on every cache write
        return [obj["metadata"].get("namespace") or ""]
    except (KeyError, TypeError, AttributeError):
        return [meta.namespace_and_name(obj)[0]]


def index_func_to_key_func_adapter(index_func: IndexFunc) -> KeyFunc:
    """A key function from an index function that must yield exactly one value."""

    def key_func(obj: Any) -> str:
        values = index_func(obj)
        if len(values) == 0:
            raise errors.KeyFuncError(f"unexpected empty indexKeys for {meta.shown(obj)}")
        if len(values) > 1:
            raise errors.KeyFuncError(f"too many keys: {list(values)!r}")
        return values[0]

    return key_func


@runtime_checkable
class Store(Protocol):
    """What a reflector writes to and a lister reads from (client-go ``Store``)."""

    def add(self, obj: Any) -> None: ...
    def update(self, obj: Any) -> None: ...
    def delete(self, obj: Any) -> None: ...
    def list(self) -> list[Any]: ...
    def list_keys(self) -> builtins.list[str]: ...
    def get(self, obj: Any) -> Any | None: ...
    def get_by_key(self, key: str) -> Any | None: ...
    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None: ...
    def resync(self) -> None: ...


@runtime_checkable
class IndexedStore(Store, Protocol):
    """A :class:`Store` with secondary indices: client-go's ``Indexer`` interface.

    In kinformer :class:`Indexer` is the class that implements it (client-go's ``cache``
    struct); this protocol is the interface, so listers and other readers accept any store
    that indexes.
    """

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]: ...
    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]: ...
    def list_index_func_values(self, index_name: str) -> builtins.list[str]: ...
    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]: ...
    def get_indexers(self) -> Mapping[str, IndexFunc]: ...
    def add_indexers(self, indexers: Indexers) -> None: ...


@runtime_checkable
class InformerIndexer(IndexedStore, Protocol):
    """What a :class:`~kinformer.SharedIndexInformer` needs of its cache: client-go's ``Indexer``
    interface (:class:`IndexedStore`) plus the keyed and batched writes its appliers make.

    :class:`Indexer` implements it (and :class:`~kinformer.cache.mutation_detector.CheckedIndexer`
    on top); so must any other cache an informer is to keep. ``key_of`` raises
    :class:`~kinformer.KeyFuncError`; ``update(obj, key)`` takes the key ``key_of`` gave;
    ``add_new`` stores many new keys at once, all or none (False when a key is cached already);
    ``apply_batch`` applies ``(key, obj, delete)`` changes of distinct keys in one transaction
    and returns, per change, the object the key held before (None when none), or
    :data:`~kinformer.cache.thread_safe_store.NOT_APPLIED` for a write whose index function
    failed; ``snapshot`` copies the whole content, a mapping taken atomically; ``bookmark``
    notes a resourceVersion reached with nothing changed; ``key_func`` is the function it keys by.
    """

    @property
    def key_func(self) -> KeyFunc: ...
    def key_of(self, obj: Any) -> str: ...
    def update(self, obj: Any, key: str | None = None) -> None: ...
    def add_new(self, items: dict[str, Any],
                namespace_runs: meta.NamespaceRuns | None = None) -> bool: ...
    def apply_batch(self, changes: Sequence[tuple[str, Any, bool]]) -> builtins.list[Any]: ...
    def snapshot(self) -> Mapping[str, Any]: ...
    def bookmark(self, resource_version: str) -> None: ...
    def __len__(self) -> int: ...


class KeyListerGetter(Protocol):
    """What a DeltaFIFO asks its ``known_objects`` (the informer's indexer)."""

    def list_keys(self) -> list[str]: ...
    def get_by_key(self, key: str) -> Any | None: ...


class Indexer(IndexedMap):
    """A thread-safe, indexed object cache keyed by a key function (client-go ``cache.Indexer``).

    Every method is atomic and safe from any thread; reads see one consistent snapshot. Returned
    objects are the cached ones, not copies: treat them as read-only. A key-function failure
    raises :class:`~kinformer.KeyFuncError` and leaves the cache unchanged; an unknown
    index name raises :class:`~kinformer.IndexerError` (a KeyError), except in
    :meth:`list_index_func_values`, which returns []. Index functions run outside the lock
    (``add_indexers`` excepted); the read methods are shared with
    :class:`~kinformer.ThreadSafeStore`.

    >>> indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    >>> indexer.add({"metadata": {"namespace": "default", "name": "web"}})
    >>> indexer.add({"metadata": {"namespace": "kube-system", "name": "dns"}})
    >>> indexer.list_keys()
    ['default/web', 'kube-system/dns']
    >>> [obj["metadata"]["name"] for obj in indexer.by_index(NAMESPACE_INDEX, "kube-system")]
    ['dns']
    """

    __slots__ = ()
    # add/update read the key and the standard namespace index inline for decoded objects
    _standard = (meta_namespace_key_func, NAMESPACE_INDEX, meta_namespace_index_func)

    def __init__(
        self, key_func: KeyFunc = meta_namespace_key_func, indexers: Indexers | None = None
    ) -> None:
        super().__init__(indexers, key_func)

    def key_of(self, obj: Any) -> str:
        """``obj``'s key under the key function; raises :class:`~kinformer.KeyFuncError`."""
        try:
            return self._key_func(obj)
        except Exception as exc:
            raise errors.KeyFuncError(f"couldn't create key for object {meta.shown(obj)}: {exc}") from exc

    add = IndexedMap._write
    """``add(obj, key=None)``: insert or replace ``obj`` under its key (one call: the shared write path).

    ``key``, when given, must be :meth:`key_of` ``(obj)``: a caller that computed it already (the
    informer's delta loop) saves running the key function twice.
    """
    update = IndexedMap._write
    """``update(obj, key=None)``: the same as :meth:`add`."""

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key; a missing key is a no-op."""
        self._delete(self.key_of(obj), obj)

    def get(self, obj: Any) -> Any | None:
        """The cached object with ``obj``'s key, or None."""
        return self._get(self.key_of(obj))

    get_by_key = IndexedMap._get

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Make ``objs`` the whole content atomically; later duplicates win.

        Every object is keyed first: one key failure raises and leaves the cache unchanged.
        """
        key_func = self._key_func
        items: dict[str, Any] = {}
        for obj in objs:
            try:
                key = key_func(obj)
            except Exception:
                key = self.key_of(obj)
            items[key] = obj
        self._replace(items, resource_version)

    def add_new(self, items: dict[str, Any],
                namespace_runs: meta.NamespaceRuns | None = None) -> bool:
        """As :meth:`ThreadSafeStore.add_new <kinformer.ThreadSafeStore.add_new>`.

        ``namespace_runs``, the items' namespaces in order as their lister noted them
        (:data:`kinformer.meta.NamespaceRuns`), give the standard namespace index
        (:data:`NAMESPACE_INDEX` with :func:`meta_namespace_index_func`) its values, so no
        object is read again for them; runs that do not cover the items are not used. Every
        other index is indexed as usual.
        """
        if not meta.runs_cover(namespace_runs, len(items)):
            return self._add_new(items)
        assert namespace_runs is not None
        return self._add_new(items, (NAMESPACE_INDEX, meta_namespace_index_func, namespace_runs))

    def resync(self) -> None:
        """Nothing to do for a cache (kept for the ``Store`` shape)."""

    @property
    def key_func(self) -> KeyFunc:
        """The key function this cache uses."""
        return self._key_func


def new_store(key_func: KeyFunc = meta_namespace_key_func) -> Indexer:
    """A cache without indices (client-go ``NewStore``)."""
    return Indexer(key_func)


def new_indexer(
    key_func: KeyFunc = meta_namespace_key_func, indexers: Indexers | None = None
) -> Indexer:
    """A cache with the given indices (client-go ``NewIndexer``)."""
    return Indexer(key_func, indexers)


def _check_protocols(indexer: Indexer) -> tuple[Store, IndexedStore, InformerIndexer, KeyListerGetter]:
    return indexer, indexer, indexer, indexer  # mypy proves Indexer satisfies every seam
