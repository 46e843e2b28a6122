"""LeaseLock: a leader election lock kept in one ``coordination.k8s.io/v1`` Lease.

client-go's ``resourcelock.LeaseLock`` behind the :class:`ResourceLock` seam the elector
(:mod:`kinformer.leaderelection.elector`) talks to. It reads and writes the record
(:class:`~kinformer.leaderelection.record.LeaderElectionRecord`) in the Lease's spec through the
package's one Lease client (:class:`~kinformer.leaderelection.lease_client.LeaseClient`), so
updates are optimistic: each carries the resourceVersion of the Lease this lock last read or
wrote, and a write based on a stale read fails with :class:`~kinformer.ConflictError` instead
of overwriting another replica's.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from kinformer import context as _context
from kinformer import errors
from kinformer.leaderelection import lease_client
from kinformer.leaderelection.record import LeaderElectionRecord

log = logging.getLogger(__name__)

# the spec fields a record owns: an update replaces them all, an absent time included
RECORD_FIELDS = ("holderIdentity", "leaseDurationSeconds", "leaseTransitions", "acquireTime",
                 "renewTime")


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
        self._lease = lease_client.LeaseClient(client, namespace, name)
        self.namespace = namespace
        self.name = name
        self._identity = identity

    @property
    def identity(self) -> str:
        """Who this lock acquires the lease as."""
        return self._identity

    def describe(self) -> str:
        """``namespace/name`` of the Lease."""
        return self._lease.describe()

    def get(
        self, *, ctx: _context.Context | None = None, timeout: float | None = None
    ) -> LeaderElectionRecord | None:
        """The record in the Lease now; None when the Lease does not exist."""
        lease = self._lease.get(ctx=ctx, timeout=timeout)
        if lease is None:
            return None
        try:
            return LeaderElectionRecord.from_lease_spec(lease.get("spec"))
        except errors.DecodeError as err:
            raise errors.DecodeError(f"lease {self.describe()}: {err}") from None

    def create(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None:
        """Create the Lease holding ``record``; ConflictError (AlreadyExists) when it exists."""
        self._lease.create(record.to_lease_spec(), ctx=ctx, timeout=timeout)

    def update(
        self, record: LeaderElectionRecord, *, ctx: _context.Context | None = None,
        timeout: float | None = None,
    ) -> None:
        """Write ``record`` over the Lease as last seen; ConflictError if it changed since."""
        self._lease.update(record.to_lease_spec(), replacing=RECORD_FIELDS, ctx=ctx, timeout=timeout)

    def __repr__(self) -> str:
        return f"LeaseLock({self.describe()!r}, identity={self._identity!r})"
