"""Member: one engaged member cluster, an ordinary informer factory under a context of its own.

The :class:`Fleet` is a factory's set of engaged members, as its informers read it.

The multi-cluster factory (``factory.py``) makes a :class:`Member` when it engages a cluster and
stops it when the cluster is disengaged: an informer registry as a
:class:`~kinformer.DynamicSharedInformerFactory` keeps (``factory.InformerRegistry``) runs one
informer per resource type the multi-cluster informers (``informer.py``) asked for, under a
child :class:`~kinformer.Context` of the factory's, so stopping it touches no other cluster.
Each informer's requests time out (:data:`REQUEST_TIMEOUT`, a watch's events after its
server-side timeout plus :data:`WATCH_READ_MARGIN`, or after :data:`BOOKMARK_READ_TIMEOUT` once
the server proved it sends bookmarks that often) and report to the member's health and
identity (``health.py``, ``identity.py``): a watch gone silent marks the member down. Nothing
here waits on the network: informers start on their own threads and retry with backoff while
the cluster cannot be reached.
Nothing here is a reference cycle either: a stopped member's caches are freed as soon as it
is dropped, so a re-engage does not leave a cache behind for the cyclic collector (see
``_gc.py``: while a stopped informer is alive every cache stays unfrozen, and the next list
begins with a full collection of all of them).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kinformer import _threads, context, factory, informer
from kinformer.cache import store
from kinformer.cache.thread_safe_store import IndexFunc
from kinformer.client import listwatch, resource, rest
from kinformer.client.listerwatcher import ListOptions
from kinformer.clusters.delivery import Engagement
from kinformer.clusters.health import InformerHealth, MemberHealth, ReportingListerWatcher
from kinformer.clusters.identity import Identity
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer

log = logging.getLogger(__name__)

STOP_TIMEOUT = 30.0  # an informer joins its own threads with bounded waits; this only bounds a bug
# (connect, read) seconds for every request to a member: a cluster that accepts connections and
# never answers fails its list after this and retries with backoff, instead of hanging on it
REQUEST_TIMEOUT = (10.0, 30.0)
# a watch asks the server to end it after 5-10 minutes; its events are waited for that long plus
# this, so an idle watch is never cut by the client, and a silent dead one is noticed after it
WATCH_READ_MARGIN = 30.0
# ...unless its server proved it sends a bookmark at least this often (kube-apiserver's minute
# plus the margin): then each read waits this long, so a member whose connection died silently
# (a partition, a node gone) or whose server hangs shows as failing after 90 s, not 10 minutes
BOOKMARK_READ_TIMEOUT = listwatch.SERVER_BOOKMARK_INTERVAL + WATCH_READ_MARGIN


class Member:
    """One engagement of one member cluster: its client, informers, context and handlers' tag.

    ``health`` says whether the cluster answers (and logs each change once), ``identity`` which
    cluster answers (its kube-system uid). Thread-safe. :meth:`informer` makes (not starts) the
    informer of a resource type once;
    :meth:`start` runs those not started yet; :meth:`stop` cancels the context and joins every
    informer thread, and may be called more than once and from several threads.
    """

    def __init__(
        self,
        name: str,
        api_client: Any,
        parent: context.Context,
        default_resync: float,
        profile: str,
        indexers: Mapping[str, IndexFunc],
        *,
        namespace: str = "",
        tweak_list_options: Callable[[ListOptions], ListOptions | None] | None = None,
        compact: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self.name = name
        self.api_client = api_client
        self.engagement = Engagement(name)
        self.ctx = parent.child(f"cluster-{name}")
        self.health = MemberHealth(name)
        self.identity = Identity(name, rest.Client(api_client), request_timeout)
        self._informer_health: dict[GroupVersionResource, InformerHealth] = {}
        # made by a function of the settings only: a bound method of the member or of a factory
        # would make a cycle that keeps the stopped informers alive until a full collection
        self._registry = factory.InformerRegistry(functools.partial(
            _new_informer, name, api_client, default_resync, profile, dict(indexers), namespace,
            tweak_list_options, compact, _Reporting(self.health, self.identity,
                                                    self._informer_health, request_timeout)),
            "informer", functools.partial(informer_name, name))

    def informer(self, gvr: GroupVersionResource) -> SharedIndexInformer:
        """The informer of ``gvr`` in this cluster, made with the extra indexes on first use."""
        return self._registry.for_resource(gvr).informer()

    def informer_health(self, gvr: GroupVersionResource) -> InformerHealth:
        """How the informer of ``gvr`` is doing (made with the informer)."""
        self.informer(gvr)
        return self._informer_health[gvr]

    def start(self) -> None:
        """Start the informers not started yet; they run until :meth:`stop`. Does not block."""
        if not self.ctx.cancelled():
            self._registry.start(self.ctx)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop every informer and wait for its threads. Blocks; not from one of its handlers."""
        self.ctx.cancel()
        _threads.join_all(self._registry.threads(), timeout)

    def __repr__(self) -> str:
        return f"<Member {self.name} {self.engagement!r}>"


