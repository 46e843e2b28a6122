"""A minimal OpenAPI v3 index and per-group-version documents, enough for kubectl.

kubectl fetches ``/openapi/v3`` before ``apply``/``create -f`` to learn whether the server
validates fields itself (a ``fieldValidation`` parameter on each kind's PATCH operation). Each
document lists, per served resource, its item path with that operation and the kind it handles;
there are no schemas, so kubectl computes patches from its own built-in types.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from kinformer.testing._apiserver.resources import ResourceType

_PARAMETERS = [
    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force")
]


def _prefix(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def index(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The ``/openapi/v3`` document: one entry per served group/version."""
    paths: dict[str, Any] = {}
    for rt in types:
        prefix = _prefix(rt.group, rt.version)
        if prefix not in paths:
            digest = hashlib.sha256(prefix.encode()).hexdigest()[:16].upper()
            paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
    return {"paths": paths}


def document(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group/version, or None when nothing is served there."""
    paths: dict[str, Any] = {}
    for rt in types:
        if (rt.group, rt.version) != (group, version):
            continue
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        scope = "/namespaces/{namespace}" if rt.namespaced else ""
        item = f"/{_prefix(group, version)}{scope}/{rt.resource}/{{name}}"
        operation = {
            "operationId": f"patch{rt.kind}",
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": _PARAMETERS,
            "responses": {"200": {"description": "OK"}},
        }
        paths[item] = {"patch": operation, "parameters": _PARAMETERS}
    if not paths:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": {}},
    }
