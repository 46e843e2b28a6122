"""Reflector: keeps a store equal to one resource on the server by listing, then watching.

The :class:`Reflector` pulls from a :class:`~kinformer.listwatch.ListerWatcher` and pushes into
a store (a :class:`~kinformer.delta_fifo.DeltaFIFO` inside an informer, or an
:class:`~kinformer.store.Indexer`) with client-go's rules: the first list at resourceVersion
"0", relists at the last version seen, a consistent list at "" when a version is too old,
pagination with a full-list fallback, re-watching without a relist after a clean close,
bookmarks, randomized watch timeouts, and jittered exponential backoff from
:mod:`kinformer.backoff`. Optionally it streams the initial state through a watch
(``sendInitialEvents``), falling back to a list when that does not work.
"""

from __future__ import annotations

import logging
import os
import random as _random
import sys
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _json, _threads, errors
from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer import listwatch as _lw
from kinformer import store as _store

log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 500  # client-go's pager default
MIN_WATCH_TIMEOUT = 300.0  # watches time out server-side after [min, 2*min) seconds
VERY_SHORT_WATCH = 1.0  # a watch closing sooner than this with no events means trouble
INITIAL_EVENTS_TIMEOUT = 60.0  # WatchList: give up on the end bookmark and list instead
INITIAL_EVENTS_WARN_EVERY = 10.0  # WatchList: how often to say we are still waiting
INTERNAL_ERROR_WINDOW_RESET = 60.0  # a minute without a 500 starts a new in-place retry window

WatchErrorHandler = Callable[["Reflector", BaseException], None]


class _StopRequested(Exception):
    """Internal: the stop signal fired during a list or watch."""


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


def _is_connection_refused(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__
    return False


def _metadata(obj: Any) -> Any:
    if isinstance(obj, dict):
        return obj.get("metadata")
    return getattr(obj, "metadata", None)


def _resource_version(obj: Any) -> str | None:
    """The object's metadata.resourceVersion; None when it has no metadata at all."""
    metadata = _metadata(obj)
    if metadata is None:
        return None
    if isinstance(metadata, dict):
        rv = metadata.get("resourceVersion")
    else:
        rv = getattr(metadata, "resource_version", None)
    return str(rv) if rv is not None else ""


def _has_name(obj: Any) -> bool:
    """Whether the object carries a non-empty string metadata.name (bookmarks need not)."""
    metadata = _metadata(obj)
    name = metadata.get("name") if isinstance(metadata, dict) else getattr(metadata, "name", None)
    return isinstance(name, str) and name != ""


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
        or _has_name(obj)
    ]
    if len(kept) != len(items):
        log.warning(
            "reflector %s: %d listed objects without metadata.name; skipped",
            name,
            len(items) - len(kept),
        )
    return kept


def _is_initial_events_end(obj: Any) -> bool:
    metadata = _metadata(obj)
    if isinstance(metadata, dict):
        annotations = metadata.get("annotations")
    else:
        annotations = getattr(metadata, "annotations", None)
    return isinstance(annotations, dict) and (
        annotations.get(_lw.INITIAL_EVENTS_END_ANNOTATION) == "true"
    )


class _OpenWatch:
    """A watch being read: the watch, its one iterator, and what the termination rules need."""

    __slots__ = ("events", "iterator", "started", "watch")

    def __init__(self, watch: _lw.Watch, started: float) -> None:
        self.watch = watch
        self.iterator = iter(watch)
        self.started = started
        self.events = 0


