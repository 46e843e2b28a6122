"""The one request path: every request kinformer sends to an API server goes through here.

A :class:`Client` builds each request with the caller's official ``kubernetes.client.ApiClient``
(client-go's ``rest.RESTClient`` over its ``rest.Config``): its ``param_serialize`` gives the
URL, headers and credentials of its ``Configuration`` (a token refreshed by its hook, or an exec
plugin's, included), and sends it through kinformer's own connection pool, made from that
``Configuration`` (TLS, proxy, pool size, socket options: :mod:`kinformer.client.pool`). The
``ApiClient`` itself is left as it is: its pools never carry kinformer's requests. The body is
never read before the caller asks: :meth:`Response.read` reads it whole, :meth:`Response.read1`
streams it (a watch). Error statuses become kinformer's typed errors
(:func:`~kinformer.errors.api_error_from_status`), transport failures
:class:`~kinformer.TransportError` or :class:`~kinformer.ConnectionRefusedAPIError` with the
whole reason.

A request given a :class:`~kinformer.Context` is broken off when the context is cancelled, from
any thread, even while it still waits for the response headers (:class:`~kinformer.client.pool.Call`).
urllib3 never retries these requests, and a connection beyond ``connection_pool_maxsize`` is
closed quietly when handed back; :mod:`kinformer.client.pool` says why.

Users: list and watch (:mod:`kinformer.client.resource`), discovery
(:mod:`kinformer.client.discovery`), and the ``kinformer`` command with its demo.
"""

from __future__ import annotations

import contextlib
import logging
import re
import ssl
import threading
import urllib.parse
from collections.abc import Sequence
from typing import Any

import urllib3
import urllib3.exceptions

from kinformer import _checks, _json, errors
from kinformer import context as _context
from kinformer import gvr as _gvr
from kinformer.cache import cluster as _cluster
from kinformer.client import pool as _pool

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a transport's errors: none may quote a token

DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds to open a connection (TCP and TLS)
DEFAULT_READ_TIMEOUT = 30.0  # seconds of silence before a read fails; watches pass their own
ACCEPT_JSON = "application/json"


def api_client_of(client: Any) -> Any:
    """The ``ApiClient`` behind ``client``: itself, or the one a DynamicClient or API object holds.

    Raises :class:`~kinformer.ConfigurationError` for anything else.
    """
    # imported here, not at the top: the official client takes most of a second to import and
    # ``import kinformer`` does not need it; whoever passes an ApiClient has imported it already
    from kubernetes.client import ApiClient

    if isinstance(client, ApiClient):
        return client
    for attr in ("client", "api_client"):
        inner = getattr(client, attr, None)
        if isinstance(inner, ApiClient):
            return inner
    raise errors.ConfigurationError(
        f"expected a kubernetes ApiClient or DynamicClient, got {type(client).__name__}"
    )


def check_timeout(name: str, timeout: tuple[float, float]) -> tuple[float, float]:
    """``timeout`` if it is a ``(connect, read)`` pair of positive, finite seconds; else
    :class:`~kinformer.ConfigurationError` naming ``name``."""
    if not isinstance(timeout, tuple) or len(timeout) != 2:
        raise errors.ConfigurationError(f"{name} must be a (connect, read) pair of seconds, got {timeout!r}")
    return (_checks.seconds(f"{name} (connect)", timeout[0], positive=True),
            _checks.seconds(f"{name} (read)", timeout[1], positive=True))


def resource_path(gvr: _gvr.GroupVersionResource, namespace: str = "") -> str:
    """The REST path of a resource collection (``/api/v1/namespaces/ns/configmaps``)."""
    base = f"/api/{gvr.version}" if gvr.group == "" else f"/apis/{gvr.group}/{gvr.version}"
    if namespace:
        return f"{base}/namespaces/{namespace}/{gvr.resource}"
    return f"{base}/{gvr.resource}"


def cluster_prefix(cluster: str | None) -> str:
    """The path prefix of a kcp logical cluster (``/clusters/root:org``; ``/clusters/*`` for
    every one), ``""`` for None; :class:`~kinformer.ConfigurationError` for a name outside
    kcp's grammar (see :func:`~kinformer.cache.cluster.check_logical_cluster`)."""
    if cluster is None:
        return ""
    return "/clusters/" + _cluster.check_logical_cluster(cluster)


