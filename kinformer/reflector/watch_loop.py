"""A reflector's watch loop: watch from the last version until a watch ends in a way that calls
for a relist, and how each ending is answered. Reads each watch through
:mod:`~kinformer.reflector.watch`.

client-go's ``reflector.watch`` with its ``handleWatch`` outcomes. :class:`WatchLoop` opens a
watch at the last resourceVersion, hands its events to the one event handler
(:func:`kinformer.reflector.watch.handle_any_watch`), and answers the ending: a clean close or
a dropped connection watches again at once, a refused start or a 429 backs off and watches
again, a very short watch or anything else (410, an ERROR event, a line that does not decode)
returns, and the :class:`~kinformer.Reflector` relists. :class:`WatchAbort` is how another
thread ends the round's watch: the resync timer with an error, a change of shard without one.
"""

from __future__ import annotations

import logging
import threading

from kinformer import context as _context
from kinformer import errors
from kinformer.client import listerwatcher
from kinformer.reflector import failures, watch
from kinformer.reflector import shared as _shared

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

VERY_SHORT_WATCH = 1.0  # a watch closing sooner than this with no events means trouble
INTERNAL_ERROR_WINDOW_RESET = 60.0  # a minute without a 500 starts a new in-place retry window

_Outcome = watch.WatchOutcome


class WatchAbort:
    """How another thread ends the round's watch: it closes the open watch and says why.

    The resync timer (and :meth:`Reflector.fail_round <kinformer.Reflector.fail_round>`) calls
    :meth:`abort` with the error that ends the round; a change of shard
    calls :meth:`end_round`, which ends it without an error. Thread-safe: the run thread
    attaches each watch it reads and asks why when the watch ends.
    """

    __slots__ = ("_ended", "_error", "_lock", "_watch")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the fields below; once ended, no watch stays open
        self._watch: listerwatcher.Watch | None = None
        self._error: BaseException | None = None
        self._ended = False

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


class WatchLoop:
    """Watches for one reflector, from its last version, until a relist is called for.

    Runs on the reflector's thread only; the window of in-place retries after HTTP 500 is that
    thread's state. Errors go to ``shared.record_error`` (the reflector's error handler and
    ``last_error``); each watch started counts in ``shared.metrics.watches``.
    """

    __slots__ = ("_internal_error_first", "_internal_error_last", "_max_internal_retry",
                 "_shared", "name")

    def __init__(self, shared: _shared.Shared, max_internal_retry: float) -> None:
        self._shared = shared
        self.name = shared.name
        self._max_internal_retry = max_internal_retry
        self._internal_error_first = 0.0
        self._internal_error_last: float | None = None

    def run(self, ctx: _context.Context, opened: watch.OpenWatch | None, abort: WatchAbort) -> None:
        """Watch from the last version until a watch ends in a way that calls for a relist.

        ``opened`` is a WatchList stream to read on, or None. A clean close, or a dropped
        connection, watches again at once from the last version (a watch that ends so within
        a second with no event is very short, and relists after a backoff step); a refused
        connection or a 429 backs off and watches again; a 500 is watched
        again at once within ``max_internal_error_retry_duration``. Returns (relist) on
        anything else, or when stopped; raises when a watch could not start.
        """
        shared = self._shared
        continued = opened is not None  # a WatchList stream: its versions count at once
        while not ctx.cancelled():
            if (abort.ended or abort.error is not None) and opened is not None:
                opened.watch.close()  # a WatchList stream not read on
            if abort.ended:  # the shard changed: relist it
                return
            if abort.error is not None:  # the resync timer (or fail_round) ended it, no watch open
                shared.record_error(abort.error)
                log.warning("reflector %s: round ended: %s; relisting", self.name, abort.error)
                return
            if opened is None:
                rv = shared.version.value
                try:
                    opened = watch.open_watch(shared.lw, shared.watch_options(rv), ctx, shared.clock)
                except Exception as exc:
                    if ctx.cancelled():
                        return
                    if not failures.backs_off(exc):
                        log.log(shared.level(exc), "reflector %s: watch start failed: %s",
                                self.name, exc)
                        raise
                    shared.record_error(exc)
                    log.log(shared.level(exc), "reflector %s: watch start failed: %s; backing off",
                            self.name, exc)
                    if shared.backoff.wait(ctx, errors.retry_after(exc)):
                        return
                    continue
                shared.metrics.watches.inc()
                propagate_now = rv not in ("", "0")
            else:
                propagate_now = True
            abort.attach(opened.watch)
            try:
                end = watch.handle_any_watch(
                    ctx,
                    opened,
                    shared.store,
                    self.name,
                    shared.version,
                    propagate_now=propagate_now,
                    keep=shared.shard.client_filter(),
                    transform=shared.transform,
                )
            finally:
                abort.attach(None)
                opened.watch.close()
            if end.outcome is _Outcome.STOPPED or ctx.cancelled() or abort.ended:
                return
            error = abort.error
            if end.outcome is _Outcome.DROPPED:
                if error is None:
                    log.log(
                        logging.DEBUG if shared.quiet else logging.INFO,
                        "reflector %s: watch dropped (%s); watching again from rv=%s",
                        self.name,
                        end.error,
                        shared.version.value,
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
            shared.record_error(error)
            if errors.is_expired(error):
                log.log(shared.level(error), "reflector %s: watch expired (%s); relisting",
                        self.name, error)
                return
            if isinstance(error, errors.TooManyRequestsError):
                log.warning("reflector %s: watch got 429; backing off", self.name)
                if shared.backoff.wait(ctx, errors.retry_after(error)):
                    return
                continue
            if self._retry_internal_error(error):
                log.warning("reflector %s: watch got %s; watching again", self.name, error)
                continue
            log.log(shared.level(error), "reflector %s: watch ended: %s; relisting", self.name, error)
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
            and self._shared.clock.now() - opened.started < VERY_SHORT_WATCH
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
        now = self._shared.clock.now()
        last = self._internal_error_last
        if last is None or now - last > INTERNAL_ERROR_WINDOW_RESET:
            self._internal_error_first = now
        self._internal_error_last = now
        return now - self._internal_error_first < self._max_internal_retry
