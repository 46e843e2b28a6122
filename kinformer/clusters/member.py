"""Member: one engaged member cluster, an ordinary informer factory under a context of its own.

The :class:`Fleet` is a factory's set of engaged members, as its informers read it.

The multi-cluster factory (``factory.py``) makes a :class:`Member` when it engages a cluster and
stops it when the cluster is disengaged: its :class:`~kinformer.DynamicSharedInformerFactory`
runs one informer per resource type the multi-cluster informers (``informer.py``) asked for,
under a child :class:`~kinformer.Context` of the factory's, so stopping it touches no other
cluster. Nothing here waits on the network: informers start on their own threads and retry
with backoff while the cluster cannot be reached.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kinformer import context, factory
from kinformer.client.interface import ListOptions
from kinformer.clusters.delivery import Engagement
from kinformer.gvr import GroupVersionResource
from kinformer.informer import IndexFunc, SharedIndexInformer

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
    ) -> None:
        self.name = name
        self.api_client = api_client
        self.engagement = Engagement(name)
        self.ctx = parent.child(f"cluster-{name}")
        self._indexers = dict(indexers)
        self._factory = factory.DynamicSharedInformerFactory(
            api_client, default_resync, namespace, tweak_list_options, profile=profile)
        self._lock = threading.Lock()  # guards _informers
        self._informers: dict[GroupVersionResource, SharedIndexInformer] = {}

    def informer(self, gvr: GroupVersionResource) -> SharedIndexInformer:
        """The informer of ``gvr`` in this cluster, made with the extra indexes on first use."""
        with self._lock:
            found = self._informers.get(gvr)
            if found is None:
                found = self._factory.for_resource(gvr).informer()
                if self._indexers:
                    found.add_indexers(self._indexers)
                self._informers[gvr] = found
            return found

    def find(self, gvr: GroupVersionResource) -> SharedIndexInformer | None:
        """The informer of ``gvr`` if one was made."""
        with self._lock:
            return self._informers.get(gvr)

    def start(self) -> None:
        """Start the informers not started yet; they run until :meth:`stop`. Does not block."""
        self._factory.start(self.ctx)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop every informer and wait for its threads. Blocks; not from one of its handlers."""
        self.ctx.cancel()
        self._factory.shutdown(timeout)

    def __repr__(self) -> str:
        return f"<Member {self.name} {self.engagement!r}>"


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
