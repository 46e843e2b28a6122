"""FakeClock: time that moves only when a test steps it.

Components under test wait through ``clock.wait(event, timeout)``; a test calls
:meth:`FakeClock.wait_for_waiters` to know a component is blocked, then :meth:`FakeClock.step`
to release it, without a real sleep.
"""

from __future__ import annotations

import threading
import time

_REAL_POLL = 0.005  # real seconds between looks at a waiter's event (an Event cannot notify us)


class FakeClock:
    """A :class:`kinformer.clock.Clock` whose time moves only through :meth:`step`."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition()  # guards _now, _waiters
        self._waiters: list[float] = []  # deadlines of threads blocked in wait()

    def now(self) -> float:
        with self._cond:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` and wake every waiter whose deadline passed."""
        with self._cond:
            self._now += seconds
            self._cond.notify_all()

    def set(self, now: float) -> None:
        with self._cond:
            self._now = now
            self._cond.notify_all()

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        with self._cond:
            if event.is_set():
                return True
            if timeout is not None and timeout <= 0:
                return False
            deadline = None if timeout is None else self._now + timeout
            entry = float("inf") if deadline is None else deadline
            self._waiters.append(entry)
            self._cond.notify_all()
            try:
                while not event.is_set():
                    if deadline is not None and self._now >= deadline:
                        return False
                    self._cond.wait(_REAL_POLL)
                return True
            finally:
                self._waiters.remove(entry)
                self._cond.notify_all()

    def waiters(self) -> list[float]:
        """Remaining seconds of each thread blocked in :meth:`wait` (inf for no timeout)."""
        with self._cond:
            return sorted(d - self._now for d in self._waiters)

    def has_waiters(self) -> bool:
        with self._cond:
            return bool(self._waiters)

    def wait_for_waiters(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block (real time) until at least ``count`` threads are waiting on this clock."""
        end = time.monotonic() + timeout
        with self._cond:
            while len(self._waiters) < count:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.05))
            return True

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now()!r})"
