"""The Table printers of the types outside the core group, after kube-apiserver's own:
deployments' READY, UP-TO-DATE, AVAILABLE, CONTAINERS, IMAGES and SELECTOR; replica sets'
DESIRED, CURRENT and READY (and the same three wide columns); daemon sets, jobs and cron jobs;
RBAC roles and bindings; ingresses, disruption budgets, priority classes, leases, API services,
and CustomResourceDefinitions (NAME and CREATED AT, the server's default table).
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver.registry.printers.values import (
    AGE,
    CREATED_AT,
    NAME,
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
    selector_text,
    since,
    template_cells,
    wide,
)


def _deployment(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    cells = [name_of(obj), f"{as_int(status.get('readyReplicas'))}/{as_int(spec.get('replicas'))}",
             as_int(status.get("updatedReplicas")), as_int(status.get("availableReplicas")),
             age(obj, now), *template_cells(spec, selector_text(spec.get("selector")))]
    return cells, []


def _replica_set(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    cells = [name_of(obj), as_int(spec.get("replicas")), as_int(status.get("replicas")),
             as_int(status.get("readyReplicas")), age(obj, now),
             *template_cells(spec, selector_text(spec.get("selector")))]
    return cells, []


def _daemon_set(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    node_selector = as_dict(as_dict(as_dict(spec.get("template")).get("spec")).get("nodeSelector"))
    cells = [name_of(obj), *(as_int(status.get(k)) for k in (
        "desiredNumberScheduled", "currentNumberScheduled", "numberReady",
        "updatedNumberScheduled", "numberAvailable")),
        format_labels(node_selector), age(obj, now),
        *template_cells(spec, selector_text(spec.get("selector")))]
    return cells, []


_JOB_STATES = (("Complete", "Complete"), ("Failed", "Failed"), ("", "Terminating"),
               ("Suspended", "Suspended"), ("FailureTarget", "FailureTarget"),
               ("SuccessCriteriaMet", "SuccessCriteriaMet"))


def _job(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    succeeded = as_int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{as_int(spec.get('completions'))}"
    elif as_int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {as_int(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    true_conditions = {as_dict(c).get("type") for c in as_list(status.get("conditions"))
                       if as_dict(c).get("status") == "True"}
    state = "Running"
    for condition, text in _JOB_STATES:
        if (condition in true_conditions if condition
                else as_dict(obj.get("metadata")).get("deletionTimestamp")):
            state = text
            break
    cells = [name_of(obj), state, completions, duration, age(obj, now),
             *template_cells(spec, selector_text(spec.get("selector")))]
    return cells, []


def _cron_job(obj: dict[str, Any], now: float) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    cells = [name_of(obj), str(spec.get("schedule") or ""), spec.get("timeZone") or NONE,
             "<unset>" if suspend is None else ("True" if suspend else "False"),
             len(as_list(status.get("active"))), NONE if last is None else since(last, now),
             age(obj, now), *template_cells(job_spec, selector_text(job_spec.get("selector")))]
    return cells, []


def _created_at(obj: dict[str, Any], now: float) -> Row:
    return [name_of(obj), str(as_dict(obj.get("metadata")).get("creationTimestamp") or "")], []


def _binding(obj: dict[str, Any], now: float) -> Row:
    ref = as_dict(obj.get("roleRef"))
    users, groups, accounts = [], [], []
    for subject in (as_dict(s) for s in as_list(obj.get("subjects"))):
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace', '')}:{name}")
    cells = [name_of(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", age(obj, now),
             ", ".join(users), ", ".join(groups), ", ".join(accounts)]
    return cells, []


def _ingress(obj: dict[str, Any], now: float) -> Row:
    spec = as_dict(obj.get("spec"))
    hosts = [str(as_dict(r).get("host")) for r in as_list(spec.get("rules")) if as_dict(r).get("host")]
    hosts_text = ",".join(hosts[:3]) + (f" + {len(hosts) - 3} more..." if len(hosts) > 3 else "")
    ingress = as_list(as_dict(as_dict(obj.get("status")).get("loadBalancer")).get("ingress"))
    address = ",".join(sorted({str(as_dict(i).get("ip") or as_dict(i).get("hostname") or "")
                               for i in ingress} - {""}))
    cells = [name_of(obj), spec.get("ingressClassName") or NONE, hosts_text or "*", address,
             "80, 443" if as_list(spec.get("tls")) else "80", age(obj, now)]
    return cells, []


def _pdb(obj: dict[str, Any], now: float) -> Row:
    spec = as_dict(obj.get("spec"))
    limits = ["N/A" if spec.get(k) is None else str(spec[k])
              for k in ("minAvailable", "maxUnavailable")]
    cells = [name_of(obj), *limits, as_int(as_dict(obj.get("status")).get("disruptionsAllowed")),
             age(obj, now)]
    return cells, []


def _priority_class(obj: dict[str, Any], now: float) -> Row:
    cells = [name_of(obj), as_int(obj.get("value")), bool(obj.get("globalDefault")), age(obj, now),
             str(obj.get("preemptionPolicy") or "")]
    return cells, []


def _lease(obj: dict[str, Any], now: float) -> Row:
    holder = as_dict(obj.get("spec")).get("holderIdentity")
    return [name_of(obj), holder if isinstance(holder, str) else "", age(obj, now)], []


def _api_service(obj: dict[str, Any], now: float) -> Row:
    service = as_dict(as_dict(obj.get("spec")).get("service"))
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    for cond in (as_dict(c) for c in as_list(as_dict(obj.get("status")).get("conditions"))):
        if cond.get("type") == "Available":
            state = str(cond.get("status", ""))
            reason = cond.get("reason")
            available = f"{state} ({reason})" if state != "True" and reason else state
    return [name_of(obj), where, available, age(obj, now)], []


_BINDING_COLUMNS = (NAME, column("Role", "RoleRef can reference a Role in the current namespace "
                               "or a ClusterRole in the global namespace."), AGE,
                    wide("Users", "Users in the roleBinding"),
                    wide("Groups", "Groups in the roleBinding"),
                    wide("ServiceAccounts", "ServiceAccounts in the roleBinding"))


PRINTERS: dict[str, Printer] = {
    "deployments.apps": Printer((
        NAME, column("Ready", "Number of the pod with ready state"),
        column("Up-to-date", "Total number of non-terminating pods targeted by this deployment "
                           "that have the desired template spec."),
        column("Available", "Total number of available non-terminating pods (ready for at least "
                          "minReadySeconds) targeted by this deployment."),
        AGE, *TEMPLATE_COLUMNS), _deployment),
    "replicasets.apps": Printer((
        NAME, column("Desired", "Replicas is the number of desired pods.", "integer"),
        column("Current", "Replicas is the most recently observed number of non-terminating "
                        "pods.", "integer"),
        column("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a "
                      "Ready Condition.", "integer"),
        AGE, *TEMPLATE_COLUMNS), _replica_set),
    "daemonsets.apps": Printer((
        NAME,
        column("Desired", "The total number of nodes that should be running the daemon pod.",
             "integer"),
        column("Current", "The number of nodes that are running at least 1 daemon pod and are "
                        "supposed to run the daemon pod.", "integer"),
        column("Ready", "The number of nodes that should be running the daemon pod and have one "
                      "or more of the daemon pod running and ready.", "integer"),
        column("Up-to-date", "The total number of nodes that are running updated daemon pod",
             "integer"),
        column("Available", "The number of nodes that should be running the daemon pod and have "
                          "one or more of the daemon pod running and available.", "integer"),
        column("Node Selector", "NodeSelector is a selector which must be true for the pod to fit "
                              "on a node."),
        AGE, *TEMPLATE_COLUMNS), _daemon_set),
    "jobs.batch": Printer((
        NAME, column("Status", "Status of the job."),
        column("Completions", "The number of pods which reached phase Succeeded."),
        column("Duration", "Time required to complete the job."), AGE, *TEMPLATE_COLUMNS),
        _job),
    "cronjobs.batch": Printer((
        NAME, column("Schedule", "The schedule in Cron format."),
        column("Timezone", "The time zone name for the given schedule."),
        column("Suspend", "This flag tells the controller to suspend subsequent executions.",
             "boolean"),
        column("Active", "A list of pointers to currently running jobs.", "integer"),
        column("Last Schedule", "Information when was the last time the job was successfully "
                              "scheduled."),
        AGE, *TEMPLATE_COLUMNS), _cron_job),
    "roles.rbac.authorization.k8s.io": Printer((NAME, CREATED_AT), _created_at),
    "clusterroles.rbac.authorization.k8s.io": Printer((NAME, CREATED_AT), _created_at),
    "rolebindings.rbac.authorization.k8s.io": Printer(_BINDING_COLUMNS, _binding),
    "clusterrolebindings.rbac.authorization.k8s.io": Printer(_BINDING_COLUMNS, _binding),
    "ingresses.networking.k8s.io": Printer((
        NAME, column("Class", "The name of the IngressClass resource that should be used for "
                            "additional configuration"),
        column("Hosts", "Hosts that incoming requests are matched against before the ingress "
                      "rule"),
        column("Address", "Address is a list containing ingress points for the load-balancer"),
        column("Ports", "Ports of TLS configurations that open"), AGE), _ingress),
    "poddisruptionbudgets.policy": Printer((
        NAME, column("Min Available", "The minimum number of pods that must be available."),
        column("Max Unavailable", "The maximum number of pods that may be unavailable."),
        column("Allowed Disruptions", "Calculated number of pods that may be disrupted at this "
                                    "time.", "integer"),
        AGE), _pdb),
    "priorityclasses.scheduling.k8s.io": Printer((
        NAME, column("Value", "value represents the integer value of this priority class.",
                   "integer"),
        column("Global-Default", "globalDefault specifies whether this PriorityClass should be "
                               "considered as the default priority for pods that do not have "
                               "any priority class.", "boolean"),
        AGE, column("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with "
                                      "lower priority.")), _priority_class),
    "leases.coordination.k8s.io": Printer((
        NAME, column("Holder", "holderIdentity contains the identity of the holder of a current "
                             "lease."), AGE), _lease),
    "apiservices.apiregistration.k8s.io": Printer((
        NAME, column("Service", "The reference to the service that hosts this API endpoint."),
        column("Available", "Whether this service is available."), AGE), _api_service),
    "customresourcedefinitions.apiextensions.k8s.io": Printer((NAME, CREATED_AT), _created_at),
}
