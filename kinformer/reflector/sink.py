"""What a reflector writes to: the store seam, its optional parts, and their methods looked up once.

client-go's reflector writes to a ``cache.Store``: ``add``, ``update`` and ``delete`` for watch
events, ``replace`` after a list, ``resync`` on its timer. :class:`ReflectorStore` is that writing
half. A store may also take bookmarks (:class:`BookmarkTaker`: the RealFIFO queues them, the
Indexer notes them), every resourceVersion the watch reaches (:class:`ResourceVersionUpdater`,
client-go's ``ResourceVersionUpdater``) and the changes of a watch read in one call
(:class:`BatchTaker`). A :class:`Sink` checks which, once, when a reflector is
made, and holds the bound methods its list (:mod:`kinformer.reflector.reflector`) and its watch
handler (:mod:`kinformer.reflector.watch`) call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kinformer.cache.delta_fifo import DeltaType


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

    @classmethod
    def of(cls, store: ReflectorStore) -> Sink:
        """``store``'s methods; ``bookmark``, ``update_resource_version`` and ``add_batch`` when
        it has them."""
        return cls(
            store.add,
            store.update,
            store.delete,
            store.replace,
            store.resync,
            store.bookmark if isinstance(store, BookmarkTaker) else None,
            store.update_resource_version if isinstance(store, ResourceVersionUpdater) else None,
            store.add_batch if isinstance(store, BatchTaker) else None,
        )
