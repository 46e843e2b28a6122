"""ListWatch: a ListerWatcher from two callables, or over HTTP for one resource type.

client-go's ``cache.ListWatch`` and ``NewListWatchFromClient``: :class:`ListWatch` wraps a list
and a watch callable into the :class:`~kinformer.ListerWatcher` a Reflector pulls from, and
:meth:`ListWatch.for_resource` builds the one that lists and watches a resource collection
through the official client (:class:`~kinformer.client.resource.HTTPResource` over the request
path of :mod:`kinformer.client.rest`). The protocol and its value types live below, in
:mod:`kinformer.client.listerwatcher`.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kinformer import context as _context
from kinformer import errors, sharding
from kinformer import gvr as _gvr
from kinformer.client import listerwatcher, resource, rest

# kube-apiserver sends a watch that asked for bookmarks one about every minute (its cacher's
# bookmark frequency); a quiet watch hears nothing else, so a read timeout must outlast that
# minute with room for the server's scheduling (up to a few seconds late) and the network. At a
# minute, each quiet watch was cut just before its bookmark: its resourceVersion never moved,
# and one whose events a selector filters out fell behind the server's history and relisted.
SERVER_BOOKMARK_INTERVAL = 60.0
DEFAULT_READ_TIMEOUT = 90.0  # seconds of silence that mark a watch dead
DEFAULT_CONNECT_TIMEOUT = rest.DEFAULT_CONNECT_TIMEOUT


class _IterableWatch:
    """Wraps a plain iterable of events into a :class:`Watch`; ``close`` stops between events."""

    def __init__(self, events: Iterable[listerwatcher.WatchEvent]) -> None:
        self._events = events
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()

    def __iter__(self) -> Iterator[listerwatcher.WatchEvent]:
        for event in self._events:
            if self._closed.is_set():
                return
            yield event


def as_watch(result: Any) -> listerwatcher.Watch:
    """``result`` if it is a :class:`Watch`, else a Watch over the iterable it is."""
    if isinstance(result, listerwatcher.Watch) and not inspect.isgenerator(result):
        return result  # a generator has close() too, but it cannot be closed while it runs
    return _IterableWatch(result)


class ListWatch:
    """A :class:`ListerWatcher` from two callables, ``list_func(options)`` and ``watch_func(options)``.

    ``watch_func`` may return a :class:`Watch` or any iterable of :class:`WatchEvent`.
    Thread-safety is that of the callables. A callable with a ``ctx`` parameter (as the HTTP
    ones of :meth:`for_resource` have) gets the ``ctx`` passed to :meth:`list` or
    :meth:`watch`, so cancelling it breaks off a request in flight; whether it has one is read
    once, here.
    """

    def __init__(
        self,
        list_func: Callable[[listerwatcher.ListOptions], listerwatcher.ListResult],
        watch_func: Callable[[listerwatcher.ListOptions], Any],
    ) -> None:
        self.list_func = list_func
        self.watch_func = watch_func
        self._list = listerwatcher.taking_context(list_func)
        self._watch = listerwatcher.taking_context(watch_func)
        # the shard every request carries (for_resource); an informer over this starts with it
        self.shard_selector: sharding.ShardSelector | None = None
        self.resource: _gvr.GroupVersionResource | None = None  # what it lists, when known
        # the kcp logical cluster every request goes to ("*": all of them), None: no prefix
        self.cluster: str | None = None
        self.reports_failures = False  # it logs nothing itself: the reflector reports its failures

    def list(
        self, options: listerwatcher.ListOptions, ctx: _context.Context | None = None
    ) -> listerwatcher.ListResult:
        result: listerwatcher.ListResult = self._list(options, ctx=ctx)
        return result

    def watch(
        self, options: listerwatcher.ListOptions, ctx: _context.Context | None = None
    ) -> listerwatcher.Watch:
        return as_watch(self._watch(options, ctx=ctx))

    @classmethod
    def for_resource(
        cls,
        client: Any,
        gvr: _gvr.GroupVersionResource,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        tweak_list_options: Callable[[listerwatcher.ListOptions], listerwatcher.ListOptions | None]
        | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        shard_selector: sharding.ShardSelector | str | None = None,
        cluster: str | None = None,
    ) -> ListWatch:
        """List and watch ``gvr`` over HTTP through the official client.

        ``client`` is a ``kubernetes.client.ApiClient``, a ``kubernetes.dynamic.DynamicClient``
        or an API object holding an ``api_client``. ``namespace=""`` means all namespaces.
        With ``label_selector`` (applied by the server), an object whose labels stop matching
        leaves the watch as a DELETED event: an informer's handlers see it deleted, though it
        still exists.
        ``read_timeout``: seconds without a byte after which a watch counts as dead (raises
        :class:`~kinformer.TransportError`, and the reflector re-establishes it); keep it
        well above the server's bookmark interval (kube-apiserver's is a minute; the default
        is 90 s), else every quiet watch is cut just before the bookmark that would move its
        resourceVersion on. ``read_timeout`` and ``connect_timeout`` must be
        positive, finite seconds, else :class:`~kinformer.ConfigurationError`.
        ``tweak_list_options`` may change the options of
        every request in place (or return new ones), like client-go's factory option.
        ``shard_selector`` (a :class:`~kinformer.ShardSelector` or its text) goes with every
        request that names none itself; an informer over this ListWatch starts with it. The
        empty selector raises :class:`~kinformer.ConfigurationError`: no parameter would mean
        the whole resource (give it to the informer instead).
        ``cluster`` addresses a kcp logical cluster: ``"root:org"`` prefixes every path with
        ``/clusters/root:org``, and ``"*"`` lists and watches across every logical cluster, each
        object naming its own in the ``kcp.io/cluster`` annotation (a
        :class:`~kinformer.SharedIndexInformer` over such a ListWatch is cluster-aware). A name
        outside kcp's grammar raises :class:`~kinformer.ConfigurationError`. A client whose host
        ends in ``/clusters/<name>`` (a kcp kubeconfig's server, or ``/clusters/*``) addresses
        that cluster as ``cluster="<name>"`` would, and ``cluster`` may be left out; a
        ``cluster`` that contradicts the host's raises :class:`~kinformer.ConfigurationError`.

        Example::

            api = kubernetes.config.new_client_from_config()
            lw = ListWatch.for_resource(api, GroupVersionResource("", "v1", "configmaps"))

        A ``gvr`` that is not a :class:`~kinformer.GroupVersionResource` (the plural alone,
        say) raises :class:`~kinformer.ConfigurationError`.
        """
        if not isinstance(gvr, _gvr.GroupVersionResource):
            raise errors.ConfigurationError(
                f"ListWatch.for_resource needs a GroupVersionResource(group, version, resource), "
                f"not {gvr!r}")
        selector = None
        if shard_selector is not None:
            selector = (shard_selector if isinstance(shard_selector, sharding.ShardSelector)
                        else sharding.ShardSelector.parse(str(shard_selector)))
            if sharding.is_empty(selector):  # sent as no parameter, it would mean everything
                raise errors.ConfigurationError(
                    "an empty shard selector holds nothing and cannot go with a request; "
                    "give it to the informer (set_shard_selector) instead")
        cluster = rest.client_cluster(client, cluster)
        prefix = rest.cluster_prefix(cluster)
        http = resource.HTTPResource(
            rest.Client(client),
            gvr,
            namespace,
            label_selector,
            field_selector,
            read_timeout,
            connect_timeout,
            tweak_list_options,
            str(selector) if selector is not None else "",
            prefix,
        )
        lw = cls(http.list, http.watch)
        lw.shard_selector = selector
        lw.resource = gvr
        lw.cluster = cluster
        return lw
