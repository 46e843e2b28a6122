"""RateLimitingQueue: a DelayingQueue that asks a rate limiter how long to delay a retry.

This is the queue a controller drains (client-go ``RateLimitingInterface``): a failed item goes
back with :meth:`RateLimitingQueue.add_rate_limited`, a succeeded one is :meth:`~RateLimitingQueue.forget`-ed
so its backoff starts over. Limiters live in :mod:`kinformer.workqueue.rate_limiters`.
"""

from __future__ import annotations

from kinformer import clock as clock_module
from kinformer.workqueue import rate_limiters
from kinformer.workqueue.delaying import DelayingQueue
from kinformer.workqueue.queue import T


class RateLimitingQueue(DelayingQueue[T]):
    """A :class:`DelayingQueue` with per-item retry backoff.

    Thread-safe. ``rate_limiter`` defaults to
    :func:`~kinformer.workqueue.rate_limiters.default_controller_rate_limiter` on the queue's
    clock. Give each queue its own limiter: a shared one mixes up ``forget`` between queues.

    A worker retries a failed key after a growing delay and ends once the queue is shut down:

    >>> def worker(queue, reconcile):
    ...     while True:
    ...         key, shutdown = queue.get()
    ...         if shutdown:  # shut_down() was called and nothing is left
    ...             return
    ...         try:
    ...             reconcile(key)
    ...             queue.forget(key)  # done: the next failure starts from the base delay
    ...         except Exception:
    ...             queue.add_rate_limited(key)  # again later, after this key's backoff
    ...         finally:
    ...             queue.done(key)
    >>> queue = RateLimitingQueue(name="pods")
    >>> queue.add("default/web")
    >>> queue.shut_down()
    >>> worker(queue, lambda key: print("reconciled", key))
    reconciled default/web
    """

    def __init__(
        self,
        rate_limiter: rate_limiters.RateLimiter | None = None,
        clock: clock_module.Clock = clock_module.REAL_CLOCK,
        name: str = "",
    ) -> None:
        super().__init__(name=name, clock=clock)
        self.rate_limiter: rate_limiters.RateLimiter = (
            rate_limiter if rate_limiter is not None else rate_limiters.default_controller_rate_limiter(clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter gives it (counting one more failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff; it stays queued if it is."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` was re-added with :meth:`add_rate_limited` since its last forget."""
        return self.rate_limiter.num_requeues(item)
