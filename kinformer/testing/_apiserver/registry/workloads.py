"""Defaults the fake API server's decoder fills into Pods and workloads, as kube-apiserver's
``SetDefaults_*`` functions do for every write of these types (create and update alike).

Containers (``imagePullPolicy`` from the image's tag, termination message path and policy,
``resources``, port protocols, probe timings), pod specs (restart and DNS policy, grace period,
security context, scheduler), Pod-only defaults (service links, requests from limits), and the
specs of Deployments, ReplicaSets, DaemonSets, Jobs, CronJobs and ReplicationControllers, including the pod
template each holds. Pure functions that change the decoded body in place and never fail: a
malformed body is left for validation to refuse. :mod:`.defaults` calls :func:`apply`.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver.resources import ResourceType

_PROBE_DEFAULTS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                   ("failureThreshold", 3))
_DEFAULT_MODE = 420  # 0644, what a secret, configMap or projected volume's files get


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _unset(obj: dict[str, Any], key: str) -> bool:
    """Whether Go would see the field as unset (absent, null or empty)."""
    return obj.get(key) in (None, "")


def pull_policy(image: Any) -> str:
    """``Always`` for an image without a tag or digest, or tagged ``latest``; else
    ``IfNotPresent`` (as for a name that does not parse)."""
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _probe(probe: Any) -> None:
    probe = _dict(probe)
    if probe is None:
        return
    for key, value in _PROBE_DEFAULTS:
        if _unset(probe, key):
            probe[key] = value
    http = _dict(probe.get("httpGet"))
    if http is not None:
        if _unset(http, "path"):
            http["path"] = "/"
        if _unset(http, "scheme"):
            http["scheme"] = "HTTP"


def _container(container: dict[str, Any]) -> None:
    for port in _dicts(container.get("ports")):
        if _unset(port, "protocol"):
            port["protocol"] = "TCP"
    for env in _dicts(container.get("env")):
        field_ref = _dict((_dict(env.get("valueFrom")) or {}).get("fieldRef"))
        if field_ref is not None and _unset(field_ref, "apiVersion"):
            field_ref["apiVersion"] = "v1"
    if not isinstance(container.get("resources"), dict):
        container["resources"] = {}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))
    if _unset(container, "terminationMessagePath"):
        container["terminationMessagePath"] = "/dev/termination-log"
    if _unset(container, "terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    if _unset(container, "imagePullPolicy"):
        container["imagePullPolicy"] = pull_policy(container.get("image"))


def _volume(volume: dict[str, Any]) -> None:
    for source in ("secret", "configMap", "projected", "downwardAPI"):
        inner = _dict(volume.get(source))
        if inner is not None and inner.get("defaultMode") is None:
            inner["defaultMode"] = _DEFAULT_MODE
    if _dict(volume.get("hostPath")) is not None:
        volume["hostPath"].setdefault("type", "")


def pod_spec(spec: Any) -> None:
    """Fill a pod spec's defaults (a Pod's, or a template's) and its containers'."""
    spec = _dict(spec)
    if spec is None:
        return
    for container in (*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers"))):
        _container(container)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume)
    if _unset(spec, "restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if _unset(spec, "dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if _unset(spec, "schedulerName"):
        spec["schedulerName"] = "default-scheduler"


def _template(spec: dict[str, Any]) -> None:
    template = _dict(spec.get("template"))
    if template is not None:
        pod_spec(template.get("spec"))


def _pod(obj: dict[str, Any]) -> None:
    spec = _dict(obj.get("spec"))
    if spec is None:
        return
    pod_spec(spec)
    for container in (*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers"))):
        resources = container["resources"]
        limits = _dict(resources.get("limits"))
        if limits:
            requests = _dict(resources.get("requests"))
            if requests is None:
                requests = resources["requests"] = {}
            for name, value in limits.items():
                requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True


def _rolling_update(spec: dict[str, Any], field: str) -> dict[str, Any] | None:
    """The ``rollingUpdate`` of the update strategy in ``spec[field]``, defaulting the strategy's
    type to RollingUpdate; None when the strategy is of another type."""
    strategy = _dict(spec.get(field))
    if strategy is None:
        strategy = spec[field] = {}
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] != "RollingUpdate":
        return None
    rolling = _dict(strategy.get("rollingUpdate"))
    if rolling is None:
        rolling = strategy["rollingUpdate"] = {}
    return rolling


def _deployment(spec: dict[str, Any]) -> None:
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    rolling = _rolling_update(spec, "strategy")
    if rolling is not None:
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600


def _daemon_set(spec: dict[str, Any]) -> None:
    rolling = _rolling_update(spec, "updateStrategy")
    if rolling is not None:
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10


def _job(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    copy_template_labels(obj, spec)


def _cron_job(spec: dict[str, Any]) -> None:
    if _unset(spec, "concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_spec = _dict((_dict(spec.get("jobTemplate")) or {}).get("spec"))
    if job_spec is not None:
        _template(job_spec)


def _replication_controller(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    labels = (_dict((_dict(spec.get("template")) or {}).get("metadata")) or {}).get("labels")
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        copy_template_labels(obj, spec)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def copy_template_labels(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """An object without labels takes its pod template's (a Job's, a ReplicationController's)."""
    labels = (_dict((_dict(spec.get("template")) or {}).get("metadata")) or {}).get("labels")
    meta = obj.get("metadata")
    if isinstance(labels, dict) and labels and isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


def apply(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill the defaults of a Pod or workload body in place (other types are left alone)."""
    kind = rt.group_resource
    if kind == "pods":
        _pod(obj)
        return
    spec = _dict(obj.get("spec"))
    if spec is None:
        return
    if kind in ("deployments.apps", "replicasets.apps", "daemonsets.apps", "jobs.batch",
                "replicationcontrollers"):
        _template(spec)
    if kind == "deployments.apps":
        _deployment(spec)
    elif kind == "replicasets.apps":
        if spec.get("replicas") is None:
            spec["replicas"] = 1
    elif kind == "daemonsets.apps":
        _daemon_set(spec)
    elif kind == "jobs.batch":
        _job(obj, spec)
    elif kind == "cronjobs.batch":
        _cron_job(spec)
    elif kind == "replicationcontrollers":
        _replication_controller(obj, spec)
