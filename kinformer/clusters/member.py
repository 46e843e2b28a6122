"""Member: one engaged member cluster, an ordinary informer factory under a context of its own.

The :class:`Fleet` is a factory's set of engaged members, as its informers read it.

The multi-cluster factory (``factory.py``) makes a :class:`Member` when it engages a cluster and
stops it when the cluster is disengaged: an informer registry as a
:class:`~kinformer.DynamicSharedInformerFactory` keeps (``factory.InformerRegistry``) runs one
informer per resource type the multi-cluster informers (``informer.py``) asked for, under a
child :class:`~kinformer.Context` of the factory's, so stopping it touches no other cluster.
Nothing here waits on the network: informers start on their own threads and retry with
backoff while the cluster cannot be reached. Nothing here is a reference cycle either: a
stopped member's caches are freed as soon as it is dropped, so a re-engage does not leave a
cache behind for the cyclic collector (see ``_gc.py``: while a stopped informer is alive every
cache stays unfrozen, and the next list begins with a full collection of all of them).
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
from kinformer.client import listwatch
from kinformer.client.listerwatcher import ListOptions
from kinformer.clusters.delivery import Engagement
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer

log = logging.getLogger(__name__)

STOP_TIMEOUT = 30.0  # an informer joins its own threads with bounded waits; this only bounds a bug


class Member:
    """One engagement of one member cluster: its client, informers, context and handlers' tag.

    Thread-safe. :meth:`informer` makes (not starts) the informer of a resource type once;
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
    ) -> None:
        self.name = name
        self.api_client = api_client
        self.engagement = Engagement(name)
        self.ctx = parent.child(f"cluster-{name}")
        # made by a function of the settings only: a bound method of the member or of a factory
        # would make a cycle that keeps the stopped informers alive until a full collection
        self._registry = factory.InformerRegistry(functools.partial(
            _new_informer, name, api_client, default_resync, profile, dict(indexers), namespace,
            tweak_list_options, compact), "informer", functools.partial(informer_name, name))

    def informer(self, gvr: GroupVersionResource) -> SharedIndexInformer:
        """The informer of ``gvr`` in this cluster, made with the extra indexes on first use."""
        return self._registry.for_resource(gvr).informer()

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


def _new_informer(cluster: str, api_client: Any, default_resync: float, profile: str,
                  indexers: dict[str, IndexFunc], namespace: str,
                  tweak_list_options: Callable[[ListOptions], ListOptions | None] | None,
                  compact: bool, gvr: GroupVersionResource) -> factory.GenericInformer:
    """The informer of ``gvr`` in member ``cluster``, as a ``DynamicSharedInformerFactory`` makes
    it, with the namespace index and ``indexers``, named by :func:`informer_name`."""
    lw = listwatch.ListWatch.for_resource(api_client, gvr, namespace=namespace,
                                          tweak_list_options=tweak_list_options)
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
