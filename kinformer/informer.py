"""SharedIndexInformer: an indexed local cache of one resource type, with event handlers.

client-go's ``sharedIndexInformer``. A :class:`~kinformer.Reflector` lists and watches into a
FIFO; a delta loop pops it in batches, updates the :class:`~kinformer.Indexer` and hands
notifications to the processor (``processor.py``), which delivers them to each handler
(``handlers.py``) on its own thread. Listers (``cache/lister.py``) read the indexer; factories
(``factory.py``) run one informer per resource.

Two profiles, as client-go has had them. ``"modern"`` (the default, client-go 1.36's): a
:class:`~kinformer.RealFIFO` in atomic mode, one delta per event in arrival order; a batch of up
to 1,000 deltas of distinct keys goes into the cache in one transaction before any handler hears
of it, a relist (``ReplacedAll``) replaces the whole cache in one step before its notifications
go out, and the FIFO lock is let go while a batch is applied. ``"classic"`` (client-go up to
1.32): a :class:`~kinformer.DeltaFIFO` that merges each key's pending changes, described next.

In the classic profile the first list takes one route into the cache: the FIFO's ``replace``
keys it and hands it whole to the FIFO's ``take_first_list`` option (here
:meth:`SharedIndexInformer._take_first_list`), which stores every object in one pass
(``Indexer.add_new``) and queues each handler's ``on_add(obj, True)`` at once, so the informer
is synced when ``replace`` returns. When that cannot be (an index function fails, a key is
listed twice), the FIFO queues the list and the delta loop pops it like any other change, a
batch at a time; a batch of new keys still goes into the cache in one transaction.

The cyclic collector stays off over the first list; the policy is here, the mechanism in
``_gc.py``. The reflector's ``_gc.hold_first_pause`` keeps the pause of the list's first decode
until ``replace`` returns, and :class:`_ReflectorStore` holds a pause of its own from the start
of ``replace`` until the list is applied; the synced cache is then frozen out of the collector's
reach (``_gc.freeze``). A list that fails, or a stop, ends the pause without freezing, and a
stop gives back what was frozen (``_gc.informer_stopped``).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _checks, _gc, _threads, context, errors, meta, processor, sharding
from kinformer.cache import delta_fifo, mutation_detector, real_fifo, store
from kinformer.cache.thread_safe_store import NOT_APPLIED
from kinformer.client import listerwatcher
from kinformer.clock import REAL_CLOCK, Clock
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import ResourceEventHandler, wait_for_cache_sync
from kinformer.metrics import provider as metrics_provider
from kinformer.reflector import reflector

log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0  # client-go's floor: a smaller period would replay the cache in a busy loop
INITIAL_BATCH = 1000  # items of a queued first list applied per FIFO lock hold
STEADY_BATCH = 1000  # keys applied per FIFO lock hold once synced
POP_TIMEOUT = 1.0  # the delta loop looks at its stop signal at least this often
JOIN_TIMEOUT = 30.0  # reflector and delta loop close their own streams; this only bounds a bug

PROFILES = ("modern", "classic")  # client-go 1.36's informer, and the one up to client-go 1.32

_DELETED = delta_fifo.DeltaType.DELETED
_REPLACED_ALL = delta_fifo.DeltaType.REPLACED_ALL
_SYNC_ALL = delta_fifo.DeltaType.SYNC_ALL
_BOOKMARK = delta_fifo.DeltaType.BOOKMARK
_Fifo = delta_fifo.DeltaFIFO | real_fifo.RealFIFO
_ADD, _UPDATE, _DELETE = processor.ADD, processor.UPDATE, processor.DELETE
_Notification = processor.Notification
_new_notification = tuple.__new__  # builds a Notification without NamedTuple.__new__'s frame
_ids = itertools.count(1)


class ResourceEventHandlerRegistration:
    """What :meth:`SharedIndexInformer.add_event_handler` returns; pass it to ``remove_event_handler``.

    ``has_synced()`` is True once the informer synced and this handler returned from every
    ``on_add`` of the initial list (or, for a late handler, of the replay of the cache).
    """

    __slots__ = ("_informer", "_listener")

    def __init__(self, informer: SharedIndexInformer, listener: processor.ProcessorListener) -> None:
        self._informer = informer
        self._listener = listener

    @property
    def handler(self) -> ResourceEventHandler:
        return self._listener.handler

    @property
    def resync_period(self) -> float:
        """The effective resync period of this handler in seconds (0: never)."""
        return self._listener.resync_period

    def has_synced(self) -> bool:
        return self._listener.has_synced()

    def pending(self) -> int:
        """How many notifications wait to be delivered to this handler."""
        return self._listener.pending()

    def __repr__(self) -> str:
        return f"<ResourceEventHandlerRegistration {self._listener.handler!r}>"


class _ReflectorStore:
    """The informer's FIFO as its reflector writes to it: the first list under a collector pause.

    ``add``, ``update``, ``delete``, ``resync`` and (a RealFIFO's) ``bookmark`` are the FIFO's
    own bound methods, so a watch event costs no extra call. ``replace`` begins ``pause`` for
    the informer's first list, before the FIFO keys it, unless the FIFO is
    closed; the pause ends when that
    list is applied (here if the FIFO took it whole, else in the delta loop once synced), with
    the cache frozen, or without freezing when ``replace`` fails (the next list is then the
    first again) or the informer stops. Called by the reflector's thread only.
    """

    __slots__ = ("_fifo", "_first", "_pause", "add", "delete", "resync", "update")

    def __init__(self, fifo: _Fifo, pause: _gc.HeldPause) -> None:
        self._fifo = fifo
        self._pause = pause
        self._first = True  # no list applied yet: the next replace is the first list
        self.add = fifo.add
        self.update = fifo.update
        self.delete = fifo.delete
        self.resync = fifo.resync

    def replace(self, objs: Any, resource_version: str = "") -> None:
        fifo, pause = self._fifo, self._pause
        hold = self._first and not fifo.is_closed()
        if hold:
            self._first = False
            pause.begin()
        try:
            fifo.replace(objs, resource_version)
        except BaseException:
            if hold:
                self._first = True
                pause.end()
            raise
        if hold and (fifo.has_synced() or fifo.is_closed()):  # nothing left for the delta loop
            pause.end(freeze_first=fifo.has_synced())


class _BookmarkingReflectorStore(_ReflectorStore):
    """A RealFIFO as its reflector writes to it: bookmarks go on to the FIFO too."""

    __slots__ = ("bookmark",)

    def __init__(self, fifo: real_fifo.RealFIFO, pause: _gc.HeldPause) -> None:
        super().__init__(fifo, pause)
        self.bookmark = fifo.bookmark


def _default_name(lister_watcher: listerwatcher.ListerWatcher) -> str:
    """``v1/configmaps`` for a lister-watcher that says what it lists, else ``#<n>``."""
    resource = _described(lister_watcher)[0]
    if isinstance(resource, GroupVersionResource):
        return "/".join(part for part in (resource.group, resource.version, resource.resource) if part)
    return f"#{next(_ids)}"


def _described(
    lister_watcher: listerwatcher.ListerWatcher,
) -> tuple[GroupVersionResource | None, sharding.ShardSelector | None]:
    """What ``lister_watcher`` lists and the shard it brings, when it says (ListWatch does)."""
    if isinstance(lister_watcher, listerwatcher.DescribedListerWatcher):
        return lister_watcher.resource, lister_watcher.shard_selector
    return None, None


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
    ) -> None:
        check_profile(profile)
        if not mutation_check_period > 0 or mutation_check_period == float("inf"):
            raise errors.ConfigurationError(
                f"mutation_check_period must be a positive number of seconds, got "
                f"{mutation_check_period!r}")
        self._profile = profile
        self._lister_watcher = lister_watcher
        self.example_object = example_object
        self._name = name or _default_name(lister_watcher)
        self._clock = clock
        key_func = store.deletion_handling_meta_namespace_key_func
        self._detector: mutation_detector.MutationDetector | None = None
        self._mutation_check_period = _checks.seconds(
            "mutation_check_period", mutation_check_period, positive=True)
        if mutation_detector.enabled(detect_mutations):  # else a plain Indexer: nothing to pay
            self._detector = mutation_detector.MutationDetector(self._name)
            self._indexer: store.Indexer = mutation_detector.CheckedIndexer(
                key_func, dict(indexers or {}), self._detector)
        else:
            self._indexer = store.Indexer(key_func, dict(indexers or {}))
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
        self._fifo: _Fifo | None = None
        self._reflector: reflector.Reflector | None = None
        self._shard_selector = _described(lister_watcher)[1]

    @property
    def name(self) -> str:
        return self._name

    @property
    def profile(self) -> str:
        """``"modern"`` or ``"classic"``: which of client-go's informers this one follows."""
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
            fifo: _Fifo
            # the reflector applies the transform as objects arrive (a list page by page), so
            # the FIFO needs none: what it drops is freed while the list still downloads
            if self._profile == "modern":
                fifo = real_fifo.RealFIFO(store.meta_namespace_key_func, None, None)
            else:
                fifo = delta_fifo.DeltaFIFO(
                    store.meta_namespace_key_func,
                    self._indexer,
                    True,
                    None,
                    take_first_list=self._take_first_list,
                )
            pause = _gc.HeldPause()  # the first list's; see _ReflectorStore
            refl = reflector.Reflector(
                self._lister_watcher,
                (_BookmarkingReflectorStore(fifo, pause) if isinstance(fifo, real_fifo.RealFIFO)
                 else _ReflectorStore(fifo, pause)),
                self._resync_check_period,
                self._name,
                should_resync=self._processor.should_resync,
                clock=self._clock,
                watch_error_handler=self._watch_error_handler,
                shard_selector=self._shard_selector,
                transform=self._transform,
            )
            self._fifo, self._reflector = fifo, refl
            self._started = True
        log.info("informer %s starting", self._name)
        # synced and object count, read when metrics are collected: no cost per event
        gauges = metrics_provider.informer_gauges(self._name, self.has_synced, self._indexer.__len__)
        inner = context.Context(f"informer-{self._name}")
        self._processor.run()
        threads = [
            _threads.spawn(refl.run, _threads.thread_name("reflector", self._name), inner),
            _threads.spawn(
                self._delta_loop, _threads.thread_name("deltas", self._name), fifo, pause, inner
            ),
        ]
        if self._detector is not None:
            threads.append(_threads.spawn(
                self._detector.run, _threads.thread_name("mutations", self._name), inner,
                self._mutation_check_period, self._clock))
        try:
            stop.wait()
        finally:
            fifo.close()
            inner.cancel()
            _threads.join_all(threads, JOIN_TIMEOUT)
            pause.end()
            _gc.informer_stopped(self)  # no longer frozen: reclaimed once dropped
            self._processor.stop(processor.LISTENER_JOIN_TIMEOUT)
            gauges.remove()
            with self._start_lock:
                self._stopped = True
            log.info("informer %s stopped", self._name)

    def is_stopped(self) -> bool:
        """True once :meth:`run` has returned."""
        return self._stopped

    def has_synced(self) -> bool:
        """True once the first full list has been applied to the cache (handlers may lag)."""
        fifo = self._fifo
        return fifo is not None and fifo.has_synced()

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
                selector = _described(self._lister_watcher)[1]
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
        page (see :mod:`kinformer.transforms`).
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

    def get_store(self) -> store.Indexer:
        """The cache (also before run, empty)."""
        return self._indexer

    def get_indexer(self) -> store.Indexer:
        """The cache (also before run, empty)."""
        return self._indexer

    def add_indexers(self, indexers: store.Indexers) -> None:
        """Add indexes, before or after start; raises StoppedError once stopped."""
        with self._start_lock:
            if self._stopped:
                raise errors.StoppedError("indexer was not added because it has stopped already")
            self._indexer.add_indexers(dict(indexers))

    # -- handlers -------------------------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler) -> ResourceEventHandlerRegistration:
        """Register ``handler`` with the informer's default resync period."""
        return self.add_event_handler_with_resync_period(handler, self._default_resync)

    def add_event_handler_with_resync_period(
        self, handler: ResourceEventHandler, resync_period: float
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``, asking for a resync every ``resync_period`` seconds (0: never).

        A period under a second is raised to one. One shorter than the informer's check period
        lowers the check period before run, and is raised to it after. An informer created
        with no resync never resyncs. Added after run, the handler first gets
        ``on_add(obj, True)`` for every cached object, before any later event. Raises
        StoppedError once the informer stopped, ConfigurationError for a period that is not
        finite seconds.
        """
        period = _checks.seconds("resync_period", resync_period)
        with self._start_lock:
            if self._stopped:
                raise errors.StoppedError(
                    f"handler {handler!r} was not added to shared informer because it has stopped already"
                )
            if period > 0:
                if period < MINIMUM_RESYNC_PERIOD:
                    log.warning(
                        "resync period %.3fs is too small; changing it to %.1fs",
                        period,
                        MINIMUM_RESYNC_PERIOD,
                    )
                    period = MINIMUM_RESYNC_PERIOD
                if period < self._resync_check_period:
                    if self._started:
                        log.warning(
                            "resync period %.1fs is smaller than the started informer's check "
                            "period %.1fs; changing it to %.1fs",
                            period,
                            self._resync_check_period,
                            self._resync_check_period,
                        )
                        period = self._resync_check_period
                    else:
                        self._resync_check_period = period
                        self._processor.resync_check_period_changed(period)
            listener = processor.ProcessorListener(
                handler,
                period,
                processor.effective_resync_period(period, self._resync_check_period),
                self._clock.now(),
                self.has_synced,
            )
            if not self._started:
                self._processor.add_listener(listener)
                return ResourceEventHandlerRegistration(self, listener)
            with self._block_deltas:
                self._processor.add_listener(listener)
                listener.add_initial(self._indexer.list())
            return ResourceEventHandlerRegistration(self, listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Unregister a handler; idempotent. Its buffered notifications are dropped.

        A callback already running finishes on its own thread. Raises TypeError for something
        that is not a registration of an informer.
        """
        if not isinstance(registration, ResourceEventHandlerRegistration):
            raise TypeError(f"not an event handler registration: {registration!r}")
        if registration._informer is not self:
            return
        with self._block_deltas:
            self._processor.remove_listener(registration._listener)

    # -- the delta loop -------------------------------------------------------------------------

    def _delta_loop(self, fifo: _Fifo, pause: _gc.HeldPause, ctx: context.Context) -> None:
        """Pop and apply deltas until stopped; end the first list's collector pause once applied."""
        try:
            while not ctx.cancelled():
                if pause.held and fifo.has_synced():
                    pause.end(freeze_first=True)
                try:
                    if isinstance(fifo, real_fifo.RealFIFO):
                        fifo.pop_batch(self._process_batch, self._process_single, POP_TIMEOUT)
                    else:
                        limit = STEADY_BATCH if fifo.has_synced() else INITIAL_BATCH
                        fifo.pop_batch(self._handle_batch, limit, timeout=POP_TIMEOUT)
                except errors.FIFOClosedError:
                    return
                except TimeoutError:
                    continue
                except Exception:
                    log.exception("informer %s: failed to process deltas; object dropped", self._name)
        finally:
            pause.end()

    def _take_first_list(self, items: dict[str, Any]) -> bool:
        """Store a whole first list, keyed, and queue ``on_add(obj, True)`` for each handler.

        The FIFO's ``take_first_list``: runs on the reflector's thread under the FIFO lock. False,
        with nothing changed, when a key is cached already or an index function fails (the list
        is then queued, and applying it logs and drops the object that fails).
        """
        with self._block_deltas:
            return self._add_new_locked(items)

    def _handle_batch(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply popped keys in queue order (under the FIFO lock), then notify each handler once.

        A batch of a queued first list in which every item is a single add of a key not cached
        yet goes into the cache in one transaction, as a first list taken whole does: the same
        outcome as applying its items one by one.
        """
        with self._block_deltas:
            if is_in_initial_list and self._add_new_locked(_new_items(batch, self._indexer.key_of)):
                return
            self._apply_all(batch, is_in_initial_list)

    def _add_new_locked(self, items: dict[str, Any] | None) -> bool:
        """Add objects under keys not cached yet, all or none, then queue ``on_add(obj, True)``.

        Call with ``_block_deltas`` held; a handler added later replays the cache instead, under
        the same lock. False, with nothing changed, for None, a key cached already or an index
        function that fails.
        """
        if items is None:
            return False
        try:
            if not self._indexer.add_new(items):
                return False
        except Exception:
            return False
        if self._processor.listeners():
            self._processor.distribute_initial(list(items.values()))
        return True

    def _apply_all(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply each key's deltas oldest first, then hand every handler its notifications at once.

        Call with ``_block_deltas`` held. The cache takes every change before any handler hears
        of the batch; an error aborts only the rest of that key's deltas (logged, object
        dropped), and the notifications of the changes already made are still delivered.
        """
        out: list[processor.Notification] = []
        sync_at: list[int] = []  # positions in ``out`` of equal-resourceVersion updates
        apply = self._apply
        for deltas in batch:
            try:
                apply(deltas, is_in_initial_list, out, sync_at)
            except Exception:
                log.exception("informer %s: failed to process deltas; object dropped", self._name)
        if not out:
            return
        initial = 0
        if is_in_initial_list:
            initial = sum(1 for n in out if n[0] == _ADD and n[2])
        self._processor.distribute_batch(out, sync_at, initial)

    def _apply(
        self,
        deltas: list[delta_fifo.Delta],
        is_in_initial_list: bool,
        out: list[processor.Notification],
        sync_at: list[int],
    ) -> None:
        """Apply one key's deltas to the cache, appending their notifications to ``out``."""
        indexer = self._indexer
        append = out.append
        for delta_type, obj in deltas:
            if delta_type == _DELETED:
                indexer.delete(obj)
                append(_new_notification(_Notification, (_DELETE, obj, None)))
                continue
            key = indexer.key_of(obj)
            old = indexer.get_by_key(key)
            indexer.update(obj, key)
            if old is not None:
                if meta.resource_version(old) == meta.resource_version(obj):
                    sync_at.append(len(out))
                append(_new_notification(_Notification, (_UPDATE, old, obj)))
            else:
                append(_new_notification(_Notification, (_ADD, obj, is_in_initial_list)))

    # -- the modern profile's delta processing -------------------------------------------------

    def _process_single(self, deltas: list[delta_fifo.Delta], is_in_initial_list: bool) -> None:
        """Apply one popped delta of the RealFIFO: a whole relist, a resync, a bookmark or a change.

        Runs on the delta loop's thread, without the FIFO lock.
        """
        delta_type, obj = deltas[0]
        with self._block_deltas:
            if delta_type is _REPLACED_ALL:
                self._replace_all_locked(obj, is_in_initial_list)
            elif delta_type is _SYNC_ALL:
                cached = self._indexer.list()
                notifications = [_new_notification(_Notification, (_UPDATE, o, o)) for o in cached]
                self._processor.distribute_batch(notifications, list(range(len(cached))), 0)
            elif delta_type is _BOOKMARK:
                self._indexer.bookmark(obj.resource_version)
            else:
                self._apply_all([deltas], is_in_initial_list)

    def _process_batch(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply a batch of changes to distinct keys in one cache transaction, then notify.

        A change whose key or index values cannot be computed is logged and dropped; the
        others are applied, and only those are notified, in batch order.
        """
        indexer = self._indexer
        changes: list[tuple[str, Any, bool]] = []
        for ((delta_type, obj),) in batch:
            try:
                key = indexer.key_of(obj)
            except errors.KeyFuncError:
                log.exception("informer %s: failed to process deltas; object dropped", self._name)
                continue
            changes.append((key, obj, delta_type is _DELETED))
        with self._block_deltas:
            olds = indexer.apply_batch(changes)
            out: list[processor.Notification] = []
            sync_at: list[int] = []
            initial = self._notify_applied(changes, olds, is_in_initial_list, out, sync_at)
            if out:
                self._processor.distribute_batch(out, sync_at, initial)

    def _notify_applied(
        self,
        changes: list[tuple[str, Any, bool]],
        olds: list[Any],
        is_in_initial_list: bool,
        out: list[processor.Notification],
        sync_at: list[int],
    ) -> int:
        """Append the notifications of ``changes`` as ``Indexer.apply_batch`` applied them.

        ``olds`` is what apply_batch returned: a deletion notifies ``on_delete``, a write to a
        key not cached before ``on_add``, any other ``on_update`` (its position goes to
        ``sync_at`` when the resourceVersion did not change); a change that was not applied is
        logged. Returns how many of the notifications are initial-list adds.
        """
        initial = 0
        for (key, obj, delete), old in zip(changes, olds, strict=True):
            if old is NOT_APPLIED:
                log.error("informer %s: index function failed for %s; object dropped",
                          self._name, key)
            elif delete:
                out.append(_new_notification(_Notification, (_DELETE, obj, None)))
            elif old is None:
                out.append(_new_notification(_Notification, (_ADD, obj, is_in_initial_list)))
                initial += is_in_initial_list
            else:
                if meta.resource_version(old) == meta.resource_version(obj):
                    sync_at.append(len(out))
                out.append(_new_notification(_Notification, (_UPDATE, old, obj)))
        return initial

    def _replace_all_locked(self, info: real_fifo.ReplacedAllInfo, is_in_initial_list: bool) -> None:
        """Make a whole list the cache's content in one step, then notify: deletions first.

        Objects cached but not listed reach ``on_delete`` as DeletedFinalStateUnknown with
        their last cached state; listed ones ``on_update`` (cached before) or ``on_add``, in
        list order. Handlers reading the cache meanwhile see the complete new list. Call with
        ``_block_deltas`` held.
        """
        indexer, items = self._indexer, info.items
        current = indexer.snapshot() if len(indexer) else {}
        first = not current and self._add_new_quietly(items)  # into an empty cache: one pass
        if not first:
            gone = [key for key in current if key not in items]
            changes: list[tuple[str, Any, bool]] = [(key, None, True) for key in gone]
            changes += [(key, obj, False) for key, obj in items.items()]
            olds = indexer.apply_batch(changes)
        indexer.bookmark(info.resource_version)
        if first and is_in_initial_list:  # the handlers get one item for the whole list
            self._processor.distribute_initial(list(items.values()))
            return
        out: list[processor.Notification] = []
        sync_at: list[int] = []
        initial = 0
        if first:
            out = [_new_notification(_Notification, (_ADD, obj, False)) for obj in items.values()]
        else:
            for key in gone:
                dfsu = store.DeletedFinalStateUnknown(key, current[key])
                out.append(_new_notification(_Notification, (_DELETE, dfsu, None)))
            initial = self._notify_applied(
                changes[len(gone):], olds[len(gone):], is_in_initial_list, out, sync_at)
        if out:
            self._processor.distribute_batch(out, sync_at, initial)

    def _add_new_quietly(self, items: dict[str, Any]) -> bool:
        """``Indexer.add_new``, False (nothing changed) also when an index function fails."""
        try:
            return self._indexer.add_new(items)
        except Exception:
            return False

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running" if self._started else "new"
        return f"<SharedIndexInformer {self._name} {state} objects={len(self._indexer)}>"


def check_profile(profile: str) -> None:
    """Raise :class:`~kinformer.ConfigurationError` (a ValueError) unless ``profile`` is one of PROFILES."""
    if profile not in PROFILES:
        raise errors.ConfigurationError(
            f"unknown informer profile {profile!r}: use 'modern' or 'classic'")


def _new_items(batch: list[list[delta_fifo.Delta]], key_of: Callable[[Any], str]) -> dict[str, Any] | None:
    """``{key: object}`` when every item of ``batch`` is a single add, else None (also on a key error)."""
    items: dict[str, Any] = {}
    try:
        for deltas in batch:
            if len(deltas) != 1 or deltas[0][0] == _DELETED:
                return None
            obj = deltas[0][1]
            items[key_of(obj)] = obj
    except errors.KeyFuncError:
        return None
    return items if len(items) == len(batch) else None
