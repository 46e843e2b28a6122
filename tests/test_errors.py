"""The error tree: one table maps HTTP statuses and Status bodies to typed errors."""

from __future__ import annotations

import json

import pytest

from kinformer import errors


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, errors.BadRequestError),
        (401, errors.UnauthorizedError),
        (403, errors.ForbiddenError),
        (404, errors.NotFoundError),
        (409, errors.ConflictError),
        (410, errors.GoneError),
        (422, errors.InvalidError),
        (429, errors.TooManyRequestsError),
        (500, errors.ServerError),
        (503, errors.ServerError),
        (504, errors.ServerTimeoutError),
        (418, errors.APIError),
    ],
)
def test_status_codes_map_to_their_error_class(status: int, cls: type[errors.APIError]) -> None:
    err = errors.api_error_from_status(status, None)
    assert type(err) is cls
    assert err.status == status


def test_a_status_body_gives_reason_and_message() -> None:
    body = {
        "kind": "Status",
        "status": "Failure",
        "reason": "NotFound",
        "code": 404,
        "message": 'configmaps "x" not found',
    }
    err = errors.api_error_from_status(404, json.dumps(body).encode())
    assert isinstance(err, errors.NotFoundError) and isinstance(err, LookupError)
    assert err.reason == "NotFound"
    assert str(err) == '(404) NotFound: configmaps "x" not found'
    assert err.body["code"] == 404


def test_an_error_event_status_with_http_200_takes_the_status_code() -> None:
    err = errors.api_error_from_status(200, {"kind": "Status", "code": 410, "reason": "Expired"})
    assert isinstance(err, errors.GoneError)
    assert errors.is_expired(err)


def test_a_body_that_is_not_json_still_gives_a_typed_error() -> None:
    err = errors.api_error_from_status(502, b"<html>bad gateway</html>")
    assert isinstance(err, errors.ServerError)
    assert "bad gateway" in err.message


def test_expired_is_recognised_by_reason_as_well_as_status() -> None:
    assert errors.is_expired(errors.APIError(500, "Expired"))
    assert errors.is_expired(errors.APIError(500, "Gone"))
    assert not errors.is_expired(errors.APIError(500, "InternalError"))
    assert not errors.is_expired(ValueError("x"))


def test_too_large_resource_version_is_recognised_by_cause_or_message() -> None:
    cause = {"reason": "ResourceVersionTooLarge"}
    body = {"code": 504, "reason": "Timeout", "details": {"causes": [cause]}}
    assert errors.is_too_large_resource_version(errors.api_error_from_status(504, body))
    message = {"code": 504, "message": "Too large resource version: 5"}
    assert errors.is_too_large_resource_version(errors.api_error_from_status(504, message))
    plain = errors.api_error_from_status(504, {"code": 504})
    assert not errors.is_too_large_resource_version(plain)


def test_builtin_bases_let_callers_catch_broadly() -> None:
    assert issubclass(errors.ConfigurationError, ValueError)
    assert issubclass(errors.SyncTimeoutError, TimeoutError)
    assert issubclass(errors.IndexerError, KeyError)
    assert issubclass(errors.KeyFuncError, KeyError)
    assert issubclass(errors.IndexerConflictError, ValueError)  # add_indexers with a known name
    assert str(errors.IndexerError("Index with name x does not exist")) == (
        "Index with name x does not exist"
    )


def test_an_ambiguous_name_is_a_lookup_error_naming_its_clusters() -> None:
    err = errors.AmbiguousNameError("configmaps", "default/app", ["root:b", "root:a"])
    assert isinstance(err, errors.KinformerError) and isinstance(err, LookupError)
    assert err.clusters == ["root:a", "root:b"]
    assert str(err) == ('configmaps "default/app" is in 2 clusters (root:a, root:b): ask for one, '
                        'with a cluster-aware key ("root:a|default/app") or cluster(name)')


@pytest.mark.parametrize(("text", "shown"), [
    ("Authorization: Bearer abc.def.ghi", "Authorization: [redacted]"),
    ("{'authorization': 'Basic dXNlcjpwYXNz'}", "{'authorization': '[redacted]'}"),
    ("proxy-authorization=Negotiate YIIabc, next", "proxy-authorization=[redacted], next"),
    ("sent Bearer s3cret-t0ken and more", "sent Bearer [redacted] and more"),
    ("at https://ann:pw@host:6443/api", "at https://[redacted]@host:6443/api"),
    ("GET /api?labelSelector=a&token=t0k&limit=5", "GET /api?labelSelector=a&token=[redacted]&limit=5"),
    ('{"token": "t0k3n-value", "kind": "X"}', '{"token": "[redacted]", "kind": "X"}'),
    ("client-key-data: LS0tLS1CRUdJTg==", "client-key-data: [redacted]"),
    ("id eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl here", "id [redacted] here"),
    ("key -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY----- done",
     "key [redacted] done"),
    ("cut -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAA", "cut [redacted]"),
])
def test_redact_hides_what_looks_like_a_credential_and_keeps_the_rest(text: str, shown: str) -> None:
    assert errors.redact(text) == shown


@pytest.mark.parametrize("text", [
    "Basic authentication is not enabled", "Bearer tokens only", "invalid continue token: abc",
    "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=12",
    "https://127.0.0.1:6443/clusters/root:org", "(410) Expired: too old resource version: 1 (5)",
])
def test_redact_leaves_ordinary_messages_alone(text: str) -> None:
    assert errors.redact(text) == text


def test_redact_hides_exact_secrets_and_every_error_redacts_its_message() -> None:
    assert errors.redact("token t0k-42 expired; t0k-42 again", ["t0k-42", "", "ab"]) == (
        "token [redacted] expired; [redacted] again")
    assert errors.redact("ab cd", ["ab"]) == "ab cd"  # too short to hide
    assert str(errors.TransportError("GET https://ann:pw@host/api: refused")) == (
        "GET https://[redacted]@host/api: refused")
    error = errors.api_error_from_status(401, {"kind": "Status", "reason": "Unauthorized",
                                               "message": "token t0k-42 expired"}, secrets=["t0k-42"])
    assert (error.message, error.body["message"]) == ("token [redacted] expired",) * 2
