"""DelayingQueue: a WorkQueue whose items can be added after a delay.

One waiting-loop thread (``kinformer-workqueue-<name>``) keeps a min-heap of ready times and adds
each item to the underlying :class:`~kinformer.WorkQueue` when its time comes. It
waits through a :class:`~kinformer.clock.Clock`, so tests drive it with ``FakeClock.step``.
:mod:`kinformer.workqueue.rate_limiting` asks a rate limiter for the delay.
"""

from __future__ import annotations

import heapq
import logging
import threading
import weakref
from typing import Generic

from kinformer import _checks, _threads
from kinformer import clock as clock_module
from kinformer.metrics import provider as metrics_provider
from kinformer.workqueue.queue import T, WorkQueue

log = logging.getLogger(__name__)

HEARTBEAT = 10.0  # seconds an idle waiting loop sleeps before looking again (client-go's heartbeat)
JOIN_TIMEOUT = 5.0  # seconds shut_down waits for the waiting loop before naming it in a warning


class _Entry(Generic[T]):
    """One scheduled add; ordered by ready time, then by insertion."""

    __slots__ = ("item", "ready", "seq")

    def __init__(self, ready: float, seq: int, item: T) -> None:
        self.ready = ready
        self.seq = seq
        self.item = item

    def __lt__(self, other: _Entry[T]) -> bool:
        return (self.ready, self.seq) < (other.ready, other.seq)


class DelayingQueue(WorkQueue[T]):
    """A :class:`WorkQueue` with :meth:`add_after` (client-go ``DelayingInterface``).

    Thread-safe. Adding an item that is already waiting keeps the earlier of the two ready
    times: a delay never postpones. The waiting-loop thread starts with the first delayed add
    and is joined by ``shut_down``/``shut_down_with_drain``; items still waiting then are
    discarded. Every ``add_after`` before shutdown counts as a retry in the queue's metrics
    (client-go's ``workqueue_retries_total``), whatever its delay.
    """

    def __init__(self, clock: clock_module.Clock = clock_module.REAL_CLOCK, name: str = "") -> None:
        super().__init__(name, clock=clock)
        provider = metrics_provider.active_provider()
        self._retries = provider.new_retries_metric(name) if name and provider is not None else None
        if self._retries is not None:  # a queue dropped without a shutdown lets go of it too
            weakref.finalize(self, metrics_provider.release, self._retries)
        self._delay_lock = threading.Lock()  # guards _heap, _waiting, _seq, _thread, _stopped
        self._heap: list[_Entry[T]] = []  # may hold stale entries; _waiting says which is live
        self._waiting: dict[T, _Entry[T]] = {}  # item -> its live heap entry
        self._seq = 0
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._wake = threading.Event()  # set when the heap head may have changed or on stop

    def add_after(self, item: T, seconds: float) -> None:
        """Add ``item`` once ``seconds`` of the queue's clock passed; at once if ``seconds`` <= 0.

        Ignored after shutdown. Never blocks (beyond a lock). ``seconds`` must be a finite
        number, else :class:`~kinformer.ConfigurationError`.
        """
        seconds = _checks.number("seconds", seconds)
        if self.shutting_down():
            return
        if self._retries is not None:
            self._retries.inc()
        if seconds <= 0:
            self.add(item)
            return
        if self._ready_now(item):
            return
        with self._delay_lock:
            if self._stopped:
                return
            ready = self._clock.now() + seconds
            current = self._waiting.get(item)
            if current is not None and current.ready <= ready:
                return
            self._seq += 1
            entry = _Entry(ready, self._seq, item)
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                label = self.name or f"{id(self):x}"
                self._thread = _threads.spawn(self._waiting_loop, _threads.thread_name("workqueue", label))
        self._wake.set()

    def _ready_now(self, item: T) -> bool:
        """Whether a delayed add of ``item`` is merged with its add already made (never here:
        client-go's delaying queue keeps both; :class:`~kinformer.PriorityQueue` merges)."""
        return False

    def _cancel_delay(self, item: T) -> None:
        """Forget ``item``'s scheduled add, if it has one (its heap entry goes stale)."""
        if self._waiting:
            with self._delay_lock:
                self._waiting.pop(item, None)

    def shut_down(self) -> None:
        """Shut down (see :meth:`WorkQueue.shut_down`) and join the waiting loop."""
        super().shut_down()
        self._stop_waiting_loop()
        metrics_provider.release(self._retries)

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down and drain (see :meth:`WorkQueue.shut_down_with_drain`), then join the loop."""
        self._stop_waiting_loop()
        drained = super().shut_down_with_drain(timeout)
        metrics_provider.release(self._retries)
        return drained

    def _stop_waiting_loop(self) -> None:
        with self._delay_lock:
            self._stopped = True
            thread = self._thread
            self._heap.clear()
            self._waiting.clear()
        self._wake.set()
        if thread is not None:
            _threads.join_all([thread], JOIN_TIMEOUT)

    def _waiting_loop(self) -> None:
        while True:
            ready: list[T] = []
            with self._delay_lock:
                if self._stopped:
                    return
                self._wake.clear()
                now = self._clock.now()
                while self._heap and self._heap[0].ready <= now:
                    entry = heapq.heappop(self._heap)
                    if self._waiting.get(entry.item) is entry:
                        del self._waiting[entry.item]
                        ready.append(entry.item)
                # a delay beyond what threading can wait (a rate limiter near qps 0) waits that long
                timeout = min(self._heap[0].ready - now, _checks.MAX_SECONDS) if self._heap else HEARTBEAT
            for item in ready:
                self.add(item)
            self._clock.wait(self._wake, timeout)
