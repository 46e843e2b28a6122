"""Service account tokens of the fake API server: the ``serviceaccounts/<name>/token``
subresource (``kubectl create token``) answers a ``TokenRequest`` shaped as kube-apiserver's.

The token is JWT-shaped (header, claims, signature, each base64url) with the claims the real
issuer writes, so tools that decode it find what they expect; its signature is a digest, not a
key's, and the fake server itself accepts only the token it was started with.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from datetime import datetime, timezone
from typing import Any

from kinformer.testing._apiserver import records, status

ISSUER = "https://kubernetes.default.svc.cluster.local"  # also the default audience
DEFAULT_EXPIRATION = 3600  # seconds, when the request names none
MIN_EXPIRATION = 600  # the real server refuses shorter lifetimes


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def issue(account: dict[str, Any], request: Any) -> dict[str, Any]:
    """The answered ``TokenRequest`` for service account ``account``; 422 for a lifetime under
    ten minutes, as the real server answers."""
    meta = account["metadata"]
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    spec = request.get("spec") if isinstance(request, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    audiences = spec.get("audiences") or [ISSUER]
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_EXPIRATION
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < MIN_EXPIRATION:
        message = f"Invalid value: {json.dumps(seconds)}: may not specify a duration less " \
                  f"than 10 minutes"
        raise status.StatusError(
            422, "Invalid",
            f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
            f"spec.expirationSeconds: {message}",
            {"name": name, "group": "authentication.k8s.io", "kind": "TokenRequest",
             "causes": [{"reason": "FieldValueInvalid", "message": message,
                         "field": "spec.expirationSeconds"}]})
    now = int(time.time())
    claims = {
        "aud": list(audiences),
        "exp": now + seconds,
        "iat": now,
        "iss": ISSUER,
        "jti": records.new_uid(),
        "kubernetes.io": {"namespace": namespace,
                          "serviceaccount": {"name": name, "uid": meta.get("uid", "")}},
        "nbf": now,
        "sub": f"system:serviceaccount:{namespace}:{name}",
    }
    header = json.dumps({"alg": "RS256", "kid": "kinformer"}, separators=(",", ":"))
    signed = (_b64(header.encode()) + "."
              + _b64(json.dumps(claims, separators=(",", ":")).encode()))
    token = signed + "." + _b64(hashlib.sha256(signed.encode()).digest())
    expires = datetime.fromtimestamp(now + seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {"audiences": list(audiences), "expirationSeconds": seconds,
                 "boundObjectRef": spec.get("boundObjectRef")},
        "status": {"token": token, "expirationTimestamp": expires},
    }
