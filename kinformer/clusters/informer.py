"""MultiClusterInformer: one resource type across every engaged member cluster.

What :meth:`MultiClusterInformerFactory.for_resource
<kinformer.MultiClusterInformerFactory.for_resource>` returns. It owns no cache: each engaged
cluster's :class:`~kinformer.clusters.member.Member` runs an ordinary informer for the resource,
:meth:`MultiClusterInformer.lister` dispatches to their indexers, and each handler gets one
delivery thread fed by every cluster (``delivery.py``). The factory (``factory.py``) attaches
a member when it engages a cluster and detaches it when it disengages one, always under the
lock of its :class:`~kinformer.clusters.member.Fleet`, which also orders adding a handler with
clusters coming and going.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kinformer import cluster_handlers, errors, factory
from kinformer.cache.cluster_lister import GenericClusterLister
from kinformer.clusters.delivery import HandlerDelivery
from kinformer.clusters.member import Fleet, Member
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer
from kinformer.processor import ResourceEventHandlerRegistration

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """How one engaged cluster's informer of a resource type is doing.

    ``synced``: its first list is in the cache; ``last_error``: the error its requests fail
    with while they fail, None once one succeeds again (a list, or a watch that opened);
    ``objects``: how many objects it caches, over all namespaces. ``state`` is ``"syncing"``
    (no list yet, nothing failed), ``"synced"`` or ``"failing"`` (``last_error`` says why),
    and ``since`` the POSIX time (``time.time()``) at which that state began: a member that
    went down and came back shows ``"synced"`` since its recovery. ``cluster_id`` is the uid of
    the cluster's ``kube-system`` namespace (SIG Multicluster's ``cluster.clusterset.k8s.io``),
    None until read or when it cannot be read. Made by hand with the first three only,
    ``state`` follows from them. ``since`` takes no part in comparisons.
    """

    synced: bool
    last_error: BaseException | None
    objects: int
    state: str = ""
    since: float = field(default=0.0, compare=False)
    cluster_id: str | None = None

    def __post_init__(self) -> None:
        if not self.state:
            state = "failing" if self.last_error is not None else "synced" if self.synced else "syncing"
            object.__setattr__(self, "state", state)


class _HandlerBinding:
    """One handler of a :class:`MultiClusterInformer`: its delivery, and its registration on the
    informer of each engaged cluster.

    The informer calls :meth:`attach`, :meth:`detach`, :meth:`remove` and :meth:`start` with
    the fleet's lock held, so they are ordered with clusters coming and going; ``_lock`` is
    innermost (nothing is called while it is held) and lets :meth:`synced` read from any thread.
    """

    __slots__ = ("_fleet", "_gvr", "_lock", "_registrations", "delivery")

    def __init__(self, fleet: Fleet, gvr: GroupVersionResource, delivery: HandlerDelivery) -> None:
        self._fleet = fleet
        self._gvr = gvr
        self.delivery = delivery
        self._lock = threading.Lock()  # guards _registrations
        # cluster -> its member and the registration on the member's informer
        self._registrations: dict[str, tuple[Member, ResourceEventHandlerRegistration]] = {}

    def synced(self) -> bool:
        if not self._fleet.running or not self._fleet.provider_synced():
            return False
        with self._lock:
            registrations = [reg for _member, reg in self._registrations.values()]
        return all(reg.has_synced() for reg in registrations) and self.delivery.pending_initial() == 0

    def synced_for(self, cluster: str) -> bool | None:
        """Whether the handler has had member ``cluster``'s initial list; None when the
        handler is not registered on that member (not engaged, or left out)."""
        with self._lock:
            found = self._registrations.get(cluster)
        if found is None:
            return None
        member, reg = found
        return reg.has_synced() and self.delivery.pending_initial(member.engagement) == 0

    def attach(self, member: Member) -> None:
        """Register the handler's forwarder on ``member``'s informer of the resource.

        A handler made per member (a controller's) is not registered on a member whose cache
        is cluster-aware (on kcp's ``/clusters/*``): its keys name the member, never a logical
        cluster, so two logical clusters' ``default/app`` would be one key. That is logged as
        an error, once per member and handler, instead of reconciling the wrong objects.
        """
        shared = member.informer(self._gvr)
        handler = self.delivery.handler
        if (self.delivery.is_per_cluster and shared.cluster_aware
                and handler.for_cluster(member.name) is not handler):  # itself: keys as it likes
            log.error(
                "member %r caches every logical cluster behind kcp's /clusters/*: %r makes one "
                "handler per member, whose keys cannot name an object's logical cluster, so it "
                "gets none of %s's notifications from this member; give each logical cluster a "
                "context of its own (/clusters/<name>), or read the member with a "
                "ClusterEventHandler and lister.cluster(%r)",
                member.name, handler, self._gvr, member.name)
            return
        forwarder = self.delivery.forwarder(member.engagement)
        try:
            reg = shared.add_event_handler(forwarder)
        except errors.StoppedError:  # the factory is stopping: nothing more to deliver
            return
        with self._lock:
            self._registrations[member.name] = (member, reg)

    def detach(self, member: Member) -> None:
        """Forget ``member`` (its engagement is over); a cluster handler gets ``on_disengaged``."""
        with self._lock:
            self._registrations.pop(member.name, None)
        self.delivery.disengaged(member.engagement)

    def remove(self) -> None:
        """Unregister from every member's informer and close the delivery (its buffer dropped)."""
        with self._lock:
            found = list(self._registrations.values())
            self._registrations.clear()
        for member, reg in found:
            member.informer(self._gvr).remove_event_handler(reg)
        self.delivery.close()


class ClusterHandlerRegistration:
    """What :meth:`MultiClusterInformer.add_event_handler` returns; pass it to ``remove_event_handler``.

    ``has_synced()`` is True once the provider synced, every engaged cluster's informer synced
    and the handler returned from every ``on_add`` of their initial lists.
    """

    __slots__ = ("_binding",)

    def __init__(self, binding: _HandlerBinding) -> None:
        self._binding = binding

    @property
    def handler(self) -> Any:
        return self._binding.delivery.handler

    def has_synced(self) -> bool:
        return self._binding.synced()

    def has_synced_for(self, cluster: str) -> bool | None:
        """True once the handler returned from every ``on_add`` of member ``cluster``'s
        current initial list; None when it hears nothing from ``cluster`` (not engaged)."""
        return self._binding.synced_for(cluster)

    def __repr__(self) -> str:
        return f"<ClusterHandlerRegistration {self.handler!r}>"


class MultiClusterInformer:
    """One resource type across the engaged member clusters of a MultiClusterInformerFactory.

    A handler added with :meth:`add_event_handler` hears from every engaged cluster, on one
    thread of its own, in the order each cluster's notifications arrived: a
    :class:`~kinformer.ClusterEventHandler` is told the cluster (``on_add(cluster, obj)`` ...)
    and gets ``on_disengaged(cluster)`` when one leaves, after that cluster's last
    notification; any other handler gets the plain calls. Added late, a handler first gets an
    add for every object cached. :meth:`lister` reads every engaged cluster's cache,
    :meth:`cluster_status` says how each is doing and :meth:`has_synced` is True once the
    provider synced and every engaged cluster did: an unreachable cluster keeps it False for as
    long as it is engaged, and holds no other cluster back. Thread-safe.

    A handler costs one thread per engaged cluster, its listener on that cluster's informer
    (client-go's ``processorListener``: a cluster's informer never waits on the handler or on
    another cluster), plus its one delivery thread, which merges the clusters into one stream
    as multicluster-runtime merges a fleet into one queue.
    """

    def __init__(self, fleet: Fleet, gvr: GroupVersionResource) -> None:
        self._fleet = fleet
        self._gvr = gvr
        self._subject = factory.gvr_subject(gvr)
        # each handler added, by its registration; guarded by fleet.lock
        self._bindings: dict[ClusterHandlerRegistration, _HandlerBinding] = {}
        # removed, their threads perhaps still in a callback: joined on shutdown; fleet.lock.
        # Those whose threads exited are let go at the next add or remove: each holds its
        # handler (a controller's holds the whole controller), so a process that adds and
        # removes handlers for weeks (controllers started and stopped) would keep them all
        self._retired: list[HandlerDelivery] = []
        self._lister = GenericClusterLister.from_cluster_indexers(_Indexers(fleet, gvr), gvr)

    @property
    def gvr(self) -> GroupVersionResource:
        return self._gvr

    # -- handlers ----------------------------------------------------------------------------

    def add_event_handler(self, handler: Any) -> ClusterHandlerRegistration:
        """Deliver the resource's notifications from every engaged cluster to ``handler``.

        ``handler`` is a :class:`~kinformer.ClusterEventHandler` (called with the cluster), a
        :class:`~kinformer.cluster_handlers.PerClusterHandler` (``for_cluster(cluster)`` makes
        the handler each engaged cluster calls as usual: a controller's
        :meth:`~kinformer.Controller.event_handler` is one, queueing keys that name the
        cluster) or any :class:`~kinformer.ResourceEventHandler` (called as usual). A
        :class:`~kinformer.FilteringResourceEventHandler` in front of a cluster handler is a
        cluster handler too (``on_disengaged`` included). Clusters engaged later deliver to it too.
        """
        for method in ("on_add", "on_update", "on_delete"):
            if not callable(getattr(handler, method, None)):
                raise TypeError(f"not an event handler (no {method}): {handler!r}")
        handler = cluster_handlers.as_cluster_handler(handler)  # a filter in front of one is one
        binding = _HandlerBinding(self._fleet, self._gvr, HandlerDelivery(handler, self._subject))
        registration = ClusterHandlerRegistration(binding)
        with self._fleet.lock:
            self._prune_retired_locked()
            self._bindings[registration] = binding
            for member in self._fleet.members():
                binding.attach(member)
            if self._fleet.running:
                binding.delivery.start()
        return registration

    def remove_event_handler(self, registration: ClusterHandlerRegistration) -> None:
        """Stop delivering to a handler; idempotent. Its buffered notifications are dropped."""
        with self._fleet.lock:
            binding = self._bindings.pop(registration, None)
            if binding is None:
                return
            binding.remove()
            self._prune_retired_locked()
            self._retired.append(binding.delivery)

    def _prune_retired_locked(self) -> None:
        """Forget the removed handlers' deliveries whose threads exited (or never started)."""
        self._retired = [d for d in self._retired if d.thread is not None and d.thread.is_alive()]

    # -- reading ------------------------------------------------------------------------------

    def lister(self) -> GenericClusterLister:
        """A lister over every engaged cluster's cache, following clusters as they come and go:
        ``get("member-1|default/app")`` for one cluster's object, ``items()`` for
        ``(cluster, object)`` pairs (the objects carry no cluster of their own)."""
        return self._lister

    def has_synced(self) -> bool:
        """True once the provider synced and every engaged cluster's informer synced; False
        before start and once stopped."""
        if not self._fleet.running or not self._fleet.provider_synced():
            return False
        return all(member.informer(self._gvr).has_synced() for member in self._fleet.members())

    def cluster_status(self) -> dict[str, ClusterStatus]:
        """Each engaged cluster's :class:`ClusterStatus` for this resource, by name."""
        status: dict[str, ClusterStatus] = {}
        for member in self._fleet.members():
            shared = member.informer(self._gvr)
            state, since, error = member.informer_health(self._gvr).snapshot()
            synced = shared.has_synced()
            if state == "synced" and not synced:  # listed, not yet in the cache
                state = "syncing"
            status[member.name] = ClusterStatus(
                synced, error, len(shared.get_indexer()), state, since, member.identity.uid)
        return status

    def informer_for(self, cluster: str) -> SharedIndexInformer | None:
        """The informer of this resource in ``cluster``; None when it is not engaged."""
        member = self._fleet.member(cluster)
        return None if member is None else member.informer(self._gvr)

    # -- the factory's side: call with fleet.lock held -----------------------------------------

    def attach(self, member: Member) -> None:
        """Make ``member``'s informer of this resource and register every handler on it."""
        member.informer(self._gvr)
        for binding in self._bindings.values():
            binding.attach(member)

    def detach(self, member: Member) -> None:
        """Forget ``member`` (its engagement is over): each handler drops what it has of it and
        a cluster handler gets ``on_disengaged``."""
        for binding in self._bindings.values():
            binding.detach(member)

    def start_deliveries(self) -> None:
        for binding in self._bindings.values():
            binding.delivery.start()

    def close_deliveries(self) -> list[threading.Thread]:
        """Close every delivery; return their threads to join."""
        deliveries = [b.delivery for b in self._bindings.values()] + self._retired
        for delivery in deliveries:
            delivery.close()
        return [d.thread for d in deliveries if d.thread is not None]

    def __repr__(self) -> str:
        return f"<MultiClusterInformer {self._gvr}>"


class _Indexers(Mapping[str, Any]):
    """The live mapping of engaged cluster to its indexer of one resource, for the lister."""

    __slots__ = ("_fleet", "_gvr")

    def __init__(self, fleet: Fleet, gvr: GroupVersionResource) -> None:
        self._fleet = fleet
        self._gvr = gvr

    def __getitem__(self, name: str) -> Any:
        member = self._fleet.member(name)
        if member is None:
            raise KeyError(name)
        return member.informer(self._gvr).get_indexer()

    def __iter__(self) -> Iterator[str]:
        return iter([member.name for member in self._fleet.members()])

    def __len__(self) -> int:
        return len(self._fleet.members())

    def values(self) -> Any:
        return [member.informer(self._gvr).get_indexer() for member in self._fleet.members()]
