"""asyncio's view of an informer: await its sync, iterate its notifications; its threads stay.

An asyncio application (a FastAPI or aiohttp service) runs a :class:`~kinformer.SharedIndexInformer`
on its threads as any program does, and reads its listers directly from coroutines: a read
never waits for the network. What it cannot do from the loop is block, so this module offers
the two waits an application needs as awaitables:

- :func:`wait_for_sync` polls ``has_synced()`` between ``asyncio.sleep`` calls (as client-go's
  ``WaitForCacheSync`` polls), so the loop keeps serving while the first list loads;
- :func:`events` registers a handler on the informer and hands its notifications to the loop,
  in order, as :class:`Event` values through an async iterator, :class:`EventStream`; each
  names its cluster (``.cluster``) when the informer holds many, a cluster-aware informer or a
  :class:`~kinformer.MultiClusterInformer`.

The handler runs on its own delivery thread, as every handler of an informer does; it gives
each notification to the loop with ``loop.call_soon_threadsafe``. At most ``maxsize`` of them
wait in the stream for the consumer: when the consumer is slower, the handler's delivery thread
waits for room (back-pressure), and further notifications queue in the informer's buffer for
this handler. The watch, the cache, the listers and every other handler go on undisturbed.

Example, in a coroutine, with ``informer`` running on a thread of its own::

    if not await aio.wait_for_sync(informer, timeout=30):
        raise RuntimeError(f"cache did not sync: {informer.last_error()}")
    async with aio.events(informer) as stream:
        async for event in stream:
            print(event.type, event.object["metadata"]["name"])
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, NamedTuple, Protocol

from kinformer import _checks, cluster_handlers, handlers
from kinformer.informer import SharedIndexInformer

DEFAULT_MAXSIZE = 1000  # notifications waiting in a stream before the handler's thread waits
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class _Syncable(Protocol):
    def has_synced(self) -> bool: ...


async def wait_for_sync(informer: _Syncable, timeout: float | None = None) -> bool:
    """True once ``informer.has_synced()``; False when ``timeout`` seconds passed first, or the
    informer stopped unsynced.

    Never blocks the running loop: it checks as :func:`~kinformer.wait_for_cache_sync` does
    (soon at first, then every 100 ms: :func:`kinformer.handlers.sync_poll_pause`) and sleeps
    with ``asyncio.sleep`` in between. Cancelling the awaiting task cancels the wait.
    ``timeout`` is None (no limit) or finite seconds, else :class:`~kinformer.ConfigurationError`.
    Works for anything with ``has_synced()``: an informer, a registration, a
    :class:`~kinformer.GenericInformer`.
    """
    timeout = _checks.timeout("timeout", timeout)
    began = time.monotonic()
    deadline = None if timeout is None else began + timeout
    is_stopped = getattr(informer, "is_stopped", None)
    while not informer.has_synced():
        if callable(is_stopped) and is_stopped():
            return False
        pause = handlers.sync_poll_pause(time.monotonic() - began)
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            pause = min(pause, remaining)
        await asyncio.sleep(pause)
    return True


class Event(NamedTuple):
    """One notification of an informer, as :func:`events` hands it to the loop.

    ``type`` is ``"ADDED"`` (``on_add``, also for each object of the initial list or of a late
    registration's replay), ``"MODIFIED"`` (``on_update``, resyncs included: ``object`` is the
    new state) or ``"DELETED"`` (``on_delete``: ``object`` is the object's last known state,
    unwrapped from a :class:`~kinformer.DeletedFinalStateUnknown`, or the tombstone itself when
    it knows no state). ``object`` is the cached object: treat it as read-only. ``cluster`` is
    where it happened: ``""`` for an informer of one cluster, the object's logical cluster for a
    cluster-aware informer (its ``kcp.io/cluster`` annotation), the member cluster for a
    :class:`~kinformer.MultiClusterInformer`.
    """

    type: str
    object: Any
    cluster: str = ""


class _Informer(Protocol):
    """What a stream registers on: a SharedIndexInformer or a MultiClusterInformer."""

    def add_event_handler(self, handler: Any) -> Any: ...

    def remove_event_handler(self, registration: Any) -> None: ...


class EventStream:
    """An async iterator of one informer's notifications, in order; made by :func:`events`.

    Iterate it on the loop it was made on. It ends (``StopAsyncIteration``) after
    :meth:`aclose`, which unregisters its handler and drops what was not read yet; use it as
    an async context manager (``async with``) so that happens. It does not end by itself when
    the informer stops. See the module docstring for back-pressure.
    """

    def __init__(self, informer: _Informer, maxsize: int = DEFAULT_MAXSIZE) -> None:
        self._maxsize = _checks.integer("maxsize", maxsize, minimum=1)
        handler = _handler_for(informer, self._offer)
        handler.delivery_closed = self._delivery_closed  # told when the informer closes it
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()  # None: closed
        self._room = threading.Condition()  # guards _waiting, _closed, _undelivered
        self._waiting = 0  # events handed to the loop and not yet read: at most maxsize
        self._closed = False
        self._undelivered = False  # the informer closed this handler's delivery (it stops)
        self._informer = informer
        self._registration: Any = informer.add_event_handler(handler)

    # -- the handler's side: its delivery thread --

    def _offer(self, event: Event) -> None:
        """Hand ``event`` to the loop, waiting while ``maxsize`` are unread; dropped once closed."""
        with self._room:
            while self._waiting >= self._maxsize and not self._closed and not self._undelivered:
                self._room.wait()
            if self._closed or self._undelivered:
                return
            self._waiting += 1
        try:
            self._loop.call_soon_threadsafe(self._put, event)
        except RuntimeError:  # the loop is closed: nobody will read any more
            with self._room:
                self._closed = True

    def _delivery_closed(self) -> None:
        """The informer closed this handler's delivery (it stops, or the handler was removed):
        a delivery thread waiting for room returns, so the informer's stop does not wait for a
        consumer that may never read. The stream itself goes on until :meth:`aclose`."""
        with self._room:
            self._undelivered = True
            self._room.notify_all()

    # -- the loop's side --

    def _put(self, event: Event) -> None:
        """Queue ``event`` for the reader; dropped once closed (an event handed over just before
        :meth:`aclose` is queued after it), so that nothing follows the end of the iteration."""
        if not self._closed:
            self._queue.put_nowait(event)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        if self._closed and self._queue.empty():
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._queue.put_nowait(None)  # for any other task waiting on this stream
            raise StopAsyncIteration
        with self._room:  # held only by the handler's thread between its checks: never long
            self._waiting -= 1
            self._room.notify()
        return event

    async def aclose(self) -> None:
        """Unregister the handler and end the iteration; idempotent.

        A handler's thread waiting for room returns at once. Unregistering waits, at most, for
        the batch of changes the informer is applying to its cache, as
        :meth:`~kinformer.SharedIndexInformer.remove_event_handler` does.
        """
        with self._room:
            self._closed = True
            self._room.notify_all()
        registration, self._registration = self._registration, None
        if registration is not None:
            self._informer.remove_event_handler(registration)
            while not self._queue.empty():  # what was not read is dropped
                self._queue.get_nowait()
            self._queue.put_nowait(None)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def events(informer: Any, maxsize: int = DEFAULT_MAXSIZE) -> EventStream:
    """An :class:`EventStream` of ``informer``'s notifications, registered at once.

    ``informer`` is a :class:`~kinformer.SharedIndexInformer` (each event's ``cluster`` is
    ``""``, or the object's logical cluster when the informer is cluster-aware) or a
    :class:`~kinformer.MultiClusterInformer` (the member cluster; a cluster that is disengaged
    leaves the stream without an event), else TypeError. Call it from a coroutine (it binds to
    the running loop). Like any handler added to a running informer, it first gets ``"ADDED"``
    for every cached object. At most ``maxsize`` notifications (an integer ``>= 1``, else
    :class:`~kinformer.ConfigurationError`) wait unread; then the handler's delivery thread
    waits for the consumer. Registering waits, at most, for the batch of changes the informer
    is applying. Raises :class:`~kinformer.StoppedError` for an informer that has stopped.
    """
    return EventStream(informer, maxsize)


class _Funcs(handlers.ResourceEventHandlerFuncs):
    """A stream's handler: its ``delivery_closed`` is the stream's (see the processor)."""

    __slots__ = ("delivery_closed",)


class _ClusterFuncs(cluster_handlers.ClusterEventHandlerFuncs):
    """A stream's cluster handler, with the stream's ``delivery_closed``."""

    __slots__ = ("delivery_closed",)


def _handler_for(informer: Any, offer: Callable[[Event], None]) -> Any:
    """The handler that offers ``informer``'s notifications as events naming their cluster."""
    if isinstance(informer, SharedIndexInformer) and not informer.cluster_aware:
        return _Funcs(
            add_func=lambda obj: offer(Event(ADDED, obj)),
            update_func=lambda old, new: offer(Event(MODIFIED, new)),
            delete_func=lambda obj: offer(Event(DELETED, _deleted(obj))),
        )
    # a cluster-aware informer tells a cluster handler each object's cluster (its annotation),
    # a multi-cluster informer (the one other thing with informer_for) the member's name
    if isinstance(informer, SharedIndexInformer) or callable(getattr(informer, "informer_for", None)):
        return _ClusterFuncs(
            add_func=lambda cluster, obj: offer(Event(ADDED, obj, cluster)),
            update_func=lambda cluster, old, new: offer(Event(MODIFIED, new, cluster)),
            delete_func=lambda cluster, obj: offer(Event(DELETED, _deleted(obj), cluster)),
        )
    raise TypeError(f"aio.events takes a SharedIndexInformer or a MultiClusterInformer, not {informer!r}")


def _deleted(obj: Any) -> Any:
    """The last known state of a deleted object, or its tombstone when that knows none."""
    state = handlers.deleted_object(obj)
    return obj if state is None else state
