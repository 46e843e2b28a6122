"""ShardCoordinator: replicas agree on who owns which shard, through one Lease each.

Every member of a shard group keeps a ``coordination.k8s.io/v1`` Lease named
``<group>-<identity>`` and labelled ``kinformer.io/shard-group=<group>``, renewed every
``renew_interval`` through the package's Lease client
(:mod:`kinformer.leaderelection.lease_client`), and watches the group's Leases with a reflector,
reading them through :mod:`kinformer.meta`. Live members sorted by identity split the hash space
equally: member *i* of *n* owns ``ShardSelector.for_shard(i, n)``.
A member that stops deletes its Lease, so the others take its range at once; one that dies is
dropped once its Lease has not changed for ``lease_duration``.

Time is judged on this member's own clock (the leader elector's rule, so clock skew between
replicas cannot matter), and only through a view it knows to be fresh. This member is live while
the newest of its own renewals that its watch has shown it began less than ``lease_duration``
ago: the others, who saw that renewal no earlier, cannot drop it sooner. Another member is
dropped once this member has seen its own renewals go on for ``lease_duration`` past the last
change of that member's Lease, never merely because time passed: a view that stalls (a watch
that broke and cannot be made again) makes this member own nothing, and never makes it think
the others gone and take their ranges. A member that does not see itself among the live members
owns :meth:`ShardSelector.empty() <kinformer.ShardSelector.empty>`, never the whole resource. A
renewal is given no more time than this member's Lease has left, so a request that hangs cannot
keep it on a shard.
"""

from __future__ import annotations

import collections
import datetime
import hashlib
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _checks, _threads, errors, meta, sharding
from kinformer import backoff as _backoff
from kinformer import clock as _clock
from kinformer import context as _context
from kinformer.cache import store
from kinformer.client import listwatch
from kinformer.leaderelection import lease_client
from kinformer.leaderelection.record import format_micro_time, lease_seconds
from kinformer.reflector import reflector

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a listener's errors: none may quote a token

GROUP_LABEL = "kinformer.io/shard-group"
REQUEST_TIMEOUT = 10.0  # seconds per Lease request at most; a renewal gets only what its Lease has left
JOIN_TIMEOUT = 30.0
WRITES_KEPT = 16  # own renewals remembered until the watch shows them; a few renew intervals

SelectorListener = Callable[[sharding.ShardSelector], object]
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)\Z")


def lease_name(group: str, identity: str) -> str:
    """``<group>-<identity>`` as a valid object name (DNS-1123 subdomain).

    A group and identity that are such names already (lowercase letters, digits, ``-`` and
    ``.``; a hostname) are kept as they are. Any other pair is lowercased, its other characters
    made ``-``, and a hash of the group and identity as given appended: ``web_1`` and ``web-1``,
    or ``Web-1``, are different members and must not share one Lease (each would take it over
    from the other, and neither own a shard), nor may members of groups ``My_Group`` and
    ``my_group``. Two pairs that still meet (group ``web`` with ``canary-0``, ``web-canary``
    with ``0``) are told apart by the Lease's group label: the second is refused.
    """
    raw = f"{group}-{identity}"
    name = re.sub(r"[^a-z0-9.-]+", "-", raw.lower()).strip("-.")
    if name != raw:
        both = f"{group}\0{identity}".encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(both).hexdigest()[:10]
        name = f"{name[:242].rstrip('-.')}-{digest}"
    return name[:253].rstrip("-.") or "member"


