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

It reaches the reflector only through what the informer hands it, each wrapped once: the
ListerWatcher (:class:`PausingListerWatcher`: the first bulk decode of a list begins the pause,
through the :func:`kinformer._json.before_bulk_decodes` seam, and so does a page that comes back
from a ListerWatcher that decodes nothing, so the page's transform runs paused too; a WatchList
stream's initial events pile up paused), the store's ready :class:`~kinformer.reflector.sink.Sink`
(:func:`pausing_sink`: a list queued ends the pause, a first list applied ends its own with a
freeze; every other method is the FIFO's own) and the watch error handler
(:func:`ending_pauses`). The client and the reflector know nothing of it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from kinformer import _gc, _json, appliers, meta, sharding
from kinformer import context as _context
from kinformer.client import listerwatcher
from kinformer.gvr import GroupVersionResource
from kinformer.reflector import reflector, sink

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
    open, and hands the stream on as it is: that pause ends when the store takes the initial
    state, when a list or watch fails (:func:`ending_pauses`) or at stop; a stream closed before
    its end bookmark is streamed again at once, still paused. It says of itself what the inner
    ListerWatcher says (:func:`~kinformer.client.listerwatcher.describe`).
    """

    __slots__ = ("_inner", "_pauses", "cluster", "reports_failures", "resource", "shard_selector")

    def __init__(self, inner: listerwatcher.ListerWatcher, pauses: ListPauses) -> None:
        self._inner = listerwatcher.with_context(inner)
        self._pauses = pauses
        described = listerwatcher.describe(inner)
        self.resource: GroupVersionResource | None = described.resource
        self.shard_selector: sharding.ShardSelector | None = described.shard_selector
        self.cluster: str | None = described.cluster
        self.reports_failures: bool = described.reports_failures

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
        if options.send_initial_events:
            self._pauses.listing.begin()  # as over a list: the initial events pile up paused
        return opened


class _QueuedLists:
    """A list queued ends its pause: the ``replace`` and ``replace_listed`` of
    :func:`pausing_sink`. Called by the reflector's thread only."""

    __slots__ = ("_fifo", "_pauses")

    def __init__(self, fifo: appliers.FIFO, pauses: ListPauses) -> None:
        self._fifo = fifo
        self._pauses = pauses

    def replace(self, objs: list[Any], resource_version: str = "") -> None:
        self._queue(lambda: self._fifo.replace(objs, resource_version))

    def replace_listed(self, objs: list[Any], keys: list[str],
                       namespace_runs: meta.NamespaceRuns | None, resource_version: str) -> None:
        self._queue(lambda: self._fifo.replace_listed(objs, keys, namespace_runs, resource_version))

    def _queue(self, replace: Callable[[], None]) -> None:
        fifo, pauses = self._fifo, self._pauses
        first = pauses.first
        hold = pauses.first_pending and not fifo.is_closed()
        if hold:
            pauses.first_pending = False
            first.begin()
        try:
            replace()
        except BaseException:
            if hold:
                pauses.first_pending = True
                first.end()
            pauses.listing.end()
            raise
        if hold and (fifo.has_synced() or fifo.is_closed()):  # nothing left for the delta loop
            first.end(freeze_first=fifo.has_synced())
        pauses.listing.end()


def pausing_sink(fifo: appliers.FIFO, pauses: ListPauses) -> sink.Sink:
    """``fifo`` as its informer's reflector writes to it: its own :class:`~kinformer.reflector.sink.Sink`
    (every method it has, found once), with a list queued ending the list's pause.

    ``add``, ``update``, ``delete``, ``add_batch``, ``bookmark`` and ``resync`` are the FIFO's
    own bound methods, so a watch event costs no extra call. ``replace`` and
    ``replace_listed`` begin ``pauses.first`` for the informer's first list, before the FIFO
    keys it, unless the FIFO is closed; that pause ends when the list is applied (here if the
    FIFO took it whole, else in the informer's delta loop once synced), with the cache frozen,
    or without freezing when the replace fails (the next list is then the first again) or
    the informer stops. Every replace then ends ``pauses.listing``.
    """
    plain = sink.Sink.of(fifo)
    lists = _QueuedLists(fifo, pauses)
    return dataclasses.replace(
        plain, replace=lists.replace,
        replace_listed=None if plain.replace_listed is None else lists.replace_listed)


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
