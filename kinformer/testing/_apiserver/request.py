"""Parsing of resource requests for the fake API server: verb, body, selectors, list options.

Pure functions over what :class:`~kinformer.testing._apiserver.handler.Handler` read off the
wire; each invalid input raises the :class:`~kinformer.testing._apiserver.status.StatusError`
kube-apiserver answers with (400, 405, 415 or 422), before storage is touched.
"""

from __future__ import annotations

from typing import Any

from kinformer import errors
from kinformer.cache import labels as labelsel
from kinformer.testing._apiserver import protobuf, records, status, watchers
from kinformer.testing._apiserver.resources import ResourceType

_RV_MATCHES = ("", "NotOlderThan", "Exact")


class Request:
    """A parsed resource request."""

    def __init__(self, rt: ResourceType, namespace: str, name: str, subresource: str) -> None:
        self.rt = rt
        self.namespace = namespace
        self.name = name
        self.subresource = subresource


def dry_run(query: dict[str, str]) -> bool:
    """Whether the request asks for a server-side dry run (``dryRun=All``)."""
    return query.get("dryRun") == "All"


def verb(method: str, req: Request, watch: bool) -> str:
    """The API verb of an HTTP ``method`` on ``req``; 405 for a method the path does not take."""
    if method == "GET":
        if watch:
            return "watch"
        return "get" if req.name else "list"
    if method == "POST" and (not req.name or req.subresource == "token"):
        return "create"
    if method == "PUT" and req.name:
        return "update"
    if method == "PATCH" and req.name:
        return "patch"
    if method == "DELETE":
        return "delete" if req.name else "deletecollection"
    raise status.method_not_allowed()


def decode_body(body: bytes, rt: ResourceType, content_type: str) -> Any:
    """The decoded request body (None when empty): JSON, or protobuf sent as such; 400 or 415."""
    if body and content_type == "application/vnd.kubernetes.protobuf":
        try:
            return protobuf.decode(body)
        except protobuf.UnsupportedKind:
            pass
        except (ValueError, UnicodeDecodeError) as err:
            raise status.bad_request(
                f"the body of the request could not be decoded into a {rt.kind}: {err}"
            ) from None
    if body and ("protobuf" in content_type or "cbor" in content_type):
        raise status.StatusError(
            415, "UnsupportedMediaType",
            f'the body of the request was in an unknown format - accepted media types '
            f'include: application/json, application/yaml (got "{content_type}")', {})
    try:
        return records.loads(body) if body else None
    except ValueError:
        raise status.bad_request(
            f"the body of the request could not be decoded into a {rt.kind}") from None


def check_api_version(rt: ResourceType, obj: Any) -> None:
    """400 when a custom object's create or update body names a version other than the URL's
    (one the definition does not serve, or another served one)."""
    if not rt.custom or not isinstance(obj, dict):
        return
    api_version = obj.get("apiVersion")
    if api_version not in (None, "", rt.api_version):
        raise status.version_mismatch(rt, str(api_version))


def matcher(rt: ResourceType, query: dict[str, str]) -> Any:
    """A predicate for the label and field selectors of ``query``, or None when both are empty."""
    try:
        selector = labelsel.parse_selector(query.get("labelSelector", ""))
    except errors.LabelSelectorError as err:
        raise status.bad_request(f"unable to parse requirement: {err}") from None
    fields = watchers.FieldSelector.parse(query.get("fieldSelector", ""), rt)
    if selector.empty() and not fields.terms:
        return None

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels")
        return selector.matches(labels) and fields.matches(obj)

    return match


def list_options(query: dict[str, str], watch: bool) -> tuple[str, str]:
    """``(resourceVersion, resourceVersionMatch)`` of a list or watch, checked as the server does."""
    rv = query.get("resourceVersion", "")
    rv_match = query.get("resourceVersionMatch", "")
    if rv and not rv.isdigit():
        raise status.bad_request(f'invalid resource version "{rv}"')
    if rv_match not in _RV_MATCHES:
        raise status.invalid_options("ListOptions", [(
            "FieldValueNotSupported", "resourceVersionMatch",
            f'Unsupported value: "{rv_match}": supported values: "Exact", "NotOlderThan"')])
    if query.get("continue") and rv and not watch:
        raise status.bad_request(
            "specifying resource version is not allowed when using continue")
    send_initial = query.get("sendInitialEvents") in ("true", "1")
    if watch and send_initial and rv_match != "NotOlderThan":
        raise status.invalid_options("ListOptions", [(
            "FieldValueForbidden", "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless "
            "resourceVersionMatch is set to NotOlderThan")])
    if watch and rv_match and not send_initial:
        raise status.invalid_options("ListOptions", [(
            "FieldValueForbidden", "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless "
            "sendInitialEvents is provided")])
    if rv_match and not rv and not (watch and send_initial):
        raise status.invalid_options("ListOptions", [(
            "FieldValueForbidden", "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")])
    if rv_match == "Exact" and rv == "0":
        raise status.invalid_options("ListOptions", [(
            "FieldValueForbidden", "resourceVersionMatch",
            'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"')])
    return rv, rv_match
