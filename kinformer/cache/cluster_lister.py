"""GenericClusterLister: one resource type across many clusters, and a lister per cluster.

kcp-dev/apimachinery's ``GenericClusterLister``, for both ways kinformer caches many clusters.
Logical clusters (kcp) share one cluster-aware indexer (``cache/cluster.py``): a cluster's
view reads it through the :data:`~kinformer.CLUSTER_INDEX` and
:data:`~kinformer.CLUSTER_AND_NAMESPACE_INDEX` indexes and looks objects up by their
cluster-aware keys. Member clusters (``clusters/``) keep one ordinary indexer each: the lister
dispatches to the indexer of the cluster asked for, with no merged copy. Either way
``cluster(name)`` is an ordinary :class:`~kinformer.GenericLister` whose every call touches
that cluster's objects only, never a scan of the others; a cluster the lister does not hold
answers as an empty one (lists are empty, ``get`` raises :class:`~kinformer.NotFoundError`).
Across clusters, ``items`` pairs each object with its cluster, and a name asked for without a
cluster is found in the one cluster holding it, or refused with
:class:`~kinformer.AmbiguousNameError` when several do: never a guess.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Protocol

from kinformer import errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.cache import labels, lister, store
from kinformer.cache.lister import GenericLister, GenericNamespaceLister, SelectorArg
from kinformer.gvr import GroupVersionResource

__all__ = ["GenericClusterLister"]

_NO_INDEXERS: Mapping[str, Any] = {store.NAMESPACE_INDEX: store.meta_namespace_index_func}


class GenericClusterLister(GenericLister):
    """Lists cached objects of one resource type across clusters; :meth:`cluster` narrows to one.

    ``GenericClusterLister(indexer, gvr)`` reads one cluster-aware indexer (keyed by
    :func:`~kinformer.cluster_aware_key_func`), which must have both cluster indexes, else
    :class:`~kinformer.ConfigurationError`. :meth:`from_cluster_indexers` reads one indexer per
    cluster instead. Thread-safe (the indexers are); objects returned are the cached ones: do not
    modify them. Like every lister it checks no sync: before sync the answers are partial.

    It is a :class:`~kinformer.GenericLister` across every cluster, so it goes wherever one is
    expected: ``list`` spans the clusters, ``get`` takes a cluster-aware key
    (``"root:a|default/app"``, see :func:`~kinformer.to_cluster_aware_key`), and
    ``by_namespace(ns)`` lists that namespace of every cluster. :meth:`items` pairs each object
    with its cluster, which ``list`` cannot tell for member clusters (their objects carry no
    annotation). A key or name without a cluster (``get("app")``, ``get("default/app")``,
    ``by_namespace("default").get("app")``) is looked up in every cluster: the object when
    exactly one cluster holds it, :class:`~kinformer.AmbiguousNameError` when several do,
    :class:`~kinformer.NotFoundError` when none does; one dictionary lookup per cluster, never a
    scan of their objects.

    >>> from kinformer import (CLUSTER_AND_NAMESPACE_INDEX, CLUSTER_INDEX,
    ...     LOGICAL_CLUSTER_ANNOTATION, GroupVersionResource, Indexer,
    ...     cluster_and_namespace_index_func, cluster_aware_key_func, cluster_index_func)
    >>> indexer = Indexer(cluster_aware_key_func, {
    ...     CLUSTER_INDEX: cluster_index_func,
    ...     CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func})
    >>> for cluster in ("root:a", "root:b"):
    ...     indexer.add({"metadata": {"name": "app", "namespace": "default",
    ...                               "annotations": {LOGICAL_CLUSTER_ANNOTATION: cluster}}})
    >>> lister = GenericClusterLister(indexer, GroupVersionResource("", "v1", "configmaps"))
    >>> len(lister.list()), len(lister.cluster("root:a").list())
    (2, 1)
    >>> lister.cluster("root:b").by_namespace("default").get("app")["metadata"]["annotations"]
    {'kcp.io/cluster': 'root:b'}
    >>> [cluster for cluster, obj in lister.items()]
    ['root:a', 'root:b']
    >>> lister.by_namespace("default").get("app")
    Traceback (most recent call last):
    ...
    kinformer.errors.AmbiguousNameError: configmaps "default/app" is in 2 clusters (root:a, root:b): ...
    """

    __slots__ = ("_clusters",)

    def __init__(self, indexer: Any, gvr: GroupVersionResource) -> None:
        # the one place the kind is chosen: member clusters come from from_cluster_indexers
        clusters: _Clusters = indexer if isinstance(indexer, _MemberClusters) else _LogicalClusters(indexer)
        super().__init__(clusters.everything(), gvr)
        self._clusters = clusters

    @classmethod
    def from_cluster_indexers(
        cls, indexers: Mapping[str, Any], gvr: GroupVersionResource
    ) -> GenericClusterLister:
        """A lister over one indexer per cluster: ``indexers`` maps each cluster's name to its
        indexer and is read anew on every call, so a live mapping (one that follows clusters as
        they come and go) gives a live lister. No objects are copied."""
        return cls(_MemberClusters(indexers, gvr), gvr)

    def get(self, name: str) -> Any:
        """The object of a cluster-aware key (``"root:a|default/app"``), or of a key without a
        cluster (``"default/app"``, ``"app"``) when exactly one cluster holds it.

        :class:`~kinformer.NotFoundError` when the key's cluster (or every cluster) lacks it;
        :class:`~kinformer.AmbiguousNameError` when a key without a cluster is in several.
        """
        if "|" in name:
            return super().get(name)
        try:
            namespace, plain = store.split_meta_namespace_key(name)
        except errors.InvalidKeyError:  # no object has it, as a plain lister answers
            raise lister.not_found(self._gvr, name) from None
        return self._only(namespace, plain, name)

    def by_namespace(self, namespace: str) -> GenericNamespaceLister:
        """A lister of ``namespace`` in every cluster: ``list`` spans them, ``get(name)`` is the
        object when exactly one cluster holds ``namespace/name`` (see :meth:`get`), and
        ``items`` pairs each object with its cluster."""
        return _ClusterNamespaceLister(self, namespace)

    def items(self, selector: SelectorArg = None) -> builtins.list[tuple[str, Any]]:
        """``(cluster, object)`` for every cached object whose labels match ``selector``
        (None: all), cluster by cluster in name order."""
        return self._items(None, selector)

    def cluster(self, name: str) -> GenericLister:
        """A lister of ``name``'s objects only (``list``, ``get``, ``by_namespace``); empty for a
        cluster this lister does not hold, and live: it follows the cluster leaving or joining.

        Over member clusters, which all have names, ``""`` (the cluster of a key without one,
        ``split_cluster_aware_key("default/app")[0]``) raises
        :class:`~kinformer.ConfigurationError` rather than answer as an empty cluster: look a
        name up across the members with :meth:`get` or :meth:`by_namespace` instead. Over
        logical clusters ``""`` holds the objects that name no cluster.
        """
        if not name and isinstance(self._clusters, _MemberClusters):
            raise errors.ConfigurationError(
                f"{self._gvr.group_resource}: cluster(\"\") names no member cluster (a key without "
                "a cluster?); give the member, or look the name up across members with get() or "
                "by_namespace()")
        return GenericLister(self._clusters.view(name), self._gvr)

    def clusters(self) -> builtins.list[str]:
        """The names of the clusters with objects cached (member clusters: every one held), sorted."""
        return self._clusters.names()

    def _items(self, namespace: str | None, selector: SelectorArg) -> builtins.list[tuple[str, Any]]:
        """``(cluster, object)`` pairs of ``namespace`` (None: all) that match ``selector``."""
        parsed = labels.parse_selector(selector) if isinstance(selector, str) else selector
        pairs: builtins.list[tuple[str, Any]] = []
        for cluster in self.clusters():
            view = self.cluster(cluster)
            objs = view.list() if namespace is None else view.by_namespace(namespace).list()
            pairs.extend((cluster, obj) for obj in lister.select(objs, parsed))
        return pairs

    def _only(self, namespace: str, name: str, asked: str) -> Any:
        """The one cluster's ``namespace/name``; NotFoundError for none, AmbiguousNameError for
        several (``asked`` is what the caller named, for the error)."""
        found = self._clusters.holding(namespace, name)
        if len(found) == 1:
            return found[0][1]
        if not found:
            raise lister.not_found(self._gvr, asked)
        key = _cluster.to_cluster_aware_key("", namespace, name)
        hint = ""
        if isinstance(self._clusters, _MemberClusters):  # a member's logical cluster has no key here
            hint = (f'ask for one, with a member\'s key ("<member>|{key}") or cluster(member), whose '
                    f'get takes a logical cluster\'s key ("root:a|{key}") for a member on /clusters/*')
        raise errors.AmbiguousNameError(self._gvr.group_resource, key, [c for c, _ in found], hint)

    def __repr__(self) -> str:
        return f"<GenericClusterLister {self._gvr}>"


class _Clusters(Protocol):
    """How a :class:`GenericClusterLister` reaches its clusters: chosen once, at construction."""

    def everything(self) -> Any:
        """A plain indexer over every cluster, keyed by cluster-aware keys."""

    def view(self, cluster: str) -> Any:
        """A plain indexer over ``cluster`` alone, keyed by plain keys (empty when not held)."""

    def names(self) -> builtins.list[str]:
        """The clusters held, sorted."""

    def holding(self, namespace: str, name: str) -> builtins.list[tuple[str, Any]]:
        """``(cluster, object)`` for each cluster caching ``namespace/name``: one lookup each."""


class _LogicalClusters:
    """Logical clusters (kcp) sharing one cluster-aware indexer, read through its cluster indexes."""

    __slots__ = ("_indexer",)

    def __init__(self, indexer: Any) -> None:
        missing = [name for name in (_cluster.CLUSTER_INDEX, _cluster.CLUSTER_AND_NAMESPACE_INDEX)
                   if name not in indexer.get_indexers()]
        if missing:
            raise errors.ConfigurationError(
                f"a GenericClusterLister needs the indexes {_cluster.CLUSTER_INDEX!r} and "
                f"{_cluster.CLUSTER_AND_NAMESPACE_INDEX!r} (cluster_index_func, "
                f"cluster_and_namespace_index_func); this indexer lacks {', '.join(map(repr, missing))}")
        self._indexer = indexer

    def everything(self) -> Any:
        return self._indexer

    def view(self, cluster: str) -> _IndexedClusterView:
        return _IndexedClusterView(self._indexer, cluster)

    def names(self) -> builtins.list[str]:
        return sorted(self._indexer.list_index_func_values(_cluster.CLUSTER_INDEX))

    def holding(self, namespace: str, name: str) -> builtins.list[tuple[str, Any]]:
        found: builtins.list[tuple[str, Any]] = []
        for cluster in self._indexer.list_index_func_values(_cluster.CLUSTER_INDEX):
            obj = self._indexer.get_by_key(_cluster.to_cluster_aware_key(cluster, namespace, name))
            if obj is not None:
                found.append((cluster, obj))
        return found


class _MemberClusters:
    """Member clusters, one ordinary indexer each, in a live mapping read anew on every call.

    A member on kcp's ``/clusters/*`` caches its logical clusters cluster-aware: a name without
    a logical cluster is looked up in each of them, as a logical-cluster lister does.
    """

    __slots__ = ("_gvr", "_indexers")

    def __init__(self, indexers: Mapping[str, Any], gvr: GroupVersionResource) -> None:
        self._indexers = indexers
        self._gvr = gvr

    def everything(self) -> _MemberClustersView:
        return _MemberClustersView(self._indexers, self._gvr)

    def view(self, cluster: str) -> _MemberClusterView:
        return _MemberClusterView(self._indexers, cluster, self._gvr)

    def names(self) -> builtins.list[str]:
        return sorted(self._indexers)

    def holding(self, namespace: str, name: str) -> builtins.list[tuple[str, Any]]:
        found: builtins.list[tuple[str, Any]] = []
        for cluster in builtins.list(self._indexers):
            indexer = self._indexers.get(cluster)  # None: it left since
            if indexer is not None:
                found.extend((_member_and_logical(cluster, logical), obj)
                             for logical, obj in _in_member(indexer, namespace, name))
        return found


class _ClusterNamespaceLister(GenericNamespaceLister):
    """One namespace of every cluster of a :class:`GenericClusterLister`: lists as a
    :class:`~kinformer.GenericNamespaceLister` does, looks names up across the clusters."""

    __slots__ = ("_clusters",)

    def __init__(self, clusters: GenericClusterLister, namespace: str) -> None:
        super().__init__(clusters._indexer, clusters._gvr, namespace)
        self._clusters = clusters

    def get(self, name: str) -> Any:
        """The object ``<namespace>/<name>`` when exactly one cluster holds it; NotFoundError
        when none does, :class:`~kinformer.AmbiguousNameError` when several do."""
        return self._clusters._only(self._namespace, name, name)

    def items(self, selector: SelectorArg = None) -> builtins.list[tuple[str, Any]]:
        """``(cluster, object)`` for every object of this namespace matching ``selector``
        ("" namespace: every namespace), cluster by cluster in name order."""
        return self._clusters._items(self._namespace or None, selector)

    def __repr__(self) -> str:
        return f"<GenericNamespaceLister {self._gvr} namespace={self._namespace!r} across clusters>"


class _IndexedClusterView:
    """One cluster of a cluster-aware indexer, read as the plain indexer a GenericLister expects.

    Plain keys (``ns/name``) become cluster-aware ones, the whole content is the cluster's entry
    of the cluster index, and the namespace index is served by the cluster-and-namespace index.
    """

    __slots__ = ("_cluster", "_indexer")

    def __init__(self, indexer: Any, cluster: str) -> None:
        self._indexer = indexer
        self._cluster = cluster

    def list(self) -> builtins.list[Any]:
        return self._indexer.by_index(_cluster.CLUSTER_INDEX, self._cluster)  # type: ignore[no-any-return]

    def get_by_key(self, key: str) -> Any | None:
        plain = _own_key(self._cluster, key)
        if plain is None:
            return None
        namespace, name = store.split_meta_namespace_key(plain)
        return self._indexer.get_by_key(_cluster.to_cluster_aware_key(self._cluster, namespace, name))

    def get_indexers(self) -> Mapping[str, Any]:
        return _NO_INDEXERS

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        if index_name != store.NAMESPACE_INDEX:
            raise errors.IndexerError(f"Index with name {index_name} does not exist")
        value = _cluster.cluster_and_namespace_index_value(self._cluster, indexed_value)
        return self._indexer.by_index(_cluster.CLUSTER_AND_NAMESPACE_INDEX, value)  # type: ignore[no-any-return]


class _MemberClustersView:
    """Every member cluster's indexer read as one plain indexer keyed by cluster-aware keys;
    the live mapping is read anew on every call."""

    __slots__ = ("_gvr", "_indexers")

    def __init__(self, indexers: Mapping[str, Any], gvr: GroupVersionResource) -> None:
        self._indexers = indexers
        self._gvr = gvr

    def list(self) -> builtins.list[Any]:
        objs: builtins.list[Any] = []
        for indexer in builtins.list(self._indexers.values()):
            objs.extend(indexer.list())
        return objs

    def get_by_key(self, key: str) -> Any | None:
        try:
            cluster, namespace, name = _cluster.split_cluster_aware_key(key)
        except errors.InvalidKeyError:
            return None  # no object has it, as a cluster-aware indexer answers
        indexer = self._indexers.get(cluster)
        return None if indexer is None else _one_in_member(indexer, cluster, namespace, name, self._gvr)

    def get_indexers(self) -> Mapping[str, Any]:
        return _NO_INDEXERS

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        if index_name != store.NAMESPACE_INDEX:
            raise errors.IndexerError(f"Index with name {index_name} does not exist")
        objs: builtins.list[Any] = []
        for indexer in builtins.list(self._indexers.values()):
            if store.NAMESPACE_INDEX in indexer.get_indexers():
                objs.extend(indexer.by_index(index_name, indexed_value))
            else:
                objs.extend(o for o in indexer.list() if meta.namespace(o) == indexed_value)
        return objs


class _MemberClusterView:
    """One member cluster's indexer, looked up in the live mapping on every call (absent: empty)."""

    __slots__ = ("_cluster", "_gvr", "_indexers")

    def __init__(self, indexers: Mapping[str, Any], cluster: str, gvr: GroupVersionResource) -> None:
        self._indexers = indexers
        self._cluster = cluster
        self._gvr = gvr

    def list(self) -> builtins.list[Any]:
        indexer = self._indexers.get(self._cluster)
        return [] if indexer is None else indexer.list()

    def get_by_key(self, key: str) -> Any | None:
        indexer = self._indexers.get(self._cluster)
        if indexer is None:
            return None
        plain = _own_key(self._cluster, key)
        if plain is None:
            # another cluster's key: found only in a member whose own cache is cluster-aware (a
            # member on kcp's /clusters/*, keyed by its logical clusters)
            return indexer.get_by_key(key)
        namespace, name = store.split_meta_namespace_key(plain)
        return _one_in_member(indexer, self._cluster, namespace, name, self._gvr)

    def get_indexers(self) -> Mapping[str, Any]:
        indexer = self._indexers.get(self._cluster)
        return _NO_INDEXERS if indexer is None else indexer.get_indexers()

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        indexer = self._indexers.get(self._cluster)
        return [] if indexer is None else indexer.by_index(index_name, indexed_value)


