"""Writing a watch's events into the reflector's store: one at a time, or a read of the stream at once.

Cut from :mod:`~kinformer.reflector.watch`, which reads the watch and calls this module for each
event or read. :class:`EventWriter` holds what is needed to write the events of one watch (the
store's methods, the shard filter, the transform, whether versions are handed on yet) and writes
them with client-go's rules: :meth:`EventWriter.one` an event, as a watch yielding one at a time
gives it, and :meth:`EventWriter.batch` the events of one read of a
:class:`~kinformer.client.listerwatcher.BatchWatch`. The usual read, every event a change its
reader checked, goes to a store taking batches (the RealFIFO's ``add_batch``) in one call, its
last resourceVersion noted once; any other read is written event by event, with the same outcome
as if its events had come one at a time. :class:`LastVersion` is the version a reflector resumes
from; :func:`is_initial_events_end` spots a WatchList stream's end bookmark. (An *applier*, in
this project, is what moves a FIFO's deltas into the cache: :mod:`kinformer.appliers`.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kinformer import errors, meta
from kinformer.cache.delta_fifo import DeltaType
from kinformer.client import listerwatcher
from kinformer.reflector import sink

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

_ACTIONS = {"ADDED": DeltaType.ADDED, "MODIFIED": DeltaType.UPDATED, "DELETED": DeltaType.DELETED}
_CHANGES = frozenset(_ACTIONS)
_KINDS = frozenset((*_ACTIONS, "BOOKMARK"))  # every type a writer takes (ERROR ends a watch)


class LastVersion:
    """The last resourceVersion a reflector has seen, and whether the server still has it.

    An :class:`EventWriter` tracks :attr:`value`; :attr:`unavailable` is set when a list or
    a stream found that version gone or too new, so the next one asks for the current version
    (""). Only the reflector's run thread writes either; any thread may read :attr:`value`. Each
    is one reference, replaced whole, so neither side takes a lock.
    """

    __slots__ = ("unavailable", "value")

    def __init__(self, value: str = "") -> None:
        self.value = value
        self.unavailable = False


def is_initial_events_end(obj: Any) -> bool:
    """Whether ``obj`` carries the annotation that ends a WatchList stream's initial events."""
    return meta.annotations(obj).get(listerwatcher.INITIAL_EVENTS_END_ANNOTATION) == "true"


