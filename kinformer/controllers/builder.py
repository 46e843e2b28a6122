"""ControllerBuilder: a controller declared by what it is for, owns and watches.

controller-runtime's ``builder`` over kinformer's sources, with multicluster-runtime's requests:
``ControllerBuilder(name, source).for_resource(gvr).owns(child_gvr).complete(reconciler)`` makes
a :class:`BuiltController` whose event handlers, on the source's shared informers, turn each
event that passes the predicates (``predicates.py``) into :class:`~kinformer.Request`\\ s
(``request.py``) that name the object's cluster, queue their keys on a
:class:`~kinformer.PriorityQueue` (``workqueue/priority.py``), and whose workers are the
:class:`~kinformer.Controller` loop of ``controller.py``. Before each reconcile the
staleness check of ``staleness.py`` runs. The source is a
:class:`~kinformer.DynamicSharedInformerFactory` (any ``cluster=``), a
:class:`~kinformer.DiscoveringDynamicSharedInformerFactory` or a
:class:`~kinformer.MultiClusterInformerFactory`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kinformer import _checks, _threads, context, errors, factory, handlers, meta
from kinformer.cache import cluster as _cluster
from kinformer.clusters.factory import MultiClusterInformerFactory
from kinformer.clusters.informer import ClusterHandlerRegistration
from kinformer.controllers import controller as _controller
from kinformer.controllers import lifecycle, staleness
from kinformer.controllers.predicates import Predicate
from kinformer.controllers.request import Request
from kinformer.gvr import APIResourceMeta, GroupVersionResource
from kinformer.metrics import provider as metrics_provider
from kinformer.workqueue.priority import PriorityQueue

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a reconciler's errors: none may quote a token


@runtime_checkable
class DiscoveringSource(Protocol):
    """A factory keeping one informer per resource the server serves, found by discovery.

    What the builder and :class:`~kinformer.CachedClient` need of a
    :class:`~kinformer.DiscoveringDynamicSharedInformerFactory`, which lives in ``managers/``, a
    layer above this one: ``start`` returns at once, ``for_resource`` gives the shared informer
    of a resource, ``served_resources`` the kinds discovery found.
    """

    def start(self, ctx: context.StopSignal) -> None: ...

    def for_resource(self, gvr: GroupVersionResource) -> factory.GenericInformer: ...

    def served_resources(self) -> dict[GroupVersionResource, APIResourceMeta]: ...


Source = factory.DynamicSharedInformerFactory | DiscoveringSource | MultiClusterInformerFactory
SOURCES = (factory.DynamicSharedInformerFactory, MultiClusterInformerFactory, DiscoveringSource)

STALE_REQUEUE_DELAY = 0.1  # seconds before a stale request is looked at again: a watch event's usual lag
STALE_WARN_AFTER = 30.0  # seconds a request may wait for its cache before a warning says so
JOIN_TIMEOUT = 30.0  # seconds join() waits for a started controller by default


class RequestReconciler(Protocol):
    """Brings one object, named by a :class:`~kinformer.Request`, in line with what it should be.

    Called from a worker thread, never concurrently for one request. Raise to be retried with
    backoff; raise :class:`~kinformer.TerminalError` to give up on the request; return
    ``Result(requeue_after=...)`` to look again later.
    """

    def reconcile(self, request: Request) -> _controller.Result | None: ...


Mapper = Callable[[str, Any], Iterable[Request]]


@dataclass(frozen=True)
class _Binding:
    """One resource the controller hears about, and how an event on it becomes requests."""

    role: str  # "for", "owns" or "watches"
    gvr: GroupVersionResource
    predicates: tuple[Predicate, ...]
    map_func: Callable[..., Iterable[Request]] | None = None


def _api_group(api_version: Any) -> str | None:
    if not isinstance(api_version, str):
        return None
    group, slash, _version = api_version.rpartition("/")
    return group if slash else ""


def _controller_reference(obj: Any) -> dict[str, Any] | None:
    """The ``ownerReferences`` entry with ``controller: true``, or None."""
    found = meta.metadata(obj)
    if isinstance(found, dict):
        refs = found.get("ownerReferences")
    else:
        refs = getattr(found, "owner_references", None)
    for ref in refs or ():
        if isinstance(ref, dict):
            if ref.get("controller") is True:
                return ref
        elif getattr(ref, "controller", None) is True:
            return {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    return None


class ControllerBuilder:
    """Declares a controller: the resource it is for, those it owns and watches, its workers.

    Methods return the builder (chainable) and check their arguments at once
    (:class:`~kinformer.ConfigurationError`); :meth:`complete` makes the
    :class:`BuiltController`. Not thread-safe; build on one thread.

    An owned object's event enqueues its controlling owner: the ``ownerReferences`` entry with
    ``controller: true`` whose API group is the ``for_resource``'s and whose kind is its kind.
    The kind is ``for_resource(..., kind=)`` when given, else the discovering factory's (from
    discovery); when neither is known, the entry whose name and uid are those of an object in the
    ``for_resource``'s cache (same namespace and cluster) is the owner.

    Example, with ``factory`` a :class:`~kinformer.DynamicSharedInformerFactory`::

        controller = (ControllerBuilder("widgets", factory)
                      .for_resource(WIDGETS, predicates=[GenerationChangedPredicate()])
                      .owns(CONFIGMAPS)
                      .with_workers(4)
                      .complete(reconciler))  # reconciler.reconcile(request) -> Result | None
        controller.run(stop)  # blocks until stop
    """

    def __init__(self, name: str, source: Source) -> None:
        if not isinstance(name, str) or not name:
            raise errors.ConfigurationError(f"a controller needs a name: {name!r}")
        if not isinstance(source, SOURCES):
            raise errors.ConfigurationError(
                f"controller {name}: the source must be a DynamicSharedInformerFactory, a "
                f"DiscoveringDynamicSharedInformerFactory or a MultiClusterInformerFactory, not {source!r}")
        self._name = name
        self._source = source
        self._for: _Binding | None = None
        self._kind: str | None = None
        self._others: list[_Binding] = []
        self._workers = 1

    def for_resource(self, gvr: GroupVersionResource, predicates: Sequence[Predicate] = (),
                     *, kind: str | None = None) -> ControllerBuilder:
        """The resource the controller reconciles: its events enqueue the object itself.

        Once per builder. ``kind`` (optional) is its kind, for :meth:`owns`.
        """
        if self._for is not None:
            raise errors.ConfigurationError(f"controller {self._name}: for_resource was given already")
        if kind is not None and (not isinstance(kind, str) or not kind):
            raise errors.ConfigurationError(f"controller {self._name}: kind must be a non-empty string")
        self._for = _Binding("for", self._check_gvr(gvr), self._check_predicates(predicates))
        self._kind = kind
        return self

    def owns(self, gvr: GroupVersionResource, predicates: Sequence[Predicate] = ()) -> ControllerBuilder:
        """A resource the controller creates: an event on one enqueues its controlling owner."""
        self._others.append(_Binding("owns", self._check_gvr(gvr), self._check_predicates(predicates)))
        return self

    def watches(self, gvr: GroupVersionResource, map_func: Callable[..., Iterable[Request]],
                predicates: Sequence[Predicate] = ()) -> ControllerBuilder:
        """Another resource: an event on one enqueues ``map_func(obj)``'s requests
        (``map_func(cluster, obj)`` over a multi-cluster source). A request without a cluster
        gets the event's cluster."""
        if not callable(map_func):
            raise errors.ConfigurationError(f"controller {self._name}: map_func must be callable")
        self._others.append(
            _Binding("watches", self._check_gvr(gvr), self._check_predicates(predicates), map_func))
        return self

    def with_workers(self, n: int) -> ControllerBuilder:
        """Run up to ``n`` reconciles at once (never two for one request); 1 by default."""
        self._workers = _checks.integer(f"controller {self._name}: workers", n, minimum=1)
        return self

    def complete(self, reconciler: RequestReconciler) -> BuiltController:
        """The controller, not started: see :meth:`BuiltController.run` and :meth:`~BuiltController.start`."""
        if self._for is None:
            raise errors.ConfigurationError(f"controller {self._name}: for_resource is needed")
        if not callable(getattr(reconciler, "reconcile", None)):
            raise errors.ConfigurationError(
                f"controller {self._name}: not a reconciler (no reconcile): {reconciler!r}")
        return BuiltController(self._name, self._source, self._for, self._kind, list(self._others),
                               self._workers, reconciler)

    def _check_gvr(self, gvr: Any) -> GroupVersionResource:
        if not isinstance(gvr, GroupVersionResource):
            raise errors.ConfigurationError(f"controller {self._name}: not a GroupVersionResource: {gvr!r}")
        return gvr

    def _check_predicates(self, predicates: Any) -> tuple[Predicate, ...]:
        found = tuple(predicates)
        for p in found:
            methods = ("create", "update", "delete", "generic")
            if isinstance(p, type) or not all(callable(getattr(p, m, None)) for m in methods):
                hint = ""
                if isinstance(p, type):
                    hint = " (a predicate class is instantiated: GenerationChangedPredicate())"
                raise errors.ConfigurationError(f"controller {self._name}: not a predicate{hint}: {p!r}")
        return found


