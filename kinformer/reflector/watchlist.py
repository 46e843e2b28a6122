"""The reflector's WatchList: streaming the initial state through a watch instead of a list.

With ``use_watch_list``, a :class:`~kinformer.Reflector` first opens a watch with
``sendInitialEvents=true``, collects the initial events until the bookmark annotated
``k8s.io/initial-events-end``, replaces the store with them and keeps reading the same watch
(client-go's ``watchList``). An expired or too-new version retries at the current one; a refused
connection or 429 backs off; anything else, or no end bookmark within the timeout, falls back to
a list. :class:`WatchListSync` builds on :class:`~kinformer.reflector.watch.WatchLoop`;
:mod:`kinformer.reflector.reflector` decides when to use it.
"""

from __future__ import annotations

import threading
from typing import Any

from kinformer import _threads, errors
from kinformer import context as _context
from kinformer.cache import store as _store
from kinformer.client import listwatch
from kinformer.reflector import watch as reflector_watch

log = reflector_watch.log  # one logger for all of the reflector's parts

INITIAL_EVENTS_TIMEOUT = 60.0  # WatchList: give up on the end bookmark and list instead
INITIAL_EVENTS_WARN_EVERY = 10.0  # WatchList: how often to say we are still waiting


def is_initial_events_end(obj: Any) -> bool:
    """Whether ``obj`` is the bookmark that ends a watch's initial events."""
    metadata = reflector_watch.object_metadata(obj)
    if isinstance(metadata, dict):
        annotations = metadata.get("annotations")
    else:
        annotations = getattr(metadata, "annotations", None)
    return isinstance(annotations, dict) and (
        annotations.get(listwatch.INITIAL_EVENTS_END_ANNOTATION) == "true"
    )


class WatchListSync(reflector_watch.WatchLoop):
    """The WatchList initial sync of a Reflector; runs on the reflector's run thread only."""

    _rv_unavailable: bool
    _initial_events_timeout: float

    def _watch_list(self, ctx: _context.Context) -> reflector_watch.OpenWatch | None:
        """Stream the initial state through a watch; the open watch, or None to list instead."""
        while not ctx.cancelled():
            rv = "" if self._rv_unavailable else self.last_sync_resource_version()
            options = listwatch.ListOptions(
                resource_version=rv,
                resource_version_match="NotOlderThan",
                send_initial_events=True,
                allow_watch_bookmarks=True,
                timeout_seconds=self._watch_timeout(),
            )
            try:
                opened = self._open_watch(ctx, options)
            except Exception as exc:
                if ctx.cancelled():
                    raise reflector_watch.StopRequested() from exc
                self._record_error(exc)
                if reflector_watch.backs_off(exc):
                    log.warning("reflector %s: watch-list start failed: %s; backing off", self.name, exc)
                    if self._backoff.wait(ctx):
                        raise reflector_watch.StopRequested() from exc
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
                raise reflector_watch.StopRequested()
            if outcome == "retry":
                continue
            return None
        raise reflector_watch.StopRequested()

    def _initial_events(self, ctx: _context.Context, opened: reflector_watch.OpenWatch) -> str:
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
                    exc = listwatch.error_from_event(event)
                    self._record_error(exc)
                    if errors.is_expired(exc) or errors.is_too_large_resource_version(exc):
                        self._rv_unavailable = True
                        return "retry"
                    log.warning("reflector %s: watch-list error %s; listing instead", self.name, exc)
                    return "fallback"
                obj = event.object
                rv = reflector_watch.resource_version_of(obj)
                if rv is None:
                    log.warning("reflector %s: event without metadata; skipped", self.name)
                    continue
                if event.type not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                    log.warning("reflector %s: %s event of unknown type; skipped", self.name, event.type)
                    continue
                if event.type != "BOOKMARK" and not reflector_watch.has_name(obj):
                    log.warning("reflector %s: %s event without a name; skipped", self.name, event.type)
                    continue
                opened.events += 1
                if event.type in ("ADDED", "MODIFIED"):
                    temp[_store.deletion_handling_meta_namespace_key_func(obj)] = obj
                elif event.type == "DELETED":
                    temp.pop(_store.deletion_handling_meta_namespace_key_func(obj), None)
                elif event.type == "BOOKMARK" and is_initial_events_end(obj):
                    finished.set()
                    self._store.replace(list(temp.values()), rv)
                    self._rv_unavailable = False
                    self._mark_synced(rv)
                    log.debug("reflector %s: watch-list synced %d items at rv=%s", self.name, len(temp), rv)
                    return "synced"
        except Exception as exc:
            if ctx.cancelled():
                return "stop"
            if timed_out.is_set():
                exc = self._no_end_bookmark_error()
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
            error = self._no_end_bookmark_error()
            self._record_error(error)
            log.warning("reflector %s: %s; listing instead", self.name, error)
            return "fallback"
        if opened.events > 0 or self._clock.now() - opened.started >= reflector_watch.VERY_SHORT_WATCH:
            log.warning("reflector %s: watch-list closed before its end bookmark; retrying", self.name)
            return "retry"
        log.warning("reflector %s: watch-list closed at once; listing instead", self.name)
        return "fallback"

    def _no_end_bookmark_error(self) -> errors.SyncTimeoutError:
        """What a WatchList that timed out before its end bookmark reports."""
        return errors.SyncTimeoutError(
            f"no initial-events-end bookmark within {self._initial_events_timeout}s"
        )

    def _initial_events_timer(
        self,
        ctx: _context.Context,
        opened: reflector_watch.OpenWatch,
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