_CLUSTER_PATH = re.compile(r"(?P<base>.*)/clusters/(?P<cluster>[^/]+)/*")  # fullmatch: ends in it


def split_cluster_host(host: str) -> tuple[str, str | None]:
    """``host`` without its kcp logical cluster path, and that cluster: ``("https://kcp",
    "root:org")`` for ``https://kcp/clusters/root:org``, ``("https://kcp", "*")`` for
    ``https://kcp/clusters/*``; ``(host, None)`` for a host whose path does not end in
    ``/clusters/<name>`` with a name of kcp's grammar (a proxy's own path stays the host's)."""
    parts = urllib.parse.urlsplit(host)
    match = _CLUSTER_PATH.fullmatch(parts.path)
    if match is None:
        return host, None
    try:
        cluster = _cluster.check_logical_cluster(urllib.parse.unquote(match["cluster"]))
    except errors.ConfigurationError:
        return host, None
    return urllib.parse.urlunsplit(parts._replace(path=match["base"])), cluster


def host_cluster(client: Any) -> str | None:
    """The kcp logical cluster the host of ``client``'s ``Configuration`` names
    (``.../clusters/root:org``, ``.../clusters/*``; see :func:`split_cluster_host`), or None;
    None too for a ``client`` that holds no ApiClient (using it fails where it is used)."""
    try:
        api_client = api_client_of(client)
    except errors.ConfigurationError:
        return None
    return split_cluster_host(str(api_client.configuration.host))[1]


def client_cluster(client: Any, cluster: str | None) -> str | None:
    """The logical cluster requests through ``client`` go to: ``cluster``, else the one its
    host names (:func:`host_cluster`), else None.

    Raises :class:`~kinformer.ConfigurationError` for a ``cluster`` outside kcp's grammar or
    one that contradicts the host's (``cluster="root:a"`` on a host of ``/clusters/root:b``
    or of ``/clusters/*``): which one was meant cannot be told.
    """
    if cluster is not None:
        cluster = _cluster.check_logical_cluster(cluster)
    from_host = host_cluster(client)
    if from_host is None or cluster is None:
        return from_host if cluster is None else cluster
    if cluster != from_host:
        raise errors.ConfigurationError(
            f"cluster={cluster!r} contradicts the client's host, whose path names the logical "
            f"cluster {from_host!r} (/clusters/{from_host}); give one of them")
    return cluster


# ---- errors ------------------------------------------------------------------------------------


def transport_error(exc: BaseException, where: str) -> errors.TransportError:
    """The typed error for a failed connection, with the whole reason; refusals get their own class.

    The reason is the innermost cause urllib3 wrapped (retries exhausted, a pool's name): a
    TLS failure, a name that does not resolve, a read timeout or a broken connection, told in
    full without the wrappers around it.
    """
    seen: BaseException | None = exc
    causes: list[BaseException] = []
    while seen is not None and len(causes) < 8:
        if isinstance(seen, ConnectionRefusedError):
            return errors.ConnectionRefusedAPIError(f"{where}: connection refused")
        causes.append(seen)
        reason = getattr(seen, "reason", None)
        seen = reason if isinstance(reason, BaseException) else (seen.__cause__ or seen.__context__)
    if "refused" in str(exc).lower():
        return errors.ConnectionRefusedAPIError(f"{where}: connection refused")
    return errors.TransportError(f"{where}: {_reason(causes)}")


_POOL_PREFIX = re.compile(r"^[\w.]*(?:Connection|ConnectionPool)\(host=[^)]*\): ")


def _reason(causes: list[BaseException]) -> str:
    """One line saying why a connection failed, from the chain ``causes`` (outermost first)."""
    for cause in causes:
        if isinstance(cause, (ssl.SSLError, urllib3.exceptions.SSLError)):
            ssl_error: BaseException = next(
                (c for c in reversed(causes) if isinstance(c, ssl.SSLError)), cause)
            return f"TLS failure: {_text(ssl_error)}"
    for cause in causes:
        if isinstance(cause, urllib3.exceptions.NameResolutionError):
            return f"DNS lookup failed: {_text(cause)}"
        if isinstance(cause, urllib3.exceptions.ReadTimeoutError):
            return f"no answer in time: {_text(cause)}"
        if isinstance(cause, urllib3.exceptions.ConnectTimeoutError):
            return f"connect timed out: {_text(cause)}"
        if isinstance(cause, urllib3.exceptions.ProtocolError):
            first = cause.args[0] if cause.args and isinstance(cause.args[0], str) else _text(cause)
            return f"connection broken: {first.removeprefix('Connection broken: ')}"
    innermost = causes[-1] if causes else None
    if innermost is None:
        return "connection failed"
    return f"{type(innermost).__name__}: {_text(innermost)}"


