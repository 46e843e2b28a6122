"""SharedIndexInformer: an indexed local cache of one resource type, with event handlers.

client-go's ``sharedIndexInformer`` in the classic profile. A :class:`~kinformer.Reflector`
lists and watches into a :class:`~kinformer.DeltaFIFO`; a delta loop pops it, updates
the :class:`~kinformer.Indexer` and hands notifications to the processor
(``processor.py``), which delivers them to each handler (``handlers.py``) on its own thread.
Listers (``lister.py``) read the indexer; factories (``factory.py``) run one informer per resource.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kinformer import _gc, _threads, context, errors, processor
from kinformer.cache import delta_fifo, store
from kinformer.clock import REAL_CLOCK, Clock
from kinformer.handlers import ResourceEventHandler, wait_for_cache_sync
from kinformer.reflector import reflector

log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0  # client-go's floor: a smaller period would replay the cache in a busy loop
INITIAL_BATCH = 1000  # items of the first list applied per FIFO lock hold
STEADY_BATCH = 1000  # keys applied per FIFO lock hold once synced
POP_TIMEOUT = 1.0  # the delta loop looks at its stop signal at least this often
JOIN_TIMEOUT = 30.0  # reflector and delta loop close their own streams; this only bounds a bug

IndexFunc = Callable[[Any], list[str]]
_DELETED = delta_fifo.DeltaType.DELETED
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

    def __init__(self, informer: SharedIndexInformer, listener: processor.Listener) -> None:
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


class _InformerFIFO(delta_fifo.DeltaFIFO):
    """The informer's DeltaFIFO: its first list pauses the cyclic collector until it is applied.

    Applying a big first list allocates millions of objects and frees none; the collector
    would walk the growing cache again and again. ``replace`` pauses it (unless the FIFO is
    closed) and the informer's delta loop calls :meth:`end_gc_pause` once ``has_synced``, after
    freezing the synced cache out of the collector's reach (``gc.freeze``; not while a stopped
    informer is alive, see :mod:`kinformer._gc`). Every path ends the pause: a failed
    replace, an empty list, stop (the delta loop and ``run`` both end it).

    A first list that finds nothing queued and nothing cached skips the queue: ``first_list``
    (the informer's) stores every object and queues the handlers' ``on_add(obj, True)`` at
    once, and the FIFO is synced when ``replace`` returns. That is the outcome of queueing a
    ``Replaced`` delta per object and popping them all, without the per-object queue work.
    """

    def __init__(self, *args: Any, first_list: Callable[[dict[str, Any]], bool] | None = None) -> None:
        super().__init__(*args)
        self._first_list = first_list
        self._gc_lock = threading.Lock()  # guards gc_held and _gc_used
        self.gc_held = False  # this FIFO holds one collector pause; read without the lock
        self._gc_used = False  # the pause is only for the first list

    def replace(self, objs: Any, resource_version: str = "") -> None:
        with self._gc_lock:
            hold = not self._gc_used and not self.is_closed()
            if hold:
                self._gc_used = True
                _gc.pause()
                self.gc_held = True
        try:
            objs = objs if isinstance(objs, list) else list(objs)
            if not self._replace_first(objs):
                super().replace(objs, resource_version)
        except BaseException:
            if hold:
                with self._gc_lock:
                    self._gc_used = False
                self.end_gc_pause(freeze=False)
            raise
        if hold and (self.has_synced() or self.is_closed()):  # nothing left for the delta loop
            self.end_gc_pause(freeze=self.has_synced())

    def _replace_first(self, objs: list[Any]) -> bool:
        """Hand a first list straight to the cache; False (nothing changed) when it cannot.

        Only for the first list of an empty FIFO and cache, with every key listed once (a
        repeated key must merge its deltas in the queue). Keying and transforming come first,
        as in ``replace``: their errors propagate and change nothing.
        """
        first_list = self._first_list
        if first_list is None or not objs:
            return False
        with self._lock:
            if self._populated or self._items or self._closed:
                return False
        known = self._known_objects
        if known is not None and known.list_keys():
            return False
        key_func, key_of = self._key_func, self.key_of
        keyed = {key_func(obj) if type(obj) is dict else key_of(obj): obj for obj in objs}
        if len(keyed) != len(objs):
            return False
        if self._transformer is not None:
            transform = self._transform
            for key, obj in keyed.items():
                keyed[key] = transform(obj)
        if not first_list(keyed):
            return False
        with self._lock:
            self._populated = True
            self._initial_population_count = 0
            self._synced = True
        return True

    def end_gc_pause(self, freeze: bool) -> None:
        """End the pause if this FIFO holds one; with ``freeze``, freeze first (no young sweep)."""
        with self._gc_lock:
            if not self.gc_held:
                return
            self.gc_held = False
            if freeze:
                _gc.freeze()
            _gc.resume()


class SharedIndexInformer:
    """An indexed local cache of one resource type, kept in sync with the server.

    ``run(stop)`` blocks until ``stop`` (a ``threading.Event`` or :class:`~kinformer.Context`)
    fires, then returns after joining every thread it started; it runs once. The cache is
    updated before handlers hear of a change, so listers in a handler already see it. Handlers
    run on their own thread each, in order per handler, never under a kinformer lock; a slow or
    raising handler stalls neither the watch nor other handlers. A handler added late first
    gets ``on_add(obj, True)`` for every cached object. All methods are thread-safe.

        informer = SharedIndexInformer(ListWatch.for_resource(client, gvr))
        informer.add_event_handler(ResourceEventHandlerFuncs(add_func=print))
        threading.Thread(target=informer.run, args=(stop,)).start()
    """

    def __init__(
        self,
        lister_watcher: Any,
        example_object: Any = None,
        default_event_handler_resync_period: float = 0,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        name: str | None = None,
    ) -> None:
        self._lister_watcher = lister_watcher
        self.example_object = example_object
        self._name = name or f"informer{next(_ids)}"
        self._clock = clock
        self._indexer = store.Indexer(
            store.deletion_handling_meta_namespace_key_func, dict(indexers or {})
        )
        self._default_resync = float(default_event_handler_resync_period)
        self._resync_check_period = self._default_resync
        self._processor = processor.SharedProcessor(clock, self._name)
        self._start_lock = threading.Lock()  # guards _started, _stopped, _fifo, _reflector, setters
        self._block_deltas = threading.Lock()  # held while a pop is applied; late handlers take it to replay
        self._started = False
        self._stopped = False
        self._transform: Callable[[Any], Any] | None = None
        self._watch_error_handler: reflector.WatchErrorHandler | None = None
        self._fifo: delta_fifo.DeltaFIFO | None = None
        self._reflector: reflector.Reflector | None = None

    @property
    def name(self) -> str:
        return self._name

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
            fifo = _InformerFIFO(
                store.meta_namespace_key_func,
                self._indexer,
                True,
                self._transform,
                first_list=self._add_first_list,
            )
            refl = reflector.Reflector(
                self._lister_watcher,
                fifo,
                self._resync_check_period,
                self._name,
                should_resync=self._processor.should_resync,
                clock=self._clock,
                watch_error_handler=self._watch_error_handler,
            )
            self._fifo, self._reflector = fifo, refl
            self._started = True
        log.info("informer %s starting", self._name)
        inner = context.Context(f"informer-{self._name}")
        self._processor.run()
        threads = [
            _threads.spawn(refl.run, _threads.thread_name("reflector", self._name), inner),
            _threads.spawn(self._delta_loop, _threads.thread_name("deltas", self._name), fifo, inner),
        ]
        try:
            stop.wait()
        finally:
            fifo.close()
            inner.cancel()
            _threads.join_all(threads, JOIN_TIMEOUT)
            fifo.end_gc_pause(freeze=False)
            _gc.informer_stopped(self)  # no longer frozen: reclaimed once dropped
            self._processor.stop(processor.LISTENER_JOIN_TIMEOUT)
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

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list or watch event applied; "" before run."""
        refl = self._reflector
        return "" if refl is None else refl.last_sync_resource_version()

    def last_error(self) -> BaseException | None:
        """The reflector's last list or watch error, cleared by the next successful list."""
        refl = self._reflector
        return None if refl is None else refl.last_error()

    # -- configuration --------------------------------------------------------------------------

    def set_transform(self, fn: Callable[[Any], Any] | None) -> None:
        """Apply ``fn`` to every object before it is cached; raises AlreadyStartedError after run."""
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

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
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
        StoppedError once the informer stopped.
        """
        period = float(resync_period)
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
            listener = processor.Listener(
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
                for obj in self._indexer.list():
                    listener.add(processor.Notification(processor.ADD, obj, True))
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

    def _delta_loop(self, fifo: _InformerFIFO, ctx: context.Context) -> None:
        """Pop and apply deltas until stopped; end the first list's collector pause once applied."""
        try:
            while not ctx.cancelled():
                if fifo.gc_held and fifo.has_synced():
                    fifo.end_gc_pause(freeze=True)
                try:
                    if not fifo.has_synced() and fifo.pop_initial(self._handle_initial, INITIAL_BATCH):
                        continue  # (once synced, never again: skip its lock)
                    fifo.pop_batch(self._handle_batch, STEADY_BATCH, timeout=POP_TIMEOUT)
                except errors.FIFOClosedError:
                    return
                except TimeoutError:
                    continue
                except Exception:
                    log.exception("informer %s: failed to process deltas; object dropped", self._name)
                if fifo.gc_held and fifo.has_synced():
                    fifo.end_gc_pause(freeze=True)
        finally:
            fifo.end_gc_pause(freeze=False)

    def _handle_initial(self, batch: list[tuple[str, list[delta_fifo.Delta]]]) -> None:
        """Apply popped items of the first list at once (under the FIFO lock).

        The same outcome as ``_handle_batch([deltas], True)`` for each item in order: when every
        item is a single add of a key not cached yet, the cache takes them in one pass and each
        handler gets its ``on_add(obj, True)`` notifications in one append; otherwise (relist,
        several deltas, an index function error) each item goes the usual way.
        """
        with self._block_deltas:
            items: dict[str, Any] = {}
            fast = True
            for key, deltas in batch:  # the FIFO's key is the cache's for objects that are not DFSUs
                if len(deltas) != 1 or deltas[0][0] == _DELETED:
                    fast = False
                    break
                items[key] = deltas[0][1]
            if fast and self._add_new_locked(items):
                return
            self._apply_all([deltas for _, deltas in batch], True)

    def _add_first_list(self, items: dict[str, Any]) -> bool:
        """Store a whole first list, keyed, and queue ``on_add(obj, True)`` for each handler.

        The FIFO's shortcut for a first list (see :class:`_InformerFIFO`). Runs on the
        reflector's thread; False, with nothing changed, when a key is cached already or an
        index function fails (the list then goes through the queue, which logs per object).
        """
        with self._block_deltas:
            return self._add_new_locked(items)

    def _add_new_locked(self, items: dict[str, Any]) -> bool:
        """Add objects under keys not cached yet, all or none, then notify; ``_block_deltas`` held."""
        try:
            if not self._indexer.add_new(items):
                return False
        except Exception:
            return False
        if self._processor.listeners():  # a handler added later replays the cache instead
            self._processor.distribute_initial(
                [_new_notification(_Notification, (_ADD, obj, True)) for obj in items.values()]
            )
        return True

    def _handle_batch(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply popped keys in queue order (under the FIFO lock), then notify each handler once."""
        with self._block_deltas:
            self._apply_all(batch, is_in_initial_list)

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
                if _resource_version(old) == _resource_version(obj):
                    sync_at.append(len(out))
                append(_new_notification(_Notification, (_UPDATE, old, obj)))
            else:
                append(_new_notification(_Notification, (_ADD, obj, is_in_initial_list)))

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running" if self._started else "new"
        return f"<SharedIndexInformer {self._name} {state} objects={len(self._indexer)}>"


def _resource_version(obj: Any) -> str | None:
    if isinstance(obj, dict):
        meta = obj.get("metadata") or {}
        rv = meta.get("resourceVersion")
        return None if rv is None else str(rv)
    meta = getattr(obj, "metadata", None)
    rv = getattr(meta, "resource_version", None)
    return None if rv is None else str(rv)
