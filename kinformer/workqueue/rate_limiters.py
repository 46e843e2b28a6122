"""Rate limiters: how long a work queue waits before retrying an item.

A :class:`RateLimiter` answers ``when(item)`` with a delay in seconds and remembers per-item
failures until ``forget(item)``. Per item: exponential backoff and fast-then-slow; overall: a
token bucket; :class:`MaxOfRateLimiter` combines them, as client-go's default controller limiter
does. :class:`~kinformer.RateLimitingQueue` is their user.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol

from kinformer import _checks, errors
from kinformer import clock as clock_module


class RateLimiter(Protocol):
    """Decides retry delays per item (client-go ``workqueue.RateLimiter``)."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before ``item`` is retried; counts one more failure of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded or was given up on)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are being counted."""
        ...


class _FailureCounts:
    """Per-item failure counts, kept until forgotten: the memory of the per-item limiters.

    Thread-safe: every method holds the lock only for one dict operation.
    """

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _counts
        self._counts: dict[Hashable, int] = {}

    def add(self, item: Hashable) -> int:
        """Count one more failure of ``item``; returns how many were counted before this one."""
        with self._lock:
            before = self._counts.get(item, 0)
            self._counts[item] = before + 1
        return before

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._counts.pop(item, None)

    def count(self, item: Hashable) -> int:
        with self._lock:
            return self._counts.get(item, 0)


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures`` per item, capped at ``max_delay`` (also on overflow).

    Thread-safe. Remembers each item until :meth:`forget`; forgetting nothing leaks a counter
    per item and keeps it at the cap. ``base`` and ``max`` are finite seconds ``>= 0``, else
    :class:`~kinformer.ConfigurationError`.
    """

    def __init__(self, base: float, max: float) -> None:
        self.base = _checks.seconds("base", base)
        self.max_delay = _checks.seconds("max", max)
        self._failures = _FailureCounts()

    def when(self, item: Hashable) -> float:
        exp = self._failures.add(item)
        try:
            delay = self.base * math.pow(2.0, exp)
        except OverflowError:
            return self.max_delay
        return min(delay, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.count(item)

    def __repr__(self) -> str:
        return f"ItemExponentialFailureRateLimiter(base={self.base!r}, max={self.max_delay!r})"


class ItemFastSlowRateLimiter:
    """``fast_delay`` for an item's first ``max_fast_attempts`` failures, ``slow_delay`` after.

    Thread-safe; per-item counters until :meth:`forget`. The delays are finite seconds and
    ``max_fast_attempts`` a count ``>= 0``, else :class:`~kinformer.ConfigurationError`.
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = _checks.seconds("fast_delay", fast_delay)
        self.slow_delay = _checks.seconds("slow_delay", slow_delay)
        self.max_fast_attempts = _checks.integer("max_fast_attempts", max_fast_attempts, minimum=0)
        self._failures = _FailureCounts()

    def when(self, item: Hashable) -> float:
        attempts = self._failures.add(item) + 1
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._failures.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.count(item)

    def __repr__(self) -> str:
        return (
            f"ItemFastSlowRateLimiter(fast_delay={self.fast_delay!r}, slow_delay={self.slow_delay!r},"
            f" max_fast_attempts={self.max_fast_attempts!r})"
        )


class BucketRateLimiter:
    """A token bucket shared by all items: ``burst`` at once, then one every ``1/qps`` seconds.

    Thread-safe. Each ``when`` reserves a token and returns how long until it is available,
    even when a :class:`MaxOfRateLimiter` ends up using a longer delay. ``forget`` does nothing
    and ``num_requeues`` is always 0. ``qps`` must be a finite number above 0 and ``burst`` an
    integer ``>= 1``, else :class:`~kinformer.ConfigurationError`.
    """

    def __init__(self, qps: float, burst: int, clock: clock_module.Clock = clock_module.REAL_CLOCK) -> None:
        self.qps = _checks.number("qps", qps, above=0.0)
        self.burst = _checks.integer("burst", burst, minimum=1)
        self._clock = clock
        self._lock = threading.Lock()  # guards _tokens, _last; _tokens <= burst, negative = owed
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._clock.now()
            elapsed = max(0.0, now - self._last)
            self._last = now
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def __repr__(self) -> str:
        return f"BucketRateLimiter(qps={self.qps!r}, burst={self.burst!r})"


class MaxOfRateLimiter:
    """The longest delay any of ``limiters`` asks for; every one of them is consulted.

    ``num_requeues`` is the largest count and ``forget`` reaches all of them.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise errors.ConfigurationError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def __repr__(self) -> str:
        return f"MaxOfRateLimiter({', '.join(repr(limiter) for limiter in self.limiters)})"


class WithMaxWaitRateLimiter:
    """Another limiter's delay, but never more than ``max_delay`` seconds (finite, ``>= 0``,
    else :class:`~kinformer.ConfigurationError`)."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = _checks.seconds("max_delay", max_delay)

    def when(self, item: Hashable) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def forget(self, item: Hashable) -> None:
        self.limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.limiter.num_requeues(item)

    def __repr__(self) -> str:
        return f"WithMaxWaitRateLimiter({self.limiter!r}, max_delay={self.max_delay!r})"


def default_controller_rate_limiter(clock: clock_module.Clock = clock_module.REAL_CLOCK) -> MaxOfRateLimiter:
    """client-go's default: per item 5 ms doubling up to 1000 s, overall 10 qps with burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """client-go's ``DefaultItemBasedRateLimiter``: per item 1 ms doubling up to 1000 s."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