class _Reconcile:
    """The worker loop's reconciler: a key back to its Request, behind the staleness check."""

    def __init__(self, name: str, reconciler: RequestReconciler, tracker: staleness.StalenessTracker,
                 requeue: Callable[[str], None],
                 member_caches: Callable[[str], bool | None] | None = None) -> None:
        self._name = name
        self._reconciler = reconciler
        self._tracker = tracker
        self._skips = staleness.stale_sync_skips_metric(name)
        # request -> (monotonic time of its first skip in a row, whether a warning said so);
        # only this worker pool's threads touch it, each on requests no other has at that time
        self._stale_since: dict[Request, tuple[float, bool]] = {}
        # over member clusters: whether the request's member has its caches synced (None: the
        # member is not engaged); other sources' workers start once every cache synced
        self._member_caches = member_caches
        # the requests of members whose caches have not synced: one of each member's (its
        # probe) is looked at again every STALE_REQUEUE_DELAY, the others wait here, out of the
        # queue, until a look finds the member synced (or gone): a member that never syncs
        # costs one look per delay, not one per request
        self._members_lock = threading.Lock()  # guards _probes, _parked
        self._probes: dict[str, str] = {}  # cluster -> the key looked at again for it
        self._parked: dict[str, set[str]] = {}  # cluster -> keys waiting for its caches
        self._in_flight: set[str] = set()  # keys a worker has taken: a release leaves them to it
        self._requeue = requeue  # queues a key a member held back, once it synced (or went)

    def close(self) -> None:
        """Let go of the skips counter (the controller stopped): its series goes with it."""
        metrics_provider.release(self._skips)

    def reconcile(self, key: str) -> _controller.Result | None:
        request = Request.from_key(key)
        if self._member_caches is not None:
            self._in_flight.add(key)
            try:
                return self._reconcile_member(request, key)
            finally:
                self._in_flight.discard(key)
        return self._reconcile(request)

    def _reconcile_member(self, request: Request, key: str) -> _controller.Result | None:
        """:meth:`reconcile` over member clusters: only once the request's member synced."""
        assert self._member_caches is not None
        synced = self._member_caches(request.cluster)
        probe = False
        if not synced:
            synced, probe = self._hold(request.cluster, key)
        elif request.cluster in self._probes:
            self._release(request.cluster)
        if synced is None:
            log.debug("cluster %s is not engaged: dropping request=%s", request.cluster, request)
            self._stale_since.pop(request, None)
            self._tracker.forget(request)  # its writes went to caches that stopped with the member
            return None
        if not synced:  # its cache cannot yet tell a missing object from a late one
            return _controller.Skipped(requeue_after=STALE_REQUEUE_DELAY if probe else None)
        return self._reconcile(request)

    def _reconcile(self, request: Request) -> _controller.Result | None:
        """The staleness check, then the reconciler."""
        if not self._tracker.ensure_ready(request):
            self._skips.inc()
            log.debug("cache has not seen the last write yet: skipping request=%s", request)
            self._note_stale(request)
            return _controller.Skipped(requeue_after=STALE_REQUEUE_DELAY)
        self._stale_since.pop(request, None)
        with staleness.reconciling(self._tracker, request):
            return self._reconciler.reconcile(request)

    def _hold(self, cluster: str, key: str) -> tuple[bool | None, bool]:
        """``key``'s member has not synced (or is gone): look again under the lock, which
        orders it with :meth:`_release`; ``(synced, whether key is the member's probe)``. Not
        synced: ``key`` becomes the member's probe when it has none, else waits parked (a
        member with parked requests always has a probe coming round). Synced or gone
        meanwhile: release what waits."""
        assert self._member_caches is not None
        with self._members_lock:
            synced = self._member_caches(cluster)
            if synced is False:
                self._in_flight.discard(key)  # no longer this worker's: a release must queue it
                probe = self._probes.setdefault(cluster, key)
                if probe != key:
                    self._parked.setdefault(cluster, set()).add(key)
                return synced, probe == key
        self._release(cluster)
        return synced, False

    def _release(self, cluster: str) -> None:
        """``cluster`` synced or is gone: queue the requests it held back (a request of a
        member gone is dropped when it comes round)."""
        with self._members_lock:
            self._probes.pop(cluster, None)
            # a key a worker has taken is that worker's to reconcile (or to park again): queued
            # too, it would be reconciled a second time
            parked = [key for key in self._parked.pop(cluster, ()) if key not in self._in_flight]
        if parked:
            log.debug("cluster %s: %d requests that waited for its caches queued", cluster, len(parked))
            for key in sorted(parked):
                self._requeue(key)

    def _note_stale(self, request: Request) -> None:
        """Warn once when ``request`` has waited :data:`STALE_WARN_AFTER` seconds in a row for
        a cache to show its write (an informer that stopped, or a watch that never brings it)."""
        now = time.monotonic()
        since, warned = self._stale_since.setdefault(request, (now, False))
        if warned or now - since < STALE_WARN_AFTER:
            return
        self._stale_since[request] = (since, True)
        written = self._tracker.written(request)
        informer, version = written if written is not None else ("?", "?")
        log.warning("controller %s: request=%s has waited %.0fs for informer %s to show its write "
                    "at resourceVersion %s; still skipping it", self._name, request, now - since,
                    informer, version)


