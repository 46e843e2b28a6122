"""List and watch: the ListerWatcher seam and its HTTP version over the official client.

A :class:`ListerWatcher` is what a :class:`~kinformer.reflector.Reflector` pulls from:
``list(options) -> ListResult`` and ``watch(options) -> Watch``. :class:`ListWatch` builds one
from two callables; :meth:`ListWatch.for_resource` builds the HTTP one, which sends its requests
through a ``kubernetes.client.ApiClient`` (so host, token and its refresh hook, TLS and proxy all
come from the client's ``Configuration``), decodes the JSON itself (objects stay dicts) and splits
watch lines itself. :class:`ChannelWatch` is a watch fed by hand, like client-go's
``watch.FakeWatcher``, for scripted ListerWatchers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import queue
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

from kinformer import _json, errors
from kinformer import gvr as _gvr

log = logging.getLogger(__name__)

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
DEFAULT_READ_TIMEOUT = 60.0  # seconds of silence that mark a watch dead; above the bookmark interval
DEFAULT_CONNECT_TIMEOUT = 10.0
_READ_CHUNK = 256 * 1024  # bytes per read of a watch stream; a read returns as soon as data arrives
INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


@dataclasses.dataclass
class ListOptions:
    """The query of one list or watch request (``metav1.ListOptions``); ``None`` means unset."""

    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int | None = None
    continue_token: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool | None = None
    send_initial_events: bool | None = None

    def query(self) -> list[tuple[str, str]]:
        """The URL query parameters for these options, in a stable order."""
        params: list[tuple[str, str]] = []
        if self.label_selector:
            params.append(("labelSelector", self.label_selector))
        if self.field_selector:
            params.append(("fieldSelector", self.field_selector))
        if self.resource_version is not None and self.resource_version != "":
            params.append(("resourceVersion", self.resource_version))
        if self.resource_version_match:
            params.append(("resourceVersionMatch", self.resource_version_match))
        if self.limit:
            params.append(("limit", str(self.limit)))
        if self.continue_token:
            params.append(("continue", self.continue_token))
        if self.timeout_seconds is not None:
            params.append(("timeoutSeconds", str(self.timeout_seconds)))
        if self.allow_watch_bookmarks:
            params.append(("allowWatchBookmarks", "true"))
        if self.send_initial_events is not None:
            params.append(("sendInitialEvents", "true" if self.send_initial_events else "false"))
        return params


class ListResult(NamedTuple):
    """One list answer (or one page of it): the objects, the list's RV and the continue token."""

    items: list[Any]
    resource_version: str
    continue_token: str = ""


class WatchEvent(NamedTuple):
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.

    For ERROR, ``object`` is the ``Status`` the server sent (see :func:`error_from_event`).
    """

    type: str
    object: Any


@runtime_checkable
class Watch(Protocol):
    """An open watch: iterate for events; ``close()`` ends it.

    Iteration blocks until the next event and stops when the stream ends or the watch is
    closed. ``close()`` is idempotent and may be called from any thread; a blocked iteration
    returns promptly afterwards.
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """What a Reflector lists and watches from."""

    def list(self, options: ListOptions) -> ListResult:
        """One list request (one page when ``options.limit`` is set); raises typed errors."""
        ...

    def watch(self, options: ListOptions) -> Watch:
        """Open a watch; raises typed errors when the server refuses it."""
        ...


_new_event = tuple.__new__  # builds a WatchEvent without NamedTuple.__new__'s frame


def error_from_event(event: WatchEvent) -> errors.APIError:
    """The typed error an ERROR event stands for (a 410 ``Status`` gives a GoneError)."""
    status = event.object if isinstance(event.object, dict) else {}
    code = status.get("code")
    return errors.api_error_from_status(code if isinstance(code, int) else 500, status)


class ChannelWatch:
    """A watch fed by hand: :meth:`send` events, :meth:`end` the stream (client-go's FakeWatcher).

    Thread-safe; the feeding thread never blocks (the buffer is unbounded). Iteration yields
    events in the order sent and returns after :meth:`end` or :meth:`close`; events still
    buffered when ``close()`` is called are dropped, as a closed connection drops them.
    An exception passed to :meth:`fail` is raised by the iteration after the events before it.
    """

    _END = object()

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = threading.Event()

    def send(self, event: WatchEvent) -> None:
        self._queue.put(event)

    def add(self, obj: Any) -> None:
        self.send(WatchEvent("ADDED", obj))

    def modify(self, obj: Any) -> None:
        self.send(WatchEvent("MODIFIED", obj))

    def delete(self, obj: Any) -> None:
        self.send(WatchEvent("DELETED", obj))

    def bookmark(self, obj: Any) -> None:
        self.send(WatchEvent("BOOKMARK", obj))

    def error(self, status: dict[str, Any]) -> None:
        self.send(WatchEvent("ERROR", status))

    def fail(self, exc: BaseException) -> None:
        """Make the iteration raise ``exc`` (a broken connection, a bad line)."""
        self._queue.put(exc)

    def end(self) -> None:
        """End the stream cleanly after the events already sent."""
        self._queue.put(self._END)

    def close(self) -> None:
        self._closed.set()
        self._queue.put(self._END)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __iter__(self) -> Iterator[WatchEvent]:
        while not self._closed.is_set():
            item = self._queue.get()
            if item is self._END or self._closed.is_set():
                return
            if isinstance(item, BaseException):
                raise item
            yield item


