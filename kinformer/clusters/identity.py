"""Identity: which cluster answers behind a member's address, by its kube-system namespace's uid.

SIG Multicluster's ClusterProperty ``cluster.clusterset.k8s.io`` names a cluster by the uid of
its ``kube-system`` namespace: a rebuilt cluster, or one whose etcd was wiped or restored from
an older backup, answers at the same address with a new uid, and every resourceVersion an
informer kept from the old one means nothing there. Each :class:`~kinformer.clusters.member.Member`
has one :class:`Identity`, read before its informers' first list and read again, once for all
of them, after any of them lost its connection (``health.py`` says when); the informers of the
member compare it with the uid they last listed under and relist from scratch when it changed.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kinformer import context, errors
from kinformer.client import rest

log = logging.getLogger(__name__)

KUBE_SYSTEM_PATH = "/api/v1/namespaces/kube-system"
WAIT_STEP = 1.0  # seconds between looks while another thread reads; a cancel wakes it at once


class Identity:
    """The uid of one member cluster's ``kube-system`` namespace, as last read.

    :meth:`current` reads it when it is not known yet or a connection was :meth:`lost` since
    it was read; one thread reads while the member's other informers wait for that read (each
    still stoppable through its context). A changed uid is logged once, at WARNING. A
    ``kube-system`` the member's credentials cannot read (403), a cluster without one (404), an
    endpoint that serves no get (405: a member on kcp's ``/clusters/*``, many clusters behind one
    address, which has no one identity) or an answer without a uid is logged once, at INFO, and
    never read again: its informers then go on unchecked. Once a uid was read, those answers are
    raised as any other failure: the cluster had an identity, and one rebuilt behind its address
    may answer so for a moment. Any other failure is raised, and the read made again next time.
    Thread-safe; it holds no lock while a request is in flight.
    """

    def __init__(self, cluster: str, client: rest.Client, timeout: tuple[float, float]) -> None:
        self.cluster = cluster
        self._client = client
        self._timeout = timeout
        # guards the fields below; notified when a read ends or a waiter's context is cancelled
        # (reentrant: a context cancelled already runs the callback on the waiting thread)
        self._cond = threading.Condition(threading.RLock())
        self._uid: str | None = None
        self._stale = True  # read before it is used: never read yet, or a connection was lost
        self._readable = True  # False once kube-system answered 403, 404 or 405
        self._reading = False  # a thread is reading it now

    @property
    def uid(self) -> str | None:
        """The uid last read; None before the first read or when it cannot be read."""
        with self._cond:
            return self._uid

    def lost(self) -> None:
        """A connection to the member was lost: read the uid again before it is next used."""
        with self._cond:
            if self._readable:
                self._stale = True

    def current(self, ctx: context.Context | None) -> str | None:
        """The uid, read first when it is stale; None when it cannot be read.

        Blocks for at most the request's timeouts (or while another thread reads it); raises
        what the read failed with (a :class:`~kinformer.TransportError` while the member is
        down, a typed :class:`~kinformer.APIError`), and TransportError when ``ctx`` is
        cancelled meanwhile.
        """
        handle = None
        try:
            with self._cond:
                while self._stale and self._readable and self._reading:
                    if ctx is not None:
                        if ctx.cancelled():
                            raise errors.TransportError(
                                f"read of cluster {self.cluster}'s identity: cancelled")
                        if handle is None:  # a cancel wakes this wait at once
                            handle = ctx.on_cancel(self._wake)
                    self._cond.wait(WAIT_STEP)
                if not self._stale or not self._readable:
                    return self._uid
                self._reading = True
        finally:
            if handle is not None:
                handle.remove()
        try:
            uid = self._read(ctx)
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()
        return uid

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _read(self, ctx: context.Context | None) -> str | None:
        """Send the read; note what it says (the caller set ``_reading``)."""
        try:
            body: Any = self._client.get_json(
                KUBE_SYSTEM_PATH, timeout=self._timeout, ctx=ctx,
                what=f"read cluster {self.cluster}'s identity (namespace kube-system)")
        except (errors.ForbiddenError, errors.NotFoundError, errors.MethodNotAllowedError) as exc:
            self._unless_read_before(exc)
            return self._unreadable(f"{exc.status} on namespace kube-system")
        except errors.DecodeError as exc:
            self._unless_read_before(exc)
            return self._unreadable("namespace kube-system is not JSON")
        metadata = body.get("metadata") if isinstance(body, dict) else None
        uid = metadata.get("uid") if isinstance(metadata, dict) else None
        if not isinstance(uid, str) or not uid:
            self._unless_read_before(errors.DecodeError(
                f"cluster {self.cluster}: namespace kube-system has no uid"))
            return self._unreadable("namespace kube-system has no uid")
        with self._cond:
            before, self._uid, self._stale = self._uid, uid, False
        if before is not None and before != uid:
            log.warning("cluster %s was replaced behind its address (kube-system uid %s, was %s): "
                        "relisting its informers from scratch", self.cluster, uid, before)
        return uid

    def _unless_read_before(self, exc: Exception) -> None:
        """Raise ``exc`` when a uid was read before: the cluster told its identity then, so an
        answer without one now is a moment (a cluster being rebuilt, its kube-system not made
        yet), not what the cluster is; the read is made again next time, and a new uid then
        relists its informers."""
        with self._cond:
            known = self._uid is not None
        if known:  # the member is not itself yet: its informers back off and ask again
            raise errors.TransportError(
                f"cluster {self.cluster} told its identity before but not now ({exc}); "
                "reading it again") from exc

    def _unreadable(self, why: str) -> str | None:
        """Never read it again; say so once. The uid: None."""
        with self._cond:
            self._readable = False
            self._stale = False
            uid = self._uid
        log.info("cluster %s: its identity cannot be read (%s); a cluster replaced behind its "
                 "address will not be noticed", self.cluster, why)
        return uid

    def __repr__(self) -> str:
        return f"<Identity {self.cluster} uid={self.uid}>"
