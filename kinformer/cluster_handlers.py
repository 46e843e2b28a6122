"""Cluster event handlers: notifications that say which cluster they came from.

A :class:`ClusterEventHandler` receives ``on_add(cluster, obj)``, ``on_update(cluster, old,
new)``, ``on_delete(cluster, obj)`` and ``on_disengaged(cluster)`` (a member cluster left: forget
its objects, which were not deleted); :class:`ClusterEventHandlerFuncs` adapts plain functions.
A :class:`PerClusterHandler` is the other way to hear the cluster from a multi-cluster informer:
an ordinary handler that makes one of itself per member cluster (``for_cluster(cluster)``), as
the controller's :class:`~kinformer.EnqueueRequestForObject` does to queue keys that name it.
Informers deliver plain notifications (``handlers.py``), so two adapters turn a cluster handler
into an ordinary :class:`~kinformer.ResourceEventHandler`: :class:`ClusterBoundHandler` for an
informer of one member cluster (the multi-cluster informer of ``clusters/``), and
:class:`ClusterAnnotationHandler` for an informer across logical clusters, which reads each
object's cluster from its ``kcp.io/cluster`` annotation (``cache/cluster.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kinformer import errors, handlers
from kinformer.cache import cluster as _cluster
from kinformer.cache import store
from kinformer.handlers import ResourceEventHandler

log = logging.getLogger(__name__)

__all__ = [
    "ClusterAnnotationHandler",
    "ClusterBoundHandler",
    "ClusterEventHandler",
    "ClusterEventHandlerFuncs",
    "PerClusterHandler",
    "cluster_of_notification",
]


class ClusterEventHandler:
    """Receives notifications about one resource type across clusters, each with its cluster.

    Subclass it and override what you need: every method does nothing by default. A
    multi-cluster or cluster-aware informer calls a handler this way because it is an instance
    of this class; any other handler gets the plain calls (``on_add(obj, is_in_initial_list)``).
    ``on_delete`` may receive a :class:`~kinformer.DeletedFinalStateUnknown` (see
    :func:`~kinformer.deleted_object`). ``on_disengaged(cluster)`` says a member cluster stopped
    being watched: its objects left the cache without an ``on_delete`` each, because they were
    not deleted; it is the last call about that cluster until it is engaged again.
    """

    __slots__ = ()

    def on_add(self, cluster: str, obj: Any) -> None:
        """``obj`` appeared in ``cluster`` (or was listed when the cache filled)."""

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        """An object of ``cluster`` changed from ``old`` to ``new`` (or was resynced: same version)."""

    def on_delete(self, cluster: str, obj: Any) -> None:
        """``obj`` was deleted from ``cluster``."""

    def on_disengaged(self, cluster: str) -> None:
        """``cluster`` is no longer watched; its objects left the cache without deletes."""


class ClusterEventHandlerFuncs(handlers.FuncsHandler, ClusterEventHandler):
    """A cluster handler made of optional functions: ``add_func(cluster, obj)``,
    ``update_func(cluster, old, new)``, ``delete_func(cluster, obj)`` and
    ``disengaged_func(cluster)``. A missing function means the notification is ignored."""

    __slots__ = ("disengaged_func",)

    FUNCS = (*handlers.FuncsHandler.FUNCS, "disengaged_func")

    def __init__(
        self,
        add_func: Callable[[str, Any], object] | None = None,
        update_func: Callable[[str, Any, Any], object] | None = None,
        delete_func: Callable[[str, Any], object] | None = None,
        disengaged_func: Callable[[str], object] | None = None,
    ) -> None:
        super().__init__(add_func, update_func, delete_func)
        self.disengaged_func = disengaged_func

    def on_add(self, cluster: str, obj: Any) -> None:
        self._call(self.add_func, cluster, obj)

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        self._call(self.update_func, cluster, old, new)

    def on_delete(self, cluster: str, obj: Any) -> None:
        self._call(self.delete_func, cluster, obj)

    def on_disengaged(self, cluster: str) -> None:
        self._call(self.disengaged_func, cluster)


@runtime_checkable
class PerClusterHandler(Protocol):
    """An ordinary handler that a multi-cluster informer makes one of per member cluster.

    multicluster-runtime's handler factories (``func(clusterName, cluster) EventHandler``): when
    a cluster is engaged, the informer calls ``for_cluster(cluster)`` once and delivers that
    cluster's notifications to the handler it returns, called as usual (``on_add(obj,
    is_in_initial_list)``, ...), so it knows its cluster without a cluster argument. A
    :class:`ClusterEventHandler` is never treated as one. An ordinary informer ignores
    ``for_cluster`` and calls the handler itself. ``for_cluster`` is called with the informer's
    lock held: it must return at once and not raise.
    """

    def for_cluster(self, cluster: str) -> ResourceEventHandler: ...


class _FilteredClusterHandler(ClusterEventHandler):
    """A :class:`~kinformer.FilteringResourceEventHandler` in front of a cluster handler, made a
    cluster handler itself (see :func:`as_cluster_handler`): it filters as client-go's does and
    passes each notification's cluster, and ``on_disengaged``, on."""

    __slots__ = ("filter_func", "handler")

    def __init__(self, filter_func: Callable[[Any], bool], handler: ClusterEventHandler) -> None:
        self.filter_func = filter_func
        self.handler = handler

    def on_add(self, cluster: str, obj: Any) -> None:
        if self.filter_func(obj):
            self.handler.on_add(cluster, obj)

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        new_passes = self.filter_func(new)
        old_passes = self.filter_func(old)
        if new_passes and old_passes:
            self.handler.on_update(cluster, old, new)
        elif new_passes:
            self.handler.on_add(cluster, new)
        elif old_passes:
            self.handler.on_delete(cluster, old)

    def on_delete(self, cluster: str, obj: Any) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(cluster, obj)

    def on_disengaged(self, cluster: str) -> None:
        self.handler.on_disengaged(cluster)

    def __repr__(self) -> str:
        return f"<FilteringResourceEventHandler {self.handler!r}>"


