"""The list-and-watch seam: the ListerWatcher protocol and the values that cross it.

A :class:`ListerWatcher` is what a :class:`~kinformer.Reflector` pulls from:
``list(options) -> ListResult`` and ``watch(options) -> Watch``, where a :class:`Watch` yields
:class:`WatchEvent` values (client-go's ``cache.ListerWatcher``, apimachinery's
``metav1.ListOptions`` and ``watch.Interface``). This module sits below every implementation:
:class:`~kinformer.ListWatch` (:mod:`kinformer.client.listwatch`), the HTTP one
(:mod:`kinformer.client.resource`) and, among the test fakes, the hand-fed
:class:`~kinformer.testing.ChannelWatch`; the reflector depends on it alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from kinformer import context as _context
from kinformer import errors, meta, sharding
from kinformer import gvr as _gvr

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"  # ends a WatchList's initial events


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
    shard_selector: str = ""  # sent as shardSelector (see kinformer.sharding); "" for none

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
        if self.shard_selector:
            params.append(("shardSelector", self.shard_selector))
        return params


class ListResult(NamedTuple):
    """One list answer (or one page of it): the objects, the list's RV and the continue token.

    ``shard_info`` is the selector a server that shards lists echoed (``metadata.shardInfo``),
    None when it did not shard the list. ``checked`` says the ListerWatcher already made sure
    every item is fit for a cache (:func:`kinformer.meta.is_well_formed`), so the reflector need
    not look again; ``transformed`` that the items went through the transform of
    :func:`transforming_pages` already, as they were decoded (with keys only when that
    transform keeps names: a :class:`PageTransform` with ``with_json``).

    ``keys``, when not None, are the items' store keys in order, made with
    :func:`kinformer.meta.object_key` by a ListerWatcher that walked every item anyway (the
    HTTP one, while each item was fresh in memory), and ``namespace_runs`` (None when not
    noted) their namespaces (:data:`kinformer.meta.NamespaceRuns`): the listed batch a store
    can take keyed (:meth:`ListedStore.replace_listed
    <kinformer.reflector.sink.ListedStore.replace_listed>`) without reading every object once
    more. Whoever changes, drops or reorders items makes a result without them
    (:meth:`unkeyed`).
    """

    items: list[Any]
    resource_version: str
    continue_token: str = ""
    shard_info: str | None = None
    checked: bool = False
    transformed: bool = False
    keys: list[str] | None = None
    namespace_runs: meta.NamespaceRuns | None = None

    def unkeyed(self, items: list[Any]) -> ListResult:
        """This result with ``items`` in place of its own, and without keys or namespace runs
        (``items`` may not be the objects they were made for)."""
        return self._replace(items=items, keys=None, namespace_runs=None)

    def item_keys(self) -> list[str] | None:
        """``keys`` when they are there and as many as the items, else None."""
        keys = self.keys
        return keys if keys is not None and len(keys) == len(self.items) else None


_pages = threading.local()  # .transform: what this thread's lists put their items through


class PageTransform(NamedTuple):
    """What :func:`transforming_pages` asks lists to put their items through as they decode them.

    ``items`` takes a chunk of checked items and returns the items to keep; ``with_json``, when
    not None, does the same given also each item's JSON exactly as the server sent it (a compact
    cache keeps those bytes rather than encoding the object again), and a lister that can cut
    its body between items calls it instead. A transform with ``with_json`` is a
    :class:`~kinformer.transforms.JSONTransform`, which keeps every object's name and
    namespace: its lister still keys the items (``ListResult.keys``). ``kept`` is False when
    the transform keeps nothing of the decoded items (a :class:`~kinformer.transforms.Packer`),
    so their decode may be cut as fine as it likes.
    """

    items: Callable[[list[Any]], list[Any]]
    with_json: Callable[[list[Any], list[bytes]], list[Any]] | None = None
    kept: bool = True


@contextlib.contextmanager
def transforming_pages(transform: Callable[[list[Any]], list[Any]],
                       with_json: Callable[[list[Any], list[bytes]], list[Any]] | None = None,
                       *, kept: bool = True) -> Iterator[None]:
    """Ask every list this thread makes inside the block to put its items through
    ``transform`` (a list's items in, the items to keep out) as they are decoded, or through
    ``with_json`` (the items and each one's JSON as sent; see :class:`PageTransform`, and for
    ``kept``).

    A ListerWatcher that can (the HTTP one) hands ``transform`` each chunk of a page's items as
    soon as the chunk is decoded and checked, so the page is never held decoded whole, and
    says so with ``ListResult.transformed``; any other ignores the request, and its caller
    transforms the page itself. Blocks nest: the innermost transform is the one used.
    """
    outer = getattr(_pages, "transform", None)
    _pages.transform = PageTransform(transform, with_json, kept)
    try:
        yield
    finally:
        _pages.transform = outer


def page_transform() -> PageTransform | None:
    """The transform of this thread's innermost :func:`transforming_pages` block, or None."""
    transform: PageTransform | None = getattr(_pages, "transform", None)
    return transform


class WatchEvent(NamedTuple):
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.

    For ERROR, ``object`` is the ``Status`` the server sent (see :func:`error_from_event`).
    """

    type: str
    object: Any


class WatchBatch(NamedTuple):
    """The events of one read of a watch stream, in order: ``objects[i]`` is the object of an
    event of type ``types[i]`` (see :class:`BatchWatch`)."""

    types: list[str]
    objects: list[Any]


@runtime_checkable
class Watch(Protocol):
    """An open watch: iterate for events; ``close()`` ends it.

    Iteration blocks until the next event and stops when the stream ends or the watch is
    closed. ``close()`` is idempotent and may be called from any thread; a blocked iteration
    returns promptly afterwards.
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


@runtime_checkable
class BatchWatch(Watch, Protocol):
    """A watch that can also hand its events over a read at a time, as the HTTP one does.

    ``batches()`` yields a :class:`WatchBatch` per read of the stream, never empty, with the
    same events, checks and errors as iterating: a batch ends before an event that fails, and
    the error is raised when the next batch is asked for. Use one of the two, not both. The
    reflector reads a watch so when it has ``batches``, one event at a time otherwise.
    ``checked`` says whether its events need looking at again.
    """

    checked: bool
    """True: the watch checked every event it yields (a known type, an object fit for a cache,
    :func:`kinformer.meta.is_well_formed`) and raised for any other, so a reader need not look
    again."""

    def batches(self) -> Iterator[WatchBatch]: ...


class ListerWatcher(Protocol):
    """What a Reflector lists and watches from.

    A ``list`` or ``watch`` with a keyword parameter ``ctx`` (as those of
    :meth:`ListWatch.for_resource <kinformer.ListWatch.for_resource>` have) gets the reflector's
    stop :class:`~kinformer.Context`: cancelling it must make a request in flight, even one
    still waiting for the server's answer, raise promptly. Others are called with the options
    alone (:func:`with_context` decides once which is which).
    """

    def list(self, options: ListOptions) -> ListResult:
        """One list request (one page when ``options.limit`` is set); raises typed errors."""
        ...

    def watch(self, options: ListOptions) -> Watch:
        """Open a watch; raises typed errors when the server refuses it."""
        ...


@runtime_checkable
class DescribedListerWatcher(ListerWatcher, Protocol):
    """A ListerWatcher that says what it lists, where, and how it reports, as ListWatch does.

    ``resource`` is the resource type every request lists and watches, ``shard_selector`` the
    shard every request carries; either is None when there is nothing to say. ``cluster`` is
    the kcp logical cluster every request goes to (:data:`~kinformer.ALL_LOGICAL_CLUSTERS`,
    ``"*"``: every one at once, each object naming its own), None for a plain server.
    ``reports_failures`` is True when it reports its failures itself (a member cluster's), so
    the reflector logs the expected ones at DEBUG. An informer over it is named after the
    resource, starts on that shard, and is cluster-aware over ``"*"``.
    """

    resource: _gvr.GroupVersionResource | None
    shard_selector: sharding.ShardSelector | None
    cluster: str | None
    reports_failures: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Description:
    """What a ListerWatcher says of itself (:class:`DescribedListerWatcher`); all None or False
    for one that says nothing."""

    resource: _gvr.GroupVersionResource | None = None
    shard_selector: sharding.ShardSelector | None = None
    cluster: str | None = None
    reports_failures: bool = False


def describe(lister_watcher: ListerWatcher) -> Description:
    """What ``lister_watcher`` says of itself, read once."""
    if isinstance(lister_watcher, DescribedListerWatcher):
        return Description(lister_watcher.resource, lister_watcher.shard_selector,
                           lister_watcher.cluster, lister_watcher.reports_failures is True)
    return Description()


class ContextListerWatcher(Protocol):
    """A ListerWatcher whose ``list`` and ``watch`` take the caller's context: what the
    reflector calls, made by :func:`with_context`."""

    def list(self, options: ListOptions, *, ctx: _context.Context | None = None) -> ListResult: ...

    def watch(self, options: ListOptions, *, ctx: _context.Context | None = None) -> Watch: ...


_R = TypeVar("_R")
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def taking_context(func: Callable[..., _R]) -> Callable[..., _R]:
    """``func`` (a list or watch callable) as one called ``func(options, ctx=ctx)``.

    ``func`` itself when its signature has a ``ctx`` parameter that can be passed by keyword;
    otherwise a function that drops ``ctx`` and calls ``func(options)``. Decided once, here,
    not on every request.
    """
    try:
        parameter = inspect.signature(func).parameters.get("ctx")
    except (TypeError, ValueError):  # no signature to read (a builtin): it takes no ctx
        parameter = None
    if parameter is not None and parameter.kind in _BY_KEYWORD:
        return func

    def without_context(options: ListOptions, *, ctx: _context.Context | None = None) -> _R:
        return func(options)

    return without_context


class _WithContext:
    """The list and watch of a ListerWatcher, each as :func:`taking_context` made it."""

    __slots__ = ("list", "watch")

    def __init__(self, lister_watcher: ListerWatcher) -> None:
        self.list = taking_context(lister_watcher.list)
        self.watch = taking_context(lister_watcher.watch)


def with_context(lister_watcher: ListerWatcher) -> ContextListerWatcher:
    """``lister_watcher`` with a ``list`` and ``watch`` that take a keyword ``ctx``.

    A method with a ``ctx`` parameter gets it; one without is called with the options alone.
    The reflector adapts its ListerWatcher so once, when it is made.
    """
    return _WithContext(lister_watcher)


def error_from_event(event: WatchEvent) -> errors.APIError:
    """The typed error an ERROR event stands for (a 410 ``Status`` gives a GoneError)."""
    status = event.object if isinstance(event.object, dict) else {}
    code = status.get("code")
    return errors.api_error_from_status(code if isinstance(code, int) else 500, status)
