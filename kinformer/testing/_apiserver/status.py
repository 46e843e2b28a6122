"""``Status`` bodies the fake API server answers errors with, built as kube-apiserver builds them.

:class:`StatusError` carries one such body through the storage and handler layers; the builder
functions give the exact reasons, codes, messages and details of the real server.
"""

from __future__ import annotations

import json
from typing import Any

from kinformer.testing._apiserver.resources import ResourceType

RETRY_AFTER = 1  # seconds a 429 asks the client to wait, as priority and fairness answers

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class StatusError(Exception):
    """An API error on its way to the client as a ``Status`` body with HTTP status ``code``."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.metadata = metadata  # the Status's ListMeta: an expired list's continue token

    def body(self) -> dict[str, Any]:
        """The ``Status`` object."""
        body = status_body(self.code, self.reason, self.message, self.details)
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        return body

    def headers(self) -> dict[str, str]:
        """Response headers that go with the body: ``Retry-After`` on every 429 and wherever the
        details name a retry delay (as the 504 for a resourceVersion from the future does)."""
        seconds = (self.details or {}).get("retryAfterSeconds")
        if not seconds and self.code == 429:
            seconds = RETRY_AFTER
        return {"Retry-After": str(seconds)} if seconds else {}


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``Status`` with its fields in the order kube-apiserver writes them."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def encode(body: dict[str, Any]) -> bytes:
    """A ``Status`` as the server sends it: compact JSON in insertion order, then a newline."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _HTML_ESCAPES:
        text = text.replace(char, escaped)
    return text.encode() + b"\n"


_HTML_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))  # as Go's encoder does


def _details(rt: ResourceType, name: str, kind: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = kind if kind is not None else rt.resource
    return details


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{rt.group_resource} "{name}" not found',
                       _details(rt, name))


def namespace_not_found(namespace: str) -> StatusError:
    return StatusError(404, "NotFound", f'namespaces "{namespace}" not found',
                       {"name": namespace, "kind": "namespaces"})


def already_exists(rt: ResourceType, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{rt.group_resource} "{name}" already exists',
                       _details(rt, name))


def conflict(rt: ResourceType, name: str, why: str = "") -> StatusError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {rt.group_resource} "{name}": {why}',
                       _details(rt, name))


def _aggregate(causes: list[tuple[str, str, str]]) -> str:
    """The causes as Go's aggregate error prints them: alone, or ``[a, b]``."""
    text = ", ".join(f"{f}: {m}" for _, f, m in causes)
    return text if len(causes) == 1 else f"[{text}]"


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid; ``causes`` are (reason, field, message) triples."""
    text = _aggregate(causes)
    qualified = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    message = f'{qualified} "{name}" is invalid: {text}'
    details = _details(rt, name, kind=rt.kind)
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    return StatusError(422, "Invalid", message, details)


def invalid_options(kind: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid for bad query options (``ListOptions``)."""
    text = _aggregate(causes)
    details: dict[str, Any] = {"group": "meta.k8s.io", "kind": kind,
                               "causes": [{"reason": r, "message": m, "field": f}
                                          for r, f, m in causes]}
    return StatusError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {text}', details)


def for_item(err: StatusError, index: int, obj: Any) -> StatusError:
    """``err`` as one item of a bulk write answers it: its message begins with the item's
    position and, when the body names it, its namespace and name (``item 3 (ns/a): ...``)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    where = f"item {index}"
    if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
        namespace = meta.get("namespace")
        prefix = f"{namespace}/" if isinstance(namespace, str) and namespace else ""
        where += f" ({prefix}{meta['name']})"
    return StatusError(err.code, err.reason, f"{where}: {err.message}", err.details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> StatusError:
    return expired(f"too old resource version: {requested} ({oldest})")


def too_large(requested: int, current: int) -> StatusError:
    return StatusError(504, "Timeout",
                       f"Too large resource version: {requested}, current: {current}",
                       {"causes": [{"reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version"}],
                        "retryAfterSeconds": 1})


def method_not_allowed() -> StatusError:
    return StatusError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource",
                       {})


def path_not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource",
                       {})


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415, "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json-patch+json, application/merge-patch+json, "
        f"application/strategic-merge-patch+json, application/apply-patch+yaml "
        f"(got {content_type!r})", {})


def forbidden(rt: ResourceType, verb: str, namespace: str, name: str = "") -> StatusError:
    where = f' in the namespace "{namespace}"' if namespace else ""
    target = f'{rt.group_resource} "{name}"' if name else rt.group_resource
    message = (f'{target} is forbidden: User "system:anonymous" cannot {verb} resource '
               f'"{rt.resource}" in API group "{rt.group}"{where}')
    details: dict[str, Any] = {"name": name} if name else {}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.resource
    return StatusError(403, "Forbidden", message, details)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def injected(code: int, retry_after: int | None = None) -> StatusError:
    reason = REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    seconds = retry_after if retry_after is not None else RETRY_AFTER if code == 429 else None
    details: dict[str, Any] = {"retryAfterSeconds": seconds} if seconds else {}
    return StatusError(code, reason, f"injected failure (HTTP {code})", details)


def deleted(rt: ResourceType, name: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``Status`` a DELETE answers for most types: Success, naming what was deleted."""
    details = _details(rt, name)
    details["uid"] = (obj.get("metadata") or {}).get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


def cannot_decode(rt: ResourceType, problem: str) -> StatusError:
    """400 for a body the typed decoder rejects (a field of the wrong JSON type)."""
    return bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                       f"{rt.kind}: {problem}")


def version_mismatch(rt: ResourceType, api_version: str) -> StatusError:
    return bad_request(f"the API version in the data ({api_version}) does not match the "
                       f"expected API version ({rt.api_version})")
