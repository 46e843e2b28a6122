"""How every demo stops: Ctrl-C or SIGTERM asks it to, and the root logger's output is its own.

A demo runs inside :func:`stop_on_signals`, which hands it the Event that a first signal sets
(a second one interrupts at once), and, on a terminal, inside :func:`root_log_handlers`, which
routes log records to its screen instead of over it. Both put back what they replaced on exit.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An Event set by the first SIGINT or SIGTERM inside; the previous handlers return on exit."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signum, previous[signum])  # a second Ctrl-C interrupts at once

    previous: dict[int, Any] = {sig: signal.signal(sig, on_signal) for sig in _SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def root_log_handlers(handlers: Sequence[logging.Handler] | None) -> Iterator[None]:
    """The root logger's handlers are ``handlers`` inside (left alone when None), then as before."""
    root = logging.getLogger()
    saved = root.handlers[:]
    if handlers is not None:
        root.handlers = list(handlers)
    try:
        yield
    finally:
        root.handlers = saved
