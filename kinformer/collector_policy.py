"""The informer's collector policy: the cyclic collector pauses over its lists, and its synced
cache is frozen.

A big list allocates millions of objects and frees none, and the collector, walking the growing
cache again and again, not the parser, would set the speed of the list. So an informer keeps
the collector off over each list, from the moment its first page is decoded (not before: the
request waits on the network with the collector on) until the list is queued, and over its
first list until it is applied, after which the synced cache is frozen out of the collector's
reach (:func:`kinformer._gc.freeze`); a failed list ends its pause before the reflector backs
off, and a stop ends every pause. The mechanism is :mod:`kinformer._gc`; this module is the
policy, and the informer (:mod:`kinformer.informer`) is its one user.

It reaches the reflector only through what the informer hands it, wrapped: the ListerWatcher
(:class:`PausingListerWatcher`: the first bulk decode of a list begins the pause, through the
:func:`kinformer._json.before_bulk_decodes` seam, and so does a page that comes back from a
ListerWatcher that decodes nothing, so the page's transform runs paused too; a WatchList
stream's initial events pile up paused), the store (:class:`PausingStore`: a list queued ends
the pause, a first list applied ends its own with a freeze) and the watch error handler
(:func:`ending_pauses`). The client and the reflector know nothing of it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from kinformer import _gc, _json, appliers, sharding
from kinformer import context as _context
from kinformer.cache import real_fifo
from kinformer.client import listerwatcher
from kinformer.gvr import GroupVersionResource
from kinformer.reflector import reflector

log = logging.getLogger(__name__)


class ListPauses:
    """The collector pauses of one informer.

    ``listing`` is held from a list's first decode (or its first page, or a WatchList stream's
    start) until the list is queued, or the list failed; ``first`` from the start of the first
    list's ``replace`` until that list is applied. Both are :class:`~kinformer._gc.HeldPause`
    objects: thread-safe, ended at most once per beginning.
    """

    __slots__ = ("first", "first_pending", "listing")

    def __init__(self) -> None:
        self.listing = _gc.HeldPause()
        self.first = _gc.HeldPause()
        self.first_pending = True  # no list applied yet: the next replace is the first list

    def stopped(self, cache: object) -> None:
        """The informer stopped: end both pauses without freezing, and give what was frozen
        back to the collector, so ``cache`` is reclaimed once dropped (see
        :func:`kinformer._gc.informer_stopped`)."""
        self.end_all()
        _gc.informer_stopped(cache)

    def end_all(self) -> None:
        """End both pauses without freezing."""
        self.listing.end()
        self.first.end()


class PausingListerWatcher:
    """The informer's ListerWatcher as its reflector calls it: each list paused from its decode.

    ``list`` runs the request with the collector on and begins ``pauses.listing`` before the
    first bulk decode on the reflector's thread (the HTTP lister's), or, for a ListerWatcher
    that decodes nothing, as the page comes back; a failed list ends it. ``watch`` begins it
    for a stream that sends its initial events (``send_initial_events``) once the stream is
    open, and ends it when that stream ends; any other watch is handed on as it is.
    """

    __slots__ = ("_inner", "_pauses", "reports_failures", "resource", "shard_selector")

    def __init__(self, inner: listerwatcher.ListerWatcher, pauses: ListPauses) -> None:
        self._inner = listerwatcher.with_context(inner)
        self._pauses = pauses
        self.resource: GroupVersionResource | None = None  # what it lists, as ``inner`` says
        self.shard_selector: sharding.ShardSelector | None = None
        if isinstance(inner, listerwatcher.DescribedListerWatcher):
            self.resource, self.shard_selector = inner.resource, inner.shard_selector
        # a ListerWatcher that reports its own failures (a member cluster's) says so through this
        self.reports_failures = getattr(inner, "reports_failures", False) is True

    def list(
        self, options: listerwatcher.ListOptions, *, ctx: _context.Context | None = None
    ) -> listerwatcher.ListResult:
        listing = self._pauses.listing
        try:
            with _json.before_bulk_decodes(listing.begin):
                result = self._inner.list(options, ctx=ctx)
        except BaseException:
            listing.end()
            raise
        listing.begin()  # a page decoded elsewhere: its transform and the list's replace paused
        return result

    def watch(
        self, options: listerwatcher.ListOptions, *, ctx: _context.Context | None = None
    ) -> listerwatcher.Watch:
        opened = self._inner.watch(options, ctx=ctx)
        if not options.send_initial_events:
            return opened
        self._pauses.listing.begin()  # as over a list: the initial events pile up paused
        if isinstance(opened, listerwatcher.BatchWatch):
            return _InitialEventsBatchWatch(opened, self._pauses.listing)
        return _InitialEventsWatch(opened, self._pauses.listing)


class _InitialEventsWatch:
    """A WatchList stream whose end also ends the pause its initial events began.

    The pause usually ends sooner, when the store takes the initial state; the stream ending
    first (closed, dropped, timed out before the end bookmark) ends it then, on the thread
    reading the stream.
    """

    __slots__ = ("_inner", "_pause")

    def __init__(self, inner: listerwatcher.Watch, pause: _gc.HeldPause) -> None:
        self._inner = inner
        self._pause = pause

    def __iter__(self) -> Iterator[listerwatcher.WatchEvent]:
        try:
            yield from self._inner
        finally:
            self._pause.end()

    def close(self) -> None:
        self._inner.close()


class _InitialEventsBatchWatch(_InitialEventsWatch):
    """An :class:`_InitialEventsWatch` over a BatchWatch, read a batch at a time as well."""

    __slots__ = ()

    @property
    def checked(self) -> bool:
        """The inner watch's promise that its events are checked (``HTTPWatch.checked``)."""
        return getattr(self._inner, "checked", False) is True

    def batches(self) -> Iterator[listerwatcher.WatchBatch]:
        inner = self._inner
        assert isinstance(inner, listerwatcher.BatchWatch)
        try:
            yield from inner.batches()
        finally:
            self._pause.end()


