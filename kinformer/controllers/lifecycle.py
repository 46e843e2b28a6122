"""RunOnce: the run/start/shutdown/join bookkeeping of a component that runs once.

A :class:`~kinformer.Controller` and a :class:`~kinformer.BuiltController` share it: ``run(stop)``
claims the one run and blocks, ``start(stop)`` claims it and runs on a thread, ``shutdown()``
cancels what either claimed and joins, ``join()`` only waits. The component keeps its own
work; this keeps who started, what cancels it and when it has finished.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kinformer import _checks, context, errors


class RunOnce:
    """Thread-safe. :meth:`claim` succeeds once (then :class:`~kinformer.AlreadyStartedError`);
    the owner calls :meth:`exited` when its run has finished and :meth:`ran_on` for the thread
    ``start`` made."""

    __slots__ = ("_cancel", "_exited", "_lock", "_started", "_thread", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()  # guards _started, _cancel, _thread; each is set once
        self._started = False
        self._cancel: Callable[[], None] | None = None  # cancels the claimed context
        self._thread: threading.Thread | None = None  # start's thread
        self._exited = threading.Event()  # set once the run has finished

    def claim(self, stop: context.StopSignal) -> context.Context:
        """The context of the one run: cancelled by ``stop`` or by :meth:`shutdown`."""
        ctx, cancel = context.context_for_channel(stop)
        with self._lock:
            if self._started:
                cancel()
                raise errors.AlreadyStartedError(f"controller {self.name} was already started")
            self._started = True
            self._cancel = cancel
        return ctx

    def ran_on(self, thread: threading.Thread) -> None:
        """The run goes on ``thread`` (``start``): :meth:`shutdown` and :meth:`join` join it."""
        with self._lock:
            self._thread = thread

    def exited(self) -> None:
        """The run has finished (called from the run itself, last)."""
        self._exited.set()

    def shutdown(self, timeout: float | None) -> bool:
        """Cancel the run as its ``stop`` would and wait for it; True once it finished (at once
        when it never ran), False after ``timeout`` seconds."""
        limit = _checks.timeout("timeout", timeout)
        with self._lock:
            cancel, thread = self._cancel, self._thread
        if cancel is None:
            return True
        cancel()
        if thread is not None:
            thread.join(limit)
            return not thread.is_alive()
        return self._exited.wait(limit)

    def join(self, timeout: float | None) -> bool:
        """Wait for a started run to finish; True once it has (or when nothing was started)."""
        with self._lock:
            thread = self._thread
        if thread is None:
            return True
        thread.join(_checks.timeout("timeout", timeout))
        return not thread.is_alive()
