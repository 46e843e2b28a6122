"""One logical cluster's share of the fake API server's storage: its objects and served types.

A server without logical clusters has one keyspace, the root's. With them, each logical cluster
has its own (the same namespace and name may exist in two; a namespace holds only its own
cluster's objects; a CRD serves its resource in its own cluster only, as kcp shares no CRDs
between workspaces), while the resourceVersion counter, the history and the watchers stay shared
in :class:`~kinformer.testing._apiserver.storage.storage.Storage`, which guards every keyspace
with its lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from kinformer.testing._apiserver import resources
from kinformer.testing._apiserver.records import Entry
from kinformer.testing._apiserver.resources import ResourceType

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


class Keyspace:
    """The objects of one logical cluster by group-resource, and the types it serves.

    Not thread-safe: the storage lock guards it. ``sorted`` caches each bucket's keys in order
    and is dropped on any insert or removal of a key.
    """

    __slots__ = ("buckets", "crd_types", "name", "sorted", "types")

    def __init__(self, name: str) -> None:
        self.name = name
        self.buckets: dict[str, dict[Key, Entry]] = {}
        self.sorted: dict[str, list[Key]] = {}
        self.types: dict[tuple[str, str, str], ResourceType] = {
            (rt.group, rt.version, rt.resource): rt for rt in resources.BUILTIN_TYPES}
        self.crd_types: dict[str, list[ResourceType]] = {}  # by CRD name: the types it serves

    def sorted_keys(self, gr: str) -> list[Key]:
        """The keys of ``gr``'s bucket in (namespace, name) order; cached until the next change."""
        keys = self.sorted.get(gr)
        if keys is None:
            keys = sorted(self.buckets.get(gr, {}))
            self.sorted[gr] = keys
        return keys

    def entries(self, gr: str, namespace: str = "") -> list[Entry]:
        """The current entries of ``gr`` (in ``namespace`` if given), in key order."""
        bucket = self.buckets.get(gr)
        if not bucket:
            return []
        keys = self.sorted_keys(gr)
        if namespace:
            return [bucket[k] for k in keys if k[0] == namespace]
        return [bucket[k] for k in keys]

    def serves(self, gr: str) -> bool:
        """Whether any version of ``gr`` is served here."""
        return any(rt.group_resource == gr for rt in self.types.values())

    def serve_crd(self, crd: dict[str, Any]) -> None:
        """Serve what a created or changed CustomResourceDefinition defines, instead of what
        it defined before."""
        crd_name = str(crd["metadata"]["name"])
        for rt in self.crd_types.pop(crd_name, []):
            self.types.pop((rt.group, rt.version, rt.resource), None)
        served = resources.types_from_crd(crd)
        for rt in served:
            self.types[(rt.group, rt.version, rt.resource)] = rt
        self.crd_types[crd_name] = served

    def unserve_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Stop serving what a deleted CustomResourceDefinition defined; returns those types
        (one per version), its objects still in ``buckets``."""
        served = self.crd_types.pop(str(crd["metadata"]["name"]), [])
        for rt in served:
            self.types.pop((rt.group, rt.version, rt.resource), None)
        return served


def entries(spaces: list[Keyspace], gr: str, namespace: str = "") -> list[Entry]:
    """The current entries of ``gr`` in ``spaces`` (in ``namespace`` if given), space by space,
    each in key order."""
    if len(spaces) == 1:
        return spaces[0].entries(gr, namespace)
    return list(itertools.chain.from_iterable(space.entries(gr, namespace) for space in spaces))


def types_across(spaces: Iterable[Keyspace]) -> list[ResourceType]:
    """Every type any of ``spaces`` serves, each group/version/resource once (as the first
    space serving it defines it): the built-ins first, then the custom types in order."""
    found: dict[tuple[str, str, str], ResourceType] = {}
    for space in spaces:
        for key, rt in space.types.items():
            found.setdefault(key, rt)
    return list(found.values())
