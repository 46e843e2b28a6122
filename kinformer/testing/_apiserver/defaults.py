"""What the fake API server fills in when a built-in object is created, as kube-apiserver's
defaulting and REST strategies do: a Service's cluster IP, type, session affinity, IP families
and empty load-balancer status; a Pod's ``Pending`` phase, QoS class and the usual spec defaults;
a Secret's ``Opaque`` type; a Namespace's ``Active`` phase, finalizer and name label.

:func:`on_create` is called by :mod:`.strategy` under the storage lock, with the storage's
:class:`Allocator`; :func:`keep_allocated` carries what was allocated across an update that
leaves it out, as the real server does.
"""

from __future__ import annotations

import itertools
from typing import Any

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


def on_create(rt: ResourceType, obj: dict[str, Any], allocate: Allocator) -> None:
    """Fill the defaults and status a new object of a built-in type gets."""
    if rt.group or rt.custom:
        return
    if rt.resource == "services":
        _service(obj, allocate)
    elif rt.resource == "pods":
        _pod(obj)
    elif rt.resource == "secrets" and not obj.get("type"):
        obj["type"] = "Opaque"
    elif rt.resource == "namespaces":
        _namespace(obj)


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


def _service(obj: dict[str, Any], allocate: Allocator) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    kind = spec.setdefault("type", "ClusterIP")
    external = kind in ("NodePort", "LoadBalancer")
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        if "targetPort" not in port and "port" in port:
            port["targetPort"] = port["port"]
        if external and not port.get("nodePort"):
            port["nodePort"] = allocate.node_port()
    if kind != "ExternalName":
        ip = spec.get("clusterIP") or allocate.cluster_ip()
        spec["clusterIP"] = ip
        spec.setdefault("clusterIPs", [ip])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("sessionAffinity", "None")
    if external:
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    obj["status"] = {"loadBalancer": {}}


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


def _pod(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    containers: list[Any] = []
    if isinstance(spec, dict):
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    pod_status = obj.get("status")
    if not isinstance(pod_status, dict):
        pod_status = obj["status"] = {}
    # a status given at create stays: tests seed what a kubelet would report
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
