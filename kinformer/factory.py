"""DynamicSharedInformerFactory: one shared informer per resource type, started and stopped together.

client-go's ``dynamicinformer.DynamicSharedInformerFactory``. ``for_resource(gvr)`` gets or creates
a :class:`~kinformer.SharedIndexInformer` over ``ListWatch.for_resource`` with a
namespace index; ``start`` runs each new one on its own thread (``kinformer-informer-<gvr>``).
Each informer runs under its own child :class:`~kinformer.Context`, so, unlike client-go
(kubernetes#79610), one informer can be stopped and dropped with :meth:`stop_informer` when its
resource type goes away; the InformerManager (``manager.py``) relies on this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kinformer import _threads, context, handlers, informer
from kinformer.cache import store
from kinformer.cache.lister import GenericLister
from kinformer.client import listwatch
from kinformer.gvr import GroupVersionResource

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 30.0  # an informer joins its own threads with bounded waits; this only bounds a bug


def gvr_subject(gvr: GroupVersionResource) -> str:
    """``apps/v1/deployments`` or ``v1/configmaps``: how threads and informers are named."""
    return "/".join(part for part in (gvr.group, gvr.version, gvr.resource) if part)


class GenericInformer:
    """A shared informer and a lister over its cache, for one resource type."""

    __slots__ = ("_gvr", "_informer")

    def __init__(self, shared: informer.SharedIndexInformer, gvr: GroupVersionResource) -> None:
        self._informer = shared
        self._gvr = gvr

    def informer(self) -> informer.SharedIndexInformer:
        return self._informer

    def lister(self) -> GenericLister:
        return GenericLister(self._informer.get_indexer(), self._gvr)

    def __repr__(self) -> str:
        return f"<GenericInformer {self._gvr}>"


@dataclass
class _Entry:
    generic: GenericInformer
    ctx: context.Context | None = None
    thread: threading.Thread | None = None
    started: bool = field(default=False)


class DynamicSharedInformerFactory:
    """Creates, starts and stops shared informers for resource types, one per GVR.

    Thread-safe. ``start(stop)`` does not block: it starts, each on its own thread, the informers
    created since the last start; they stop when ``stop`` fires, when :meth:`shutdown` is called,
    or individually through :meth:`stop_informer`. After ``shutdown`` the factory starts nothing.

        factory = DynamicSharedInformerFactory(api_client)
        cms = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
        factory.start(stop)
        factory.wait_for_cache_sync(stop, timeout=10)
        cms.lister().by_namespace("default").list("app=web")
    """

    def __init__(
        self,
        client: Any,
        default_resync: float = 0,
        namespace: str = "",
        tweak_list_options: Callable[[listwatch.ListOptions], listwatch.ListOptions | None] | None = None,
    ) -> None:
        self._client = client
        self._default_resync = default_resync
        self._namespace = namespace
        self._tweak_list_options = tweak_list_options
        self._lock = threading.Lock()  # guards _entries, _shutting_down
        self._entries: dict[GroupVersionResource, _Entry] = {}
        self._root = context.Context("factory")  # cancelled by shutdown(); parent of every start
        self._shutting_down = False

    def for_resource(self, gvr: GroupVersionResource) -> GenericInformer:
        """The informer for ``gvr``, created (not started) on first use."""
        with self._lock:
            entry = self._entries.get(gvr)
            if entry is None:
                entry = _Entry(self._new_informer(gvr))
                self._entries[gvr] = entry
            return entry.generic

    def start(self, stop: context.StopSignal) -> None:
        """Start every informer not started yet; they run until ``stop`` fires. Does not block."""
        with self._lock:
            if self._shutting_down:
                return
            pending = [(gvr, e) for gvr, e in self._entries.items() if not e.started]
            if not pending:
                return
            start_ctx = self._start_context(stop)
            for gvr, entry in pending:
                entry.ctx = start_ctx.child(f"informer-{gvr_subject(gvr)}")
                entry.thread = _threads.spawn(
                    entry.generic.informer().run,
                    _threads.thread_name("informer", gvr_subject(gvr)),
                    entry.ctx,
                )
                entry.started = True

    def wait_for_cache_sync(
        self, stop: context.StopSignal | None = None, timeout: float | None = None
    ) -> dict[GroupVersionResource, bool]:
        """Wait for every started informer to sync; map each GVR to whether it did.

        Returns when all synced, ``stop`` fired or ``timeout`` (real seconds, over all
        informers) passed. Informers not started yet are left out.
        """
        with self._lock:
            started = {gvr: e.generic.informer() for gvr, e in self._entries.items() if e.started}
        deadline = None if timeout is None else time.monotonic() + timeout
        result: dict[GroupVersionResource, bool] = {}
        for gvr, inf in started.items():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            result[gvr] = handlers.wait_for_cache_sync(stop, inf.has_synced, timeout=remaining)
        return result

    def stop_informer(self, gvr: GroupVersionResource, timeout: float = SHUTDOWN_TIMEOUT) -> bool:
        """Stop the informer of ``gvr``, wait for its thread, and forget it; False if there was none.

        A later :meth:`for_resource` creates a fresh informer, started by the next :meth:`start`.
        Must not be called from one of that informer's own handlers.
        """
        with self._lock:
            entry = self._entries.pop(gvr, None)
        if entry is None:
            return False
        if entry.ctx is not None:
            entry.ctx.cancel()
        if entry.thread is not None:
            _threads.join_all([entry.thread], timeout)
        return True

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Stop every informer and wait for their threads; later starts do nothing.

        Unlike client-go, this stops the informers itself rather than waiting for the ``stop``
        given to ``start``.
        """
        with self._lock:
            self._shutting_down = True
            threads = [e.thread for e in self._entries.values() if e.thread is not None]
        self._root.cancel()
        _threads.join_all(threads, timeout)

    def _start_context(self, stop: context.StopSignal) -> context.Context:
        """A child of the factory's root that is also cancelled when ``stop`` fires."""
        start_ctx = self._root.child()
        if isinstance(stop, context.Context):
            handle = stop.on_cancel(start_ctx.cancel)
            start_ctx.on_cancel(handle.remove)
        else:
            bridged = context.as_context(stop)
            handle = bridged.on_cancel(start_ctx.cancel)
            start_ctx.on_cancel(bridged.cancel)  # lets the bridging thread exit with us
            start_ctx.on_cancel(handle.remove)
        return start_ctx

    def _new_informer(self, gvr: GroupVersionResource) -> GenericInformer:
        lw = listwatch.ListWatch.for_resource(
            self._client,
            gvr,
            namespace=self._namespace,
            tweak_list_options=self._tweak_list_options,
        )
        shared = informer.SharedIndexInformer(
            lw,
            {},
            self._default_resync,
            {store.NAMESPACE_INDEX: store.meta_namespace_index_func},
            name=gvr_subject(gvr),
        )
        return GenericInformer(shared, gvr)

    def __repr__(self) -> str:
        return f"<DynamicSharedInformerFactory informers={len(self._entries)}>"
