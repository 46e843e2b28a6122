"""Storage of the fake API server: objects, one resourceVersion, list pages, watch registration.

Like etcd behind kube-apiserver, one counter versions every write of every type. Each write
serializes the object once; lists join the cached bytes and watch events reuse them. Every write
goes, under the storage lock, to the watch cache (:mod:`.watch_cache`), which keeps the bounded
history that serves watches and ``Exact`` lists from older versions and fans each event out to
the open watchers without ever waiting. How a write shapes the object lives in
:mod:`~kinformer.testing._apiserver.registry.strategy`; the snapshots and continue tokens of
paged lists in :mod:`.paging`.

Objects live in one :class:`~.keyspace.Keyspace` per logical cluster
(:mod:`~kinformer.testing._apiserver.clusters`): a server without logical clusters has only the
root's. Every method takes ``cluster`` (the root by default); reads also take the wildcard,
which reads every logical cluster at once, in the order of their names. A logical cluster comes
into being the first time it is named, with the namespaces a new cluster starts with.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kinformer import _gc
from kinformer.testing._apiserver import clusters, resources, status
from kinformer.testing._apiserver.clusters import ROOT, WILDCARD
from kinformer.testing._apiserver.records import (
    ADDED,
    DELETED,
    MODIFIED,
    Entry,
    Event,
    encode,
    loads,
    now_timestamp,
    ordered,
    with_resource_version,
)
from kinformer.testing._apiserver.registry import defaults, fieldmanager, strategy
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.storage import keyspace, paging, watch_cache
from kinformer.testing._apiserver.storage.keyspace import Keyspace
from kinformer.testing._apiserver.storage.watchers import EVENT, INITIAL, INITIAL_END, Watcher


class Storage:
    """Every object of every served type, the resourceVersion counter, history and watchers.

    Thread-safe: one condition guards all state. Stored dicts are never mutated after a write;
    callers get them read-only (``Entry.obj``) or copy them. With ``logical_clusters`` every
    write sets the object's ``kcp.io/cluster`` annotation to its cluster's name.
    """

    def __init__(
        self,
        history_size: int = 10_000,
        max_backlog: int = 200_000,
        future_rv_wait: float = 3.0,
        logical_clusters: bool = False,
    ) -> None:
        self.future_rv_wait = future_rv_wait
        self.logical_clusters = logical_clusters
        # guards every attribute below; _rv only grows; _cache.compacted <= _rv
        self._lock = threading.Condition()
        self._rv = 1
        self._cache = watch_cache.WatchCache(history_size, max_backlog)
        self._spaces: dict[str, Keyspace] = {}
        self._in_order: list[Keyspace] | None = None  # _spaces by name; None after a new one
        self._snapshots = paging.Snapshots()
        self._allocate = defaults.Allocator()
        builtin = {rt.group_resource: rt for rt in resources.BUILTIN_TYPES}
        self._ns_type = builtin["namespaces"]
        self._sa_type = builtin["serviceaccounts"]
        self._svc_type = builtin["services"]
        with self._lock:
            self._space(ROOT)

    # ---- logical clusters --------------------------------------------------------------------

    def _space(self, cluster: str) -> Keyspace:
        """The keyspace of ``cluster`` (lock held), made and seeded when first named; 404 for
        a cluster other than the root without logical clusters, 405 for the wildcard."""
        space = self._spaces.get(cluster)
        if space is not None:
            return space
        if cluster == WILDCARD:
            raise status.method_not_allowed()
        if cluster != ROOT and not self.logical_clusters:
            raise status.path_not_found()
        space = Keyspace(clusters.check_name(cluster))
        self._spaces[cluster] = space
        self._in_order = None
        for name in resources.DEFAULT_NAMESPACES:
            self._create_locked(space, self._ns_type, "", {
                "metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}})
        self._create_locked(space, self._svc_type, "default", resources.kubernetes_service())
        return space

    def _spaces_for(self, cluster: str) -> list[Keyspace]:
        """The keyspaces a read of ``cluster`` covers (lock held): one, or all by name."""
        if cluster != WILDCARD:
            return [self._space(cluster)]
        spaces = self._in_order
        if spaces is None:
            spaces = self._in_order = [self._spaces[n] for n in sorted(self._spaces)]
        return spaces

    # ---- types -------------------------------------------------------------------------------

    def resolve(self, group: str, version: str, resource: str,
                cluster: str = ROOT) -> ResourceType | None:
        """The served type at this group/version/resource in ``cluster``, or None.

        Across clusters: the type as the first cluster (by name) serving it defines it.
        """
        key = (group, version, resource)
        with self._lock:
            for space in self._spaces_for(cluster):
                rt = space.types.get(key)
                if rt is not None:
                    return rt
            return None

    def types(self, cluster: str = ROOT) -> list[ResourceType]:
        """Every type served in ``cluster`` (across clusters: by any), built-ins first, in a
        stable order."""
        with self._lock:
            return keyspace.types_across(self._spaces_for(cluster))

    # ---- reads -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def get(self, rt: ResourceType, namespace: str, name: str, cluster: str = ROOT) -> Entry:
        """The current entry; 404 when absent."""
        with self._lock:
            entry = self._space(cluster).buckets.get(rt.group_resource, {}).get((namespace, name))
        if entry is None:
            raise status.not_found(rt, name)
        return entry

    def entries(self, rt: ResourceType, namespace: str = "", cluster: str = ROOT) -> list[Entry]:
        """Current entries of a type (in one namespace if given), sorted by namespace and name
        (across clusters: by cluster first)."""
        with self._lock:
            return keyspace.entries(self._spaces_for(cluster), rt.group_resource, namespace)

    def list_page(
        self,
        rt: ResourceType,
        namespace: str,
        match: Callable[[dict[str, Any]], bool] | None,
        limit: int,
        token: str,
        rv_text: str,
        rv_match: str,
        cluster: str = ROOT,
    ) -> tuple[list[Entry], int, str, int | None]:
        """One page of a list: (entries, list resourceVersion, continue token, remaining count).

        Follows kube-apiserver: a continue token pages through the snapshot taken by the first
        page, each page filtered by its own request's ``match``; ``Exact`` lists, and those
        with a version and a ``limit`` but no ``resourceVersionMatch``, reconstruct an older
        state from history (410 once compacted); other lists serve current data; a
        version from the future waits, then answers 504. A token from a list of another
        resource, namespace or logical cluster is 400; one whose snapshot is gone is 410 with
        an inconsistent token, which lists the rest from the current state. The remaining
        count is given only for a list without ``match``.
        """
        gr = rt.group_resource
        with self._lock:
            snap_id = None
            if token:
                snap, start, snap_id = self._snapshots.resume(
                    token, gr, namespace, cluster, self._cache.compacted,
                    lambda: (keyspace.entries(self._spaces_for(cluster), gr, namespace), self._rv))
                items, list_rv = snap.items, snap.rv
            else:
                start = 0
                wanted = int(rv_text) if rv_text else 0
                self._wait_for_version(wanted)
                # a version with a limit and no match is Exact: the semantics lists had before
                # resourceVersionMatch, which kube-apiserver keeps
                legacy_exact = not rv_match and limit > 0 and rv_text not in ("", "0")
                if rv_match == "Exact" or legacy_exact:
                    items = self._entries_at(gr, namespace, wanted, cluster)
                    list_rv = wanted
                else:
                    items = keyspace.entries(self._spaces_for(cluster), gr, namespace)
                    list_rv = self._rv
                if rv_text == "0":
                    limit = 0  # served from the watch cache, which ignores limit
            page, new_token, remaining = self._snapshots.page(
                items, list_rv, start, limit, match, gr, namespace, cluster, snap_id)
            return page, list_rv, new_token, remaining

    def _entries_at(self, gr: str, namespace: str, rv: int, cluster: str) -> list[Entry]:
        """The entries of ``gr`` at ``rv`` in key order (lock held); 410 once compacted."""
        if cluster != WILDCARD:
            state = self._cache.state_at(self._space(cluster).buckets.get(gr, {}), gr, rv,
                                         cluster)
        else:
            current = {(space.name, *key): entry for space in self._spaces_for(WILDCARD)
                       for key, entry in space.buckets.get(gr, {}).items()}
            state = self._cache.state_at(current, gr, rv, WILDCARD)
        keys = sorted(state)
        if namespace:
            keys = [k for k in keys if k[-2] == namespace]
        return [state[k] for k in keys]

    def _wait_for_version(self, wanted: int) -> None:
        """Wait (lock held, released while waiting) until ``wanted`` exists; 504 if it never does."""
        if wanted <= self._rv:
            return
        deadline = time.monotonic() + self.future_rv_wait
        while wanted > self._rv:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise status.too_large(wanted, self._rv)
            self._lock.wait(remaining)

    # ---- watch -------------------------------------------------------------------------------

    def watch(self, watcher: Watcher, rv_text: str, send_initial: bool | None = None,
              bookmarks: bool = False) -> None:
        """Register ``watcher`` (on its logical cluster, or across them), queueing what it must
        see first, as kube-apiserver's watch cache does.

        ``send_initial`` is the request's ``sendInitialEvents`` (None when absent). True: a
        synthetic ADDED for every current object (once the version ``rv_text`` names exists),
        then, only when ``bookmarks`` were allowed, an INITIAL_END marker. Absent with
        ``rv_text`` "" or "0": the same ADDED events, no marker. False with "" or "0": nothing
        before the live events (the watch starts at the current version). Otherwise every
        history event after that version. Raises 410 (too old) or 504 (from the future)
        without registering.
        """
        gr = watcher.rt.group_resource
        ns = watcher.namespace
        put = watcher.queue.put
        with self._lock:
            spaces = self._spaces_for(watcher.cluster)
            from_now = rv_text in ("", "0")
            if send_initial or (send_initial is None and from_now):
                if not from_now:
                    self._wait_for_version(int(rv_text))
                for entry in keyspace.entries(spaces, gr, ns):
                    put((INITIAL, entry))
                    watcher.initial_left += 1
                if send_initial and bookmarks:
                    put((INITIAL_END, self._rv))
                watcher.last_rv = self._rv
            elif from_now:
                watcher.last_rv = self._rv
            else:
                since = int(rv_text)
                self._wait_for_version(since)
                # without logical clusters every event is the root's: no need to filter
                only = watcher.cluster if self.logical_clusters else None
                for ev in self._cache.since(since, gr, ns,
                                            None if only == WILDCARD else only):
                    put((EVENT, ev))
                watcher.last_rv = since
            self._cache.add(watcher)
            self._lock.notify_all()

    def unwatch(self, watcher: Watcher) -> None:
        """Forget ``watcher``; idempotent."""
        with self._lock:
            self._cache.discard(watcher)
            self._lock.notify_all()

    def bookmark_version(self, watcher: Watcher) -> int | None:
        """The version a bookmark may carry now, or None while events are still pending."""
        with self._lock:
            if not watcher.queue.empty():
                return None
            watcher.last_rv = max(watcher.last_rv, self._rv)
            return watcher.last_rv

    def watcher_count(self, gr: str, cluster: str | None = None) -> int:
        """Open watches of ``gr`` on ``cluster`` (the wildcard: those across clusters; None:
        every one)."""
        with self._lock:
            return self._cache.count(gr, cluster)

    def wait_for_watchers(self, gr: str, count: int, timeout: float,
                          cluster: str | None = None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._cache.count(gr, cluster) >= count, timeout)

    def signal_watchers(self, tag: str, payload: Any = None, gr: str | None = None) -> int:
        """Put ``(tag, payload)`` into every open watcher's queue (of one type if ``gr``)."""
        with self._lock:
            return self._cache.signal(tag, payload, gr)

    # ---- writes ------------------------------------------------------------------------------

    def _commit(
        self, space: Keyspace, rt: ResourceType, type_: str, obj: dict[str, Any] | None,
        prev: Entry | None, namespace: str, name: str,
    ) -> Entry:
        """Apply one write (lock held): bump the version, store, record history, fan out."""
        gr = rt.group_resource
        self._rv += 1
        rv = self._rv
        bucket = space.buckets.setdefault(gr, {})
        key = (namespace, name)
        if type_ == DELETED:
            assert prev is not None
            final = with_resource_version(obj if obj is not None else prev.obj, rv)
            entry = encode(rt, final if rt.custom else ordered(final), rv)
            del bucket[key]
            space.sorted.pop(gr, None)
        else:
            assert obj is not None
            obj["metadata"]["resourceVersion"] = str(rv)
            entry = encode(rt, obj if rt.custom else ordered(obj), rv)
            if key not in bucket:
                space.sorted.pop(gr, None)
            bucket[key] = entry
        self._cache.record(Event(type_, rt, namespace, name, entry, prev, space.name))
        self._lock.notify_all()
        return entry

    def compact(self) -> int:
        """Drop all history and continue tokens: older versions now answer 410. Returns the RV."""
        with self._lock:
            self._cache.compact(self._rv)
            self._snapshots.clear()
            return self._rv

    def create(
        self, rt: ResourceType, namespace: str, obj: Any, dry_run: bool = False,
        writer: fieldmanager.Writer | None = None, cluster: str = ROOT,
    ) -> Entry:
        """Create ``obj`` (a fresh dict the storage may keep); 404/409/422/400 as the server does.

        ``writer`` is who creates it through the API (None: the server itself, see
        :func:`.strategy.stamp_create`). With ``dry_run`` everything is checked and the would-be
        object returned, nothing stored.
        """
        with self._lock:
            return self._create_locked(self._space(cluster), rt, namespace, obj, dry_run, writer)

    def bulk_create(self, rt: ResourceType, objs: Iterable[Any], cluster: str = ROOT) -> int:
        """Create many objects, all or none, under one lock hold; returns the last resourceVersion.

        Each is checked and stamped as :meth:`create` does (by the server itself, ``writer``
        None) before any is stored: the first one a create would refuse, or whose name comes
        twice, raises its StatusError, its message beginning with the item's position and
        name, and nothing is stored. Then each is stored in order, with its own version and
        event. The cyclic collector is paused meanwhile (:func:`kinformer._gc.paused`), so it
        does not walk the growing store again and again.
        """
        with _gc.paused(), self._lock:
            space = self._space(cluster)
            admitted: list[tuple[dict[str, Any], str, str]] = []
            keys: set[tuple[str, str]] = set()
            for index, obj in enumerate(objs):
                try:
                    namespace, name = self._admit_locked(
                        space, rt, _namespace_of(rt, obj), obj, None)
                    if (namespace, name) in keys:
                        raise status.already_exists(rt, name)
                except status.StatusError as err:
                    raise status.for_item(err, index, obj) from None
                keys.add((namespace, name))
                admitted.append((obj, namespace, name))
            for obj, namespace, name in admitted:
                self._store_created_locked(space, rt, obj, namespace, name)
            return self._rv

    def _create_locked(
        self, space: Keyspace, rt: ResourceType, namespace: str, obj: Any,
        dry_run: bool = False, writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        namespace, name = self._admit_locked(space, rt, namespace, obj, writer, dry_run)
        if dry_run:
            return encode(rt, obj if rt.custom else ordered(obj), self._rv)
        return self._store_created_locked(space, rt, obj, namespace, name)

    def _admit_locked(
        self, space: Keyspace, rt: ResourceType, namespace: str, obj: Any,
        writer: fieldmanager.Writer | None, dry_run: bool = False,
    ) -> tuple[str, str]:
        """Check a create of ``obj`` and stamp it, storing nothing: ``(namespace, name)``.

        Like etcd's storage, a create (not a dry run) whose ``metadata.resourceVersion`` is a
        number other than 0 is refused before the name is looked up (500)."""
        meta, namespace, name = strategy.settle_create(rt, namespace, obj)
        if rt.namespaced and ("", namespace) not in space.buckets.get("namespaces", {}):
            raise status.namespace_not_found(namespace)
        if not dry_run:
            strategy.check_no_resource_version(meta)
        if (namespace, name) in space.buckets.get(rt.group_resource, {}):
            raise status.already_exists(rt, name)
        strategy.stamp_create(rt, name, obj, meta, self._allocate, writer)
        if self.logical_clusters:
            clusters.annotate(meta, space.name)
        return namespace, name

    def _store_created_locked(
        self, space: Keyspace, rt: ResourceType, obj: Any, namespace: str, name: str,
    ) -> Entry:
        """Store an admitted object: its version, its event, and what its type's creation does."""
        entry = self._commit(space, rt, ADDED, obj, None, namespace, name)
        if strategy.is_crd(rt):
            space.serve_crd(entry.obj)
        elif rt is self._ns_type:
            # the service account controller's part: every namespace has a "default" one
            self._create_locked(space, self._sa_type, name, {"metadata": {"name": "default"}})
        return entry

    def update(
        self, rt: ResourceType, namespace: str, name: str, obj: Any, subresource: str = "",
        dry_run: bool = False, writer: fieldmanager.Writer | None = None, cluster: str = ROOT,
    ) -> Entry:
        """Replace an object (PUT): 404 when missing, 409 on a stale resourceVersion or a
        ``metadata.uid`` other than the stored one's."""
        with self._lock:
            return self._update_locked(self._space(cluster), rt, namespace, name, obj,
                                       subresource, dry_run, writer)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        apply: Callable[[dict[str, Any]], Any],
        subresource: str = "",
        dry_run: bool = False,
        writer: fieldmanager.Writer | None = None,
        cluster: str = ROOT,
    ) -> Entry:
        """Apply ``apply`` to a private copy of the current object and store the result.

        A result carrying a resourceVersion other than the current one is 409 Conflict.
        """
        with self._lock:
            space = self._space(cluster)
            current = space.buckets.get(rt.group_resource, {}).get((namespace, name))
            if current is None:
                raise status.not_found(rt, name)
            patched = apply(loads(current.data))
            if not isinstance(patched, dict):
                raise status.bad_request("the patch produced an object that is not a JSON object")
            meta = patched.get("metadata")
            if isinstance(meta, dict) and meta.get("resourceVersion") in (None, ""):
                meta["resourceVersion"] = str(current.rv)
            return self._update_locked(space, rt, namespace, name, patched, subresource,
                                       dry_run, writer, uid_precondition=False)

    def _update_locked(
        self, space: Keyspace, rt: ResourceType, namespace: str, name: str, obj: Any,
        subresource: str, dry_run: bool = False, writer: fieldmanager.Writer | None = None,
        uid_precondition: bool = True,
    ) -> Entry:
        current = space.buckets.get(rt.group_resource, {}).get((namespace, name))
        if current is None:
            raise status.not_found(rt, name)
        if self.logical_clusters:
            # the cluster's name, whatever the body says: it is nobody's field to change
            clusters.annotate_body(obj, space.name)
        new = strategy.prepare_update(rt, current, obj, namespace, name, subresource, writer,
                                      uid_precondition)
        old = current.obj
        if new == old or dry_run:
            return current if new == old else encode(rt, new if rt.custom else ordered(new),
                                                     current.rv)
        new_meta = new["metadata"]
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            # the last finalizer is gone from an object being deleted: now it goes
            return self._finish_delete(space, rt, current, namespace, name, new)
        entry = self._commit(space, rt, MODIFIED, new, current, namespace, name)
        if strategy.is_crd(rt):
            space.serve_crd(entry.obj)
        return entry

    def delete(
        self, rt: ResourceType, namespace: str, name: str,
        preconditions: dict[str, Any] | None = None, dry_run: bool = False,
        cluster: str = ROOT, gc_finalizer: str | None = None,
    ) -> tuple[Entry, bool]:
        """Delete an object: ``(its final state, whether it is gone)``.

        An object with finalizers is only marked (``deletionTimestamp``, a MODIFIED event) and
        stays until an update removes its last finalizer. ``gc_finalizer`` (``orphan`` or
        ``foregroundDeletion``, from the DELETE's propagationPolicy) is added first, as
        kube-apiserver adds it for the garbage collector; with no garbage collector here, the
        object stays until an update removes it. A Pod goes at once (the server has no
        kubelet to wait for), its final state marked as deleted with a grace period of 0.
        Deleting a Namespace deletes everything in it (DELETED events) and then itself,
        answering its Terminating state; deleting a CRD deletes its objects, ends its watches
        cleanly and stops serving it.
        """
        with self._lock:
            space = self._space(cluster)
            gr = rt.group_resource
            current = space.buckets.get(gr, {}).get((namespace, name))
            if current is None:
                raise status.not_found(rt, name)
            strategy.check_preconditions(rt, name, current, preconditions)
            meta = current.obj["metadata"]
            finalizers = meta.get("finalizers") or []
            deleting = bool(meta.get("deletionTimestamp"))
            add = gc_finalizer is not None and gr != "namespaces" and not deleting \
                and gc_finalizer not in finalizers
            held = (bool(finalizers) or add) and gr != "namespaces"
            if dry_run or (held and deleting):
                return current, not held
            if gr == "namespaces":
                return self._delete_namespace(space, current, name), True
            if held:
                marked = strategy.mark_deleting(loads(current.data))
                if add:
                    marked["metadata"]["finalizers"] = [*finalizers, gc_finalizer]
                return self._commit(space, rt, MODIFIED, marked, current, namespace, name), False
            if gr == "pods":
                # graceful deletion with no kubelet to wait for: a grace period of 0, gone at once
                final = strategy.mark_deleting(loads(current.data))
                return self._finish_delete(space, rt, current, namespace, name, final), True
            return self._finish_delete(space, rt, current, namespace, name), True

    def _finish_delete(
        self, space: Keyspace, rt: ResourceType, current: Entry, namespace: str, name: str,
        final: dict[str, Any] | None = None,
    ) -> Entry:
        if strategy.is_crd(rt):
            self._unserve_crd(space, current.obj)
        return self._commit(space, rt, DELETED, final, current, namespace, name)

    def _delete_namespace(self, space: Keyspace, current: Entry, name: str) -> Entry:
        terminating = loads(current.data)
        terminating["metadata"]["deletionTimestamp"] = now_timestamp()
        terminating.setdefault("status", {})["phase"] = "Terminating"
        reply = self._commit(space, self._ns_type, MODIFIED, terminating, current, "", name)
        for rt in list(space.types.values()):
            if not rt.namespaced:
                continue
            bucket = space.buckets.get(rt.group_resource, {})
            for key in [k for k in space.sorted_keys(rt.group_resource) if k[0] == name]:
                if key in bucket:
                    self._commit(space, rt, DELETED, None, bucket[key], key[0], key[1])
        self._commit(space, self._ns_type, DELETED, None, reply, "", name)
        return reply

    # ---- CRDs --------------------------------------------------------------------------------

    def _unserve_crd(self, space: Keyspace, crd: dict[str, Any]) -> None:
        """Delete a deleted CRD's objects (DELETED events), stop serving them and end their
        watches; those across logical clusters too once no cluster serves them."""
        served = space.unserve_crd(crd)
        if not served:
            return
        rt = served[0]
        gr = rt.group_resource
        bucket = space.buckets.get(gr, {})
        for key in list(space.sorted_keys(gr)):
            self._commit(space, rt, DELETED, None, bucket[key], key[0], key[1])
        self._cache.end(gr, space.name,
                        across=not any(s.serves(gr) for s in self._spaces.values()))
        space.buckets.pop(gr, None)
        space.sorted.pop(gr, None)
        self._lock.notify_all()


def _namespace_of(rt: ResourceType, obj: Any) -> str:
    """The namespace a server-side create of ``obj`` goes to: its own, for a namespaced type."""
    if not rt.namespaced or not isinstance(obj, dict):
        return ""
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""
