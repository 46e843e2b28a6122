"""The reflector's one watch-event handler, for ordinary watches and for WatchList streams alike.

client-go's ``handleAnyWatch`` and its two callers, ``handleWatch`` and ``handleListWatch``:
:func:`handle_any_watch` reads the events of one open watch, checks each once through
:mod:`kinformer.meta`, applies it to a store, tracks its resourceVersion (:class:`LastVersion`),
and returns how the stream ended as a :class:`WatchEnd`. The reflector's watch loop
(:mod:`kinformer.reflector.watch_loop`) calls it with the reflector's store for every watch, and
its WatchList sync (:mod:`kinformer.reflector.watch_list`) through :func:`handle_initial_events`
with a temporary store for the initial events of a ``sendInitialEvents`` stream, which end at the
bookmark annotated ``k8s.io/initial-events-end``. What to do about an ending (watch again, back
off, relist, list instead) is theirs. :func:`open_watch` starts each watch the same way for
both.
"""

from __future__ import annotations

import dataclasses
import enum
import http.client
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kinformer import _threads, errors, meta
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.client import listerwatcher
from kinformer.reflector import sink

log = logging.getLogger(__name__)

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

    ``events`` counts the events applied by this call (skipped ones do not count);
    ``resource_version`` is the end bookmark's for :attr:`WatchOutcome.INITIAL_EVENTS_END`.
    """

    outcome: WatchOutcome
    events: int = 0
    error: BaseException | None = None
    resource_version: str = ""


class LastVersion:
    """The last resourceVersion a reflector has seen, and whether the server still has it.

    :func:`handle_any_watch` tracks :attr:`value`; :attr:`unavailable` is set when a list or
    a stream found that version gone or too new, so the next one asks for the current version
    (""). Only the reflector's run thread writes either; any thread may read :attr:`value`. Each
    is one reference, replaced whole, so neither side takes a lock.
    """

    __slots__ = ("unavailable", "value")

    def __init__(self, value: str = "") -> None:
        self.value = value
        self.unavailable = False


@dataclasses.dataclass(frozen=True, slots=True)
class OpenWatch:
    """A watch being read: the watch, its one iterator, and when it was asked for.

    A WatchList stream is read twice, its initial events then the rest, through one iterator.
    """

    watch: listerwatcher.Watch
    iterator: Iterator[listerwatcher.WatchEvent]
    started: float


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


def is_initial_events_end(obj: Any) -> bool:
    """Whether ``obj`` carries the annotation that ends a WatchList stream's initial events."""
    return meta.annotations(obj).get(listerwatcher.INITIAL_EVENTS_END_ANNOTATION) == "true"


