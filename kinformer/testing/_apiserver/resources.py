"""Resource types the fake API server serves, and the discovery documents describing them.

A :class:`ResourceType` is one group/version/resource with its kind, scope and verbs, as
kube-apiserver lists it under ``/api/v1`` or ``/apis/<group>/<version>``. Built-in types are fixed;
CustomResourceDefinitions add and remove types at run time
(:class:`~kinformer.testing._apiserver.storage.storage.Storage` owns that).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kinformer.gvr import GroupVersionResource, join_group_version

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_GROUP = "apiextensions.k8s.io"
CRD_RESOURCE = "customresourcedefinitions"
RBAC_GROUP = "rbac.authorization.k8s.io"
SCALABLE = ("deployments.apps", "replicasets.apps", "replicationcontrollers")  # with a scale subresource


@dataclass(frozen=True)
class ResourceType:
    """One served group/version/resource: kind, scope, names and behaviour switches.

    ``generation`` says whether ``metadata.generation`` is kept (types with a spec);
    ``status`` whether a ``/status`` subresource exists (then the main resource ignores status
    changes and the subresource ignores everything else, as for CRDs with the status subresource);
    ``returns_deleted`` whether DELETE answers with the deleted object rather than a ``Status``;
    ``printer_columns`` a custom resource's ``additionalPrinterColumns`` as (name, type, format,
    description, priority, jsonPath).
    """

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    generation: bool = True
    status: bool = False
    custom: bool = False
    extra_fields: tuple[str, ...] = field(default=())
    returns_deleted: bool = False
    printer_columns: tuple[tuple[str, str, str, str, int, str], ...] = ()

    @functools.cached_property  # read on every request and every write: made once
    def api_version(self) -> str:
        return join_group_version(self.group, self.version)

    @functools.cached_property
    def group_resource(self) -> str:
        """``configmaps`` or ``deployments.apps``: the storage key and the name in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def gvr(self) -> GroupVersionResource:
        return GroupVersionResource(self.group, self.version, self.resource)

    def discovery_entries(self) -> list[dict[str, Any]]:
        """The ``APIResource`` entries for this type (and its status subresource)."""
        digest = hashlib.sha256(f"{self.group_resource}/{self.version}".encode()).digest()
        entry: dict[str, Any] = {
            "name": self.resource,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(ALL_VERBS),
            "storageVersionHash": _hash_text(digest),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        if self.group_resource in SCALABLE:
            entries.append({"name": f"{self.resource}/scale", "singularName": "",
                            "namespaced": self.namespaced, "group": "autoscaling",
                            "version": "v1", "kind": "Scale",
                            "verbs": ["get", "patch", "update"]})
        if self.group_resource == "pods":
            entries.extend({"name": f"pods/{sub}", "singularName": "", "namespaced": True,
                            "kind": kind, "verbs": ["create", "get"]}
                           for sub, kind in (("attach", "PodAttachOptions"),
                                             ("exec", "PodExecOptions"),
                                             ("portforward", "PodPortForwardOptions")))
            entries.append({"name": "pods/log", "singularName": "", "namespaced": True,
                            "kind": "Pod", "verbs": ["get"]})
        if self.group_resource == "serviceaccounts":
            entries.append({"name": "serviceaccounts/token", "singularName": "",
                            "namespaced": True, "group": "authentication.k8s.io",
                            "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
        if self.status:
            entries.append(
                {
                    "name": f"{self.resource}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        return entries


def _hash_text(digest: bytes) -> str:
    import base64

    return base64.b64encode(digest[:8]).decode()


def _builtin(
    group: str,
    resource: str,
    kind: str,
    namespaced: bool,
    short: Iterable[str] = (),
    generation: bool = True,
    status: bool = False,
    extra_fields: Iterable[str] = (),
    categories: Iterable[str] = (),
    returns_deleted: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        resource=resource,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=tuple(short),
        categories=tuple(categories),
        generation=generation,
        status=status,
        extra_fields=tuple(extra_fields),
        returns_deleted=returns_deleted,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _builtin("", "namespaces", "Namespace", False, ("ns",), generation=False, status=True,
             extra_fields=("status.phase",), returns_deleted=True),
    _builtin("", "configmaps", "ConfigMap", True, ("cm",), generation=False),
    _builtin("", "secrets", "Secret", True, generation=False, extra_fields=("type",)),
    _builtin("", "pods", "Pod", True, ("po",), status=True, categories=("all",),
             extra_fields=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                           "spec.serviceAccountName", "status.phase", "status.podIP"),
             returns_deleted=True),
    _builtin("", "services", "Service", True, ("svc",), generation=False, status=True,
             categories=("all",), returns_deleted=True),
    _builtin("", "nodes", "Node", False, ("no",), status=True, extra_fields=("spec.unschedulable",)),
    _builtin("", "events", "Event", True, ("ev",), generation=False,
             extra_fields=("involvedObject.kind", "involvedObject.namespace",
                           "involvedObject.name", "involvedObject.uid", "reason", "type")),
    _builtin("", "serviceaccounts", "ServiceAccount", True, ("sa",), generation=False),
    _builtin("", "replicationcontrollers", "ReplicationController", True, ("rc",), status=True,
             categories=("all",)),
    _builtin("", "resourcequotas", "ResourceQuota", True, ("quota",), generation=False,
             status=True),
    _builtin("apps", "deployments", "Deployment", True, ("deploy",), status=True,
             categories=("all",)),
    _builtin("apps", "replicasets", "ReplicaSet", True, ("rs",), status=True, categories=("all",)),
    _builtin("coordination.k8s.io", "leases", "Lease", True, generation=False),
    _builtin(CRD_GROUP, CRD_RESOURCE, "CustomResourceDefinition", False, ("crd", "crds"),
             status=True, categories=("api-extensions",)),
    # workloads, access control and the other types kubectl creates
    _builtin("apps", "daemonsets", "DaemonSet", True, ("ds",), status=True, categories=("all",)),
    _builtin("batch", "jobs", "Job", True, status=True, categories=("all",)),
    _builtin("batch", "cronjobs", "CronJob", True, ("cj",), status=True, categories=("all",)),
    _builtin(RBAC_GROUP, "roles", "Role", True, generation=False),
    _builtin(RBAC_GROUP, "rolebindings", "RoleBinding", True, generation=False),
    _builtin(RBAC_GROUP, "clusterroles", "ClusterRole", False, generation=False),
    _builtin(RBAC_GROUP, "clusterrolebindings", "ClusterRoleBinding", False, generation=False),
    _builtin("networking.k8s.io", "ingresses", "Ingress", True, ("ing",), status=True),
    _builtin("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",),
             status=True),
    _builtin("scheduling.k8s.io", "priorityclasses", "PriorityClass", False, ("pc",),
             generation=False),
    _builtin("apiregistration.k8s.io", "apiservices", "APIService", False, generation=False,
             status=True, categories=("api-extensions",)),
)

DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of the service range, as in kubeadm's


def kubernetes_service() -> dict[str, Any]:
    """The Service ``default/kubernetes`` every cluster holds: the API server's own address."""
    return {"metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": 6443}]}}


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition serves: one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group") or "")
    plural = str(names.get("plural") or "")
    kind = str(names.get("kind") or "")
    singular = str(names.get("singular") or kind.lower())
    namespaced = spec.get("scope", "Namespaced") != "Cluster"
    found = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        found.append(
            ResourceType(
                group=group,
                version=str(version.get("name") or ""),
                resource=plural,
                kind=kind,
                namespaced=namespaced,
                singular=singular,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                generation=True,
                status="status" in subresources,
                custom=True,
                printer_columns=_printer_columns(version.get("additionalPrinterColumns")),
            )
        )
    return found