class ShardCoordinator:
    """Membership of a shard group through Leases, and this member's shard of the hash space.

    Lifecycle: ``run(stop)`` blocks (the only way to run one) until ``stop`` (an Event or
    :class:`~kinformer.Context`) fires: it
    renews this member's Lease, watches the group's Leases and recomputes the members on every
    change and expiry. On the way out it deletes its Lease, sets its selector to the empty one
    (telling the listeners) and joins every thread it started. ``selector()`` is this member's
    :class:`~kinformer.ShardSelector`, never None: :meth:`ShardSelector.empty()
    <kinformer.ShardSelector.empty>` while it does not see itself among the live members
    (before joining, after its Lease vanished or expired, after stop). ``members()`` are the
    live identities in order; listeners added with :meth:`add_listener` are called as
    ``fn(selector)`` whenever this member's selector changes (not when added), in order, on a
    thread of their own (``kinformer-shards-listeners-<lease>``): a listener that takes long
    (disengaging clusters joins their informers) holds no renewal back, so the member's Lease
    does not run out under it and hand its range to the others while it still works on it.
    Every change reaches the listeners, in the order it happened. On stop, the Lease is
    deleted once the listeners heard the empty selector (or after ``lease_duration``, when the
    others would take the range anyway). A Lease deleted
    by someone else is created again at the next renewal, and the member re-joins once it
    sees it. While membership changes two members may briefly
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
        _checks.seconds("lease_duration", lease_duration, positive=True)
        _checks.seconds("renew_interval", renew_interval, positive=True)
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
        self._name = lease_name(group, identity)
        self._lease = lease_client.LeaseClient(client, namespace, self._name)  # this member's own
        self._wake = threading.Event()  # a Lease of the group changed, or stop
        self._leases = _Leases(self._wake)
        # the group's few Leases, relisted within a renew interval after any failure: a member
        # that cannot see its group owns nothing, so its view must not wait out a long backoff
        retry = _backoff.Backoff(duration=min(_backoff.BACKOFF_INITIAL, self._renew_interval),
                                 cap=self._renew_interval)
        self._reflector = reflector.Reflector(
            listwatch.ListWatch.for_resource(client, lease_client.LEASES, namespace,
                                             label_selector=f"{GROUP_LABEL}={group}"),
            self._leases, name=f"shards-{self._name}", clock=self._clock,
            backoff=_backoff.BackoffManager(retry, clock=self._clock))
        self._lock = threading.Lock()  # guards the fields below
        self._selector = sharding.ShardSelector.empty()
        self._members: list[str] = []
        self._listeners: list[SelectorListener] = []
        self._announcer = _Announcer(self)
        self._started = False
        # only touched by the run thread: Lease key -> (resourceVersion, when it was seen change)
        self._observed: dict[str, tuple[str, float]] = {}
        self._own_key = f"{namespace}/{self._name}"
        self._valid_until = float("-inf")  # last successful renewal's start + lease_duration
        self._written: dict[str, float] = {}  # resourceVersion of a recent renewal -> its start
        self._seen_own = float("-inf")  # start of the newest own renewal the watch has shown
        self._other_holders: set[str] = set()  # identities seen holding this member's Lease
        self._other_groups: set[str] = set()  # groups seen owning a Lease of this member's name

    # -- getters and listeners ---------------------------------------------------------------

    def selector(self) -> sharding.ShardSelector:
        """This member's shard; the empty one while it does not see itself among the members."""
        with self._lock:
            return self._selector

    def members(self) -> list[str]:
        """The identities of the live members, in shard order; [] while this member does not
        count itself live (it cannot judge the others then)."""
        with self._lock:
            return list(self._members)

    def add_listener(self, fn: SelectorListener) -> None:
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
        self._announcer.start(_threads.thread_name("shards-listeners", self._name))
        watcher = _threads.spawn(self._reflector.run, _threads.thread_name("shards", self._name),
                                 inner)
        log.info("shard coordinator %s joining group %s", self.identity, self.group)
        try:
            next_renew = self._clock.now()
            while not ctx.cancelled():
                now = self._clock.now()
                if now >= next_renew:
                    # first what the lease has left: a member frozen past it (a paused process, a
                    # suspended host) gives its range up now, not after a renewal that may hang
                    self._recompute(now)
                    renewed = self._renew(ctx, self._request_timeout(now))
                    if renewed:
                        self._wrote(now)
                    next_renew = now + (self._renew_interval if renewed
                                        else min(1.0, self._renew_interval))
                next_expiry = self._recompute(self._clock.now())
                wait = max(0.0, min(next_renew, next_expiry) - self._clock.now())
                if self._clock.wait(self._wake, wait):
                    self._wake.clear()
        finally:
            handle.remove()
            # owning nothing first, then the Lease deleted: the others take the range over only
            # once this member's listeners heard it is no longer its
            self._publish(sharding.ShardSelector.empty(), [])
            if not self._announcer.flush(self._lease_duration):
                log.warning("shard coordinator %s: its listeners did not take the empty shard "
                            "within %.0fs; deleting its lease anyway", self.identity,
                            self._lease_duration)
            self._delete()
            inner.cancel()
            self._announcer.close()
            _threads.join_all([watcher, *self._announcer.threads()], JOIN_TIMEOUT)
            log.info("shard coordinator %s left group %s", self.identity, self.group)

    def _request_timeout(self, now: float) -> float:
        """Seconds a renewal may take: what this member's own Lease has left, while it has some."""
        left = self._valid_until - now
        if left > 0:
            return min(REQUEST_TIMEOUT, left)
        return min(REQUEST_TIMEOUT, self._lease_duration)  # owns nothing now: nothing to lose

    def _wrote(self, started: float) -> None:
        """A renewal that began at ``started`` succeeded: remember its resourceVersion."""
        self._valid_until = started + self._lease_duration
        self._written[self._lease.resource_version] = started
        while len(self._written) > WRITES_KEPT:
            del self._written[next(iter(self._written))]

    def _recompute(self, now: float) -> float:
        """Work out the live members and this member's selector; when this member's own
        liveness runs out (the next time to recompute without an event)."""
        leases: list[tuple[str, str, float]] = []  # (key, identity, when it was seen change)
        for lease in self._leases.list():
            key = f"{meta.namespace(lease)}/{meta.name(lease)}"
            version = meta.resource_version(lease) or ""
            observed = self._observed.get(key)
            if observed is None or observed[0] != version:
                observed = (version, now)
                self._observed[key] = observed
            if key == self._own_key:  # one of our renewals came back through the watch
                self._seen_own = max(self._seen_own, self._written.get(version, float("-inf")))
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity")
            if key == self._own_key and holder != self.identity and self._written:
                self._held_by(holder)  # written over after ours: not a Lease left from before
            # a member is a Lease its holder would have made: one edited to name no holder or
            # another is no member (its range would be owned by nobody); its own member writes
            # itself back as holder at its next renewal
            if (isinstance(holder, str) and holder
                    and lease_name(self.group, holder) == meta.name(lease)):
                leases.append((key, holder, observed[1]))
        seen = {key for key, _, _ in leases}
        for key in [k for k in self._observed if k not in seen]:
            del self._observed[key]
        expiry = self._seen_own + self._lease_duration
        members: list[str] = []
        if now < expiry:  # our view is fresh: judge the others by it
            members = sorted({identity for key, identity, changed in leases
                              if key == self._own_key
                              or (identity != self.identity
                                  and self._seen_own - changed < self._lease_duration)})
        selector = sharding.ShardSelector.empty()
        if self.identity in members:
            selector = sharding.ShardSelector.for_shard(
                members.index(self.identity), len(members), self._field)
        self._publish(selector, members)
        return expiry if now < expiry else float("inf")

    def _held_by(self, identity: object) -> None:
        """This member's Lease names another holder (or none): someone edited it, or another
        process runs with this Lease's name. Said once per holder; this member writes itself
        back as holder at its next renewal and owns nothing until then."""
        if not isinstance(identity, str) or identity in self._other_holders:
            return
        self._other_holders.add(identity)
        log.error("shard coordinator %s: its lease %s is held by %r: someone else wrote it, or "
                  "two processes of group %s run with one Lease (give each its own identity)",
                  self.identity, self._own_key, identity, self.group)

    def _publish(self, selector: sharding.ShardSelector, members: list[str]) -> None:
        """Record ``selector`` and ``members``; tell the listeners when the selector changed."""
        with self._lock:
            changed = selector != self._selector
            self._selector = selector
            if members != self._members:
                log.info("shard group %s: members %s", self.group, ", ".join(members) or "none")
            self._members = members
        if changed:
            log.info("shard coordinator %s: shard is now %s", self.identity,
                     selector if selector.ranges else "empty (owns nothing)")
            self._announcer.announce(selector)

    def _tell(self, selector: sharding.ShardSelector) -> None:
        """Call every listener with ``selector``; on the announcer's thread."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(selector)
            except Exception:
                log.exception("shard coordinator %s: listener %r failed", self.identity, listener)

    # -- this member's Lease ---------------------------------------------------------------------

    def _renew(self, ctx: _context.Context, timeout: float) -> bool:
        """Write this member's Lease (create it the first time); False when that failed.

        Each request may take ``timeout`` seconds.
        """
        now = format_micro_time(datetime.datetime.now(datetime.timezone.utc))
        lease = self._lease
        try:
            if lease.lease is None:
                return self._create(now, ctx, timeout)
            try:
                # holder, duration and label written each time: someone's edit of them (a
                # holder cleared, a label taken off) lasts until the next renewal, not forever
                lease.update({"holderIdentity": self.identity,
                              "leaseDurationSeconds": lease_seconds(self._lease_duration),
                              "renewTime": now},
                             labels={GROUP_LABEL: self.group}, ctx=ctx, timeout=timeout)
            except errors.NotFoundError:  # deleted under us: create it again
                return self._create(now, ctx, timeout)
            except errors.ConflictError:  # written by someone else: take the latest, retry
                lease.get(ctx=ctx, timeout=timeout)
                return False
            return True
        except Exception as exc:
            if not ctx.cancelled():
                log.warning("shard coordinator %s: renewing lease %s failed: %s",
                            self.identity, lease.describe(), exc)
            return False

    def _create(self, now: str, ctx: _context.Context, timeout: float) -> bool:
        """Create this member's Lease, or take over one of its group left from an earlier run;
        False when a Lease of that name belongs to another group (said once, as an error)."""
        spec = {"holderIdentity": self.identity,
                "leaseDurationSeconds": lease_seconds(self._lease_duration),
                "acquireTime": now, "renewTime": now}
        labels = {GROUP_LABEL: self.group}
        try:
            self._lease.create(spec, labels=labels, ctx=ctx, timeout=timeout)
        except errors.ConflictError:  # left over from an earlier run: take it over
            found = self._lease.get(ctx=ctx, timeout=timeout)
            group = meta.labels(found).get(GROUP_LABEL) if found is not None else None
            if group is not None and group != self.group:
                self._lease.forget()
                if group not in self._other_groups:
                    self._other_groups.add(group)
                    log.error("shard coordinator %s: lease %s belongs to group %r, not %r: two "
                              "groups' names meet in it; this member owns nothing until it is "
                              "given another identity or group", self.identity,
                              self._lease.describe(), group, self.group)
                return False
            self._lease.update(spec, labels=labels, ctx=ctx, timeout=timeout)
        return True

    def _delete(self) -> None:
        """Delete this member's Lease so the others take its range at once (best effort)."""
        lease = self._lease
        if lease.lease is None:
            return
        try:
            lease.delete(timeout=REQUEST_TIMEOUT)
        except Exception as exc:
            log.warning("shard coordinator %s: deleting lease %s failed: %s; it expires "
                        "after %.0fs", self.identity, lease.describe(), exc,
                        self._lease_duration)


