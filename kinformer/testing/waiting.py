"""wait_for: poll a predicate with a timeout, for when there is no event to wait on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kinformer import _checks


def wait_for(predicate: Callable[[], object], timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Call ``predicate`` until it returns something true (True) or ``timeout`` passes (False).

    ``timeout`` and ``interval`` are finite seconds, else :class:`~kinformer.ConfigurationError`.
    """
    timeout = _checks.seconds("timeout", timeout)
    interval = _checks.seconds("interval", interval, positive=True)
    pause = threading.Event()
    end = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        remaining = end - time.monotonic()
        if remaining <= 0:
            return False
        pause.wait(min(interval, remaining))
