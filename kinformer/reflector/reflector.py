"""Reflector: keeps a store equal to one resource on the server by listing, then watching.

The :class:`Reflector` pulls from a :class:`~kinformer.ListerWatcher` and pushes into
a store (a :class:`~kinformer.DeltaFIFO` inside an informer, or an
:class:`~kinformer.Indexer`) with client-go's rules: the first list at resourceVersion
"0", relists at the last version seen, a consistent list at "" when a version is too old,
pagination with a full-list fallback, re-watching without a relist after a clean close,
bookmarks, randomized watch timeouts, and jittered exponential backoff from
:mod:`kinformer.backoff`. Optionally it streams the initial state through a watch
(``sendInitialEvents``), falling back to a list when that does not work.

This module holds the Reflector itself: its state and getters, the run loop, the list and relist
rules, and the resync timer. Its parts live beside it: the watch loop and what the parts share
in :mod:`kinformer.reflector.watch`, the WatchList initial sync in :mod:`kinformer.reflector.watchlist`,
pagination in :mod:`kinformer.reflector.pager`.
"""

from __future__ import annotations

import logging
import os
import random as _random
import sys
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _gc, _threads, errors
from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.client import listwatch
from kinformer.reflector import pager, watchlist
from kinformer.reflector import watch as reflector_watch

log = logging.getLogger(__name__)

# defined beside the part that uses each, importable from here as before
DEFAULT_PAGE_SIZE = pager.DEFAULT_PAGE_SIZE
MIN_WATCH_TIMEOUT = reflector_watch.MIN_WATCH_TIMEOUT
VERY_SHORT_WATCH = reflector_watch.VERY_SHORT_WATCH
INITIAL_EVENTS_TIMEOUT = watchlist.INITIAL_EVENTS_TIMEOUT
INITIAL_EVENTS_WARN_EVERY = watchlist.INITIAL_EVENTS_WARN_EVERY
INTERNAL_ERROR_WINDOW_RESET = reflector_watch.INTERNAL_ERROR_WINDOW_RESET

WatchErrorHandler = Callable[["Reflector", BaseException], None]


def default_watch_error_handler(reflector: Reflector, error: BaseException) -> None:
    """The handler used when none is set: a DEBUG line.

    The reflector itself logs each error at WARNING where it happens, together with what it
    does next (backing off, relisting), so the default handler adds nothing louder.
    """
    log.debug("reflector %s: list/watch error: %r", reflector.name, error)


def _caller_name() -> str:
    """``file.py:line`` of the code constructing a Reflector (client-go's default name)."""
    try:
        frame = sys._getframe(2)
    except ValueError:
        return "reflector"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"

def _refused_version(exc: BaseException, rv: str) -> bool:
    """Whether a list at ``rv`` got 400 for a version the server cannot read.

    A watch event may carry a resourceVersion that is a string but not one the server accepts
    back. client-go would list at it again forever; kinformer lists once at the current
    version instead, as after a 410.
    """
    return isinstance(exc, errors.BadRequestError) and rv not in ("", "0")


def _named_items(items: Any, name: str) -> list[Any]:
    """The list items that have a name; each one without is logged and left out of the cache."""
    kept = [
        obj
        for obj in items
        if (  # the usual decoded object checked inline
            type(obj) is dict
            and type(meta := obj.get("metadata")) is dict
            and type(n := meta.get("name")) is str
            and n
        )
        or reflector_watch.has_name(obj)
    ]
    if len(kept) != len(items):
        log.warning(
            "reflector %s: %d listed objects without metadata.name; skipped",
            name,
            len(items) - len(kept),
        )
    return kept


