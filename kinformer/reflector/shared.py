"""What the parts of one reflector share: its source and store, its progress, and how it reports.

A :class:`~kinformer.Reflector` is built of parts that each run on its one run thread: the list
(:mod:`kinformer.reflector.listing`), the WatchList initial sync
(:mod:`kinformer.reflector.watch_list`) and the watch loop (:mod:`kinformer.reflector.watch_loop`).
:class:`Shared` is what they have in common, made once by the reflector: the ListerWatcher
(taking a context) and the store's methods, the shard the requests carry and the last
resourceVersion, the clock, backoff and metrics, the transform, and the reflector's own
``record_error`` and ``synced`` (what its getters report).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer.client import listerwatcher
from kinformer.metrics import provider as _metrics
from kinformer.reflector import failures, shard_state, sink, watch_events


@dataclasses.dataclass(frozen=True, slots=True)
class Shared:
    """One reflector's collaborators and progress, as its parts see them.

    ``version`` is written by the run thread only; ``record_error(exc)`` shows an error to
    the watch error handler and :meth:`~kinformer.Reflector.last_error`; ``synced(rv)`` says a
    list, or a WatchList's initial events, reached the store at ``rv``; ``listed()``, called
    just before the store is handed them, clears the last error (so a cache seen synced never
    reports the error the list recovered from). ``level(error)`` is the level to log a failed
    request at (see :func:`~kinformer.reflector.failures.log_level`).
    """

    lw: listerwatcher.ContextListerWatcher
    store: sink.Sink
    shard: shard_state.ShardState
    version: watch_events.LastVersion
    name: str
    clock: _clock.Clock
    backoff: _backoff.BackoffManager
    metrics: _metrics.ReflectorMetrics
    transform: Callable[[Any], Any] | None
    record_error: Callable[[BaseException], None]
    synced: Callable[[str], None]
    listed: Callable[[], None]
    min_watch_timeout: float
    rand: Callable[[], float]
    quiet: bool = False  # the ListerWatcher reports failures itself: expected ones at DEBUG here

    def level(self, error: BaseException) -> int:
        """The level to log ``error`` at: DEBUG for an expected one when ``quiet``, else WARNING."""
        return failures.log_level(error, self.quiet)

    def watch_options(self, rv: str) -> listerwatcher.ListOptions:
        """A watch from ``rv`` with bookmarks, on this round's shard, timing out server-side
        after a random ``[min, 2 * min)`` seconds (client-go's rule)."""
        low = self.min_watch_timeout
        return listerwatcher.ListOptions(
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=int(low + self.rand() * low),
            shard_selector=self.shard.text(),
        )
