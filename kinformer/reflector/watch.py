"""The reflector's watching: opening watches, applying their events, deciding what comes next.

:class:`WatchLoop` is the part of :class:`~kinformer.Reflector` that watches from the
last resourceVersion seen (randomized timeouts, bookmarks), applies each event to the store in
order, propagates resourceVersions, and after each watch decides, by client-go's rules, to watch
again, back off, or return so the reflector relists. It also holds what the reflector's parts
share: the internal stop signal, the record of an open watch and the readers of an object's
metadata. :mod:`kinformer.reflector.watchlist` builds the WatchList initial sync on it, and
:mod:`kinformer.reflector.reflector` adds listing, the run loop and resync.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer import errors
from kinformer.client import listwatch

log = logging.getLogger("kinformer.reflector.reflector")  # one logger for all of the reflector's parts

MIN_WATCH_TIMEOUT = 300.0  # watches time out server-side after [min, 2*min) seconds
VERY_SHORT_WATCH = 1.0  # a watch closing sooner than this with no events means trouble
INTERNAL_ERROR_WINDOW_RESET = 60.0  # a minute without a 500 starts a new in-place retry window


class StopRequested(Exception):
    """The stop signal fired during a list or watch; the run loop ends quietly on it."""


def is_connection_refused(error: BaseException) -> bool:
    """Whether ``error`` or one of its causes is a refused connection."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__
    return False


def backs_off(error: BaseException) -> bool:
    """Whether a watch that failed to start with ``error`` is retried after a backoff step.

    A refused connection or a 429 means the server is there but busy or restarting: the
    reflector backs off and watches again instead of relisting (client-go's rule).
    """
    return is_connection_refused(error) or isinstance(error, errors.TooManyRequestsError)


def object_metadata(obj: Any) -> Any:
    """``obj``'s metadata: the ``metadata`` of a decoded dict or attribute of a model object."""
    if isinstance(obj, dict):
        return obj.get("metadata")
    return getattr(obj, "metadata", None)


def resource_version_of(obj: Any) -> str | None:
    """The object's metadata.resourceVersion; None when it has no metadata at all."""
    metadata = object_metadata(obj)
    if metadata is None:
        return None
    if isinstance(metadata, dict):
        rv = metadata.get("resourceVersion")
    else:
        rv = getattr(metadata, "resource_version", None)
    return str(rv) if rv is not None else ""


def has_name(obj: Any) -> bool:
    """Whether the object carries a non-empty string metadata.name (bookmarks need not)."""
    metadata = object_metadata(obj)
    name = metadata.get("name") if isinstance(metadata, dict) else getattr(metadata, "name", None)
    return isinstance(name, str) and name != ""


class OpenWatch:
    """A watch being read: the watch, its one iterator, and what the termination rules need."""

    __slots__ = ("events", "iterator", "started", "watch")

    def __init__(self, watch: listwatch.Watch, started: float) -> None:
        self.watch = watch
        self.iterator = iter(watch)
        self.started = started
        self.events = 0


class WatchLoop:
    """The watch side of a Reflector; runs on the reflector's run thread only.

    The attributes below are set by :class:`~kinformer.Reflector`, which also gives
    the methods this part calls but does not define.
    """

    name: str
    _lw: listwatch.ListerWatcher
    _store: Any
    _clock: _clock.Clock
    _rand: Callable[[], float]
    _backoff: _backoff.BackoffManager
    _min_watch_timeout: float
    _max_internal_retry: float
    _lock: threading.Lock
    _last_rv: str
    _internal_error_first: float
    _internal_error_last: float | None

    def last_sync_resource_version(self) -> str:
        raise NotImplementedError  # Reflector's getter

    def _record_error(self, exc: BaseException) -> None:
        raise NotImplementedError  # Reflector's error bookkeeping

    def _mark_synced(self, rv: str) -> None:
        raise NotImplementedError  # Reflector's sync bookkeeping

    def _watch_timeout(self) -> int:
        low = self._min_watch_timeout
        return int(low + self._rand() * low)

    def _open_watch(self, ctx: _context.Context, options: listwatch.ListOptions) -> OpenWatch:
        """Start a watch; cancelling ``ctx`` breaks off a start the server has not answered."""
        started = self._clock.now()  # before the request: connecting counts as watch time
        return OpenWatch(listwatch.watch_with_context(self._lw, options, ctx), started)

    def _watch_loop(
        self,
        ctx: _context.Context,
        opened: OpenWatch | None,
        current: list[OpenWatch | None],
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
                options = listwatch.ListOptions(
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=self._watch_timeout(),
                )
                try:
                    opened = self._open_watch(ctx, options)
                except Exception as exc:
                    if ctx.cancelled():
                        return
                    if backs_off(exc):
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
            except StopRequested:
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
        opened: OpenWatch,
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
                    raise StopRequested()
                event_type = event.type
                if event_type == "ERROR":
                    raise listwatch.error_from_event(event)
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
                    rv = resource_version_of(obj)
                    if rv is None or event_type not in actions:
                        log.warning(
                            "reflector %s: %s event %s; skipped",
                            self.name,
                            event_type,
                            "without metadata" if rv is None else "of unknown type",
                        )
                        continue
                    if event_type != "BOOKMARK" and not has_name(obj):
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
            raise StopRequested()
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
