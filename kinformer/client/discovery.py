"""The cached discovery client: which resource types the server serves, read through the official client.

:class:`CachedDiscoveryClient` reads the server's discovery documents (``/api``, ``/api/v1``,
``/apis``, ``/apis/<group>/<version>``) over the request path (:mod:`kinformer.client.rest`)
and caches the per-group-version lists in a ``cachetools.TTLCache``; one pass gives a
:class:`DiscoveryResult`. :func:`parse_api_resources` reads one group version's document into
:class:`APIResource` entries. Its users are
:class:`~kinformer.DiscoveringDynamicSharedInformerFactory`, which runs one informer per served
type, callers feeding :meth:`~kinformer.InformerManager.add_dynamic_resources` (fleet's
discovery loop), and the ``kinformer watch`` command, which resolves names as kubectl does.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from typing import Any

import cachetools

from kinformer import _checks, errors
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer import gvr as _gvr
from kinformer.client import rest

log = logging.getLogger(__name__)

DISCOVERY_CACHE_TTL = 300.0  # bounds how long a type added without any CRD change goes unnoticed
REQUEST_TIMEOUT = (10.0, 30.0)  # (connect, read) seconds for one discovery GET
_REQUIRED_VERBS = frozenset({"list", "watch"})


@dataclasses.dataclass(frozen=True, slots=True)
class APIResource:
    """One resource type of a discovery document (``metav1.APIResource``), not a subresource.

    ``group_version_kind`` is the kind the entry names, in the group and version it names
    (those of the document unless the entry says otherwise).
    """

    group_version_resource: _gvr.GroupVersionResource
    group_version_kind: _gvr.GroupVersionKind
    singular_name: str
    short_names: tuple[str, ...]
    namespaced: bool
    verbs: frozenset[str]

    @property
    def listable(self) -> bool:
        """Whether the type can be listed and watched: what an informer needs."""
        return self.verbs >= _REQUIRED_VERBS

    def meta(self) -> _gvr.APIResourceMeta:
        """The :class:`~kinformer.APIResourceMeta` of this type (fleet's shape)."""
        return _gvr.APIResourceMeta(
            self.group_version_kind, self.group_version_resource, is_cluster_scoped=not self.namespaced
        )


@dataclasses.dataclass(frozen=True)
class DiscoveryResult:
    """What one discovery pass found.

    ``resources`` maps every served, listable and watchable resource type (no subresources) to
    its kind and scope; ``failed`` maps each group version whose document could not be read to
    the error. ``complete`` is fleet's ``list_complete``: nothing failed.
    """

    resources: dict[_gvr.GroupVersionResource, _gvr.APIResourceMeta]
    failed: dict[str, Exception]
    preferred: frozenset[str]  # group versions the server prefers, one per group

    @property
    def complete(self) -> bool:
        """True when every group version was read: absent types are really gone."""
        return not self.failed

    def preferred_resources(self) -> list[_gvr.APIResourceMeta]:
        """The resource types of each group's preferred version (client-go's ServerPreferredResources)."""
        return [m for g, m in self.resources.items() if g.group_version in self.preferred]


class CachedDiscoveryClient:
    """Reads what the server serves through the official client, caching per group version.

    Thread-safe. The group lists (``/api``, ``/apis``) are read on every :meth:`server_resources`
    call, so a group that appears or disappears is seen at once; the resource list of each group
    version is cached for ``ttl`` seconds (of ``clock``) or until :meth:`invalidate`. Blocks the
    calling thread for the HTTP round trips; cancelling ``ctx`` breaks a round trip off at
    once (it raises ``TransportError``). ``client`` is what ``ListWatch.for_resource``
    accepts: an ``ApiClient``, a ``DynamicClient`` or an API object holding one. ``ttl`` and
    ``request_timeout`` must be finite seconds, else :class:`~kinformer.ConfigurationError`.
    ``cluster`` reads the documents of a kcp logical cluster (``/clusters/<cluster>/api``, ...);
    ``"*"`` reads what any logical cluster serves (the built-in types and every CRD of each).
    A host ending in ``/clusters/<name>`` reads that cluster's (see
    :meth:`ListWatch.for_resource <kinformer.ListWatch.for_resource>`).
    """

    def __init__(
        self,
        client: Any,
        ttl: float = DISCOVERY_CACHE_TTL,
        *,
        clock: _clock.Clock = _clock.REAL_CLOCK,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
        ctx: _context.Context | None = None,
        cluster: str | None = None,
    ) -> None:
        self._rest = rest.Client(client)
        # every document under /clusters/<cluster>, the host's cluster if it names one
        self._prefix = rest.cluster_prefix(rest.client_cluster(client, cluster))
        self._ctx = ctx  # cancels every request in flight
        self._timeout = rest.check_timeout("request_timeout", request_timeout)  # for one GET
        self._lock = threading.Lock()  # guards _cache: cachetools caches are not thread-safe
        self._cache: cachetools.TTLCache[str, list[APIResource]] = cachetools.TTLCache(
            maxsize=512, ttl=_checks.seconds("ttl", ttl), timer=clock.now
        )

    def invalidate(self) -> None:
        """Forget every cached document; the next call reads the server again."""
        with self._lock:
            self._cache.clear()

    def server_group_versions(self) -> tuple[list[str], frozenset[str]]:
        """Every served group version (``"v1"``, ``"apps/v1"``, ...) and the preferred ones.

        Raises :class:`~kinformer.APIError` or ``TransportError`` when a list cannot be read.
        """
        versions: list[str] = []
        preferred: set[str] = set()
        core = self._get("/api")
        for version in core.get("versions") or []:
            versions.append(str(version))
        if versions:
            preferred.add(versions[0])
        groups = self._get("/apis")
        for group in groups.get("groups") or []:
            for entry in group.get("versions") or []:
                gv = entry.get("groupVersion")
                if gv:
                    versions.append(str(gv))
            pref = (group.get("preferredVersion") or {}).get("groupVersion")
            if pref:
                preferred.add(str(pref))
        return versions, frozenset(preferred)

    def server_resources_for_group_version(self, group_version: str) -> list[_gvr.APIResourceMeta]:
        """The listable and watchable resource types of one group version (cached)."""
        return [r.meta() for r in self.api_resources(group_version) if r.listable]

    def api_resources(self, group_version: str) -> list[APIResource]:
        """Every resource type of one group version, subresources left out (cached).

        Raises :class:`~kinformer.APIError`, ``TransportError`` or ``DecodeError`` when the
        document cannot be read.
        """
        with self._lock:
            cached = self._cache.get(group_version)
        if cached is not None:
            return cached
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        resources = parse_api_resources(group_version, self._get(path))
        with self._lock:
            self._cache[group_version] = resources
        return resources

    def server_resources(self) -> DiscoveryResult:
        """Every served resource type that supports list and watch, subresources left out.

        A group version whose document fails is named in ``failed``; a failure of the group
        lists themselves raises.
        """
        versions, preferred = self.server_group_versions()
        resources: dict[_gvr.GroupVersionResource, _gvr.APIResourceMeta] = {}
        failed: dict[str, Exception] = {}
        for gv in versions:
            try:
                metas = self.server_resources_for_group_version(gv)
            except Exception as exc:
                log.warning("discovery of %s failed: %s", gv, exc)
                failed[gv] = exc
                continue
            for meta in metas:
                resources[meta.group_version_resource] = meta
        return DiscoveryResult(resources, failed, preferred)

    def _get(self, path: str) -> dict[str, Any]:
        path = self._prefix + path
        doc = self._rest.get_json(path, timeout=self._timeout, ctx=self._ctx, what=f"discovery {path}")
        if not isinstance(doc, dict):
            raise errors.DecodeError(f"discovery {path}: response is not an object")
        return doc


def parse_api_resources(group_version: str, doc: Mapping[str, Any]) -> list[APIResource]:
    """The resource types of one group version's discovery document, subresources left out."""
    group, version = _gvr.split_group_version(group_version)
    resources: list[APIResource] = []
    for res in doc.get("resources") or []:
        name = str(res.get("name") or "")
        if not name or "/" in name:
            continue
        resources.append(
            APIResource(
                _gvr.GroupVersionResource(group, version, name),
                _gvr.GroupVersionKind(
                    res.get("group") or group, res.get("version") or version, str(res.get("kind") or "")
                ),
                str(res.get("singularName") or "").lower(),
                tuple(str(s).lower() for s in res.get("shortNames") or ()),
                bool(res.get("namespaced", False)),
                frozenset(str(v) for v in res.get("verbs") or ()),
            )
        )
    return resources
