"""InformerManager: fleet's one-informer-per-resource-type manager, fed by a discovery loop.

Azure/fleet's ``pkg/utils/informer`` InformerManager. It composes a
:class:`~kinformer.DynamicSharedInformerFactory` (``factory.py``), which creates, starts and
stops the informers; the manager only keeps what fleet adds on top: which kinds are tracked,
present, static or namespaced, and which handler each has. A caller (typically a loop over
:meth:`~kinformer.CachedDiscoveryClient.server_resources`, ``client/discovery.py``) tells it
which resource types exist with :meth:`InformerManager.add_dynamic_resources`; the manager
registers the caller's handler once per type, strips ``metadata.managedFields`` from what it
caches, and reports which types are present, namespaced or synced. Unlike fleet (its issue
#279), a type that left the server has its informer stopped instead of relisting 404s forever.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterable
from typing import Any

from kinformer import context, errors, factory, handlers
from kinformer.cache.lister import GenericLister
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource
from kinformer.transforms import strip_managed_fields as strip_managed_fields  # also from here, as before

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Record:
    """What the manager knows of one kind; guarded by the manager's lock."""

    meta: APIResourceMeta
    handlers: list[handlers.ResourceEventHandler]
    is_static: bool = False
    is_present: bool = False
    stopped: bool = False  # its informer was stopped and dropped while absent