def _in_member(indexer: Any, namespace: str, name: str) -> builtins.list[tuple[str, Any]]:
    """``(logical cluster, object)`` for each ``namespace/name`` one member's indexer holds: at
    most one, with ``""``, in an ordinary member's; one per logical cluster holding it in a
    member whose cache is cluster-aware (on kcp's ``/clusters/*``: keyed by logical clusters)."""
    if not _cluster.is_cluster_aware(indexer):
        obj = indexer.get_by_key(meta.object_key(namespace, name))
        return [] if obj is None else [("", obj)]
    return _LogicalClusters(indexer).holding(namespace, name)


def _one_in_member(indexer: Any, member: str, namespace: str, name: str,
                   gvr: GroupVersionResource) -> Any | None:
    """The one ``namespace/name`` in member ``member``'s indexer, None when it holds none;
    :class:`~kinformer.AmbiguousNameError` when several of its logical clusters do."""
    found = _in_member(indexer, namespace, name)
    if len(found) > 1:
        key = _cluster.to_cluster_aware_key("", namespace, name)
        raise errors.AmbiguousNameError(
            gvr.group_resource, key, [_member_and_logical(member, logical) for logical, _ in found],
            f'ask cluster("{member}") for one, with a logical cluster\'s key ("{found[0][0]}|{key}")')
    return found[0][1] if found else None


def _member_and_logical(member: str, logical: str) -> str:
    """How an error names a member's logical cluster (``all/root:a``, as ``kinformer watch``
    shows it); the member alone for an ordinary member's objects."""
    return f"{member}/{logical}" if logical else member


def _own_key(cluster: str, key: str) -> str | None:
    """``key`` as one cluster's view keys it: a plain key as it is, a cluster-aware key of
    ``cluster`` without its prefix; None for another cluster's key or one that does not parse."""
    if "|" not in key:
        return key
    try:
        owner, namespace, name = _cluster.split_cluster_aware_key(key)
    except errors.InvalidKeyError:
        return None
    return _cluster.to_cluster_aware_key("", namespace, name) if owner == cluster else None