def _printer_columns(declared: Any) -> tuple[tuple[str, str, str, str, int, str], ...]:
    columns = []
    for column in declared if isinstance(declared, list) else ():
        if not isinstance(column, dict) or not column.get("name") or not column.get("jsonPath"):
            continue
        priority = column.get("priority")
        columns.append((str(column["name"]), str(column.get("type") or "string"),
                        str(column.get("format") or ""), str(column.get("description") or ""),
                        priority if isinstance(priority, int) else 0, str(column["jsonPath"])))
    return tuple(columns)


def validate_crd(crd: dict[str, Any]) -> list[tuple[str, str]]:
    """Problems with a CRD body as (field, message) pairs; empty when it can be served."""
    problems: list[tuple[str, str]] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value")]
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group = spec.get("group")
    plural = names.get("plural") if names else None
    if not group or not isinstance(group, str) or "." not in group:
        problems.append(("spec.group", "Invalid value: should be a domain with at least one dot"))
    if not plural or not isinstance(plural, str):
        problems.append(("spec.names.plural", "Required value"))
    if not names or not names.get("kind"):
        problems.append(("spec.names.kind", "Required value"))
    name = (crd.get("metadata") or {}).get("name")
    if plural and group and name != f"{plural}.{group}":
        problems.append(("metadata.name", 'Invalid value: must be spec.names.plural+"."+spec.group'))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        problems.append(("spec.versions",
                         "Invalid value: must have exactly one version marked as storage version"))
    elif not all(isinstance(v, dict) and v.get("name") for v in versions):
        problems.append(("spec.versions", "Required value: name"))
    for list_field in ("shortNames", "categories"):
        value = names.get(list_field) if names else None
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            problems.append((f"spec.names.{list_field}", "Invalid value: must be a list of strings"))
    for text_field in ("singular", "listKind", "kind"):
        value = names.get(text_field) if names else None
        if value is not None and not isinstance(value, str):
            problems.append((f"spec.names.{text_field}", "Invalid value: must be a string"))
    if isinstance(versions, list) and any(
        isinstance(v, dict) and not isinstance(v.get("subresources") or {}, dict)
        for v in versions
    ):
        problems.append(("spec.versions.subresources", "Invalid value: must be an object"))
    if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
        problems.append(("spec.scope", 'Unsupported value: supported values: "Cluster", "Namespaced"'))
    return problems


def crd_status(crd: dict[str, Any]) -> dict[str, Any]:
    """The status kube-apiserver gives an accepted, established CRD."""
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    stamp = (crd.get("metadata") or {}).get("creationTimestamp", "")
    return {
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": stamp},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": stamp},
        ],
        "storedVersions": [
            str(v.get("name")) for v in spec.get("versions") or [] if isinstance(v, dict)
            and v.get("storage")
        ],
    }


def version_info() -> dict[str, str]:
    """The ``/version`` document."""
    return {
        "major": "1",
        "minor": "36",
        "gitVersion": "v1.36.2-kinformer",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