class PausingStore:
    """The informer's FIFO as its reflector writes to it: a list queued ends its pause.

    ``add``, ``update``, ``delete`` and ``resync`` are the FIFO's own bound methods, so a watch
    event costs no extra call. ``replace`` begins ``pauses.first`` for the informer's first list,
    before the FIFO keys it, unless the FIFO is closed; that pause ends when the list is applied
    (here if the FIFO took it whole, else in the informer's delta loop once synced), with the
    cache frozen, or without freezing when ``replace`` fails (the next list is then the first
    again) or the informer stops. Every ``replace`` then ends ``pauses.listing``. Called by the
    reflector's thread only.
    """

    __slots__ = ("_fifo", "_pauses", "add", "delete", "resync", "update")

    def __init__(self, fifo: appliers.FIFO, pauses: ListPauses) -> None:
        self._fifo = fifo
        self._pauses = pauses
        self.add = fifo.add
        self.update = fifo.update
        self.delete = fifo.delete
        self.resync = fifo.resync

    def replace(self, objs: list[Any], resource_version: str = "") -> None:
        fifo, pauses = self._fifo, self._pauses
        first = pauses.first
        hold = pauses.first_pending and not fifo.is_closed()
        if hold:
            pauses.first_pending = False
            first.begin()
        try:
            fifo.replace(objs, resource_version)
        except BaseException:
            if hold:
                pauses.first_pending = True
                first.end()
            pauses.listing.end()
            raise
        if hold and (fifo.has_synced() or fifo.is_closed()):  # nothing left for the delta loop
            first.end(freeze_first=fifo.has_synced())
        pauses.listing.end()


class BookmarkingPausingStore(PausingStore):
    """A :class:`PausingStore` over a RealFIFO: bookmarks, and a watch read's changes in one
    call (``add_batch``), go on to the FIFO too."""

    __slots__ = ("add_batch", "bookmark")

    def __init__(self, fifo: real_fifo.RealFIFO, pauses: ListPauses) -> None:
        super().__init__(fifo, pauses)
        self.bookmark = fifo.bookmark
        self.add_batch = fifo.add_batch


def pausing_store(fifo: appliers.FIFO, pauses: ListPauses) -> PausingStore:
    """``fifo`` as its informer's reflector writes to it (with bookmarks when it takes them)."""
    if isinstance(fifo, real_fifo.RealFIFO):
        return BookmarkingPausingStore(fifo, pauses)
    return PausingStore(fifo, pauses)


def ending_pauses(
    pauses: ListPauses, handler: reflector.WatchErrorHandler | None
) -> reflector.WatchErrorHandler:
    """The watch error handler the informer hands its reflector: a list or watch error ends the
    list's pause (the reflector backs off or watches next, with the collector on), then goes
    to ``handler`` (the informer's own, else the reflector's default)."""
    then = handler or reflector.default_watch_error_handler

    def on_error(failed: reflector.Reflector, error: BaseException) -> None:
        pauses.listing.end()
        then(failed, error)

    return on_error
