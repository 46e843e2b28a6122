"""Health: how a member cluster is doing, told once when it goes and once when it comes back.

Every request a member's informers send goes through a :class:`ReportingListerWatcher`
(one per informer, made by ``member.py``), which reports what came back to two places: the
member's :class:`MemberHealth`, which logs one WARNING when the cluster stops answering and
one INFO (``cluster NAME recovered after 12.3 s``) when it answers again, and the informer's
:class:`InformerHealth`, the ``state``, ``since`` and ``last_error`` of its
:class:`~kinformer.ClusterStatus`. The reflector under it logs the expected failures at DEBUG
(its ListerWatcher says ``reports_failures``), so an outage is two lines, not one per retry.
It also holds the member's :class:`~kinformer.clusters.identity.Identity` to the informer:
after a lost connection the identity is read before a watch resumes, and when it changed the
informer relists from scratch.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from kinformer import context, errors
from kinformer.client import listerwatcher
from kinformer.clusters.identity import Identity
from kinformer.gvr import GroupVersionResource

log = logging.getLogger(__name__)

SYNCING, SYNCED, FAILING = "syncing", "synced", "failing"


def is_network_failure(error: BaseException) -> bool:
    """Whether ``error`` says the cluster did not answer (refused, reset, timed out, cut)."""
    return isinstance(error, (errors.TransportError, ConnectionError, TimeoutError))


class MemberHealth:
    """Whether one member cluster answers; logs each change once. Thread-safe.

    :meth:`failed` with a network failure marks it down (one WARNING naming the cluster and
    the failure, no traceback); :meth:`answered` marks it up again (one INFO, ``cluster NAME
    recovered after 12.3 s``). Other errors (a 403, a 500) are the informer's, not the
    cluster's: they change nothing here.
    """

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()  # guards _down_since
        self._down_since: float | None = None  # time.monotonic() when it stopped answering

    @property
    def down(self) -> bool:
        with self._lock:
            return self._down_since is not None

    def failed(self, error: BaseException) -> None:
        """A request got no answer because of ``error``; the first such error says it is down."""
        if not is_network_failure(error):
            return
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
        log.warning("cluster %s is not answering: %s; retrying with backoff", self.cluster, error)

    def answered(self) -> None:
        """A request got an answer: the cluster is up (said once, when it was down)."""
        with self._lock:
            since, self._down_since = self._down_since, None
        if since is not None:
            log.info("cluster %s recovered after %.1f s", self.cluster, time.monotonic() - since)

    def __repr__(self) -> str:
        return f"<MemberHealth {self.cluster} {'down' if self.down else 'up'}>"


class InformerHealth:
    """One member informer's state for :class:`~kinformer.ClusterStatus`. Thread-safe.

    ``state`` is ``"syncing"`` until its first list, ``"synced"`` after a list or a watch that
    opened, ``"failing"`` from a failed request until the next that succeeds; ``since`` is the
    ``time.time()`` at which that state began (a run of failures keeps the time of the first)
    and ``last_error`` the failure while failing, None otherwise.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the fields below
        self._state = SYNCING
        self._since = time.time()
        self._error: BaseException | None = None
        self._listed = False  # a list succeeded once: a watch that opens means synced

    def snapshot(self) -> tuple[str, float, BaseException | None]:
        """``(state, since, last_error)``, read together."""
        with self._lock:
            return self._state, self._since, self._error

    def failed(self, error: BaseException) -> None:
        with self._lock:
            self._error = error
            self._set(FAILING)

    def listed(self) -> None:
        with self._lock:
            self._listed = True
            self._error = None
            self._set(SYNCED)

    def watching(self, initial: bool = False) -> None:
        """A watch opened; ``initial``: one that sends the initial state (it lists, too)."""
        with self._lock:
            self._listed = self._listed or initial
            self._error = None
            self._set(SYNCED if self._listed else SYNCING)

    def _set(self, state: str) -> None:  # the lock held
        if state != self._state:
            self._state, self._since = state, time.time()

    def __repr__(self) -> str:
        state, _since, error = self.snapshot()
        return f"<InformerHealth {state}{'' if error is None else f' {error}'}>"


