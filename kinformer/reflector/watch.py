"""Reading one open watch into a store: the handler every watch's events go through.

One of the reflector's four watch modules: this one reads a watch (client-go's
``handleAnyWatch`` and its two callers, ``handleWatch`` and ``handleListWatch``);
:mod:`~kinformer.reflector.watch_events` writes each event, or each read of events, into the
store; :mod:`~kinformer.reflector.watch_loop` decides when to watch again;
:mod:`~kinformer.reflector.watch_list` streams the initial state instead of listing it.

:func:`handle_any_watch` reads the events of one open watch until it ends, has
:class:`~kinformer.reflector.watch_events.EventWriter` check each once (through
:mod:`kinformer.meta`) and write it to a store, tracks its resourceVersion
(:class:`~kinformer.reflector.watch_events.LastVersion`), and returns how the stream ended as a
:class:`WatchEnd`. The watch loop calls it with the reflector's store for every watch, and the
WatchList sync through :func:`handle_initial_events` with a temporary store for the initial
events of a ``sendInitialEvents`` stream, which end at the bookmark annotated
``k8s.io/initial-events-end``. A watch that hands its events over a read at a time (the HTTP one)
is written a read at a time, any other an event at a time. What to do about an ending (watch
again, back off, relist, list instead) is theirs. :func:`open_watch` starts each watch the same
way for both.
"""

from __future__ import annotations

import dataclasses
import enum
import http.client
import logging
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kinformer import _threads, errors, meta
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.client import listerwatcher
from kinformer.reflector import sink, watch_events

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

INITIAL_EVENTS_WARN_EVERY = 10.0  # WatchList: how often to say we are still waiting for the end bookmark


class WatchOutcome(enum.Enum):
    """How one watch stream ended."""

    CLOSED = "closed"  # the stream ended without an error: a server timeout, or closed on our side
    DROPPED = "dropped"  # the connection broke (reset, cut mid-event, read timeout); cause in .error
    FAILED = "failed"  # an ERROR event, or an event that cannot be used; the error is in WatchEnd.error
    STOPPED = "stopped"  # the stop signal fired
    INITIAL_EVENTS_END = "initial-events-end"  # a WatchList stream's initial events are complete
    TIMED_OUT = "timed-out"  # a WatchList stream's end bookmark did not come in time


@dataclasses.dataclass(frozen=True, slots=True)
class WatchEnd:
    """What :func:`handle_any_watch` returns: the outcome, what caused it, how many events counted.

    ``events`` counts the events written by this call (skipped ones do not count);
    ``resource_version`` is the end bookmark's for :attr:`WatchOutcome.INITIAL_EVENTS_END`.
    """

    outcome: WatchOutcome
    events: int = 0
    error: BaseException | None = None
    resource_version: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class OpenWatch:
    """A watch being read: the watch, its one iterator, and when it was asked for.

    A watch with ``batches`` (a :class:`~kinformer.client.listerwatcher.BatchWatch`) is read
    through ``batches``, ``iterator`` then unused; any other through ``iterator``. A WatchList
    stream is read twice, its initial events then the rest, through the same one; ``leftover``
    holds the events of a read that came after the end of the initial events.
    """

    watch: listerwatcher.Watch
    iterator: Iterator[listerwatcher.WatchEvent]
    started: float
    batches: Iterator[listerwatcher.WatchBatch] | None = None
    checked: bool = False  # the watch checked its events (BatchWatch.checked): not looked at twice
    leftover: list[listerwatcher.WatchBatch] = dataclasses.field(default_factory=list)


