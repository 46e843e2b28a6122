"""What the fake API server fills into a built-in object, as kube-apiserver's defaulting and
REST strategies do.

:func:`apply` is the decoder's part, on every create and update: a Service's type, session
affinity and port defaults, a Secret's ``Opaque`` type, and the Pod and workload defaults of
:mod:`.workloads`. :func:`on_create` is the create strategies' part, after the uid is stamped: a
Service's cluster IP, IP families and node ports, a Job's selector and controller labels, a
Namespace's finalizer, phase and name label, and the status each type starts with (a Pod's
``Pending`` phase and QoS class). Both are called by :mod:`.strategy` under the storage lock,
``on_create`` with the storage's :class:`Allocator`; :func:`keep_allocated` carries what was
allocated across an update that leaves it out, as the real server does.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from kinformer.testing._apiserver.registry import workloads
from kinformer.testing._apiserver.resources import ResourceType

NODE_PORTS = (30000, 32768)  # the default NodePort range, upper bound excluded


class Allocator:
    """Cluster IPs (from 10.96.0.0/12) and node ports for new Services, never handed out twice
    until the node port range wraps. Not thread-safe: the storage lock guards it."""

    def __init__(self) -> None:
        self._ips = itertools.count(11)  # 10.96.0.1 and .10 are the API and DNS services
        self._ports = itertools.count()

    def cluster_ip(self) -> str:
        n = next(self._ips)
        return f"10.{96 + (n >> 16) % 16}.{(n >> 8) & 255}.{n & 255}"

    def node_port(self) -> int:
        low, high = NODE_PORTS
        return low + next(self._ports) % (high - low)


def apply(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill what the typed decoder defaults on every write of a built-in object (create and
    update): a Service's type, session affinity, port protocols and target ports; a Secret's
    type; Pods' and workloads' specs (:mod:`.workloads`)."""
    if rt.custom:
        return
    if rt.group_resource == "services":
        _service_spec(obj)
    elif rt.group_resource == "secrets" and not obj.get("type"):
        obj["type"] = "Opaque"
    else:
        workloads.apply(rt, obj)


# the status a new object of these types starts with (its status subresource owns the rest)
_EMPTY_STATUS: dict[str, dict[str, Any]] = {
    "services": {"loadBalancer": {}},
    "replicationcontrollers": {"replicas": 0},
    "deployments.apps": {},
    "replicasets.apps": {"replicas": 0},
    "daemonsets.apps": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                        "desiredNumberScheduled": 0, "numberReady": 0},
    "jobs.batch": {},
    "cronjobs.batch": {},
    "resourcequotas": {},
    "ingresses.networking.k8s.io": {"loadBalancer": {}},
    "poddisruptionbudgets.policy": {"disruptionsAllowed": 0, "currentHealthy": 0,
                                    "desiredHealthy": 0, "expectedPods": 0},
    "apiservices.apiregistration.k8s.io": {},
}


def on_create(
    rt: ResourceType, obj: dict[str, Any], allocate: Allocator, keep_status: bool,
) -> None:
    """Set what a new object gets from its type's create strategy, after its uid is stamped:
    a Service's addresses and ports, a Job's selector and labels, a Namespace's finalizer,
    phase and name label, and the status each type starts with.

    Over the API the status a client sent is dropped, as on a real server; ``keep_status``
    (the server-side helpers) keeps a status given, as a kubelet or controller would report it.
    """
    kind = rt.group_resource
    if kind == "services":
        _service_allocation(obj, allocate)
    elif kind == "pods":
        _pod_status(obj, keep_status)
        return
    elif kind == "namespaces":
        _namespace(obj)
        return
    elif kind == "jobs.batch":
        _job_selector(obj)
    if rt.custom:
        if rt.status and not keep_status:
            obj.pop("status", None)
        return
    empty = _EMPTY_STATUS.get(kind)
    if empty is None:
        return
    if not keep_status or not isinstance(obj.get("status"), dict):
        obj["status"] = copy.deepcopy(empty)


_SERVICE_ALLOCATED = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy",
                      "internalTrafficPolicy", "externalTrafficPolicy", "healthCheckNodePort")


def keep_allocated(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Copy a Service's allocated addresses and ports into an update that leaves them out."""
    if rt.group or rt.resource != "services":
        return
    old_spec, new_spec = old.get("spec"), new.get("spec")
    if not isinstance(old_spec, dict) or not isinstance(new_spec, dict):
        return
    if old_spec.get("type", "ClusterIP") != new_spec.get("type", "ClusterIP"):
        return
    for field in _SERVICE_ALLOCATED:
        if field in old_spec and field not in new_spec:
            new_spec[field] = old_spec[field]
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or []
                 if isinstance(p, dict)}
    for port in new_spec.get("ports") or []:
        if isinstance(port, dict) and "nodePort" not in port:
            before = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
            if before is not None and "nodePort" in before:
                port["nodePort"] = before["nodePort"]


def _service_spec(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    kind = spec.setdefault("type", "ClusterIP") or "ClusterIP"
    spec["type"] = kind
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if kind in ("NodePort", "LoadBalancer") and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind != "ExternalName" and spec.get("internalTrafficPolicy") is None:
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _service_allocation(obj: dict[str, Any], allocate: Allocator) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    kind = spec.get("type", "ClusterIP")
    if kind in ("NodePort", "LoadBalancer"):
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = allocate.node_port()
    if kind != "ExternalName":
        ip = spec.get("clusterIP") or allocate.cluster_ip()
        spec["clusterIP"] = ip
        spec.setdefault("clusterIPs", [ip])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")


def _job_selector(obj: dict[str, Any]) -> None:
    """A Job without ``manualSelector`` selects its pods by its uid, and labels its template so."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    meta = obj["metadata"]
    uid, name = meta.get("uid", ""), meta.get("name", "")
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    template_meta = template.get("metadata")
    if not isinstance(template_meta, dict):
        template_meta = template["metadata"] = {}
    labels = template_meta.get("labels")
    if not isinstance(labels, dict):
        labels = template_meta["labels"] = {}
    labels.update({"batch.kubernetes.io/controller-uid": uid,
                   "batch.kubernetes.io/job-name": name, "controller-uid": uid,
                   "job-name": name})
    workloads.copy_template_labels(obj, spec)


def _namespace(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        labels = meta["labels"] = {}
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    spec.setdefault("finalizers", ["kubernetes"])
    obj["status"] = {"phase": "Active"}


def _pod_status(obj: dict[str, Any], keep_status: bool) -> None:
    spec = obj.get("spec")
    containers: list[Any] = []
    if isinstance(spec, dict):
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    pod_status = obj.get("status")
    if not keep_status or not isinstance(pod_status, dict):
        pod_status = obj["status"] = {}
    pod_status.setdefault("phase", "Pending")
    pod_status.setdefault("qosClass", _qos_class(containers))


def _qos_class(containers: list[dict[str, Any]]) -> str:
    """BestEffort without requests or limits; Guaranteed when every container's CPU and memory
    limits are set and equal their requests; Burstable otherwise."""
    resources = [_dict(c.get("resources")) for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits = _dict(r.get("limits"))
        requests = _dict(r.get("requests")) or limits
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                return "Burstable"
    return "Guaranteed"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
