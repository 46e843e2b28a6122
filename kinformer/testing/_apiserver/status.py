"""``Status`` bodies the fake API server answers errors with, built as kube-apiserver builds them.

:class:`StatusError` carries one such body through the storage and handler layers; the builder
functions give the exact reasons, codes, messages and details of the real server.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver.resources import ResourceType

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
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        """The ``Status`` object."""
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if not reason:
        del body["reason"]
    if details is not None:
        body["details"] = details
    return body


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


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid; ``causes`` are (reason, field, message) triples."""
    text = ", ".join(f"{f}: {m}" for _, f, m in causes)
    message = f'{rt.kind} "{name}" is invalid: {text}'
    details = _details(rt, name, kind=rt.kind)
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    return StatusError(422, "Invalid", message, details)


def invalid_options(kind: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid for bad query options (``ListOptions``)."""
    text = ", ".join(f"{f}: {m}" for _, f, m in causes)
    details: dict[str, Any] = {"kind": kind, "group": "meta.k8s.io",
                               "causes": [{"reason": r, "message": m, "field": f}
                                          for r, f, m in causes]}
    return StatusError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {text}', details)


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
    details: dict[str, Any] = {"kind": rt.resource}
    if name:
        details["name"] = name
    if rt.group:
        details["group"] = rt.group
    return StatusError(403, "Forbidden", message, details)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def injected(code: int) -> StatusError:
    reason = REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    return StatusError(code, reason, f"injected failure (HTTP {code})", {})
