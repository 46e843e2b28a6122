"""Parsing of resource requests for the fake API server: verb, body, selectors, list options.

Pure functions over what :class:`~kinformer.testing._apiserver.wire.handler.Handler` read off
the wire; each invalid input raises the
:class:`~kinformer.testing._apiserver.status.StatusError` kube-apiserver answers with (400, 405,
415 or 422), before storage is touched.
"""

from __future__ import annotations

import io
from typing import Any

from kinformer import errors
from kinformer.cache import labels as labelsel
from kinformer.testing._apiserver import records, status
from kinformer.testing._apiserver.clusters import ROOT
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.storage import watchers
from kinformer.testing._apiserver.wire import protobuf

_RV_MATCHES = ("", "NotOlderThan", "Exact")


class Request:
    """A parsed resource request; ``cluster`` is its logical cluster (the wildcard: across
    them)."""

    def __init__(self, rt: ResourceType, namespace: str, name: str, subresource: str,
                 cluster: str = ROOT) -> None:
        self.rt = rt
        self.namespace = namespace
        self.name = name
        self.subresource = subresource
        self.cluster = cluster


def read_body(rfile: io.BufferedIOBase, length: str | None, transfer_encoding: str) -> bytes:
    """A request's body, framed by ``Content-Length`` or chunked; 400 when the framing is bad."""
    if length:
        try:
            size = int(length)
        except ValueError:
            raise status.bad_request("invalid Content-Length") from None
        return rfile.read(size)
    if "chunked" not in transfer_encoding.lower():
        return b""
    parts: list[bytes] = []
    while True:
        line = rfile.readline()
        try:
            size = int(line.split(b";")[0].strip() or b"0", 16)
        except ValueError:
            raise status.bad_request("invalid chunked request body") from None
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        parts.append(rfile.read(size))
        rfile.readline()


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


def bool_option(query: dict[str, str], name: str) -> bool | None:
    """A boolean query option (``watch``, ``allowWatchBookmarks``, ``sendInitialEvents``, ...)
    as kube-apiserver reads it: None when absent (Go's nil pointer); false for ``0`` and for
    ``false`` in any case; true for any other value, the empty one included. This is
    apimachinery's conversion of query parameters (``Convert_Slice_string_To_bool``), not
    ``strconv.ParseBool``: ``f`` and ``no`` read as true, and no value is refused."""
    if name not in query:
        return None
    value = query[name]
    return not (value == "0" or value.lower() == "false")


def _forbidden(field: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueForbidden", field, f"Forbidden: {detail}")


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> tuple[str, str, str]:
    choices = ", ".join(f'"{v}"' for v in supported)
    return ("FieldValueNotSupported", field,
            f'Unsupported value: "{value}": supported values: {choices}')


def _check_list_options(query: dict[str, str], rv: str, rv_match: str, watch: bool) -> None:
    """422 with every problem the real server's ListOptions validation finds, in its order."""
    send_initial = bool_option(query, "sendInitialEvents")
    continued = bool(query.get("continue"))
    problems = []
    if watch:
        if send_initial is not None and rv_match != "NotOlderThan":
            problems.append(_forbidden("resourceVersionMatch",
                                       "sendInitialEvents requires setting resourceVersionMatch "
                                       "to NotOlderThan"))
        if rv_match:
            if send_initial is None:
                problems.append(_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden for watch unless "
                                           "sendInitialEvents is provided"))
            if rv_match != "NotOlderThan":
                problems.append(_not_supported("resourceVersionMatch", rv_match,
                                               ("NotOlderThan",)))
            if continued:
                problems.append(_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is "
                                           "provided"))
    else:
        if rv_match:
            if not rv:
                problems.append(_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden unless "
                                           "resourceVersion is provided"))
            if continued:
                problems.append(_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is "
                                           "provided"))
            if rv_match not in _RV_MATCHES:
                problems.append(_not_supported("resourceVersionMatch", rv_match,
                                               ("Exact", "NotOlderThan", "")))
            if rv_match == "Exact" and rv == "0":
                problems.append(_forbidden("resourceVersionMatch",
                                           'resourceVersionMatch "exact" is forbidden for '
                                           'resourceVersion "0"'))
        if send_initial is not None:
            problems.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for "
                                                            "list"))
    if problems:
        raise status.invalid_options("ListOptions", problems)


def list_options(query: dict[str, str], watch: bool) -> tuple[str, str]:
    """``(resourceVersion, resourceVersionMatch)`` of a list or watch, checked as the server does:
    the options first (422), then the resourceVersion and continue token (400)."""
    rv = query.get("resourceVersion", "")
    rv_match = query.get("resourceVersionMatch", "")
    _check_list_options(query, rv, rv_match, watch)
    if rv and not rv.isdigit():
        raise status.bad_request(f'invalid resource version "{rv}"')
    if query.get("continue") and rv not in ("", "0") and not watch:  # "0" reads as no version
        raise status.bad_request(
            "specifying resource version is not allowed when using continue")
    return rv, rv_match


# the finalizer kube-apiserver adds for the garbage collector, by propagationPolicy
GC_FINALIZERS: dict[str, str | None] = {
    "Foreground": "foregroundDeletion", "Background": None, "Orphan": "orphan"}


class DeleteOptions:
    """What a DELETE asks beyond its path: preconditions, a dry run, and the finalizer its
    propagation policy has the server add for the garbage collector (None: none)."""

    def __init__(self, preconditions: dict[str, Any] | None, dry_run: bool,
                 gc_finalizer: str | None = None) -> None:
        self.preconditions = preconditions
        self.dry_run = dry_run
        self.gc_finalizer = gc_finalizer


def delete_options(body: Any, query: dict[str, str]) -> DeleteOptions:
    """The options of a DELETE from its body (``DeleteOptions``, JSON or protobuf), else its
    query; ``propagationPolicy`` and ``orphanDependents`` checked as the real server checks
    them (422)."""
    options = body if isinstance(body, dict) else {}
    pre = options.get("preconditions")
    body_dry_run = options.get("dryRun")
    wanted = dry_run(query) or (isinstance(body_dry_run, list) and "All" in body_dry_run)
    if options:
        policy, orphan = options.get("propagationPolicy"), options.get("orphanDependents")
    else:
        policy, orphan = query.get("propagationPolicy"), bool_option(query, "orphanDependents")
    problems = []
    if orphan is not None and policy is not None:
        problems.append(("FieldValueInvalid", "propagationPolicy",
                         f'Invalid value: "{policy}": orphanDependents and deletionPropagation '
                         "cannot be both set"))
    if policy is not None and policy not in GC_FINALIZERS:
        problems.append(_not_supported("propagationPolicy", str(policy),
                                       ("Foreground", "Background", "Orphan", "nil")))
    if problems:
        raise status.invalid_options("DeleteOptions", problems)
    finalizer = GC_FINALIZERS[policy] if policy is not None else ("orphan" if orphan else None)
    return DeleteOptions(pre if isinstance(pre, dict) else None, wanted, finalizer)