class BuiltController:
    """A controller made by :class:`ControllerBuilder`: its handlers, priority queue and workers.

    :meth:`run` registers the handlers on the source's informers (shared with everyone else
    using the source), starts the source (a no-op for what runs already), and reconciles on
    the workers until ``stop``; then it removes its handlers, lets each worker finish its
    reconcile, however long that takes (as :class:`~kinformer.Controller` does), and returns.
    Workers start once every informer the controller reads has synced (the requests of the
    initial lists queue meanwhile, behind live ones); over member clusters each request waits
    instead for its own member's informers, and a request for a member no longer engaged is
    dropped.

    Lifecycle: :meth:`run` blocks; :meth:`start` is :meth:`run` on a thread and returns at once;
    :meth:`shutdown` stops either as ``stop`` would and joins (:meth:`join` only waits). A
    controller runs once (:class:`~kinformer.AlreadyStartedError`).
    """

    def __init__(self, name: str, source: Source, primary: _Binding, kind: str | None,
                 others: list[_Binding], workers: int, reconciler: RequestReconciler) -> None:
        self.name = name
        self.source = source
        self.reconciler = reconciler
        self.tracker = staleness.StalenessTracker(name)
        self.queue: PriorityQueue[str] = PriorityQueue(name=name)
        self._primary = primary
        self._kind = kind
        self._bindings = [primary, *others]
        self._member_registrations: list[ClusterHandlerRegistration] = []  # over member clusters
        # a discovering source tells the primary's kind (for owns) from discovery
        self._discovery = source if isinstance(source, DiscoveringSource) else None
        per_member = self._member_synced if isinstance(source, MultiClusterInformerFactory) else None
        reconcile = _Reconcile(name, reconciler, self.tracker, self.queue.add, per_member)
        self._reconcile = reconcile
        self._controller = _controller.Controller(name, reconcile, queue=self.queue, workers=workers)
        self._once = lifecycle.RunOnce(name)

    @property
    def workers(self) -> int:
        return self._controller.workers

    def start(self, stop: context.StopSignal) -> None:
        """:meth:`run` on a thread (``kinformer-controller-<name>``); returns at once."""
        ctx = self._once.claim(stop)
        self._once.ran_on(
            _threads.spawn(self._run, _threads.thread_name("controller", self.name), ctx, stop))

    def join(self, timeout: float | None = JOIN_TIMEOUT) -> bool:
        """Wait for a :meth:`start`-ed controller to stop; True once it has (or never started)."""
        return self._once.join(timeout)

    def run(self, stop: context.StopSignal) -> None:
        """Reconcile until ``stop`` fires (or :meth:`shutdown`); blocks, and returns once the
        workers exited."""
        self._run(self._once.claim(stop), stop)

    def shutdown(self, timeout: float | None = JOIN_TIMEOUT) -> bool:
        """Stop a running controller as its ``stop`` would and wait until it has finished; True
        once it has (at once when it never ran), False after ``timeout`` seconds (a reconcile
        still running: the run goes on waiting for it). The source and its informers keep
        running: they are the source's."""
        return self._once.shutdown(timeout)

    def _run(self, ctx: context.Context, stop: context.StopSignal) -> None:
        registered: list[tuple[Callable[[], None], Callable[[], bool]]] = []
        try:
            try:
                for binding in self._bindings:  # one that raises leaves none of them behind
                    registered.append(self._register(binding))
                self._start_source(stop)  # the caller's stop: shutdown leaves the source running
                if self._caches_synced(ctx, [synced for _, synced in registered]):
                    self._controller.run(ctx)
            finally:
                for remove, _ in registered:
                    remove()
                self.tracker.close()
                self.queue.shut_down()  # also when stopped before the caches synced: its series go
                self._reconcile.close()
        finally:
            self._once.exited()

    def _caches_synced(self, ctx: context.Context, handlers_synced: list[Callable[[], bool]]) -> bool:
        """Wait until every informer the controller reads has synced and has handed its
        initial list to the controller's handlers (False: ``ctx`` ended first), as
        controller-runtime's controllers wait before their workers start: a cache that has not
        listed yet would answer NotFound for objects that exist, and a request an initial list
        queues after the workers began would reconcile its object a second time. Over member
        clusters nothing waits here: each request waits for its own member
        (``_member_synced``), so a member that never answers holds no other back."""
        if isinstance(self.source, MultiClusterInformerFactory):
            return True
        for binding in self._bindings:
            informer = self.source.for_resource(binding.gvr).informer()
            if not informer.wait_for_sync(stop=ctx):
                return False
        return handlers.wait_for_cache_sync(ctx, *handlers_synced)

    def _member_synced(self, cluster: str) -> bool | None:
        """Whether member ``cluster``'s informers of every resource the controller reads have
        synced and handed their initial lists to the controller's handlers (as
        :meth:`_caches_synced` waits on one cluster); None when it is not engaged."""
        assert isinstance(self.source, MultiClusterInformerFactory)
        synced = True
        for binding in self._bindings:
            informer = self.source.for_resource(binding.gvr).informer_for(cluster)
            if informer is None:
                return None
            synced = synced and informer.has_synced()
        # a registration not yet told of a member engaged this moment is not synced either
        return synced and all(registration.has_synced_for(cluster)
                              for registration in self._member_registrations)

    def _start_source(self, ctx: context.StopSignal) -> None:
        with contextlib.suppress(errors.AlreadyStartedError):  # a discovering factory runs once
            self.source.start(ctx)

    # -- events to requests -------------------------------------------------------------------

    def _register(self, binding: _Binding) -> tuple[Callable[[], None], Callable[[], bool]]:
        """Add the binding's handler: how to remove it, and whether it has had its initial list."""
        mapper = self._mapper(binding)
        source = self.source
        if isinstance(source, MultiClusterInformerFactory):
            multi = source.for_resource(binding.gvr)
            registration = multi.add_event_handler(_Handler(self, binding, mapper))
            self._member_registrations.append(registration)
            return lambda: multi.remove_event_handler(registration), lambda: True
        shared = source.for_resource(binding.gvr).informer()
        self.tracker.observe(shared.name, shared.get_indexer(), shared.is_stopped)  # type: ignore[arg-type]
        reg = shared.add_event_handler(_Handler(self, binding, mapper))

        def remove() -> None:
            with contextlib.suppress(errors.StoppedError):
                shared.remove_event_handler(reg)
        return remove, reg.has_synced

    def _mapper(self, binding: _Binding) -> Mapper:
        if binding.role == "for":
            return lambda cluster, obj: (Request(meta.name(obj), meta.namespace(obj), cluster),)
        if binding.role == "owns":
            return self._owner
        map_func = binding.map_func
        assert map_func is not None
        multi = isinstance(self.source, MultiClusterInformerFactory)

        def mapped(cluster: str, obj: Any) -> Iterable[Request]:
            found = map_func(cluster, obj) if multi else map_func(obj)
            for request in found:
                if not isinstance(request, Request):
                    raise TypeError(f"map_func gave {request!r}, not a Request")
                yield request if request.cluster or not cluster else Request(
                    request.name, request.namespace, cluster)
        return mapped

    def _owner_kind(self) -> str | None:
        if self._kind is None and self._discovery is not None:
            served = self._discovery.served_resources().get(self._primary.gvr)
            if served is not None:
                self._kind = served.group_version_kind.kind  # two handler threads write one value
        return self._kind

    def _owner(self, cluster: str, obj: Any) -> Iterable[Request]:
        ref = _controller_reference(obj)
        if ref is None or _api_group(ref.get("apiVersion")) != self._primary.gvr.group:
            return ()
        name = ref.get("name")
        if not isinstance(name, str) or not name:
            return ()
        namespace = self._owner_namespace(cluster, meta.namespace(obj), name)
        kind = self._owner_kind()
        if kind is not None:
            return () if ref.get("kind") != kind else (Request(name, namespace, cluster),)
        cached = self._cached_primary(cluster, namespace, name)
        if cached is None or meta.uid(cached) != ref.get("uid"):
            return ()
        return (Request(name, namespace, cluster),)

    def _owner_namespace(self, cluster: str, namespace: str, name: str) -> str:
        """The namespace of an owner named ``name`` by an object of ``namespace``: the same,
        unless the primary resource is cluster-scoped (an owner a namespaced object may have):
        then none, as controller-runtime's mapper gives it. Discovery says which (a
        discovering source); else the primary's cache does, holding the owner by its bare name."""
        if not namespace:
            return namespace
        if self._discovery is not None:
            served = self._discovery.served_resources().get(self._primary.gvr)
            if served is not None:
                return "" if served.is_cluster_scoped else namespace
        if (self._cached_primary(cluster, namespace, name) is None
                and self._cached_primary(cluster, "", name) is not None):
            return ""
        return namespace

    def _cached_primary(self, cluster: str, namespace: str, name: str) -> Any:
        source = self.source
        if isinstance(source, MultiClusterInformerFactory):
            shared = source.for_resource(self._primary.gvr).informer_for(cluster)
            if shared is None:
                return None
            return shared.get_indexer().get_by_key(_cluster.to_cluster_aware_key("", namespace, name))
        indexer = source.for_resource(self._primary.gvr).informer().get_indexer()
        found = indexer.get_by_key(_cluster.to_cluster_aware_key(cluster, namespace, name))
        if found is None and cluster:  # an informer of one logical cluster keys without it
            found = indexer.get_by_key(_cluster.to_cluster_aware_key("", namespace, name))
        return found

    def _enqueue(self, binding: _Binding, mapper: Mapper, cluster: str, obj: Any, initial: bool,
                 old: Any = None) -> None:
        """Queue the requests ``mapper`` makes of ``obj`` (and of ``old``, an update's object
        before it: an owner it names no more is told too), each once; ``initial`` queues them
        behind every live one."""
        try:
            requests = dict.fromkeys(mapper(cluster, obj))
            if old is not None:
                requests.update(dict.fromkeys(mapper(cluster, old)))
        except Exception:
            log.exception("controller %s: cannot map a %s event of %s to requests",
                          self.name, binding.role, binding.gvr)
            return
        for request in requests:
            if initial:
                self.queue.add_initial(request.key)
            else:
                self.queue.add(request.key)

    def __repr__(self) -> str:
        return f"<BuiltController {self.name} for={self._primary.gvr} workers={self.workers}>"


