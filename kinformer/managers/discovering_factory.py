"""The discovering informer factory: one informer per served resource type, as types come and go.

:class:`DiscoveringDynamicSharedInformerFactory` is kcp's ddsif
(``pkg/informer.DiscoveringDynamicSharedInformerFactory``). Its worker thread (``kinformer-ddsif``)
reads discovery through a :class:`~kinformer.CachedDiscoveryClient` (``client/discovery.py``) and
keeps one :class:`~kinformer.SharedIndexInformer` per served resource type that its filter
accepts, each under its own child :class:`~kinformer.Context`, in the plain factory's
:class:`~kinformer.factory.InformerRegistry` (``factory.py``). It learns of
CustomResourceDefinition changes within about a second by watching CRDs where the server serves
them (``managers/crd.py``), and polls discovery every ``poll_interval`` seconds in any case.
Subscribers hear when the set of informers changed; ``informer_source()`` offers that as an
:class:`~kinformer.InformerSource` (``managers/source.py``), which is how a
:class:`~kinformer.ControllerManager` follows the factory without either importing the other.
:class:`GVREventHandler` hears of object changes of every type it runs.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from kinformer import _checks, _threads, cluster_handlers, context, errors, factory, handlers, informer, meta
from kinformer.cache import store
from kinformer.client import discovery as client_discovery
from kinformer.client import listwatch, rest
from kinformer.clock import REAL_CLOCK, Clock
from kinformer.gvr import APIResourceMeta, GroupVersionResource
from kinformer.managers import crd, source

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a handler's errors: none may quote a token

DEFAULT_POLL_INTERVAL = 30.0  # fleet's discovery period; CRD changes are seen at once where watched
MIN_UPDATE_INTERVAL = 1.0  # kcp: at least a second between passes, so a burst of CRD events is one pass
SETTLE_PASSES = 10  # extra passes, a second apart, while discovery lags behind the CRDs we watch
JOIN_TIMEOUT = 30.0  # an informer joins its own threads with bounded waits; this only bounds a bug


@runtime_checkable
class GVREventHandler(Protocol):
    """kcp's ``GVREventHandler``: hears of changes to objects of every type a ddsif runs."""

    def on_add(self, gvr: GroupVersionResource, obj: Any) -> None: ...

    def on_update(self, gvr: GroupVersionResource, old: Any, new: Any) -> None: ...

    def on_delete(self, gvr: GroupVersionResource, obj: Any) -> None: ...


class GVREventHandlerFuncs(handlers.FuncsHandler):
    """A :class:`GVREventHandler` made of optional functions; a missing one ignores the event."""

    __slots__ = ()

    def __init__(
        self,
        add_func: Callable[[GroupVersionResource, Any], object] | None = None,
        update_func: Callable[[GroupVersionResource, Any, Any], object] | None = None,
        delete_func: Callable[[GroupVersionResource, Any], object] | None = None,
    ) -> None:
        super().__init__(add_func, update_func, delete_func)

    def on_add(self, gvr: GroupVersionResource, obj: Any) -> None:
        self._call(self.add_func, gvr, obj)

    def on_update(self, gvr: GroupVersionResource, old: Any, new: Any) -> None:
        self._call(self.update_func, gvr, old, new)

    def on_delete(self, gvr: GroupVersionResource, obj: Any) -> None:
        self._call(self.delete_func, gvr, obj)


class _FanOut:
    """The one handler registered on each informer: passes events to every GVR handler."""

    __slots__ = ("_factory", "_gvr")

    def __init__(self, factory: DiscoveringDynamicSharedInformerFactory, gvr: GroupVersionResource) -> None:
        self._factory = factory
        self._gvr = gvr

    def _each(self, call: Callable[[GVREventHandler], object]) -> None:
        for handler in self._factory._handlers:  # read at event time: a late handler sees only new events
            try:
                call(handler)
            except Exception:
                log.exception("GVR handler %r failed on %s", handler, self._gvr.group_resource)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._each(lambda h: h.on_add(self._gvr, obj))

    def on_update(self, old: Any, new: Any) -> None:
        self._each(lambda h: h.on_update(self._gvr, old, new))

    def on_delete(self, obj: Any) -> None:
        self._each(lambda h: h.on_delete(self._gvr, obj))


