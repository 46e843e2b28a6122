"""CachedClient: reads from a source's informer caches, writes to the API servers.

controller-runtime's default client, for kinformer's sources: ``get`` and ``list`` read the
caches of the source's informers (through their listers, ``cache/lister.py`` and
``cache/cluster_lister.py``), so a reconcile costs the server nothing; ``create``, ``update``,
``patch`` and ``delete`` go to the server through the one request path (``client/rest.py``): to
``/clusters/<cluster>`` over logical clusters, through the member's own client over a
:class:`~kinformer.MultiClusterInformerFactory`. Each write made while a built controller
reconciles a request is recorded for that request (``staleness.py``), so the next reconcile
waits until the cache has seen it.
"""

from __future__ import annotations

import logging
from typing import Any

from kinformer import _json, errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.cache.cluster_lister import GenericClusterLister
from kinformer.cache.lister import SelectorArg, not_found
from kinformer.client import rest
from kinformer.clusters.factory import MultiClusterInformerFactory
from kinformer.controllers import staleness
from kinformer.controllers.builder import SOURCES, Source
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"


class CachedClient:
    """Reads of one source's caches and writes to its servers, naming the cluster throughout.

    Thread-safe. ``source`` is what a :class:`~kinformer.ControllerBuilder` takes; ``api_client``
    (an ``ApiClient``, or an object holding one) sends the writes of a single-cluster or
    logical-cluster source and may be None over a multi-cluster one, whose writes go through
    each member's client. Reads come from the informer of the resource in the source, made on
    first use: it must run (a built controller starts what it watches) to hold anything.

    ``cluster`` names the cluster of the object: a logical cluster (its reads narrow the cache
    to it; its writes go to ``/clusters/<cluster>``) or a member. ``""`` reads across clusters
    (a name held by two raises, as the cluster lister does). Over a source of one logical
    cluster, a read naming another raises :class:`~kinformer.ConfigurationError`: that cache
    cannot tell whether the object exists there. A write with ``""`` goes to the
    logical cluster the object written names (its ``kcp.io/cluster`` annotation, as an object
    read from the cache does), else to the one logical cluster the source watches, else
    through ``api_client`` as it is; it fails with :class:`~kinformer.ConfigurationError` when
    it names no cluster over every logical cluster (``cluster="*"``) or over member clusters,
    when ``cluster`` is not the one logical cluster the source watches, and when the object
    names another cluster than ``cluster`` or the source's one: a write never lands in a
    cluster nobody named, nor outside the one the source (or ``api_client``'s host) is scoped
    to. API errors are the typed ones of :mod:`kinformer.errors`; a miss in the cache is
    :class:`~kinformer.NotFoundError`.
    """

    def __init__(self, source: Source, api_client: Any = None) -> None:
        if not isinstance(source, SOURCES):
            raise errors.ConfigurationError(f"CachedClient needs a factory of informers, not {source!r}")
        self._source = source
        self._multi = isinstance(source, MultiClusterInformerFactory)
        if api_client is None and not self._multi:
            raise errors.ConfigurationError("CachedClient needs an api_client for its writes")
        self._rest = None if api_client is None else rest.Client(api_client)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, gvr: GroupVersionResource, name: str, namespace: str = "", cluster: str = "") -> Any:
        """The cached object; :class:`~kinformer.NotFoundError` when the cache has none. Do not
        modify it: it is the cache's."""
        lister = self._lister(gvr, cluster)
        obj = lister.by_namespace(namespace).get(name) if namespace else lister.get(name)
        if cluster and not self._narrowed(gvr) and _cluster.cluster_of(obj) not in ("", cluster):
            raise not_found(gvr, name)
        return obj

    def list(self, gvr: GroupVersionResource, namespace: str = "", selector: SelectorArg = None,
             cluster: str = "") -> list[Any]:
        """The cached objects of ``namespace`` ("" every one) matching ``selector``."""
        found: list[Any] = self._lister(gvr, cluster).by_namespace(namespace).list(selector)
        if cluster and not self._narrowed(gvr):
            found = [o for o in found if _cluster.cluster_of(o) in ("", cluster)]
        return found

    def _lister(self, gvr: GroupVersionResource, cluster: str) -> Any:
        one = self._one_cluster()
        if cluster and one and cluster != one:  # its cache cannot tell: NotFound would be a guess
            raise errors.ConfigurationError(
                f"{gvr}: the source watches the logical cluster {one!r} only, the read names {cluster!r}")
        lister = self._source.for_resource(gvr).lister()
        if cluster and isinstance(lister, GenericClusterLister):
            return lister.cluster(cluster)
        return lister

    def _narrowed(self, gvr: GroupVersionResource) -> bool:
        """Whether ``_lister`` narrowed to the cluster (else objects are checked one by one)."""
        return isinstance(self._source.for_resource(gvr).lister(), GenericClusterLister)

    # -- writes --------------------------------------------------------------------------------

    def create(self, gvr: GroupVersionResource, obj: Any, cluster: str = "") -> Any:
        """Create ``obj`` (its namespace from its metadata) on the server; the created object."""
        namespace = meta.namespace(obj)
        cluster = self._cluster_written(gvr, obj, cluster)
        return self._write(gvr, "POST", rest.resource_path(gvr, namespace), obj, cluster)

    def update(self, gvr: GroupVersionResource, obj: Any, cluster: str = "") -> Any:
        """Replace ``obj`` on the server (a stale resourceVersion is a ConflictError)."""
        path = _object_path(gvr, meta.namespace(obj), meta.name(obj))
        cluster = self._cluster_written(gvr, obj, cluster)
        return self._write(gvr, "PUT", path, obj, cluster)

    def patch(self, gvr: GroupVersionResource, name: str, merge_patch: Any, namespace: str = "",
              cluster: str = "") -> Any:
        """Apply a JSON merge patch (RFC 7386) to the object; the patched object."""
        cluster = self._cluster_written(gvr, None, cluster)
        return self._write(gvr, "PATCH", _object_path(gvr, namespace, name), merge_patch, cluster,
                           content_type=MERGE_PATCH)

    def delete(self, gvr: GroupVersionResource, name: str, namespace: str = "", cluster: str = "") -> Any:
        """Delete the object; the server's answer (a Status, or the object while it finalizes).
        The reconciled request's staleness record of writes to this resource is cleared."""
        cluster = self._cluster_written(gvr, None, cluster)
        return self._write(gvr, "DELETE", _object_path(gvr, namespace, name), None, cluster, deleting=True)

    def _write(self, gvr: GroupVersionResource, method: str, path: str, body: Any, cluster: str, *,
               content_type: str = rest.ACCEPT_JSON, deleting: bool = False) -> Any:
        client = self._client_for(cluster)
        if cluster and not self._multi:
            path = rest.cluster_prefix(cluster) + path
        data = client.request(method, path, body=body, content_type=content_type,
                              what=f"{method} {gvr} {path}").read()
        try:
            answer = _json.loads(data)
        except ValueError as exc:
            raise errors.DecodeError(f"{method} {path}: response is not JSON") from exc
        if deleting:
            shared = self._informer(gvr, cluster)
            if shared is not None:
                staleness.record_delete(shared.name)
        else:
            self._record(gvr, cluster, answer)
        return answer

    def _cluster_written(self, gvr: GroupVersionResource, obj: Any, cluster: str) -> str:
        """The cluster a write goes to (see the class): ``cluster``, else the logical cluster
        ``obj`` names, else the source's one; ``""`` through ``api_client`` as it is."""
        if self._multi:
            return cluster  # a member, or none: _client_for refuses that
        named = _cluster.cluster_of(obj) if obj is not None else ""
        watched: str | None = getattr(self._source, "cluster", None)
        one = self._one_cluster()
        if cluster and one and cluster != one:
            raise errors.ConfigurationError(
                f"{gvr}: the source watches the logical cluster {one!r} only, the write names {cluster!r}")
        given = cluster or one
        if named and given and named != given:
            raise errors.ConfigurationError(
                f"{gvr}: the object names the logical cluster {named!r}, the write {given!r}")
        meant = given or named
        if not meant and watched == "*":
            raise errors.ConfigurationError(
                f"{gvr}: a write over every logical cluster needs cluster= (or an object "
                "naming its cluster)")
        return meant

    def _one_cluster(self) -> str:
        """The one logical cluster the source watches; ``""`` for every one, or none."""
        if self._multi:
            return ""
        watched: str | None = getattr(self._source, "cluster", None)
        return watched if watched and watched != _cluster.ALL_LOGICAL_CLUSTERS else ""

    def _client_for(self, cluster: str) -> rest.Client:
        if not self._multi:
            assert self._rest is not None
            return self._rest
        if not cluster:
            raise errors.ConfigurationError("a write over member clusters needs cluster=")
        api_client = self._source.api_client_for(cluster)  # type: ignore[union-attr]
        if api_client is None:
            raise errors.ConfigurationError(f"cluster {cluster!r} is not engaged")
        return rest.Client(api_client)

    def _record(self, gvr: GroupVersionResource, cluster: str, answer: Any) -> None:
        rv = meta.resource_version(answer) if isinstance(answer, dict) else None
        if not rv:
            return
        shared = self._informer(gvr, cluster)
        if shared is None or not shared.has_synced():  # nobody watches it: nothing to wait for
            return
        staleness.record_write(shared.name, shared.get_indexer(), rv,  # type: ignore[arg-type]
                               shared.is_stopped)

    def _informer(self, gvr: GroupVersionResource, cluster: str) -> SharedIndexInformer | None:
        source = self._source
        if isinstance(source, MultiClusterInformerFactory):
            return source.for_resource(gvr).informer_for(cluster)
        return source.for_resource(gvr).informer()

    def __repr__(self) -> str:
        return f"<CachedClient {self._source!r}>"


def _object_path(gvr: GroupVersionResource, namespace: str, name: str) -> str:
    if not name:
        raise errors.ConfigurationError(f"{gvr}: an object needs a name")
    return f"{rest.resource_path(gvr, namespace)}/{name}"