class EventWriter:
    """Writes the events of one watch to a store, in order, and counts them; one thread.

    ``events`` counts the events written, ``bookmarks`` those of them that were bookmarks.

    See :func:`kinformer.reflector.watch.handle_any_watch` for the rules: an event that cannot
    be used is logged and skipped, a store error is logged and the event still counts, each
    counted event's version becomes ``last_version.value`` (held back while ``propagate_now``
    is False, until the first event that is not an ADDED), ``keep`` and ``transform`` apply to
    changes. ``checked``: the events' reader checked them already (``HTTPWatch.checked``).
    """

    __slots__ = ("_actions", "_add_batch", "_bookmark", "_checked", "_debug", "_keep", "_name",
                 "_take_version", "_transform", "bookmarks", "events", "last_version",
                 "propagate_now")

    def __init__(
        self,
        store: sink.Sink,
        name: str,
        last_version: LastVersion,
        *,
        propagate_now: bool,
        checked: bool,
        debug: bool,
        keep: Callable[[Any], bool] | None,
        transform: Callable[[Any], Any] | None,
    ) -> None:
        self._actions: dict[str, Callable[[Any], object] | None] = {
            "ADDED": store.add, "MODIFIED": store.update, "DELETED": store.delete, "BOOKMARK": None}
        self._add_batch = store.add_batch
        self._bookmark = store.bookmark
        self._take_version = store.update_resource_version
        self._name = name
        self._checked = checked
        self._debug = debug
        self._keep = keep
        self._transform = transform
        self.last_version = last_version
        self.propagate_now = propagate_now
        self.events = 0  # counted so far
        self.bookmarks = 0  # of them, bookmarks: the rest carried objects

    def one(self, event_type: str, obj: Any) -> bool:
        """Apply one event that is not an ERROR; False when it was skipped (not counted)."""
        if self._checked or (meta.is_well_formed(obj) and event_type in _KINDS):
            rv = obj["metadata"].get("resourceVersion", "")  # the usual decoded event
        else:
            checked = meta.resource_version(obj)
            if checked is None or event_type not in _KINDS:
                log.warning("reflector %s: %s event %s; skipped", self._name, event_type,
                            "without metadata" if checked is None else "of unknown type")
                return False
            if event_type != "BOOKMARK" and not meta.has_name(obj):
                log.warning("reflector %s: %s event without a name; skipped", self._name, event_type)
                return False
            rv = checked
        if self._debug:
            log.debug("reflector %s: %s rv=%s", self._name, event_type, rv)
        action = self._actions[event_type]
        try:
            if action is not None:
                keep, transform = self._keep, self._transform
                if keep is None or keep(obj):
                    action(obj if transform is None else transform(obj))
            else:
                self.bookmarks += 1
                if self._bookmark is not None:
                    self._bookmark(rv)
        except Exception:
            log.exception("reflector %s: store failed on %s event", self._name, event_type)
        self.events += 1
        if not self.propagate_now and event_type != "ADDED":
            self.propagate_now = True
        if self.propagate_now and rv:
            self.last_version.value = rv
            if self._take_version is not None:
                try:
                    self._take_version(rv)
                except Exception:
                    log.exception("reflector %s: store failed to take rv %s", self._name, rv)
        return True

    def batch(self, types: list[str], objects: list[Any], stop_at_initial_events_end: bool) -> int:
        """Apply the events of one read in order; the index of the event to stop at, or -1.

        Stops before an ERROR event (its index is returned, the events before it written) and,
        with ``stop_at_initial_events_end``, after the bookmark that ends a WatchList stream's
        initial events (its index; the events after it are left to the caller).
        """
        if not (self._checked and _CHANGES.issuperset(types)) or self._take_version or self._debug:
            one = self.one
            for i, event_type in enumerate(types):
                if event_type == "ERROR":
                    return i
                obj = objects[i]
                if (one(event_type, obj) and stop_at_initial_events_end
                        and event_type == "BOOKMARK" and is_initial_events_end(obj)):
                    return i
            return -1
        self._changes(types, objects)
        self.events += len(types)
        start = 0
        if not self.propagate_now:  # a watch from "" or "0": versions count from the first non-ADDED
            start = next((i for i, event_type in enumerate(types) if event_type != "ADDED"), -1)
            if start < 0:
                return -1
            self.propagate_now = True
        for i in range(len(objects) - 1, start - 1, -1):
            rv = objects[i]["metadata"].get("resourceVersion", "")
            if rv:
                self.last_version.value = rv
                break
        return -1

    def _changes(self, types: list[str], objects: list[Any]) -> None:
        """Hand a read of checked changes to the store: in one call when it takes batches."""
        kept_types, kept = types, objects
        keep, transform = self._keep, self._transform
        if keep is not None or transform is not None:
            kept_types, kept = [], []
            for event_type, obj in zip(types, objects, strict=True):
                try:
                    if keep is None or keep(obj):
                        kept.append(obj if transform is None else transform(obj))
                        kept_types.append(event_type)
                except Exception:
                    log.exception("reflector %s: store failed on %s event", self._name, event_type)
        if not kept:
            return
        add_batch = self._add_batch
        if add_batch is not None:
            try:
                add_batch([_ACTIONS[event_type] for event_type in kept_types], kept)
                return
            except Exception:  # it queued nothing: event by event, each error logged alone
                log.debug("reflector %s: batch refused; adding event by event", self._name, exc_info=True)
        actions = self._actions
        for event_type, obj in zip(kept_types, kept, strict=True):
            try:
                actions[event_type](obj)  # type: ignore[misc]  # a change: never None
            except Exception:
                log.exception("reflector %s: store failed on %s event", self._name, event_type)
