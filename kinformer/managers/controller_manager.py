"""ControllerManager: starts and stops controllers as the resources they need come and go.

kcp's syncer ``controllermanager`` (``pkg/syncer/controllermanager``). The manager follows an
:class:`~kinformer.InformerSource` (``managers/source.py``; in practice the one a
:class:`~kinformer.DiscoveringDynamicSharedInformerFactory` offers, though this module imports
neither the factory nor anything that runs informers), which says which resources have an
informer and whether it synced, and notifies subscribers through a capacity-1 queue whenever
that set changes. The manager turns each notification into one coalesced ``"resync"`` key on a
:class:`~kinformer.RateLimitingQueue` (``workqueue/``) and reconciles it in the controllers'
worker loop (``controllers/controller.py``'s ``process_queue``): a
:class:`ManagedController` runs, on its own thread under its own child
:class:`~kinformer.Context`, exactly while every resource it requires has a synced informer;
what it runs is usually a :class:`~kinformer.Controller` (``controllers/controller.py``). Unlike kcp
it reconciles once at start, and it joins the controllers it stops.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kinformer import _checks, _threads, context, errors
from kinformer import clock as clock_module
from kinformer.controllers import controller as _controller
from kinformer.gvr import GroupVersionResource
from kinformer.managers import source
from kinformer.workqueue import RateLimitingQueue

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a controller's errors: none may quote a token

CONTROLLER_NAME_PREFIX = "syncer-controller-manager-"
"""What a manager's ``name`` starts with, before its suffix (kcp's syncer prefix); its work
queue and its notification thread are named after it."""
RESYNC_KEY = "resync"  # the one key on the manager's queue: notifications coalesce into it
RESYNC_INTERVAL = 1.0  # seconds between looks while a required informer is served but not synced
STOP_TIMEOUT = 10.0  # seconds to wait for a stopped controller's thread before warning about it


StartFunc = Callable[[context.Context], None]


@dataclass(frozen=True, slots=True)
class ManagedController:
    """A controller the manager runs while every resource in ``required_gvrs`` is synced.

    ``create(ctx)`` builds a fresh instance and returns its ``start_fn``; ``start_fn(ctx)``
    runs it, blocking until ``ctx`` is cancelled. Both receive the controller's own child
    context, cancelled when the manager stops it.
    """

    required_gvrs: Collection[GroupVersionResource]
    create: Callable[[context.Context], StartFunc]

    def __post_init__(self) -> None:
        object.__setattr__(self, "required_gvrs", frozenset(self.required_gvrs))


@dataclass(frozen=True, slots=True)
class _Running:
    ctx: context.Context
    thread: threading.Thread
    informers: Mapping[GroupVersionResource, Any]  # the synced informers it was started over
    done: threading.Event  # set once start_fn returned


class ControllerManager:
    """Runs each managed controller exactly while all the resources it requires are synced.

    ``run(ctx)`` blocks until ``ctx`` (a Context or threading.Event) is cancelled; ``start(ctx)``,
    kcp's name for it, is the same and blocks too (the one ``start`` of kinformer that does). It
    subscribes to ``informer_source`` under :attr:`name` (thread
    ``kinformer-notifications-<name>`` forwards notifications), reconciles at once, then on
    every notification: a controller whose required resources all have synced informers is
    created and started on thread ``kinformer-controller-<controller>``; while one of them is
    served but not synced the manager looks again every ``resync_interval`` seconds (1 s, as
    kcp); when one disappears or falls out of sync the controller's context is cancelled and
    its thread joined, and a fresh instance is created when they return. An instance still
    running ``stop_timeout`` seconds after it was stopped is named in a warning, and no fresh
    instance of it starts until that one has returned. A failed reconcile or
    ``create`` is logged and retried with backoff. On cancel every controller is stopped and
    joined before ``run`` returns, and then its own subscription ended (handing
    ``unsubscribe`` its queue when it takes one: a manager of the same name started meanwhile
    keeps hearing). ``running_controllers`` is thread-safe. A manager runs once,
    by either name (:class:`~kinformer.AlreadyStartedError`). ``stop_timeout`` and
    ``resync_interval`` are finite seconds, else :class:`~kinformer.ConfigurationError`.

    Example, with ``ddsif`` a :class:`~kinformer.DiscoveringDynamicSharedInformerFactory`,
    ``new_widget_controller(ctx)`` returning the function that runs the controller, and ``ctx``
    a :class:`~kinformer.Context`::

        widgets = GroupVersionResource("example.com", "v1", "widgets")
        manager = ControllerManager("cluster-1", ddsif.informer_source(),
                                    {"widgets": ManagedController({widgets}, new_widget_controller)})
        manager.run(ctx)  # blocks until ctx is cancelled
    """

    def __init__(
        self,
        suffix: str,
        informer_source: source.InformerSource,
        controllers: Mapping[str, ManagedController],
        clock: clock_module.Clock = clock_module.REAL_CLOCK,
        stop_timeout: float = STOP_TIMEOUT,
        resync_interval: float = RESYNC_INTERVAL,
    ) -> None:
        self.name = CONTROLLER_NAME_PREFIX + suffix
        self._source = informer_source
        self._controllers = dict(controllers)
        self._stop_timeout = _checks.seconds("stop_timeout", stop_timeout)
        self._resync_interval = _checks.seconds("resync_interval", resync_interval, positive=True)
        self._queue: RateLimitingQueue[str] = RateLimitingQueue(clock=clock, name=self.name)
        # guards _started, _running, _lingering; the last two change only on start's thread
        self._lock = threading.Lock()
        self._started = False
        self._running: dict[str, _Running] = {}
        # stopped instances still running past stop_timeout: none of the name starts until it returns
        self._lingering: dict[str, _Running] = {}
        self._held_back: set[str] = set()  # names of _lingering already said to wait for it

    def running_controllers(self) -> set[str]:
        """Names of the controllers started and not stopped since.

        A controller whose ``start_fn`` returned or raised on its own (logged; a ``SystemExit``
        too, which would otherwise end its thread without a word) stays listed until the
        manager stops it, as in kcp; it is not restarted while its resources stay synced.
        """
        with self._lock:
            return set(self._running)

    def start(self, ctx: context.StopSignal) -> None:
        """:meth:`run`, under kcp's name: blocks until ``ctx`` is cancelled."""
        self.run(ctx)

    def run(self, ctx: context.StopSignal) -> None:
        """Manage the controllers until ``ctx`` is cancelled; return once all of them were joined."""
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"controller manager {self.name} was already started")
            self._started = True
        ctx = context.as_context(ctx)
        subscription = self._source.subscribe(self.name)
        forwarder = _threads.spawn(
            self._forward, _threads.thread_name("notifications", self.name), ctx, subscription
        )
        shut_down = ctx.on_cancel(self._queue.shut_down)
        log.info("controller manager started name=%s controllers=%d", self.name, len(self._controllers))
        self._queue.add(RESYNC_KEY)  # a notification sent before we subscribed must not be lost
        try:
            self._work(ctx)
        finally:
            shut_down.remove()
            self._queue.shut_down()
            _interrupt(subscription)
            _threads.join_all([forwarder], self._stop_timeout)
            with self._lock:
                running = list(self._running.items())
                lingering = list(self._lingering.values())  # each was named in a warning already
                self._lingering = {}
                self._held_back.clear()
            self._stop(running, [r.thread for r in lingering])
            try:
                source.end_subscription(self._source, self.name, subscription)
            except Exception:
                log.exception("controller manager %s: unsubscribe failed", self.name)
            log.info("controller manager stopped name=%s", self.name)

    def _forward(self, ctx: context.Context, subscription: queue.Queue[Any]) -> None:
        """Turn every notification into the one coalesced key, until ``ctx`` is cancelled."""
        while True:
            subscription.get()
            if ctx.cancelled():
                return
            self._queue.add(RESYNC_KEY)

    def _work(self, ctx: context.Context) -> None:
        def process(key: str) -> None:
            try:
                self._reconcile(ctx)
            except Exception:
                log.exception("controller manager %s: reconcile failed; will retry", self.name)
                self._queue.add_rate_limited(key)

        _controller.process_queue(self._queue, ctx, process)

    def _reconcile(self, ctx: context.Context) -> None:
        synced, not_synced_list = self._source.informers()
        not_synced = set(not_synced_list)
        wanted: set[str] = set()
        poll = False
        for name, controller in self._controllers.items():
            missing = [gvr for gvr in controller.required_gvrs if gvr not in synced]
            if not missing:
                wanted.add(name)
            elif any(gvr in not_synced for gvr in missing):
                poll = True  # served but not synced yet: look again soon
        with self._lock:
            # a controller started over an informer that is no longer the one served (its type
            # left and came back between two looks, the two notifications coalesced) would wait
            # on a stopped informer for good: it is stopped and started again, over the new one
            to_stop = [(name, r) for name, r in self._running.items()
                       if name not in wanted or any(synced[gvr] is not informer
                                                    for gvr, informer in r.informers.items())]
            stopping = {name for name, _ in to_stop}
            to_start = sorted(wanted - (set(self._running) - stopping))
        self._stop(to_stop)
        failed = False
        for name in to_start:
            if self._still_lingering(name):
                continue  # started once its previous instance returns: that instance wakes us
            controller = self._controllers[name]
            failed |= not self._start_controller(
                ctx, name, controller, {gvr: synced[gvr] for gvr in controller.required_gvrs})
        if poll:
            self._queue.add_after(RESYNC_KEY, self._resync_interval)
        if failed:
            self._queue.add_rate_limited(RESYNC_KEY)
        else:
            self._queue.forget(RESYNC_KEY)

    def _start_controller(self, ctx: context.Context, name: str, controller: ManagedController,
                          informers: Mapping[GroupVersionResource, Any]) -> bool:
        child = ctx.child(f"{self.name}/{name}")
        try:
            start_fn = controller.create(child)
        except Exception:
            log.exception("controller manager %s: creating controller %s failed; will retry", self.name, name)
            child.cancel()
            return False
        done = threading.Event()
        with self._lock:  # registered before start_fn can run, so running_controllers() never lags it
            thread = _threads.spawn(
                self._run_controller, _threads.thread_name("controller", name), name, start_fn, child, done
            )
            self._running[name] = _Running(child, thread, informers, done)
        log.info("controller started name=%s manager=%s", name, self.name)
        return True

    def _run_controller(
        self, name: str, start_fn: StartFunc, ctx: context.Context, done: threading.Event
    ) -> None:
        try:
            start_fn(ctx)
        except KeyboardInterrupt:
            raise
        except BaseException:  # a SystemExit too: on this thread it would end it without a word
            log.exception("controller %s crashed", name)
        else:
            if not ctx.cancelled():
                log.warning("controller %s returned before it was stopped", name)
        finally:
            done.set()
            with self._lock:
                lingering = self._lingering.get(name)
            if lingering is not None and lingering.done is done:
                log.info("controller %s returned at last, after it was stopped", name)
                self._queue.add(RESYNC_KEY)  # a fresh instance may have waited for this one

    def _still_lingering(self, name: str) -> bool:
        """Whether a stopped instance of ``name`` still runs, which holds back a fresh one."""
        with self._lock:
            lingering = self._lingering.get(name)
            if lingering is None:
                return False
            if lingering.done.is_set():
                del self._lingering[name]
                self._held_back.discard(name)
                return False
            said = name in self._held_back
            self._held_back.add(name)
        if not said:
            log.warning("controller %s waits for its previous instance to return before it starts "
                        "again (thread %s)", name, lingering.thread.name)
        return True

    def _stop(
        self, controllers: list[tuple[str, _Running]], also_join: Sequence[threading.Thread] = ()
    ) -> None:
        """Cancel every one of ``controllers``, then join each, warning about any still running;
        join ``also_join`` (stopped before) within the same bound, quietly."""
        for _name, running in controllers:
            running.ctx.cancel()
        deadline = time.monotonic() + self._stop_timeout  # one bound for all: they stop in parallel
        for name, running in controllers:
            running.thread.join(max(0.0, deadline - time.monotonic()))
            if running.thread.is_alive():
                log.warning(
                    "controller %s still running %.1fs after it was stopped (thread %s)",
                    name,
                    self._stop_timeout,
                    running.thread.name,
                )
            with self._lock:
                if self._running.get(name) is running:
                    del self._running[name]
                if not running.done.is_set():
                    self._lingering[name] = running
            log.info("controller stopped name=%s manager=%s", name, self.name)
        for thread in also_join:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __repr__(self) -> str:
        return f"<ControllerManager {self.name} running={sorted(self.running_controllers())}>"


def _interrupt(subscription: queue.Queue[Any]) -> None:
    """Wake a reader blocked on ``subscription`` even if it is full (the notification is moot)."""
    while True:
        try:
            subscription.put_nowait(None)
            return
        except queue.Full:
            with contextlib.suppress(queue.Empty):
                subscription.get_nowait()