class _Handler:
    """An informer handler turning events into requests. On an informer of logical clusters each
    object's cluster is its ``kcp.io/cluster`` annotation; a multi-cluster informer makes one
    per member cluster (``for_cluster``, a :class:`~kinformer.cluster_handlers.PerClusterHandler`)
    that names that cluster, and still hears ``is_in_initial_list`` for the priority queue."""

    def __init__(self, controller: BuiltController, binding: _Binding, mapper: Mapper,
                 cluster: str | None = None) -> None:
        self._controller = controller
        self._binding = binding
        self._mapper = mapper
        self._predicates = binding.predicates
        self._cluster = cluster

    def for_cluster(self, cluster: str) -> _Handler:
        return _Handler(self._controller, self._binding, self._mapper, cluster)

    def _cluster_of(self, obj: Any) -> str:
        return _cluster.cluster_of(obj) if self._cluster is None else self._cluster

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._controller._enqueue(self._binding, self._mapper, self._cluster_of(obj), obj,
                                      is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        """Requests of the object before and after (controller-runtime's mappers see both); a
        resync's, whose resourceVersion did not change, wait behind live ones as an initial
        list's do (controller-runtime's priority queue gives them its low priority)."""
        if all(p.update(old, new) for p in self._predicates):
            version = meta.resource_version(new)
            resync = bool(version) and version == meta.resource_version(old)
            self._controller._enqueue(self._binding, self._mapper, self._cluster_of(new), new, resync,
                                      old)

    def on_delete(self, obj: Any) -> None:
        obj = handlers.deleted_object(obj)
        if all(p.delete(obj) for p in self._predicates):
            self._controller._enqueue(self._binding, self._mapper, self._cluster_of(obj), obj, False)
