"""Identities of resource types: GroupVersionResource, GroupVersionKind, APIResourceMeta.

Frozen, hashable values printed the way client-go prints them, plus the one alias for the
objects kinformer caches (``KubeObject``: decoded JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KubeObject = dict[str, Any]
"""An object as decoded from the API server's JSON (client-go's "unstructured")."""


def split_group_version(group_version: str) -> tuple[str, str]:
    """``"apps/v1"`` -> ``("apps", "v1")``; ``"v1"`` -> ``("", "v1")``."""
    if "/" in group_version:
        group, _, version = group_version.partition("/")
        return group, version
    return "", group_version


def join_group_version(group: str, version: str) -> str:
    """``("apps", "v1")`` -> ``"apps/v1"``; the core group gives just ``"v1"``."""
    return f"{group}/{version}" if group else version


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """A resource type on the server, e.g. ``GroupVersionResource("apps", "v1", "deployments")``.

    The core group is ``""``. ``str()`` gives client-go's form, ``"apps/v1, Resource=deployments"``.

    >>> deployments = GroupVersionResource("apps", "v1", "deployments")
    >>> deployments.group_version, deployments.group_resource
    ('apps/v1', 'deployments.apps')
    >>> str(GroupVersionResource("", "v1", "configmaps"))
    '/v1, Resource=configmaps'
    """

    group: str
    version: str
    resource: str

    @property
    def group_version(self) -> str:
        """The ``apiVersion`` string: ``"apps/v1"`` or ``"v1"``."""
        return join_group_version(self.group, self.version)

    @property
    def group_resource(self) -> str:
        """``"deployments.apps"``, or just ``"configmaps"`` in the core group."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @classmethod
    def from_api_version(cls, api_version: str, resource: str) -> GroupVersionResource:
        return cls(*split_group_version(api_version), resource)

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Resource={self.resource}"


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    """A kind on the server, e.g. ``GroupVersionKind("apps", "v1", "Deployment")``."""

    group: str
    version: str
    kind: str

    @property
    def group_version(self) -> str:
        return join_group_version(self.group, self.version)

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GroupVersionKind:
        return cls(*split_group_version(api_version), kind)

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class APIResourceMeta:
    """What an InformerManager needs to know of a resource type (fleet's ``APIResourceMeta``)."""

    group_version_kind: GroupVersionKind
    group_version_resource: GroupVersionResource
    is_cluster_scoped: bool = False
