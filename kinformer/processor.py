"""The processor: fans an informer's notifications out to its handlers, one thread each.

client-go's ``sharedProcessor`` and ``processorListener``. The informer's delta loop calls
:meth:`SharedProcessor.distribute_batch` (once per popped batch; ``distribute`` for one
notification), and a first list taken whole into the cache comes through
:meth:`SharedProcessor.distribute_initial`; both only append to each listener's unbounded
buffer, so a slow or stuck handler never stalls the watch or the other handlers. Each
:class:`ProcessorListener` has one delivery thread (``kinformer-handler-<informer>-<n>``)
calling its handler in order, outside every kinformer lock. The processor also decides which
listeners take part in a resync (:meth:`SharedProcessor.should_resync`, called by the reflector's
resync timer), with client-go's rules for the periods handlers ask for (:func:`resync_periods`).
A handler's :class:`ResourceEventHandlerRegistration` is the handle of its listener.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from kinformer import _threads, errors
from kinformer.clock import Clock
from kinformer.handlers import ResourceEventHandler

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a handler's errors: none may quote a token

ADD = "add"
UPDATE = "update"
DELETE = "delete"
INITIAL = "initial"  # a whole initial list at once: ``first`` is its objects, each an on_add(obj, True)
PASSED = "passed"  # no callback: ``first`` is a _Countdown this listener has now come past

MINIMUM_RESYNC_PERIOD = 1.0  # client-go's floor: a smaller period would replay the cache in a busy loop
LISTENER_JOIN_TIMEOUT = 5.0  # a handler stuck this long after stop is named in a warning, not waited for


class Notification(NamedTuple):
    """One callback to make: ``kind`` is ADD (obj, is_in_initial_list), UPDATE (old, new) or DELETE
    (obj); or INITIAL, ``first`` being a list of objects, each to get ``on_add(obj, True)``."""

    kind: str
    first: Any
    second: Any = None


_NOTHING = Notification("", None)  # what an idle listener's loop holds instead of its last item


class ProcessorListener:
    """One handler, its buffer and its delivery thread.

    ``add`` never blocks on the handler. Notifications are delivered in order, one at a time;
    an exception from the handler is logged and the notification skipped. After ``close`` the
    buffered notifications are dropped and the thread exits once the callback in progress, if
    any, returns.
    """

    def __init__(
        self,
        handler: ResourceEventHandler,
        requested_resync_period: float,
        resync_period: float,
        now: float,
        upstream_synced: Callable[[], bool],
    ) -> None:
        self.handler = handler
        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period  # effective; guarded by the processor's lock
        self.next_resync = now + resync_period  # guarded by the processor's lock
        self._upstream_synced = upstream_synced
        self._lock = threading.Lock()  # guards _buffer, _closed, _pending_initial, _waiting
        self._cond = threading.Condition(self._lock)  # hot paths take the lock directly
        self._waiting = False  # the delivery thread waits in _cond: notify only then
        self._buffer: deque[Notification] = deque()
        self._closed = False
        self._pending_initial = 0  # initial-list adds enqueued and not yet returned from the handler
        self.thread: threading.Thread | None = None

    def add(self, notification: Notification) -> None:
        """Buffer a notification for delivery; ignored once closed. Never blocks on the handler."""
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                return
            if notification.kind == ADD and notification.second:
                self._pending_initial += 1
            self._buffer.append(notification)
            if self._waiting:
                self._cond.notify()
        finally:
            lock.release()

    def add_initial(self, objs: list[Any]) -> None:
        """Buffer ``on_add(obj, True)`` for each of ``objs`` (read, never changed), as one item."""
        if not objs:
            return
        with self._lock:
            if self._closed:
                return
            self._pending_initial += len(objs)
            self._buffer.append(Notification(INITIAL, objs))
            if self._waiting:
                self._cond.notify()

    def add_many(self, notifications: list[Notification], initial: int) -> None:
        """Buffer notifications in order, ``initial`` of them initial-list adds; one wakeup."""
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                return
            self._pending_initial += initial
            self._buffer.extend(notifications)
            if self._waiting:
                self._cond.notify()
        finally:
            lock.release()

    def start(self, name: str) -> threading.Thread:
        self.thread = _threads.spawn(self._run, name)
        return self.thread

    def close(self) -> None:
        """Stop delivering: drop the buffer and let the thread exit after its current callback.

        A handler with a ``delivery_closed()`` method is told, on the closing thread: one whose
        callback waits on a consumer of its own (an asyncio stream nobody reads) gives up then,
        so the informer's stop need not wait for it.
        """
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._buffer.clear()
            self._cond.notify_all()
        delivery_closed(self.handler)

    def has_synced(self) -> bool:
        """True once upstream synced and every initial-list add given to this handler returned."""
        if not self._upstream_synced():
            return False
        with self._cond:
            return self._pending_initial == 0

    def pending(self) -> int:
        """How many notifications wait in the buffer."""
        with self._cond:
            return len(self._buffer)

    def should_resync(self, now: float) -> bool:
        """Due for a resync at ``now``; call under the processor's lock."""
        return self.resync_period != 0 and now >= self.next_resync

    def _run(self) -> None:
        """Deliver until closed; takes the lock only to wait and to count returned initial adds.

        The buffer is a deque: this thread pops it without the lock while producers extend it
        under the lock, so a busy listener drains a whole batch without a lock per item.
        """
        lock, cond, buffer = self._lock, self._cond, self._buffer
        popleft = buffer.popleft
        while True:
            try:
                item = popleft()
            except IndexError:
                # idle: hold nothing delivered (a compact cache's objects go)
                item, first, second = _NOTHING, None, None
                with lock:
                    while not buffer and not self._closed:
                        self._waiting = True
                        try:
                            cond.wait()
                        finally:
                            self._waiting = False
                    if self._closed:
                        return
                continue
            if self._closed:
                return
            kind, first, second = item  # unpacked once: cheaper than three field reads apiece
            if kind == INITIAL:
                if not self._deliver_initial(first):
                    return
                continue
            if kind == PASSED:
                first.arrive()
                continue
            try:
                if kind == UPDATE:  # the usual event once synced, tested first
                    self.handler.on_update(first, second)
                elif kind == ADD:
                    self.handler.on_add(first, bool(second))
                else:
                    self.handler.on_delete(first)
            except Exception:
                log.exception("event handler %r failed on %s; notification skipped", self.handler, kind)
            finally:
                if kind == ADD and second:
                    with lock:
                        self._pending_initial -= 1

    def _deliver_initial(self, objs: list[Any]) -> bool:
        """``on_add(obj, True)`` for each of ``objs``, counted off once all returned; False once closed."""
        on_add = self.handler.on_add
        try:
            for obj in objs:
                if self._closed:
                    return False
                try:
                    on_add(obj, True)
                except Exception:
                    log.exception("event handler %r failed on add; notification skipped", self.handler)
        finally:
            with self._lock:
                self._pending_initial -= len(objs)
        return True


