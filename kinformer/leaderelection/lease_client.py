"""LeaseClient: one ``coordination.k8s.io/v1`` Lease, read and written the way every user of one needs.

The leader elector's lock (:class:`~kinformer.leaderelection.lease_lock.LeaseLock`) and each
member of a shard group (:class:`~kinformer.leaderelection.shard_coordinator.ShardCoordinator`)
keep one Lease each, and talk to the server about it through a :class:`LeaseClient`: get,
create (with labels), update and delete, every request through the one request path
(:class:`kinformer.client.rest.Client`), bounded by a timeout per step and broken off when its
context is cancelled. The client keeps the Lease as it last read or wrote it, so an update
carries that resourceVersion (optimistic: a write based on a stale read fails with
:class:`~kinformer.ConflictError` instead of overwriting another replica's), and reads its
metadata through :mod:`kinformer.meta`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from kinformer import context as _context
from kinformer import errors, meta
from kinformer.cache.cluster import ALL_LOGICAL_CLUSTERS
from kinformer.client import rest
from kinformer.gvr import GroupVersionResource

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
DEFAULT_TIMEOUT = 10.0  # seconds for one request when the caller gives no timeout


class LeaseClient:
    """The Lease ``namespace/name``, and what this client last saw of it.

    Thread-safe. ``client`` is an ``ApiClient`` (or a ``DynamicClient`` or API object holding
    one). Every call takes ``timeout`` seconds per step of its request at most (None: 10) and
    is broken off when ``ctx`` is cancelled. Errors are kinformer's typed ones:
    :class:`~kinformer.ConflictError` (409: a stale update, or a create that found the Lease),
    :class:`~kinformer.NotFoundError`, :class:`~kinformer.TransportError`, and other
    :class:`~kinformer.APIError` subclasses; an answer that is not an object is a
    :class:`~kinformer.DecodeError`. A client whose host is every kcp logical cluster
    (``/clusters/*``, which serves list and watch only) raises
    :class:`~kinformer.ConfigurationError` here: a Lease lives in one logical cluster.
    """

    def __init__(self, client: Any, namespace: str, name: str) -> None:
        if rest.host_cluster(client) == ALL_LOGICAL_CLUSTERS:
            raise errors.ConfigurationError(
                f"Lease {namespace}/{name}: the client's host is every logical cluster "
                f"(/clusters/*), where a Lease can be listed but never read or written; give a "
                f"client of the one logical cluster that holds it (/clusters/<name>)")
        self._rest = rest.Client(client)
        self.namespace = namespace
        self.name = name
        self._collection = rest.resource_path(LEASES, namespace)
        self._path = f"{self._collection}/{name}"
        self._lock = threading.Lock()  # guards _lease: the Lease as last read or written
        self._lease: dict[str, Any] | None = None

    def describe(self) -> str:
        """``namespace/name`` of the Lease."""
        return f"{self.namespace}/{self.name}"

    @property
    def lease(self) -> dict[str, Any] | None:
        """The Lease as this client last read or wrote it (read-only: an update writes a copy);
        None before, or once deleted or forgotten."""
        with self._lock:
            return self._lease

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the Lease as last read or written; "" when there is none."""
        with self._lock:
            return meta.resource_version(self._lease) or ""

    def get(
        self, *, ctx: _context.Context | None = None, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """The Lease on the server now, remembered; None when it does not exist."""
        try:
            lease = self._send("GET", self._path, None, ctx, timeout)
        except errors.NotFoundError:
            return None
        return self._seen(lease)

    def create(
        self, spec: Mapping[str, Any], *, labels: Mapping[str, str] | None = None,
        ctx: _context.Context | None = None, timeout: float | None = None,
    ) -> dict[str, Any]:
        """Create the Lease with ``spec`` and ``labels``; the Lease created, remembered.

        :class:`~kinformer.ConflictError` (AlreadyExists) when it exists.
        """
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if labels:
            metadata["labels"] = dict(labels)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": dict(spec)}
        return self._seen(self._send("POST", self._collection, body, ctx, timeout))

    def update(
        self, spec: Mapping[str, Any], *, labels: Mapping[str, str] | None = None,
        replacing: Iterable[str] = (), ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Write the Lease as last seen, its spec fields named in ``replacing`` removed and
        ``spec`` and ``labels`` set over it; the Lease written, remembered.

        Every other field stays as last seen, its resourceVersion included, so a Lease that
        changed since raises :class:`~kinformer.ConflictError`. Raises
        :class:`~kinformer.errors.LifecycleError` before the Lease was read or written.
        """
        with self._lock:
            if self._lease is None:
                raise errors.LifecycleError(
                    f"lease {self.describe()} not read yet: call get or create before update")
            body = copy.deepcopy(self._lease)
        current = body.get("spec")
        new_spec = dict(current) if isinstance(current, dict) else {}
        for field in replacing:
            new_spec.pop(field, None)
        new_spec.update(spec)
        body["spec"] = new_spec
        if labels:
            metadata = body.setdefault("metadata", {})
            metadata["labels"] = {**meta.labels(body), **labels}
        return self._seen(self._send("PUT", self._path, body, ctx, timeout))

    def delete(self, *, ctx: _context.Context | None = None, timeout: float | None = None) -> bool:
        """Delete the Lease and forget it; False when it did not exist."""
        try:
            self._send("DELETE", self._path, None, ctx, timeout)
        except errors.NotFoundError:
            return False
        finally:
            self.forget()
        return True

    def forget(self) -> None:
        """Drop the Lease as last seen: the next write must be a create (or follow a get)."""
        with self._lock:
            self._lease = None

    def _seen(self, lease: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._lease = lease
        return lease

    def _send(
        self, method: str, path: str, body: Any, ctx: _context.Context | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        """One request of at most ``timeout`` seconds a step; the object answered."""
        seconds = DEFAULT_TIMEOUT if timeout is None else max(timeout, 0.001)
        where = f"{method} lease {self.describe()}"
        answer = self._rest.request_json(
            method, path, body=body, timeout=(seconds, seconds), ctx=ctx, what=where)
        if not isinstance(answer, dict):
            raise errors.DecodeError(f"{where}: response is not a Lease object")
        return answer

    def __repr__(self) -> str:
        return f"LeaseClient({self.describe()!r})"
