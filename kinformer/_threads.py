"""Named, guarded threads: how every kinformer component starts and joins its workers.

Threads are named ``kinformer-<role>-<subject>`` so ``%(threadName)s`` in logs and the test
suite's leak check can tell them apart. A crash is logged with its traceback instead of
vanishing; daemon is only a safety net for a forgotten stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kinformer import _checks, errors

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a thread's crash: no traceback may quote a token

PREFIX = "kinformer-"


def thread_name(role: str, subject: object = "") -> str:
    """``kinformer-<role>-<subject>`` (or ``kinformer-<role>``)."""
    subject = str(subject)
    return f"{PREFIX}{role}-{subject}" if subject else f"{PREFIX}{role}"


def spawn(target: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> threading.Thread:
    """Start ``target(*args, **kwargs)`` on a daemon thread called ``name``.

    An exception escaping ``target`` is logged with its traceback.
    """
    if not name.startswith(PREFIX):
        name = PREFIX + name

    def guarded() -> None:
        try:
            target(*args, **kwargs)
        except Exception:
            log.exception("thread %s crashed", name)

    thread = threading.Thread(target=guarded, name=name, daemon=True)
    thread.start()
    return thread


def join_all(threads: Iterable[threading.Thread], timeout: float = 5.0) -> list[str]:
    """Join ``threads`` within ``timeout`` seconds overall; log and return the names still alive.

    Never joins the calling thread itself. ``timeout`` is finite seconds, else
    :class:`~kinformer.ConfigurationError`.
    """
    import time

    timeout = _checks.seconds("timeout", timeout)
    deadline = time.monotonic() + timeout
    current = threading.current_thread()
    stuck: list[str] = []
    for thread in threads:
        if thread is current:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            stuck.append(thread.name)
    if stuck:
        log.warning("threads still running after %.1fs: %s", timeout, ", ".join(stuck))
    return stuck


def kinformer_threads() -> list[threading.Thread]:
    """Every live thread whose name starts with ``kinformer-``."""
    return [t for t in threading.enumerate() if t.name.startswith(PREFIX) and t.is_alive()]
