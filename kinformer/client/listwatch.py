"""List and watch: the ListerWatcher seam, its value types, and ListWatch.

A :class:`ListerWatcher` is what a :class:`~kinformer.Reflector` pulls from:
``list(options) -> ListResult`` and ``watch(options) -> Watch``. :class:`ListWatch` builds one
from two callables; :meth:`ListWatch.for_resource` builds the HTTP one, whose transport (requests
through a ``kubernetes.client.ApiClient``, streaming, line splitting, decoding checks) lives in
:mod:`kinformer.client.resource`; :class:`~kinformer.client.resource.HTTPWatch` and
:func:`~kinformer.client.resource.resource_path` stay importable from here. :class:`ChannelWatch`
is a watch fed by hand, like client-go's ``watch.FakeWatcher``, for scripted ListerWatchers.
"""

from __future__ import annotations

import dataclasses
import inspect
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from kinformer import context as _context
from kinformer import errors
from kinformer import gvr as _gvr

if TYPE_CHECKING:  # at run time, __getattr__ below imports them on first use (no import cycle)
    from kinformer.client.resource import HTTPResource as HTTPResource
    from kinformer.client.resource import HTTPWatch as HTTPWatch
    from kinformer.client.resource import resource_path as resource_path

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
DEFAULT_READ_TIMEOUT = 60.0  # seconds of silence that mark a watch dead; above the bookmark interval
DEFAULT_CONNECT_TIMEOUT = 10.0
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


class NamedItems(list):  # type: ignore[type-arg]
    """List items already checked to be decoded objects with a non-empty string metadata.name.

    The HTTP lister returns its items as this list, so the reflector does not check them again.
    """

    __slots__ = ()


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
    """What a Reflector lists and watches from.

    A ``list`` or ``watch`` marked with :func:`takes_context` also accepts a keyword ``ctx``
    (a :class:`~kinformer.Context`): cancelling it breaks off that request, even one
    still waiting for the server's answer. The Reflector passes its stop context to such
    methods (see :func:`list_with_context`); unmarked methods are called with the options alone.
    """

    def list(self, options: ListOptions) -> ListResult:
        """One list request (one page when ``options.limit`` is set); raises typed errors."""
        ...

    def watch(self, options: ListOptions) -> Watch:
        """Open a watch; raises typed errors when the server refuses it."""
        ...


_F = TypeVar("_F", bound=Callable[..., Any])
_TAKES_CONTEXT = "_kinformer_takes_context"


def takes_context(func: _F) -> _F:
    """Mark ``func`` (a list or watch callable) as accepting a keyword ``ctx`` that cancels it.

    Cancelling ``ctx`` while the request runs must make the call raise (any error) promptly.
    """
    setattr(func, _TAKES_CONTEXT, True)
    return func


def _accepts_context(func: Any) -> bool:
    return getattr(func, _TAKES_CONTEXT, False) is True


def list_with_context(
    lister: ListerWatcher, options: ListOptions, ctx: _context.Context | None
) -> ListResult:
    """``lister.list(options)``, passing ``ctx`` when the method is marked :func:`takes_context`."""
    method = lister.list
    if ctx is not None and _accepts_context(method):
        return method(options, ctx=ctx)  # type: ignore[call-arg]
    return method(options)


def watch_with_context(
    lister: ListerWatcher, options: ListOptions, ctx: _context.Context | None
) -> Watch:
    """``lister.watch(options)``, passing ``ctx`` when the method is marked :func:`takes_context`."""
    method = lister.watch
    if ctx is not None and _accepts_context(method):
        return method(options, ctx=ctx)  # type: ignore[call-arg]
    return method(options)


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
    Thread-safety is that of the callables. A callable marked :func:`takes_context` (as the
    HTTP ones of :meth:`for_resource` are) gets the ``ctx`` passed to :meth:`list` or
    :meth:`watch`, so cancelling it breaks off a request in flight.
    """

    def __init__(
        self,
        list_func: Callable[[ListOptions], ListResult],
        watch_func: Callable[[ListOptions], Any],
    ) -> None:
        self.list_func = list_func
        self.watch_func = watch_func

    @takes_context
    def list(self, options: ListOptions, ctx: _context.Context | None = None) -> ListResult:
        if ctx is not None and _accepts_context(self.list_func):
            return self.list_func(options, ctx=ctx)  # type: ignore[call-arg]
        return self.list_func(options)

    @takes_context
    def watch(self, options: ListOptions, ctx: _context.Context | None = None) -> Watch:
        if ctx is not None and _accepts_context(self.watch_func):
            return as_watch(self.watch_func(options, ctx=ctx))  # type: ignore[call-arg]
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
        :class:`~kinformer.TransportError`, and the reflector re-establishes it); keep it
        above the server's bookmark interval. ``tweak_list_options`` may change the options of
        every request in place (or return new ones), like client-go's factory option.

        Example::

            api = kubernetes.config.new_client_from_config()
            lw = ListWatch.for_resource(api, GroupVersionResource("", "v1", "configmaps"))
        """
        from kinformer.client import resource as http  # the transport imports this module

        resource = http.HTTPResource(
            http.api_client_of(client),
            gvr,
            namespace,
            label_selector,
            field_selector,
            read_timeout,
            connect_timeout,
            tweak_list_options,
        )
        return cls(resource.list, resource.watch)


def __getattr__(name: str) -> Any:
    """The HTTP transport's public names, importable from here as before the split."""
    if name in _HTTP_NAMES:
        from kinformer.client import resource as http

        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_HTTP_NAMES = frozenset({"HTTPResource", "HTTPWatch", "resource_path"})