class ReportingListerWatcher:
    """A member informer's ListerWatcher: the HTTP one, reporting every outcome and keeping
    the informer to the member's identity.

    Before each list and each watch it asks the member's :class:`Identity` (read at once
    when a connection was lost since the last read): a list after the uid changed asks for
    no resourceVersion (the new cluster's current state, from scratch), and a watch after it
    changed fails with a 410 instead of opening, which makes the reflector relist (a watch
    that sends the initial state, WatchList, asks for no resourceVersion instead, as a list). A watch
    stream that ends or breaks, other than by being closed, counts as a lost connection.
    ``reports_failures`` tells the reflector not to log expected failures itself.
    """

    reports_failures = True

    def __init__(self, inner: Any, gvr: GroupVersionResource, member: MemberHealth,
                 identity: Identity, health: InformerHealth) -> None:
        self._inner = listerwatcher.with_context(inner)
        self.resource: GroupVersionResource | None = gvr
        self.shard_selector = None
        # the kcp logical cluster the member's host names (``/clusters/*``: many clusters at one
        # address, so the informer is cluster-aware), as ListWatch.cluster says it
        self.cluster: str | None = listerwatcher.describe(inner).cluster
        self._member = member
        self._identity = identity
        self.health = health
        self._listed_under: str | None = None  # the uid of the cluster the last list came from

    def list(self, options: listerwatcher.ListOptions, *,
             ctx: context.Context | None = None) -> listerwatcher.ListResult:
        try:
            uid = self._identity.current(ctx)
            if (uid is not None and self._listed_under not in (None, uid)
                    and not options.continue_token):
                options = dataclasses.replace(options, resource_version="",
                                              resource_version_match=None)
            result = self._inner.list(options, ctx=ctx)
        except Exception as exc:
            self._failed(exc, ctx)
            raise
        self._member.answered()
        if not result.continue_token:
            self._listed_under = uid
            self.health.listed()
        return result

    def watch(self, options: listerwatcher.ListOptions, *,
              ctx: context.Context | None = None) -> listerwatcher.Watch:
        initial = bool(options.send_initial_events)  # a WatchList: the stream lists, too
        try:
            uid = self._identity.current(ctx)
            if uid is not None and self._listed_under not in (None, uid):
                if initial:  # the new cluster's state from scratch, as a list would ask for it
                    options = dataclasses.replace(options, resource_version="")
                else:
                    self._member.answered()
                    raise errors.api_error_from_status(410, {
                        "kind": "Status", "code": 410, "reason": "Expired",
                        "message": f"cluster {self._identity.cluster} was replaced: relist from scratch"})
            opened = self._inner.watch(options, ctx=ctx)
        except Exception as exc:
            self._failed(exc, ctx)
            raise
        self._member.answered()
        if initial:
            self._listed_under = uid
        self.health.watching(initial)
        return _ReportingWatch(opened, self._member, self._identity, self.health)

    def _failed(self, error: BaseException, ctx: context.Context | None) -> None:
        if ctx is not None and ctx.cancelled():
            return  # stopping: nothing failed
        if is_network_failure(error):
            self._identity.lost()
        self._member.failed(error)
        self.health.failed(error)

    def __repr__(self) -> str:
        return f"<ReportingListerWatcher {self.resource}@{self._identity.cluster}>"


class _ReportingWatch:
    """An open HTTP watch whose end, unless it was closed, marks the member's identity stale.

    The server ends a healthy watch only at its ``timeoutSeconds``; any other end (a server
    stopping, a connection cut) may mean another cluster answers next, so the identity is read
    again before the informer watches on. A stream that went silent past its read timeout (the
    server hangs, or the path to it died without a reset: its ``silent``) marks the member down
    and the informer failing, as a request that got no answer does, until a request answers
    again; one cut or reset is only a lost connection, as the next request tells. A stream that
    fails for another reason than a broken connection (a line that does not decode) makes the
    informer failing until its relist. Iterate it or read its ``batches``, as the HTTP watch it
    wraps.
    """

    def __init__(self, inner: Any, member: MemberHealth, identity: Identity,
                 health: InformerHealth) -> None:
        self._inner = inner
        self._member = member
        self._identity = identity
        self._health = health
        self._closed = False
        self.checked: bool = inner.checked if isinstance(inner, listerwatcher.BatchWatch) else False

    def close(self) -> None:
        self._closed = True
        self._inner.close()

    def __iter__(self) -> Iterator[listerwatcher.WatchEvent]:
        try:
            yield from self._inner
        except Exception as exc:
            self._failed(exc)
            raise
        finally:
            self._ended()

    def batches(self) -> Iterator[listerwatcher.WatchBatch]:
        try:
            yield from self._inner.batches()
        except Exception as exc:
            self._failed(exc)
            raise
        finally:
            self._ended()

    def _failed(self, error: BaseException) -> None:
        if self._closed:
            return
        if not is_network_failure(error):
            self._health.failed(error)
        elif getattr(self._inner, "silent", False):
            self._member.failed(error)
            self._health.failed(error)

    def _ended(self) -> None:
        if not self._closed:
            self._identity.lost()