class ResourceEventHandlerRegistration:
    """What :meth:`SharedIndexInformer.add_event_handler <kinformer.SharedIndexInformer.add_event_handler>`
    returns; pass it to ``remove_event_handler``.

    ``has_synced()`` is True once the informer synced and this handler returned from every
    ``on_add`` of the initial list (or, for a late handler, of the replay of the cache).
    ``owner`` is the informer it belongs to, ``listener`` its :class:`ProcessorListener`, and
    ``handler`` the handler as it was registered (the listener may call it through an adapter:
    a cluster handler's, a compact informer's copies).
    """

    __slots__ = ("_handler", "listener", "owner")

    def __init__(self, owner: object, listener: ProcessorListener, handler: Any = None) -> None:
        self.owner = owner
        self.listener = listener
        self._handler = listener.handler if handler is None else handler

    @property
    def handler(self) -> Any:
        """The handler passed to ``add_event_handler``."""
        return self._handler

    @property
    def resync_period(self) -> float:
        """The effective resync period of this handler in seconds (0: never)."""
        return self.listener.resync_period

    def has_synced(self) -> bool:
        return self.listener.has_synced()

    def pending(self) -> int:
        """How many notifications wait to be delivered to this handler."""
        return self.listener.pending()

    def __repr__(self) -> str:
        return f"<ResourceEventHandlerRegistration {self._handler!r}>"