class DiscoveringDynamicSharedInformerFactory:
    """kcp's ddsif: one informer per served resource type the filter accepts, as types come and go.

    Lifecycle: ``start(ctx)`` does not block: it runs :meth:`run` on a thread named
    ``kinformer-ddsif``. ``run(ctx)`` blocks until ``ctx`` is cancelled (or :meth:`stop`), then
    stops every informer and returns after joining their threads; it runs once (a second start
    raises :class:`~kinformer.AlreadyStartedError`). :meth:`shutdown` (kcp's :meth:`stop`, the
    same call) cancels and joins.

    A pass reads discovery (:class:`~kinformer.CachedDiscoveryClient`), starts an informer, under its own
    child context, for each accepted type that has none, and stops (cancel, then join) and
    forgets the informer of each type no longer served. A type whose group version failed
    discovery keeps its informer. When anything changed, after the stopped informers were
    joined, every subscriber gets a notification in its capacity-1 queue; a notification already
    pending absorbs the new one. Passes run after a CRD change (where the server serves
    ``apiextensions.k8s.io/v1``, a CRD informer watches) and every ``poll_interval`` seconds, at
    least :data:`MIN_UPDATE_INTERVAL` apart so a burst of CRD events makes one pass. A pass whose
    discovery failed changes nothing and is tried again after :data:`MIN_UPDATE_INTERVAL`,
    twice as long after each further failure, up to ``poll_interval``.

    ``filter_func(gvr)`` chooses the types (default: all). Unlike kcp, whose filter looks at
    objects, it filters resource types. Every informer uses ``resync`` and ``indexers`` plus the
    namespace index (which cannot be overridden), and ``profile`` (``"modern"`` or
    ``"classic"``). GVR handlers (:meth:`add_event_handler`) run on
    the informers' handler threads; all methods are thread-safe. ``resync`` (0: never) and
    ``poll_interval`` are finite seconds, else :class:`~kinformer.ConfigurationError`.

    ``cluster`` names a kcp logical cluster: discovery, the CRD watch and every informer go to
    ``/clusters/<cluster>``. With ``cluster="*"`` discovery lists what any logical cluster serves
    (the built-in types and each cluster's CRDs), one informer per type covers every logical
    cluster, and each is cluster-aware (see :class:`~kinformer.DynamicSharedInformerFactory`):
    the informer source of kcp's "cluster-aware variant", which a
    :class:`~kinformer.ControllerManager` follows unchanged.

    Example, with ``api_client`` an ``ApiClient``, ``ctx`` a :class:`~kinformer.Context` and
    ``controllers`` a dict of :class:`~kinformer.ManagedController` by name::

        ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda gvr: gvr.group == "example.com")
        ddsif.start(ctx)  # a thread of its own, until ctx is cancelled
        manager = ControllerManager("demo", ddsif.informer_source(), controllers)
        manager.run(ctx)  # blocks until ctx is cancelled
    """

    def __init__(
        self,
        client: Any,
        filter_func: Callable[[GroupVersionResource], bool] | None = None,
        resync: float = 0,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        *,
        clock: Clock = REAL_CLOCK,
        indexers: store.Indexers | None = None,
        watch_crds: bool = True,
        discovery: client_discovery.CachedDiscoveryClient | None = None,
        profile: str = "modern",
        cluster: str | None = None,
    ) -> None:
        self._profile = informer.check_profile(profile)
        self._client = client
        self._cluster = rest.client_cluster(client, cluster)  # the host's, when its path names one
        self._filter = filter_func or (lambda gvr: True)
        self._resync = _checks.seconds("resync", resync)
        self._poll_interval = _checks.seconds("poll_interval", poll_interval, positive=True)
        self._clock = clock
        self._indexers = {k: v for k, v in (indexers or {}).items() if k != store.NAMESPACE_INDEX}
        self._indexers[store.NAMESPACE_INDEX] = store.meta_namespace_index_func
        self._watch_crds = watch_crds
        self._discovery = discovery or client_discovery.CachedDiscoveryClient(
            client, clock=clock, cluster=self._cluster)
        # guards _served, _subscribers, _ctx, _started, _finished, and makes each change to
        # _informers one step with them: a running informer's type is in _served, none starts
        # once _finished
        self._lock = threading.Lock()
        self._informers = factory.InformerRegistry(
            self._new_informer, "ddsif-informer",
            functools.partial(factory.gvr_subject, cluster=self._cluster))
        self._served: dict[GroupVersionResource, APIResourceMeta] = {}
        self._subscribers: dict[str, queue.Queue[None]] = {}
        self._handlers: tuple[GVREventHandler, ...] = ()  # copy-on-write; read without the lock
        self._ctx: context.Context | None = None  # the worker's own context, set once by start/run
        self._started = False
        self._finished = False
        self._done = threading.Event()  # set once the worker has stopped every informer
        self._wake = threading.Event()  # set by a CRD change or by cancellation
        self._ready = threading.Event()  # set after the first successful pass
        self._crd_entry: factory.InformerEntry | None = None
        self._crd_names: set[str] = set()  # "<plural>.<group>" of every CRD seen; the worker's only

    @property
    def cluster(self) -> str | None:
        """The kcp logical cluster every informer lists and watches: its name, ``"*"`` for
        every one, None for an ordinary cluster (given, or named by the client's host)."""
        return self._cluster

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, ctx: context.StopSignal) -> None:
        """Run :meth:`run` on a ``kinformer-ddsif`` thread until ``ctx`` fires or :meth:`stop`."""
        own = self._claim(ctx)
        _threads.spawn(self._run, _threads.thread_name("ddsif"), own)

    def run(self, ctx: context.StopSignal) -> None:
        """Keep informers in step with discovery until ``ctx`` fires or :meth:`stop`; blocks; runs once."""
        self._run(self._claim(ctx))

    def stop(self, timeout: float = JOIN_TIMEOUT) -> None:
        """Cancel the worker and wait until it and every informer thread ended; a no-op before start."""
        timeout = _checks.seconds("timeout", timeout)
        own = self._ctx
        if own is None:
            return
        own.cancel()
        if not self._done.wait(timeout):
            log.warning("ddsif still stopping after %.1fs", timeout)

    def shutdown(self, timeout: float = JOIN_TIMEOUT) -> None:
        """:meth:`stop` by the name every factory has: cancel, then join every thread."""
        self.stop(timeout)

    def __enter__(self) -> DiscoveringDynamicSharedInformerFactory:
        self.start(context.Context("ddsif"))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def ready(self) -> bool:
        """True once the first discovery pass succeeded (its informers exist, maybe unsynced)."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until :meth:`ready` (True) or ``timeout`` real seconds passed (False)."""
        return self._ready.wait(_checks.timeout("timeout", timeout))

    def _claim(self, stop: context.StopSignal) -> context.Context:
        """Mark the factory started; return its own context, cancelled with ``stop`` or by stop()."""
        if isinstance(stop, context.Context):
            own = stop.child("ddsif")
        else:  # a bridged context: cancelling it also ends the bridge
            own, _cancel = context.context_for_channel(stop)
        with self._lock:
            started, self._started = self._started, True
            if not started:
                self._ctx = own
        if started:
            own.cancel()
            raise errors.AlreadyStartedError("DiscoveringDynamicSharedInformerFactory runs once")
        return own

    def _run(self, ctx: context.Context) -> None:
        wake_handle = ctx.on_cancel(self._wake.set)
        log.info("ddsif starting poll_interval=%.1fs watch_crds=%s", self._poll_interval, self._watch_crds)
        try:
            self._loop(ctx)
        finally:
            wake_handle.remove()
            self._shutdown()
            ctx.cancel()  # ends an Event bridge, and for_resource starts nothing more
            self._done.set()
            log.info("ddsif stopped")

    def _loop(self, ctx: context.Context) -> None:
        settle = 0
        unsynced = 0  # passes in a row with a CRD informer that has not synced
        failures = 0  # passes in a row whose discovery failed
        while not ctx.cancelled():
            self._wake.clear()
            crds_watched = self._crd_watch_synced()  # before the pass: see _crd_watch_synced
            try:
                result = self._update_informers(ctx)
            except Exception:
                log.exception("ddsif pass failed; trying again at the next one")
                result = None
            failures = failures + 1 if result is None else 0
            if result is not None:
                self._ready.set()
                self._ensure_crd_watch(ctx, result)
                settle = settle - 1 if settle > 0 and self._lagging(result) else 0
            # a second apart while the CRD informer catches up, for SETTLE_PASSES passes: one
            # whose list keeps failing (CRDs forbidden) would have discovery read whole every
            # second for good; after that, every poll interval, as without a CRD watch
            unsynced = unsynced + 1 if self._crd_entry is not None and not crds_watched else 0
            catching_up = 0 < unsynced <= SETTLE_PASSES
            if unsynced == SETTLE_PASSES + 1:
                self._crd_watch_lags()
            if failures:  # a server starting up or briefly away: again soon, then less often
                interval = min(MIN_UPDATE_INTERVAL * 2 ** min(failures - 1, 16), self._poll_interval)
            else:
                interval = MIN_UPDATE_INTERVAL if settle or catching_up else self._poll_interval
            last = self._clock.now()
            woken = self._clock.wait(self._wake, interval)
            if ctx.cancelled():
                return
            if woken:  # a CRD changed: wait out the minimum interval, absorbing a burst
                remaining = last + MIN_UPDATE_INTERVAL - self._clock.now()
                if remaining > 0 and self._clock.wait(ctx.done, remaining):
                    return
                settle = SETTLE_PASSES
            if woken or settle or not crds_watched:
                self._discovery.invalidate()  # the cache is trusted only while CRDs are watched

    def _crd_watch_lags(self) -> None:
        """Said once per run of passes: the CRD informer has not synced; passes go back to the
        poll interval."""
        crds = self._crd_entry
        error = crds.generic.informer().last_error() if crds is not None else None
        log.warning("ddsif: the CRD informer has not synced after %d passes (%s); discovery is "
                    "read every %.0fs until it does", SETTLE_PASSES + 1, error or "no error yet",
                    self._poll_interval)

    def _crd_watch_synced(self) -> bool:
        """Whether the CRD informer exists and has synced.

        A CRD deleted after a pass but before the CRD informer's first list sends that informer
        no event. So until a pass has begun with the CRD informer synced, passes come a second
        apart instead of a poll interval apart.
        """
        crds = self._crd_entry
        return crds is not None and crds.generic.informer().has_synced()

    def _shutdown(self) -> None:
        with self._lock:
            self._finished = True
            entries = self._informers.detach()
            self._served = {}
            crds, self._crd_entry = self._crd_entry, None
        had_informers = bool(entries)
        if crds is not None:
            entries.append(crds)
        factory.stop_all(entries, JOIN_TIMEOUT)
        if had_informers:
            self._notify()  # subscribers see that nothing runs any more

    # -- the pass -------------------------------------------------------------------------------

    def _update_informers(self, ctx: context.Context) -> client_discovery.DiscoveryResult | None:
        """One pass: start the informers of newly served types, stop those of types gone.

        Returns the discovery result, or None when discovery failed (nothing changes then).
        """
        try:
            result = self._discovery.server_resources()
        except Exception as exc:
            log.warning("discovery failed, keeping the current informers: %s", exc)
            return None
        latest = {gvr: found for gvr, found in result.resources.items() if self._accepts(gvr)}
        with self._lock:
            for gvr, known in self._served.items():  # a failed group version keeps its informers
                if gvr.group_version in result.failed:
                    latest.setdefault(gvr, known)
            self._served = latest
            if self._finished or ctx.cancelled():
                return result
            running = self._informers.started()
            to_add = [g for g in latest if g not in running]
            to_remove = [g for g in self._informers.resources() if g not in latest]
            if not to_add and not to_remove:
                return result
            self._informers.start(ctx, to_add)
            removed = self._informers.detach(to_remove)
        factory.stop_all(removed, JOIN_TIMEOUT)  # stopped and joined before subscribers hear
        log.info("ddsif informers started=%s stopped=%s", _names(to_add), _names(to_remove))
        self._notify()
        return result

    def _accepts(self, gvr: GroupVersionResource) -> bool:
        try:
            return bool(self._filter(gvr))
        except Exception:
            log.exception("ddsif filter failed on %s; leaving it out", gvr.group_resource)
            return False

    def _new_informer(self, gvr: GroupVersionResource) -> factory.GenericInformer:
        """A fresh informer for ``gvr`` with the GVR handlers' fan-out; run under the registry's lock."""
        shared = informer.SharedIndexInformer(
            listwatch.ListWatch.for_resource(self._client, gvr, cluster=self._cluster),
            {},
            self._resync,
            self._indexers,
            name=f"ddsif-{factory.gvr_subject(gvr, self._cluster)}",  # apart from other informers of the type
            profile=self._profile,
        )
        shared.add_event_handler(_FanOut(self, gvr))
        return factory.GenericInformer(shared, gvr)

    def _notify(self) -> None:
        with self._lock:
            queues = list(self._subscribers.values())
        for q in queues:
            with contextlib.suppress(queue.Full):  # one pending notification stands for any number
                q.put_nowait(None)

    # -- CRD watch ------------------------------------------------------------------------------

    def _ensure_crd_watch(self, ctx: context.Context, result: client_discovery.DiscoveryResult) -> None:
        if not self._watch_crds or self._crd_entry is not None or crd.CRD_GVR not in result.resources:
            return
        shared = informer.SharedIndexInformer(
            listwatch.ListWatch.for_resource(self._client, crd.CRD_GVR, cluster=self._cluster),
            name="ddsif-crds",
        )
        shared.add_event_handler(crd.CRDChangeHandler(self._crd_changed))
        entry = factory.InformerEntry(factory.GenericInformer(shared, crd.CRD_GVR))
        with self._lock:
            if self._finished:
                return
            entry.start(ctx, "ddsif", "crds")
            self._crd_entry = entry
        log.info("ddsif watching CustomResourceDefinitions")

    def _crd_changed(self, obj: Any) -> None:
        name = meta.name(obj)
        if name:
            self._crd_names.add(name)
        self._discovery.invalidate()
        self._wake.set()

    def _lagging(self, result: client_discovery.DiscoveryResult) -> bool:
        """Whether discovery still disagrees with the watched CRDs (a real server lags ~1 s)."""
        crds = self._crd_entry
        if crds is None:
            return False
        expected = crd.served_resources(crds.generic.informer().get_indexer().list())
        for gvr in result.resources:
            if gvr.group_resource in self._crd_names and gvr not in expected:
                return True  # deleted or no longer served, yet still discovered
        return not expected.issubset(result.resources)

    # -- the kcp surface ------------------------------------------------------------------------

    def for_resource(self, gvr: GroupVersionResource) -> factory.GenericInformer:
        """The informer for ``gvr``, created on first use.

        While the factory runs and ``gvr`` is served and accepted, a new informer starts at
        once; otherwise it waits, and a pass forgets it if ``gvr`` is not served then.
        """
        with self._lock:
            generic = self._informers.for_resource(gvr)
            ctx = self._ctx
            if ctx is not None and not self._finished and not ctx.cancelled() and gvr in self._served:
                self._informers.start(ctx, [gvr])  # a no-op when it runs already
            return generic

    def informers(
        self,
    ) -> tuple[dict[GroupVersionResource, informer.SharedIndexInformer], list[GroupVersionResource]]:
        """``(synced, not_synced)``: the running informers split by ``has_synced()``."""
        running = self._informers.started()
        synced: dict[GroupVersionResource, informer.SharedIndexInformer] = {}
        not_synced: list[GroupVersionResource] = []
        for gvr, inf in running.items():
            if inf.has_synced():
                synced[gvr] = inf
            else:
                not_synced.append(gvr)
        return synced, not_synced

    def served_resources(self) -> dict[GroupVersionResource, APIResourceMeta]:
        """The accepted resource types of the last pass, with kind and scope."""
        with self._lock:
            return dict(self._served)

    def subscribe(self, id: str) -> queue.Queue[None]:
        """A capacity-1 queue that gets an item after every change to the running informers.

        Notifications coalesce: while one is pending, more are dropped. Subscribing an id again
        replaces its queue (with a warning); the old queue gets nothing more.
        """
        q: queue.Queue[None] = queue.Queue(maxsize=1)
        with self._lock:
            replaced = id in self._subscribers
            self._subscribers[id] = q
        if replaced:
            log.warning("ddsif subscriber %r subscribed again; its old queue gets no more notifications", id)
        return q

    def unsubscribe(self, id: str, subscription: queue.Queue[None] | None = None) -> None:
        """Stop notifying ``id``; a no-op for an unknown id.

        Given ``subscription``, the queue :meth:`subscribe` returned, only while it is still
        ``id``'s: a subscriber stopping late does not end the subscription of one that
        subscribed again under its id meanwhile (a manager restarted while its previous run
        still stops), which would then never hear of another change.
        """
        with self._lock:
            if subscription is None or self._subscribers.get(id) is subscription:
                self._subscribers.pop(id, None)

    def informer_source(self) -> source.InformerSource:
        """This factory as a ControllerManager's source: ``subscribe``, ``informers``, ``unsubscribe``."""
        return source.InformerSource(self.subscribe, self.informers, self.unsubscribe)

    def add_event_handler(self, handler: GVREventHandler) -> None:
        """Hear of every object change of every type, as ``(gvr, obj...)``.

        The handler sees only events after this call (no replay), on the informers' handler
        threads: calls for different types may run at once. Each object names its logical
        cluster in its ``kcp.io/cluster`` annotation (a tombstone in its key). A
        :class:`~kinformer.ClusterEventHandler`, whose first argument is a cluster, raises
        TypeError here: it would be told the type as its cluster; add it to
        ``for_resource(gvr).informer()`` instead.
        """
        if isinstance(handler, cluster_handlers.ClusterEventHandler):
            raise TypeError(
                f"{handler!r} is a ClusterEventHandler (cluster, obj), not a GVREventHandler "
                "(gvr, obj); add it to for_resource(gvr).informer(), which tells it each cluster")
        with self._lock:
            self._handlers = (*self._handlers, handler)

    def __repr__(self) -> str:
        return f"<DiscoveringDynamicSharedInformerFactory informers={len(self._informers)}>"


def _names(gvrs: Iterable[GroupVersionResource]) -> str:
    return ",".join(sorted(factory.gvr_subject(g) for g in gvrs)) or "-"
