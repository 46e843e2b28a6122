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


def check_body(rt: ResourceType, obj: Any) -> dict[str, Any]:
    """The metadata of a request body, after checking the shapes a decoder would reject (400)."""
    if not isinstance(obj, dict):
        raise status.bad_request(f"the body of the request could not be decoded into a {rt.kind}")
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata: expected a JSON object")
    for field in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise status.bad_request(f"metadata.{field}: expected a string")
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise status.bad_request(f"metadata.{field}: expected a map of strings to strings")
    return meta


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