class _Announcer:
    """Tells a coordinator's listeners each new selector on a thread of its own, every one, in
    the order they were published (API.md: ``fn(selector)`` on every change)."""

    def __init__(self, coordinator: ShardCoordinator) -> None:
        self._coordinator = coordinator
        self._cond = threading.Condition()  # guards the fields below
        self._pending: collections.deque[sharding.ShardSelector] = collections.deque()
        self._busy = False  # a selector is pending or being told
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        self._thread = _threads.spawn(self._run, name)

    def threads(self) -> list[threading.Thread]:
        return [] if self._thread is None else [self._thread]

    def announce(self, selector: sharding.ShardSelector) -> None:
        with self._cond:
            self._pending.append(selector)
            self._busy = True
            self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until every selector announced was told (True), or ``timeout`` seconds."""
        with self._cond:
            if self._thread is None:  # never started: nobody to tell
                return True
            return self._cond.wait_for(lambda: not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending) or self._closed)
                if not self._pending:  # closed, and everything told
                    return
                selector = self._pending.popleft()
            self._coordinator._tell(selector)
            with self._cond:
                if not self._pending:
                    self._busy = False
                    self._cond.notify_all()


class _Leases(store.Indexer):
    """The group's Leases as the reflector lists and watches them; each change sets ``changed``."""

    __slots__ = ("_changed",)

    def __init__(self, changed: threading.Event) -> None:
        super().__init__(store.meta_namespace_key_func)
        self._changed = changed

    def add(self, obj: Any, key: str | None = None) -> None:
        self._write(obj, key)
        self._changed.set()

    update = add

    def delete(self, obj: Any) -> None:
        super().delete(obj)
        self._changed.set()

    def replace(self, objs: Any, resource_version: str = "") -> None:
        super().replace(objs, resource_version)
        self._changed.set()
