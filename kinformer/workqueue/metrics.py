"""A work queue's metric bookkeeping: client-go's ``defaultQueueMetrics``.

:class:`QueueMetrics` remembers when each item was added and when a worker took it, and turns
that into the provider's depth, adds, queue latency and work duration as the queue calls
:meth:`~QueueMetrics.add`, :meth:`~QueueMetrics.get` and :meth:`~QueueMetrics.done` under its
own lock. Unfinished work and the longest running processor are set by a periodic updater
thread the queue runs (:data:`UNFINISHED_WORK_UPDATE_PERIOD`). A queue makes one only when it
has a name and a provider other than the no-op default is set (:mod:`kinformer.metrics`).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Generic, TypeVar

from kinformer import clock as clock_module
from kinformer.metrics import provider as provider_module

UNFINISHED_WORK_UPDATE_PERIOD = 0.5  # seconds between updates of unfinished work (client-go's)

T = TypeVar("T", bound=Hashable)


class QueueMetrics(Generic[T]):
    """Depth, adds, latency, work duration and unfinished work of one named queue.

    Not thread-safe by itself: every method is called under the queue's lock.
    """

    __slots__ = (
        "_add_times",
        "_now",
        "_processing_since",
        "adds",
        "depth",
        "latency",
        "longest_running_processor",
        "unfinished_work_seconds",
        "work_duration",
    )

    def __init__(
        self, name: str, provider: provider_module.MetricsProvider, clock: clock_module.Clock
    ) -> None:
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished_work_seconds = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running_processor = provider.new_longest_running_processor_seconds_metric(name)
        # the real clock's now() is time.monotonic: call that directly, three times per cycle
        self._now = time.monotonic if clock is clock_module.REAL_CLOCK else clock.now
        self._add_times: dict[T, float] = {}  # item -> when it was first added since its last get
        self._processing_since: dict[T, float] = {}  # item -> when a worker took it

    def add(self, item: T) -> None:
        """``item`` became dirty (queued, or due again after its current processing)."""
        self.adds.inc()
        self.depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: T) -> None:
        """A worker took ``item``: observe how long it waited."""
        self.depth.dec()
        now = self._now()
        self._processing_since[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self.latency.observe(now - added)

    def done(self, item: T) -> None:
        """The worker finished ``item``: observe how long it took."""
        started = self._processing_since.pop(item, None)
        if started is not None:
            self.work_duration.observe(self._now() - started)

    def update_unfinished_work(self) -> None:
        """Set unfinished work (summed ages of items in progress) and the oldest of them."""
        now = self._now()
        total = oldest = 0.0
        for started in self._processing_since.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        self.unfinished_work_seconds.set(total)
        self.longest_running_processor.set(oldest)

    def remove(self) -> None:
        """Let go of every metric (the queue shut down): the provider may drop their series, and
        items still queued no longer count in a depth another queue of the name shares."""
        provider_module.release(
            self.depth, self.adds, self.latency, self.work_duration, self.unfinished_work_seconds,
            self.longest_running_processor)