class Reflector:
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
    Stopping during a list discards its result; a list request itself is not interrupted.
    """

    def __init__(
        self,
        lister_watcher: _lw.ListerWatcher,
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

        Only before :meth:`run`; afterwards raises :class:`~kinformer.errors.AlreadyStartedError`.
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

        Raises :class:`~kinformer.errors.AlreadyStartedError` on a second call.
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
        opened: _OpenWatch | None = None
        if self._use_watch_list:
            opened = self._watch_list(ctx)
        if opened is None:
            self._list(ctx)
        resync_done = threading.Event()
        resync_error: list[BaseException] = []
        current: list[_OpenWatch | None] = [opened]
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
        # no collection from the list request until the list is queued: a big list allocates
        # millions of objects and frees none, and the collector would walk them repeatedly
        with _json.gc_paused():
            self._list_and_replace(ctx, rv)

    def _list_and_replace(self, ctx: _context.Context, rv: str) -> None:
        try:
            result, paginated = self._paged_list(ctx, rv)
        except _StopRequested:
            raise
        except Exception as exc:
            if ctx.cancelled():
                raise _StopRequested() from exc
            if not (errors.is_expired(exc) or errors.is_too_large_resource_version(exc)):
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
                    raise _StopRequested() from exc2
                log.warning("reflector %s: list at rv='' failed: %s", self.name, exc2)
                raise
        if ctx.cancelled():
            raise _StopRequested()
        if rv == "0" and paginated:
            self._paginated_result = True
        self._rv_unavailable = False
        log.debug(
            "reflector %s: listed %d items at rv=%s", self.name, len(result.items), result.resource_version
        )
        try:
            self._store.replace(_named_items(list(result.items), self.name), result.resource_version)
        except Exception as exc:
            log.warning("reflector %s: unable to sync list result: %s", self.name, exc)
            raise errors.KinformerError(
                f"reflector {self.name}: unable to sync list result: {exc}"
            ) from exc
        with self._lock:
            self._last_rv = result.resource_version
            self._last_error = None
            self._synced_once = True

    def _list_page_size(self, rv: str) -> int:
        if self._page_size:
            return self._page_size
        if self._paginated_result:
            return DEFAULT_PAGE_SIZE
        if rv not in ("", "0"):
            return 0
        return DEFAULT_PAGE_SIZE

    def _paged_list(self, ctx: _context.Context, rv: str) -> tuple[_lw.ListResult, bool]:
        """All pages of one list; a continuation page that expired falls back to one full list."""
        limit = self._list_page_size(rv)
        first = self._lw.list(_lw.ListOptions(resource_version=rv, limit=limit or None))
        if not first.continue_token:
            return first, False
        items = list(first.items)
        token = first.continue_token
        while token:
            if ctx.cancelled():
                raise _StopRequested()
            try:
                page = self._lw.list(_lw.ListOptions(limit=limit or None, continue_token=token))
            except Exception as exc:
                if not errors.is_expired(exc):
                    raise
                log.warning(
                    "reflector %s: continuation page expired; listing everything at rv=%r",
                    self.name,
                    rv,
                )
                full = self._lw.list(_lw.ListOptions(resource_version=rv))
                return full, True
            items.extend(page.items)
            token = page.continue_token
        return _lw.ListResult(items, first.resource_version, ""), True

    # -- WATCH ------------------------------------------------------------------------------

    def _watch_timeout(self) -> int:
        low = self._min_watch_timeout
        return int(low + self._rand() * low)

    def _open_watch(self, options: _lw.ListOptions) -> _OpenWatch:
        started = self._clock.now()  # before the request: connecting counts as watch time
        return _OpenWatch(self._lw.watch(options), started)

    def _watch_loop(
        self,
        ctx: _context.Context,
        opened: _OpenWatch | None,
        current: list[_OpenWatch | None],
        resync_error: list[BaseException],
    ) -> None:
        """Re-watch after clean closes; return (relist) or raise (error) per client-go's rules."""
        propagate_now = opened is not None  # a stream continued from WatchList propagates at once
        while not ctx.cancelled():
            if resync_error:
                self._record_error(resync_error[0])
                log.warning("reflector %s: resync failed; relisting", self.name)
                return
            if opened is None:
                rv = self.last_sync_resource_version()
                options = _lw.ListOptions(
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=self._watch_timeout(),
                )
                try:
                    opened = self._open_watch(options)
                except Exception as exc:
                    if ctx.cancelled():
                        return
                    if _is_connection_refused(exc) or isinstance(exc, errors.TooManyRequestsError):
                        self._record_error(exc)
                        log.warning(
                            "reflector %s: watch start failed: %s; backing off", self.name, exc
                        )
                        if self._backoff.wait(ctx):
                            return
                        continue
                    log.warning("reflector %s: watch start failed: %s", self.name, exc)
                    raise
                propagate_now = rv not in ("", "0")
            current[0] = reading = opened
            opened = None
            if resync_error:  # the resync timer failed before it could see this watch
                reading.watch.close()
            try:
                self._handle_watch(ctx, reading, propagate_now, resync_error)
            except _StopRequested:
                return
            except Exception as exc:
                if ctx.cancelled():
                    return
                error: BaseException = resync_error[0] if resync_error else exc
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
            finally:
                current[0] = None
                reading.watch.close()
            if resync_error:
                return

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

    def _handle_watch(
        self,
        ctx: _context.Context,
        opened: _OpenWatch,
        propagate_now: bool,
        resync_error: list[BaseException],
    ) -> None:
        """Apply the events of one watch to the store until it ends; raise what ended it badly."""
        store = self._store
        bookmark = getattr(store, "bookmark", None)
        actions: dict[str, Callable[[Any], None] | None] = {
            "ADDED": store.add,
            "MODIFIED": store.update,
            "DELETED": store.delete,
            "BOOKMARK": None,
        }
        debug = log.isEnabledFor(logging.DEBUG)
        lock = self._lock
        take_rv = getattr(store, "update_resource_version", None)  # _propagate's store hook
        handle = ctx.on_cancel(opened.watch.close)
        try:
            for event in opened.iterator:
                if ctx.cancelled():
                    raise _StopRequested()
                event_type = event.type
                if event_type == "ERROR":
                    raise _lw.error_from_event(event)
                obj = event.object
                if (
                    type(obj) is dict
                    and type(meta := obj.get("metadata")) is dict
                    and type(name := meta.get("name")) is str
                    and name
                    and type(rv := meta.get("resourceVersion")) is str
                    and event_type in actions
                ):
                    pass  # the usual decoded event, checked inline
                else:
                    rv = _resource_version(obj)
                    if rv is None or event_type not in actions:
                        log.warning(
                            "reflector %s: %s event %s; skipped",
                            self.name,
                            event_type,
                            "without metadata" if rv is None else "of unknown type",
                        )
                        continue
                    if event_type != "BOOKMARK" and not _has_name(obj):
                        log.warning(
                            "reflector %s: %s event without a name; skipped", self.name, event_type
                        )
                        continue
                if debug:
                    log.debug("reflector %s: %s rv=%s", self.name, event_type, rv)
                action = actions[event_type]
                try:
                    if action is not None:
                        action(obj)
                    elif callable(bookmark):
                        bookmark(rv)
                except Exception:
                    log.exception("reflector %s: store failed on %s event", self.name, event_type)
                if not propagate_now and event_type != "ADDED":
                    propagate_now = True
                if propagate_now and rv:
                    if take_rv is None:
                        with lock:
                            self._last_rv = rv
                    else:
                        self._propagate(rv)
                opened.events += 1
        finally:
            handle.remove()
        if ctx.cancelled():
            raise _StopRequested()
        if resync_error:
            raise resync_error[0]
        if opened.events == 0 and self._clock.now() - opened.started < VERY_SHORT_WATCH:
            raise errors.VeryShortWatchError(
                f"reflector {self.name}: watch closed within {VERY_SHORT_WATCH}s with no events"
            )

    def _propagate(self, rv: str) -> None:
        with self._lock:
            self._last_rv = rv
        update = getattr(self._store, "update_resource_version", None)
        if update is not None:
            try:
                update(rv)
            except Exception:
                log.exception("reflector %s: store failed to take rv %s", self.name, rv)

    # -- resync -----------------------------------------------------------------------------

    def _resync_loop(
        self,
        ctx: _context.Context,
        done: threading.Event,
        resync_error: list[BaseException],
        current: list[_OpenWatch | None],
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
        exc: BaseException, resync_error: list[BaseException], current: list[_OpenWatch | None]
    ) -> None:
        resync_error.append(exc)
        opened = current[0]
        if opened is not None:
            opened.watch.close()

    # -- WatchList --------------------------------------------------------------------------

    def _watch_list(self, ctx: _context.Context) -> _OpenWatch | None:
        """Stream the initial state through a watch; the open watch, or None to list instead."""
        while not ctx.cancelled():
            rv = "" if self._rv_unavailable else self.last_sync_resource_version()
            options = _lw.ListOptions(
                resource_version=rv,
                resource_version_match="NotOlderThan",
                send_initial_events=True,
                allow_watch_bookmarks=True,
                timeout_seconds=self._watch_timeout(),
            )
            try:
                opened = self._open_watch(options)
            except Exception as exc:
                if ctx.cancelled():
                    raise _StopRequested() from exc
                self._record_error(exc)
                if _is_connection_refused(exc) or isinstance(exc, errors.TooManyRequestsError):
                    log.warning("reflector %s: watch-list start failed: %s; backing off", self.name, exc)
                    if self._backoff.wait(ctx):
                        raise _StopRequested() from exc
                    continue
                if errors.is_expired(exc) or errors.is_too_large_resource_version(exc):
                    self._rv_unavailable = True
                    continue
                log.warning("reflector %s: watch-list failed: %s; listing instead", self.name, exc)
                return None
            outcome = self._initial_events(ctx, opened)
            if outcome == "synced":
                return opened
            opened.watch.close()
            if outcome == "stop":
                raise _StopRequested()
            if outcome == "retry":
                continue
            return None
        raise _StopRequested()

    def _initial_events(self, ctx: _context.Context, opened: _OpenWatch) -> str:
        """Collect initial events until the end bookmark: "synced", "retry", "fallback" or "stop"."""
        temp: dict[str, Any] = {}
        finished = threading.Event()
        timed_out = threading.Event()
        timer = _threads.spawn(
            self._initial_events_timer,
            _threads.thread_name("watchlist", self.name),
            ctx,
            opened,
            finished,
            timed_out,
        )
        handle = ctx.on_cancel(opened.watch.close)
        try:
            for event in opened.iterator:
                if ctx.cancelled():
                    return "stop"
                if event.type == "ERROR":
                    exc = _lw.error_from_event(event)
                    self._record_error(exc)
                    if errors.is_expired(exc) or errors.is_too_large_resource_version(exc):
                        self._rv_unavailable = True
                        return "retry"
                    log.warning("reflector %s: watch-list error %s; listing instead", self.name, exc)
                    return "fallback"
                obj = event.object
                rv = _resource_version(obj)
                if rv is None:
                    log.warning("reflector %s: event without metadata; skipped", self.name)
                    continue
                if event.type not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                    log.warning("reflector %s: %s event of unknown type; skipped", self.name, event.type)
                    continue
                if event.type != "BOOKMARK" and not _has_name(obj):
                    log.warning("reflector %s: %s event without a name; skipped", self.name, event.type)
                    continue
                opened.events += 1
                if event.type in ("ADDED", "MODIFIED"):
                    temp[_store.deletion_handling_meta_namespace_key_func(obj)] = obj
                elif event.type == "DELETED":
                    temp.pop(_store.deletion_handling_meta_namespace_key_func(obj), None)
                elif event.type == "BOOKMARK" and _is_initial_events_end(obj):
                    finished.set()
                    self._store.replace(list(temp.values()), rv)
                    self._rv_unavailable = False
                    with self._lock:
                        self._last_rv = rv
                        self._last_error = None
                        self._synced_once = True
                    log.debug("reflector %s: watch-list synced %d items at rv=%s", self.name, len(temp), rv)
                    return "synced"
        except Exception as exc:
            if ctx.cancelled():
                return "stop"
            if timed_out.is_set():
                exc = errors.SyncTimeoutError(
                    f"no initial-events-end bookmark within {self._initial_events_timeout}s"
                )
            self._record_error(exc)
            log.warning("reflector %s: watch-list stream failed: %s; listing instead", self.name, exc)
            return "fallback"
        finally:
            finished.set()
            handle.remove()
            _threads.join_all([timer])
        if ctx.cancelled():
            return "stop"
        if timed_out.is_set():
            error = errors.SyncTimeoutError(
                f"no initial-events-end bookmark within {self._initial_events_timeout}s"
            )
            self._record_error(error)
            log.warning("reflector %s: %s; listing instead", self.name, error)
            return "fallback"
        if opened.events > 0 or self._clock.now() - opened.started >= VERY_SHORT_WATCH:
            log.warning("reflector %s: watch-list closed before its end bookmark; retrying", self.name)
            return "retry"
        log.warning("reflector %s: watch-list closed at once; listing instead", self.name)
        return "fallback"

    def _initial_events_timer(
        self,
        ctx: _context.Context,
        opened: _OpenWatch,
        finished: threading.Event,
        timed_out: threading.Event,
    ) -> None:
        """Warn every few seconds while waiting for the end bookmark; close the watch at the limit."""
        started = self._clock.now()
        deadline = started + self._initial_events_timeout
        while True:
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                break
            if self._clock.wait(finished, min(INITIAL_EVENTS_WARN_EVERY, remaining)):
                return
            if ctx.cancelled():
                return
            if self._clock.now() < deadline:
                log.warning(
                    "reflector %s: still waiting for the initial events (%.0fs)",
                    self.name,
                    self._clock.now() - started,
                )
        timed_out.set()
        opened.watch.close()
