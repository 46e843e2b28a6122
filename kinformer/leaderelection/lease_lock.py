"""LeaseLock: a leader election lock kept in one ``coordination.k8s.io/v1`` Lease.

client-go's ``resourcelock.LeaseLock`` behind the :class:`ResourceLock` seam the elector
(:mod:`kinformer.leaderelection.elector`) talks to. Every request goes through the one request
path, :class:`kinformer.client.rest.Client`; the record it reads and writes is
:class:`~kinformer.leaderelection.record.LeaderElectionRecord`. Updates are optimistic: each
carries the resourceVersion of the Lease this lock last read or wrote, so a write based on a
stale read fails with :class:`~kinformer.ConflictError` instead of overwriting another
replica's.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any, Protocol

from kinformer import context as _context
from kinformer import errors
from kinformer.client import rest
from kinformer.gvr import GroupVersionResource
from kinformer.leaderelection.record import LeaderElectionRecord

log = logging.getLogger(__name__)

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
DEFAULT_TIMEOUT = 10.0  # seconds for one request when the caller gives no timeout


class ResourceLock(Protocol):
    """What a leader elector needs from a lock (client-go's ``resourcelock.Interface``).

    ``get`` returns the current record (None when the lock object does not exist), ``create``
    and ``update`` write one; ``update`` is optimistic (:class:`~kinformer.ConflictError` when
    the object changed since this lock last read or wrote it). Each call blocks for at most
    ``timeout`` seconds per step of its request and is broken off when ``ctx`` is cancelled.
    """

    @property
    def identity(self) -> str: ...

    def describe(self) -> str: ...

    def get(
        self, *, ctx: _context.Context | None = None, timeout: float | None = None
    ) -> LeaderElectionRecord | None: ...

    def create(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None: ...

    def update(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None: ...


class LeaseLock:
    """A leader election lock in the Lease ``namespace/name``, held as ``identity``.

    Thread-safe. ``client`` is an ``ApiClient`` (or a ``DynamicClient`` or API object holding
    one). :meth:`update` needs a Lease read by :meth:`get` or written by :meth:`create` first
    (:class:`~kinformer.errors.LifecycleError` otherwise); it keeps every field of that Lease but
    the record's. Errors are kinformer's typed ones: :class:`~kinformer.ConflictError` (409, a
    stale update or a create that lost a race), :class:`~kinformer.TransportError`, and other
    :class:`~kinformer.APIError` subclasses.

    Example::

        lock = LeaseLock(api_client, "default", "my-controller", identity=socket.gethostname())
    """

    def __init__(self, client: Any, namespace: str, name: str, identity: str) -> None:
        for what, value in (("namespace", namespace), ("name", name), ("identity", identity)):
            if not isinstance(value, str) or not value:
                raise errors.ConfigurationError(f"LeaseLock needs a non-empty {what}, got {value!r}")
        self._client = rest.Client(client)
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self._path = f"{rest.resource_path(LEASES, namespace)}/{name}"
        self._lock = threading.Lock()  # guards _lease: the Lease as last read or written
        self._lease: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        """Who this lock acquires the lease as."""
        return self._identity

    def describe(self) -> str:
        """``namespace/name`` of the Lease."""
        return f"{self.namespace}/{self.name}"

    def get(
        self, *, ctx: _context.Context | None = None, timeout: float | None = None
    ) -> LeaderElectionRecord | None:
        """The record in the Lease now; None when the Lease does not exist."""
        try:
            lease = self._send("GET", self._path, None, ctx, timeout)
        except errors.NotFoundError:
            return None
        record = _record_of(lease, self.describe())
        with self._lock:
            self._lease = lease
        return record

    def create(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None:
        """Create the Lease holding ``record``; ConflictError (AlreadyExists) when it exists."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        lease = self._send("POST", rest.resource_path(LEASES, self.namespace), body, ctx, timeout)
        with self._lock:
            self._lease = lease

    def update(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None:
        """Write ``record`` over the Lease as last seen; ConflictError if it changed since."""
        with self._lock:
            if self._lease is None:
                raise errors.LifecycleError(
                    f"lease {self.describe()} not read yet: call get or create before update")
            body = copy.deepcopy(self._lease)
        spec = body.get("spec")
        if not isinstance(spec, dict):
            spec = body["spec"] = {}
        for field in ("holderIdentity", "leaseDurationSeconds", "leaseTransitions",
                      "acquireTime", "renewTime"):
            spec.pop(field, None)
        spec.update(record.to_lease_spec())
        lease = self._send("PUT", self._path, body, ctx, timeout)
        with self._lock:
            self._lease = lease

    def _send(
        self, method: str, path: str, body: Any, ctx: _context.Context | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        seconds = DEFAULT_TIMEOUT if timeout is None else max(timeout, 0.001)
        where = f"{method} lease {self.describe()}"
        lease = self._client.request_json(
            method, path, body=body, timeout=(seconds, seconds), ctx=ctx, what=where)
        if not isinstance(lease, dict):
            raise errors.DecodeError(f"{where}: response is not a Lease object")
        return lease

    def __repr__(self) -> str:
        return f"LeaseLock({self.describe()!r}, identity={self._identity!r})"


def _record_of(lease: dict[str, Any], where: str) -> LeaderElectionRecord:
    try:
        return LeaderElectionRecord.from_lease_spec(lease.get("spec"))
    except errors.DecodeError as err:
        raise errors.DecodeError(f"lease {where}: {err}") from None
