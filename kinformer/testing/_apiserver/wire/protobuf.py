"""The protobuf side of the fake API server's codec: request bodies kubectl sends as
``application/vnd.kubernetes.protobuf``, decoded into the JSON shape the server stores.

A body is the ``k8s\\0`` magic, then a ``runtime.Unknown`` envelope (typeMeta, raw,
contentEncoding, contentType) whose ``raw`` is the object's own message. Decoding is generic: a
compact table gives, per message, each field number's JSON name and type (a scalar, a nested
message, a list, a string-keyed map, or an inlined message), and one walker turns any listed
message into JSON. Field numbers are those of the Kubernetes API's ``generated.proto``; the
tables cover every type ``kubectl create`` makes, the ``DeleteOptions`` client-go sends with every
delete (whatever group version it names), and the Leases and Events of Go controllers; within
them the fields clients set (fields that are not listed are skipped, as protobuf skips unknown
fields).

As the JSON encoding does, zero scalars are left out unless the Go field is a pointer (marked
``!``: ``replicas: 0`` is kept), while nested messages are kept even when empty (``strategy:
{}``). Responses stay JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

MAGIC = b"k8s\x00"

# Field types: "s" string, "i" integer (int32/int64), "b" bool, "y" bytes (base64 in JSON),
# "t" meta.v1.Time, "m" meta.v1.MicroTime, "q" resource.Quantity, "x" intstr.IntOrString, or a
# message name.
# "[]T" is a repeated field, "{}T" a map<string, T>, "^Name" a message whose fields JSON
# inlines into the parent; a trailing "!" keeps a zero value (a pointer field in Go).
Schema = dict[int, tuple[str, str]]


def _object(spec: str | None = None, status: str | None = None) -> Schema:
    """The usual top-level layout: metadata = 1, spec = 2, status = 3."""
    fields: Schema = {1: ("metadata", "ObjectMeta")}
    if spec:
        fields[2] = ("spec", spec)
    if status:
        fields[3] = ("status", status)
    return fields


_EMPTY: Schema = {}  # a status message whose fields a create request never needs

MESSAGES: dict[str, Schema] = {
    # meta/v1
    "ObjectMeta": {
        1: ("name", "s"), 2: ("generateName", "s"), 3: ("namespace", "s"), 5: ("uid", "s"),
        6: ("resourceVersion", "s"), 7: ("generation", "i"), 8: ("creationTimestamp", "t"),
        9: ("deletionTimestamp", "t"), 10: ("deletionGracePeriodSeconds", "i!"),
        11: ("labels", "{}s"), 12: ("annotations", "{}s"),
        13: ("ownerReferences", "[]OwnerReference"), 14: ("finalizers", "[]s"),
    },
    "OwnerReference": {
        5: ("apiVersion", "s"), 1: ("kind", "s"), 3: ("name", "s"), 4: ("uid", "s"),
        6: ("controller", "b!"), 7: ("blockOwnerDeletion", "b!"),
    },
    "LabelSelector": {
        1: ("matchLabels", "{}s"), 2: ("matchExpressions", "[]LabelSelectorRequirement"),
    },
    "LabelSelectorRequirement": {1: ("key", "s"), 2: ("operator", "s"), 3: ("values", "[]s")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "i!"), 2: ("preconditions", "Preconditions"),
        3: ("orphanDependents", "b!"), 4: ("propagationPolicy", "s!"), 5: ("dryRun", "[]s"),
        6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "b!"),
    },
    "Preconditions": {1: ("uid", "s!"), 2: ("resourceVersion", "s!")},
    # core/v1
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"), 4: ("immutable", "b!"), 2: ("data", "{}s"),
        3: ("binaryData", "{}y"),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta"), 5: ("immutable", "b!"), 2: ("data", "{}y"),
        4: ("stringData", "{}s"), 3: ("type", "s"),
    },
    "Namespace": _object("NamespaceSpec", "NamespaceStatus"),
    "NamespaceSpec": {1: ("finalizers", "[]s")},
    "NamespaceStatus": {1: ("phase", "s")},
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta"), 2: ("secrets", "[]ObjectReference"),
        3: ("imagePullSecrets", "[]LocalObjectReference"),
        4: ("automountServiceAccountToken", "b!"),
    },
    "ObjectReference": {
        1: ("kind", "s"), 2: ("namespace", "s"), 3: ("name", "s"), 4: ("uid", "s"),
        5: ("apiVersion", "s"), 6: ("resourceVersion", "s"), 7: ("fieldPath", "s"),
    },
    "LocalObjectReference": {1: ("name", "s")},
    "Service": _object("ServiceSpec", "ServiceStatus"),
    "ServiceSpec": {
        1: ("ports", "[]ServicePort"), 2: ("selector", "{}s"), 3: ("clusterIP", "s"),
        18: ("clusterIPs", "[]s"), 4: ("type", "s"), 5: ("externalIPs", "[]s"),
        7: ("sessionAffinity", "s"), 8: ("loadBalancerIP", "s"),
        9: ("loadBalancerSourceRanges", "[]s"), 10: ("externalName", "s"),
        11: ("externalTrafficPolicy", "s"), 12: ("healthCheckNodePort", "i"),
        13: ("publishNotReadyAddresses", "b"),
        14: ("sessionAffinityConfig", "SessionAffinityConfig"), 19: ("ipFamilies", "[]s"),
        17: ("ipFamilyPolicy", "s!"), 20: ("allocateLoadBalancerNodePorts", "b!"),
        21: ("loadBalancerClass", "s!"), 22: ("internalTrafficPolicy", "s!"),
        23: ("trafficDistribution", "s!"),
    },
    "ServicePort": {
        1: ("name", "s"), 2: ("protocol", "s"), 6: ("appProtocol", "s!"), 3: ("port", "i!"),
        4: ("targetPort", "x"), 5: ("nodePort", "i"),
    },
    "SessionAffinityConfig": {1: ("clientIP", "ClientIPConfig")},
    "ClientIPConfig": {1: ("timeoutSeconds", "i!")},
    "ServiceStatus": {1: ("loadBalancer", "LoadBalancerStatus")},
    "LoadBalancerStatus": _EMPTY,
    "ResourceQuota": _object("ResourceQuotaSpec", "ResourceQuotaStatus"),
    "ResourceQuotaSpec": {
        1: ("hard", "{}q"), 2: ("scopes", "[]s"), 3: ("scopeSelector", "ScopeSelector"),
    },
    "ScopeSelector": {1: ("matchExpressions", "[]ScopedResourceSelectorRequirement")},
    "ScopedResourceSelectorRequirement": {
        1: ("scopeName", "s"), 2: ("operator", "s"), 3: ("values", "[]s"),
    },
    "ResourceQuotaStatus": {1: ("hard", "{}q"), 2: ("used", "{}q")},
    "Pod": _object("PodSpec", "PodStatus"),
    "PodStatus": _EMPTY,
    "PodTemplateSpec": _object("PodSpec"),
    "PodSpec": {
        2: ("containers", "[]Container"), 20: ("initContainers", "[]Container"),
        3: ("restartPolicy", "s"), 4: ("terminationGracePeriodSeconds", "i!"),
        5: ("activeDeadlineSeconds", "i!"), 6: ("dnsPolicy", "s"), 7: ("nodeSelector", "{}s"),
        8: ("serviceAccountName", "s"), 9: ("serviceAccount", "s"),
        21: ("automountServiceAccountToken", "b!"), 10: ("nodeName", "s"),
        11: ("hostNetwork", "b"), 12: ("hostPID", "b"), 13: ("hostIPC", "b"),
        27: ("shareProcessNamespace", "b!"),
        15: ("imagePullSecrets", "[]LocalObjectReference"), 16: ("hostname", "s"),
        17: ("subdomain", "s"), 19: ("schedulerName", "s"), 22: ("tolerations", "[]Toleration"),
        24: ("priorityClassName", "s"), 25: ("priority", "i!"), 29: ("runtimeClassName", "s!"),
        30: ("enableServiceLinks", "b!"), 31: ("preemptionPolicy", "s!"),
    },
    "Container": {
        1: ("name", "s"), 2: ("image", "s"), 3: ("command", "[]s"), 4: ("args", "[]s"),
        5: ("workingDir", "s"), 6: ("ports", "[]ContainerPort"), 7: ("env", "[]EnvVar"),
        8: ("resources", "ResourceRequirements"), 24: ("restartPolicy", "s!"),
        9: ("volumeMounts", "[]VolumeMount"), 13: ("terminationMessagePath", "s"),
        20: ("terminationMessagePolicy", "s"), 14: ("imagePullPolicy", "s"),
        16: ("stdin", "b"), 17: ("stdinOnce", "b"), 18: ("tty", "b"),
    },
    "ContainerPort": {
        1: ("name", "s"), 2: ("hostPort", "i"), 3: ("containerPort", "i!"),
        4: ("protocol", "s"), 5: ("hostIP", "s"),
    },
    "EnvVar": {1: ("name", "s"), 2: ("value", "s")},
    "ResourceRequirements": {1: ("limits", "{}q"), 2: ("requests", "{}q")},
    "VolumeMount": {
        1: ("name", "s"), 2: ("readOnly", "b"), 3: ("mountPath", "s"), 4: ("subPath", "s"),
        5: ("mountPropagation", "s!"), 6: ("subPathExpr", "s"),
    },
    "Toleration": {
        1: ("key", "s"), 2: ("operator", "s"), 3: ("value", "s"), 4: ("effect", "s"),
        5: ("tolerationSeconds", "i!"),
    },
    "Event": {
        1: ("metadata", "ObjectMeta"), 2: ("involvedObject", "ObjectReference"),
        3: ("reason", "s"), 4: ("message", "s"), 5: ("source", "EventSource"),
        6: ("firstTimestamp", "t"), 7: ("lastTimestamp", "t"), 8: ("count", "i"),
        9: ("type", "s"), 10: ("eventTime", "m"), 11: ("series", "EventSeries"),
        12: ("action", "s"), 13: ("related", "ObjectReference"),
        14: ("reportingComponent", "s"), 15: ("reportingInstance", "s"),
    },
    "EventSource": {1: ("component", "s"), 2: ("host", "s")},
    "EventSeries": {1: ("count", "i"), 2: ("lastObservedTime", "m")},
    # coordination.k8s.io/v1 (leader election)
    "Lease": _object("LeaseSpec"),
    "LeaseSpec": {
        1: ("holderIdentity", "s!"), 2: ("leaseDurationSeconds", "i!"), 3: ("acquireTime", "m"),
        4: ("renewTime", "m"), 5: ("leaseTransitions", "i!"), 6: ("strategy", "s!"),
        7: ("preferredHolder", "s!"),
    },
    # apps/v1
    "Deployment": _object("DeploymentSpec", "DeploymentStatus"),
    "DeploymentSpec": {
        1: ("replicas", "i!"), 2: ("selector", "LabelSelector"), 3: ("template", "PodTemplateSpec"),
        4: ("strategy", "DeploymentStrategy"), 5: ("minReadySeconds", "i"),
        6: ("revisionHistoryLimit", "i!"), 7: ("paused", "b"), 9: ("progressDeadlineSeconds", "i!"),
    },
    "DeploymentStrategy": {1: ("type", "s"), 2: ("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "x"), 2: ("maxSurge", "x")},
    "DeploymentStatus": _EMPTY,
    "ReplicaSet": _object("ReplicaSetSpec", "ReplicaSetStatus"),
    "ReplicaSetSpec": {
        1: ("replicas", "i!"), 4: ("minReadySeconds", "i"), 2: ("selector", "LabelSelector"),
        3: ("template", "PodTemplateSpec"),
    },
    "ReplicaSetStatus": _EMPTY,
    # batch/v1
    "Job": _object("JobSpec", "JobStatus"),
    "JobSpec": {
        1: ("parallelism", "i!"), 2: ("completions", "i!"), 3: ("activeDeadlineSeconds", "i!"),
        7: ("backoffLimit", "i!"), 12: ("backoffLimitPerIndex", "i!"),
        13: ("maxFailedIndexes", "i!"), 4: ("selector", "LabelSelector"),
        5: ("manualSelector", "b!"), 6: ("template", "PodTemplateSpec"),
        8: ("ttlSecondsAfterFinished", "i!"), 9: ("completionMode", "s!"), 10: ("suspend", "b!"),
        14: ("podReplacementPolicy", "s!"), 15: ("managedBy", "s!"),
    },
    "JobStatus": _EMPTY,
    "CronJob": _object("CronJobSpec", "CronJobStatus"),
    "CronJobSpec": {
        1: ("schedule", "s"), 8: ("timeZone", "s!"), 2: ("startingDeadlineSeconds", "i!"),
        3: ("concurrencyPolicy", "s"), 4: ("suspend", "b!"), 5: ("jobTemplate", "JobTemplateSpec"),
        6: ("successfulJobsHistoryLimit", "i!"), 7: ("failedJobsHistoryLimit", "i!"),
    },
    "JobTemplateSpec": _object("JobSpec"),
    "CronJobStatus": _EMPTY,
    # rbac.authorization.k8s.io/v1
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule")},
    "ClusterRole": {
        1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule"),
        3: ("aggregationRule", "AggregationRule"),
    },
    "PolicyRule": {
        1: ("verbs", "[]s"), 2: ("apiGroups", "[]s"), 3: ("resources", "[]s"),
        4: ("resourceNames", "[]s"), 5: ("nonResourceURLs", "[]s"),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "[]LabelSelector")},
    "RoleBinding": {
        1: ("metadata", "ObjectMeta"), 2: ("subjects", "[]Subject"), 3: ("roleRef", "RoleRef"),
    },
    "Subject": {1: ("kind", "s"), 2: ("apiGroup", "s"), 3: ("name", "s"), 4: ("namespace", "s")},
    "RoleRef": {1: ("apiGroup", "s"), 2: ("kind", "s"), 3: ("name", "s")},
    # networking.k8s.io/v1
    "Ingress": _object("IngressSpec", "IngressStatus"),
    "IngressSpec": {
        4: ("ingressClassName", "s!"), 1: ("defaultBackend", "IngressBackend"),
        2: ("tls", "[]IngressTLS"), 3: ("rules", "[]IngressRule"),
    },
    "IngressTLS": {1: ("hosts", "[]s"), 2: ("secretName", "s")},
    "IngressRule": {1: ("host", "s"), 2: ("", "^IngressRuleValue")},
    "IngressRuleValue": {1: ("http", "HTTPIngressRuleValue")},
    "HTTPIngressRuleValue": {1: ("paths", "[]HTTPIngressPath")},
    "HTTPIngressPath": {1: ("path", "s"), 3: ("pathType", "s!"), 2: ("backend", "IngressBackend")},
    "IngressBackend": {4: ("service", "IngressServiceBackend"),
                       3: ("resource", "TypedLocalObjectReference")},
    "IngressServiceBackend": {1: ("name", "s"), 2: ("port", "ServiceBackendPort")},
    "ServiceBackendPort": {1: ("name", "s"), 2: ("number", "i")},
    "TypedLocalObjectReference": {1: ("apiGroup", "s!"), 2: ("kind", "s"), 3: ("name", "s")},
    "IngressStatus": {1: ("loadBalancer", "IngressLoadBalancerStatus")},
    "IngressLoadBalancerStatus": _EMPTY,
    # policy/v1
    "PodDisruptionBudget": _object("PodDisruptionBudgetSpec", "PodDisruptionBudgetStatus"),
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "x"), 2: ("selector", "LabelSelector"), 3: ("maxUnavailable", "x"),
        4: ("unhealthyPodEvictionPolicy", "s!"),
    },
    "PodDisruptionBudgetStatus": _EMPTY,
    # authentication.k8s.io/v1 (the serviceaccounts/token subresource)
    "TokenRequest": _object("TokenRequestSpec"),
    "TokenRequestSpec": {
        1: ("audiences", "[]s"), 4: ("expirationSeconds", "i!"),
        3: ("boundObjectRef", "BoundObjectReference"),
    },
    "BoundObjectReference": {
        1: ("kind", "s"), 2: ("apiVersion", "s"), 3: ("name", "s"), 4: ("uid", "s"),
    },
    # scheduling.k8s.io/v1
    "PriorityClass": {
        1: ("metadata", "ObjectMeta"), 2: ("value", "i!"), 3: ("globalDefault", "b"),
        4: ("description", "s"), 5: ("preemptionPolicy", "s!"),
    },
}

# (apiVersion, kind) -> the message holding the object
KINDS: dict[tuple[str, str], str] = {
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "Namespace"): "Namespace",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("v1", "Pod"): "Pod",
    ("v1", "Event"): "Event",
    ("coordination.k8s.io/v1", "Lease"): "Lease",
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "RoleBinding",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
}


class UnsupportedKind(ValueError):
    """A well-formed protobuf body of a type the tables do not describe (answered 415)."""


# ---- wire format -----------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited fields;
    fixed-width fields (no Kubernetes type used here has one) are skipped."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            yield number, data[pos:pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > len(data):
                raise ValueError("truncated field")
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _signed(value: int) -> int:
    """A varint read as a two's-complement 64-bit integer (negative int32s use ten bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _need_bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError("expected a length-delimited field")
    return value