class InformerManager:
    """Runs one shared informer per resource type and registers each type's handler once.

    Thread-safe. Lifecycle: nothing runs until :meth:`start`, which returns at once, starts the
    informers created since the last call and can be called after every discovery pass (fleet's
    ``Start()``: no stop argument, ``parent_stop`` is given at construction). Everything stops
    when ``parent_stop`` (a ``threading.Event`` or :class:`~kinformer.Context`) fires or
    :meth:`stop` (or :meth:`shutdown`, the same) is called; :meth:`stop` also waits until every
    informer thread ended, and after it nothing starts again. There is no blocking ``run``.
    Handlers run on the informers' handler threads, never under the manager's lock.

    kinformer's difference from fleet: with ``list_complete=True``, a dynamic type missing from
    the list has its informer stopped (cancelled, then joined) and dropped; when the type comes
    back, a fresh informer with the same handler starts on the next :meth:`start`.

    ``default_resync`` is every informer's resync period in seconds (0: never); ``profile``
    (``"modern"`` or ``"classic"``), ``detect_mutations`` (see
    :meth:`SharedIndexInformer.check_mutations`) and ``compact`` (a compact cache, see
    :class:`~kinformer.SharedIndexInformer`) are handed to each informer.

    Example, with ``api_client`` an ``ApiClient``, ``stop`` a ``threading.Event`` and
    ``handler`` a :class:`~kinformer.ResourceEventHandler` (the ``0`` is the default resync
    period: no resync)::

        discovery = CachedDiscoveryClient(api_client)
        configmaps = GroupVersionResource("", "v1", "configmaps")
        with InformerManager(api_client, 0, stop) as manager:
            manager.add_dynamic_resources(discovery.server_resources().preferred_resources(),
                                          handler, list_complete=True)
            manager.start()
            manager.wait_for_cache_sync(timeout=30)
            web = manager.lister(configmaps).by_namespace("default").list("app=web")
    """

    def __init__(
        self,
        client: Any,
        default_resync: float = 0,
        parent_stop: context.StopSignal | None = None,
        *,
        profile: str = "modern",
        detect_mutations: bool | None = None,
        compact: bool = False,
    ) -> None:
        self._client = client
        self._factory = factory.DynamicSharedInformerFactory(
            client, default_resync, profile=profile, detect_mutations=detect_mutations,
            compact=compact)
        parent = parent_stop if parent_stop is not None else context.Context("informer-manager")
        self._parent = parent
        self._ctx, self._cancel = context.context_for_channel(parent)
        # serialises add_*, stop: an informer being dropped cannot race the type's return
        self._update_lock = threading.Lock()
        self._lock = threading.Lock()  # guards _records, _pending
        self._records: dict[GroupVersionKind, _Record] = {}
        # add_event_handler_to_informer for a type not tracked yet: already on the informer,
        # and handed to the type's record when it is tracked, so a fresh informer gets them too
        self._pending: dict[GroupVersionResource, list[handlers.ResourceEventHandler]] = {}

    # -- what exists ------------------------------------------------------------------------------

    def add_dynamic_resources(
        self,
        resources: Iterable[APIResourceMeta],
        handler: handlers.ResourceEventHandler,
        list_complete: bool,
    ) -> None:
        """Track ``resources`` and register ``handler`` on each new type's informer, once per type.

        A type seen before (even while absent) keeps its one registration. A kind listed with
        another scope takes the new one; a kind listed under another resource (plural) has its
        old informer stopped and a fresh one on the new resource, with the same handlers. With
        ``list_complete`` (discovery fully succeeded) every tracked dynamic type missing from
        ``resources`` is marked absent and its informer stopped and dropped. Stopping blocks
        until the informer's threads ended; do not call this from a handler of such a type.
        Starts nothing.
        """
        listed = [_resource_meta(meta) for meta in resources]
        to_stop: list[GroupVersionResource] = []
        with self._update_lock:
            with self._lock:
                names = {meta.group_version_kind for meta in listed}
                for meta in listed:
                    to_stop.extend(self._track_dynamic(meta, [handler]))
                if list_complete:
                    for gvk, record in self._records.items():
                        if record.is_static or not record.is_present or gvk in names:
                            continue
                        record.is_present = False
                        record.stopped = True
                        to_stop.append(record.meta.group_version_resource)
            self._stop_informers(to_stop)

    def add_static_resource(self, resource: APIResourceMeta, handler: handlers.ResourceEventHandler) -> None:
        """Track a type the caller always watches and register ``handler`` on its informer.

        A static type is never marked present, absent or stopped by
        :meth:`add_dynamic_resources`. Adding one that is already tracked logs an error and
        registers ``handler`` as well (fleet does the same). ``TypeError`` for what is not an
        :class:`~kinformer.APIResourceMeta` (a bare ``GroupVersionResource`` names no kind).
        """
        resource = _resource_meta(resource)
        gvr = resource.group_version_resource
        to_stop: list[GroupVersionResource] = []
        with self._update_lock:
            with self._lock:
                record = self._records.get(resource.group_version_kind)
                if record is None:
                    pending = self._pending.pop(gvr, [])
                    record = _Record(resource, [handler, *pending], is_static=True)
                    self._records[resource.group_version_kind] = record
                    self._register(record, [handler])  # the pending ones are on the informer already
                    return
                log.error("resource %s is already tracked; adding it as static anyway",
                          resource.group_version_kind)
                old_gvr = record.meta.group_version_resource
                record.meta = resource
                record.is_static = True
                record.is_present = False
                record.handlers.append(handler)
                if gvr != old_gvr:  # the kind given under another resource: its handlers move there
                    to_stop = self._move(record, old_gvr)
                elif record.stopped:  # its informer was dropped: a fresh one gets every handler
                    record.stopped = False
                    self._register(record)
                else:
                    self._factory.for_resource(gvr).informer().add_event_handler(handler)
            self._stop_informers(to_stop)

    def create_informer_for_resource(self, resource: APIResourceMeta) -> None:
        """Track a dynamic type and create its informer without a handler (fleet's newer API).

        A type already tracked but absent is marked present again (and gets a fresh informer if
        its old one was stopped); a changed scope or resource is taken as
        :meth:`add_dynamic_resources` takes it. A handler given to
        :meth:`add_event_handler_to_informer` before stays with the type. Starts nothing.
        """
        resource = _resource_meta(resource)
        with self._update_lock:
            with self._lock:
                to_stop = self._track_dynamic(resource, [])
            self._stop_informers(to_stop)

    def add_event_handler_to_informer(
        self, gvr: GroupVersionResource, handler: handlers.ResourceEventHandler
    ) -> None:
        """Register ``handler`` on the informer of ``gvr`` unless one was registered there already.

        Idempotent per type, whatever the handler (fleet's fix for duplicate registrations). The
        type keeps the handler across a stop and return of its informer, also when the handler
        came before the type was tracked.
        """
        with self._update_lock, self._lock:
            records = [r for r in self._records.values() if r.meta.group_version_resource == gvr]
            if gvr in self._pending or any(r.handlers for r in records):
                return
            for record in records:
                record.handlers.append(handler)
            if not records:
                self._pending[gvr] = [handler]  # the type's record takes it when tracked
            elif records[0].stopped:
                return  # registered on the fresh informer when the type returns
            self._factory.for_resource(gvr).informer().add_event_handler(handler)

    def _track_dynamic(
        self, meta: APIResourceMeta, first_handlers: list[handlers.ResourceEventHandler]
    ) -> list[GroupVersionResource]:
        """Track a new dynamic type with ``first_handlers``, or mark an absent one present again.

        A returning type whose informer was stopped gets a fresh one with its own handlers;
        ``first_handlers`` are used only for a type not tracked before. A dynamic type listed
        with another meta takes it; when its resource changed, a fresh informer on the new one
        gets its handlers. Returns the resources whose informers the caller stops once it let go
        of the lock (stopping joins handler threads, which may be waiting for the lock). Called
        with both locks held.
        """
        gvr = meta.group_version_resource
        record = self._records.get(meta.group_version_kind)
        if record is None:
            pending = self._pending.pop(gvr, [])
            record = _Record(meta, [*first_handlers, *pending], is_present=True)
            self._records[meta.group_version_kind] = record
            self._register(record, first_handlers)  # the pending ones are on the informer already
            return []
        old_gvr = record.meta.group_version_resource
        if not record.is_static and meta != record.meta:
            log.info("kind %s is now served as %s, %s", meta.group_version_kind, gvr.group_resource,
                     "cluster-scoped" if meta.is_cluster_scoped else "namespaced")
            record.meta = meta
            if gvr != old_gvr:
                record.is_present = True
                return self._move(record, old_gvr)
        if not record.is_present:
            record.is_present = True
            if record.stopped:
                record.stopped = False
                self._register(record)
        return []

    def _move(self, record: _Record, old_gvr: GroupVersionResource) -> list[GroupVersionResource]:
        """``record``'s kind now lives on the resource its meta names, not ``old_gvr``: its
        handlers go on that resource's (possibly fresh) informer; handlers given for the new
        resource before the kind moved there are on it already and join the kind's. Returns
        the resources whose informers the caller stops once it let go of the lock (the old one,
        unless it was stopped or another kind watches it). Called with both locks held."""
        moved = list(record.handlers)
        record.handlers.extend(self._pending.pop(record.meta.group_version_resource, []))
        to_stop = [old_gvr] if not record.stopped and not self._shared_with_another(record, old_gvr) else []
        record.stopped = False
        self._register(record, moved)
        return to_stop

    def _shared_with_another(self, record: _Record, gvr: GroupVersionResource) -> bool:
        """Whether a live record other than ``record`` watches ``gvr``; called with the lock held."""
        return any(
            r is not record and not r.stopped and r.meta.group_version_resource == gvr
            for r in self._records.values()
        )

    def _register(
        self, record: _Record, to_add: list[handlers.ResourceEventHandler] | None = None
    ) -> None:
        """Attach ``to_add`` (default: the record's handlers) to its (possibly fresh) informer.

        Called with the lock held.
        """
        gvr = record.meta.group_version_resource
        shared = self._factory.for_resource(gvr).informer()
        if not record.is_static:
            try:
                shared.set_transform(strip_managed_fields)
            except errors.AlreadyStartedError:
                log.error("informer for %s already started; managedFields stay in its cache",
                          gvr.group_resource)
        for handler in record.handlers if to_add is None else to_add:
            shared.add_event_handler(handler)

    def _stop_informers(self, gvrs: list[GroupVersionResource]) -> None:
        """Stop and drop the informers of ``gvrs``, joining their threads; called with the update
        lock held and the lock let go."""
        for gvr in gvrs:
            log.info("resource %s is gone; stopping its informer", gvr.group_resource)
            self._factory.stop_informer(gvr)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every informer not started yet; does not block; idempotent; a no-op after stop.

        Also a no-op once ``parent_stop`` is set, even before the thread bridging a plain Event
        to the manager's context has cancelled it.
        """
        if isinstance(self._parent, threading.Event) and self._parent.is_set():
            self._cancel()
        if self._ctx.cancelled():
            return
        self._factory.start(self._ctx)

    def stop(self) -> None:
        """Stop every informer and wait until their threads ended; idempotent."""
        with self._update_lock:
            self._cancel()
            self._factory.shutdown()

    def shutdown(self) -> None:
        """:meth:`stop` by the name the factories use: stop every informer and join its threads."""
        self.stop()

    def __enter__(self) -> InformerManager:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Block until every started informer synced (True), or stop or ``timeout`` (False).

        Covers the informers started so far, including ones created by :meth:`lister` or
        :meth:`is_informer_synced` and started since.
        """
        synced = self._factory.wait_for_cache_sync(self._ctx, timeout)
        return all(synced.values())

    # -- reads ------------------------------------------------------------------------------------

    def is_informer_synced(self, gvr: GroupVersionResource) -> bool:
        """Whether the informer of ``gvr`` synced.

        Creates an unstarted informer for a type never seen (fleet does), which the next
        :meth:`start` runs; a tracked type whose informer was stopped because it left the server
        just answers False.
        """
        with self._lock:
            if any(r.stopped and r.meta.group_version_resource == gvr for r in self._records.values()):
                return False
        return self._factory.for_resource(gvr).informer().has_synced()

    def lister(self, gvr: GroupVersionResource) -> GenericLister:
        """A lister over the cache of ``gvr``; creates the informer if needed (it fills after start).

        Asking for a type that left the server creates an informer the next :meth:`start` runs,
        relisting 404s until the type returns; look first with :meth:`get_all_resources`.
        """
        return self._factory.for_resource(gvr).lister()

    def get_name_space_scoped_resources(self) -> list[GroupVersionResource]:
        """Present, dynamic, namespaced types (unordered)."""
        with self._lock:
            return [
                r.meta.group_version_resource
                for r in self._records.values()
                if r.is_present and not r.is_static and not r.meta.is_cluster_scoped
            ]

    def get_all_resources(self) -> list[GroupVersionResource]:
        """Every present dynamic type (unordered); static types are not reported."""
        with self._lock:
            return [r.meta.group_version_resource for r in self._records.values() if r.is_present]

    def is_cluster_scoped_resources(self, gvk: GroupVersionKind) -> bool:
        """Whether the tracked kind ``gvk`` is cluster-scoped; False when it is not tracked."""
        with self._lock:
            record = self._records.get(gvk)
            return record is not None and record.meta.is_cluster_scoped

    def get_client(self) -> Any:
        """The client the informers list and watch through."""
        return self._client

    def __repr__(self) -> str:
        return f"<InformerManager resources={len(self._records)}>"


def _resource_meta(resource: Any) -> APIResourceMeta:
    """``resource`` when it is an :class:`~kinformer.APIResourceMeta`, else ``TypeError``:
    caught where it is given, not on the thread that would later read its kind."""
    if not isinstance(resource, APIResourceMeta):
        raise TypeError(
            f"an InformerManager tracks APIResourceMeta(GroupVersionKind(...), "
            f"GroupVersionResource(...)), not {resource!r}")
    return resource
