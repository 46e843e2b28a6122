"""ScriptedSource: a ListerWatcher a test scripts by hand, with no server behind it.

client-go's ``fake_controller_source.go``. A :class:`ScriptedSource` answers every list with the
objects the test put in it and opens every watch as a :class:`~kinformer.testing.ChannelWatch` that the
test takes (:meth:`ScriptedSource.next_watch`) and feeds, event by event. It is for tests of what
sits on top of a ListerWatcher (a handler, a controller, a transform, an informer's own rules),
where an HTTP round trip would only add time; :class:`~kinformer.testing.FakeAPIServer` is for
tests of what crosses the wire.
"""

from __future__ import annotations

import queue
from typing import Any

from kinformer import _checks
from kinformer.client import listwatch
from kinformer.client.listerwatcher import ListOptions, ListResult
from kinformer.testing import channel_watch


class ScriptedSource:
    """A scripted API server for one resource type, offered as ``lister_watcher``.

    A list answers ``items`` at resourceVersion ``rv`` (or raises ``list_error`` when set); each
    watch opens a :class:`~kinformer.testing.ChannelWatch` that the test takes with :meth:`next_watch`
    and feeds (``add``, ``modify``, ``delete``, ``bookmark``, ``error``, ``end``). The test may
    change ``items``, ``rv`` and ``list_error`` between requests. Thread-safe: the informer's
    reflector lists and watches on its own thread while the test feeds from its own.

    Example, with ``pod`` a dict of a Pod and ``handler`` a
    :class:`~kinformer.testing.Recorder`::

        source = ScriptedSource(pod)
        informer = SharedIndexInformer(source.lister_watcher)
        informer.add_event_handler(handler)
        ...  # run the informer on a thread
        source.next_watch().delete(pod)
        assert handler.next()[0] == "delete"
    """

    def __init__(self, *items: Any, rv: int = 10, timeout: float = 5.0) -> None:
        self.items = list(items)
        self.rv = rv
        self.list_error: BaseException | None = None
        self.timeout = _checks.seconds("timeout", timeout, positive=True)
        self._watches: queue.Queue[channel_watch.ChannelWatch] = queue.Queue()
        self.lister_watcher = listwatch.ListWatch(self.list, self.watch)

    def list(self, options: ListOptions) -> ListResult:
        """``items`` at ``rv``, whatever ``options`` ask; raises ``list_error`` when set."""
        if self.list_error is not None:
            raise self.list_error
        return ListResult(list(self.items), str(self.rv))

    def watch(self, options: ListOptions) -> channel_watch.ChannelWatch:
        """A new watch, queued for :meth:`next_watch`."""
        opened = channel_watch.ChannelWatch()
        self._watches.put(opened)
        return opened

    def next_watch(self) -> channel_watch.ChannelWatch:
        """The oldest watch the test has not taken yet, waiting up to ``timeout`` seconds for it
        to open (``queue.Empty`` after that)."""
        return self._watches.get(timeout=self.timeout)
