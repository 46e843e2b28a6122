"""The Table printers of the core (``v1``) types, after kube-apiserver's own: pods' READY,
STATUS, RESTARTS (with the last restart's age), IP, NODE, NOMINATED NODE and READINESS GATES;
services' TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S) and SELECTOR; configmaps' and secrets' DATA;
namespaces, service accounts, nodes, events, replication controllers and quotas.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver.registry.printers.values import (
    AGE,
    NAME,
    NAME_DESCRIPTION,
    NONE,
    TEMPLATE_COLUMNS,
    Printer,
    Row,
    age,
    as_dict,
    as_int,
    as_list,
    column,
    format_labels,
    human_duration,
    name_of,
    parse_time,
    since,
    template_cells,
    wide,
)

_COMPLETED = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}


def _pod(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    meta = as_dict(obj.get("metadata"))
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for cond in as_list(status.get("conditions")):
        cond = as_dict(cond)
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions = [{"type": "Completed", "status": "True", "reason": phase,
                   "message": _COMPLETED[phase]}] if phase in _COMPLETED else []
    init_specs = {str(as_dict(c).get("name")): as_dict(c) for c in as_list(spec.get("initContainers"))}

    def sidecar(name: Any) -> bool:
        return init_specs.get(str(name), {}).get("restartPolicy") == "Always"

    total = len(as_list(spec.get("containers"))) + sum(1 for c in init_specs.values()
                                                  if c.get("restartPolicy") == "Always")
    ready = restarts = sidecar_restarts = 0
    last_restart = sidecar_last = 0.0
    initializing = False
    init_statuses = [as_dict(c) for c in as_list(status.get("initContainerStatuses"))]
    for i, container in enumerate(init_statuses):
        restarts += as_int(container.get("restartCount"))
        finished = parse_time(as_dict(as_dict(container.get("lastState")).get("terminated"))
                              .get("finishedAt")) or 0.0
        last_restart = max(last_restart, finished)
        if sidecar(container.get("name")):
            sidecar_restarts += as_int(container.get("restartCount"))
            sidecar_last = max(sidecar_last, finished)
        state = as_dict(container.get("state"))
        terminated, waiting = as_dict(state.get("terminated")), as_dict(state.get("waiting"))
        if state.get("terminated") is not None and as_int(terminated.get("exitCode")) == 0:
            continue
        if sidecar(container.get("name")) and container.get("started") is True:
            ready += 1 if container.get("ready") else 0
            continue
        if state.get("terminated") is not None:
            if terminated.get("reason"):
                reason = f"Init:{terminated['reason']}"
            elif as_int(terminated.get("signal")):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{as_int(terminated.get('exitCode'))}"
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(as_dict(c).get("type") == "Initialized" and as_dict(c).get("status") == "True"
                      for c in as_list(status.get("conditions")))
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        running = False
        for container in reversed([as_dict(c) for c in as_list(status.get("containerStatuses"))]):
            restarts += as_int(container.get("restartCount"))
            finished = parse_time(as_dict(as_dict(container.get("lastState")).get("terminated"))
                                  .get("finishedAt")) or 0.0
            last_restart = max(last_restart, finished)
            state = as_dict(container.get("state"))
            terminated, waiting = as_dict(state.get("terminated")), as_dict(state.get("waiting"))
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated.get("reason"):
                reason = str(terminated["reason"])
            elif state.get("terminated") is not None:
                signal = as_int(terminated.get("signal"))
                reason = f"Signal:{signal}" if signal else \
                    f"ExitCode:{as_int(terminated.get('exitCode'))}"
            elif container.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            pod_ready = any(as_dict(c).get("type") == "Ready" and as_dict(c).get("status") == "True"
                            for c in as_list(status.get("conditions")))
            reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    ips = as_list(status.get("podIPs"))
    ip = str(as_dict(ips[0]).get("ip") or "") if ips else str(status.get("podIP") or "")
    gates = as_list(spec.get("readinessGates"))
    gates_text = NONE
    if gates:
        states = {as_dict(c).get("type"): as_dict(c).get("status") for c in as_list(status.get("conditions"))}
        passing = sum(1 for g in gates if states.get(as_dict(g).get("conditionType")) == "True")
        gates_text = f"{passing}/{len(gates)}"
    cells = [name_of(obj), f"{ready}/{total}", reason, restarts_text, age(obj, now), ip or NONE,
             spec.get("nodeName") or NONE, status.get("nominatedNodeName") or NONE, gates_text]
    return cells, conditions


def _service(obj: dict[str, Any], now: float) -> Row:
    spec = as_dict(obj.get("spec"))
    kind = str(spec.get("type") or "")
    ips = as_list(spec.get("clusterIPs"))
    external_ips = [str(ip) for ip in as_list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        external = ",".join(external_ips) or NONE
    elif kind == "LoadBalancer":
        balancer = as_dict(as_dict(obj.get("status")).get("loadBalancer"))
        ingress = sorted({str(as_dict(i).get("ip") or as_dict(i).get("hostname") or "")
                          for i in as_list(balancer.get("ingress"))} - {""})
        external = ",".join(ingress + external_ips) or "<pending>"
    elif kind == "ExternalName":
        external = str(spec.get("externalName") or "")
    else:
        external = "<unknown>"
    ports = []
    for port in (as_dict(p) for p in as_list(spec.get("ports"))):
        node_port = as_int(port.get("nodePort"))
        via = f":{node_port}" if node_port > 0 else ""
        ports.append(f"{as_int(port.get('port'))}{via}/{port.get('protocol', '')}")
    cells = [name_of(obj), kind, str(ips[0]) if ips else NONE, external, ",".join(ports) or NONE,
             age(obj, now), format_labels(spec.get("selector"))]
    return cells, []


def _config_map(obj: dict[str, Any], now: float) -> Row:
    count = len(as_dict(obj.get("data"))) + len(as_dict(obj.get("binaryData")))
    return [name_of(obj), count, age(obj, now)], []


def _secret(obj: dict[str, Any], now: float) -> Row:
    count = len(set(as_dict(obj.get("data"))) | set(as_dict(obj.get("stringData"))))
    return [name_of(obj), str(obj.get("type") or ""), count, age(obj, now)], []


def _namespace(obj: dict[str, Any], now: float) -> Row:
    return [name_of(obj), str(as_dict(obj.get("status")).get("phase") or ""), age(obj, now)], []


def _service_account(obj: dict[str, Any], now: float) -> Row:
    return [name_of(obj), len(as_list(obj.get("secrets"))), age(obj, now)], []


def _node(obj: dict[str, Any], now: float) -> Row:
    status, spec = as_dict(obj.get("status")), as_dict(obj.get("spec"))
    states = [("Ready" if as_dict(c).get("status") == "True" else "NotReady")
              for c in as_list(status.get("conditions")) if as_dict(c).get("type") == "Ready"][:1]
    states = states or ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in as_dict(as_dict(obj.get("metadata")).get("labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = as_dict(status.get("nodeInfo"))
    addresses = [as_dict(a) for a in as_list(status.get("addresses"))]

    def address(kind: str) -> str:
        return next((str(a.get("address")) for a in addresses if a.get("type") == kind), NONE)

    cells = [name_of(obj), ",".join(states), ",".join(sorted(roles)) or NONE, age(obj, now),
             str(info.get("kubeletVersion") or ""), address("InternalIP"), address("ExternalIP"),
             info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
             info.get("containerRuntimeVersion") or "<unknown>"]
    return cells, []


def _event(obj: dict[str, Any], now: float) -> Row:
    first = since(obj.get("firstTimestamp"), now) if obj.get("firstTimestamp") else \
        since(obj.get("eventTime"), now)
    last = since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = as_int(obj.get("count"))
    series = as_dict(obj.get("series"))
    if obj.get("series") is not None:
        last, count = since(series.get("lastObservedTime"), now), as_int(series.get("count"))
    elif count == 0:
        count = 1
    involved = as_dict(obj.get("involvedObject"))
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = as_dict(obj.get("source"))
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    cells = [last, str(obj.get("type", "")), str(obj.get("reason", "")), target,
             str(involved.get("fieldPath", "")), f"{component}, {instance}" if instance else
             str(component), str(obj.get("message", "")).strip(), first, count, name_of(obj)]
    return cells, []


def _replication_controller(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    cells = [name_of(obj), as_int(spec.get("replicas")), as_int(status.get("replicas")),
             as_int(status.get("readyReplicas")), age(obj, now),
             *template_cells(spec, format_labels(spec.get("selector")))]
    return cells, []


def _quota(obj: dict[str, Any], now: float) -> Row:
    status = as_dict(obj.get("status"))
    hard, used = as_dict(status.get("hard")), as_dict(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        text = f"{resource}: {used.get(resource, '0')}/{hard[resource]}"
        (limits if resource.split(".")[0] == "limits" and "." in resource else requests) \
            .append(text)
    return [name_of(obj), age(obj, now), ", ".join(requests), ", ".join(limits)], []


PRINTERS: dict[str, Printer] = {
    "pods": Printer((
        NAME, column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        column("Status", "The aggregate status of the containers in this pod."),
        column("Restarts", "The number of times the containers in this pod have been restarted "
                         "and when the last container in this pod has restarted."),
        AGE,
        wide("IP", "podIP address allocated to the pod. Routable at least within the cluster. "
                    "Empty if not yet allocated."),
        wide("Node", "NodeName is a request to schedule this pod onto a specific node."),
        wide("Nominated Node", "nominatedNodeName is set only when this pod preempts other "
                                "pods on the node."),
        wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod "
                                 "readiness."),
    ), _pod),
    "services": Printer((
        NAME, column("Type", "type determines how the Service is exposed."),
        column("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned "
                           "randomly."),
        column("External-IP", "externalIPs is a list of IP addresses for which nodes in the "
                            "cluster will also accept traffic for this service."),
        column("Port(s)", "The list of ports that are exposed by this service."), AGE,
        wide("Selector", "Route service traffic to pods with label keys and values matching "
                          "this selector."),
    ), _service),
    "configmaps": Printer((
        NAME, column("Data", "Data contains the configuration data."), AGE), _config_map),
    "secrets": Printer((
        NAME, column("Type", "Used to facilitate programmatic handling of secret data."),
        column("Data", "Data contains the secret data."), AGE), _secret),
    "namespaces": Printer((NAME, column("Status", "The status of the namespace"), AGE), _namespace),
    "serviceaccounts": Printer((
        NAME, column("Secrets", "Secrets is a list of the secrets in the same namespace that pods "
                              "running using this ServiceAccount are allowed to use."), AGE),
        _service_account),
    "nodes": Printer((
        NAME, column("Status", "The status of the node"), column("Roles", "The roles of the node"),
        AGE, column("Version", "Kubelet Version reported by the node."),
        wide("Internal-IP", "List of addresses reachable to the node."),
        wide("External-IP", "List of addresses reachable to the node."),
        wide("OS-Image", "OS Image reported by the node from /etc/os-release."),
        wide("Kernel-Version", "Kernel Version reported by the node from 'uname -r'."),
        wide("Container-Runtime", "ContainerRuntime Version reported by the node through "
                                   "runtime remote API."),
    ), _node),
    "events": Printer((
        column("Last Seen", "The time at which the most recent occurrence of this event was "
                          "recorded."),
        column("Type", "Type of this event (Normal, Warning), new types could be added in the "
                     "future"),
        column("Reason", "This should be a short, machine understandable string that gives the "
                       "reason for the transition into the object's current status."),
        column("Object", "The object that this event is about."),
        wide("Subobject", "If referring to a piece of an object instead of an entire object, "
                           "this string should contain a valid JSON/Go field access statement."),
        wide("Source", "The component reporting this event."),
        column("Message", "A human-readable description of the status of this operation."),
        wide("First Seen", "The time at which the event was first recorded."),
        wide("Count", "The number of times this event has occurred."),
        ("Name", "string", "name", NAME_DESCRIPTION, 1),
    ), _event),
    "replicationcontrollers": Printer((
        NAME, column("Desired", "Replicas is the number of desired replicas.", "integer"),
        column("Current", "Replicas is the most recently observed number of replicas.", "integer"),
        column("Ready", "The number of ready replicas for this replication controller.",
             "integer"),
        AGE, *TEMPLATE_COLUMNS), _replication_controller),
    "resourcequotas": Printer((
        NAME, AGE,
        column("Request", "Request represents a minimum amount of cpu/memory that a container "
                        "may consume."),
        column("Limit", "Limits control the maximum amount of cpu/memory that a container may "
                      "use independent of contention on the node.")), _quota),
}
