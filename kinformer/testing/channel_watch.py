"""ChannelWatch: a watch fed by hand, for scripted ListerWatchers and tests (a test fake).

client-go's ``watch.FakeWatcher``: whoever holds a :class:`ChannelWatch` sends it events and
ends it, and whoever reads it sees them in order, as from a server's watch stream. It is a
:class:`~kinformer.Watch` of :mod:`kinformer.client.listerwatcher`;
:class:`kinformer.testing.ScriptedSource` opens one per watch request.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from kinformer.client.listerwatcher import WatchEvent


class ChannelWatch:
    """A watch fed by hand: :meth:`send` events, :meth:`end` the stream (client-go's FakeWatcher).

    Thread-safe; the feeding thread never blocks (the buffer is unbounded). Iteration yields
    events in the order sent and returns after :meth:`end` or :meth:`close`; events still
    buffered when ``close()`` is called are dropped, as a closed connection drops them.
    An exception passed to :meth:`fail` is raised by the iteration after the events before it.
    """

    _END = object()

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = threading.Event()

    def send(self, event: WatchEvent) -> None:
        self._queue.put(event)

    def add(self, obj: Any) -> None:
        self.send(WatchEvent("ADDED", obj))

    def modify(self, obj: Any) -> None:
        self.send(WatchEvent("MODIFIED", obj))

    def delete(self, obj: Any) -> None:
        self.send(WatchEvent("DELETED", obj))

    def bookmark(self, obj: Any) -> None:
        self.send(WatchEvent("BOOKMARK", obj))

    def error(self, status: dict[str, Any]) -> None:
        self.send(WatchEvent("ERROR", status))

    def fail(self, exc: BaseException) -> None:
        """Make the iteration raise ``exc`` (a broken connection, a bad line)."""
        self._queue.put(exc)

    def end(self) -> None:
        """End the stream cleanly after the events already sent."""
        self._queue.put(self._END)

    def close(self) -> None:
        self._closed.set()
        self._queue.put(self._END)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __iter__(self) -> Iterator[WatchEvent]:
        while not self._closed.is_set():
            item = self._queue.get()
            if item is self._END or self._closed.is_set():
                return
            if isinstance(item, BaseException):
                raise item
            yield item