def open_watch(
    lister_watcher: listerwatcher.ContextListerWatcher,
    options: listerwatcher.ListOptions,
    ctx: _context.Context,
    clock: _clock.Clock,
) -> OpenWatch:
    """Start a watch; blocks until the server answers, raises what it refused with.

    Cancelling ``ctx`` breaks off a start the server has not answered when the ListerWatcher
    takes it. The start time is taken before the request: connecting counts as watch time.
    """
    started = clock.now()
    watch = lister_watcher.watch(options, ctx=ctx)
    if isinstance(watch, listerwatcher.BatchWatch):
        return OpenWatch(watch, iter(()), started, watch.batches(), watch.checked is True)
    return OpenWatch(watch, iter(watch), started)


def is_dropped(error: BaseException) -> bool:
    """Whether reading a watch raised ``error`` because the connection broke, not the data.

    A reset or aborted connection, a broken pipe, a stream cut off mid-event, a read that timed
    out: the server (or the network to it) went away, and what was received so far is good. A
    watch that ends so is resumed from its last resourceVersion like one closed cleanly, with no
    relist (client-go's stream watcher ends such a watch without an error). A line that arrived
    whole but does not decode, or an ERROR event, is not a drop.
    """
    return isinstance(error, (ConnectionError, TimeoutError, EOFError, http.client.IncompleteRead))


def handle_any_watch(
    ctx: _context.Context,
    opened: OpenWatch,
    store: sink.Sink,
    name: str,
    last_version: watch_events.LastVersion,
    *,
    propagate_now: bool = True,
    exit_on_initial_events_end: bool = False,
    keep: Callable[[Any], bool] | None = None,
    transform: Callable[[Any], Any] | None = None,
    on_start: Callable[[watch_events.EventWriter], None] | None = None,
) -> WatchEnd:
    """Apply the events of ``opened`` to ``store``, in order, until the stream ends; blocks.

    Runs on the caller's thread; cancelling ``ctx`` closes the watch and returns STOPPED.
    ADDED, MODIFIED and DELETED call ``store.add``, ``update`` and ``delete`` with the event's
    object; BOOKMARK calls ``store.bookmark(rv)`` when the store has it. An event without
    metadata, of an unknown type, or (except a bookmark) without a name is logged and skipped;
    a :class:`~kinformer.client.listerwatcher.BatchWatch` whose ``checked`` is True promises
    it yields no such event (it raised for them instead), and its events are not checked again.
    A store error is logged and the event still counts. An ERROR event ends the stream as
    FAILED with the error its Status stands for, as does an exception from the stream itself,
    except a broken connection (:func:`is_dropped`), which ends it as DROPPED with its cause.

    Each counted event's non-empty resourceVersion becomes ``last_version.value`` and goes to
    ``store.update_resource_version(rv)`` when the store has it (an error there is logged). With
    ``propagate_now`` False, as for a watch started at "" or "0" whose synthetic ADDED events
    come in no particular order, versions are held back until the first event that is not an
    ADDED. With ``exit_on_initial_events_end``, a bookmark annotated
    ``k8s.io/initial-events-end`` returns INITIAL_EVENTS_END at its version; the watch stays open.
    With ``keep``, an ADDED, MODIFIED or DELETED event whose object ``keep`` refuses leaves the
    store alone but counts, its version included (a shard filtered on the client). With
    ``transform``, the store gets ``transform(obj)`` of each event it would get; an error there
    is logged as a store error is. ``on_start`` is given the writer before the first read: its
    ``events`` counts the events written so far, for another thread to watch the stream's
    progress by.
    """
    # a line per change, but none per initial event: like a list, they are summed up once
    debug = log.isEnabledFor(logging.DEBUG) and not exit_on_initial_events_end
    writer = watch_events.EventWriter(
        store, name, last_version, propagate_now=propagate_now,
        checked=opened.checked,
        debug=debug, keep=keep, transform=transform)
    if on_start is not None:
        on_start(writer)
    cancelled = ctx.done.is_set  # checked per event (per read for a BatchWatch): one call, not two
    handle = ctx.on_cancel(opened.watch.close)
    try:
        if opened.batches is not None:
            end = _read_batches(opened, writer, cancelled, exit_on_initial_events_end)
            if end.outcome is not WatchOutcome.CLOSED:
                return end
        one = writer.one
        for event in opened.iterator:  # empty for a BatchWatch
            if cancelled():
                return WatchEnd(WatchOutcome.STOPPED, writer.events)
            event_type, obj = event.type, event.object
            if event_type == "ERROR":
                return WatchEnd(WatchOutcome.FAILED, writer.events,
                                listerwatcher.error_from_event(event))
            if (one(event_type, obj) and exit_on_initial_events_end
                    and event_type == "BOOKMARK" and watch_events.is_initial_events_end(obj)):
                return WatchEnd(WatchOutcome.INITIAL_EVENTS_END, writer.events,
                                resource_version=meta.resource_version(obj) or "")
    except Exception as exc:
        if ctx.cancelled():
            return WatchEnd(WatchOutcome.STOPPED, writer.events)
        outcome = WatchOutcome.DROPPED if is_dropped(exc) else WatchOutcome.FAILED
        return WatchEnd(outcome, writer.events, exc)
    finally:
        handle.remove()
    if ctx.cancelled():
        return WatchEnd(WatchOutcome.STOPPED, writer.events)
    return WatchEnd(WatchOutcome.CLOSED, writer.events)


