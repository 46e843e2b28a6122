"""Clock: the seam through which every kinformer timer reads time and waits.

Backoff, resync timers, the delaying queue and wait loops take a ``clock`` so tests can step
time with :class:`kinformer.testing.FakeClock` instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Reads monotonic time and waits on an event with a timeout in that time."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        """Block until ``event`` is set (True) or ``timeout`` seconds of this clock passed (False)."""
        ...


class RealClock:
    """The system's monotonic clock."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        if timeout is not None and timeout <= 0:
            return event.is_set()
        return event.wait(timeout)

    def __repr__(self) -> str:
        return "RealClock()"


REAL_CLOCK = RealClock()
