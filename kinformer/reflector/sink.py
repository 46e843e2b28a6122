"""What a reflector writes to: the store seam, its optional parts, and their methods looked up once.

client-go's reflector writes to a ``cache.Store``: ``add``, ``update`` and ``delete`` for watch
events, ``replace`` after a list, ``resync`` on its timer. :class:`ReflectorStore` is that writing
half. A store may also take bookmarks (:class:`BookmarkTaker`: the RealFIFO queues them, the
Indexer notes them), every resourceVersion the watch reaches (:class:`ResourceVersionUpdater`,
client-go's ``ResourceVersionUpdater``) and the changes of a watch read in one call
(:class:`BatchTaker`), and a list as its lister keyed it (:class:`ListedStore`: both FIFOs). A
:class:`Sink` checks which, once, when a reflector is made (or its owner makes one and hands it
over ready, as the informer does: :mod:`kinformer.collector_policy`), and holds the bound
methods its list (:mod:`kinformer.reflector.listing`) and its watch handler
(:mod:`kinformer.reflector.watch`) call. Adding a list-time capability means a field of the
listed batch (:class:`~kinformer.client.listerwatcher.ListResult`), a method here, and the
store that takes it: nothing between.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kinformer import meta
from kinformer.cache.delta_fifo import DeltaType
from kinformer.client import listerwatcher


class ReflectorStore(Protocol):
    """What a reflector writes to: the writing half of client-go's ``Store``.

    A FIFO inside an informer, or any :class:`~kinformer.Store` such as an
    :class:`~kinformer.Indexer`. Calls come from the reflector's one thread, in event order.
    """

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def replace(self, objs: list[Any], resource_version: str) -> None: ...

    def resync(self) -> None: ...


@runtime_checkable
class BookmarkTaker(Protocol):
    """A store told of each watch bookmark: nothing changed up to ``resource_version``."""

    def bookmark(self, resource_version: str) -> None: ...


@runtime_checkable
class BatchTaker(Protocol):
    """A store that takes the changes of one watch read in one call, as the RealFIFO does.

    ``add_batch(actions, objs)`` does what ``add`` (``DeltaType.ADDED``), ``update``
    (``UPDATED``) or ``delete`` (``DELETED``) of each object in turn would, and takes all or
    nothing: when it raises, nothing was stored, and the reflector adds the objects one by one.
    """

    def add_batch(self, actions: list[DeltaType], objs: list[Any]) -> None: ...


@runtime_checkable
class ListedStore(Protocol):
    """A store that takes a list with the keys its lister made: ``replace_listed(objs, keys,
    namespace_runs, resource_version)`` does what ``replace(objs, resource_version)`` does,
    where ``keys[i]`` is ``objs[i]``'s :func:`~kinformer.meta_namespace_key_func` key and
    ``namespace_runs`` (None when not noted) their namespaces in order
    (:data:`kinformer.meta.NamespaceRuns`), so it need not read every object again. A store
    keyed another way, or one that finds the keys do not fit (a key listed twice), replaces
    as usual."""

    def replace_listed(self, objs: list[Any], keys: list[str],
                       namespace_runs: meta.NamespaceRuns | None, resource_version: str) -> None: ...


@runtime_checkable
class ResourceVersionUpdater(Protocol):
    """A store told of every resourceVersion the watch reaches (client-go's
    ``ResourceVersionUpdater``)."""

    def update_resource_version(self, resource_version: str) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Sink:
    """A store's methods as a reflector calls them, looked up once; the optional ones None
    when the store lacks them."""

    add: Callable[[Any], object]
    update: Callable[[Any], object]
    delete: Callable[[Any], object]
    replace: Callable[[list[Any], str], object]
    resync: Callable[[], object]
    bookmark: Callable[[str], object] | None
    update_resource_version: Callable[[str], object] | None
    add_batch: Callable[[list[DeltaType], list[Any]], object] | None = None
    replace_listed: Callable[[list[Any], list[str], meta.NamespaceRuns | None, str], object] | None = None

    @classmethod
    def of(cls, store: ReflectorStore | Sink) -> Sink:
        """``store``'s methods; ``bookmark``, ``update_resource_version``, ``add_batch`` and
        ``replace_listed`` when it has them. A Sink is returned as it is."""
        if isinstance(store, Sink):
            return store
        return cls(
            store.add,
            store.update,
            store.delete,
            store.replace,
            store.resync,
            store.bookmark if isinstance(store, BookmarkTaker) else None,
            store.update_resource_version if isinstance(store, ResourceVersionUpdater) else None,
            store.add_batch if isinstance(store, BatchTaker) else None,
            store.replace_listed if isinstance(store, ListedStore) else None,
        )

    def take_list(self, result: listerwatcher.ListResult) -> None:
        """Replace the store's content with a list at its resourceVersion: keyed when the store
        takes a keyed list and ``result`` carries keys for its items, else through ``replace``."""
        keys = result.item_keys()
        if self.replace_listed is not None and keys is not None:
            self.replace_listed(result.items, keys, result.namespace_runs, result.resource_version)
        else:
            self.replace(result.items, result.resource_version)
