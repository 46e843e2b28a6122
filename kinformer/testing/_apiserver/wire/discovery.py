"""Discovery documents of the fake API server: ``/api``, ``/apis``, groups and resource lists.

Built fresh from the served types on each request, so a CRD appears in discovery as soon as
storage serves it and disappears when it is deleted. Pure functions; a group or version that
is not served raises the 404 :class:`~kinformer.testing._apiserver.status.StatusError`.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType


def api_versions(address: str) -> dict[str, Any]:
    """The ``/api`` document: the core group's one version, served at ``address``."""
    return {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def group_list(types: list[ResourceType]) -> dict[str, Any]:
    """The ``/apis`` document: every named group, its versions in the order first served."""
    versions: dict[str, list[str]] = {}
    for rt in types:
        if rt.group and rt.version not in versions.setdefault(rt.group, []):
            versions[rt.group].append(rt.version)
    groups = []
    for name, vs in versions.items():
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in vs]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(types: list[ResourceType], name: str) -> dict[str, Any]:
    """The ``/apis/<group>`` document; 404 when no version of the group is served."""
    groups = [g for g in group_list(types)["groups"] if g["name"] == name]
    if not groups:
        raise status.path_not_found()
    return dict(groups[0], kind="APIGroup", apiVersion="v1")


def resource_list(types: list[ResourceType], group: str, version: str) -> dict[str, Any]:
    """The ``APIResourceList`` of one group version; 404 when it serves nothing."""
    found = [rt for rt in types if rt.group == group and rt.version == version]
    if not found:
        raise status.path_not_found()
    doc: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        doc["apiVersion"] = "v1"
    doc["groupVersion"] = f"{group}/{version}" if group else version
    doc["resources"] = [e for rt in found for e in rt.discovery_entries()]
    return doc
