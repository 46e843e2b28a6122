"""MultiClusterInformerFactory: informers over member clusters that join and leave.

fleet's agents and multicluster-runtime's manager, on threads. A :class:`ClusterProvider
<kinformer.clusters.provider.ClusterProvider>` (``provider.py``, ``kubeconfig.py``) runs on a
thread of its own and offers clusters; each offered cluster that belongs to this factory's
shard (:meth:`MultiClusterInformerFactory.set_cluster_shard`) is engaged: a
:class:`~kinformer.clusters.member.Member` (``member.py``) runs an ordinary informer factory for
it under a child context, and every :class:`~kinformer.MultiClusterInformer` (``informer.py``)
attaches it. Disengaging detaches it (handlers get ``on_disengaged``, ``delivery.py``) and then
stops and joins its informers. Engaging never waits on the network, and each cluster has
threads of its own, so an unreachable or slow cluster costs only its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kinformer import _checks, _threads, context, errors, handlers, informer, sharding
from kinformer.cache import store
from kinformer.cache.thread_safe_store import IndexFunc
from kinformer.client import rest
from kinformer.client.listerwatcher import ListOptions
from kinformer.clusters import provider as _provider
from kinformer.clusters.informer import MultiClusterInformer
from kinformer.clusters.member import REQUEST_TIMEOUT, STOP_TIMEOUT, Fleet, Member
from kinformer.gvr import GroupVersionResource

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 30.0  # every thread joins with bounded waits of its own; this only bounds a bug


class MultiClusterInformerFactory:
    """Shared informers of resource types in every member cluster a provider offers.

    :meth:`for_resource` gives the :class:`~kinformer.MultiClusterInformer` of a resource type,
    before or after :meth:`start`. Lifecycle: ``start(stop)`` does not block, :meth:`shutdown`
    joins, and there is no blocking ``run``. ``start`` runs the provider on
    thread ``kinformer-clusters-provider``, and from then on every cluster the provider engages
    (and the shard admits) gets one informer per resource type, started at once, each informer
    following ``profile`` with ``default_resync`` and, besides the namespace index, ``indexers``.
    As client-go's filtered factories, ``namespace`` (default: all) and ``tweak_list_options``
    (e.g. a label selector) narrow what every cluster's informers list and watch, and
    ``compact=True`` gives every informer a compact cache (see
    :class:`~kinformer.SharedIndexInformer`). ``request_timeout`` is the ``(connect, read)``
    seconds every request to a member waits (default 10 and 30); a watch then waits for its
    events as long as it asked the server to keep it open, plus 30 s, or only 90 s once the
    member's server proved it sends a bookmark at least that often (kube-apiserver sends one a
    minute): a member whose connection dies silently, or whose server hangs, shows as
    ``"failing"`` within 90 s instead of looking synced until its watch would have ended.
    Everything stops when ``stop`` fires or :meth:`shutdown` is called.

    Engaging a cluster never waits on the network: a cluster that cannot be reached, or that
    accepts connections and never answers, is engaged at once, retries with backoff, shows as
    ``"failing"`` in ``cluster_status()`` and keeps ``has_synced()`` False, and holds no other
    cluster back. A cluster that stops answering is logged once at WARNING, and once at INFO
    when it recovers (``cluster NAME recovered after 12.3 s``), not once per retry. Each
    cluster's identity (its ``kube-system`` namespace's uid, ``ClusterStatus.cluster_id``) is
    read before its first list and again after a lost connection, before its watches resume:
    a cluster replaced behind its address has every informer relisted from scratch.
    Disengaging one (the provider said it went, or it left the shard) takes its objects out
    of the listers at once, gives each cluster handler one ``on_disengaged(cluster)`` and no
    ``on_delete`` (the objects were not deleted), and
    stops and joins its informers. A provider engaging a cluster again (new credentials)
    disengages it and engages it anew: its objects arrive as adds, and no other cluster is
    touched. Thread-safe; bad settings raise :class:`~kinformer.ConfigurationError`.

    Example, with ``kubeconfig`` a kubeconfig file's path and ``stop`` a ``threading.Event``::

        factory = MultiClusterInformerFactory(KubeconfigContextsProvider(kubeconfig))
        configmaps = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
        configmaps.add_event_handler(ClusterEventHandlerFuncs(
            add_func=lambda cluster, obj: print(cluster, obj["metadata"]["name"])))
        factory.start(stop)
        factory.wait_for_cache_sync(timeout=10)
        print({name: s.objects for name, s in configmaps.cluster_status().items()})
        factory.shutdown()
    """

    def __init__(
        self,
        provider: _provider.ClusterProvider,
        default_resync: float = 0,
        profile: str = "modern",
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        namespace: str = "",
        tweak_list_options: Callable[[ListOptions], ListOptions | None] | None = None,
        compact: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        if not callable(getattr(provider, "run", None)):
            raise errors.ConfigurationError(f"not a cluster provider (no run method): {provider!r}")
        informer.check_profile(profile)
        self._indexers = dict(indexers or {})
        if store.NAMESPACE_INDEX in self._indexers:
            raise errors.ConfigurationError(
                f"the {store.NAMESPACE_INDEX!r} index is always there; give other index names")
        self._provider = provider
        self._default_resync = _checks.seconds("default_resync", default_resync)
        self._profile = profile
        self._namespace = namespace
        self._tweak_list_options = tweak_list_options
        self._compact = compact
        self._request_timeout = rest.check_timeout("request_timeout", request_timeout)
        # its lock guards every field below; held while engaging and detaching, never while joining
        self._fleet = Fleet(self._provider_synced)
        self._lock = self._fleet.lock
        self._informers: dict[GroupVersionResource, MultiClusterInformer] = {}
        self._offered: dict[str, Any] = {}  # cluster -> api client, as the provider last said
        self._members = self._fleet.engaged  # engaged clusters
        self._stopping: set[Member] = set()  # disengaged, being stopped by some thread
        self._shard: sharding.ShardSelector | None = None
        self._ctx: context.Context | None = None  # set by start
        self._provider_thread: threading.Thread | None = None
        self._run_began = False
        self._closed = False

    # -- configuration and reading --------------------------------------------------------------

    def for_resource(self, gvr: GroupVersionResource) -> MultiClusterInformer:
        """The informer of ``gvr`` across clusters, made on first use; after :meth:`start` its
        informers start at once in every engaged cluster."""
        if not isinstance(gvr, GroupVersionResource):
            raise TypeError(f"not a GroupVersionResource: {gvr!r}")
        with self._lock:
            found = self._informers.get(gvr)
            if found is not None:
                return found
            found = MultiClusterInformer(self._fleet, gvr)
            self._informers[gvr] = found
            for member in self._members.values():
                found.attach(member)
                member.start()
            return found

    def clusters(self) -> list[str]:
        """The engaged clusters' names, sorted."""
        with self._lock:
            return sorted(self._members)

    def api_client_for(self, cluster: str) -> Any | None:
        """The ``ApiClient`` the provider engaged ``cluster`` with (the one its informers use),
        or None when ``cluster`` is not engaged: where a controller writes to that member."""
        with self._lock:
            member = self._members.get(cluster)
        return None if member is None else member.api_client

    def cluster_shard(self) -> sharding.ShardSelector | None:
        """The shard of clusters this factory engages; None for all of them."""
        with self._lock:
            return self._shard

    def has_synced(self) -> bool:
        """True once the provider synced and every informer of every engaged cluster did; False
        before start and once stopped."""
        with self._lock:
            if not self._fleet.running:
                return False
            informers = list(self._informers.values())
        return self._provider_synced() and all(i.has_synced() for i in informers)

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`has_synced` (True), the factory stops or ``timeout`` passes (False).

        False at once before :meth:`start`. ``timeout`` is None or finite seconds, else
        :class:`~kinformer.ConfigurationError`.
        """
        timeout = _checks.timeout("timeout", timeout)
        ctx = self._ctx
        if ctx is None:
            log.warning("wait_for_cache_sync before start: nothing can sync")
            return False
        return handlers.wait_for_cache_sync(ctx, self.has_synced, timeout=timeout)

    def _provider_synced(self) -> bool:
        """Whether the provider made its first pass of engagements (see ``ClusterProvider``)."""
        return self._run_began and _provider.provider_synced(self._provider, self._run_began)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, stop: context.StopSignal) -> None:
        """Run the provider and, from then on, the informers of every engaged cluster until
        ``stop`` fires or :meth:`shutdown`. Does not block; a second call does nothing."""
        with self._lock:
            if self._ctx is not None or self._closed:
                return
            ctx, _cancel = context.context_for_channel(stop)
            self._ctx = ctx
            self._fleet.running = True
            for each in self._informers.values():
                each.start_deliveries()
            self._provider_thread = _threads.spawn(
                self._run_provider, _threads.thread_name("clusters", "provider"), ctx)
        ctx.on_cancel(self._stopped)

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Stop the provider, every cluster's informers and every handler's delivery, and join
        their threads; later starts do nothing. No handler hears of it (no ``on_disengaged``).
        Must not be called from a handler."""
        with self._lock:
            self._closed = True
            ctx = self._ctx
        if ctx is not None:
            ctx.cancel()  # runs _stopped, here or on the thread that cancelled first
        members, threads = self._stopped()
        for member in members:
            member.ctx.cancel()  # all at once, then join: they stop in parallel
        for member in members:
            member.stop(timeout)
        if self._provider_thread is not None:
            threads.append(self._provider_thread)
        _threads.join_all(threads, timeout)
        with self._lock:
            self._stopping.difference_update(members)

    def _stopped(self) -> tuple[list[Member], list[threading.Thread]]:
        """Once the factory's context is cancelled: engage nothing more, forget every member
        without telling handlers, close the deliveries; what is left to join. Non-blocking."""
        with self._lock:
            self._closed = True
            self._fleet.running = False
            members = list(self._members.values())
            self._members.clear()
            self._stopping.update(members)
            threads = [t for each in self._informers.values() for t in each.close_deliveries()]
            return list(self._stopping), threads

    def _run_provider(self, ctx: context.Context) -> None:
        log.info("cluster provider %r starting", self._provider)
        self._run_began = True
        try:
            self._provider.run(ctx, self._engage, self._disengage)
        finally:
            log.info("cluster provider %r stopped", self._provider)

    # -- engaging and disengaging ----------------------------------------------------------------

    def _engage(self, name: str, api_client: Any) -> None:
        """The provider's ``engage``: offer ``name``; (re-)engage it when it is in the shard.

        :class:`~kinformer.ConfigurationError` for a bad name or something not an API client.
        """
        _provider.check_name(name)
        rest.api_client_of(api_client)
        with self._lock:
            if self._closed:
                return
            if self._offered.get(name) is api_client and name in self._members:
                return  # the same client again: nothing changed
            self._offered[name] = api_client
            leaving = self._detach_locked(name)
            if self._in_shard(name):
                self._attach_locked(name, api_client)
        if leaving is not None:
            log.info("cluster %s re-engaged with new credentials", name)
            self._stop_members([leaving])

    def _disengage(self, name: str) -> None:
        """The provider's ``disengage``: ``name`` is gone."""
        with self._lock:
            self._offered.pop(name, None)
            leaving = self._detach_locked(name)
        if leaving is not None:
            self._stop_members([leaving])

    def set_cluster_shard(self, selector: sharding.ShardSelector | None) -> None:
        """Engage only the clusters whose :func:`~kinformer.cluster_shard_hash` of their name lies in
        ``selector``'s ranges (its field is ignored); None engages every cluster offered.

        While running, the clusters that leave the shard are disengaged (one ``on_disengaged``
        each, no deletes) and the offered clusters that join it are engaged. A
        :class:`~kinformer.ShardCoordinator`'s listener can drive it, so replicas split a fleet.
        """
        if selector is not None and not isinstance(selector, sharding.ShardSelector):
            raise TypeError(f"not a ShardSelector: {selector!r}")
        with self._lock:
            if selector == self._shard:
                return
            self._shard = selector
            if not self._fleet.running:
                return
            leaving = [m for name in list(self._members) if not self._in_shard(name)
                       if (m := self._detach_locked(name)) is not None]
            for name, api_client in self._offered.items():
                if name not in self._members and self._in_shard(name):
                    self._attach_locked(name, api_client)
        if leaving:
            log.info("cluster shard changed: %d clusters leave", len(leaving))
            self._stop_members(leaving)

    def _in_shard(self, name: str) -> bool:
        shard = self._shard
        return shard is None or shard.matches_hash(sharding.cluster_shard_hash(name))

    def _attach_locked(self, name: str, api_client: Any) -> None:
        """Engage ``name``: a member with every resource's informer and handlers, started."""
        if self._ctx is None:
            return
        member = Member(name, api_client, self._ctx, self._default_resync, self._profile, self._indexers,
                        namespace=self._namespace, tweak_list_options=self._tweak_list_options,
                        compact=self._compact, request_timeout=self._request_timeout)
        self._members[name] = member
        for each in self._informers.values():
            each.attach(member)
        member.start()
        log.info("cluster %s engaged", name)

    def _detach_locked(self, name: str) -> Member | None:
        """Disengage ``name`` if engaged: out of the listers, handlers told; the member returned
        for the caller to stop outside the lock."""
        member = self._members.pop(name, None)
        if member is None:
            return None
        member.engagement.active = False
        for each in self._informers.values():
            each.detach(member)
        self._stopping.add(member)
        log.info("cluster %s disengaged", name)
        return member

    def _stop_members(self, members: list[Member]) -> None:
        for member in members:
            member.ctx.cancel()
        for member in members:
            member.stop(STOP_TIMEOUT)
        with self._lock:
            self._stopping.difference_update(members)

    def __repr__(self) -> str:
        with self._lock:
            return (f"<MultiClusterInformerFactory {self._provider!r} clusters={len(self._members)} "
                    f"resources={len(self._informers)}>")
