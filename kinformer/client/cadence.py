"""Bookmark cadence: how long a watch may stay silent, learned from its server's bookmarks.

kube-apiserver sends a watch that asked for bookmarks one about every minute (its watch cache's
bookmark frequency), however quiet the resource; a server without a watch cache for a resource,
or another implementation, may send none, and a quiet watch then hears nothing until the server
ends it at ``timeoutSeconds``. So a client that waits the whole ``timeoutSeconds`` for each read
is never wrong about a quiet watch, but takes that long (5-10 minutes) to notice a connection
that died without a reset or a server that hangs with it open. :class:`BookmarkCadence` keeps
what the watches of one resource collection learned of their server and picks each watch's read
timeout from it; :class:`~kinformer.client.resource.HTTPResource` asks it when a watch opens and
tells it of the bookmarks and the silence each watch meets (through :class:`WatchCadence`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kinformer import _checks

log = logging.getLogger(__name__)

INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # the annotation of a WatchList's end bookmark


class BookmarkCadence:
    """What the watches of one resource collection learned of their server's bookmarks.

    A watch waits its patient read timeout (long enough for a server that sends no bookmarks)
    until the server proves it sends them at least every ``tight`` seconds: a periodic bookmark
    (not the one ending a WatchList's initial events) within ``tight`` seconds of the watch's
    start or of the bookmark before. From then on that watch waits ``tight`` for each read, and
    so does every later one from its start: a connection that died silently, or a server that
    hangs, is noticed within ``tight`` seconds. A watch that waited ``tight`` in vain makes the
    next ones patient again until the proof comes again, so a server that stopped sending
    bookmarks (another one behind the address, a watch cache turned off) costs one cut watch,
    not one every ``tight`` seconds. Each change is logged at DEBUG, naming ``subject``.
    ``now`` is the monotonic clock the gaps are measured on. Thread-safe.
    """

    __slots__ = ("_lock", "_proven", "now", "subject", "tight")

    def __init__(self, tight: float, subject: str = "",
                 now: Callable[[], float] = time.monotonic) -> None:
        self.tight = _checks.seconds("tight", tight, positive=True)
        self.subject = subject
        self.now = now
        self._lock = threading.Lock()  # guards _proven
        self._proven = False  # a watch of this collection saw the server keep the cadence

    @property
    def proven(self) -> bool:
        """Whether the server was seen to send bookmarks at least every ``tight`` seconds."""
        with self._lock:
            return self._proven

    def watch(self, patient: float) -> WatchCadence:
        """The cadence of one watch that opened now and would wait ``patient`` seconds for
        each read without a proof; its :attr:`~WatchCadence.read_timeout` is where it starts."""
        return WatchCadence(self, patient)

    def _prove(self) -> None:
        with self._lock:
            was, self._proven = self._proven, True
        if not was:
            log.debug("watch %s: the server sends bookmarks at least every %.1f s; "
                      "silence that long now means a dead watch", self.subject, self.tight)

    def _doubt(self) -> None:
        with self._lock:
            was, self._proven = self._proven, False
        if was:
            log.debug("watch %s: no bookmark for %.1f s; waiting for the watch's end again "
                      "until bookmarks prove the cadence anew", self.subject, self.tight)

    def __repr__(self) -> str:
        return (f"<BookmarkCadence {self.subject} tight={self.tight}s "
                f"{'proven' if self.proven else 'unproven'}>")


class WatchCadence:
    """The read timeout of one watch, tightened by the bookmarks it hears. One thread.

    :meth:`heard` takes each batch of events the watch read and returns the new read timeout
    when a bookmark proved the cadence just now, else None; :meth:`silent` says the watch
    waited its read timeout in vain.
    """

    __slots__ = ("_cadence", "_last", "_patient", "read_timeout", "tight")

    def __init__(self, cadence: BookmarkCadence, patient: float) -> None:
        self._cadence = cadence
        self._patient = patient
        self.tight = cadence.proven and cadence.tight < patient  # waits the tight timeout
        self.read_timeout = cadence.tight if self.tight else patient
        self._last = cadence.now()  # the watch's start, then its last periodic bookmark

    def heard(self, types: list[str], objects: list[Any]) -> float | None:
        """A batch of events was read: the tight read timeout when one of its bookmarks
        proved the cadence and the watch waited longer until then, else None."""
        if "BOOKMARK" not in types or not any(
                t == "BOOKMARK" and not _ends_initial_events(o)
                for t, o in zip(types, objects, strict=True)):
            return None
        now = self._cadence.now()
        kept, self._last = now - self._last <= self._cadence.tight, now
        if not kept:
            return None
        self._cadence._prove()
        if self.tight or self._cadence.tight >= self._patient:
            return None
        self.tight, self.read_timeout = True, self._cadence.tight
        return self.read_timeout

    def silent(self) -> None:
        """The watch heard nothing for its read timeout; a tight one drops the proof."""
        if self.tight:
            self._cadence._doubt()


def _ends_initial_events(obj: Any) -> bool:
    """Whether a bookmark's object is the one ending a WatchList's initial events."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and annotations.get(INITIAL_EVENTS_END) == "true"
