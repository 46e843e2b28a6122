"""DynamicSharedInformerFactory: one shared informer per resource type, started and stopped together.

client-go's ``dynamicinformer.DynamicSharedInformerFactory``. ``for_resource(gvr)`` gets or creates
a :class:`~kinformer.SharedIndexInformer` (``informer.py``) over ``ListWatch.for_resource``
(``client/``) with a namespace index; ``start`` runs each new one on its own thread
(``kinformer-informer-<gvr>``). Each informer runs under its own child
:class:`~kinformer.Context`, so, unlike client-go (kubernetes#79610), one informer can be stopped
and dropped with :meth:`~DynamicSharedInformerFactory.stop_informer` when its resource type goes
away. The keeping of informers is :class:`InformerRegistry`, which the discovering factory
(``managers/discovering_factory.py``) uses as well; fleet's InformerManager
(``managers/informer_manager.py``) composes the factory itself.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kinformer import _checks, _threads, context, handlers, informer, sharding
from kinformer.cache import store
from kinformer.cache.cluster_lister import GenericClusterLister
from kinformer.cache.lister import GenericLister
from kinformer.client import listerwatcher, listwatch, rest
from kinformer.gvr import GroupVersionResource

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 30.0  # an informer joins its own threads with bounded waits; this only bounds a bug


def gvr_subject(gvr: GroupVersionResource, cluster: str | None = None) -> str:
    """``apps/v1/deployments`` or ``v1/configmaps``: how threads and informers are named;
    ``v1/configmaps@root:org`` for the informer of one cluster (``@*``: of every logical one),
    so informers of one resource in two clusters are told apart."""
    subject = "/".join(part for part in (gvr.group, gvr.version, gvr.resource) if part)
    return subject if cluster is None else f"{subject}@{cluster}"


class GenericInformer:
    """A shared informer and a lister over its cache, for one resource type.

    The lister of a cluster-aware informer (see :attr:`SharedIndexInformer.cluster_aware
    <kinformer.SharedIndexInformer.cluster_aware>`: one over ``cluster="*"``) is a
    :class:`~kinformer.GenericClusterLister`, with ``cluster(name)`` for one logical cluster.
    """

    __slots__ = ("_gvr", "_informer")

    def __init__(self, shared: informer.SharedIndexInformer, gvr: GroupVersionResource) -> None:
        self._informer = shared
        self._gvr = gvr

    def informer(self) -> informer.SharedIndexInformer:
        return self._informer

    def lister(self) -> GenericLister:
        if self._informer.cluster_aware:
            return GenericClusterLister(self._informer.get_indexer(), self._gvr)
        return GenericLister(self._informer.get_indexer(), self._gvr)

    def __repr__(self) -> str:
        return f"<GenericInformer {self._gvr}>"


@dataclass(slots=True)
class InformerEntry:
    """One resource type's informer and, once started, the context and thread it runs under.

    Not locked itself: it belongs to the :class:`InformerRegistry` that holds it until
    :meth:`InformerRegistry.detach` hands it over, and from then on to whoever stops it.
    """

    generic: GenericInformer
    ctx: context.Context | None = None
    thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self.ctx is not None

    def start(self, parent: context.Context, role: str, subject: str) -> None:
        """Run the informer on thread ``kinformer-<role>-<subject>`` under a child of ``parent``."""
        self.ctx = parent.child(f"{role}-{subject}")
        self.thread = _threads.spawn(
            self.generic.informer().run, _threads.thread_name(role, subject), self.ctx
        )


def stop_all(entries: Iterable[InformerEntry], timeout: float = SHUTDOWN_TIMEOUT) -> None:
    """Cancel every started one of ``entries``, then join their threads within ``timeout`` overall.

    Blocks; cancelling all first lets them stop in parallel. Must not be called from a handler of
    one of those informers.
    """
    entries = list(entries)
    for entry in entries:
        if entry.ctx is not None:
            entry.ctx.cancel()
    _threads.join_all([e.thread for e in entries if e.thread is not None], timeout)


class InformerRegistry:
    """The informers of one factory, one per resource type, each started under its own child context.

    The part both factories share: :class:`DynamicSharedInformerFactory` and the
    :class:`~kinformer.DiscoveringDynamicSharedInformerFactory` decide when to start and stop,
    the registry keeps the informers. :meth:`for_resource` creates one on first use with
    ``new_informer``; :meth:`start` runs the informers not started yet, each on thread
    ``kinformer-<role>-<subject(gvr)>`` (by default ``<gvr>``, see :func:`gvr_subject`);
    :meth:`detach` forgets informers and hands them back, to be stopped with :func:`stop_all`,
    so a caller can forget under its own lock and join outside it.
    A detached type gets a fresh informer from the next :meth:`for_resource`.

    Thread-safe. ``new_informer`` runs under the registry's lock, so it must not call back into
    the registry; no other code runs under it (spawning a thread runs none).
    """

    __slots__ = ("_entries", "_lock", "_new_informer", "_role", "_subject")

    def __init__(
        self,
        new_informer: Callable[[GroupVersionResource], GenericInformer],
        role: str,
        subject: Callable[[GroupVersionResource], str] = gvr_subject,
    ) -> None:
        self._new_informer = new_informer
        self._role = role
        self._subject = subject  # the thread's name after its role
        self._lock = threading.Lock()  # guards _entries; an entry's ctx and thread are set under it
        self._entries: dict[GroupVersionResource, InformerEntry] = {}

    def for_resource(self, gvr: GroupVersionResource) -> GenericInformer:
        """The informer for ``gvr``, created (not started) on first use."""
        with self._lock:
            return self._get_or_create(gvr).generic

    def start(self, parent: context.Context, gvrs: Iterable[GroupVersionResource] | None = None) -> None:
        """Start, under children of ``parent``, the informers of ``gvrs`` (created if missing) or,
        when ``gvrs`` is None, every informer, that were not started yet. Does not block."""
        with self._lock:
            if gvrs is None:
                pending = [(g, e) for g, e in self._entries.items() if not e.started]
            else:
                pending = [(g, self._get_or_create(g)) for g in gvrs]
            for gvr, entry in pending:
                if not entry.started:
                    entry.start(parent, self._role, self._subject(gvr))

    def has_pending(self) -> bool:
        """Whether some informer was created and not started yet."""
        with self._lock:
            return any(not e.started for e in self._entries.values())

    def started(self) -> dict[GroupVersionResource, informer.SharedIndexInformer]:
        """The started informers by resource type (stopped ones are kept until detached)."""
        with self._lock:
            return {gvr: e.generic.informer() for gvr, e in self._entries.items() if e.started}

    def informers(self) -> list[informer.SharedIndexInformer]:
        """Every informer, started or not."""
        with self._lock:
            return [e.generic.informer() for e in self._entries.values()]

    def resources(self) -> list[GroupVersionResource]:
        """Every resource type with an informer, started or not."""
        with self._lock:
            return list(self._entries)

    def threads(self) -> list[threading.Thread]:
        """The threads of the started informers."""
        with self._lock:
            return [e.thread for e in self._entries.values() if e.thread is not None]

    def detach(self, gvrs: Iterable[GroupVersionResource] | None = None) -> list[InformerEntry]:
        """Forget the informers of ``gvrs`` (all when None) and return them, running or not.

        Stops nothing: pass the result to :func:`stop_all`. Unknown types are skipped.
        """
        with self._lock:
            if gvrs is None:
                entries = list(self._entries.values())
                self._entries.clear()
                return entries
            return [e for e in (self._entries.pop(g, None) for g in gvrs) if e is not None]

    def _get_or_create(self, gvr: GroupVersionResource) -> InformerEntry:
        """Called with the lock held."""
        entry = self._entries.get(gvr)
        if entry is None:
            entry = InformerEntry(self._new_informer(gvr))
            self._entries[gvr] = entry
        return entry

    def __len__(self) -> int:
        return len(self._entries)


class DynamicSharedInformerFactory:
    """Creates, starts and stops shared informers for resource types, one per GVR.

    Thread-safe. Lifecycle: ``start(stop)`` does not block, :meth:`shutdown` joins, and there is
    no blocking ``run`` (client-go's factory has none). ``start`` starts, each on its own
    thread, the informers created since the last start; they stop when ``stop`` fires, when
    :meth:`shutdown` is called, or individually through :meth:`stop_informer`. After
    ``shutdown`` the factory starts nothing. With ``shard_selector`` (or
    :meth:`set_shard_selector`) every informer caches only that shard of its resource. Its
    informers follow ``profile`` (``"modern"`` or ``"classic"``, see
    :class:`~kinformer.SharedIndexInformer`), ``detect_mutations`` (see
    :meth:`SharedIndexInformer.check_mutations`) and ``compact`` (a compact cache, see
    :class:`~kinformer.SharedIndexInformer`), ``use_watch_list`` (the first state streamed by a
    watch, see there), and resync every ``default_resync`` seconds
    (0: never; finite, else :class:`~kinformer.ConfigurationError`). ``cluster`` names the kcp
    logical cluster every informer lists and watches (see :meth:`ListWatch.for_resource
    <kinformer.ListWatch.for_resource>`); with ``cluster="*"`` one informer per resource covers
    every logical cluster and is cluster-aware: keys ``<cluster>|<namespace>/<name>``, both
    cluster indexes, a :class:`~kinformer.GenericClusterLister` as its lister, and
    :class:`~kinformer.ClusterEventHandler` handlers told each object's cluster.

    Example, with ``api_client`` an ``ApiClient`` and ``stop`` a ``threading.Event``::

        factory = DynamicSharedInformerFactory(api_client)
        configmaps = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
        factory.start(stop)
        factory.wait_for_cache_sync(stop, timeout=10)
        web = configmaps.lister().by_namespace("default").list("app=web")
        factory.shutdown()  # stops every informer and waits for its threads
    """

    def __init__(
        self,
        client: Any,
        default_resync: float = 0,
        namespace: str = "",
        tweak_list_options: Callable[[listerwatcher.ListOptions], listerwatcher.ListOptions | None]
        | None = None,
        *,
        profile: str = "modern",
        shard_selector: sharding.ShardSelector | None = None,
        detect_mutations: bool | None = None,
        cluster: str | None = None,
        compact: bool = False,
        use_watch_list: bool = False,
    ) -> None:
        self._profile = informer.check_profile(profile)
        self._use_watch_list = bool(use_watch_list)
        self._cluster = rest.client_cluster(client, cluster)  # the host's, when its path names one
        self._detect_mutations = detect_mutations
        self._compact = compact
        self._shard_selector = shard_selector
        self._client = client
        self._default_resync = _checks.seconds("default_resync", default_resync)
        self._namespace = namespace
        self._tweak_list_options = tweak_list_options
        self._informers = InformerRegistry(
            self._new_informer, "informer", functools.partial(gvr_subject, cluster=self._cluster))
        self._lock = threading.Lock()  # guards _shutting_down; one start at a time, none after shutdown
        self._root = context.Context("factory")  # cancelled by shutdown(); parent of every start
        self._shutting_down = False
        # under _lock: each stop signal given to start -> the one context its informers run
        # under, made once (a context, or a bridging thread, per start would pile up)
        self._start_contexts: weakref.WeakKeyDictionary[Any, context.Context] = (
            weakref.WeakKeyDictionary())

    def for_resource(self, gvr: GroupVersionResource) -> GenericInformer:
        """The informer for ``gvr``, created (not started) on first use."""
        return self._informers.for_resource(gvr)

    @property
    def cluster(self) -> str | None:
        """The kcp logical cluster every informer lists and watches: its name, ``"*"`` for
        every one, None for an ordinary cluster (given, or named by the client's host)."""
        return self._cluster

    def set_shard_selector(self, selector: sharding.ShardSelector | None) -> None:
        """Cache only ``selector``'s shard (None: everything) in every informer, made and to come.

        Running informers relist with it at once (see
        :meth:`SharedIndexInformer.set_shard_selector`); :meth:`ShardSelector.empty()
        <kinformer.ShardSelector.empty>` empties every one of them and sends nothing.
        """
        with self._lock:
            self._shard_selector = selector
        for each in self._informers.informers():
            each.set_shard_selector(selector)

    def shard_selector(self) -> sharding.ShardSelector | None:
        """The shard the factory's informers cache, or None for everything."""
        return self._shard_selector

    def start(self, stop: context.StopSignal) -> None:
        """Start every informer not started yet; they run until ``stop`` fires. Does not block."""
        with self._lock:
            if self._shutting_down or not self._informers.has_pending():
                return
            self._informers.start(self._start_context(stop))

    def wait_for_cache_sync(
        self, stop: context.StopSignal | None = None, timeout: float | None = None
    ) -> dict[GroupVersionResource, bool]:
        """Wait for every started informer to sync; map each GVR to whether it did.

        Returns when all synced, ``stop`` fired or ``timeout`` (real seconds, over all
        informers) passed. Informers not started yet are left out, and so is one stopped
        meanwhile before it synced (:meth:`stop_informer`: its type left the server, say), which
        is no longer waited for. ``timeout`` is None or finite seconds, else
        :class:`~kinformer.ConfigurationError`.
        """
        timeout = _checks.timeout("timeout", timeout)
        started = self._informers.started()
        deadline = None if timeout is None else time.monotonic() + timeout
        result: dict[GroupVersionResource, bool] = {}
        for gvr, inf in started.items():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            handlers.wait_for_cache_sync(stop, _synced_or_stopped(inf), timeout=remaining)
            synced = inf.has_synced()
            if synced or not inf.is_stopped():
                result[gvr] = synced
        return result

    def stop_informer(self, gvr: GroupVersionResource, timeout: float = SHUTDOWN_TIMEOUT) -> bool:
        """Stop the informer of ``gvr``, wait for its thread, and forget it; False if there was none.

        A later :meth:`for_resource` creates a fresh informer, started by the next :meth:`start`.
        Must not be called from one of that informer's own handlers.
        """
        entries = self._informers.detach([gvr])
        stop_all(entries, timeout)
        return bool(entries)

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Stop every informer and wait for their threads; later starts do nothing.

        Unlike client-go, this stops the informers itself rather than waiting for the ``stop``
        given to ``start``.
        """
        with self._lock:
            self._shutting_down = True
            threads = self._informers.threads()
        self._root.cancel()
        _threads.join_all(threads, timeout)

    def _start_context(self, stop: context.StopSignal) -> context.Context:
        """A child of the factory's root that is also cancelled when ``stop`` fires: one per
        ``stop`` while it has not fired (the lock held)."""
        start_ctx = self._start_contexts.get(stop)
        if start_ctx is not None and not start_ctx.cancelled():
            return start_ctx
        start_ctx = self._root.child()
        self._start_contexts[stop] = start_ctx
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
            cluster=self._cluster,
        )
        shared = informer.SharedIndexInformer(
            lw,
            {},
            self._default_resync,
            {store.NAMESPACE_INDEX: store.meta_namespace_index_func},
            name=gvr_subject(gvr, self._cluster),
            profile=self._profile,
            detect_mutations=self._detect_mutations,
            compact=self._compact,
            use_watch_list=self._use_watch_list,
        )
        if self._shard_selector is not None:
            shared.set_shard_selector(self._shard_selector)
        return GenericInformer(shared, gvr)

    def __repr__(self) -> str:
        return f"<DynamicSharedInformerFactory informers={len(self._informers)}>"


def _synced_or_stopped(inf: informer.SharedIndexInformer) -> Callable[[], bool]:
    """A condition true once ``inf`` synced or stopped: nothing more to wait for."""
    return lambda: inf.has_synced() or inf.is_stopped()
