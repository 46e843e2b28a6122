"""The ``scale`` subresource of the fake API server (``kubectl scale``): an ``autoscaling/v1``
``Scale`` view of a Deployment's or ReplicationController's replicas.

Reads build the view from the stored object; writes (PUT of a Scale, or any patch of the view)
change only the object's ``spec.replicas``, through the same storage path as any update, so
they bump its generation and resourceVersion and reach its watchers as MODIFIED.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.registry import validation


def _selector_text(selector: Any) -> str:
    """A label selector in its query form (``app=web,tier in (a,b)``)."""
    if not isinstance(selector, dict):
        return ""
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        labels: dict[str, Any] = selector  # a ReplicationController's plain map
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            terms.append(f"{key} {op.lower()} ({','.join(sorted(values))})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


def view(obj: dict[str, Any]) -> dict[str, Any]:
    """The ``Scale`` of a stored Deployment or ReplicationController."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    replicas = spec.get("replicas")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {key: meta[key] for key in
                     ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if key in meta},
        "spec": {"replicas": 1 if replicas is None else replicas},
        "status": {"replicas": int((obj.get("status") or {}).get("replicas") or 0),
                   "selector": _selector_text(spec.get("selector"))},
    }


def set_replicas(obj: dict[str, Any], scale: Any) -> dict[str, Any]:
    """``obj`` with the replicas of ``scale`` (a Scale body); 400 or 422 as the server answers.

    A resourceVersion in the Scale's metadata becomes the update's precondition (409 when
    stale).
    """
    name = str((obj.get("metadata") or {}).get("name", ""))
    spec = scale.get("spec") if isinstance(scale, dict) else None
    replicas = (spec.get("replicas") if isinstance(spec, dict) else None) or 0  # absent is 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise status.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{validation.json_type(replicas)} into Go struct field ScaleSpec.spec.replicas "
            f"of type int32")
    if replicas < 0:
        message = f"Invalid value: {replicas}: must be greater than or equal to 0"
        raise status.StatusError(
            422, "Invalid", f'Scale.autoscaling "{name}" is invalid: spec.replicas: {message}',
            {"name": name, "group": "autoscaling", "kind": "Scale",
             "causes": [{"reason": "FieldValueInvalid", "message": message,
                         "field": "spec.replicas"}]})
    obj.setdefault("spec", {})["replicas"] = replicas
    wanted = (scale.get("metadata") or {}).get("resourceVersion")
    if wanted:
        obj["metadata"]["resourceVersion"] = str(wanted)
    return obj
