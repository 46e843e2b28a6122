"""Storage of the fake API server: objects, one resourceVersion, list pages, watch registration.

Like etcd behind kube-apiserver, one counter versions every write of every type. Each write
serializes the object once; lists join the cached bytes and watch events reuse them. Every write
goes, under the storage lock, to the watch cache (:mod:`.watch_cache`), which keeps the bounded
history that serves watches and ``Exact`` lists from older versions and fans each event out to
the open watchers without ever waiting. How a write shapes the object lives in
:mod:`.strategy`; the snapshots and continue tokens of paged lists in :mod:`.paging`.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kinformer import _gc
from kinformer.testing._apiserver import (
    defaults,
    fieldmanager,
    paging,
    resources,
    status,
    strategy,
    watch_cache,
)
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
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.watchers import EVENT, INITIAL, INITIAL_END, Watcher


class Storage:
    """Every object of every served type, the resourceVersion counter, history and watchers.

    Thread-safe: one condition guards all state. Stored dicts are never mutated after a write;
    callers get them read-only (``Entry.obj``) or copy them.
    """

    def __init__(
        self,
        history_size: int = 10_000,
        max_backlog: int = 200_000,
        future_rv_wait: float = 3.0,
    ) -> None:
        self.future_rv_wait = future_rv_wait
        # guards every attribute below; _rv only grows; _cache.compacted <= _rv
        self._lock = threading.Condition()
        self._rv = 1
        self._cache = watch_cache.WatchCache(history_size, max_backlog)
        self._buckets: dict[str, dict[tuple[str, str], Entry]] = {}
        self._sorted: dict[str, list[tuple[str, str]]] = {}
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}
        self._snapshots: collections.OrderedDict[int, paging.Snapshot] = collections.OrderedDict()
        self._snapshot_ids = itertools.count(1)
        self._allocate = defaults.Allocator()
        for rt in resources.BUILTIN_TYPES:
            self._types[(rt.group, rt.version, rt.resource)] = rt
        ns_type = self.resolve("", "v1", "namespaces")
        sa_type = self.resolve("", "v1", "serviceaccounts")
        assert ns_type is not None and sa_type is not None
        self._ns_type = ns_type
        self._sa_type = sa_type
        for name in resources.DEFAULT_NAMESPACES:
            self.create(ns_type, "", {"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]},
                                      "status": {"phase": "Active"}})

    # ---- types -------------------------------------------------------------------------------

    def resolve(self, group: str, version: str, resource: str) -> ResourceType | None:
        """The served type at this group/version/resource, or None."""
        with self._lock:
            return self._types.get((group, version, resource))

    def types(self) -> list[ResourceType]:
        """Every served type, built-ins first, in a stable order."""
        with self._lock:
            return list(self._types.values())

    def find_by_resource(self, group: str, resource: str) -> ResourceType | None:
        """Any served version of ``resource`` in ``group`` (for server-side helpers)."""
        with self._lock:
            for rt in self._types.values():
                if rt.group == group and rt.resource == resource:
                    return rt
        return None

    # ---- reads -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        """The current entry; 404 when absent."""
        with self._lock:
            entry = self._buckets.get(rt.group_resource, {}).get((namespace, name))
        if entry is None:
            raise status.not_found(rt, name)
        return entry

    def entries(self, rt: ResourceType, namespace: str = "") -> list[Entry]:
        """Current entries of a type (in one namespace if given), sorted by namespace and name."""
        with self._lock:
            bucket = self._buckets.get(rt.group_resource, {})
            return [bucket[k] for k in self._sorted_keys(rt.group_resource)
                    if not namespace or k[0] == namespace]

    def list_page(
        self,
        rt: ResourceType,
        namespace: str,
        match: Callable[[dict[str, Any]], bool] | None,
        limit: int,
        token: str,
        rv_text: str,
        rv_match: str,
    ) -> tuple[list[Entry], int, str, int | None]:
        """One page of a list: (entries, list resourceVersion, continue token, remaining count).

        Follows kube-apiserver: a continue token pages through the snapshot taken by the first
        page; ``Exact`` lists reconstruct an older state from history (410 once compacted);
        other lists serve current data; a version from the future waits, then answers 504.
        """
        gr = rt.group_resource
        with self._lock:
            if token:
                snap_id, start, token_rv = paging.decode_token(token)
                snap = self._snapshots.get(snap_id)
                if snap is None or snap.rv != token_rv or token_rv < self._cache.compacted:
                    raise status.expired(
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue parameter."
                    )
                self._snapshots.move_to_end(snap_id)
                items, list_rv = snap.items, snap.rv
            else:
                start = 0
                wanted = int(rv_text) if rv_text else 0
                self._wait_for_version(wanted)
                if rv_match == "Exact":
                    state = self._cache.state_at(self._buckets.get(gr, {}), gr, wanted)
                    keys = sorted(state)
                    list_rv = wanted
                else:
                    state = self._buckets.get(gr, {})
                    keys = self._sorted_keys(gr)
                    list_rv = self._rv
                if namespace:
                    keys = [k for k in keys if k[0] == namespace]
                if match is None:
                    items = [state[k] for k in keys]
                else:
                    items = [e for e in (state[k] for k in keys) if match(e.obj)]
                if rv_text == "0":
                    limit = 0  # served from the watch cache, which ignores limit
            end = start + limit if limit > 0 else len(items)
            if end >= len(items):
                return items[start:], list_rv, "", None
            if token:
                new_token = paging.encode_token(snap_id, end, list_rv)
            else:
                new_id = next(self._snapshot_ids)
                self._snapshots[new_id] = paging.Snapshot(list_rv, items)
                while len(self._snapshots) > paging.MAX_SNAPSHOTS:
                    self._snapshots.popitem(last=False)
                new_token = paging.encode_token(new_id, end, list_rv)
            return items[start:end], list_rv, new_token, len(items) - end

    def _sorted_keys(self, gr: str) -> list[tuple[str, str]]:
        keys = self._sorted.get(gr)
        if keys is None:
            keys = sorted(self._buckets.get(gr, {}))
            self._sorted[gr] = keys
        return keys

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

    def watch(self, watcher: Watcher, rv_text: str, send_initial: bool) -> None:
        """Register ``watcher``, queueing what it must see first.

        With ``rv_text`` "" or "0", or ``send_initial``, a synthetic ADDED for every current
        object (then an INITIAL_END marker when ``send_initial``); otherwise every history event
        after that version. Raises 410 (too old) or 504 (from the future) without registering.
        """
        rt = watcher.rt
        gr = rt.group_resource
        ns = watcher.namespace
        put = watcher.queue.put
        with self._lock:
            if send_initial or rv_text in ("", "0"):
                if rv_text not in ("", "0"):
                    self._wait_for_version(int(rv_text))
                bucket = self._buckets.get(gr, {})
                for key in self._sorted_keys(gr):
                    if not ns or key[0] == ns:
                        put((INITIAL, bucket[key]))
                        watcher.initial_left += 1
                if send_initial:
                    put((INITIAL_END, self._rv))
                watcher.last_rv = self._rv
            else:
                since = int(rv_text)
                self._wait_for_version(since)
                for ev in self._cache.since(since, gr, ns):
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

    def watcher_count(self, gr: str) -> int:
        with self._lock:
            return self._cache.count(gr)

    def wait_for_watchers(self, gr: str, count: int, timeout: float) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._cache.count(gr) >= count, timeout)

    def signal_watchers(self, tag: str, payload: Any = None, gr: str | None = None) -> int:
        """Put ``(tag, payload)`` into every open watcher's queue (of one type if ``gr``)."""
        with self._lock:
            return self._cache.signal(tag, payload, gr)

    # ---- writes ------------------------------------------------------------------------------

    def _commit(
        self, rt: ResourceType, type_: str, obj: dict[str, Any] | None, prev: Entry | None,
        namespace: str, name: str,
    ) -> Entry:
        """Apply one write (lock held): bump the version, store, record history, fan out."""
        gr = rt.group_resource
        self._rv += 1
        rv = self._rv
        bucket = self._buckets.setdefault(gr, {})
        key = (namespace, name)
        if type_ == DELETED:
            assert prev is not None
            final = with_resource_version(obj if obj is not None else prev.obj, rv)
            entry = encode(rt, final if rt.custom else ordered(final), rv)
            del bucket[key]
            self._sorted.pop(gr, None)
        else:
            assert obj is not None
            obj["metadata"]["resourceVersion"] = str(rv)
            entry = encode(rt, obj if rt.custom else ordered(obj), rv)
            if key not in bucket:
                self._sorted.pop(gr, None)
            bucket[key] = entry
        self._cache.record(Event(type_, rt, namespace, name, entry, prev))
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
        writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        """Create ``obj`` (a fresh dict the storage may keep); 404/409/422/400 as the server does.

        ``writer`` is who creates it through the API (None: the server itself, see
        :func:`.strategy.stamp_create`). With ``dry_run`` everything is checked and the would-be
        object returned, nothing stored.
        """
        with self._lock:
            return self._create_locked(rt, namespace, obj, dry_run, writer)

    def bulk_create(self, rt: ResourceType, objs: Iterable[Any]) -> int:
        """Create many objects, all or none, under one lock hold; returns the last resourceVersion.

        Each is checked and stamped as :meth:`create` does (by the server itself, ``writer``
        None) before any is stored: the first one a create would refuse, or whose name comes
        twice, raises its StatusError, its message beginning with the item's position and
        name, and nothing is stored. Then each is stored in order, with its own version and
        event. The cyclic collector is paused meanwhile (:func:`kinformer._gc.paused`), so it
        does not walk the growing store again and again.
        """
        with _gc.paused(), self._lock:
            admitted: list[tuple[dict[str, Any], str, str]] = []
            keys: set[tuple[str, str]] = set()
            for index, obj in enumerate(objs):
                try:
                    namespace, name = self._admit_locked(rt, _namespace_of(rt, obj), obj, None)
                    if (namespace, name) in keys:
                        raise status.already_exists(rt, name)
                except status.StatusError as err:
                    raise status.for_item(err, index, obj) from None
                keys.add((namespace, name))
                admitted.append((obj, namespace, name))
            for obj, namespace, name in admitted:
                self._store_created_locked(rt, obj, namespace, name)
            return self._rv

    def _create_locked(
        self, rt: ResourceType, namespace: str, obj: Any, dry_run: bool = False,
        writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        namespace, name = self._admit_locked(rt, namespace, obj, writer)
        if dry_run:
            return encode(rt, obj if rt.custom else ordered(obj), self._rv)
        return self._store_created_locked(rt, obj, namespace, name)

    def _admit_locked(
        self, rt: ResourceType, namespace: str, obj: Any, writer: fieldmanager.Writer | None,
    ) -> tuple[str, str]:
        """Check a create of ``obj`` and stamp it, storing nothing: ``(namespace, name)``."""
        meta, namespace, name = strategy.settle_create(rt, namespace, obj)
        if rt.namespaced and ("", namespace) not in self._buckets.get("namespaces", {}):
            raise status.namespace_not_found(namespace)
        if (namespace, name) in self._buckets.get(rt.group_resource, {}):
            raise status.already_exists(rt, name)
        strategy.stamp_create(rt, name, obj, meta, self._allocate, writer)
        return namespace, name

    def _store_created_locked(self, rt: ResourceType, obj: Any, namespace: str, name: str) -> Entry:
        """Store an admitted object: its version, its event, and what its type's creation does."""
        entry = self._commit(rt, ADDED, obj, None, namespace, name)
        if strategy.is_crd(rt):
            self._serve_crd(entry.obj)
        elif rt is self._ns_type:
            # the service account controller's part: every namespace has a "default" one
            self._create_locked(self._sa_type, name, {"metadata": {"name": "default"}})
        return entry

    def update(
        self, rt: ResourceType, namespace: str, name: str, obj: Any, subresource: str = "",
        dry_run: bool = False, writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        """Replace an object (PUT): 404 when missing, 409 on a stale resourceVersion."""
        with self._lock:
            return self._update_locked(rt, namespace, name, obj, subresource, dry_run, writer)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        apply: Callable[[dict[str, Any]], Any],
        subresource: str = "",
        dry_run: bool = False,
        writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        """Apply ``apply`` to a private copy of the current object and store the result.

        A result carrying a resourceVersion other than the current one is 409 Conflict.
        """
        with self._lock:
            current = self._buckets.get(rt.group_resource, {}).get((namespace, name))
            if current is None:
                raise status.not_found(rt, name)
            patched = apply(loads(current.data))
            if not isinstance(patched, dict):
                raise status.bad_request("the patch produced an object that is not a JSON object")
            meta = patched.get("metadata")
            if isinstance(meta, dict) and meta.get("resourceVersion") in (None, ""):
                meta["resourceVersion"] = str(current.rv)
            return self._update_locked(rt, namespace, name, patched, subresource, dry_run,
                                       writer)

    def _update_locked(
        self, rt: ResourceType, namespace: str, name: str, obj: Any, subresource: str,
        dry_run: bool = False, writer: fieldmanager.Writer | None = None,
    ) -> Entry:
        current = self._buckets.get(rt.group_resource, {}).get((namespace, name))
        if current is None:
            raise status.not_found(rt, name)
        new = strategy.prepare_update(rt, current, obj, namespace, name, subresource, writer)
        old = current.obj
        if new == old or dry_run:
            return current if new == old else encode(rt, new if rt.custom else ordered(new),
                                                     current.rv)
        new_meta = new["metadata"]
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            # the last finalizer is gone from an object being deleted: now it goes
            return self._finish_delete(rt, current, namespace, name, new)
        entry = self._commit(rt, MODIFIED, new, current, namespace, name)
        if strategy.is_crd(rt):
            self._serve_crd(entry.obj)
        return entry

    def delete(
        self, rt: ResourceType, namespace: str, name: str,
        preconditions: dict[str, Any] | None = None, dry_run: bool = False,
    ) -> tuple[Entry, bool]:
        """Delete an object: ``(its final state, whether it is gone)``.

        An object with finalizers is only marked (``deletionTimestamp``, a MODIFIED event) and
        stays until an update removes its last finalizer. A Pod goes at once (the server has no
        kubelet to wait for), its final state marked as deleted with a grace period of 0.
        Deleting a Namespace deletes everything in it (DELETED events) and then itself,
        answering its Terminating state; deleting a CRD deletes its objects, ends its watches
        cleanly and stops serving it.
        """
        with self._lock:
            gr = rt.group_resource
            current = self._buckets.get(gr, {}).get((namespace, name))
            if current is None:
                raise status.not_found(rt, name)
            strategy.check_preconditions(rt, name, current, preconditions)
            meta = current.obj["metadata"]
            held = bool(meta.get("finalizers")) and gr != "namespaces"
            if dry_run or (held and meta.get("deletionTimestamp")):
                return current, not held
            if gr == "namespaces":
                return self._delete_namespace(current, name), True
            if held:
                marked = strategy.mark_deleting(loads(current.data))
                return self._commit(rt, MODIFIED, marked, current, namespace, name), False
            if gr == "pods":
                # graceful deletion with no kubelet to wait for: a grace period of 0, gone at once
                final = strategy.mark_deleting(loads(current.data))
                return self._finish_delete(rt, current, namespace, name, final), True
            return self._finish_delete(rt, current, namespace, name), True

    def _finish_delete(
        self, rt: ResourceType, current: Entry, namespace: str, name: str,
        final: dict[str, Any] | None = None,
    ) -> Entry:
        if strategy.is_crd(rt):
            self._unserve_crd(current.obj)
        return self._commit(rt, DELETED, final, current, namespace, name)

    def _delete_namespace(self, current: Entry, name: str) -> Entry:
        terminating = loads(current.data)
        terminating["metadata"]["deletionTimestamp"] = now_timestamp()
        terminating.setdefault("status", {})["phase"] = "Terminating"
        reply = self._commit(self._ns_type, MODIFIED, terminating, current, "", name)
        for rt in list(self._types.values()):
            if not rt.namespaced:
                continue
            bucket = self._buckets.get(rt.group_resource, {})
            for key in [k for k in self._sorted_keys(rt.group_resource) if k[0] == name]:
                if key in bucket:
                    self._commit(rt, DELETED, None, bucket[key], key[0], key[1])
        self._commit(self._ns_type, DELETED, None, reply, "", name)
        return reply

    # ---- CRDs --------------------------------------------------------------------------------

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        crd_name = str(crd["metadata"]["name"])
        for rt in self._crd_types.pop(crd_name, []):
            self._types.pop((rt.group, rt.version, rt.resource), None)
        served = resources.types_from_crd(crd)
        for rt in served:
            self._types[(rt.group, rt.version, rt.resource)] = rt
        self._crd_types[crd_name] = served

    def _unserve_crd(self, crd: dict[str, Any]) -> None:
        crd_name = str(crd["metadata"]["name"])
        served = self._crd_types.pop(crd_name, [])
        if not served:
            return
        rt = served[0]
        gr = rt.group_resource
        bucket = self._buckets.get(gr, {})
        for key in list(self._sorted_keys(gr)):
            self._commit(rt, DELETED, None, bucket[key], key[0], key[1])
        self._cache.end(gr)
        for t in served:
            self._types.pop((t.group, t.version, t.resource), None)
        self._buckets.pop(gr, None)
        self._sorted.pop(gr, None)
        self._lock.notify_all()


def _namespace_of(rt: ResourceType, obj: Any) -> str:
    """The namespace a server-side create of ``obj`` goes to: its own, for a namespaced type."""
    if not rt.namespaced or not isinstance(obj, dict):
        return ""
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""
