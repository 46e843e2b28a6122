"""Cluster-aware keys and indexes: one cache holding objects of many clusters, in kcp's format.

kcp-dev/apimachinery's ``MetaClusterNamespaceKeyFunc`` and its two indexes. An object of a kcp
logical cluster names its cluster in the annotation :data:`LOGICAL_CLUSTER_ANNOTATION`; its key
is ``<cluster>|<namespace>/<name>`` (``<cluster>|<name>`` when cluster-scoped), so ``default/app``
of two clusters are two keys, and an object without the annotation keeps its plain
``namespace/name`` key (kcp's "single-cluster context"). The index :data:`CLUSTER_INDEX` maps a
cluster to its objects and :data:`CLUSTER_AND_NAMESPACE_INDEX` a ``<cluster>|<namespace>`` to
its objects: :class:`~kinformer.GenericClusterLister` (``cluster_lister.py``) narrows to one
cluster through them. Keys and index values run on every cache write, so decoded JSON is read
inline, as ``store.meta_namespace_key_func`` does; anything else goes through ``kinformer.meta``.

>>> obj = {"metadata": {"name": "app", "namespace": "default",
...                     "annotations": {LOGICAL_CLUSTER_ANNOTATION: "root:org"}}}
>>> cluster_aware_key_func(obj)
'root:org|default/app'
>>> split_cluster_aware_key("root:org|default/app")
('root:org', 'default', 'app')
>>> cluster_index_func(obj), cluster_and_namespace_index_func(obj)
(['root:org'], ['root:org|default'])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kinformer import errors, meta
from kinformer.cache.store import DeletedFinalStateUnknown, ExplicitKey
from kinformer.cache.thread_safe_store import Indexers, IndexFunc

__all__ = [
    "ALL_LOGICAL_CLUSTERS",
    "CLUSTER_AND_NAMESPACE_INDEX",
    "CLUSTER_INDEX",
    "LOGICAL_CLUSTER_ANNOTATION",
    "check_logical_cluster",
    "cluster_and_namespace_index_func",
    "cluster_and_namespace_index_value",
    "cluster_aware_key_func",
    "cluster_index_func",
    "cluster_of",
    "keeping_cluster",
    "split_cluster_aware_key",
    "to_cluster_aware_key",
    "with_cluster_indexes",
]

LOGICAL_CLUSTER_ANNOTATION = "kcp.io/cluster"
"""The annotation in which a kcp object names its logical cluster (``logicalcluster.AnnotationKey``)."""

ALL_LOGICAL_CLUSTERS = "*"
"""The wildcard that names every logical cluster at once: kcp lists and watches ``/clusters/*``."""

_WORD = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_LOGICAL_CLUSTER_NAME = re.compile(f"{_WORD}(:{_WORD})*")  # kcp's logicalcluster.Path grammar

CLUSTER_INDEX = "cluster"
"""The index of objects by cluster name (kcp's ``ClusterIndexName``); see :func:`cluster_index_func`."""

CLUSTER_AND_NAMESPACE_INDEX = "cluster-and-namespace"
"""The index of objects by ``<cluster>|<namespace>``; see :func:`cluster_and_namespace_index_func`."""


def check_logical_cluster(name: Any) -> str:
    """``name`` when it is a logical cluster's path (kcp's grammar: words of lowercase letters,
    digits and ``-``, joined by ``:``, as ``root:org:team``) or :data:`ALL_LOGICAL_CLUSTERS`;
    else :class:`~kinformer.ConfigurationError` (a ValueError)."""
    if isinstance(name, str) and (name == ALL_LOGICAL_CLUSTERS or _LOGICAL_CLUSTER_NAME.fullmatch(name)):
        return name
    raise errors.ConfigurationError(
        f"not a logical cluster: {name!r} (kcp's names are words of lowercase letters, digits "
        f"and '-' joined by ':', as 'root:org'; '*' names them all)")


def cluster_of(obj: Any) -> str:
    """The logical cluster ``obj`` names in its :data:`LOGICAL_CLUSTER_ANNOTATION`; ``""`` without one."""
    try:  # decoded JSON inline: it runs on every cache write through the index functions
        annotations = obj["metadata"].get("annotations")
        if annotations is None:
            return ""
        cluster = annotations.get(LOGICAL_CLUSTER_ANNOTATION)
        if cluster is None or type(cluster) is str:
            return cluster or ""
    except (KeyError, TypeError, AttributeError):
        pass
    value = meta.annotations(obj).get(LOGICAL_CLUSTER_ANNOTATION)
    return value if isinstance(value, str) else ""


def keeping_cluster(transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``transform``, giving what it returns back the logical cluster of the object it was given.

    A cluster-aware cache keys each object by the cluster its annotation names, read after the
    informer's transform: one that drops ``metadata.annotations`` (to save memory) or rewrites
    them would key two clusters' ``default/app`` as one. The annotation is put back on the
    result, or on a new ``annotations`` of it; a result that cannot carry it raises
    :class:`~kinformer.KeyFuncError`, so the object is never cached under another cluster.
    """
    def kept(obj: Any) -> Any:
        cluster = cluster_of(obj)  # before the transform, which may change obj in place
        out = transform(obj)
        if cluster and cluster_of(out) != cluster:
            _name_cluster(out, cluster)
        return out

    return kept


def _name_cluster(obj: Any, cluster: str) -> None:
    """Set ``obj``'s :data:`LOGICAL_CLUSTER_ANNOTATION` to ``cluster`` (decoded JSON or a model)."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else getattr(obj, "metadata", None)
    if isinstance(metadata, dict):
        annotations = metadata.get("annotations")
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = {}
        annotations[LOGICAL_CLUSTER_ANNOTATION] = cluster
        return
    if metadata is not None and hasattr(metadata, "annotations"):
        metadata.annotations = {**(metadata.annotations or {}), LOGICAL_CLUSTER_ANNOTATION: cluster}
        return
    raise errors.KeyFuncError(
        f"the transform dropped the logical cluster {cluster!r} of an object, and what it "
        f"returned has no metadata to name it in: {type(obj).__name__}")


def check_one_cluster_per_key(pairs: list[tuple[str, Any]]) -> None:
    """Raise :class:`~kinformer.ClustersMergedError` when ``pairs`` (a list's objects with their
    keys, in order) hold one key twice for objects of two logical clusters.

    A FIFO's ``replace`` calls it before queueing anything. A cache keyed without the cluster
    (``namespace/name``) over a source it does not know spans clusters would otherwise keep the
    last of the two and drop the other. The usual list, every key distinct, costs one C-speed
    pass; clusters are read only for a key listed twice (two objects of one cluster, or two
    without the annotation, are left to the FIFO, which keeps the last).
    """
    if len(dict(pairs)) == len(pairs):
        return
    first: dict[str, str] = {}
    for key, obj in pairs:
        cluster = cluster_of(obj)
        seen = first.setdefault(key, cluster)
        if seen != cluster:
            raise errors.ClustersMergedError(key, [seen, cluster])


def is_cluster_aware(indexer: Any) -> bool:
    """Whether ``indexer`` is keyed by :func:`cluster_aware_key_func` with both cluster indexes
    (an informer over ``cluster="*"``, or a member's on kcp's ``/clusters/*``)."""
    indexes = indexer.get_indexers()
    return (getattr(indexer, "key_func", None) is cluster_aware_key_func
            and CLUSTER_INDEX in indexes and CLUSTER_AND_NAMESPACE_INDEX in indexes)


def cluster_aware_key_func(obj: Any) -> str:
    """``"<cluster>|<namespace>/<name>"``, ``"<cluster>|<name>"`` when cluster-scoped, and
    :func:`~kinformer.meta_namespace_key_func`'s key when ``obj`` names no cluster.

    A :class:`~kinformer.DeletedFinalStateUnknown` gives its ``key`` and an
    :class:`~kinformer.cache.store.ExplicitKey` itself, as the deletion-handling key function does; an
    object without metadata raises :class:`~kinformer.KeyFuncError`.
    """
    try:  # decoded JSON inline, as meta_namespace_key_func: it runs on every FIFO and cache write
        metadata = obj["metadata"]
        name = metadata["name"]
        if type(name) is str:
            ns = metadata.get("namespace")
            key = meta.object_key(ns, name)
            annotations = metadata.get("annotations")
            if not annotations:
                return key
            cluster = annotations.get(LOGICAL_CLUSTER_ANNOTATION)
            if not cluster:
                return key
            if type(cluster) is str:
                return cluster + "|" + key
    except (KeyError, TypeError, AttributeError):
        pass
    if type(obj) is DeletedFinalStateUnknown:
        return obj.key
    if isinstance(obj, ExplicitKey):
        return str.__str__(obj)
    ns, name = meta.namespace_and_name(obj)
    return to_cluster_aware_key(cluster_of(obj), ns, name)


def to_cluster_aware_key(cluster: str, namespace: str, name: str) -> str:
    """The key :func:`cluster_aware_key_func` gives an object of ``cluster`` (kcp's
    ``ToClusterAwareKey``); an empty ``cluster`` or ``namespace`` is left out with its separator."""
    key = meta.object_key(namespace, name)
    return f"{cluster}|{key}" if cluster else key


def split_cluster_aware_key(key: str) -> tuple[str, str, str]:
    """``(cluster, namespace, name)`` of a key of :func:`cluster_aware_key_func` (its inverse).

    ``"c|ns/name"`` gives ``("c", "ns", "name")``, ``"c|name"`` ``("c", "", "name")`` and a key
    without ``|`` ``("", namespace, name)``. More than one ``|``, or more than one ``/`` after
    it, raises :class:`~kinformer.InvalidKeyError` (a ValueError), as kcp's
    ``SplitMetaClusterNamespaceKey`` does. Names are not validated.
    """
    cluster, bar, rest = key.partition("|")
    if not bar:
        cluster, rest = "", key
    elif "|" in rest:
        raise errors.InvalidKeyError(f'unexpected key format: "{key}"')
    namespace, slash, name = rest.partition("/")
    if not slash:
        return cluster, "", rest
    if "/" in name:
        raise errors.InvalidKeyError(f'unexpected key format: "{key}"')
    return cluster, namespace, name


def cluster_index_func(obj: Any) -> list[str]:
    """``[cluster]`` of an object (``[""]`` when it names none): the :data:`CLUSTER_INDEX` function.

    An object without metadata raises :class:`~kinformer.KeyFuncError`, as the namespace index does.
    """
    try:  # decoded JSON inline, as meta_namespace_index_func: it runs on every cache write
        annotations = obj["metadata"].get("annotations")
        cluster = annotations.get(LOGICAL_CLUSTER_ANNOTATION, "") if annotations else ""
        if type(cluster) is str:
            return [cluster]
    except (KeyError, TypeError, AttributeError):
        pass
    meta.namespace_and_name(obj)  # raises without metadata
    return [cluster_of(obj)]


def cluster_and_namespace_index_value(cluster: str, namespace: str) -> str:
    """``"<cluster>|<namespace>"``: the :data:`CLUSTER_AND_NAMESPACE_INDEX` value to look up."""
    return cluster + "|" + namespace


def cluster_and_namespace_index_func(obj: Any) -> list[str]:
    """``["<cluster>|<namespace>"]`` of an object (namespace ``""`` when cluster-scoped): the
    :data:`CLUSTER_AND_NAMESPACE_INDEX` function; :class:`~kinformer.KeyFuncError` without metadata."""
    try:  # decoded JSON inline, as meta_namespace_index_func
        metadata = obj["metadata"]
        annotations = metadata.get("annotations")
        cluster = annotations.get(LOGICAL_CLUSTER_ANNOTATION, "") if annotations else ""
        if type(cluster) is str:
            return [cluster + "|" + (metadata.get("namespace") or "")]
    except (KeyError, TypeError, AttributeError):
        pass
    namespace = meta.namespace_and_name(obj)[0]  # raises without metadata
    return [cluster_of(obj) + "|" + namespace]


def with_cluster_indexes(indexers: Indexers | None) -> dict[str, IndexFunc]:
    """A copy of ``indexers`` with :data:`CLUSTER_INDEX` and :data:`CLUSTER_AND_NAMESPACE_INDEX`
    added (an index of either name given keeps its function): what a cluster-aware cache needs."""
    found = dict(indexers or {})
    found.setdefault(CLUSTER_INDEX, cluster_index_func)
    found.setdefault(CLUSTER_AND_NAMESPACE_INDEX, cluster_and_namespace_index_func)
    return found
