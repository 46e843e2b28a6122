"""ShardCoordinator: replicas agree on who owns which shard, through one Lease each.

Every member of a shard group keeps a ``coordination.k8s.io/v1`` Lease named
``<group>-<identity>`` and labelled ``kinformer.io/shard-group=<group>``, renewed every
``renew_interval``, and watches the group's Leases with an informer. A Lease counts as a live
member while its record has changed within ``lease_duration`` by this member's own clock (the
leader elector's rule, so clock skew between replicas cannot matter). Live members sorted by
identity split the hash space equally: member *i* of *n* owns ``ShardSelector.for_shard(i, n)``.
A member that stops deletes its Lease, so the others take its range at once; one that dies is
dropped once its Lease has not changed for ``lease_duration``. A member that does not see itself
among the live members owns :meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>`,
never the whole resource.
"""

from __future__ import annotations

import datetime
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _threads, errors, sharding
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.client import listwatch, rest
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer
from kinformer.leaderelection.lease_lock import LEASES
from kinformer.leaderelection.record import format_micro_time, lease_seconds

log = logging.getLogger(__name__)

GROUP_LABEL = "kinformer.io/shard-group"
REQUEST_TIMEOUT = 10.0  # seconds per Lease request
JOIN_TIMEOUT = 30.0

Listener = Callable[[sharding.ShardSelector], object]
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)\Z")


def lease_name(group: str, identity: str) -> str:
    """``<group>-<identity>``, lowercased, as a valid object name (DNS-1123 subdomain)."""
    name = re.sub(r"[^a-z0-9.-]+", "-", f"{group}-{identity}".lower()).strip("-.")
    return name[:253].rstrip("-.") or "member"


