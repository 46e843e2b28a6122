"""Reflector: keeps a store equal to one resource on the server by listing, then watching.

client-go's ``tools/cache/reflector.go``. The :class:`Reflector` pulls from a
:class:`~kinformer.ListerWatcher` and pushes into a store (a :class:`~kinformer.DeltaFIFO`
inside an informer, or an :class:`~kinformer.Indexer`) with client-go's rules: the first list at
resourceVersion "0", relists at the last version seen, a consistent list at "" when a version is
too old, re-watching without a relist after a clean close or a dropped connection, bookmarks,
randomized watch timeouts, the very-short-watch rule, and jittered exponential backoff from
:mod:`kinformer.backoff`. Optionally it streams the initial state through a watch
(``sendInitialEvents``), falling back to a list when that does not work.

This module holds the Reflector itself: its state and getters, the run loop (``Run``,
``ListAndWatch``), a round on the empty shard, and the resync timer (``startResync``). Its parts
are beside it: the list and relist rules (:mod:`~kinformer.reflector.listing`, over the pages of
:mod:`~kinformer.reflector.pager`), the WatchList initial sync
(:mod:`~kinformer.reflector.watch_list`), the watch loop and how each watch's end is answered
(:mod:`~kinformer.reflector.watch_loop`), the one handler every watch's events go through
(:mod:`~kinformer.reflector.watch`), the shard it carries (:mod:`~kinformer.reflector.shard_state`),
what a failure means (:mod:`~kinformer.reflector.failures`) and what it writes to
(:mod:`~kinformer.reflector.sink`).
"""

from __future__ import annotations

import logging
import os
import random as _random
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from kinformer import _checks, _threads, errors, sharding
from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.client import listerwatcher
from kinformer.metrics import provider as _metrics
from kinformer.reflector import failures, listing, shard_state, sink, watch_events, watch_list, watch_loop
from kinformer.reflector import shared as _shared

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

MIN_WATCH_TIMEOUT = 300.0  # watches time out server-side after [min, 2*min) seconds
INITIAL_EVENTS_TIMEOUT = 60.0  # WatchList: give up on a stream this long without an event; list

WatchErrorHandler = Callable[["Reflector", BaseException], None]


def default_watch_error_handler(reflector: Reflector, error: BaseException) -> None:
    """The handler used when none is set: a DEBUG line.

    The reflector itself logs each error at WARNING where it happens, together with what it
    does next (backing off, relisting), so the default handler adds nothing louder.
    """
    log.debug("reflector %s: list/watch error: %r", reflector.name, error)


