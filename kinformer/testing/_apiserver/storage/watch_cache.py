"""The fake API server's watch cache: the bounded event history and the open watchers it feeds.

Like kube-apiserver's watch cache, it keeps the last ``history_size`` events, which serve
watches and ``Exact`` lists from older versions; anything older answers 410 Expired. Every new
event goes into the queue of each open watcher of its type, namespace and logical cluster (or
across clusters): a put, never a wait, so a slow watcher never blocks a writer; one that falls
``max_backlog`` events behind is marked overflowed, and its stream ends cleanly, with no ERROR
event, as the real server ends a watcher it cannot hand events to: the client watches again
from the last version it read (410 once the history has moved past it). Not thread-safe on
its own: :class:`~kinformer.testing._apiserver.storage.storage.Storage` calls it under its lock.
"""

from __future__ import annotations

import collections
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.clusters import ROOT, WILDCARD
from kinformer.testing._apiserver.records import Entry, Event
from kinformer.testing._apiserver.storage.watchers import EVENT, STOP, Watcher

LIST_TOO_OLD = "The resourceVersion for the provided list is too old."  # etcd storage's 410


class WatchCache:
    """The last ``history_size`` events of every type, and the open watchers by logical cluster
    and group-resource.

    Guarded by the storage lock; ``compacted`` only grows and is at most every version in the
    history. A watcher of one logical cluster sees that cluster's events, a watcher across
    clusters (the wildcard) every cluster's.
    """

    def __init__(self, history_size: int, max_backlog: int) -> None:
        self.history_size = history_size
        self.max_backlog = max_backlog
        self.compacted = 1
        self._history: collections.deque[Event] = collections.deque()
        self._watchers: dict[str, dict[str, set[Watcher]]] = {}  # by cluster, group-resource
        self._across: dict[str, set[Watcher]] = {}  # wildcard watchers by group-resource

    def record(self, ev: Event) -> None:
        """Append ``ev`` (dropping the oldest events past ``history_size``) and fan it out."""
        history = self._history
        history.append(ev)
        while len(history) > self.history_size:
            self.compacted = history.popleft().rv
        by_gr = self._watchers.get(ev.cluster)
        for w in by_gr.get(ev.gr, ()) if by_gr else ():
            if w.namespace and w.namespace != ev.namespace:
                continue
            w.queue.put((EVENT, ev))
            if w.queue.qsize() > self.max_backlog:
                w.overflowed = True
        if self._across:  # empty unless a watch across logical clusters is open
            for w in self._across.get(ev.gr, ()):
                if w.namespace and w.namespace != ev.namespace:
                    continue
                w.queue.put((EVENT, ev))
                if w.queue.qsize() > self.max_backlog:
                    w.overflowed = True

    def since(self, rv: int, gr: str, namespace: str, cluster: str | None = None) -> list[Event]:
        """The events of ``gr`` (in ``namespace`` if given, in ``cluster`` if given) after
        ``rv``, oldest first; 410 when ``rv`` is compacted."""
        if rv < self.compacted:
            raise status.too_old(rv, self.compacted)
        backlog = []
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.gr == gr and (not namespace or ev.namespace == namespace):
                backlog.append(ev)
        if cluster is not None:  # apart: a server of one cluster pays nothing for it
            backlog = [ev for ev in backlog if ev.cluster == cluster]
        backlog.reverse()
        return backlog

    def state_at(
        self, current: dict[Any, Entry], gr: str, rv: int, cluster: str = ROOT,
    ) -> dict[Any, Entry]:
        """The objects of ``gr`` at ``rv``, rebuilt from ``current`` by undoing every later event;
        410 when ``rv`` is compacted, in the words of etcd's storage, which such a list reaches
        on a real server.

        For one logical cluster ``current`` is keyed by (namespace, name); across them (the
        wildcard) by (cluster, namespace, name).
        """
        if rv < self.compacted:
            raise status.expired(LIST_TOO_OLD)
        across = cluster == WILDCARD
        state = dict(current)
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.gr != gr:
                continue
            if across:
                key: tuple[str, ...] = (ev.cluster, ev.namespace, ev.name)
            elif ev.cluster == cluster:
                key = (ev.namespace, ev.name)
            else:
                continue
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
        gr = watcher.rt.group_resource
        if watcher.cluster == WILDCARD:
            self._across.setdefault(gr, set()).add(watcher)
        else:
            self._watchers.setdefault(watcher.cluster, {}).setdefault(gr, set()).add(watcher)

    def discard(self, watcher: Watcher) -> None:
        gr = watcher.rt.group_resource
        if watcher.cluster == WILDCARD:
            watchers = self._across.get(gr)
            if watchers is not None:
                watchers.discard(watcher)
                if not watchers:
                    del self._across[gr]  # an empty _across keeps record() fast
        else:
            self._watchers.get(watcher.cluster, {}).get(gr, set()).discard(watcher)

    def count(self, gr: str, cluster: str | None = None) -> int:
        """How many watchers of ``gr`` are open on ``cluster`` (the wildcard: across clusters;
        None: on any)."""
        if cluster == WILDCARD:
            return len(self._across.get(gr, ()))
        if cluster is not None:
            return len(self._watchers.get(cluster, {}).get(gr, ()))
        return len(self._across.get(gr, ())) + sum(
            len(by_gr.get(gr, ())) for by_gr in self._watchers.values())

    def signal(self, tag: str, payload: Any, gr: str | None) -> int:
        """Put ``(tag, payload)`` into every open watcher's queue (of one type if ``gr``)."""
        targets = [w for by_gr in self._watchers.values() for g, ws in by_gr.items()
                   if gr is None or g == gr for w in ws]
        targets += [w for g, ws in self._across.items() if gr is None or g == gr for w in ws]
        for w in targets:
            w.queue.put((tag, payload))
        return len(targets)

    def end(self, gr: str, cluster: str = ROOT, across: bool = True) -> None:
        """End every watch of ``gr`` in ``cluster`` cleanly (its type is no longer served there)
        and forget them; with ``across``, the watches across clusters too."""
        ended = self._watchers.get(cluster, {}).pop(gr, set())
        if across:
            ended |= self._across.pop(gr, set())
        for w in ended:
            w.queue.put((STOP, None))