def as_cluster_handler(handler: Any) -> Any:
    """``handler`` as an informer should call it: itself, unless it is a
    :class:`~kinformer.FilteringResourceEventHandler` in front of a :class:`ClusterEventHandler`
    (through any number of filters); then a cluster handler applying the same filters, so the
    handler behind them is still called with the cluster (``on_add(cluster, obj)``), never with
    the plain arguments (``on_add(obj, is_in_initial_list)``) in their place."""
    if isinstance(handler, handlers.FilteringResourceEventHandler):
        inner = as_cluster_handler(handler.handler)
        if isinstance(inner, ClusterEventHandler):
            return _FilteredClusterHandler(handler.filter_func, inner)
    return handler


def _check(handler: Any) -> ClusterEventHandler:
    if not isinstance(handler, ClusterEventHandler):
        raise TypeError(f"not a ClusterEventHandler: {handler!r}")
    return handler


class ClusterBoundHandler:
    """A :class:`~kinformer.ResourceEventHandler` that calls ``handler`` with a fixed ``cluster``.

    For an informer that watches one member cluster: every notification is that cluster's.
    ``on_add``'s ``is_in_initial_list`` is not passed on. TypeError unless ``handler`` is a
    :class:`ClusterEventHandler`.
    """

    __slots__ = ("cluster", "handler")

    def __init__(self, cluster: str, handler: ClusterEventHandler) -> None:
        self.cluster = cluster
        self.handler = _check(handler)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.handler.on_add(self.cluster, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.handler.on_update(self.cluster, old, new)

    def on_delete(self, obj: Any) -> None:
        self.handler.on_delete(self.cluster, obj)

    def __repr__(self) -> str:
        return f"<ClusterBoundHandler {self.cluster!r} {self.handler!r}>"


class ClusterAnnotationHandler:
    """A :class:`~kinformer.ResourceEventHandler` that calls ``handler`` with each object's cluster.

    For an informer across logical clusters: the cluster is the object's
    :data:`~kinformer.LOGICAL_CLUSTER_ANNOTATION` (the new object's, for an update), ``""``
    without one; a :class:`~kinformer.DeletedFinalStateUnknown` names it in its key (see
    :func:`cluster_of_notification`). TypeError unless ``handler`` is a
    :class:`ClusterEventHandler`.
    """

    __slots__ = ("handler",)

    def __init__(self, handler: ClusterEventHandler) -> None:
        self.handler = _check(handler)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.handler.on_add(_cluster.cluster_of(obj), obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.handler.on_update(_cluster.cluster_of(new), old, new)

    def on_delete(self, obj: Any) -> None:
        self.handler.on_delete(cluster_of_notification(obj), obj)

    def __repr__(self) -> str:
        return f"<ClusterAnnotationHandler {self.handler!r}>"


def cluster_of_notification(obj: Any) -> str:
    """The logical cluster a notification's object belongs to: its annotation, or for a
    :class:`~kinformer.DeletedFinalStateUnknown` the cluster of its cluster-aware key, else its
    last known object's annotation (the key of an informer of one logical cluster is plain)."""
    if type(obj) is store.DeletedFinalStateUnknown:
        try:
            cluster = _cluster.split_cluster_aware_key(obj.key)[0]
        except errors.InvalidKeyError:
            log.debug("tombstone key %r is not cluster-aware; reading its object", obj.key)
            cluster = ""
        if cluster or obj.obj is None:
            return cluster
        return _cluster.cluster_of(obj.obj)
    return _cluster.cluster_of(obj)
