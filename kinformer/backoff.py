"""Backoff: client-go's jittered exponential backoff, as immutable values plus a shared manager.

A :class:`Backoff` is a value: ``delay(rand)`` is the jittered wait of the current step and
``next()`` returns the following step. :class:`BackoffManager` holds one mutable position in
that sequence behind a lock, applies the classic reset (back to the first step when more than
``reset_after`` seconds passed since the previous request) and waits through a
:class:`~kinformer.clock.Clock`. The :class:`~kinformer.Reflector` shares one manager
between its run loop, watch-start retries and 429 handling.
"""

from __future__ import annotations

import dataclasses
import random as _random
import threading
from collections.abc import Callable

from kinformer import _checks
from kinformer import clock as _clock
from kinformer import context as _context

BACKOFF_INITIAL = 0.8  # client-go's reflector default: the first wait after a failure
BACKOFF_FACTOR = 2.0
BACKOFF_MAX = 30.0  # with jitter: at most ~2 relists a minute while the server is down
BACKOFF_JITTER = 1.0  # each wait is uniform in [d, 2d)
BACKOFF_RESET = 120.0  # a quiet gap this long since the previous failure starts over at 0.8 s

RandomSource = Callable[[], float]
"""Returns a float in [0, 1); ``random.random`` or a seeded ``random.Random(...).random``."""


@dataclasses.dataclass(frozen=True)
class Backoff:
    """One step of an exponential backoff: ``duration`` before jitter, growing by ``factor``.

    Immutable and thread-safe. ``next()`` doubles (by ``factor``) up to ``cap``; ``delay``
    applies the jitter: ``duration * (1 + jitter * rand())``, so with jitter 1.0 the wait is
    uniform in ``[duration, 2 * duration)``. ``cap`` 0 means no cap (the waits still stop
    growing at :data:`~kinformer._checks.MAX_SECONDS`). Each field must be a finite number
    ``>= 0``, else :class:`~kinformer.ConfigurationError`.
    """

    duration: float = BACKOFF_INITIAL
    factor: float = BACKOFF_FACTOR
    jitter: float = BACKOFF_JITTER
    cap: float = BACKOFF_MAX

    def __post_init__(self) -> None:
        _checks.seconds("duration", self.duration)
        _checks.number("factor", self.factor, minimum=0.0)
        _checks.number("jitter", self.jitter, minimum=0.0)
        _checks.seconds("cap", self.cap)

    def next(self) -> Backoff:
        """The following step: ``duration * factor``, never above ``cap``."""
        grown = self.duration * self.factor if self.factor else self.duration
        limit = self.cap if self.cap > 0 else _checks.MAX_SECONDS
        if grown > limit:
            grown = limit
        return dataclasses.replace(self, duration=grown)

    def delay(self, rand: RandomSource = _random.random) -> float:
        """The jittered wait for this step."""
        if self.jitter > 0:
            return min(self.duration + self.duration * self.jitter * rand(), _checks.MAX_SECONDS)
        return self.duration


class BackoffManager:
    """A shared position in a :class:`Backoff` sequence with client-go's classic reset.

    Thread-safe: every :meth:`next_delay` advances the one sequence, whichever thread asks.
    When more than ``reset_after`` seconds (of ``clock``) passed since the previous request, the
    sequence starts over at ``initial`` first, so a component that stayed healthy for a while
    retries quickly again, while one failing continuously stays at the cap. ``reset_after``
    must be a finite number of seconds, else :class:`~kinformer.ConfigurationError`.
    """

    def __init__(
        self,
        initial: Backoff | None = None,
        reset_after: float = BACKOFF_RESET,
        *,
        clock: _clock.Clock = _clock.REAL_CLOCK,
        random: RandomSource | None = None,
    ) -> None:
        self._initial = initial if initial is not None else Backoff()
        self._reset_after = _checks.seconds("reset_after", reset_after)
        self._clock = clock
        self._rand: RandomSource = random if random is not None else _random.random
        self._lock = threading.Lock()  # guards _current, _last_request, _resume_at
        self._current = self._initial
        self._last_request: float | None = None
        self._resume_at: float | None = None  # clock time a wait in progress ends

    def next_delay(self) -> float:
        """The next wait in seconds, advancing the sequence (after a reset if one is due)."""
        now = self._clock.now()
        with self._lock:
            if self._last_request is not None and now - self._last_request > self._reset_after:
                self._current = self._initial
            self._last_request = now
            step = self._current
            self._current = step.next()
        return step.delay(self._rand)

    def reset(self) -> None:
        """Start over at the initial step."""
        with self._lock:
            self._current = self._initial
            self._last_request = None

    def wait(self, stop: _context.Context, at_least: float = 0.0) -> bool:
        """Wait the next delay on the clock, or until ``stop``; True when stopped.

        ``at_least``: seconds the server asked to wait (a 429's ``Retry-After``): the wait is
        the longer of the two. Blocks the calling thread for at most that.
        """
        if stop.cancelled():
            return True
        delay = max(self.next_delay(), at_least)
        with self._lock:
            self._resume_at = self._clock.now() + delay
        try:
            return self._clock.wait(stop.done, delay) or stop.cancelled()
        finally:
            with self._lock:
                self._resume_at = None

    def remaining(self) -> float | None:
        """Seconds left of the :meth:`wait` in progress; None when nothing waits."""
        with self._lock:
            resume_at = self._resume_at
        return None if resume_at is None else max(0.0, resume_at - self._clock.now())

    def __repr__(self) -> str:
        return f"BackoffManager(current={self._current.duration!r}s)"