class SharedProcessor:
    """The set of listeners of one informer and the threads delivering to them.

    Thread-safe. Listeners added before :meth:`start` start with it; later ones start at once.
    :meth:`stop` closes every listener and joins their threads with a bounded wait, naming any
    still running in a warning; a stopped processor accepts no new listener.
    """

    def __init__(self, clock: Clock, name: str) -> None:
        self._clock = clock
        self._name = name
        self._lock = threading.Lock()  # guards _listeners, _running, _stopped, _threads
        # listener -> syncing (it gets the equal-resourceVersion updates of a resync)
        self._listeners: dict[ProcessorListener, bool] = {}
        self._running = False
        self._stopped = False
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count(1)

    def add_listener(self, listener: ProcessorListener) -> None:
        """Register ``listener`` (syncing until the next resync check) and start it if running.

        Raises StoppedError once the processor stopped.
        """
        with self._lock:
            if self._stopped:
                raise errors.StoppedError(
                    f"handler {listener.handler!r} was not added to shared informer "
                    "because it has stopped already"
                )
            self._listeners[listener] = True
            if self._running:
                self._start(listener)

    def remove_listener(self, listener: ProcessorListener) -> bool:
        """Unregister and close ``listener``; False when it was not registered."""
        with self._lock:
            found = self._listeners.pop(listener, None) is not None
        if found:
            listener.close()
        return found

    def distribute_initial(self, objs: list[Any]) -> None:
        """Buffer ``on_add(obj, True)`` for each of ``objs`` (an initial list) for every listener."""
        with self._lock:
            for listener in self._listeners:
                listener.add_initial(objs)

    def distribute_batch(
        self, notifications: list[Notification], sync_at: list[int], initial: int
    ) -> None:
        """Buffer notifications in order for every listener, one append and wakeup each.

        ``sync_at`` lists the positions of sync notifications, which only syncing listeners
        get; ``initial`` counts the initial-list adds (never sync notifications).
        """
        with self._lock:
            others: list[Notification] | None = None
            for listener, syncing in self._listeners.items():
                if syncing or not sync_at:
                    listener.add_many(notifications, initial)
                    continue
                if others is None:
                    skip = set(sync_at)
                    others = [n for i, n in enumerate(notifications) if i not in skip]
                if others:
                    listener.add_many(others, initial)

    def after_delivered(self, fn: Callable[[], object]) -> None:
        """Call ``fn()`` once every listener has delivered what it was handed so far: on the
        delivery thread of the last to get there, or at once when there is no listener.

        A listener closed before it got there never arrives, and ``fn`` is then not called.
        ``fn`` must not raise (what it raises is logged).
        """
        with self._lock:
            countdown = _Countdown(len(self._listeners) or 1, fn, self._name)
            passed = Notification(PASSED, countdown)
            for listener in self._listeners:
                listener.add(passed)
            nobody = not self._listeners
        if nobody:  # called here, not under the lock
            countdown.arrive()

    def distribute(self, notification: Notification, sync: bool) -> None:
        """Buffer ``notification`` for every listener, or only the syncing ones when ``sync``."""
        with self._lock:
            for listener, syncing in self._listeners.items():
                if syncing or not sync:
                    listener.add(notification)

    def start(self) -> None:
        """Start the delivery threads of the listeners registered so far; returns at once."""
        with self._lock:
            if self._running or self._stopped:
                return
            self._running = True
            for listener in self._listeners:
                self._start(listener)

    def stop(self, timeout: float = LISTENER_JOIN_TIMEOUT) -> list[str]:
        """Close every listener and join the delivery threads; return the names still running."""
        with self._lock:
            self._stopped = True
            self._running = False
            listeners = list(self._listeners)
            self._listeners.clear()
            threads, self._threads = self._threads, []
        for listener in listeners:
            listener.close()
        stuck = _threads.join_all(threads, timeout)
        if stuck:
            log.warning(
                "informer %s: event handlers still running %.1fs after stop: %s",
                self._name,
                timeout,
                ", ".join(stuck),
            )
        return stuck

    def should_resync(self) -> bool:
        """Mark which listeners are due for a resync now; True if any is.

        Due listeners become "syncing" and get their next resync scheduled one period later;
        the others stop receiving sync notifications until they are due again.
        """
        now = self._clock.now()
        due_any = False
        with self._lock:
            for listener in self._listeners:
                due = listener.should_resync(now)
                self._listeners[listener] = due
                if due:
                    due_any = True
                    listener.next_resync = now + listener.resync_period
        return due_any

    def resync_check_period_changed(self, check_period: float) -> None:
        """Recompute every listener's effective resync period for a new check period."""
        with self._lock:
            for listener in self._listeners:
                listener.resync_period = effective_resync_period(
                    listener.requested_resync_period, check_period
                )

    def listeners(self) -> list[ProcessorListener]:
        with self._lock:
            return list(self._listeners)

    def _start(self, listener: ProcessorListener) -> None:
        name = _threads.thread_name("handler", f"{self._name}-{next(self._numbers)}")
        # the threads of removed listeners that exited need no join at stop: without this, an
        # informer that handlers come to and go from for weeks (controllers started and
        # stopped) kept each one's thread, a few KiB apiece
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(listener.start(name))


