"""The HTTP ListerWatcher: list and watch requests through the official client's ApiClient.

:meth:`~kinformer.ListWatch.for_resource` builds a :class:`~kinformer.ListWatch`
over an :class:`HTTPResource`, which sends its GET requests through a
``kubernetes.client.ApiClient`` (so host, token and its refresh hook, TLS and proxy all come from
the client's ``Configuration``), decodes the JSON itself (objects stay dicts) and checks what it
decoded. :class:`HTTPWatch` reads one chunked watch response and splits it into events itself.
A request given a ``ctx`` can be broken off while it still waits for the response headers: the
connection the client's pool hands to the request is noted (through the pool's
``_validate_conn`` step, which urllib3 runs on the requesting thread right before sending) and
cancelling ``ctx`` shuts its socket down, so the blocked read fails at once; that connection is
then closed, never handed back to the pool open.
:func:`transport_error` and :func:`api_client_of` are shared with the discovery client
(:mod:`kinformer.client.discovery`) and the ``watch`` command. The value types and the
:class:`~kinformer.ListerWatcher` protocol live in :mod:`kinformer.client.listwatch`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kinformer import _gc, _json, errors
from kinformer import context as _context
from kinformer import gvr as _gvr
from kinformer.client import listwatch

log = logging.getLogger("kinformer.client.listwatch")  # the logger it had before the split: configs name it

_READ_CHUNK = 256 * 1024  # bytes per read of a watch stream; a read returns as soon as data arrives
_EVENT_TYPES = listwatch.EVENT_TYPES
_WatchEvent = listwatch.WatchEvent
_new_event = tuple.__new__  # builds a WatchEvent without NamedTuple.__new__'s frame


def api_client_of(client: Any) -> Any:
    """The ``ApiClient`` behind ``client``: itself, or the one a DynamicClient or API object holds.

    Raises :class:`~kinformer.ConfigurationError` for anything else.
    """
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


def resource_path(gvr: _gvr.GroupVersionResource, namespace: str = "") -> str:
    """The REST path of a resource collection (``/api/v1/namespaces/ns/configmaps``)."""
    base = f"/api/{gvr.version}" if gvr.group == "" else f"/apis/{gvr.group}/{gvr.version}"
    if namespace:
        return f"{base}/namespaces/{namespace}/{gvr.resource}"
    return f"{base}/{gvr.resource}"


class _Cancelled(Exception):
    """Raised into urllib3 when a request's context was cancelled; urllib3 does not retry it."""


