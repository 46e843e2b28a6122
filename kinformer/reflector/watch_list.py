"""A reflector's WatchList initial sync: the initial state streamed through a watch, not listed.

client-go's ``reflector.watchList`` with ``handleListWatch`` (the ``WatchListClient`` feature):
one watch with ``sendInitialEvents=true`` and ``resourceVersionMatch=NotOlderThan`` sends every
object as an ADDED event, then a bookmark annotated ``k8s.io/initial-events-end``.
:class:`WatchListSync` gathers those events in a temporary store and, at the bookmark, replaces
the reflector's store with them at its version; the same watch is then read on by the watch loop
(:mod:`kinformer.reflector.watch_loop`). When streaming does not work the reflector lists instead
(:mod:`kinformer.reflector.listing`).

How long a stream may take to send its end bookmark: as long as it keeps sending. It is given
up on when no object came for ``initial_events_timeout`` seconds (a stalled stream), or when it
reaches its watch's own ``timeoutSeconds`` (``min_watch_timeout`` to twice that, 300 to 600 s
by default), after which the server would end it anyway (a server that sends events but never
the end bookmark: one that ignores ``sendInitialEvents``). A large initial state over a slow
link is so read whole however long it takes, and a server that stalls is still left within the
timeout. A stream given up on either way shows the server may never end one: the reflector
lists, and lists again instead of streaming at the relists of the next
:data:`LIST_AFTER_NO_END` seconds, rather than wait out a stream at each one; any other
fallback streams again at the next relist, as client-go does.
"""

from __future__ import annotations

import dataclasses
import logging
import math

from kinformer import context as _context
from kinformer import errors
from kinformer.cache import cluster as _cluster
from kinformer.cache import store as _store
from kinformer.reflector import failures, sink, watch, watch_loop
from kinformer.reflector import shared as _shared

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

_Outcome = watch.WatchOutcome

LIST_AFTER_NO_END = 600.0  # seconds to list directly after a stream that never sent its end bookmark


class WatchListSync:
    """Streams the initial state of one reflector's resource into its store.

    Runs on the reflector's thread only. Errors go to ``shared.record_error``, each stream
    started counts in ``shared.metrics.watches``, and ``shared.synced(rv)`` is told when the
    store took the stream's initial state; the stream may go ``timeout`` seconds without an
    object, and last until its watch's ``timeoutSeconds``, before its end bookmark.
    """

    __slots__ = ("_list_until", "_shared", "_timeout", "name")

    def __init__(self, shared: _shared.Shared, timeout: float) -> None:
        self._shared = shared
        self.name = shared.name
        self._timeout = timeout
        self._list_until = -math.inf  # the clock's time until which relists list, not stream

    def lists_instead(self) -> bool:
        """Whether the next sync lists at once: a stream without an end bookmark was given up on
        less than :data:`LIST_AFTER_NO_END` seconds ago."""
        return self._shared.clock.now() < self._list_until

    def sync(self, ctx: _context.Context) -> watch.OpenWatch | None:
        """Stream the initial state through a watch into the store; the open watch, or None.

        The watch asks for ``sendInitialEvents`` and its events build up in a temporary store
        until the end bookmark, whose version the store is then replaced at; the same watch is
        read on by the watch loop. A refused connection or a 429 backs off and streams again;
        a version gone or too new streams again at once from the current one, as does a stream
        closed cleanly or dropped before its end bookmark. Anything else, a stream that ends at
        once, or a stream given up on (no object for ``initial_events_timeout`` seconds before
        its end bookmark, or none by its watch's ``timeoutSeconds``) returns None: list
        instead. After a stream given up on, it returns None at once, streaming nothing, for
        :data:`LIST_AFTER_NO_END` seconds. Raises
        :class:`~kinformer.reflector.failures.StopRequested` once stopped.
        """
        shared = self._shared
        if self.lists_instead():
            log.debug("reflector %s: the last watch-list sent no end bookmark; listing", self.name)
            return None
        while not ctx.cancelled():
            rv = "" if shared.version.unavailable else shared.version.value
            options = dataclasses.replace(
                shared.watch_options(rv), resource_version_match="NotOlderThan", send_initial_events=True
            )
            try:
                opened = watch.open_watch(shared.lw, options, ctx, shared.clock)
            except Exception as exc:
                if ctx.cancelled():
                    raise failures.StopRequested() from exc
                shared.record_error(exc)
                if failures.backs_off(exc):
                    log.log(shared.level(exc),
                            "reflector %s: watch-list start failed: %s; backing off", self.name, exc)
                    if shared.backoff.wait(ctx, errors.retry_after(exc)):
                        raise failures.StopRequested() from exc
                    continue
                if failures.version_unavailable(exc):
                    shared.version.unavailable = True
                    continue
                log.warning("reflector %s: watch-list failed: %s; listing instead", self.name, exc)
                return None
            shared.metrics.watches.inc()
            # keyed with each object's logical cluster: a watch across them (/clusters/*)
            # streams one default/app per cluster, and a plain key would keep only the last
            temporary = _store.new_store(_cluster.cluster_aware_key_func)
            end = watch.handle_initial_events(
                ctx, opened, sink.Sink.of(temporary), self.name, shared.clock, self._timeout,
                keep=shared.shard.client_filter(), transform=shared.transform,
                cap=float(options.timeout_seconds or math.inf),
            )
            if end.outcome is _Outcome.INITIAL_EVENTS_END:
                objects = temporary.list()
                shared.listed()  # before the store: once it is synced, the error is gone
                try:
                    shared.store.replace(objects, end.resource_version)
                except Exception as exc:
                    opened.watch.close()
                    shared.record_error(exc)
                    log.warning(
                        "reflector %s: unable to sync watch-list result: %s; listing instead",
                        self.name,
                        exc,
                    )
                    return None
                shared.version.unavailable = False
                shared.synced(end.resource_version)
                log.debug(
                    "reflector %s: watch-list synced %d items at rv=%s",
                    self.name,
                    len(objects),
                    end.resource_version,
                )
                return opened
            opened.watch.close()
            if end.outcome is _Outcome.STOPPED or ctx.cancelled():
                raise failures.StopRequested()
            if end.outcome in (_Outcome.CLOSED, _Outcome.DROPPED):
                how = "closed" if end.outcome is _Outcome.CLOSED else f"dropped ({end.error})"
                if end.events > 0 or shared.clock.now() - opened.started >= watch_loop.VERY_SHORT_WATCH:
                    log.warning(
                        "reflector %s: watch-list %s before its end bookmark; retrying", self.name, how
                    )
                    continue
                log.warning("reflector %s: watch-list %s at once; listing instead", self.name, how)
                return None
            assert end.error is not None  # FAILED or TIMED_OUT
            shared.record_error(end.error)
            if end.outcome is _Outcome.FAILED and failures.version_unavailable(end.error):
                shared.version.unavailable = True
                continue
            if end.outcome is _Outcome.TIMED_OUT:
                self._list_until = shared.clock.now() + LIST_AFTER_NO_END
                log.warning("reflector %s: watch-list ended: %s; listing instead, and at the "
                            "relists of the next %gs", self.name, end.error, LIST_AFTER_NO_END)
                return None
            log.warning("reflector %s: watch-list ended: %s; listing instead", self.name, end.error)
            return None
        raise failures.StopRequested()