def _read_batches(
    opened: OpenWatch,
    writer: watch_events.EventWriter,
    cancelled: Callable[[], bool],
    exit_on_initial_events_end: bool,
) -> WatchEnd:
    """:func:`handle_any_watch` for a BatchWatch: write a read at a time until the stream ends.

    Returns STOPPED, FAILED (an ERROR event) or INITIAL_EVENTS_END (the events after the end
    bookmark kept in ``opened.leftover``); CLOSED when the stream ended; raises what it raised.
    """
    assert opened.batches is not None
    leftover = opened.leftover
    while True:
        if leftover:
            types, objects = leftover.pop()
        else:
            batch = next(opened.batches, None)
            if batch is None:
                return WatchEnd(WatchOutcome.CLOSED, writer.events)
            types, objects = batch
        if cancelled():
            return WatchEnd(WatchOutcome.STOPPED, writer.events)
        stop = writer.batch(types, objects, exit_on_initial_events_end)
        if stop < 0:
            continue
        event = listerwatcher.WatchEvent(types[stop], objects[stop])
        if event.type == "ERROR":
            return WatchEnd(WatchOutcome.FAILED, writer.events, listerwatcher.error_from_event(event))
        if stop + 1 < len(types):
            leftover.append(listerwatcher.WatchBatch(types[stop + 1:], objects[stop + 1:]))
        return WatchEnd(WatchOutcome.INITIAL_EVENTS_END, writer.events,
                        resource_version=meta.resource_version(event.object) or "")


class _Progress:
    """How far one WatchList stream's initial events got, shared with its timer thread.

    ``writer`` is the stream's writer once reading began (its counts grow as events are
    written: reading them costs the reader nothing); ``timed_out`` says why the timer gave up
    on the stream, written before it closes the watch and read after it was joined.
    """

    __slots__ = ("timed_out", "writer")

    def __init__(self) -> None:
        self.writer: watch_events.EventWriter | None = None
        self.timed_out = ""

    def objects(self) -> int:
        """The events with an object so far: bookmarks carry none of the initial state."""
        writer = self.writer
        return 0 if writer is None else writer.events - writer.bookmarks

    def started(self, writer: watch_events.EventWriter) -> None:
        self.writer = writer


