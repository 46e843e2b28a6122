"""SharedIndexInformer: an indexed local cache of one resource type, with event handlers.

client-go's ``sharedIndexInformer``. A :class:`~kinformer.Reflector` lists and watches into a
FIFO; a delta loop pops it in batches, updates the cache and hands notifications to the
processor (``processor.py``), which delivers them to each handler (``handlers.py``) on its own
thread. Listers (``cache/lister.py``) read the cache; factories (``factory.py``) run one
informer per resource. Each part is chosen once, elsewhere: the cache
(:mod:`kinformer.informer_cache`), the profile's FIFO and how what it pops reaches the cache
(an applier of :mod:`kinformer.appliers`: ``"modern"``, client-go 1.36's, or ``"classic"``,
client-go up to 1.32's) and the collector policy (:mod:`kinformer.collector_policy`, wrapping
the ListerWatcher, the store's sink and the watch error handler the reflector gets once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kinformer import (
    _checks,
    _threads,
    appliers,
    collector_policy,
    context,
    errors,
    informer_cache,
    merge_guard,
    processor,
    sharding,
    transforms,
)
from kinformer.cache import cluster as _cluster
from kinformer.cache import compact_store, store
from kinformer.client import listerwatcher
from kinformer.clock import REAL_CLOCK, Clock
from kinformer.cluster_handlers import ClusterAnnotationHandler, ClusterEventHandler, as_cluster_handler
from kinformer.handlers import ResourceEventHandler, wait_for_cache_sync
from kinformer.metrics import provider as metrics_provider
from kinformer.reflector import reflector

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a store's or handler's errors: none may quote a token

POP_TIMEOUT = 1.0  # the delta loop looks at its stop signal at least this often
JOIN_TIMEOUT = 30.0  # reflector and delta loop close their own streams; this only bounds a bug

PROFILES = tuple(p.value for p in appliers.InformerProfile)  # "modern" (client-go 1.36), "classic"


class SharedIndexInformer:
    """An indexed local cache of one resource type, kept in sync with the server.

    ``run(stop)`` blocks until ``stop`` (a ``threading.Event`` or :class:`~kinformer.Context`)
    fires, then returns after joining every thread it started; it runs once. The cache is
    updated before handlers hear of a change, so listers in a handler already see it. Handlers
    run on their own thread each, in order per handler, never under a kinformer lock; a slow or
    raising handler stalls neither the watch nor other handlers. A handler added late first
    gets ``on_add(obj, True)`` for every cached object. All methods are thread-safe.

    ``profile`` is ``"modern"`` (the default: client-go 1.36's in-order, atomic, batched
    informer) or ``"classic"`` (client-go up to 1.32: per-key merging of pending changes); any
    other name raises :class:`~kinformer.ConfigurationError` (a ``ValueError``). Handlers see the
    same callbacks in both; the modern profile delivers them in strict arrival order across
    objects, reports a watch DELETE even for an object never cached, and applies a relist
    atomically: a handler reading the cache while a relist's notifications arrive never sees
    part of the old list and part of the new one.

    Cached objects are shared, not copied: a handler or lister caller must copy an object
    before changing it. ``detect_mutations=True`` (None, the default, follows the environment
    variable ``KINFORMER_CACHE_MUTATION_DETECTOR``; False turns it off whatever that says)
    catches one that does not: see :meth:`check_mutations`. A bad ``mutation_check_period``
    raises :class:`~kinformer.ConfigurationError`.

    The cache is keyed ``namespace/name`` unless ``key_func`` says otherwise (a
    :class:`~kinformer.DeletedFinalStateUnknown` keeps its own ``key``); the FIFO in front of
    it keys with the same function. Over every kcp logical cluster at once
    (``ListWatch.for_resource(cluster="*")``) it is cluster-aware (:attr:`cluster_aware`), so
    ``default/app`` of two logical clusters are two objects; a ``key_func`` of namespace/name
    alone (:func:`~kinformer.meta_namespace_key_func` and its deletion-handling form) is refused
    there with :class:`~kinformer.ConfigurationError`, as it would merge them. Over a
    ListerWatcher that does not say it spans logical clusters, two clusters' objects that
    meet under one key (a list holding both, or a change replacing a cached object of another
    cluster) are never merged silently: no handler hears of it, the informer counts as unsynced
    until a list is taken whole, its :meth:`last_error` and watch error handler get
    :class:`~kinformer.ClustersMergedError`, one ERROR line says so, and the reflector lists
    again after a backoff step (:mod:`kinformer.merge_guard`). ``compact=True`` keeps each
    object as compact JSON bytes (:class:`~kinformer.cache.compact_store.CompactIndexer`):
    every read and every handler gets a fresh copy of its own, reads cost a decode, writes an
    encode, and the mutation detector stays off. Both choices are made once, when the informer
    is made (:mod:`kinformer.informer_cache`).

    ``use_watch_list=True`` streams the first state through a watch (``sendInitialEvents``,
    client-go's WatchList, KEP-3157) instead of a list, falling back to a list where the server
    or its ListerWatcher cannot; it is off by default, unlike client-go 1.35+, because a server
    that never sends the initial-events-end bookmark holds such an informer unsynced until the
    reflector gives the stream up (:class:`~kinformer.Reflector`: a minute without an object, or
    the watch's ``timeoutSeconds``) and lists.

    ``name`` names its threads and log lines; by default the resource the lister-watcher of
    :meth:`ListWatch.for_resource <kinformer.ListWatch.for_resource>` lists (``v1/configmaps``),
    else ``#<n>``. Example::

        informer = SharedIndexInformer(ListWatch.for_resource(client, gvr))
        informer.add_event_handler(ResourceEventHandlerFuncs(add_func=print))
        stop = threading.Event()
        thread = threading.Thread(target=informer.run, args=(stop,))
        thread.start()
        try:
            if not informer.wait_for_sync(timeout=30):
                raise SystemExit(f"cache did not sync: {informer.last_error()}")
            ...  # read the cache through informer.get_indexer() or a GenericLister
        finally:
            stop.set()  # run() returns once every thread it started is joined
            thread.join()
    """

    def __init__(
        self,
        lister_watcher: listerwatcher.ListerWatcher,
        example_object: Any = None,
        default_event_handler_resync_period: float = 0,
        indexers: store.Indexers | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        name: str | None = None,
        profile: str = "modern",
        detect_mutations: bool | None = None,
        mutation_check_period: float = 1.0,
        key_func: store.KeyFunc | None = None,
        compact: bool = False,
        use_watch_list: bool = False,
    ) -> None:
        self._profile = check_profile(profile)
        self._use_watch_list = bool(use_watch_list)
        self._lister_watcher = lister_watcher
        del example_object  # client-go's parameter, kept for its signature: nothing reads it
        self._name = name or informer_cache.default_name(lister_watcher)
        self._clock = clock
        self._mutation_check_period = _checks.seconds(
            "mutation_check_period", mutation_check_period, positive=True)
        self._compact = bool(compact)
        cache = informer_cache.new_cache(lister_watcher, self._name, indexers, key_func,
                                         compact=self._compact, detect_mutations=detect_mutations)
        self._indexer, self._detector, self._pack = cache.indexer, cache.detector, cache.pack
        self._default_resync = _checks.seconds(
            "default_event_handler_resync_period", default_event_handler_resync_period)
        self._resync_check_period = self._default_resync
        self._processor = processor.SharedProcessor(clock, self._name)
        self._start_lock = threading.Lock()  # guards _started, _stopped, _fifo, _reflector, setters
        # held while popped deltas or a first list are applied; a late handler takes it to replay
        self._block_deltas = threading.Lock()
        self._started = False
        self._stopped = False
        self._transform: Callable[[Any], Any] | None = None
        self._watch_error_handler: reflector.WatchErrorHandler | None = None
        self._fifo: appliers.FIFO | None = None
        self._reflector: reflector.Reflector | None = None
        self._shard_selector = listerwatcher.describe(lister_watcher).shard_selector
        self._merges = merge_guard.MergeGuard(self._name)  # two clusters' objects under one key

    @property
    def name(self) -> str:
        return self._name

    @property
    def cluster_aware(self) -> bool:
        """Whether the cache is keyed by :func:`~kinformer.cluster_aware_key_func`
        (``<cluster>|<namespace>/<name>``) with both cluster indexes, as an informer over
        ``ListWatch.for_resource(cluster="*")`` is: then a factory's lister of it is a
        :class:`~kinformer.GenericClusterLister`."""
        return _cluster.is_cluster_aware(self._indexer)

    @property
    def profile(self) -> appliers.InformerProfile:
        """Which of client-go's informers this one follows; equal to ``"modern"`` or
        ``"classic"``."""
        return self._profile

    # -- lifecycle ------------------------------------------------------------------------------

    def run(self, stop: context.StopSignal) -> None:
        """Run until ``stop`` fires; return after every thread started here has been joined.

        A second call logs a warning and returns at once. On stop the FIFO is closed, the
        reflector stopped, then the handlers: their buffered notifications are dropped, and a
        handler still busy after a bounded wait is named in a warning instead of waited for.
        """
        with self._start_lock:
            if self._started:
                log.warning("informer %s: run more than once is not allowed", self._name)
                return
            # the profile's FIFO and how popped deltas reach the cache; the reflector applies
            # the transform as objects arrive (a list page by page), so the FIFO needs none:
            # what it drops is freed while the list still downloads
            merges = self._merges
            applier = appliers.new_applier(
                self._profile, self._indexer, self._processor, self._block_deltas, self._name,
                merges.changed)
            fifo = applier.fifo
            # the collector policy wraps what the reflector gets: see collector_policy
            pauses = collector_policy.ListPauses()
            transform = self._transform
            of_clusters = self.cluster_aware or listerwatcher.describe(self._lister_watcher).cluster
            if transform is not None and of_clusters and not isinstance(transform, transforms.JSONTransform):
                transform = _cluster.keeping_cluster(transform)  # keys and handlers name the cluster
            refl = reflector.Reflector(
                collector_policy.PausingListerWatcher(self._lister_watcher, pauses),
                merges.sink(collector_policy.pausing_sink(fifo, pauses)),
                self._resync_check_period,
                self._name,
                should_resync=self._processor.should_resync,
                clock=self._clock,
                watch_error_handler=merges.watch_error_handler(
                    collector_policy.ending_pauses(pauses, self._watch_error_handler)),
                shard_selector=self._shard_selector,
                transform=transforms.chain(transform, self._pack) if self._pack else transform,
                use_watch_list=self._use_watch_list,
            )
            self._fifo, self._reflector = fifo, refl
            merges.reflector = refl
            self._started = True
        log.info("informer %s starting", self._name)
        # synced and object count, read when metrics are collected: no cost per event
        gauges = metrics_provider.informer_gauges(self._name, self.has_synced, self._indexer.__len__)
        # a Context stops the reflector as it is cancelled, breaking off a list in flight at once,
        # not once this thread has woken from stop.wait() below (a while on a busy interpreter)
        inner = (stop.child(f"informer-{self._name}") if isinstance(stop, context.Context)
                 else context.Context(f"informer-{self._name}"))
        self._processor.start()
        threads = []
        if self._detector is not None:  # first: it runs whenever the cache has synced
            threads.append(_threads.spawn(
                self._detector.run, _threads.thread_name("mutations", self._name), inner,
                self._mutation_check_period, self._clock))
        threads += [
            _threads.spawn(refl.run, _threads.thread_name("reflector", self._name), inner),
            _threads.spawn(
                self._delta_loop, _threads.thread_name("deltas", self._name), applier, pauses, inner
            ),
        ]
        try:
            stop.wait()
        finally:
            fifo.close()
            inner.cancel()
            _threads.join_all(threads, JOIN_TIMEOUT)
            pauses.stopped(self._indexer)  # no longer frozen: reclaimed once dropped
            self._processor.stop(processor.LISTENER_JOIN_TIMEOUT)
            gauges.remove()
            with self._start_lock:
                self._stopped = True
            log.info("informer %s stopped", self._name)

    def is_stopped(self) -> bool:
        """True once :meth:`run` has returned."""
        return self._stopped

    def has_synced(self) -> bool:
        """True once the first full list has been applied to the cache (handlers may lag), and
        False again while the cache would hold two logical clusters' objects under one key
        (see :attr:`cluster_aware`) until a list is taken whole."""
        fifo = self._fifo
        return fifo is not None and fifo.has_synced() and self._merges.merged is None

    def wait_for_sync(
        self, timeout: float | None = None, stop: context.StopSignal | None = None
    ) -> bool:
        """Block until :meth:`has_synced` (True), ``stop`` fires or ``timeout`` passes (False)."""
        return wait_for_cache_sync(stop, self.has_synced, timeout=timeout)

    def check_mutations(self) -> list[str]:
        """The keys (this informer's key form, sorted) of cached objects changed in place since
        they were cached; always [] while the mutation detector is off.

        With ``detect_mutations=True`` (or, when it is None, ``KINFORMER_CACHE_MUTATION_DETECTOR``
        set to ``1`` or ``true``), the informer keeps a deep copy of every object it caches and
        compares: a handler or lister caller that edited an object it was handed shows up here.
        While running, the informer also checks every ``mutation_check_period`` seconds and logs
        each such key at ERROR once (``cache mutation detected: <key>``); nothing is raised. Off,
        nothing is copied or checked.
        """
        detector = self._detector
        return [] if detector is None else detector.check()

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list or watch event applied; "" before run."""
        refl = self._reflector
        return "" if refl is None else refl.last_sync_resource_version()

    def last_error(self) -> BaseException | None:
        """The reflector's last list or watch error, cleared by the next successful list."""
        refl = self._reflector
        return None if refl is None else refl.last_error()

    def backoff_remaining(self) -> float | None:
        """Seconds until the reflector lists or watches again, while it backs off after an
        error (a dropped connection, a refused list); None while it lists or watches."""
        refl = self._reflector
        return None if refl is None else refl.backoff_remaining()

    # -- configuration --------------------------------------------------------------------------

    def set_shard_selector(self, selector: sharding.ShardSelector | None) -> None:
        """Cache only ``selector``'s shard of the resource (None: all of it), also while running.

        A running informer relists at once with the new selector: objects that left the shard
        reach ``on_delete`` (as DeletedFinalStateUnknown), objects that joined ``on_add``, and
        the cache ends equal to the new shard. A ListerWatcher built with a shard selector
        (``ListWatch.for_resource(shard_selector=...)``) gives the informer its first one, and
        None goes back to it. Where the server does not shard, the reflector filters with the
        same hash (see :meth:`server_side_sharding`).

        :meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>` owns nothing: the
        informer sends no list or watch, every cached object reaches ``on_delete`` (as
        DeletedFinalStateUnknown, like any object that left the shard), and the cache stays
        empty until a non-empty selector (or None) comes; it then lists as usual. An informer
        that owns nothing counts as synced once its cache has been emptied, so a readiness
        check does not flap while its shard is empty. Given before :meth:`run`, the informer
        starts owning nothing and syncs without a request.
        """
        if selector is not None and not isinstance(selector, sharding.ShardSelector):
            raise TypeError(f"not a ShardSelector: {selector!r}")
        with self._start_lock:
            if selector is None:
                selector = listerwatcher.describe(self._lister_watcher).shard_selector
            self._shard_selector = selector
            refl = None if self._stopped else self._reflector
        if refl is not None:
            refl.set_shard_selector(selector)

    def shard_selector(self) -> sharding.ShardSelector | None:
        """The shard this informer caches, or None for the whole resource."""
        return self._shard_selector

    def server_side_sharding(self) -> bool | None:
        """True when the server sharded the last list, False when kinformer filters on the
        client (the server ignored the selector), None before the first list or without a
        selector."""
        refl = self._reflector
        return None if refl is None else refl.server_side_sharding()

    def set_transform(self, fn: Callable[[Any], Any] | None) -> None:
        """Apply ``fn`` to every object before it is cached; raises AlreadyStartedError after run.

        The reflector applies it once to each object as it arrives, a list's objects page by
        page (see :mod:`kinformer.transforms`). On an informer of logical clusters (cluster-aware,
        or of one logical cluster) what ``fn`` returns keeps the ``kcp.io/cluster`` annotation
        of what it was given (put back when ``fn`` dropped it), so the cache's keys and the
        clusters handlers are told still name each object's cluster.
        """
        with self._start_lock:
            if self._started:
                raise errors.AlreadyStartedError("informer has already started")
            self._transform = fn

    def set_watch_error_handler(self, fn: reflector.WatchErrorHandler | None) -> None:
        """Call ``fn(reflector, error)`` on every list/watch error; raises AlreadyStartedError after run."""
        with self._start_lock:
            if self._started:
                raise errors.AlreadyStartedError("informer has already started")
            self._watch_error_handler = fn

    @property
    def compact(self) -> bool:
        """Whether the cache keeps compact JSON bytes and hands out fresh copies (``compact=True``)."""
        return self._compact

    def get_store(self) -> store.InformerIndexer:
        """The cache (also before run, empty): :meth:`get_indexer`."""
        return self.get_indexer()

    def get_indexer(self) -> store.InformerIndexer:
        """The cache (also before run, empty): an :class:`~kinformer.Indexer`, or with
        ``compact=True`` a :class:`~kinformer.cache.compact_store.CompactIndexer`."""
        return self._indexer

    def add_indexers(self, indexers: store.Indexers) -> None:
        """Add indexes, before or after start; raises StoppedError once stopped."""
        with self._start_lock:
            if self._stopped:
                raise errors.StoppedError("indexer was not added because it has stopped already")
            self._indexer.add_indexers(dict(indexers))

    # -- handlers -------------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler | ClusterEventHandler
    ) -> processor.ResourceEventHandlerRegistration:
        """Register ``handler`` with the informer's default resync period."""
        return self.add_event_handler_with_resync_period(handler, self._default_resync)

    def add_event_handler_with_resync_period(
        self, handler: ResourceEventHandler | ClusterEventHandler, resync_period: float
    ) -> processor.ResourceEventHandlerRegistration:
        """Register ``handler``, asking for a resync every ``resync_period`` seconds (0: never).

        A period under a second is raised to one. One shorter than the informer's check period
        lowers the check period before run, and is raised to it after. An informer created
        with no resync never resyncs. Added after run, the handler first gets
        ``on_add(obj, True)`` for every cached object, before any later event. Raises
        StoppedError once the informer stopped, ConfigurationError for a period that is not
        finite seconds.

        A :class:`~kinformer.ClusterEventHandler` (``ClusterEventHandlerFuncs`` or a subclass)
        is called with each object's logical cluster, read from its ``kcp.io/cluster``
        annotation (``""`` without one): ``on_add(cluster, obj)``, ``on_update(cluster, old,
        new)``, ``on_delete(cluster, obj)``, also behind a
        :class:`~kinformer.FilteringResourceEventHandler`. Any other handler is called as usual.
        """
        period = _checks.seconds("resync_period", resync_period)
        registered = handler
        handler = as_cluster_handler(handler)  # a filter in front of a cluster handler is one
        if isinstance(handler, ClusterEventHandler):
            handler = ClusterAnnotationHandler(handler)
        if self._compact:  # each handler changes only its own copies of what it is handed
            handler = compact_store.FreshObjects(handler)
        with self._start_lock:
            if self._stopped:
                raise errors.StoppedError(
                    f"handler {handler!r} was not added to shared informer because it has stopped already"
                )
            period, check = processor.resync_periods(period, self._resync_check_period, self._started)
            if check != self._resync_check_period:  # lowered for this handler, before run
                self._resync_check_period = check
                self._processor.resync_check_period_changed(check)
            listener = processor.ProcessorListener(
                handler,
                period,
                processor.effective_resync_period(period, check),
                self._clock.now(),
                self.has_synced,
            )
            if not self._started:
                self._processor.add_listener(listener)
                return processor.ResourceEventHandlerRegistration(self, listener, registered)
            with self._block_deltas:
                self._processor.add_listener(listener)
                listener.add_initial(self._indexer.list())
            return processor.ResourceEventHandlerRegistration(self, listener, registered)

    def remove_event_handler(self, registration: processor.ResourceEventHandlerRegistration) -> None:
        """Unregister a handler; idempotent. Its buffered notifications are dropped.

        A callback already running finishes on its own thread. Raises TypeError for something
        that is not a registration of an informer.
        """
        if not isinstance(registration, processor.ResourceEventHandlerRegistration):
            raise TypeError(f"not an event handler registration: {registration!r}")
        if registration.owner is not self:
            return
        with self._block_deltas:
            self._processor.remove_listener(registration.listener)

    # -- the delta loop -------------------------------------------------------------------------

    def _delta_loop(
        self, applier: appliers.Applier, pauses: collector_policy.ListPauses, ctx: context.Context
    ) -> None:
        """Pop and apply deltas until stopped; end the first list's collector pause once applied."""
        fifo, first = applier.fifo, pauses.first
        try:
            while not ctx.cancelled():
                if first.held and fifo.has_synced():
                    first.end(freeze_first=True)
                try:
                    applier.pop(POP_TIMEOUT)
                except errors.FIFOClosedError:
                    return
                except TimeoutError:
                    continue
                except Exception:
                    log.exception("informer %s: failed to process deltas; object dropped", self._name)
        finally:
            first.end()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running" if self._started else "new"
        return f"<SharedIndexInformer {self._name} {state} objects={len(self._indexer)}>"


def check_profile(profile: str) -> appliers.InformerProfile:
    """``profile`` as an :class:`~kinformer.InformerProfile`; raises
    :class:`~kinformer.ConfigurationError` (a ValueError) unless it is one of PROFILES."""
    return appliers.InformerProfile.of(profile)
