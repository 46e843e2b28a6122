"""The exception tree of kinformer, in one place.

::

    KinformerError
      ConfigurationError(ValueError)        a bad argument or option
        LabelSelectorError                    a label selector that does not parse
        ShardSelectorError                    a shard selector that does not parse
      LifecycleError
        AlreadyStartedError                 a second start/run, or a setter after start
        StoppedError                        an operation on something already stopped
      SyncTimeoutError(TimeoutError)        a wait for cache sync ran out of time
      IndexerError(KeyError)                an unknown index name
      IndexerConflictError(ValueError)      add_indexers with a name that exists
      KeyFuncError(KeyError)                an object has no metadata to key by
      InvalidKeyError(ValueError)           a store key that is not [cluster|][namespace/]name
      AmbiguousNameError(LookupError)       a name without its cluster that several clusters hold
      ClustersMergedError                   two logical clusters' objects came under one cache key
      InvalidResourceVersionError(ValueError)   a resourceVersion that is not a decimal integer
      FIFOClosedError                       DeltaFIFO.pop on a closed, drained queue
      DecodeError(ValueError)               an undecodable body or watch line
      VeryShortWatchError                   a watch closed within a second with no events
      TransportError(ConnectionError)       the connection failed or went silent (read timeout)
        ConnectionRefusedAPIError(ConnectionRefusedError)   nothing listens: back off, retry
      TerminalError                         raised by a reconciler: log it, do not retry
      LeaderElectionError                   a leader's lease is overdue (a failing health check)
      ExecPluginError                       an exec credential plugin failed, or gave no credential
      APIError(status, reason, body)        an API server answered with an error Status
        BadRequestError                       400
        UnauthorizedError                     401
        ForbiddenError                        403
        NotFoundError(LookupError)            404 (also raised by listers)
        MethodNotAllowedError                 405
        ConflictError                         409 (AlreadyExists or Conflict)
        GoneError                             410 (Expired/Gone: the reflector relists)
        InvalidError                          422
        TooManyRequestsError                  429
        ServerError                           5xx
          ServerTimeoutError                    504 (reason Timeout)

:func:`api_error_from_status` maps an HTTP status and a ``Status`` body onto this tree
through one table. Errors carry what a log line needs, never credentials: every error's
message, and an :class:`APIError`'s reason and ``Status`` body, pass through :func:`redact`
when the error is made, which hides what looks like a credential (an ``Authorization``
header's value, a ``Bearer`` or ``Basic`` credential, a JSON Web Token, a URL's user and
password, a private key's PEM, a token or password in a URL's query or under a credential's
key), so a server that echoes a request into its answer, or a library that quotes one in its
exception, cannot put a token into a log line through one; the request path also hides the
exact credentials it sent (``api_error_from_status(..., secrets=...)``).
:class:`RedactingFilter` does the same for the log records of the modules that log errors
kinformer did not make.

>>> redact("denied: Authorization: Bearer abc.def.ghi from https://ann:pw@host/x?token=t0k")
'denied: Authorization: [redacted] from https://[redacted]@host/x?token=[redacted]'

>>> err = api_error_from_status(410, {"kind": "Status", "reason": "Expired", "message": "too old"})
>>> type(err).__name__, err.status, err.reason, is_expired(err)
('GoneError', 410, 'Expired', True)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
_MIN_SECRET = 4  # a shorter exact secret is not hidden: it would blank out ordinary words

# (pattern, replacement) pairs, applied in order; each keeps the words around the credential
_CREDENTIALS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a private key's PEM, whole or cut short
    (re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
                re.DOTALL), REDACTED),
    # an Authorization (or Proxy-Authorization) header's value (a scheme and its credential),
    # however it is quoted
    (re.compile(r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
                r"(?:[a-z][\w-]*[ \t]+)?[^\s\"',}]+"),
     r"\1" + REDACTED),
    # a credential of the Bearer or Basic scheme anywhere else (a word, as in "Basic
    # authentication", is none: a credential has a digit, a symbol or a capital inside)
    (re.compile(r"\b(Bearer|Basic)(\s+)(?=[\w.~+/=-]*(?:[\d.~+/=_-]|[a-z][A-Z]))[\w.~+/=-]{8,}"),
     r"\1\2" + REDACTED),
    # a JSON Web Token (a service account's, an OIDC ID token), bare
    (re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*"), REDACTED),
    # the user and password of a URL (https://user:password@host)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#\"']+@"), r"\1" + REDACTED + "@"),
    # a credential in a URL's query
    (re.compile(r"(?i)([?&;](?:access_token|id_token|token|password|passwd|secret|"
                r"client_secret|api_key|apikey|sig|signature)=)[^&#\s\"']+"), r"\1" + REDACTED),
    # a credential under its key, in JSON or YAML (a kubeconfig's or an ExecCredential's)
    (re.compile(r"(?i)((?:\"(?:token|access_token|id_token|refresh_token)\"|\b(?:password|"
                r"client-key-data|clientKeyData|id-token|refresh-token|access-token|"
                r"client-secret))[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"), r"\1" + REDACTED),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (exact values of 4 characters or more) and whatever
    looks like a credential replaced by ``[redacted]``; the rest of it as it was."""
    for secret in sorted({s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET},
                         key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text


def _redacted(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` with :func:`redact` applied to every string in it (dicts and lists copied)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {_redacted(k, secrets): _redacted(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, secrets) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A log filter passing each record's message, and its traceback, through :func:`redact`.

    For loggers whose records quote errors kinformer did not make (a user's ListerWatcher
    built on the official client raises its ``ApiException``, which quotes the server's
    answer). Only records that are emitted pay for it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = redact(message)
        if hidden != message:
            record.msg, record.args = hidden, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


REDACTING = RedactingFilter()


class KinformerError(Exception):
    """Base class of every error kinformer raises on purpose.

    Its string arguments pass through :func:`redact`: a message quoting a credential (a URL
    with a password, an echoed header) never carries it.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigurationError(KinformerError, ValueError):
    """A bad argument or option."""


class LabelSelectorError(ConfigurationError):
    """A label selector that does not parse, or a key or value Kubernetes would reject.

    ``position`` is the index in ``selector`` where the trouble starts.
    """

    def __init__(self, selector: str, position: int, problem: str) -> None:
        self.selector = selector
        self.position = position
        self.problem = problem
        super().__init__(f"invalid label selector {selector!r} at position {position}: {problem}")


class ShardSelectorError(ConfigurationError):
    """A shard selector that does not parse; the message is the API server's wording."""


class LifecycleError(KinformerError):
    """An operation that does not fit the component's lifecycle state."""


class AlreadyStartedError(LifecycleError):
    """A component that runs once was started again, or configured after it started."""


class StoppedError(LifecycleError):
    """An operation on a component that has already stopped."""


class SyncTimeoutError(KinformerError, TimeoutError):
    """A wait for cache sync ran out of time."""


class IndexerError(KinformerError, KeyError):
    """An index name that the indexer does not know."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class IndexerConflictError(KinformerError, ValueError):
    """``add_indexers`` was given a name that already exists; nothing was added."""


class KeyFuncError(KinformerError, KeyError):
    """A key could not be computed for an object (``object has no meta: ...``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidKeyError(KinformerError, ValueError):
    """A store key that is neither ``"name"`` nor ``"namespace/name"``, each optionally
    prefixed ``"<cluster>|"`` (a cluster-aware key)."""


class AmbiguousNameError(KinformerError, LookupError):
    """A lookup by name across clusters found the name in several of them: name the cluster.

    Raised by :class:`~kinformer.GenericClusterLister` for ``get(name)`` or
    ``by_namespace(ns).get(name)`` without a cluster when more than one cluster holds
    the object. ``resource``, ``key`` (``"namespace/name"`` or ``"name"``) and ``clusters``
    (sorted) say what was asked and where it was found.
    """

    def __init__(self, resource: str, key: str, clusters: list[str], hint: str = "") -> None:
        self.resource = resource
        self.key = key
        self.clusters = sorted(clusters)
        named = ", ".join(c or '""' for c in self.clusters)
        first = next((c for c in self.clusters if c), "")  # one "" needs no prefix: show another
        hint = hint or f'ask for one, with a cluster-aware key ("{first}|{key}") or cluster(name)'
        super().__init__(f'{resource} "{key}" is in {len(self.clusters)} clusters ({named}): {hint}')


class ClustersMergedError(KinformerError):
    """Objects of two logical clusters came under one key of a cache keyed without the cluster.

    An informer over a ListerWatcher that does not say it spans logical clusters (a wrapper
    around a ``/clusters/*`` ListWatch, a ListerWatcher of one's own) keys ``namespace/name``,
    so ``default/app`` of ``root:a`` and of ``root:b`` would be one object: one lost, handlers
    told of an update that is two objects. Raised by a FIFO's ``replace`` for a list holding
    one key twice for objects whose ``kcp.io/cluster`` annotations differ (nothing is queued),
    and ended the informer's watch with when a change would replace a cached object of
    another cluster. ``key`` is the key both had, ``clusters`` the two clusters (sorted;
    ``""`` for an object without the annotation).
    """

    def __init__(self, key: str, clusters: list[str], informer: str = "") -> None:
        self.key = key
        self.clusters = sorted(clusters)
        self.informer = informer
        named = " and ".join(repr(c) for c in self.clusters)
        where = f"informer {informer}: " if informer else ""
        super().__init__(
            f'{where}objects of logical clusters {named} share the key "{key}": a cache keyed '
            "without the cluster keeps one object for both; list them through "
            "ListWatch.for_resource(cluster=\"*\") (cluster-aware) or key with "
            "cluster_aware_key_func")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.key, self.clusters, self.informer))


class InvalidResourceVersionError(KinformerError, ValueError):
    """A resourceVersion that is not a positive decimal integer without leading zeros, so it
    cannot be ordered (apimachinery's ``CompareResourceVersion`` refuses it too)."""


class FIFOClosedError(KinformerError):
    """``DeltaFIFO.pop`` on a queue that is closed and drained."""

    def __init__(self, message: str = "DeltaFIFO: manipulating with closed queue") -> None:
        super().__init__(message)


class DecodeError(KinformerError, ValueError):
    """A response body or watch line that could not be decoded into what was expected."""


class VeryShortWatchError(KinformerError):
    """A watch closed within a second of starting without delivering any event."""


class TransportError(KinformerError, ConnectionError):
    """The connection to the API server failed, broke, or stayed silent past the read timeout."""


class ConnectionRefusedAPIError(TransportError, ConnectionRefusedError):
    """The API server refused the connection; the reflector backs off and retries the watch."""


class TerminalError(KinformerError):
    """Raised by a reconciler for a failure that retrying cannot fix: log it, do not requeue."""


class ExecPluginError(KinformerError):
    """An exec credential plugin (``client.authentication.k8s.io``) did not give a credential.

    It could not be started, exited non-zero, ran past its timeout, or printed something that
    is not an ``ExecCredential`` with a token or a client certificate. The message says which,
    and never quotes the plugin's output (it holds the credential).
    """


class LeaderElectionError(KinformerError):
    """A leader elector that believes it leads has not renewed its lease for too long.

    Raised by ``LeaderElector.check``, for use as a health check: the process should have
    stepped down, so something is stuck.
    """


class APIError(KinformerError):
    """An error answer from the API server.

    ``status`` is the HTTP code, ``reason`` the ``Status`` reason (``NotFound``, ``Expired``...),
    ``body`` the decoded ``Status`` object when there was one.
    """

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: dict[str, Any] | None = None,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        secrets = tuple(secrets)
        self.status = status
        self.reason = redact(reason, secrets)
        self.message = redact(message, secrets)
        self.body = _redacted(body, secrets) if body else {}
        # seconds the server asked to wait before asking again: a Status's
        # details.retryAfterSeconds, or the response's Retry-After (set where it is read)
        self.retry_after: float | None = _retry_after_seconds(self.body)
        super().__init__(status, self.reason, self.message)

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = self.body.get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]

    def __str__(self) -> str:
        text = f"({self.status}) {self.reason or 'Error'}"
        return f"{text}: {self.message}" if self.message else text

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(status={self.status!r}, reason={self.reason!r}, message={self.message!r})"


class BadRequestError(APIError):
    """HTTP 400."""


class UnauthorizedError(APIError):
    """HTTP 401."""


class ForbiddenError(APIError):
    """HTTP 403."""


class NotFoundError(APIError, LookupError):
    """HTTP 404, or a lister that has no such object (worded like the API server)."""


class MethodNotAllowedError(APIError):
    """HTTP 405."""


class ConflictError(APIError):
    """HTTP 409: AlreadyExists, or Conflict on a stale resourceVersion."""


class GoneError(APIError):
    """HTTP 410: the requested resourceVersion is too old (reason Expired or Gone)."""


class InvalidError(APIError):
    """HTTP 422."""


class TooManyRequestsError(APIError):
    """HTTP 429."""


class ServerError(APIError):
    """HTTP 5xx."""


class ServerTimeoutError(ServerError):
    """HTTP 504 (reason Timeout), e.g. a resourceVersion from the future."""


_STATUS_TABLE: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
    504: ServerTimeoutError,
}


def _retry_after_seconds(body: dict[str, Any]) -> float | None:
    details = body.get("details")
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
        return float(seconds)
    return None


def retry_after(error: BaseException | None) -> float:
    """The seconds ``error`` asks the client to wait before it asks again (a 429's or a 503's
    ``Retry-After``, a ``Status``'s ``details.retryAfterSeconds``); 0 when it asks for none."""
    seconds = getattr(error, "retry_after", None) if isinstance(error, APIError) else None
    return seconds if seconds is not None else 0.0


def parse_retry_after(value: Any) -> float | None:
    """A ``Retry-After`` header's whole seconds (what kube-apiserver sends), None when it is
    absent or not a non-negative number of seconds (an HTTP date is not waited for)."""
    if not isinstance(value, str) or not value.strip().isdigit():
        return None
    seconds = int(value.strip())
    return float(seconds) if seconds <= 24 * 3600 else None  # a day at most: a broken header


def api_error_class(status: int) -> type[APIError]:
    """The :class:`APIError` subclass for an HTTP status code."""
    cls = _STATUS_TABLE.get(status)
    if cls is not None:
        return cls
    if status >= 500:
        return ServerError
    return APIError


def api_error_from_status(status: int, body: Any = None, *,
                          secrets: Iterable[str] = ()) -> APIError:
    """Build the typed error for an HTTP status and a ``Status`` body (dict, bytes or str).

    ``secrets``: the credentials the request sent, hidden wherever the body echoes them
    (besides what :func:`redact` hides anyway).
    """
    decoded: dict[str, Any] | None = None
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            loaded = json.loads(body) if body else None
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            decoded = loaded
        else:
            message = redact(body.strip(), secrets)[:200]  # hidden whole, then cut short
            return api_error_class(status)(status, "", message, None, secrets=secrets)
    elif isinstance(body, dict):
        decoded = body
    reason = ""
    message = ""
    if decoded is not None:
        code = decoded.get("code")
        if isinstance(code, int) and code >= 400 and status < 400:
            status = code
        reason = str(decoded.get("reason") or "")
        message = str(decoded.get("message") or "")
    return api_error_class(status)(status, reason, message, decoded, secrets=secrets)


def is_expired(err: BaseException) -> bool:
    """client-go's ``IsResourceExpired`` or ``IsGone``: reason Expired or Gone, or HTTP 410."""
    return isinstance(err, APIError) and (
        err.status == 410 or err.reason in ("Expired", "Gone")
    )


def is_too_large_resource_version(err: BaseException) -> bool:
    """A server's answer to a resourceVersion from the future."""
    if not isinstance(err, APIError):
        return False
    if any(c.get("reason") == "ResourceVersionTooLarge" for c in err.causes):
        return True
    return err.status == 504 and "too large resource version" in err.message.lower()