class Reflector:
    """Lists and watches one resource and mirrors it into ``store``, until stopped.

    ``store`` is a :class:`~kinformer.reflector.sink.ReflectorStore` (a FIFO, or any
    :class:`~kinformer.Store`): ``replace(items, resource_version)``, ``add``, ``update``,
    ``delete`` and ``resync()``; ``bookmark(rv)``, ``update_resource_version(rv)``,
    ``add_batch`` and ``replace_listed`` are called when it has them, which is checked once,
    here (:meth:`Sink.of <kinformer.reflector.sink.Sink.of>`), or a ready
    :class:`~kinformer.reflector.sink.Sink`, taken as it is. Store calls happen on the thread
    running :meth:`run`, in event order; a store error on a watch event is logged and the event
    still counts. A listed object without a string metadata.name is logged and never stored.

    :meth:`run` blocks until ``stop`` fires and returns only after joining every thread it
    started (the resync timer, the WatchList bookmark timer); stopping closes the open watch
    so ``run`` returns promptly. A Reflector runs once. Getters are thread-safe.

    Errors: a ListerWatcher that says ``reports_failures`` (a member cluster's,
    :class:`~kinformer.client.listerwatcher.DescribedListerWatcher`)
    reports failures itself, and the reflector then logs the expected ones (a connection
    refused, reset or silent, a 410, a very short watch) at DEBUG instead of WARNING.
    Every list or watch error (a failed list, a refused or failed watch start, a watch
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

    With ``use_watch_list`` the first state of each round comes as a watch's initial events
    (``sendInitialEvents``, :mod:`~kinformer.reflector.watch_list`), and a stream is read for
    as long as it keeps sending: it is given up on, and the round lists instead, when no object
    came for ``initial_events_timeout`` seconds before the end bookmark (a stalled stream), or
    when the bookmark has not come by the watch's own ``timeoutSeconds`` (``min_watch_timeout``
    to twice that, when the server ends the watch anyway: a server that sends events but
    ignores ``sendInitialEvents``). Silence is timed from a look at the count of objects taken
    at least every quarter of ``initial_events_timeout`` (and every 10 s), so it is noticed
    up to a quarter of it late. While it waits, a WARNING every 10 s says for how long and how
    many objects came so far. A stream given up on so shows a server that may never end one:
    the relists of the next 10 minutes (``watch_list.LIST_AFTER_NO_END``) list without
    streaming first. Any other fallback (a refused stream, an ERROR event) streams again at
    the next relist, as client-go does.

    Durations (``resync_period``, ``min_watch_timeout``, ``initial_events_timeout``,
    ``max_internal_error_retry_duration``) are finite seconds and ``page_size`` a count ``>= 0``,
    else :class:`~kinformer.ConfigurationError`.

    ``transform`` (an informer's, see ``SharedIndexInformer.set_transform``) is applied once to
    every object before the store gets it, as the object arrives: a page's objects when the page
    comes, and from the HTTP lister a page's objects a decoded chunk at a time, before the next
    chunk is decoded (what it drops is freed while the rest of the list waits, so its memory is
    reused; applied to a whole list at its end, the freed memory would lie scattered and
    unused), each WatchList initial event and each watch event. A transform that raises on a listed object
    fails the list (logged, retried after a backoff step); on a watch event it is logged as a
    store error is, and the watch goes on.
    """

    def __init__(
        self,
        lister_watcher: listerwatcher.ListerWatcher,
        store: sink.ReflectorStore | sink.Sink,
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
        self._resync_period = _checks.seconds("resync_period", resync_period)
        self.name = name or _caller_name()
        self._should_resync = should_resync
        self._clock = clock
        self._rand: Callable[[], float] = random if random is not None else _random.random
        self._backoff = backoff or _backoff.BackoffManager(clock=clock, random=self._rand)
        self._error_handler: WatchErrorHandler = watch_error_handler or default_watch_error_handler
        page_size = _checks.integer("page_size", page_size, minimum=0)
        min_watch_timeout = max(
            MIN_WATCH_TIMEOUT, _checks.seconds("min_watch_timeout", min_watch_timeout))
        initial_events_timeout = _checks.seconds(
            "initial_events_timeout", initial_events_timeout, positive=True)
        max_internal_retry = _checks.seconds(
            "max_internal_error_retry_duration", max_internal_error_retry_duration)
        self._metrics = _metrics.ReflectorMetrics(self.name)  # lists, watches, errors counters
        # their series go when run() ends, or with a reflector dropped without running
        weakref.finalize(self, self._metrics.remove)

        self._store = sink.Sink.of(store)  # its optional methods looked up once, here
        self._version = watch_events.LastVersion()  # written by the run thread only; read without a lock
        # a ListWatch.for_resource(shard_selector=...) brings its shard: the one to go back to
        described = listerwatcher.describe(lister_watcher)
        base = described.shard_selector
        self._shard = shard_state.ShardState(self.name, base, shard_selector)
        self._lock = threading.Lock()  # guards the fields below
        self._last_error: BaseException | None = None
        self._synced_once = False
        self._started = False
        self._round: watch_loop.WatchAbort | None = None  # the round under way, between rounds None
        self._failure: BaseException | None = None  # fail_round's error, kept for the next round
        # the parts, each run by the run thread only
        shared = _shared.Shared(
            listerwatcher.with_context(lister_watcher), self._store, self._shard, self._version,
            self.name, clock, self._backoff, self._metrics, transform, self._record_error,
            self._mark_synced, self._clear_error, min_watch_timeout, self._rand,
            described.reports_failures)
        self._lister = listing.Lister(shared, page_size)
        self._watch_list = (watch_list.WatchListSync(shared, initial_events_timeout)
                            if use_watch_list else None)
        self._watch_loop = watch_loop.WatchLoop(shared, max_internal_retry)

    # -- public getters ---------------------------------------------------------------------

    def last_sync_resource_version(self) -> str:
        """The resourceVersion last listed or seen on the watch ("" before the first list)."""
        return self._version.value

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
        return self._shard.selector()

    def server_side_sharding(self) -> bool | None:
        """Whether the server sharded the last list (True) or the reflector filters (False).

        None before the first list or without a shard selector.
        """
        return self._shard.server_side_sharding()

    def set_shard_selector(self, selector: sharding.ShardSelector | None) -> None:
        """List and watch ``selector``'s shard from now on; None: the ListerWatcher's own, if any.

        While running, a change ends the open watch and relists at once with the new selector,
        without a backoff step; the store then holds exactly the new shard.
        :meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>` empties the store instead
        and sends nothing until the next change.
        """
        self._shard.set(selector)

    def fail_round(self, error: BaseException) -> None:
        """End the round under way with ``error``, from any thread (its owner found the store
        wrong, as an informer that merged two logical clusters' objects does).

        The open watch is closed, ``error`` is recorded (:meth:`last_error`, the watch error
        handler) and the reflector relists after a backoff step. Called between rounds, the
        next round ends so as soon as its list is done; only the first error is kept.
        """
        with self._lock:
            current = self._round
            if current is None:
                self._failure = self._failure or error
                return
        current.abort(error)

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
        try:
            self._run(ctx)
        finally:
            self._metrics.remove()  # the counters' series go unless another reflector holds them
        log.debug("reflector %s: stopped", self.name)

    def _run(self, ctx: _context.Context) -> None:
        while not ctx.cancelled():
            failed: Exception | None = None
            try:
                self.list_and_watch(ctx)
            except failures.StopRequested:
                break
            except Exception as exc:
                if ctx.cancelled():
                    break
                if not isinstance(exc, (errors.KinformerError, OSError)):
                    log.exception("reflector %s: unexpected error, backing off", self.name)
                self._record_error(exc)
                failed = exc
            if self._shard.take_reshard():
                continue  # a new shard: list it at once
            if self._backoff.wait(ctx, errors.retry_after(failed)):  # a 429's Retry-After at least
                break

    def list_and_watch(self, ctx: _context.Context) -> None:
        """One round: the initial sync (WatchList or LIST), then watches until one ends badly.

        Returns normally when a watch ended in a way that calls for a relist; raises the error
        when the list or a watch start failed. Blocks; runs on the caller's thread, with the
        resync timer on its own thread for the length of the round.
        """
        self._shard.take_reshard()  # this round lists the shard as it is now
        if sharding.is_empty(self._shard.selector()):
            self._own_nothing(ctx)
            return
        opened = self._watch_list.sync(ctx) if self._watch_list is not None else None
        if opened is None:
            self._lister.sync(ctx)
        abort = watch_loop.WatchAbort()
        with self._lock:  # fail_round reaches this round from now on
            self._round, failure, self._failure = abort, self._failure, None
        if failure is not None:
            abort.abort(failure)
        self._shard.open_round(abort.end_round)  # a shard changed during the list ends it at once
        done = threading.Event()
        resync_thread = None
        if self._resync_period > 0:
            resync_thread = _threads.spawn(
                self._resync_loop, _threads.thread_name("resync", self.name), ctx, done, abort
            )
        try:
            self._watch_loop.run(ctx, opened, abort)
        finally:
            with self._lock:
                self._round = None
            self._shard.close_round()
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
        self._shard.open_round(changed.set)
        handle = ctx.on_cancel(changed.set)
        try:
            changed.wait()
        finally:
            handle.remove()
            self._shard.close_round()

    def _record_error(self, exc: BaseException) -> None:
        """Remember ``exc`` as the last error and show it to the watch error handler."""
        self._metrics.errors.inc()
        with self._lock:
            self._last_error = exc
        try:
            self._error_handler(self, exc)
        except Exception:
            log.exception("reflector %s: watch error handler failed", self.name)

    def _clear_error(self) -> None:
        """A list, or a WatchList's initial events, came whole: the store is handed them next."""
        with self._lock:
            self._last_error = None

    def _mark_synced(self, rv: str) -> None:
        """A list, or a WatchList's initial events, reached the store at ``rv`` (the last error
        was cleared as they were handed to it: :meth:`_clear_error`)."""
        self._version.value = rv
        self._metrics.lists.inc()
        with self._lock:
            self._synced_once = True

    # -- resync (client-go startResync) ------------------------------------------------------

    def _resync_loop(
        self, ctx: _context.Context, done: threading.Event, abort: watch_loop.WatchAbort
    ) -> None:
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
