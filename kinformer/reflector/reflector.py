"""Reflector: keeps a store equal to one resource on the server by listing, then watching.

client-go's ``tools/cache/reflector.go``. The :class:`Reflector` pulls from a
:class:`~kinformer.ListerWatcher` and pushes into a store (a :class:`~kinformer.DeltaFIFO`
inside an informer, or an :class:`~kinformer.Indexer`) with client-go's rules: the first list at
resourceVersion "0", relists at the last version seen, a consistent list at "" when a version is
too old, re-watching without a relist after a clean close or a dropped connection, bookmarks,
randomized watch timeouts, the very-short-watch rule, and jittered exponential backoff from
:mod:`kinformer.backoff`. Optionally it streams the initial state through a watch
(``sendInitialEvents``), falling back to a list when that does not work.

This module holds the Reflector: its state and getters, the run loop (``Run``,
``ListAndWatch``), the list and relist rules (``list``), the watch loop and how each watch's end
is answered (``watch``), the WatchList initial sync (``watchList``) and the resync timer
(``startResync``). Beside it, :mod:`kinformer.reflector.watch` applies the events of any watch
(``handleAnyWatch``) and :mod:`kinformer.reflector.pager` fetches a list page by page
(``tools/pager``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random as _random
import sys
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _checks, _gc, _threads, errors, meta, sharding
from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.cache import store as _store
from kinformer.client import listerwatcher
from kinformer.metrics import provider as _metrics
from kinformer.reflector import pager, sink, watch

log = logging.getLogger(__name__)

MIN_WATCH_TIMEOUT = 300.0  # watches time out server-side after [min, 2*min) seconds
VERY_SHORT_WATCH = 1.0  # a watch closing sooner than this with no events means trouble
INTERNAL_ERROR_WINDOW_RESET = 60.0  # a minute without a 500 starts a new in-place retry window
INITIAL_EVENTS_TIMEOUT = 60.0  # WatchList: give up on the end bookmark and list instead

WatchErrorHandler = Callable[["Reflector", BaseException], None]

_Outcome = watch.WatchOutcome


def default_watch_error_handler(reflector: Reflector, error: BaseException) -> None:
    """The handler used when none is set: a DEBUG line.

    The reflector itself logs each error at WARNING where it happens, together with what it
    does next (backing off, relisting), so the default handler adds nothing louder.
    """
    log.debug("reflector %s: list/watch error: %r", reflector.name, error)


class _StopRequested(Exception):
    """The stop signal fired during a list or the initial sync; the run loop ends quietly on it."""


def _is_connection_refused(error: BaseException) -> bool:
    """Whether ``error`` or one of its causes is a refused connection."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__
    return False


def _backs_off(error: BaseException) -> bool:
    """Whether a watch that failed to start with ``error`` is retried after a backoff step.

    A refused connection or a 429 means the server is there but busy or restarting: the
    reflector backs off and watches again instead of relisting (client-go's rule). So does a
    request that got no answer at all (a :class:`~kinformer.TransportError`: a server going
    down resets the connections it had accepted): its version is as good as before, and a list
    would meet the same connection. client-go sees such a reset less often, as Go's transport
    sends a request again when a kept-alive connection breaks under it; kinformer's requests
    do the same, but a reset on a new connection surfaces here.
    """
    return (_is_connection_refused(error)
            or isinstance(error, (errors.TransportError, errors.TooManyRequestsError)))