class _IterableWatch:
    """Wraps a plain iterable of events into a :class:`Watch`; ``close`` stops between events."""

    def __init__(self, events: Iterable[WatchEvent]) -> None:
        self._events = events
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self._events:
            if self._closed.is_set():
                return
            yield event


def as_watch(result: Any) -> Watch:
    """``result`` if it is a :class:`Watch`, else a Watch over the iterable it is."""
    if isinstance(result, Watch) and not inspect.isgenerator(result):
        return result  # a generator has close() too, but it cannot be closed while it runs
    return _IterableWatch(result)


class ListWatch:
    """A :class:`ListerWatcher` from two callables, ``list_func(options)`` and ``watch_func(options)``.

    ``watch_func`` may return a :class:`Watch` or any iterable of :class:`WatchEvent`.
    Thread-safety is that of the callables.
    """

    def __init__(
        self,
        list_func: Callable[[ListOptions], ListResult],
        watch_func: Callable[[ListOptions], Any],
    ) -> None:
        self.list_func = list_func
        self.watch_func = watch_func

    def list(self, options: ListOptions) -> ListResult:
        return self.list_func(options)

    def watch(self, options: ListOptions) -> Watch:
        return as_watch(self.watch_func(options))

    @classmethod
    def for_resource(
        cls,
        client: Any,
        gvr: _gvr.GroupVersionResource,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        tweak_list_options: Callable[[ListOptions], ListOptions | None] | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> ListWatch:
        """List and watch ``gvr`` over HTTP through the official client.

        ``client`` is a ``kubernetes.client.ApiClient``, a ``kubernetes.dynamic.DynamicClient``
        or an API object holding an ``api_client``. ``namespace=""`` means all namespaces.
        ``read_timeout``: seconds without a byte after which a watch counts as dead (raises
        :class:`~kinformer.errors.TransportError`, and the reflector re-establishes it); keep it
        above the server's bookmark interval. ``tweak_list_options`` may change the options of
        every request in place (or return new ones), like client-go's factory option.

        Example::

            api = kubernetes.config.new_client_from_config()
            lw = ListWatch.for_resource(api, GroupVersionResource("", "v1", "configmaps"))
        """
        resource = _HTTPResource(
            _api_client_of(client),
            gvr,
            namespace,
            label_selector,
            field_selector,
            read_timeout,
            connect_timeout,
            tweak_list_options,
        )
        return cls(resource.list, resource.watch)


def _api_client_of(client: Any) -> Any:
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


class _HTTPResource:
    """list and watch of one resource collection through an ApiClient; thread-safe."""

    def __init__(
        self,
        api_client: Any,
        gvr: _gvr.GroupVersionResource,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
        read_timeout: float,
        connect_timeout: float,
        tweak: Callable[[ListOptions], ListOptions | None] | None,
    ) -> None:
        self._api = api_client
        self._gvr = gvr
        self._path = resource_path(gvr, namespace)
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._timeout = (connect_timeout, read_timeout)
        self._tweak = tweak
        self._api_version = gvr.version if gvr.group == "" else f"{gvr.group}/{gvr.version}"

    def _options(self, options: ListOptions) -> ListOptions:
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

    def _request(self, params: list[tuple[str, str]]) -> Any:
        """Send a GET; return the urllib3 response (body unread) or raise a typed error."""
        import urllib3

        method, url, headers, body, post = self._api.param_serialize(
            method="GET",
            resource_path=self._path,
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        try:
            rest = self._api.call_api(
                method, url, headers, body, post, _request_timeout=self._timeout
            )
        except urllib3.exceptions.HTTPError as exc:
            raise _transport_error(exc, self._path) from exc
        except OSError as exc:
            raise _transport_error(exc, self._path) from exc
        response = rest.response
        if not 200 <= response.status <= 299:
            try:
                data = response.data
            except Exception:  # a broken error body still gives a typed error
                data = b""
            finally:
                response.release_conn()
            raise errors.api_error_from_status(response.status, data)
        return response

    def list(self, options: ListOptions) -> ListResult:
        import urllib3

        options = self._options(options)
        response = self._request(options.query())
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _transport_error(exc, self._path) from exc
        finally:
            response.release_conn()
        with _json.gc_paused():
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
        return ListResult(items, rv, token)

    def watch(self, options: ListOptions) -> Watch:
        options = self._options(options)
        params = [("watch", "true"), *options.query()]
        return HTTPWatch(self._request(params), str(self._gvr), self._timeout[1])


def _transport_error(exc: BaseException, where: str) -> errors.TransportError:
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
    :class:`~kinformer.errors.DecodeError`; silence for longer than ``read_timeout`` raises
    :class:`~kinformer.errors.TransportError`. ERROR events are yielded (see
    :func:`error_from_event`).
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

    def __iter__(self) -> Iterator[WatchEvent]:
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
                    raise _transport_error(exc, f"watch {self._subject}") from exc
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

    def _decode(self, line: bytes) -> WatchEvent:
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
        if event_type not in EVENT_TYPES:
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
        return _new_event(WatchEvent, (event_type, obj))


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