def informer_name(cluster: str, gvr: GroupVersionResource) -> str:
    """``v1/configmaps@member-1``: the name of a member's informer of ``gvr``, in its threads
    (``kinformer-reflector-v1/configmaps@member-1``), log lines and metrics labels, so two
    clusters' informers of one resource type are told apart."""
    return factory.gvr_subject(gvr, cluster)


class _Reporting:
    """What a member's informers report to and read: its health, its identity, each informer's
    health by resource (filled as informers are made) and the request timeouts."""

    __slots__ = ("health", "identity", "informers", "timeout")

    def __init__(self, health: MemberHealth, identity: Identity,
                 informers: dict[GroupVersionResource, InformerHealth],
                 timeout: tuple[float, float]) -> None:
        self.health = health
        self.identity = identity
        self.informers = informers
        self.timeout = timeout


def _new_informer(cluster: str, api_client: Any, default_resync: float, profile: str,
                  indexers: dict[str, IndexFunc], namespace: str,
                  tweak_list_options: Callable[[ListOptions], ListOptions | None] | None,
                  compact: bool, reporting: _Reporting,
                  gvr: GroupVersionResource) -> factory.GenericInformer:
    """The informer of ``gvr`` in member ``cluster``, as a ``DynamicSharedInformerFactory`` makes
    it, with the namespace index and ``indexers``, named by :func:`informer_name`; its requests
    time out (a watch's reads after its server-side timeout plus a margin, or after
    :data:`BOOKMARK_READ_TIMEOUT` once its server proved it bookmarks that often) and report to
    the member's health and identity (``health.py``)."""
    connect, read = reporting.timeout
    http = resource.HTTPResource(rest.Client(api_client), gvr, namespace, None, None, read, connect,
                                 tweak_list_options, watch_margin=WATCH_READ_MARGIN,
                                 bookmark_timeout=BOOKMARK_READ_TIMEOUT)
    inner = listwatch.ListWatch(http.list, http.watch)
    inner.resource = gvr
    inner.cluster = rest.host_cluster(api_client)  # a member on kcp's /clusters/*: cluster-aware
    health = reporting.informers.setdefault(gvr, InformerHealth())
    lw = ReportingListerWatcher(inner, gvr, reporting.health, reporting.identity, health)
    shared = informer.SharedIndexInformer(
        lw, {}, default_resync, {store.NAMESPACE_INDEX: store.meta_namespace_index_func, **indexers},
        name=informer_name(cluster, gvr), profile=profile, compact=compact)
    return factory.GenericInformer(shared, gvr)


class Fleet:
    """The engaged members of one multi-cluster factory, as the factory changes them and its
    informers (``informer.py``) read them.

    ``lock`` guards ``engaged`` and ``running``; the factory holds it while it attaches a member
    to the informers or detaches one, so a reader never sees a member half attached. It is
    never held while threads are joined. ``provider_synced`` says whether the provider made
    its first pass of engagements.
    """

    def __init__(self, provider_synced: Callable[[], bool]) -> None:
        self.lock = threading.RLock()
        self.engaged: dict[str, Member] = {}
        self.running = False  # started and not stopped: deliveries run
        self.provider_synced = provider_synced

    def member(self, name: str) -> Member | None:
        """The engaged member called ``name``, or None."""
        with self.lock:
            return self.engaged.get(name)

    def members(self) -> list[Member]:
        """The engaged members, in the order they were engaged."""
        with self.lock:
            return list(self.engaged.values())

    def __repr__(self) -> str:
        with self.lock:
            return f"<Fleet {', '.join(self.engaged) or 'no clusters'}>"