def _version_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the version asked for is gone (410) or not there yet."""
    return errors.is_expired(error) or errors.is_too_large_resource_version(error)


def _refused_version(exc: BaseException, rv: str) -> bool:
    """Whether a list at ``rv`` got 400 for a version the server cannot read.

    A watch event may carry a resourceVersion that is a string but not one the server accepts
    back. client-go would list at it again forever; kinformer lists once at the current
    version instead, as after a 410.
    """
    return isinstance(exc, errors.BadRequestError) and rv not in ("", "0")


def _named_items(items: list[Any], name: str) -> list[Any]:
    """The listed objects fit for the cache: those with a string metadata.name, each other logged.

    ``items`` itself when every one is well formed (the usual case: one pass, no copy); a
    model object passes when it has a name.
    """
    if all(map(meta.is_well_formed, items)):
        return items
    kept = [obj for obj in items if meta.is_well_formed(obj) or meta.has_name(obj)]
    if len(kept) != len(items):
        log.warning(
            "reflector %s: %d listed objects without metadata.name; skipped",
            name,
            len(items) - len(kept),
        )
    return kept


class _WatchAbort:
    """How another thread ends the round's watch: it closes the open watch and says why.

    The resync timer calls :meth:`abort` with the error that ends the round; a change of shard
    calls :meth:`end_round`, which ends it without an error. Thread-safe: the run thread
    attaches each watch it reads and asks why when the watch ends.
    """

    __slots__ = ("_ended", "_error", "_lock", "_on_end", "_watch")

    def __init__(self, on_end: Callable[[], object] | None = None) -> None:
        self._lock = threading.Lock()  # guards the fields below; once ended, no watch stays open
        self._watch: listerwatcher.Watch | None = None
        self._error: BaseException | None = None
        self._ended = False
        self._on_end = on_end  # called by end_round: wakes a round that waits without a watch

    @property
    def error(self) -> BaseException | None:
        with self._lock:
            return self._error

    @property
    def ended(self) -> bool:
        """Whether :meth:`end_round` was called: relist now, nothing went wrong."""
        with self._lock:
            return self._ended

    def end_round(self) -> None:
        """End the round without an error and close the watch being read, if any."""
        with self._lock:
            self._ended = True
            current = self._watch
        if current is not None:
            current.close()
        if self._on_end is not None:
            self._on_end()

    def abort(self, error: BaseException) -> None:
        """Keep the first ``error`` and close the watch being read, if any."""
        with self._lock:
            if self._error is None:
                self._error = error
            current = self._watch
        if current is not None:
            current.close()

    def attach(self, current: listerwatcher.Watch | None) -> None:
        """``current`` is now being read (None: none is); closed at once after an abort."""
        with self._lock:
            self._watch = current
            aborted = self._error is not None or self._ended
        if aborted and current is not None:
            current.close()


class Reflector:
    """Lists and watches one resource and mirrors it into ``store``, until stopped.

    ``store`` is a :class:`~kinformer.reflector.sink.ReflectorStore` (a FIFO, or any
    :class:`~kinformer.Store`): ``replace(items, resource_version)``, ``add``, ``update``,
    ``delete`` and ``resync()``; ``bookmark(rv)`` and ``update_resource_version(rv)`` are
    called when it has them, which is checked once, here. Store calls happen on the thread
    running :meth:`run`, in event order; a store error on a watch event is logged and the event
    still counts. A listed object without a string metadata.name is logged and never stored.

    :meth:`run` blocks until ``stop`` fires and returns only after joining every thread it
    started (the resync timer, the WatchList bookmark timer); stopping closes the open watch
    so ``run`` returns promptly. A Reflector runs once. Getters are thread-safe.

    Errors: every list or watch error (a failed list, a refused or failed watch start, a watch
    that ended with an error) goes to the watch error handler, ``handler(reflector, error)``
    (a raising handler is logged), and :meth:`last_error` reports it until the next successful
    list. A failed list or watch start ends the round and the next starts after one backoff
    step; a 429, a refused connection or one broken before any answer on a watch start backs
    off and watches again; a watch that
    expired, sent an ERROR event or a line that does not decode relists after one backoff step;
    a clean close, and a connection that broke (reset, cut mid-event, read timeout, a server
    restarting), re-watch at once from the last version, with no relist. An
    unexpected exception (a bug in a ListerWatcher) is logged with its traceback and handled
    like a failed list: the reflector keeps going with backoff rather than dying silently.
    Stopping during a list discards its result. A ListerWatcher whose ``list`` and ``watch``
    take a ``ctx`` (see :class:`~kinformer.ListerWatcher`; the HTTP one does) has a list or
    watch start still waiting for the server broken off by the stop; with any other, that
    request runs to its end before ``run`` returns.

    Durations (``resync_period``, ``min_watch_timeout``, ``initial_events_timeout``,
    ``max_internal_error_retry_duration``) are finite seconds and ``page_size`` a count ``>= 0``,
    else :class:`~kinformer.ConfigurationError`.

    ``transform`` (an informer's, see ``SharedIndexInformer.set_transform``) is applied once to
    every object before the store gets it, as the object arrives: a page's objects when the page
    comes (what it drops is freed while later pages still download, so their memory is reused;
    applied to a whole list at its end, the freed memory would lie scattered and unused), each
    WatchList initial event and each watch event. A transform that raises on a listed object
    fails the list (logged, retried after a backoff step); on a watch event it is logged as a
    store error is, and the watch goes on.
    """

    def __init__(
        self,
        lister_watcher: listerwatcher.ListerWatcher,
        store: sink.ReflectorStore,
        resync_period: float = 0.0,
        name: str | None = None,
        *,
        should_resync: Callable[[], bool] | None = None,
        clock: _clock.Clock = _clock.REAL_CLOCK,
        backoff: _backoff.BackoffManager | None = None,
        watch_error_handler: WatchErrorHandler | None = None,
        page_size: int = 0,
        use_watch_list: bool = False,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        random: Callable[[], float] | None = None,
        initial_events_timeout: float = INITIAL_EVENTS_TIMEOUT,
        max_internal_error_retry_duration: float = 0.0,
        shard_selector: sharding.ShardSelector | None = None,
        transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self._lw = listerwatcher.with_context(lister_watcher)
        self._transform = transform
        self._store = sink.Sink.of(store)
        self._resync_period = _checks.seconds("resync_period", resync_period)
        self.name = name or _caller_name()
        self._should_resync = should_resync
        self._clock = clock
        self._rand: Callable[[], float] = random if random is not None else _random.random
        self._backoff = backoff or _backoff.BackoffManager(clock=clock, random=self._rand)
        self._error_handler: WatchErrorHandler = watch_error_handler or default_watch_error_handler
        self._page_size = _checks.integer("page_size", page_size, minimum=0)
        self._use_watch_list = use_watch_list
        self._min_watch_timeout = max(
            MIN_WATCH_TIMEOUT, _checks.seconds("min_watch_timeout", min_watch_timeout))
        self._initial_events_timeout = _checks.seconds(
            "initial_events_timeout", initial_events_timeout, positive=True)
        self._max_internal_retry = _checks.seconds(
            "max_internal_error_retry_duration", max_internal_error_retry_duration)
        self._metrics = _metrics.ReflectorMetrics(self.name)  # lists, watches, errors counters

        self._last_version = watch.LastVersion()  # written by the run thread only; read without a lock
        # a ListWatch.for_resource(shard_selector=...) brings its shard: the one to go back to
        self._base_shard: sharding.ShardSelector | None = None
        if isinstance(lister_watcher, listerwatcher.DescribedListerWatcher):
            self._base_shard = lister_watcher.shard_selector
        self._lock = threading.Lock()  # guards the fields below
        self._last_error: BaseException | None = None
        self._synced_once = False
        self._started = False
        self._shard = shard_selector if shard_selector is not None else self._base_shard
        self._reshard = False  # the shard changed: relist at once with the new one
        self._round_abort: _WatchAbort | None = None  # the open round's, to end it on a reshard
        self._server_side_sharding: bool | None = None  # what the last list said
        self._said_client_side = False
        # only touched by the run thread:
        self._rv_unavailable = False  # the last version is gone or too new: list or stream at ""
        self._paginated_result = False  # a list at "0" came in pages: keep paging relists
        self._internal_error_first = 0.0
        self._internal_error_last: float | None = None

    # -- public getters ---------------------------------------------------------------------

    def last_sync_resource_version(self) -> str:
        """The resourceVersion last listed or seen on the watch ("" before the first list)."""
        return self._last_version.value

    def last_error(self) -> BaseException | None:
        """The last list or watch error; cleared by the next successful list."""
        with self._lock:
            return self._last_error

    def backoff_remaining(self) -> float | None:
        """Seconds until the next list or watch attempt while backing off after an error; else None."""
        return self._backoff.remaining()

    def has_synced_once(self) -> bool:
        """True once a list (or a WatchList's initial events) reached the store."""
        with self._lock:
            return self._synced_once

    def shard_selector(self) -> sharding.ShardSelector | None:
        """The shard this reflector lists and watches, or None for everything."""
        with self._lock:
            return self._shard

    def server_side_sharding(self) -> bool | None:
        """Whether the server sharded the last list (True) or the reflector filters (False).

        None before the first list or without a shard selector.
        """
        with self._lock:
            return self._server_side_sharding if self._shard is not None else None

    def set_shard_selector(self, selector: sharding.ShardSelector | None) -> None:
        """List and watch ``selector``'s shard from now on; None: the ListerWatcher's own, if any.

        While running, a change ends the open watch and relists at once with the new selector,
        without a backoff step; the store then holds exactly the new shard.
        :meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>` empties the store instead
        and sends nothing until the next change.
        """
        with self._lock:
            new = selector if selector is not None else self._base_shard
            if new == self._shard:
                return
            self._shard = new
            self._server_side_sharding = None
            self._reshard = True
            abort = self._round_abort
        if sharding.is_empty(new):
            log.info("reflector %s: shard is now empty; dropping every object", self.name)
        else:
            log.info("reflector %s: shard is now %s; relisting", self.name, new or "everything")
        if abort is not None:
            abort.end_round()

    def _take_reshard(self) -> bool:
        """Whether the shard changed since the last call (and forget it)."""
        with self._lock:
            reshard, self._reshard = self._reshard, False
            return reshard

    def _shard_text(self) -> str:
        shard = self.shard_selector()
        return "" if shard is None else str(shard)

    def _client_filter(self) -> Any:
        """``ShardSelector.matches`` when events must be filtered here, else None."""
        with self._lock:
            shard, server_side = self._shard, self._server_side_sharding
        return None if shard is None or server_side else shard.matches

    def set_watch_error_handler(self, handler: WatchErrorHandler) -> None:
        """Set ``handler(reflector, error)``, called with each error that ends a round.

        Only before :meth:`run`; afterwards raises :class:`~kinformer.AlreadyStartedError`.
        """
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"reflector {self.name} already started")
            self._error_handler = handler

    def __repr__(self) -> str:
        return f"<Reflector {self.name} rv={self.last_sync_resource_version()!r}>"

    # -- run loop (client-go Run, ListAndWatch) ----------------------------------------------

    def run(self, stop: _context.StopSignal) -> None:
        """List and watch until ``stop`` fires (a Context or a threading.Event); blocks.

        Raises :class:`~kinformer.AlreadyStartedError` on a second call.
        """
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"reflector {self.name} already started")
            self._started = True
        ctx = _context.as_context(stop)
        log.debug("reflector %s: starting", self.name)
        while not ctx.cancelled():
            try:
                self.list_and_watch(ctx)
            except _StopRequested:
                break
            except Exception as exc:
                if ctx.cancelled():
                    break
                if not isinstance(exc, (errors.KinformerError, OSError)):
                    log.exception("reflector %s: unexpected error, backing off", self.name)
                self._record_error(exc)
            if self._take_reshard():
                continue  # a new shard: list it at once
            if self._backoff.wait(ctx):
                break
        log.debug("reflector %s: stopped", self.name)

    def list_and_watch(self, ctx: _context.Context) -> None:
        """One round: the initial sync (WatchList or LIST), then watches until one ends badly.

        Returns normally when a watch ended in a way that calls for a relist; raises the error
        when the list or a watch start failed. Blocks; runs on the caller's thread, with the
        resync timer on its own thread for the length of the round.
        """
        self._take_reshard()  # this round lists the shard as it is now
        if sharding.is_empty(self.shard_selector()):
            self._own_nothing(ctx)
            return
        opened = self._watch_list(ctx) if self._use_watch_list else None
        if opened is None:
            self._list(ctx)
        abort = _WatchAbort()
        with self._lock:
            self._round_abort = abort
            if self._reshard:  # the shard changed during the list: this round ends at once
                abort.end_round()
        done = threading.Event()
        resync_thread = None
        if self._resync_period > 0:
            resync_thread = _threads.spawn(
                self._resync_loop, _threads.thread_name("resync", self.name), ctx, done, abort
            )
        try:
            self._watch(ctx, opened, abort)
        finally:
            with self._lock:
                self._round_abort = None
            done.set()
            if resync_thread is not None:
                _threads.join_all([resync_thread])

    def _own_nothing(self, ctx: _context.Context) -> None:
        """A round on the empty shard: empty the store, then send nothing until the shard changes.

        The store is replaced with no objects at the last version seen, as a list of an empty
        shard would (so an informer reports what it held as deleted, and counts as synced);
        no list or watch goes to the server. Returns when the shard changes or ``ctx`` is
        cancelled.
        """
        try:
            self._store.replace([], self.last_sync_resource_version())
        except Exception as exc:
            log.warning("reflector %s: unable to empty the store: %s", self.name, exc)
            raise errors.KinformerError(
                f"reflector {self.name}: unable to empty the store: {exc}") from exc
        with self._lock:
            self._last_error = None
            self._synced_once = True
        changed = threading.Event()
        abort = _WatchAbort(on_end=changed.set)
        with self._lock:
            self._round_abort = abort
            if self._reshard:
                changed.set()
        handle = ctx.on_cancel(changed.set)
        try:
            changed.wait()
        finally:
            handle.remove()
            with self._lock:
                self._round_abort = None

    def _record_error(self, exc: BaseException) -> None:
        """Remember ``exc`` as the last error and show it to the watch error handler."""
        self._metrics.errors.inc()
        with self._lock:
            self._last_error = exc
        try:
            self._error_handler(self, exc)
        except Exception:
            log.exception("reflector %s: watch error handler failed", self.name)

    def _mark_synced(self, rv: str) -> None:
        """A list, or a WatchList's initial events, reached the store at ``rv``."""
        self._last_version.value = rv
        self._metrics.lists.inc()
        with self._lock:
            self._last_error = None
            self._synced_once = True

    # -- LIST (client-go list, relistResourceVersion) -----------------------------------------

    def _relist_resource_version(self) -> str:
        """The version a list asks for: "" after one was gone or too new, "0" at first, else the last."""
        if self._rv_unavailable:
            return ""
        return self.last_sync_resource_version() or "0"

    def _list(self, ctx: _context.Context) -> None:
        """List everything and replace the store's content with it; raises what the list failed with."""
        rv = self._relist_resource_version()
        # no collection from the list's first decode until the list is queued: a big list
        # allocates millions of objects and frees none, and the collector would walk them
        # repeatedly; the request itself, waiting on the network, runs with the collector on
        with _gc.hold_first_pause():
            self._list_and_replace(ctx, rv)

    def _list_and_replace(self, ctx: _context.Context, rv: str) -> None:
        """List at ``rv`` (at "" once more when ``rv`` is gone, too new or refused), then replace."""
        try:
            pages = self._list_pages(ctx, rv)
        except _StopRequested:
            raise
        except Exception as exc:
            if ctx.cancelled():
                raise _StopRequested() from exc
            if not (_version_unavailable(exc) or _refused_version(exc, rv)):
                log.warning("reflector %s: list at rv=%r failed: %s", self.name, rv, exc)
                raise
            log.warning(
                "reflector %s: list at rv=%r: %s; listing again at the current version",
                self.name,
                rv,
                exc,
            )
            self._rv_unavailable = True
            rv = ""
            try:
                pages = self._list_pages(ctx, rv)
            except Exception as exc2:
                if ctx.cancelled():
                    raise _StopRequested() from exc2
                log.warning("reflector %s: list at rv='' failed: %s", self.name, exc2)
                raise
        if ctx.cancelled():
            raise _StopRequested()
        result = pages.result
        if rv == "0" and pages.paginated:
            self._paginated_result = True
        self._rv_unavailable = False
        log.debug(
            "reflector %s: listed %d items at rv=%s", self.name, len(result.items), result.resource_version
        )
        items = self._in_shard(result)
        if not result.checked:  # the HTTP lister checked every item already
            items = _named_items(items, self.name)
        try:
            self._store.replace(items, result.resource_version)
        except Exception as exc:
            log.warning("reflector %s: unable to sync list result: %s", self.name, exc)
            raise errors.KinformerError(
                f"reflector {self.name}: unable to sync list result: {exc}"
            ) from exc
        self._mark_synced(result.resource_version)

    def _in_shard(self, result: listerwatcher.ListResult) -> list[Any]:
        """The listed items of this reflector's shard; filtered here when the server did not.

        A server that shards echoes the selector as the list's ``shardInfo``; one without the
        feature ignores the selector and sends everything, which is then filtered with the
        same hash (said once, at INFO).
        """
        with self._lock:
            shard = self._shard
            if shard is None:
                self._server_side_sharding = None
                return result.items
            server_side = result.shard_info is not None
            self._server_side_sharding = server_side
            tell = not server_side and not self._said_client_side
            if tell:
                self._said_client_side = True
        if server_side:
            return result.items
        if tell:
            log.info(
                "reflector %s: the server does not shard lists (no shardInfo); "
                "filtering %s on the client", self.name, shard)
        matches = shard.matches
        return [obj for obj in result.items if matches(obj)]

    def _list_pages(self, ctx: _context.Context, rv: str) -> pager.Pages:
        """All pages of one list at ``rv``; raises _StopRequested when stopped between pages."""
        limit = pager.page_size(self._page_size, self._paginated_result, rv)
        on_page = None if self._transform is None else self._transformed
        pages = pager.list_all(self._lw, rv, limit, ctx, self.name, self._shard_text(), on_page)
        if pages is None:
            raise _StopRequested()
        return pages

    def _transformed(self, page: listerwatcher.ListResult) -> list[Any]:
        """A page's objects through the transform, as the page arrives; an object without a
        name is left as it is, for the check after the list to skip.

        Under a collector pause, which :meth:`_list`'s ``hold_first_pause`` keeps until the
        list is stored, whether or not the ListerWatcher paused for its decode.
        """
        transform = self._transform
        assert transform is not None
        try:
            with _gc.paused():
                if page.checked:  # the usual HTTP page: every object checked already
                    return [transform(obj) for obj in page.items]
                fit = meta.is_well_formed
                return [transform(obj) if fit(obj) or meta.has_name(obj) else obj
                        for obj in page.items]
        except Exception as exc:
            raise errors.KinformerError(
                f"reflector {self.name}: transform failed on a listed object: {exc}") from exc

    # -- WATCH (client-go watch, handleWatch) ------------------------------------------------

    def _watch_options(self, rv: str) -> listerwatcher.ListOptions:
        """A watch from ``rv`` with bookmarks and a timeout in [min, 2*min) seconds."""
        low = self._min_watch_timeout
        return listerwatcher.ListOptions(
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=int(low + self._rand() * low),
            shard_selector=self._shard_text(),
        )

    def _watch(self, ctx: _context.Context, opened: watch.OpenWatch | None, abort: _WatchAbort) -> None:
        """Watch from the last version until a watch ends in a way that calls for a relist.

        ``opened`` is a WatchList stream to read on, or None. A clean close, or a dropped
        connection, watches again at once from the last version (a watch that ends so within
        a second with no event is very short, and relists after a backoff step); a refused
        connection or a 429 backs off and watches again; a 500 is watched
        again at once within ``max_internal_error_retry_duration``. Returns (relist) on
        anything else, or when stopped; raises when a watch could not start.
        """
        continued = opened is not None  # a WatchList stream: its versions count at once
        while not ctx.cancelled():
            if (abort.ended or abort.error is not None) and opened is not None:
                opened.watch.close()  # a WatchList stream not read on
            if abort.ended:  # the shard changed: relist it
                return
            if abort.error is not None:  # the resync timer failed while no watch was open
                self._record_error(abort.error)
                log.warning("reflector %s: resync failed; relisting", self.name)
                return
            if opened is None:
                rv = self.last_sync_resource_version()
                try:
                    opened = watch.open_watch(self._lw, self._watch_options(rv), ctx, self._clock)
                except Exception as exc:
                    if ctx.cancelled():
                        return
                    if not _backs_off(exc):
                        log.warning("reflector %s: watch start failed: %s", self.name, exc)
                        raise
                    self._record_error(exc)
                    log.warning("reflector %s: watch start failed: %s; backing off", self.name, exc)
                    if self._backoff.wait(ctx):
                        return
                    continue
                self._metrics.watches.inc()
                propagate_now = rv not in ("", "0")
            else:
                propagate_now = True
            abort.attach(opened.watch)
            try:
                end = watch.handle_any_watch(
                    ctx,
                    opened,
                    self._store,
                    self.name,
                    self._last_version,
                    propagate_now=propagate_now,
                    keep=self._client_filter(),
                    transform=self._transform,
                )
            finally:
                abort.attach(None)
                opened.watch.close()
            if end.outcome is _Outcome.STOPPED or ctx.cancelled() or abort.ended:
                return
            error = abort.error
            if end.outcome is _Outcome.DROPPED:
                if error is None:
                    log.info(
                        "reflector %s: watch dropped (%s); watching again from rv=%s",
                        self.name,
                        end.error,
                        self.last_sync_resource_version(),
                    )
            elif error is None:
                error = end.error
            if error is None and self._very_short(end, opened, continued):
                error = errors.VeryShortWatchError(
                    f"reflector {self.name}: watch closed within {VERY_SHORT_WATCH}s with no events"
                )
            opened, continued = None, False
            if error is None:
                continue  # closed cleanly: watch again from the last version, at once
            self._record_error(error)
            if errors.is_expired(error):
                log.warning("reflector %s: watch expired (%s); relisting", self.name, error)
                return
            if isinstance(error, errors.TooManyRequestsError):
                log.warning("reflector %s: watch got 429; backing off", self.name)
                if self._backoff.wait(ctx):
                    return
                continue
            if self._retry_internal_error(error):
                log.warning("reflector %s: watch got %s; watching again", self.name, error)
                continue
            log.warning("reflector %s: watch ended: %s; relisting", self.name, error)
            return

    def _very_short(self, end: watch.WatchEnd, opened: watch.OpenWatch, continued: bool) -> bool:
        """Whether a cleanly closed watch ended within a second of its start without an event.

        The server closes a healthy watch only at its timeout, so this means trouble, and the
        reflector relists after a backoff step instead of hammering it with watches. A stream
        continued from a WatchList has delivered its initial events and is never very short.
        """
        return (
            end.events == 0
            and not continued
            and self._clock.now() - opened.started < VERY_SHORT_WATCH
        )

    def _retry_internal_error(self, error: BaseException) -> bool:
        """True when a watch that ended with HTTP 500 should simply be re-established.

        Only with ``max_internal_error_retry_duration`` > 0: 500s are retried in place while the
        first of a run of them is younger than that; a minute without one starts a new run.
        """
        if self._max_internal_retry <= 0:
            return False
        if not isinstance(error, errors.APIError) or error.status != 500:
            return False
        now = self._clock.now()
        last = self._internal_error_last
        if last is None or now - last > INTERNAL_ERROR_WINDOW_RESET:
            self._internal_error_first = now
        self._internal_error_last = now
        return now - self._internal_error_first < self._max_internal_retry

    # -- WatchList (client-go watchList, handleListWatch) -------------------------------------

    def _watch_list(self, ctx: _context.Context) -> watch.OpenWatch | None:
        """Stream the initial state through a watch into the store; the open watch, or None.

        The watch asks for ``sendInitialEvents`` and its events build up in a temporary store
        until the end bookmark, whose version the store is then replaced at; the same watch is
        read on by :meth:`_watch`. A refused connection or a 429 backs off and streams again;
        a version gone or too new streams again at once from the current one, as does a stream
        closed cleanly or dropped before its end bookmark. Anything else, a stream that ends at
        once, or no end bookmark within ``initial_events_timeout`` returns None: list instead.
        """
        while not ctx.cancelled():
            rv = "" if self._rv_unavailable else self.last_sync_resource_version()
            options = dataclasses.replace(
                self._watch_options(rv), resource_version_match="NotOlderThan", send_initial_events=True
            )
            try:
                opened = watch.open_watch(self._lw, options, ctx, self._clock)
            except Exception as exc:
                if ctx.cancelled():
                    raise _StopRequested() from exc
                self._record_error(exc)
                if _backs_off(exc):
                    log.warning("reflector %s: watch-list start failed: %s; backing off", self.name, exc)
                    if self._backoff.wait(ctx):
                        raise _StopRequested() from exc
                    continue
                if _version_unavailable(exc):
                    self._rv_unavailable = True
                    continue
                log.warning("reflector %s: watch-list failed: %s; listing instead", self.name, exc)
                return None
            self._metrics.watches.inc()
            # as over a list: no collection while the initial events pile up and go to the
            # store, where the informer holds a pause of its own until they are applied
            with _gc.paused():
                temporary = _store.new_store(_store.deletion_handling_meta_namespace_key_func)
                end = watch.handle_initial_events(
                    ctx, opened, sink.Sink.of(temporary), self.name, self._clock,
                    self._initial_events_timeout, keep=self._client_filter(), transform=self._transform,
                )
                if end.outcome is _Outcome.INITIAL_EVENTS_END:
                    objects = temporary.list()
                    try:
                        self._store.replace(objects, end.resource_version)
                    except Exception as exc:
                        opened.watch.close()
                        self._record_error(exc)
                        log.warning(
                            "reflector %s: unable to sync watch-list result: %s; listing instead",
                            self.name,
                            exc,
                        )
                        return None
                    self._rv_unavailable = False
                    self._mark_synced(end.resource_version)
                    log.debug(
                        "reflector %s: watch-list synced %d items at rv=%s",
                        self.name,
                        len(objects),
                        end.resource_version,
                    )
                    return opened
            opened.watch.close()
            if end.outcome is _Outcome.STOPPED or ctx.cancelled():
                raise _StopRequested()
            if end.outcome in (_Outcome.CLOSED, _Outcome.DROPPED):
                how = "closed" if end.outcome is _Outcome.CLOSED else f"dropped ({end.error})"
                if end.events > 0 or self._clock.now() - opened.started >= VERY_SHORT_WATCH:
                    log.warning(
                        "reflector %s: watch-list %s before its end bookmark; retrying", self.name, how
                    )
                    continue
                log.warning("reflector %s: watch-list %s at once; listing instead", self.name, how)
                return None
            assert end.error is not None  # FAILED or TIMED_OUT
            self._record_error(end.error)
            if end.outcome is _Outcome.FAILED and _version_unavailable(end.error):
                self._rv_unavailable = True
                continue
            log.warning("reflector %s: watch-list ended: %s; listing instead", self.name, end.error)
            return None
        raise _StopRequested()

    # -- resync (client-go startResync) ------------------------------------------------------

    def _resync_loop(self, ctx: _context.Context, done: threading.Event, abort: _WatchAbort) -> None:
        """Every resync period, ask ``should_resync`` and resync the store; an error ends the watch."""
        while not ctx.cancelled() and not done.is_set():
            if self._clock.wait(done, self._resync_period) or ctx.cancelled():
                return
            if self._should_resync is not None:
                try:
                    wanted = self._should_resync()
                except Exception as exc:
                    log.exception("reflector %s: should_resync failed", self.name)
                    abort.abort(exc)
                    return
                if not wanted:
                    continue
            log.debug("reflector %s: resync", self.name)
            try:
                self._store.resync()
            except Exception as exc:
                log.warning("reflector %s: resync failed: %s", self.name, exc)
                abort.abort(exc)
                return


def _caller_name() -> str:
    """``file.py:line`` of the code constructing a Reflector (client-go's default name)."""
    try:
        frame = sys._getframe(2)
    except ValueError:
        return "reflector"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
