"""WorkQueue: client-go's basic work queue, a deduplicating FIFO that never hands out an item twice at once.

Producers (event handlers) ``add`` keys; workers ``get`` one, process it and call ``done``. An
item added while queued is merged with the queued copy; an item added while a worker holds it
is queued again when that worker calls ``done``, so N adds during processing cause exactly one
more processing. :mod:`kinformer.workqueue.delaying` and :mod:`kinformer.workqueue.rate_limiting`
build on it. A named queue reports to the metrics provider (:mod:`kinformer.metrics`) through
:mod:`kinformer.workqueue.metrics` when one is set.
"""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from collections.abc import Hashable
from typing import Generic, TypeVar

from kinformer import _checks, _threads
from kinformer import clock as clock_module
from kinformer.metrics import provider as metrics_provider
from kinformer.workqueue import metrics as queue_metrics

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)

JOIN_TIMEOUT = 5.0  # seconds shut_down waits for the metrics updater before naming it in a warning


class WorkQueue(Generic[T]):
    """A FIFO of distinct items with dirty/processing tracking (client-go ``workqueue.Type``).

    Thread-safe; any number of producers and workers. ``get`` blocks until an item is ready
    or the queue is shut down. After ``shut_down`` new adds are ignored, but items already
    queued are still handed out; ``get`` returns ``(None, True)`` once none are left.

    A queue with a ``name``, created while a metrics provider is set
    (:func:`kinformer.metrics.set_provider`), reports depth, adds, queue latency and work
    duration as client-go's does, timed on ``clock``; from its first ``get`` until shutdown a
    thread (``kinformer-workqueue-metrics-<name>``) updates unfinished work every half second.
    Unnamed queues, and every queue while no provider is set, keep no metrics.

    A worker takes items until the queue is shut down and empty:

    >>> queue = WorkQueue(name="pods")
    >>> queue.add("default/web")
    >>> queue.add("default/web")  # already queued: still one item
    >>> len(queue)
    1
    >>> queue.shut_down()  # no new adds; what is queued is still handed out
    >>> while True:
    ...     item, shutdown = queue.get()
    ...     if shutdown:
    ...         break
    ...     try:
    ...         print("processing", item)
    ...     finally:
    ...         queue.done(item)
    processing default/web
    """

    def __init__(self, name: str = "", *, clock: clock_module.Clock = clock_module.REAL_CLOCK) -> None:
        self.name = name
        self._clock = clock
        # guards every field below; invariants: _queue holds distinct items, each in _dirty;
        # an item is never in _queue and _processing at once
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # entered through _lock: a bare Lock is faster
        self._queue: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()  # needs processing (queued, or re-added while processing)
        self._processing: set[T] = set()  # handed out by get(), not yet done()
        self._shutting_down = False
        self._drain = False
        self._getters = 0  # threads blocked in get(): notify only when someone listens
        provider = metrics_provider.active_provider()
        self._metrics: queue_metrics.QueueMetrics[T] | None = (
            queue_metrics.QueueMetrics(name, provider, clock) if name and provider is not None else None
        )
        if self._metrics is not None:  # a queue dropped without a shutdown lets go of them too
            weakref.finalize(self, self._metrics.remove)
        self._updater: threading.Thread | None = None  # the metrics updater, from the first get
        self._updater_stop = threading.Event()

    @property
    def clock(self) -> clock_module.Clock:
        """The clock the queue times its waits and metrics on."""
        return self._clock

    def add(self, item: T) -> None:
        """Mark ``item`` for processing; a no-op if it is already waiting or after shutdown.

        Never blocks (beyond the lock). An item currently being processed is queued again
        when its worker calls :meth:`done`.
        """
        with self._lock:
            self._add_locked(item)

    def _add_locked(self, item: T) -> None:
        """:meth:`add`, with the lock held (a subclass's add that must decide and queue in one
        hold)."""
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        if self._getters:
            self._cond.notify()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Take the oldest item: ``(item, False)``, or ``(None, True)`` once shut down and empty.

        Blocks while the queue is empty and not shut down; with ``timeout`` (seconds) it gives
        up and returns ``(None, False)``. The caller must call :meth:`done` with the item.
        A ``timeout`` that is not None or finite seconds raises :class:`~kinformer.ConfigurationError`.
        """
        if timeout is not None:
            timeout = _checks.timeout("timeout", timeout)
        with self._lock:
            if not self._queue and not self._shutting_down:
                self._getters += 1
                try:
                    if not self._cond.wait_for(lambda: self._queue or self._shutting_down, timeout):
                        return None, False
                finally:
                    self._getters -= 1
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics is not None:
                self._metrics.get(item)
                if self._updater is None and not self._shutting_down:
                    self._updater = _threads.spawn(
                        self._update_unfinished_work_loop,
                        _threads.thread_name("workqueue-metrics", self.name),
                        self._metrics,
                    )
            return item, False

    def done(self, item: T) -> None:
        """Finish processing ``item``; queue it again if it was added meanwhile.

        Calling ``done`` for an item that is not being processed is a no-op (client-go would
        queue a dirty item a second time).
        """
        with self._lock:
            if item not in self._processing:
                log.debug("workqueue %s: done(%r) for an item not being processed", self.name, item)
                return
            self._processing.discard(item)
            if self._metrics is not None:
                self._metrics.done(item)
            if item in self._dirty:
                self._queue.append(item)
                if self._getters:
                    self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()  # a shut_down_with_drain() may be waiting for this

    def len(self) -> int:
        """How many items wait to be handed out (items being processed are not counted)."""
        with self._lock:
            return len(self._queue)

    def __len__(self) -> int:
        return self.len()

    def shut_down(self) -> None:
        """Stop accepting items and wake every ``get``; returns at once.

        Items already queued are still handed out. A concurrent
        :meth:`shut_down_with_drain` stops waiting.
        """
        with self._lock:
            self._shutting_down = True
            self._drain = False
            self._cond.notify_all()
            self._release_metrics()
        self._stop_updater()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down like :meth:`shut_down`, then block until no item is being processed.

        Waits only for items handed out by ``get`` (as client-go does), so workers must keep
        calling ``get``/``done`` until ``get`` reports shutdown. Returns False if ``timeout``
        passed first, True otherwise (also when a concurrent ``shut_down`` cut the wait short).
        ``timeout`` is None or finite seconds, else :class:`~kinformer.ConfigurationError`.
        """
        timeout = _checks.timeout("timeout", timeout)
        with self._lock:
            self._shutting_down = True
            self._drain = True
            self._cond.notify_all()
            drained = self._cond.wait_for(lambda: not self._drain or not self._processing, timeout)
            self._release_metrics()
        self._stop_updater()
        return drained

    def shutting_down(self) -> bool:
        """True once :meth:`shut_down` or :meth:`shut_down_with_drain` was called."""
        with self._lock:
            return self._shutting_down

    def _release_metrics(self) -> None:
        """Let go of the queue's metrics, under the lock, once shut down: its series go unless
        another queue of its name holds them, and what it still holds leaves their depth."""
        if self._metrics is not None:
            self._metrics.remove()

    def _stop_updater(self) -> None:
        """Stop and join the metrics updater, if it runs; call after setting ``_shutting_down``."""
        with self._lock:
            updater = self._updater
        if updater is not None:
            self._updater_stop.set()
            _threads.join_all([updater], JOIN_TIMEOUT)

    def _update_unfinished_work_loop(self, metrics: queue_metrics.QueueMetrics[T]) -> None:
        """Every update period until shutdown, set unfinished work from the items in progress."""
        while not self._clock.wait(self._updater_stop, queue_metrics.UNFINISHED_WORK_UPDATE_PERIOD):
            with self._lock:
                if self._shutting_down:
                    return
                metrics.update_unfinished_work()

    def __repr__(self) -> str:
        with self._lock:
            state = "shut down" if self._shutting_down else "live"
            return (
                f"<{type(self).__name__} {self.name!r} {state} queued={len(self._queue)}"
                f" processing={len(self._processing)}>"
            )
