"""Listers: read-only, label-selecting views of an informer's cache for one resource type.

client-go's ``GenericLister`` and ``GenericNamespaceLister`` (dynamic listers). They read the
:class:`~kinformer.Indexer` of a :class:`~kinformer.SharedIndexInformer` directly:
no copies, no sync check (before sync the answers are partial, not errors). A missing object
raises :class:`~kinformer.NotFoundError` worded like the API server's answer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kinformer import errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.cache import labels, store
from kinformer.gvr import GroupVersionResource

log = logging.getLogger(__name__)

SelectorArg = str | labels.Selector | None
"""A label selector: its string form (``"app=web,tier in (a,b)"``), a parsed one, or None for all."""


class GenericLister:
    """Lists and gets cached objects of one resource type across namespaces.

    Thread-safe (the indexer is). ``get(name)`` looks up the key ``name``, which is how a
    cluster-scoped object is keyed; a namespaced one is ``"ns/name"`` here, or use
    :meth:`by_namespace`. Objects returned are the cached ones: do not modify them.
    """

    __slots__ = ("_gvr", "_indexer")

    def __init__(self, indexer: store.IndexedStore, gvr: GroupVersionResource) -> None:
        self._indexer = indexer
        self._gvr = gvr

    def list(self, selector: SelectorArg = None) -> list[Any]:
        """Every cached object whose labels match ``selector`` (a label-selector string; None: all)."""
        return _select(self._indexer.list(), _parse(selector))

    def get(self, name: str) -> Any:
        """The cached object keyed ``name``; raises NotFoundError when there is none.

        A cluster-aware key (``"root:a|default/app"``, what a controller's default handler
        queues for an object naming its logical cluster) also finds the object cached under its
        plain key when that object names the same cluster: so over an informer of one logical
        cluster, whose cache keys carry no cluster, ``get(key)`` finds what the key names.
        """
        obj = self._indexer.get_by_key(name)
        if obj is None and "|" in name:
            obj = _of_named_cluster(self._indexer, name)
        if obj is None:
            raise not_found(self._gvr, name)
        return obj

    def by_namespace(self, namespace: str) -> GenericNamespaceLister:
        """A lister of the objects in ``namespace`` ("" means every namespace for ``list``)."""
        return GenericNamespaceLister(self._indexer, self._gvr, namespace)

    def __repr__(self) -> str:
        return f"<GenericLister {self._gvr}>"


class GenericNamespaceLister:
    """Lists and gets cached objects of one resource type in one namespace.

    ``list`` uses the indexer's ``namespace`` index, or scans the cache (with a warning) when
    the indexer has none. ``get(name)`` looks up ``"<namespace>/<name>"``.
    """

    __slots__ = ("_gvr", "_indexer", "_namespace")

    def __init__(self, indexer: store.IndexedStore, gvr: GroupVersionResource, namespace: str) -> None:
        self._indexer = indexer
        self._gvr = gvr
        self._namespace = namespace

    def list(self, selector: SelectorArg = None) -> list[Any]:
        """The cached objects of this namespace whose labels match ``selector`` (None: all)."""
        parsed = _parse(selector)
        if not self._namespace:
            return _select(self._indexer.list(), parsed)
        if store.NAMESPACE_INDEX in self._indexer.get_indexers():
            objs = self._indexer.by_index(store.NAMESPACE_INDEX, self._namespace)
            return _select(objs, parsed)
        log.warning(
            "%s: no %r index, scanning the whole cache to list namespace %r",
            self._gvr,
            store.NAMESPACE_INDEX,
            self._namespace,
        )
        return _select(
            (o for o in self._indexer.list() if meta.namespace(o) == self._namespace), parsed
        )

    def get(self, name: str) -> Any:
        """The cached object ``<namespace>/<name>``; raises NotFoundError when there is none."""
        obj = self._indexer.get_by_key(meta.object_key(self._namespace, name))
        if obj is None:
            raise not_found(self._gvr, name)
        return obj

    def __repr__(self) -> str:
        return f"<GenericNamespaceLister {self._gvr} namespace={self._namespace!r}>"


def _of_named_cluster(indexer: store.IndexedStore, key: str) -> Any | None:
    """The object cached under the plain part of the cluster-aware ``key`` if it names the
    key's cluster in its ``kcp.io/cluster`` annotation; else None."""
    try:
        cluster, namespace, name = _cluster.split_cluster_aware_key(key)
    except errors.InvalidKeyError:
        return None
    obj = indexer.get_by_key(_cluster.to_cluster_aware_key("", namespace, name))
    return obj if obj is not None and _cluster.cluster_of(obj) == cluster else None


def not_found(gvr: GroupVersionResource, name: str) -> errors.NotFoundError:
    """The API server's NotFound for ``name`` of ``gvr``: ``configmaps "x" not found``."""
    message = f'{gvr.group_resource} "{name}" not found'
    details: dict[str, Any] = {"name": name, "kind": gvr.resource}
    if gvr.group:
        details["group"] = gvr.group
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NotFound",
        "details": details,
        "code": 404,
    }
    return errors.NotFoundError(404, "NotFound", message, body)


def select(objs: Iterable[Any], selector: SelectorArg) -> list[Any]:
    """The objects of ``objs`` whose labels match ``selector`` (a string or parsed; None: all)."""
    return _select(objs, _parse(selector))


def _parse(selector: SelectorArg) -> labels.Selector | None:
    if selector is None:
        return None
    parsed = selector if isinstance(selector, labels.Selector) else labels.parse_selector(selector)
    return None if parsed.empty() else parsed


def _select(objs: Iterable[Any], selector: labels.Selector | None) -> list[Any]:
    if selector is None:
        return list(objs)
    return [o for o in objs if selector.matches(_labels_of(o))]


def _labels_of(obj: Any) -> Mapping[str, str]:
    """``obj``'s labels; KeyFuncError for an object without metadata, which no selector can match."""
    if not meta.has_metadata(obj):
        raise meta.no_metadata(obj)
    return meta.labels(obj)