class ShardCoordinator:
    """Membership of a shard group through Leases, and this member's shard of the hash space.

    ``run(stop)`` blocks until ``stop`` (an Event or :class:`~kinformer.Context`) fires: it
    renews this member's Lease, watches the group's Leases and recomputes the members on every
    change and expiry. On the way out it deletes its Lease, sets its selector to the empty one
    (telling the listeners) and joins every thread it started. ``selector()`` is this member's
    :class:`~kinformer.ShardSelector`, never None: :meth:`ShardSelector.empty()
    <kinformer.ShardSelector.empty>` while it does not see itself among the live members
    (before joining, after its Lease vanished or expired, after stop). ``members()`` are the
    live identities in order; listeners added with :meth:`add_listener` are called as
    ``fn(selector)``, on the coordinator's thread, whenever this member's selector changes
    (not when added). A Lease deleted by someone else is created again at the next renewal,
    and the member re-joins once it sees it. While membership changes two members may briefly
    both own a range (for at most one renew interval); once it is stable every hash belongs
    to exactly one live member. Bad settings raise :class:`~kinformer.ConfigurationError`.
    Thread-safe; runs once.

    Example, with ``informer`` a :class:`~kinformer.SharedIndexInformer` and ``stop`` a
    ``threading.Event``; the informer starts on the coordinator's selector, the empty one, so
    it caches nothing before this member has its shard::

        coordinator = ShardCoordinator(api_client, "my-controller", socket.gethostname())
        informer.set_shard_selector(coordinator.selector())
        coordinator.add_listener(informer.set_shard_selector)
        threading.Thread(target=coordinator.run, args=(stop,)).start()
    """

    def __init__(
        self,
        client: Any,
        group: str,
        identity: str,
        namespace: str = "default",
        lease_duration: float = 15.0,
        renew_interval: float = 5.0,
        field: str = "object.metadata.uid",
        clock: _clock.Clock | None = None,
    ) -> None:
        if not isinstance(group, str) or not _LABEL_VALUE.match(group):
            raise errors.ConfigurationError(
                f"shard group must be a valid label value (63 characters at most), got {group!r}")
        if not isinstance(identity, str) or not identity:
            raise errors.ConfigurationError("ShardCoordinator needs a non-empty identity")
        if not 0 < renew_interval < lease_duration:
            raise errors.ConfigurationError(
                "need 0 < renew_interval < lease_duration, got "
                f"renew_interval={renew_interval} lease_duration={lease_duration}")
        if field not in sharding.FIELDS:
            raise errors.ConfigurationError(
                f"unsupported field {field!r}; supported: {', '.join(sharding.FIELDS)}")
        self.group = group
        self.identity = identity
        self.namespace = namespace
        self._lease_duration = float(lease_duration)
        self._renew_interval = float(renew_interval)
        self._field = field
        self._clock = clock or _clock.REAL_CLOCK
        self._rest = rest.Client(client)
        self._name = lease_name(group, identity)
        self._collection = rest.resource_path(LEASES, namespace)
        self._informer = SharedIndexInformer(
            listwatch.ListWatch.for_resource(client, LEASES, namespace,
                                             label_selector=f"{GROUP_LABEL}={group}"),
            clock=self._clock, name=f"shards-{self._name}")
        self._wake = threading.Event()  # a Lease of the group changed, or stop
        self._informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda _obj: self._wake.set(),
            update_func=lambda _old, _new: self._wake.set(),
            delete_func=lambda _obj: self._wake.set()))
        self._lock = threading.Lock()  # guards the fields below
        self._selector = sharding.ShardSelector.empty()
        self._members: list[str] = []
        self._listeners: list[Listener] = []
        self._started = False
        # only touched by the run thread: Lease key -> (resourceVersion, when it was seen change)
        self._observed: dict[str, tuple[str, float]] = {}
        self._lease: dict[str, Any] | None = None  # this member's Lease as last written

    # -- getters and listeners ---------------------------------------------------------------

    def selector(self) -> sharding.ShardSelector:
        """This member's shard; the empty one while it does not see itself among the members."""
        with self._lock:
            return self._selector

    def members(self) -> list[str]:
        """The identities of the live members, in shard order."""
        with self._lock:
            return list(self._members)

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(selector)`` whenever this member's selector changes (not now)."""
        with self._lock:
            self._listeners.append(fn)

    def __repr__(self) -> str:
        return f"<ShardCoordinator {self.namespace}/{self._name} selector={self.selector()}>"

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: _context.StopSignal) -> None:
        """Renew, watch and recompute until ``stop`` fires; blocks. Raises AlreadyStartedError
        on a second call."""
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"shard coordinator {self._name} already started")
            self._started = True
        ctx = _context.as_context(stop)
        handle = ctx.on_cancel(self._wake.set)
        inner = _context.Context(f"shards-{self._name}")
        watcher = _threads.spawn(self._informer.run, _threads.thread_name("shards", self._name), inner)
        log.info("shard coordinator %s joining group %s", self.identity, self.group)
        try:
            next_renew = self._clock.now()
            while not ctx.cancelled():
                now = self._clock.now()
                if now >= next_renew:
                    renewed = self._renew(ctx)
                    next_renew = now + (self._renew_interval if renewed
                                        else min(1.0, self._renew_interval))
                next_expiry = self._recompute(self._clock.now())
                wait = max(0.0, min(next_renew, next_expiry) - self._clock.now())
                if self._clock.wait(self._wake, wait):
                    self._wake.clear()
        finally:
            handle.remove()
            self._delete()
            inner.cancel()
            _threads.join_all([watcher], JOIN_TIMEOUT)
            self._publish(sharding.ShardSelector.empty(), [])
            log.info("shard coordinator %s left group %s", self.identity, self.group)

    def _recompute(self, now: float) -> float:
        """Work out the live members and this member's selector; the next expiry to look at."""
        live: list[tuple[str, str]] = []  # (identity, key)
        seen: set[str] = set()
        next_expiry = float("inf")
        for lease in self._informer.get_indexer().list():
            metadata = lease.get("metadata") or {}
            key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
            seen.add(key)
            version = str(metadata.get("resourceVersion", ""))
            observed = self._observed.get(key)
            if observed is None or observed[0] != version:
                observed = (version, now)
                self._observed[key] = observed
            expires = observed[1] + self._lease_duration
            if expires <= now:
                continue
            next_expiry = min(next_expiry, expires)
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity")
            live.append((holder if isinstance(holder, str) and holder else str(metadata.get("name")),
                         key))
        for key in [k for k in self._observed if k not in seen]:
            del self._observed[key]
        members = sorted({identity for identity, _ in live})
        selector = sharding.ShardSelector.empty()
        if self.identity in members:
            selector = sharding.ShardSelector.for_shard(
                members.index(self.identity), len(members), self._field)
        self._publish(selector, members)
        return next_expiry

    def _publish(self, selector: sharding.ShardSelector, members: list[str]) -> None:
        """Record ``selector`` and ``members``; tell the listeners when the selector changed."""
        with self._lock:
            changed = selector != self._selector
            self._selector = selector
            if members != self._members:
                log.info("shard group %s: members %s", self.group, ", ".join(members) or "none")
            self._members = members
            listeners = list(self._listeners) if changed else []
        if changed:
            log.info("shard coordinator %s: shard is now %s", self.identity,
                     selector if selector.ranges else "empty (owns nothing)")
        for listener in listeners:
            try:
                listener(selector)
            except Exception:
                log.exception("shard coordinator %s: listener %r failed", self.identity, listener)

    # -- this member's Lease ---------------------------------------------------------------------

    def _renew(self, ctx: _context.Context) -> bool:
        """Write this member's Lease (create it the first time); False when that failed."""
        now = format_micro_time(datetime.datetime.now(datetime.timezone.utc))
        try:
            if self._lease is None:
                self._lease = self._create(now, ctx)
            else:
                body = dict(self._lease)
                body["spec"] = {**(body.get("spec") or {}), "renewTime": now}
                try:
                    self._lease = self._send("PUT", f"{self._collection}/{self._name}", body, ctx)
                except errors.NotFoundError:  # deleted under us: create it again
                    self._lease = self._create(now, ctx)
                except errors.ConflictError:  # written by someone else: take the latest, retry
                    self._lease = self._send("GET", f"{self._collection}/{self._name}", None, ctx)
                    return False
            return True
        except Exception as exc:
            if not ctx.cancelled():
                log.warning("shard coordinator %s: renewing lease %s/%s failed: %s",
                            self.identity, self.namespace, self._name, exc)
            return False

    def _create(self, now: str, ctx: _context.Context) -> dict[str, Any]:
        spec = {"holderIdentity": self.identity,
                "leaseDurationSeconds": lease_seconds(self._lease_duration),
                "acquireTime": now, "renewTime": now}
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self._name, "namespace": self.namespace,
                         "labels": {GROUP_LABEL: self.group}},
            "spec": spec,
        }
        try:
            return self._send("POST", self._collection, body, ctx)
        except errors.ConflictError:  # left over from an earlier run: take it over
            current = self._send("GET", f"{self._collection}/{self._name}", None, ctx)
            current["metadata"].setdefault("labels", {})[GROUP_LABEL] = self.group
            current["spec"] = {**(current.get("spec") or {}), **spec}
            return self._send("PUT", f"{self._collection}/{self._name}", current, ctx)

    def _delete(self) -> None:
        """Delete this member's Lease so the others take its range at once (best effort)."""
        if self._lease is None:
            return
        try:
            self._send("DELETE", f"{self._collection}/{self._name}", None, None)
        except errors.NotFoundError:
            pass
        except Exception as exc:
            log.warning("shard coordinator %s: deleting lease %s/%s failed: %s; it expires "
                        "after %.0fs", self.identity, self.namespace, self._name, exc,
                        self._lease_duration)
        self._lease = None

    def _send(
        self, method: str, path: str, body: Any, ctx: _context.Context | None
    ) -> dict[str, Any]:
        """One Lease request; the object the server answered with."""
        where = f"{method} lease {self.namespace}/{self._name}"
        answer = self._rest.request_json(
            method, path, body=body, timeout=(REQUEST_TIMEOUT, REQUEST_TIMEOUT), ctx=ctx, what=where)
        if not isinstance(answer, dict):
            raise errors.DecodeError(f"{where}: response is not an object")
        return answer