def handle_any_watch(
    ctx: _context.Context,
    opened: OpenWatch,
    store: sink.Sink,
    name: str,
    last_version: LastVersion,
    *,
    propagate_now: bool = True,
    exit_on_initial_events_end: bool = False,
    keep: Callable[[Any], bool] | None = None,
    transform: Callable[[Any], Any] | None = None,
) -> WatchEnd:
    """Apply the events of ``opened`` to ``store``, in order, until the stream ends; blocks.

    Runs on the caller's thread; cancelling ``ctx`` closes the watch and returns STOPPED.
    ADDED, MODIFIED and DELETED call ``store.add``, ``update`` and ``delete`` with the event's
    object; BOOKMARK calls ``store.bookmark(rv)`` when the store has it. An event without
    metadata, of an unknown type, or (except a bookmark) without a name is logged and skipped;
    a watch whose ``checked`` attribute is True promises it yields no such event (it raised
    for them instead), and its events are not checked again.
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
    is logged as a store error is.
    """
    bookmark = store.bookmark
    actions: dict[str, Callable[[Any], object] | None] = {
        "ADDED": store.add,
        "MODIFIED": store.update,
        "DELETED": store.delete,
        "BOOKMARK": None,
    }
    take_version = store.update_resource_version
    well_formed = meta.is_well_formed
    # a watch whose events its reader checked already (HTTPWatch): not looked at twice
    checked_events = getattr(opened.watch, "checked", False) is True
    # a line per change, but none per initial event: like a list, they are summed up once
    debug = log.isEnabledFor(logging.DEBUG) and not exit_on_initial_events_end
    events = 0
    cancelled = ctx.done.is_set  # checked per event: one call, not two
    handle = ctx.on_cancel(opened.watch.close)
    try:
        for event in opened.iterator:
            if cancelled():
                return WatchEnd(WatchOutcome.STOPPED, events)
            event_type = event.type
            if event_type == "ERROR":
                return WatchEnd(WatchOutcome.FAILED, events, listerwatcher.error_from_event(event))
            obj = event.object
            if checked_events or (well_formed(obj) and event_type in actions):
                rv = obj["metadata"].get("resourceVersion", "")  # the usual decoded event
            else:
                checked = meta.resource_version(obj)
                if checked is None or event_type not in actions:
                    log.warning(
                        "reflector %s: %s event %s; skipped",
                        name,
                        event_type,
                        "without metadata" if checked is None else "of unknown type",
                    )
                    continue
                if event_type != "BOOKMARK" and not meta.has_name(obj):
                    log.warning("reflector %s: %s event without a name; skipped", name, event_type)
                    continue
                rv = checked
            if debug:
                log.debug("reflector %s: %s rv=%s", name, event_type, rv)
            action = actions[event_type]
            try:
                if action is not None:
                    if keep is None or keep(obj):
                        action(obj if transform is None else transform(obj))
                elif bookmark is not None:
                    bookmark(rv)
            except Exception:
                log.exception("reflector %s: store failed on %s event", name, event_type)
            events += 1
            if exit_on_initial_events_end and event_type == "BOOKMARK" and is_initial_events_end(obj):
                return WatchEnd(WatchOutcome.INITIAL_EVENTS_END, events, resource_version=rv)
            if not propagate_now and event_type != "ADDED":
                propagate_now = True
            if propagate_now and rv:
                last_version.value = rv
                if take_version is not None:
                    try:
                        take_version(rv)
                    except Exception:
                        log.exception("reflector %s: store failed to take rv %s", name, rv)
    except Exception as exc:
        if ctx.cancelled():
            return WatchEnd(WatchOutcome.STOPPED, events)
        outcome = WatchOutcome.DROPPED if is_dropped(exc) else WatchOutcome.FAILED
        return WatchEnd(outcome, events, exc)
    finally:
        handle.remove()
    if ctx.cancelled():
        return WatchEnd(WatchOutcome.STOPPED, events)
    return WatchEnd(WatchOutcome.CLOSED, events)


def handle_initial_events(
    ctx: _context.Context,
    opened: OpenWatch,
    store: sink.Sink,
    name: str,
    clock: _clock.Clock,
    timeout: float,
    keep: Callable[[Any], bool] | None = None,
    transform: Callable[[Any], Any] | None = None,
) -> WatchEnd:
    """Apply a WatchList stream's initial events to ``store`` until the end bookmark; blocks.

    ``store`` is the temporary store the events build up in (nothing reaches the reflector's
    store before the end bookmark); no resourceVersion is handed on. Returns INITIAL_EVENTS_END
    with the bookmark's version, leaving the watch open to be read on; or how the stream ended
    before it. A timer thread warns every few seconds while waiting and closes the watch after
    ``timeout`` seconds, which returns TIMED_OUT with a :class:`~kinformer.SyncTimeoutError`;
    the timer is joined before this returns.
    """
    unused = LastVersion()  # the initial events' versions: only the end bookmark's counts
    finished = threading.Event()
    timed_out = threading.Event()
    timer = _threads.spawn(
        _initial_events_timer,
        _threads.thread_name("watchlist", name),
        ctx,
        opened,
        name,
        clock,
        timeout,
        finished,
        timed_out,
    )
    try:
        end = handle_any_watch(ctx, opened, store, name, unused, exit_on_initial_events_end=True,
                               keep=keep, transform=transform)
    finally:
        finished.set()
        _threads.join_all([timer])
    if timed_out.is_set() and end.outcome in (
        WatchOutcome.CLOSED, WatchOutcome.DROPPED, WatchOutcome.FAILED
    ):
        error = errors.SyncTimeoutError(f"no initial-events-end bookmark within {timeout}s")
        return WatchEnd(WatchOutcome.TIMED_OUT, end.events, error)
    return end


def _initial_events_timer(
    ctx: _context.Context,
    opened: OpenWatch,
    name: str,
    clock: _clock.Clock,
    timeout: float,
    finished: threading.Event,
    timed_out: threading.Event,
) -> None:
    """Warn every few seconds until ``finished``; at ``timeout``, set ``timed_out`` and close the watch."""
    started = clock.now()
    deadline = started + timeout
    while True:
        remaining = deadline - clock.now()
        if remaining <= 0:
            break
        if clock.wait(finished, min(INITIAL_EVENTS_WARN_EVERY, remaining)):
            return
        if ctx.cancelled():
            return
        if clock.now() < deadline:
            log.warning(
                "reflector %s: still waiting for the initial events (%.0fs)",
                name,
                clock.now() - started,
            )
    timed_out.set()
    opened.watch.close()