class Reflector(watchlist.WatchListSync):
    """Lists and watches one resource and mirrors it into ``store``, until stopped.

    ``store`` is duck-typed: ``replace(items, resource_version)``, ``add``, ``update``,
    ``delete`` and ``resync()``; ``update_resource_version(rv)`` and ``bookmark(rv)`` are called
    when present. Store calls happen on the thread running :meth:`run`, in event order; a store
    error on a watch event is logged and the event still counts.

    :meth:`run` blocks until ``stop`` fires and returns only after joining every thread it
    started (the resync timer, the WatchList bookmark timer); stopping closes the open watch
    so ``run`` returns promptly. A Reflector runs once. Getters are thread-safe.

    Errors: every list or watch error (a failed list, a refused or failed watch start, a watch
    that ended with an error) goes to the watch error handler, ``handler(reflector, error)``
    (a raising handler is logged), and :meth:`last_error` reports it until the next successful
    list. A failed list or watch start ends the round and the next starts after one backoff
    step; a 429 or refused connection on a watch backs off and watches again; a watch that
    expired or broke relists after one backoff step; a clean close re-watches at once. An
    unexpected exception (a bug in a ListerWatcher) is logged with its traceback and handled
    like a failed list: the reflector keeps going with backoff rather than dying silently.
    Stopping during a list discards its result. A ListerWatcher whose ``list`` and ``watch``
    take a context (:func:`~kinformer.client.listwatch.takes_context`, as the HTTP one does) has a list
    or watch start still waiting for the server broken off by the stop; with any other, that
    request runs to its end before ``run`` returns.
    """

    def __init__(
        self,
        lister_watcher: listwatch.ListerWatcher,
        store: Any,
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
    ) -> None:
        if resync_period < 0:
            raise errors.ConfigurationError("resync_period must be >= 0")
        if page_size < 0:
            raise errors.ConfigurationError("page_size must be >= 0")
        self._lw = lister_watcher
        self._store = store
        self._resync_period = float(resync_period)
        self.name = name or _caller_name()
        self._should_resync = should_resync
        self._clock = clock
        self._rand: Callable[[], float] = random if random is not None else _random.random
        self._backoff = backoff or _backoff.BackoffManager(clock=clock, random=self._rand)
        self._error_handler: WatchErrorHandler = watch_error_handler or default_watch_error_handler
        self._page_size = page_size
        self._use_watch_list = use_watch_list
        self._min_watch_timeout = max(MIN_WATCH_TIMEOUT, float(min_watch_timeout))
        self._initial_events_timeout = initial_events_timeout
        self._max_internal_retry = max_internal_error_retry_duration

        self._lock = threading.Lock()  # guards the fields below
        self._last_rv = ""
        self._last_error: BaseException | None = None
        self._synced_once = False
        self._started = False
        # only touched by the run thread:
        self._rv_unavailable = False
        self._paginated_result = False
        self._internal_error_first = 0.0
        self._internal_error_last: float | None = None

    # -- public getters ---------------------------------------------------------------------

    def last_sync_resource_version(self) -> str:
        """The resourceVersion last listed or seen on the watch ("" before the first list)."""
        with self._lock:
            return self._last_rv

    def last_error(self) -> BaseException | None:
        """The last list or watch error; cleared by the next successful list."""
        with self._lock:
            return self._last_error

    def has_synced_once(self) -> bool:
        """True once a list (or a WatchList's initial events) reached the store."""
        with self._lock:
            return self._synced_once

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

    # -- run loop ---------------------------------------------------------------------------

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
            except reflector_watch.StopRequested:
                break
            except Exception as exc:
                if ctx.cancelled():
                    break
                if not isinstance(exc, (errors.KinformerError, OSError)):
                    log.exception("reflector %s: unexpected error, backing off", self.name)
                self._record_error(exc)
            if self._backoff.wait(ctx):
                break
        log.debug("reflector %s: stopped", self.name)

    def _record_error(self, exc: BaseException) -> None:
        """Remember ``exc`` as the last error and show it to the watch error handler."""
        with self._lock:
            self._last_error = exc
        self._call_error_handler(exc)

    def _call_error_handler(self, exc: BaseException) -> None:
        try:
            self._error_handler(self, exc)
        except Exception:
            log.exception("reflector %s: watch error handler failed", self.name)

    def list_and_watch(self, ctx: _context.Context) -> None:
        """One round: the initial sync (WatchList or LIST), then watches until one ends badly.

        Returns normally when a watch ended in a way that calls for a relist; raises the error
        when the list or a watch start failed. Blocks; runs on the caller's thread.
        """
        opened: reflector_watch.OpenWatch | None = None
        if self._use_watch_list:
            opened = self._watch_list(ctx)
        if opened is None:
            self._list(ctx)
        resync_done = threading.Event()
        resync_error: list[BaseException] = []
        current: list[reflector_watch.OpenWatch | None] = [opened]
        resync_thread = None
        if self._resync_period > 0:
            resync_thread = _threads.spawn(
                self._resync_loop,
                _threads.thread_name("resync", self.name),
                ctx,
                resync_done,
                resync_error,
                current,
            )
        try:
            self._watch_loop(ctx, opened, current, resync_error)
        finally:
            resync_done.set()
            if resync_thread is not None:
                _threads.join_all([resync_thread])

    # -- LIST -------------------------------------------------------------------------------

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        rv = self.last_sync_resource_version()
        return rv if rv else "0"

    def _list(self, ctx: _context.Context) -> None:
        rv = self._relist_resource_version()
        # no collection from the list's first decode until the list is queued: a big list
        # allocates millions of objects and frees none, and the collector would walk them
        # repeatedly; the request itself, waiting on the network, runs with the collector on
        with _gc.hold_first_pause():
            self._list_and_replace(ctx, rv)

    def _list_and_replace(self, ctx: _context.Context, rv: str) -> None:
        try:
            result, paginated = self._paged_list(ctx, rv)
        except reflector_watch.StopRequested:
            raise
        except Exception as exc:
            if ctx.cancelled():
                raise reflector_watch.StopRequested() from exc
            if not (
                errors.is_expired(exc)
                or errors.is_too_large_resource_version(exc)
                or _refused_version(exc, rv)
            ):
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
                result, paginated = self._paged_list(ctx, rv)
            except Exception as exc2:
                if ctx.cancelled():
                    raise reflector_watch.StopRequested() from exc2
                log.warning("reflector %s: list at rv='' failed: %s", self.name, exc2)
                raise
        if ctx.cancelled():
            raise reflector_watch.StopRequested()
        if rv == "0" and paginated:
            self._paginated_result = True
        self._rv_unavailable = False
        log.debug(
            "reflector %s: listed %d items at rv=%s", self.name, len(result.items), result.resource_version
        )
        try:
            items = result.items
            if type(items) is not listwatch.NamedItems:  # the HTTP lister checked its items
                items = _named_items(list(items), self.name)
            self._store.replace(items, result.resource_version)
        except Exception as exc:
            log.warning("reflector %s: unable to sync list result: %s", self.name, exc)
            raise errors.KinformerError(
                f"reflector {self.name}: unable to sync list result: {exc}"
            ) from exc
        self._mark_synced(result.resource_version)

    def _mark_synced(self, rv: str) -> None:
        """A list, or a WatchList's initial events, reached the store at ``rv``."""
        with self._lock:
            self._last_rv = rv
            self._last_error = None
            self._synced_once = True

    def _paged_list(self, ctx: _context.Context, rv: str) -> tuple[listwatch.ListResult, bool]:
        """All pages of one list (:func:`kinformer.reflector.pager.list_all`); stops between pages."""
        limit = pager.page_size(self._page_size, self._paginated_result, rv)
        listed = pager.list_all(self._lw, rv, limit, ctx.cancelled, self.name, ctx)
        if listed is None:
            raise reflector_watch.StopRequested()
        return listed

    # -- resync -----------------------------------------------------------------------------

    def _resync_loop(
        self,
        ctx: _context.Context,
        done: threading.Event,
        resync_error: list[BaseException],
        current: list[reflector_watch.OpenWatch | None],
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
                    self._abort_watch(exc, resync_error, current)
                    return
                if not wanted:
                    continue
            log.debug("reflector %s: resync", self.name)
            try:
                self._store.resync()
            except Exception as exc:
                log.warning("reflector %s: resync failed: %s", self.name, exc)
                self._abort_watch(exc, resync_error, current)
                return

    @staticmethod
    def _abort_watch(
        exc: BaseException,
        resync_error: list[BaseException],
        current: list[reflector_watch.OpenWatch | None],
    ) -> None:
        resync_error.append(exc)
        opened = current[0]
        if opened is not None:
            opened.watch.close()