class _Countdown:
    """Calls ``fn`` when the ``count``-th listener arrives (:meth:`SharedProcessor.after_delivered`)."""

    __slots__ = ("_count", "_fn", "_lock", "_name")

    def __init__(self, count: int, fn: Callable[[], object], name: str) -> None:
        self._count = count
        self._fn = fn
        self._name = name
        self._lock = threading.Lock()

    def arrive(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count:
                return
        try:
            self._fn()
        except Exception:
            log.exception("informer %s: what was to follow the delivery failed", self._name)


def resync_periods(requested: float, check_period: float, started: bool) -> tuple[float, float]:
    """client-go's ``AddEventHandlerWithResyncPeriod`` rules: ``(period, check_period)`` for a
    handler asking for ``requested`` seconds from an informer checking every ``check_period``.

    A period under :data:`MINIMUM_RESYNC_PERIOD` is raised to it. One shorter than the check
    period lowers the check period before the informer ``started``, and is raised to it after.
    0 (never) changes nothing.
    """
    period = requested
    if period <= 0:
        return period, check_period
    if period < MINIMUM_RESYNC_PERIOD:
        log.warning("resync period %.3fs is too small; changing it to %.1fs",
                    period, MINIMUM_RESYNC_PERIOD)
        period = MINIMUM_RESYNC_PERIOD
    if period >= check_period:
        return period, check_period
    if not started:
        return period, period
    log.warning(
        "resync period %.1fs is smaller than the started informer's check period %.1fs; "
        "changing it to %.1fs", period, check_period, check_period)
    return check_period, check_period


def effective_resync_period(desired: float, check_period: float) -> float:
    """client-go's ``determineResyncPeriod``: what a handler asking for ``desired`` gets."""
    if desired == 0:
        return 0.0
    if check_period == 0:
        log.warning(
            "resync period %.1fs ignored: the informer was created without resyncs", desired
        )
        return 0.0
    if desired < check_period:
        log.warning(
            "resync period %.1fs is smaller than the informer's check period; using %.1fs",
            desired,
            check_period,
        )
        return check_period
    return desired


def delivery_closed(handler: Any) -> None:
    """Call ``handler.delivery_closed()`` when it has one (see :meth:`ProcessorListener.close`);
    what it raises is logged."""
    hook = getattr(handler, "delivery_closed", None)
    if hook is None:
        return
    try:
        hook()
    except Exception:
        log.exception("delivery_closed of handler %r failed", handler)
