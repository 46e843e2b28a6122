"""Checks the fake API server makes on request bodies: shapes (400) and names (422)."""

from __future__ import annotations

import re
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


# The Go types of the fields a typed decoder checks, by struct: a value of another JSON type is
# refused with 400, naming the struct and the field path as Go's JSON decoder does.
_META_TYPES = {
    "name": "string", "generateName": "string", "namespace": "string", "uid": "types.UID",
    "resourceVersion": "string", "generation": "int64", "labels": "map[string]string",
    "annotations": "map[string]string", "finalizers": "[]string",
}
_KIND_TYPES: dict[str, dict[str, str]] = {
    "ConfigMap": {"data": "map[string]string", "binaryData": "map[string][]uint8",
                  "immutable": "bool"},
    "Secret": {"data": "map[string][]uint8", "stringData": "map[string]string",
               "type": "v1.SecretType", "immutable": "bool"},
    "Namespace": {"spec": "v1.NamespaceSpec", "status": "v1.NamespaceStatus"},
}
_STRINGS = ("string", "types.UID", "v1.SecretType", "[]uint8")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _mismatch(value: Any, go_type: str) -> str | None:
    """The Go type a decoder fails to put ``value`` into, or None when it fits."""
    if value is None:
        return None
    if go_type.startswith("map[string]"):
        if not isinstance(value, dict):
            return go_type
        inner = go_type[len("map[string]"):]
        return next((t for t in (_mismatch(v, inner) for v in value.values()) if t), None)
    if go_type.startswith("[]") and go_type != "[]uint8":
        if not isinstance(value, list):
            return go_type
        return next((t for t in (_mismatch(v, go_type[2:]) for v in value) if t), None)
    if go_type in _STRINGS:
        return None if isinstance(value, str) else go_type
    if go_type == "bool":
        return None if isinstance(value, bool) else go_type
    if go_type == "int64":
        return None if isinstance(value, int) and not isinstance(value, bool) else go_type
    return None if isinstance(value, dict) else go_type  # a struct


def _offending(value: Any, go_type: str) -> Any:
    """The innermost value that does not fit (what the decoder names in its message)."""
    if isinstance(value, dict) and go_type.startswith("map[string]"):
        inner = go_type[len("map[string]"):]
        return next((v for v in value.values() if _mismatch(v, inner)), value)
    if isinstance(value, list) and go_type.startswith("[]") and go_type != "[]uint8":
        return next((v for v in value if _mismatch(v, go_type[2:])), value)
    return value


def _check_fields(rt: ResourceType, struct: str, prefix: str, obj: dict[str, Any],
                  types: dict[str, str]) -> None:
    for field, go_type in types.items():
        value = obj.get(field)
        wrong = _mismatch(value, go_type)
        if wrong is not None:
            raise status.cannot_decode(
                rt, f"json: cannot unmarshal {_json_type(_offending(value, go_type))} into Go "
                    f"struct field {struct}.{prefix}{field} of type {wrong}")


def check_body(rt: ResourceType, obj: Any) -> dict[str, Any]:
    """The metadata of a request body, after the checks a typed decoder makes (400).

    Built-in types are decoded strictly: a field of the wrong JSON type (a ConfigMap ``data``
    value that is a number, ``metadata.labels`` that is a list) is refused, naming the field.
    """
    if not isinstance(obj, dict):
        raise status.bad_request(f"the body of the request could not be decoded into a {rt.kind}")
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.cannot_decode(
            rt, f"json: cannot unmarshal {_json_type(meta)} into Go struct field "
                f"{rt.kind}.metadata of type v1.ObjectMeta")
    _check_fields(rt, "ObjectMeta", "metadata.", meta, _META_TYPES)
    if not rt.custom:
        _check_fields(rt, rt.kind, "", obj, _KIND_TYPES.get(rt.kind, {}))
    return meta


def check_custom_kind(rt: ResourceType, name: str, obj: dict[str, Any]) -> None:
    """422 when a custom object's body names a kind other than its definition's."""
    kind = obj.get("kind")
    if rt.custom and kind not in (None, "", rt.kind):
        raise status.invalid(rt, name, [("FieldValueInvalid", "kind",
                                         f'Invalid value: "{kind}": must be {rt.kind}')])


def validate_name(rt: ResourceType, name: str) -> None:
    if not name:
        raise status.invalid(rt, "", [("FieldValueRequired", "metadata.name",
                                       "Required value: name or generateName is required")])
    if rt.resource == "namespaces":
        ok, limit, msg = bool(_LABEL.match(name)), 63, _LABEL_MSG
    else:
        ok, limit, msg = bool(_SUBDOMAIN.match(name)), 253, _SUBDOMAIN_MSG
    if len(name) > limit:
        ok, msg = False, f"must be no more than {limit} characters"
    if not ok:
        raise status.invalid(rt, name, [("FieldValueInvalid", "metadata.name",
                                         f'Invalid value: "{name}": {msg}')])