class _RequestScope:
    """The pool connection one request runs on, so that a cancel from any thread breaks it off.

    Thread-safe. :meth:`attach` runs on the requesting thread (from the pool hook) each time
    urllib3 picks a connection for the request, retries included; :meth:`cancel` shuts the
    attached connection's socket down; :meth:`detach` ends the scope before the connection goes
    back to the pool, so a late cancel never touches a connection another request uses.
    """

    __slots__ = ("_cancelled", "_conn", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _conn, _cancelled; the shutdown happens under it
        self._conn: Any = None
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        with self._lock:
            return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._conn is not None:
                _shutdown_socket(getattr(self._conn, "sock", None))

    def attach(self, conn: Any) -> None:
        """Note ``conn`` as the request's connection; raise :class:`_Cancelled` once cancelled."""
        with self._lock:
            self._conn = conn
            if self._cancelled:
                raise _Cancelled()

    def check(self) -> None:
        """Raise :class:`_Cancelled` once cancelled (after connecting, before sending)."""
        with self._lock:
            if self._cancelled:
                raise _Cancelled()

    def detach(self) -> bool:
        """Forget the connection; True when it was never cancelled (so it may be reused)."""
        with self._lock:
            self._conn = None
            return not self._cancelled


_local = threading.local()  # .scope: the _RequestScope of the request running on this thread
_hook_lock = threading.Lock()  # serializes installing the hook on a pool
_HOOKED = "_kinformer_cancel_hook"


def _hook_pool(api_client: Any, url: str) -> None:
    """Make the pool that will serve ``url`` report its connections to the current scope.

    The hook wraps the pool's ``_validate_conn``, which urllib3 calls on the requesting thread
    with the connection right before sending. Without a scope on the thread it only calls the
    original, so other requests through the same pool are unaffected. A pool without the step
    (another urllib3) is left alone: its requests then run to their timeout, as before.
    """
    manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    connection_from_url = getattr(manager, "connection_from_url", None)
    if connection_from_url is None:
        return
    try:
        pool = connection_from_url(url)
    except Exception:
        log.debug("no pool for %s; its requests cannot be cancelled", url, exc_info=True)
        return
    if getattr(pool, _HOOKED, False):
        return
    with _hook_lock:
        if getattr(pool, _HOOKED, False):
            return
        original = getattr(pool, "_validate_conn", None)
        if not callable(original):
            return

        def validate_conn(conn: Any) -> None:
            scope: _RequestScope | None = getattr(_local, "scope", None)
            if scope is None:
                original(conn)
                return
            scope.attach(conn)
            original(conn)
            if getattr(conn, "sock", None) is None:
                conn.connect()  # plain HTTP connects lazily; connect now so a cancel finds the socket
            scope.check()

        pool._validate_conn = validate_conn
        setattr(pool, _HOOKED, True)


def _shutdown_socket(sock: Any) -> None:
    """Shut ``sock`` down at the TCP level, waking a read blocked on it (TLS sockets too)."""
    if sock is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if isinstance(sock, socket.socket):
            # the plain socket's shutdown: an SSLSocket's own would drop its TLS object under
            # the reader's feet
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:
            sock.shutdown(socket.SHUT_RDWR)


def _check_object(obj: Any, what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise errors.DecodeError(f"{what}: expected an object, got {type(obj).__name__}")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise errors.DecodeError(f"{what}: object has no metadata.name")
    # a name or namespace that is not a string would become a garbage cache key, and such a
    # resourceVersion the version the reflector resumes (and relists) from, forever
    if type(metadata["name"]) is not str:
        raise errors.DecodeError(f"{what}: metadata.name is not a string")
    for field in ("namespace", "resourceVersion"):
        value = metadata.get(field)
        if value is not None and type(value) is not str:
            raise errors.DecodeError(f"{what}: metadata.{field} is not a string")
    return obj


class HTTPResource:
    """List and watch of one resource collection through an ApiClient.

    Thread-safe: each call sends its own request. ``list`` reads the whole response and
    returns a :class:`~kinformer.ListResult`; ``watch`` returns an open
    :class:`HTTPWatch`. Both raise typed errors (HTTP statuses, transport failures, responses
    that do not decode to what Kubernetes sends). Both take an optional ``ctx``: cancelling it
    breaks off the request, even one the server has not answered yet, and the call raises
    :class:`~kinformer.TransportError`.
    """

    def __init__(
        self,
        api_client: Any,
        gvr: _gvr.GroupVersionResource,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
        read_timeout: float,
        connect_timeout: float,
        tweak: Callable[[listwatch.ListOptions], listwatch.ListOptions | None] | None,
    ) -> None:
        self._api = api_client
        self._gvr = gvr
        self._path = resource_path(gvr, namespace)
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._timeout = (connect_timeout, read_timeout)
        self._tweak = tweak
        self._api_version = gvr.version if gvr.group == "" else f"{gvr.group}/{gvr.version}"

    def _options(self, options: listwatch.ListOptions) -> listwatch.ListOptions:
        options = dataclasses.replace(options)
        if self._label_selector is not None and options.label_selector is None:
            options.label_selector = self._label_selector
        if self._field_selector is not None and options.field_selector is None:
            options.field_selector = self._field_selector
        if self._tweak is not None:
            tweaked = self._tweak(options)
            if tweaked is not None:
                options = tweaked
        return options

    def _request(self, params: list[tuple[str, str]], scope: _RequestScope | None) -> Any:
        """Send a GET; return the urllib3 response (body unread) or raise a typed error.

        With a ``scope``, cancelling it breaks the request off (it then raises
        :class:`~kinformer.TransportError`); the caller detaches the scope.
        """
        import urllib3

        method, url, headers, body, post = self._api.param_serialize(
            method="GET",
            resource_path=self._path,
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        if scope is not None:
            _hook_pool(self._api, url)
            _local.scope = scope
        try:
            rest = self._api.call_api(
                method, url, headers, body, post, _request_timeout=self._timeout
            )
        except _Cancelled as exc:
            raise errors.TransportError(f"{self._path}: request cancelled") from exc
        except urllib3.exceptions.HTTPError as exc:
            raise transport_error(exc, self._path) from exc
        except OSError as exc:
            raise transport_error(exc, self._path) from exc
        finally:
            if scope is not None:
                _local.scope = None
        response = rest.response
        if not 200 <= response.status <= 299:
            try:
                data = response.data
            except Exception:  # a broken error body still gives a typed error
                data = b""
            finally:
                _release(response, scope)
            raise errors.api_error_from_status(response.status, data)
        return response

    def _scoped(self, ctx: _context.Context | None) -> tuple[_RequestScope | None, Any]:
        """A scope cancelled with ``ctx`` and the handle that unregisters it (None, None without)."""
        if ctx is None:
            return None, None
        scope = _RequestScope()
        return scope, ctx.on_cancel(scope.cancel)

    @listwatch.takes_context
    def list(
        self, options: listwatch.ListOptions, ctx: _context.Context | None = None
    ) -> listwatch.ListResult:
        """One list request; cancelling ``ctx`` breaks it off (it raises TransportError)."""
        import urllib3

        options = self._options(options)
        scope, handle = self._scoped(ctx)
        try:
            response = self._request(options.query(), scope)
            try:
                data = response.data
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise transport_error(exc, self._path) from exc
            finally:
                _release(response, scope)
        finally:
            if handle is not None:
                handle.remove()
        with _gc.paused():
            try:
                body = _json.loads(data)
            except ValueError as exc:
                log.warning("list %s: response is not JSON: %s", self._gvr, exc)
                raise errors.DecodeError(f"list {self._gvr}: response is not JSON") from exc
        if not isinstance(body, dict) or not isinstance(body.get("items"), list):
            log.warning("list %s: response is not a list (no items)", self._gvr)
            raise errors.DecodeError(f"list {self._gvr}: response is not a list (no items)")
        items: list[Any] = body["items"]
        kind = body.get("kind")
        item_kind = kind[:-4] if isinstance(kind, str) and kind.endswith("List") else None
        api_version = body.get("apiVersion") or self._api_version
        what = f"list {self._gvr}"  # formatted once, not per item
        try:
            for item in items:
                if not (
                    type(item) is dict
                    and type(metadata := item.get("metadata")) is dict
                    and type(name := metadata.get("name")) is str
                    and name
                    and type(metadata.get("resourceVersion", "")) is str
                    and type(metadata.get("namespace", "")) is str
                ):  # the usual item checked inline, as strictly as _check_object, which words the error
                    _check_object(item, what)
                if item_kind and "kind" not in item:
                    item["kind"] = item_kind
                if "apiVersion" not in item:
                    item["apiVersion"] = api_version
        except errors.DecodeError as exc:
            log.warning("%s", exc)
            raise
        metadata = body.get("metadata") or {}
        is_dict = isinstance(metadata, dict)
        rv = (metadata.get("resourceVersion") or "") if is_dict else None
        token = (metadata.get("continue") or "") if is_dict else None
        if not isinstance(rv, str) or not isinstance(token, str):
            log.warning("list %s: response metadata is not an object of strings", self._gvr)
            raise errors.DecodeError(f"list {self._gvr}: response metadata is not an object of strings")
        return listwatch.ListResult(listwatch.NamedItems(items), rv, token)

    @listwatch.takes_context
    def watch(
        self, options: listwatch.ListOptions, ctx: _context.Context | None = None
    ) -> HTTPWatch:
        """Open a watch; cancelling ``ctx`` before the response arrives breaks the request off.

        Once open, the watch is the caller's to close (cancelling ``ctx`` no longer does).
        """
        options = self._options(options)
        params = [("watch", "true"), *options.query()]
        scope, handle = self._scoped(ctx)
        try:
            response = self._request(params, scope)
        finally:
            if handle is not None:
                handle.remove()
        if scope is not None and not scope.detach():
            _discard(response)
            raise errors.TransportError(f"watch {self._gvr}: request cancelled")
        return HTTPWatch(response, str(self._gvr), self._timeout[1])


def _release(response: Any, scope: _RequestScope | None) -> None:
    """Give the response's connection back to the pool, or close it if the request was cancelled."""
    if scope is not None and not scope.detach():
        _discard(response)
        return
    response.release_conn()


def _discard(response: Any) -> None:
    """Close the response and its connection; the pool gets back a closed connection only."""
    try:
        response.close()
        connection = getattr(response, "connection", None)
        if connection is not None:
            connection.close()
        response.release_conn()
    except Exception:
        log.debug("closing a cancelled response failed", exc_info=True)


def transport_error(exc: BaseException, where: str) -> errors.TransportError:
    """A typed error for a failed connection; refused connections get their own class."""
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 8:
        if isinstance(seen, ConnectionRefusedError):
            return errors.ConnectionRefusedAPIError(f"{where}: connection refused")
        reason = getattr(seen, "reason", None)
        seen = reason if isinstance(reason, BaseException) else (seen.__cause__ or seen.__context__)
        depth += 1
    text = str(exc)
    if "refused" in text.lower():
        return errors.ConnectionRefusedAPIError(f"{where}: connection refused")
    return errors.TransportError(f"{where}: {type(exc).__name__}: {text[:200]}")


class HTTPWatch:
    """A watch stream over one chunked HTTP response: one JSON event per line.

    Iterate once, on one thread. ``close()`` is thread-safe and idempotent: it shuts the socket
    down so a blocked read wakes at once, and the iteration then ends quietly. A malformed line,
    an unknown event type or an object without a string ``metadata.name`` is logged and raised as
    :class:`~kinformer.DecodeError`; silence for longer than ``read_timeout`` raises
    :class:`~kinformer.TransportError`. ERROR events are yielded (see
    :func:`~kinformer.client.listwatch.error_from_event`).
    """

    def __init__(self, response: Any, subject: str, read_timeout: float | None = None) -> None:
        self._response = response
        self._subject = subject
        self._read_timeout = read_timeout
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _iterating, _released; released exactly once
        self._iterating = False
        self._released = False

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        _shutdown(self._response)
        with self._lock:
            iterating = self._iterating
        if not iterating:  # else the reading thread releases the connection on its way out
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            self._response.close()
            self._response.release_conn()
        except Exception:
            log.debug("closing watch response for %s failed", self._subject, exc_info=True)

    def __iter__(self) -> Iterator[listwatch.WatchEvent]:
        import urllib3

        pending = b""
        with self._lock:
            self._iterating = True
        read1 = getattr(self._response, "read1", None)
        if read1 is None:  # urllib3 < 2: chunked streams arrive chunk by chunk through stream()
            stream = self._response.stream(_READ_CHUNK)
            read1 = lambda _amt: next(stream, b"")  # noqa: E731
        try:
            while not self._closed.is_set():
                try:
                    chunk = read1(_READ_CHUNK)
                except urllib3.exceptions.ReadTimeoutError as exc:
                    if self._closed.is_set():
                        return
                    raise errors.TransportError(
                        f"watch {self._subject}: no data for {self._read_timeout}s"
                    ) from exc
                except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
                    if self._closed.is_set():
                        return
                    raise transport_error(exc, f"watch {self._subject}") from exc
                if not chunk:
                    if pending.strip() and not self._closed.is_set():
                        yield self._decode(pending)
                    return
                pending += chunk
                if b"\n" not in chunk:
                    continue
                lines = pending.split(b"\n")
                pending = lines.pop()
                closed = self._closed.is_set
                decode = self._decode
                for line in lines:
                    if closed():
                        return
                    if line and not line.isspace():  # blank lines (keep-alives) are skipped
                        yield decode(line)
        finally:
            self._release()

    def _decode(self, line: bytes) -> listwatch.WatchEvent:
        try:
            raw = _json.loads(line)
        except ValueError as exc:
            log.warning("watch %s: malformed line: %.200r", self._subject, line)
            raise errors.DecodeError(f"watch {self._subject}: malformed line") from exc
        if not isinstance(raw, dict):
            log.warning("watch %s: event is not an object: %.200r", self._subject, line)
            raise errors.DecodeError(f"watch {self._subject}: event is not an object")
        event_type = raw.get("type")
        obj = raw.get("object")
        if event_type not in _EVENT_TYPES:
            log.warning("watch %s: unknown event type %.50r", self._subject, event_type)
            raise errors.DecodeError(f"watch {self._subject}: unknown event type {event_type!r}")
        if event_type == "ERROR":
            if not isinstance(obj, dict):
                raise errors.DecodeError(f"watch {self._subject}: ERROR event without a Status")
        elif event_type == "BOOKMARK":
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            if not isinstance(metadata, dict):
                log.warning("watch %s: bookmark without metadata", self._subject)
                raise errors.DecodeError(f"watch {self._subject}: bookmark without metadata")
            if not isinstance(metadata.get("resourceVersion", ""), str):
                # the reflector would resume, and relist, from this version forever
                log.warning("watch %s: bookmark resourceVersion is not a string", self._subject)
                raise errors.DecodeError(
                    f"watch {self._subject}: bookmark resourceVersion is not a string")
        elif not (
            type(obj) is dict
            and type(metadata := obj.get("metadata")) is dict
            and type(name := metadata.get("name")) is str
            and name
            and type(metadata.get("resourceVersion", "")) is str
            and type(metadata.get("namespace", "")) is str
        ):  # the usual case checked inline, as strictly as _check_object, which words the error
            try:
                _check_object(obj, f"watch {self._subject}: {event_type}")
            except errors.DecodeError as exc:
                log.warning("%s", exc)
                raise
        return _new_event(_WatchEvent, (event_type, obj))


def _shutdown(response: Any) -> None:
    """Wake a read blocked on ``response`` by shutting its socket down (urllib3 2.3+ or by hand)."""
    shutdown = getattr(response, "shutdown", None)
    if callable(shutdown):
        try:
            shutdown()
            return
        except Exception:
            log.debug("HTTPResponse.shutdown failed", exc_info=True)
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