def handle_initial_events(
    ctx: _context.Context,
    opened: OpenWatch,
    store: sink.Sink,
    name: str,
    clock: _clock.Clock,
    timeout: float,
    keep: Callable[[Any], bool] | None = None,
    transform: Callable[[Any], Any] | None = None,
    *,
    cap: float = math.inf,
) -> WatchEnd:
    """Apply a WatchList stream's initial events to ``store`` until the end bookmark; blocks.

    ``store`` is the temporary store the events build up in (nothing reaches the reflector's
    store before the end bookmark); no resourceVersion is handed on. Returns INITIAL_EVENTS_END
    with the bookmark's version, leaving the watch open to be read on; or how the stream ended
    before it. A timer thread warns every few seconds while waiting, with the count of objects
    so far, and gives up on a stream that stalls or never ends: it closes the watch when no
    object came for ``timeout`` seconds (a stream still flowing is left alone, however long it
    takes; a bookmark other than the end one carries no object and does not count), or
    ``cap`` seconds after the watch was asked for, whichever comes first; that returns
    TIMED_OUT with a :class:`~kinformer.SyncTimeoutError`, as does a stream the server ended
    cleanly at ``cap`` or later (its ``timeoutSeconds`` ran out first). The timer looks at the
    count of objects at least every quarter of ``timeout``, so silence is noticed between
    ``timeout`` and a quarter more after the last object; the reader pays nothing per event
    for it. The timer is joined before this returns.
    """
    unused = watch_events.LastVersion()  # the initial events' versions: only the end bookmark's counts
    finished = threading.Event()
    progress = _Progress()
    timer = _threads.spawn(
        _initial_events_timer,
        _threads.thread_name("watchlist", name),
        ctx,
        opened,
        name,
        clock,
        timeout,
        cap,
        finished,
        progress,
    )
    try:
        end = handle_any_watch(ctx, opened, store, name, unused, exit_on_initial_events_end=True,
                               keep=keep, transform=transform, on_start=progress.started)
    finally:
        finished.set()
        _threads.join_all([timer])
    reason = progress.timed_out
    if not reason and end.outcome is WatchOutcome.CLOSED and clock.now() - opened.started >= cap:
        reason = f"the watch ended after {cap:g}s, its timeoutSeconds"
    if reason and end.outcome in (WatchOutcome.CLOSED, WatchOutcome.DROPPED, WatchOutcome.FAILED):
        error = errors.SyncTimeoutError(f"no initial-events-end bookmark: {reason}")
        return WatchEnd(WatchOutcome.TIMED_OUT, end.events, error)
    return end


def _initial_events_timer(
    ctx: _context.Context,
    opened: OpenWatch,
    name: str,
    clock: _clock.Clock,
    timeout: float,
    cap: float,
    finished: threading.Event,
    progress: _Progress,
) -> None:
    """Until ``finished``: warn every few seconds; close the watch once it stalled or ran too long.

    Stalled: the count of objects (events but bookmarks) stayed the same for ``timeout``
    seconds, timed from the look that saw it last change; too long: ``cap`` seconds since the
    watch was asked for. Either sets ``progress.timed_out`` to why before closing the watch.
    """
    started = opened.started
    look = min(INITIAL_EVENTS_WARN_EVERY, timeout / 4)  # the most time between two looks at the count
    seen = progress.objects()
    moved = clock.now()  # when a look last saw the count change (or the timer began)
    next_warning = moved + INITIAL_EVENTS_WARN_EVERY
    while True:
        now = clock.now()
        count = progress.objects()
        if count != seen:
            seen, moved = count, now
        if now - moved >= timeout:
            progress.timed_out = f"no object for {timeout:g}s after {count} objects"
            break
        if now - started >= cap:
            progress.timed_out = f"not within {cap:g}s, the watch's timeoutSeconds ({count} objects)"
            break
        if now >= next_warning:
            log.warning(
                "reflector %s: still waiting for the initial events (%.0fs, %d objects so far)",
                name,
                now - started,
                count,
            )
            while next_warning <= now:
                next_warning += INITIAL_EVENTS_WARN_EVERY
        wait = min(look, moved + timeout - now, started + cap - now, next_warning - now)
        if clock.wait(finished, wait):
            return
        if ctx.cancelled():
            return
    opened.watch.close()