def _need_int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise ValueError("expected a varint field")
    return value


# ---- values ----------------------------------------------------------------------------------


def _time(data: bytes, micro: bool = False) -> str | None:
    seconds = nanos = 0
    for number, value in _fields(data):
        if number == 1:
            seconds = _signed(_need_int(value))
        elif number == 2:
            nanos = _signed(_need_int(value))
    if seconds == 0 and nanos == 0:
        return None  # the zero time, which JSON writes as null
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    if micro:  # a MicroTime: always six fraction digits
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _quantity(data: bytes) -> str:
    return next((_need_bytes(v).decode() for n, v in _fields(data) if n == 1), "")


def _int_or_string(data: bytes) -> int | str:
    kind, number, text = 0, 0, ""
    for field, value in _fields(data):
        if field == 1:
            kind = _need_int(value)
        elif field == 2:
            number = _signed(_need_int(value))
        elif field == 3:
            text = _need_bytes(value).decode()
    return text if kind == 1 else number


def _value(kind: str, raw: int | bytes) -> Any:
    """One value of field type ``kind`` (no list, map or ``!`` marks)."""
    if kind == "s":
        return _need_bytes(raw).decode()
    if kind == "i":
        return _signed(_need_int(raw))
    if kind == "b":
        return bool(_need_int(raw))
    if kind == "y":
        return base64.b64encode(_need_bytes(raw)).decode()
    if kind == "t":
        return _time(_need_bytes(raw))
    if kind == "m":
        return _time(_need_bytes(raw), micro=True)
    if kind == "q":
        return _quantity(_need_bytes(raw))
    if kind == "x":
        return _int_or_string(_need_bytes(raw))
    return decode_message(kind, _need_bytes(raw))


