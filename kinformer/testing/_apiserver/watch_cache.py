"""The fake API server's watch cache: the bounded event history and the open watchers it feeds.

Like kube-apiserver's watch cache, it keeps the last ``history_size`` events, which serve
watches and ``Exact`` lists from older versions; anything older answers 410 Expired. Every new
event goes into the queue of each open watcher of its type (and namespace): a put, never a
wait, so a slow watcher never blocks a writer; one that falls ``max_backlog`` events behind is
marked overflowed, and its stream ends it with 410, as the real server does. Not thread-safe on
its own: :class:`~kinformer.testing._apiserver.storage.Storage` calls it under its lock.
"""

from __future__ import annotations

import collections
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.records import Entry, Event
from kinformer.testing._apiserver.watchers import EVENT, STOP, Watcher


class WatchCache:
    """The last ``history_size`` events of every type, and the open watchers by group-resource.

    Guarded by the storage lock; ``compacted`` only grows and is at most every version in the
    history.
    """

    def __init__(self, history_size: int, max_backlog: int) -> None:
        self.history_size = history_size
        self.max_backlog = max_backlog
        self.compacted = 1
        self._history: collections.deque[Event] = collections.deque()
        self._watchers: dict[str, set[Watcher]] = {}

    def record(self, ev: Event) -> None:
        """Append ``ev`` (dropping the oldest events past ``history_size``) and fan it out."""
        history = self._history
        history.append(ev)
        while len(history) > self.history_size:
            self.compacted = history.popleft().rv
        for w in self._watchers.get(ev.gr, ()):
            if w.namespace and w.namespace != ev.namespace:
                continue
            w.queue.put((EVENT, ev))
            if w.queue.qsize() > self.max_backlog:
                w.overflowed = True

    def since(self, rv: int, gr: str, namespace: str) -> list[Event]:
        """The events of ``gr`` (in ``namespace`` if given) after ``rv``, oldest first; 410 when
        ``rv`` is compacted."""
        if rv < self.compacted:
            raise status.too_old(rv, self.compacted)
        backlog = []
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.gr == gr and (not namespace or ev.namespace == namespace):
                backlog.append(ev)
        backlog.reverse()
        return backlog

    def state_at(
        self, current: dict[tuple[str, str], Entry], gr: str, rv: int,
    ) -> dict[tuple[str, str], Entry]:
        """The objects of ``gr`` at ``rv``, rebuilt from ``current`` by undoing every later event;
        410 when ``rv`` is compacted."""
        if rv < self.compacted:
            raise status.too_old(rv, self.compacted)
        state = dict(current)
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.gr != gr:
                continue
            key = (ev.namespace, ev.name)
            if ev.prev is None:
                state.pop(key, None)
            else:
                state[key] = ev.prev
        return state

    def compact(self, rv: int) -> None:
        """Drop the whole history: versions before ``rv`` now answer 410."""
        self._history.clear()
        self.compacted = rv

    def add(self, watcher: Watcher) -> None:
        self._watchers.setdefault(watcher.rt.group_resource, set()).add(watcher)

    def discard(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.rt.group_resource, set()).discard(watcher)

    def count(self, gr: str) -> int:
        """How many watchers of ``gr`` are open."""
        return len(self._watchers.get(gr, ()))

    def signal(self, tag: str, payload: Any, gr: str | None) -> int:
        """Put ``(tag, payload)`` into every open watcher's queue (of one type if ``gr``)."""
        targets = [w for g, ws in self._watchers.items() if gr is None or g == gr for w in ws]
        for w in targets:
            w.queue.put((tag, payload))
        return len(targets)

    def end(self, gr: str) -> None:
        """End every watch of ``gr`` cleanly (its type is no longer served) and forget them."""
        for w in self._watchers.pop(gr, set()):
            w.queue.put((STOP, None))
