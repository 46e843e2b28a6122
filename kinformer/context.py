"""Context: the one stop signal every kinformer component obeys.

A :class:`Context` is cancelled once and stays cancelled. Cancelling flows from parent to
children, never up, so a child per informer, per controller or per resource type stops exactly
its own subtree. Components accept either a ``Context`` or a plain :class:`threading.Event`;
:func:`as_context` turns the latter into the former, and :func:`context_for_channel` is fleet's
``ContextForChannel``.

>>> root = Context("root")
>>> child = root.child()  # one per GVR in an InformerManager
>>> child.cancel()  # stops that subtree only
>>> child.cancelled(), root.cancelled()
(True, False)
>>> _ = root.on_cancel(lambda: print("closing the stream"))  # wakes a blocking socket read
>>> root.cancel()
closing the stream
>>> root.wait(30)  # an interruptible sleep: True at once, as the context is cancelled
True
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable

from kinformer import _checks, errors

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a callback's errors: none may quote a token

_POLL_INTERVAL = 0.05  # how often a bridge thread looks at a plain Event it cannot subscribe to
_ids = itertools.count(1)


class CancelHandle:
    """What :meth:`Context.on_cancel` returns: ``remove()`` unregisters the callback."""

    __slots__ = ("_callback", "_ctx")

    def __init__(self, ctx: Context, callback: Callable[[], object]) -> None:
        self._ctx: Context | None = ctx
        self._callback = callback

    def remove(self) -> None:
        """Forget the callback; a no-op once it ran or was removed."""
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx._remove_callback(self)


class Context:
    """A cancellable stop signal with children.

    Thread-safe. ``cancel()`` is idempotent; callbacks registered with :meth:`on_cancel` run
    exactly once, on the cancelling thread, outside any lock (a callback registered after
    cancellation runs at once on the registering thread). A callback that raises is logged and
    does not keep the others from running.
    """

    __slots__ = ("__weakref__", "_callbacks", "_done", "_lock", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name or f"ctx-{next(_ids)}"
        self._done = threading.Event()
        self._lock = threading.Lock()  # guards _callbacks; None once cancelled
        self._callbacks: list[CancelHandle] | None = []

    @property
    def done(self) -> threading.Event:
        """A :class:`threading.Event` set once the context is cancelled."""
        return self._done

    def cancelled(self) -> bool:
        """True once cancelled."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds passed; True once cancelled.

        ``timeout`` is None (no limit) or finite seconds, else
        :class:`~kinformer.ConfigurationError`.
        """
        return self._done.wait(_checks.timeout("timeout", timeout))

    def cancel(self) -> None:
        """Cancel this context and, through their callbacks, all its children."""
        with self._lock:
            callbacks, self._callbacks = self._callbacks, None
            if callbacks is None:
                return
            self._done.set()
        for handle in callbacks:
            handle._ctx = None
            _run_callback(handle._callback)

    def on_cancel(self, callback: Callable[[], object]) -> CancelHandle:
        """Run ``callback`` once when cancelled (at once if already cancelled)."""
        handle = CancelHandle(self, callback)
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(handle)
                return handle
        handle._ctx = None
        _run_callback(callback)
        return handle

    def _remove_callback(self, handle: CancelHandle) -> None:
        with self._lock:
            if self._callbacks is not None:
                with contextlib.suppress(ValueError):
                    self._callbacks.remove(handle)

    def child(self, name: str = "") -> Context:
        """A new context cancelled with this one, or on its own.

        Cancelling the child unregisters it from the parent, so short-lived children do not
        accumulate on a long-lived parent.
        """
        child = Context(name or f"{self.name}/{next(_ids)}")
        handle = self.on_cancel(child.cancel)
        child.on_cancel(handle.remove)
        return child

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled() else "live"
        return f"<Context {self.name} {state}>"


StopSignal = Context | threading.Event


def _run_callback(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        log.exception("context cancel callback %r failed", callback)


def _bridge(event: threading.Event, ctx: Context) -> None:
    """Cancel ``ctx`` when ``event`` is set; return early once ``ctx`` is cancelled by others."""
    while not event.wait(_POLL_INTERVAL):
        if ctx.cancelled():
            return
    ctx.cancel()


def context_for_channel(parent: StopSignal) -> tuple[Context, Callable[[], None]]:
    """fleet's ``ContextForChannel``: a context cancelled when ``parent`` is set or by ``cancel``.

    Whichever happens first cancels the context; once either happened, nothing is left running
    (for a plain Event parent the bridging thread, ``kinformer-context-*``, exits within
    a fraction of a second).
    """
    if isinstance(parent, Context):
        ctx = parent.child()
        return ctx, ctx.cancel
    if not isinstance(parent, threading.Event):
        kind = type(parent).__name__
        raise TypeError(f"parent must be a threading.Event or a Context, not {kind}")
    ctx = Context()
    if parent.is_set():
        ctx.cancel()
        return ctx, ctx.cancel
    thread = threading.Thread(
        target=_bridge, args=(parent, ctx), name=f"kinformer-context-{ctx.name}", daemon=True
    )
    thread.start()
    return ctx, ctx.cancel


def as_context(stop: StopSignal | None) -> Context:
    """A :class:`Context` for ``stop``: itself if it is one, a bridged context for an Event.

    ``None`` gives a fresh context that only its own ``cancel`` stops.
    """
    if stop is None:
        return Context()
    if isinstance(stop, Context):
        return stop
    ctx, _cancel = context_for_channel(stop)
    return ctx