def _items(kind: str, raw: int | bytes) -> list[Any]:
    """The values one occurrence of a repeated field holds (several when scalars are packed)."""
    if kind in ("i", "b") and isinstance(raw, bytes):
        values, pos = [], 0
        while pos < len(raw):
            value, pos = _varint(raw, pos)
            values.append(_value(kind, value))
        return values
    return [_value(kind, raw)]


def _map_entry(kind: str, raw: int | bytes) -> tuple[str, Any]:
    key, value = "", None
    for number, part in _fields(_need_bytes(raw)):
        if number == 1:
            key = _need_bytes(part).decode()
        elif number == 2:
            value = _value(kind, part)
    if value is None:  # an entry without a value holds the zero value
        value = _value(kind, b"") if kind not in ("i", "b") else _value(kind, 0)
    return key, value


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    """The JSON object of protobuf message ``name`` (a key of :data:`MESSAGES`) in ``data``."""
    schema = MESSAGES[name]
    obj: dict[str, Any] = {}
    for number, raw in _fields(data):
        field = schema.get(number)
        if field is None:
            continue
        json_name, kind = field
        keep = kind.endswith("!")
        kind = kind.rstrip("!")
        if kind.startswith("[]"):
            obj.setdefault(json_name, []).extend(_items(kind[2:], raw))
        elif kind.startswith("{}"):
            key, value = _map_entry(kind[2:], raw)
            obj.setdefault(json_name, {})[key] = value
        elif kind.startswith("^"):
            obj.update(decode_message(kind[1:], _need_bytes(raw)))
        else:
            value = _value(kind, raw)
            if value is None or (not keep and not isinstance(value, dict)
                                 and value in ("", 0, False)):
                obj.pop(json_name, None)
            else:
                obj[json_name] = value
    return obj


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object.

    Raises :class:`UnsupportedKind` for a type the tables do not describe and
    :class:`ValueError` (or ``UnicodeDecodeError``) for a malformed body.
    """
    if not body.startswith(MAGIC):
        raise ValueError("missing the k8s protobuf magic prefix")
    api_version = kind = encoding = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC):]):
        if number == 1:
            for n, v in _fields(_need_bytes(value)):
                if n == 1:
                    api_version = _need_bytes(v).decode()
                elif n == 2:
                    kind = _need_bytes(v).decode()
        elif number == 2:
            raw = _need_bytes(value)
        elif number == 3:
            encoding = _need_bytes(value).decode()
    if encoding:
        raise UnsupportedKind(f"content encoding {encoding!r} is not supported")
    message = "DeleteOptions" if kind == "DeleteOptions" else KINDS.get((api_version, kind))
    if message is None:
        raise UnsupportedKind(f"protobuf bodies of {api_version}/{kind} are not supported")
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    obj.update(decode_message(message, raw))
    return obj