def _text(exc: BaseException) -> str:
    """``exc``'s message on one line, without urllib3's ``HTTPConnection(host=...)`` prefix."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return _POOL_PREFIX.sub("", text)


_CREDENTIAL_HEADERS = ("authorization", "proxy-authorization")


def _sent_credentials(headers: Any, api_client: Any) -> list[str]:
    """The credentials a request carried: its ``Authorization`` header (whole, and the
    credential after its scheme), a proxy's, and the password of its ``Configuration``, so an
    error body that echoes one hides it."""
    configuration = api_client.configuration
    sent = [v for k, v in dict(headers or {}).items() if str(k).lower() in _CREDENTIAL_HEADERS]
    sent += [v for k, v in dict(getattr(configuration, "proxy_headers", None) or {}).items()
             if str(k).lower() in _CREDENTIAL_HEADERS]
    found = [str(v) for v in sent if v]
    found += [v.split(None, 1)[1] for v in found if len(v.split(None, 1)) == 2]
    password = getattr(configuration, "password", None)
    if password:
        found.append(str(password))
    return found


def _cause(exc: BaseException) -> BaseException | None:
    """``exc`` to chain under kinformer's error, or None when its message or one of the
    exceptions it chains quotes a credential (urllib3 quotes a URL it cannot parse whole,
    ``https://user:password@...`` included): a traceback of the error then shows none."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return exc
        text = str(seen)
        if errors.redact(text) != text:
            return None
        seen = seen.__cause__ or seen.__context__
    return exc


def _cancelled_error(where: str) -> errors.TransportError:
    return errors.TransportError(f"{where}: request cancelled")


def _check_own_cluster(cluster: str, path: str, where: str) -> None:
    """Refuse ``path`` (``/clusters/<name>/...``) when it names another logical cluster than
    ``cluster``, the one the client's host is scoped to: such a client never reaches another."""
    named = urllib.parse.unquote(path.split("/", 3)[2])
    if named != cluster:
        raise errors.ConfigurationError(
            f"{where}: the client's host is scoped to the logical cluster {cluster!r} "
            f"(/clusters/{cluster}), not {named!r}; use a client of {named!r} or of /clusters/*")


# ---- requests ----------------------------------------------------------------------------------


class Client:
    """Sends requests through one ``ApiClient``: the one request path of kinformer.

    Thread-safe: each call sends its own request on a pool connection of its own. ``client``
    is an ``ApiClient``, a ``DynamicClient`` or an API object holding one (see
    :func:`api_client_of`). The ApiClient builds each request (URL, headers, credentials); the
    connections are kinformer's, shared by every Client of that ApiClient
    (:func:`kinformer.client.pool.for_client`). Nothing about the ApiClient changes.

    A host whose path names a kcp logical cluster (``https://kcp/clusters/root:org``, see
    :func:`split_cluster_host`) is the server's own URL plus that cluster's prefix: a path
    that names a cluster itself (``/clusters/<name>/...``, as a ListWatch of that cluster
    sends it) goes to the server's URL, never below the host's prefix a second time; any
    other path goes below the host's prefix, as the official client sends it. A host of one
    logical cluster reaches that cluster only: a path naming another one (or ``*``) raises
    :class:`~kinformer.ConfigurationError` before anything is sent; a host of ``/clusters/*``
    reaches whichever cluster the path names.
    """

    def __init__(self, client: Any) -> None:
        self.api_client = api_client_of(client)
        self._pool = _pool.for_client(self.api_client)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = ACCEPT_JSON,
        timeout: tuple[float, float] = (DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT),
        ctx: _context.Context | None = None,
        what: str = "",
    ) -> Response:
        """Send one request and wait for the response headers; the body is left unread.

        Blocks for at most the ``(connect, read)`` timeout per step (each positive and finite,
        else :class:`~kinformer.ConfigurationError`). ``body`` (JSON-encodable)
        is sent as ``content_type``. An error status raises its typed
        :class:`~kinformer.APIError` (the Status body read), a failed connection
        :class:`~kinformer.TransportError`. Cancelling ``ctx`` breaks the request off, until
        the body is read (:meth:`Response.read`) or handed over for streaming
        (:meth:`Response.keep_open`); it then raises TransportError. ``what`` names the
        request in error messages (default: method and path).
        """
        where = what or f"{method} {path}"
        timeout = check_timeout("timeout", timeout)
        headers = {"Accept": ACCEPT_JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        host = str(self.api_client.configuration.host)
        server, cluster = split_cluster_host(host)
        if cluster is not None and not path.startswith("/clusters/"):
            path = cluster_prefix(cluster) + path
        elif cluster not in (None, _cluster.ALL_LOGICAL_CLUSTERS):
            _check_own_cluster(cluster, path, where)
        serialized = self.api_client.param_serialize(  # (method, url, headers, body, post params)
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        if cluster is not None and serialized[1].startswith(host):  # the path carries the cluster
            serialized = (serialized[0], server + serialized[1][len(host):], *serialized[2:])
        call: _pool.Call | None = None
        handle: _context.CancelHandle | None = None
        if ctx is not None:
            call = _pool.Call()
            handle = ctx.on_cancel(call.cancel)
        response = None
        try:
            response = Response(
                self._send(serialized, timeout, call, where), where, timeout[1], call, handle
            )
        finally:
            if response is None and handle is not None:
                handle.remove()
        if not 200 <= response.status <= 299:
            try:
                error_body = response.read()
            except errors.TransportError:
                if call is not None and call.cancelled:
                    raise
                error_body = b""  # a broken error body still gives a typed error
            error = errors.api_error_from_status(
                response.status, error_body, secrets=_sent_credentials(serialized[2], self.api_client))
            header = errors.parse_retry_after(response.headers.get("Retry-After"))
            if header is not None:
                error.retry_after = header
            raise error
        return response

    def _send(
        self, serialized: Any, timeout: tuple[float, float], call: _pool.Call | None, where: str
    ) -> Any:
        """Send ``serialized`` (what ``param_serialize`` made) through kinformer's pool, with
        ``call`` running on this thread; the urllib3 response or a typed error."""
        method, url, headers, body = serialized[:4]
        if body is not None and not isinstance(body, bytes):
            body = body.encode() if isinstance(body, str) else _json.dumps(body)
        try:
            return _pool.send(self._pool, method, url, headers, body, timeout, call)
        except _pool.Cancelled as exc:
            raise _cancelled_error(where) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if call is not None and call.cancelled:
                raise _cancelled_error(where) from _cause(exc)
            raise transport_error(exc, where) from _cause(exc)

    def get_json(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        timeout: tuple[float, float] = (DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT),
        ctx: _context.Context | None = None,
        what: str = "",
    ) -> Any:
        """GET ``path`` and decode its JSON body; :class:`~kinformer.DecodeError` if it is not JSON."""
        return self.request_json("GET", path, query=query, timeout=timeout, ctx=ctx, what=what)

    def request_json(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        timeout: tuple[float, float] = (DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT),
        ctx: _context.Context | None = None,
        what: str = "",
    ) -> Any:
        """:meth:`request`, then the response body decoded from JSON.

        :class:`~kinformer.DecodeError` when the body is not JSON.
        """
        where = what or f"{method} {path}"
        data = self.request(
            method, path, query=query, body=body, timeout=timeout, ctx=ctx, what=where).read()
        try:
            return _json.loads(data)
        except ValueError as exc:
            raise errors.DecodeError(f"{where}: response is not JSON") from exc


class Response:
    """A response whose headers arrived: its status and headers, and the body to read once.

    Either :meth:`read` the body whole, or :meth:`keep_open` and stream it with :meth:`read1`
    on one thread, while any thread may :meth:`shutdown` the stream; :meth:`release` ends it.
    Read errors raise :class:`~kinformer.TransportError`; a read timeout says how long it waited,
    and sets :attr:`silent`.
    """

    __slots__ = (
        "_call",
        "_handle",
        "_lock",
        "_raw",
        "_read1",
        "_read_timeout",
        "_released",
        "headers",
        "silent",
        "status",
        "where",
    )

    def __init__(
        self,
        raw: Any,
        where: str,
        read_timeout: float,
        call: _pool.Call | None,
        handle: _context.CancelHandle | None,
    ) -> None:
        self._raw = raw
        self.where = where
        self.status: int = raw.status
        self.headers: Any = raw.headers
        self._read_timeout = read_timeout
        self._call = call
        self._handle = handle  # the ctx registration that cancels _call; removed when it ends
        self._lock = threading.Lock()  # guards _released: the connection is given up exactly once
        self._released = False
        self.silent = False  # a read of the body waited its whole read timeout for nothing
        read1 = getattr(raw, "read1", None)
        if read1 is None:  # urllib3 < 2: a chunked stream arrives chunk by chunk through stream()
            chunks = raw.stream(256 * 1024)
            read1 = lambda _amt: next(chunks, b"")  # noqa: E731
        self._read1 = read1

    def _end_call(self) -> bool:
        """Stop cancelling through the request's context; False when it was cancelled already."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        call, self._call = self._call, None
        return call is None or call.detach()

    def read(self) -> bytes:
        """Read the whole body and give the connection back; cancellable until it returns."""
        call = self._call
        complete = False
        try:
            data: bytes = self._raw.data
            complete = True
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            if call is not None and call.cancelled:
                raise _cancelled_error(self.where) from _cause(exc)
            raise transport_error(exc, self.where) from _cause(exc)
        finally:
            intact = self._end_call()
            self.release(reuse=complete and intact)
        if not intact:
            raise _cancelled_error(self.where)
        return data

    def keep_open(self) -> None:
        """End the request's cancellation: from now on :meth:`shutdown` is the way to stop reading.

        Raises :class:`~kinformer.TransportError` (and closes the response) when the request
        was cancelled before this.
        """
        if not self._end_call():
            self.release(reuse=False)
            raise _cancelled_error(self.where)

    def set_read_timeout(self, seconds: float) -> None:
        """Wait up to ``seconds`` (positive, finite) for each later read of the body, instead of
        the request's read timeout: a watch waits for its headers as long as any request, and
        then, for its events, as long as the server may keep it open."""
        seconds = _checks.seconds("read timeout", seconds, positive=True)
        connection = getattr(self._raw, "connection", None) or getattr(self._raw, "_connection", None)
        sock = getattr(connection, "sock", None)
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.settimeout(seconds)
            self._read_timeout = seconds

    def read1(self, amount: int) -> bytes:
        """The next bytes of the body as soon as any arrive (at most ``amount``); b"" at its end.

        Blocks until data comes, the read timeout passes (TransportError, :attr:`silent`), or
        :meth:`shutdown` wakes it (TransportError, or b"").
        """
        try:
            chunk: bytes = self._read1(amount)
        except urllib3.exceptions.ReadTimeoutError as exc:
            self.silent = True
            raise errors.TransportError(f"{self.where}: no data for {self._read_timeout}s") from _cause(exc)
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            raise transport_error(exc, self.where) from _cause(exc)
        return chunk

    def shutdown(self) -> None:
        """Wake a read blocked on this response by shutting its socket down; any thread, idempotent."""
        shutdown = getattr(self._raw, "shutdown", None)  # urllib3 2.3+
        if callable(shutdown):
            try:
                shutdown()
                return
            except Exception:
                log.debug("HTTPResponse.shutdown failed for %s", self.where, exc_info=True)
        _pool.shutdown_socket(getattr(getattr(self._raw, "connection", None), "sock", None))

    def release(self, reuse: bool = False) -> None:
        """Give up the connection, once: back to the pool when ``reuse`` (the body read whole),
        else closed first. Idempotent and thread-safe."""
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            if not reuse:
                self._raw.close()
                connection = getattr(self._raw, "connection", None)
                if connection is not None:
                    connection.close()
            self._raw.release_conn()
        except Exception:
            log.debug("releasing the response of %s failed", self.where, exc_info=True)
