"""The HA chaos driver: leader electors and shard coordinators on one FakeAPIServer under faults.

A :class:`HAChaos` run starts, on one FakeAPIServer over real HTTP, three replicas campaigning
with a :class:`~kinformer.LeaderElector` for one Lease (each, while leading, enters a shared
:class:`CriticalSection` only while ``is_leader()``) and three :class:`~kinformer.ShardCoordinator`
members of one group. It then plays rounds, each one action followed by a wait until things are
quiet again (a leader acts, and the live members' shards are the equal split of the live
members): a burst of 5xx or 429 answers, a 409 storm on Lease writes, dropped watches, a restart
of the server with its state, slow answers, a compaction, a stall of every view of the Leases, a
leader stopped, a leader or a member frozen past its lease (its clock gated: the threads that
wait on it stop), a member joining or leaving. :meth:`HAChaos.report` checks, from what the
replicas recorded:

- no instant with two leaders in the critical section, and every hand-over within
  ``lease_duration + retry_period`` of the old leader's last action (or of the end of the fault
  that held it up);
- every selector a member ever had is within its share of the members before or after the last
  change, and after each change the live members' shards covered the hash space exactly once
  within ``lease_duration + renew_interval`` (plus :data:`SETTLE_SLACK`).

Everything random comes from one seeded ``random.Random``. ``tests/with_apiserver/test_ha_chaos.py``
runs it for seconds, ``benchmarks/soak_ha.py`` for minutes. It imports nothing from the tests but
kinformer, so the soak can load it.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import itertools
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from kinformer import (
    Context,
    GroupVersionResource,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    ShardCoordinator,
    ShardSelector,
)
from kinformer.sharding import HASH_SPACE
from kinformer.testing import FakeAPIServer, wait_for

# leader election: lease > renew deadline > 1.2 * retry; short, so a run sees many hand-overs
ELECTION = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}
# shard coordination
SHARDS = {"lease_duration": 2.0, "renew_interval": 0.4}
SETTLE_SLACK = 0.3  # a renewal in flight at a freeze, then watch delivery, on a loaded host
LINGER = 1.2  # seconds after a fault is cleared for requests it delayed (Retry-After: 1)
ACT = 0.002  # seconds a leader stays in the critical section each time
ACT_GAP = 0.003  # seconds between two actions of a leader
QUIET_TIMEOUT = 40.0  # seconds a round may take to be quiet again (backoffs may have grown)
LOCK = "chaos-leader"
GROUP = "chaos"
POOL = ("m0", "m1", "m2", "m3", "m4")  # shard members that may join; three start
LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")

SERVER_FAULTS = ("5xx", "429", "409-storm", "drop-watches", "restart", "slow", "compact", "stall")
ELECTION_ACTIONS = ("stop-leader", "freeze-leader", "freeze-candidate")
SHARD_ACTIONS = ("join", "leave", "freeze-member")
ACTIONS = SERVER_FAULTS + ELECTION_ACTIONS + SHARD_ACTIONS


class GatedClock:
    """The real monotonic clock behind a gate: while it is closed the replica is frozen.

    ``wait`` neither starts nor returns while frozen (a thread waiting on it stays paused past
    its timeout); with ``freeze_now`` a thread reading the time stops too.
    """

    def __init__(self, freeze_now: bool) -> None:
        self._open = threading.Event()
        self._open.set()
        self._freeze_now = freeze_now

    def freeze(self) -> None:
        self._open.clear()

    def thaw(self) -> None:
        self._open.set()

    @property
    def frozen(self) -> bool:
        return not self._open.is_set()

    def now(self) -> float:
        if self._freeze_now:
            self._open.wait()
        return time.monotonic()

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        self._open.wait()
        fired = event.wait(timeout) if timeout is None or timeout > 0 else event.is_set()
        self._open.wait()
        return fired or event.is_set()


class CriticalSection:
    """Where a leader acts. An entry while another replica is inside is an overlap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards everything below
        self._inside: collections.Counter[str] = collections.Counter()
        self.overlaps: list[str] = []
        self.most_inside = 0
        self.spans: list[tuple[float, float, str]] = []  # (entered, left, identity)

    def act(self, identity: str) -> None:
        with self._lock:
            entered = time.monotonic()
            others = sorted(i for i, n in self._inside.items() if n and i != identity)
            if others:
                self.overlaps.append(f"{identity} entered at {entered:.3f} with {others} inside")
            self._inside[identity] += 1
            self.most_inside = max(self.most_inside, sum(1 for n in self._inside.values() if n))
        threading.Event().wait(ACT)
        with self._lock:
            self._inside[identity] -= 1
            self.spans.append((entered, time.monotonic(), identity))

    def last_entry(self) -> float:
        with self._lock:
            return max((s for s, _, _ in self.spans), default=float("-inf"))


class Candidate:
    """A replica campaigning for the Lease until stopped; a new elector after each lost lead."""

    def __init__(self, server: FakeAPIServer, identity: str, section: CriticalSection) -> None:
        self.identity = identity
        self.api = server.api_client()
        self.clock = GatedClock(freeze_now=False)  # frozen: its election loop; is_leader() works
        self.stop = Context(identity)
        self._section = section
        self.elector: LeaderElector | None = None
        self.thread = threading.Thread(target=self._campaign, name=f"chaos-candidate-{identity}")
        self.thread.start()

    def _campaign(self) -> None:
        while not self.stop.cancelled():
            elector = LeaderElector(LeaderElectionConfig(
                LeaseLock(self.api, "default", LOCK, self.identity),
                on_started_leading=self._lead, release_on_cancel=True, name=self.identity,
                **ELECTION), clock=self.clock)
            self.elector = elector
            elector.run(self.stop)

    def _lead(self, ctx: Context) -> None:
        elector = self.elector
        assert elector is not None
        while not ctx.cancelled():
            if elector.is_leader():
                self._section.act(self.identity)
            ctx.wait(ACT_GAP)

    def close(self) -> None:
        self.clock.thaw()
        self.stop.cancel()
        self.thread.join(30)
        self.api.close()


class Member:
    """A shard group member: a coordinator on its own client and gated clock, its selectors kept."""

    def __init__(self, server: FakeAPIServer, identity: str) -> None:
        self.identity = identity
        self.api = server.api_client()
        self.clock = GatedClock(freeze_now=True)
        self.stop = Context(identity)
        self.coordinator = ShardCoordinator(self.api, GROUP, identity, clock=self.clock, **SHARDS)
        self.had: list[tuple[float, ShardSelector]] = []
        self.coordinator.add_listener(lambda s: self.had.append((time.monotonic(), s)))
        self.thread = threading.Thread(target=self.coordinator.run, args=(self.stop,),
                                       name=f"chaos-member-{identity}")
        self.thread.start()

    def close(self) -> None:
        self.clock.thaw()
        self.stop.cancel()
        self.thread.join(30)
        self.api.close()


def share(identity: str, members: frozenset[str]) -> list[tuple[int, int]]:
    """The hash ranges ``identity`` owns among ``members`` ([] when not one of them)."""
    if identity not in members:
        return []
    ordered = sorted(members)
    return ShardSelector.for_shard(ordered.index(identity), len(ordered)).ranges


def within(ranges: list[tuple[int, int]], allowed: list[tuple[int, int]]) -> bool:
    """Whether every range of ``ranges`` lies inside the union of ``allowed``."""
    merged: list[list[int]] = []
    for start, end in sorted(allowed):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return all(any(a <= start and end <= b for a, b in merged) for start, end in ranges)


def covers_once(selectors: list[ShardSelector]) -> bool:
    ranges = sorted(r for s in selectors for r in s.ranges)
    return bool(ranges) and ranges[0][0] == 0 and ranges[-1][1] == HASH_SPACE and all(
        a[1] == b[0] for a, b in itertools.pairwise(ranges))


@dataclasses.dataclass
class Figures:
    """What a run found; ``problems`` lists every broken promise."""

    seed: int
    rounds: int = 0
    actions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    leaders_at_once: int = 0
    hand_overs: int = 0
    worst_hand_over: float = 0.0
    worst_hand_over_bound: float = 0.0
    changes: int = 0
    worst_settle: float = 0.0
    coverage_violations: int = 0
    share_violations: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["actions"] = dict(sorted(self.actions.items()))
        out["faults_injected"] = sum(n for kind, n in self.actions.items()
                                     if kind not in ("join", "leave"))
        return out

    def summary(self) -> str:
        return (f"seed {self.seed}: {self.rounds} rounds, actions {dict(sorted(self.actions.items()))}, "
                f"leaders at once <= {self.leaders_at_once}, {self.hand_overs} hand-overs "
                f"(worst {self.worst_hand_over:.2f}s, bound {self.worst_hand_over_bound:.2f}s), "
                f"{self.changes} membership changes (worst settle {self.worst_settle:.2f}s), "
                f"coverage violations {self.coverage_violations}, share violations "
                f"{self.share_violations}")


class HAChaos:
    """See the module docstring. ``run(seconds)`` plays rounds; ``close()`` stops everything."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.server = FakeAPIServer(bookmark_interval=0.2, future_rv_wait=0.3)
        self.server.start()
        self.section = CriticalSection()
        self.candidates = {name: Candidate(self.server, name, self.section) for name in "abc"}
        self.members: dict[str, Member] = {}
        self.retired: list[Member] = []  # stopped members, kept for their selector history
        self.frozen: set[str] = set()
        self.configs: list[tuple[float, frozenset[str]]] = [(time.monotonic(), frozenset())]
        self.excused: list[tuple[float, float]] = []  # server faults: (start, end)
        self.figures = Figures(seed)
        self.began = self.ended = float("inf")  # the checked stretch: after the first quiet
        self.log: list[tuple[float, str]] = []  # (when, what) of each round
        for name in POOL[:3]:
            self._add_member(name)

    # -- membership ---------------------------------------------------------------------------

    def live(self) -> frozenset[str]:
        return frozenset(n for n in self.members if n not in self.frozen)

    def _changed(self, live: frozenset[str]) -> float:
        """Note that the live members are now ``live``; call it before they can act on it."""
        now = time.monotonic()
        self.configs.append((now, live))
        return now

    def _add_member(self, name: str) -> float:
        since = self._changed(self.live() | {name})
        self.members[name] = Member(self.server, name)
        return since

    def _remove_member(self, name: str) -> float:
        since = self._changed(self.live() - {name})
        member = self.members.pop(name)
        member.close()  # deletes its Lease on the way out
        self.retired.append(member)
        return since

    def settled(self) -> bool:
        """Every live member owns its equal share of the live members, and they cover once."""
        live = self.live()
        if self.server.watcher_count(LEASES) < len(live):  # a view may be stalled
            return False
        selectors = [self.members[n].coordinator.selector() for n in sorted(live)]
        expected = [ShardSelector.for_shard(i, len(live)) for i in range(len(live))]
        return selectors == expected and covers_once(selectors)

    def _settle(self, since: float, what: str) -> None:
        """Wait for the change made at ``since`` to settle; note how long it took."""
        bound = SHARDS["lease_duration"] + SHARDS["renew_interval"] + SETTLE_SLACK
        if not wait_for(self.settled, QUIET_TIMEOUT, 0.005):
            self.figures.coverage_violations += 1
            self.figures.problems.append(f"{what}: the live members never covered the hash space once")
            return
        took = time.monotonic() - since
        self.figures.changes += 1
        self.figures.worst_settle = max(self.figures.worst_settle, took)
        if took > bound:
            self.figures.coverage_violations += 1
            self.figures.problems.append(f"{what}: settled after {took:.2f}s, bound {bound:.2f}s")

    # -- rounds -------------------------------------------------------------------------------

    def run(self, seconds: float) -> Figures:
        end = time.monotonic() + seconds
        self._quiet("start")  # the members joined at once: their first views may lag
        self.began = time.monotonic()
        # a hand-over and a membership change first, so even a short run has both to check
        first = [self.rng.choice(("stop-leader", "freeze-leader")), self.rng.choice(SHARD_ACTIONS)]
        while time.monotonic() < end:
            action = first.pop(0) if first else self.rng.choice(ACTIONS)
            self.log.append((time.monotonic(), action))
            self.figures.actions[action] += 1
            self.figures.rounds += 1
            getattr(self, "_" + action.replace("-", "_"))()
            self.server.clear_faults()
            self._quiet(action)
        self.ended = time.monotonic()
        return self.figures

    def _quiet(self, after: str) -> None:
        """Wait until a leader acts after now and the members settled."""
        since = time.monotonic()
        if not wait_for(lambda: self.section.last_entry() > since, QUIET_TIMEOUT, 0.005):
            self.figures.problems.append(f"after {after}: no leader acted for {QUIET_TIMEOUT}s")
        if not wait_for(self.settled, QUIET_TIMEOUT, 0.005):
            self.figures.coverage_violations += 1
            self.figures.problems.append(f"after {after}: members did not settle")

    def _hold(self, low: float, high: float) -> None:
        threading.Event().wait(self.rng.uniform(low, high))

    def _server_fault(self, inject: Callable[[], None], low: float, high: float) -> None:
        start = time.monotonic()
        inject()
        self._hold(low, high)
        self.server.clear_faults()
        # answers already delayed still come late: a slow one, or a 429 whose Retry-After the
        # official client's HTTP library waits out before it retries by itself
        threading.Event().wait(LINGER)
        self.excused.append((start, time.monotonic()))

    def _5xx(self) -> None:
        verb = self.rng.choice((None, "get", "update", "create", "list", "watch"))
        self._server_fault(lambda: self.server.fail_next(
            self.rng.randint(2, 5), self.rng.choice((500, 503)), verb=verb, resource="leases"),
            0.2, 0.8)

    def _429(self) -> None:
        verb = self.rng.choice((None, "get", "update", "list", "watch"))
        self._server_fault(lambda: self.server.fail_next(
            self.rng.randint(2, 4), 429, verb=verb, resource="leases"), 0.2, 0.8)

    def _409_storm(self) -> None:
        self._server_fault(lambda: self.server.fail_next(
            self.rng.randint(3, 8), 409, verb="update", resource="leases"), 0.3, 1.0)

    def _drop_watches(self) -> None:
        self._server_fault(self.server.drop_watches, 0.0, 0.2)

    def _compact(self) -> None:
        def compact() -> None:
            self.server.compact()
            self.server.end_watches()

        self._server_fault(compact, 0.0, 0.2)

    def _slow(self) -> None:
        verb = self.rng.choice((None, "get", "update", "watch", "list"))
        self._server_fault(lambda: self.server.set_delay(self.rng.uniform(0.05, 0.3), verb),
                           0.5, 1.5)

    def _stall(self) -> None:
        def stall() -> None:  # every view of the Leases stops: renewals go on
            self.server.forbid("leases", "list")
            self.server.forbid("leases", "watch")
            self.server.drop_watches()

        self._server_fault(stall, 0.5, 2.5)

    def _restart(self) -> None:
        start = time.monotonic()
        self.server.stop()
        self._hold(0.05, 0.5)
        self.server.start()
        self.excused.append((start, time.monotonic()))

    def _leader(self) -> Candidate | None:
        """The candidate whose elector says it leads (frozen ones are not asked)."""
        for candidate in self.candidates.values():
            elector = candidate.elector
            if elector is not None and not candidate.clock.frozen and elector.is_leader():
                return candidate
        return None

    def _stop_leader(self) -> None:
        """The leader stops (releasing the Lease); it campaigns again once another leads."""
        leader = self._leader()
        if leader is None:
            return
        leader.close()
        stopped = time.monotonic()
        wait_for(lambda: self.section.last_entry() > stopped, QUIET_TIMEOUT, 0.005)
        self.candidates[leader.identity] = Candidate(self.server, leader.identity, self.section)

    def _freeze_leader(self) -> None:
        leader = self._leader()
        if leader is not None:
            self._freeze(leader.clock)

    def _freeze_candidate(self) -> None:
        leader = self._leader()
        self._freeze(self.rng.choice([c for c in self.candidates.values() if c is not leader]).clock)

    def _freeze(self, clock: GatedClock) -> None:
        """Long enough past the lease for another candidate to have taken over."""
        clock.freeze()
        lease = ELECTION["lease_duration"]
        self._hold(lease + 1.5, lease + 2.5)
        clock.thaw()

    def _join(self) -> None:
        name = self.rng.choice([n for n in POOL if n not in self.members] or [""])
        if name:
            self._settle(self._add_member(name), f"{name} joining")

    def _leave(self) -> None:
        if len(self.members) > 2:
            name = self.rng.choice(sorted(self.members))
            self._settle(self._remove_member(name), f"{name} leaving")

    def _freeze_member(self) -> None:
        """A member frozen past its lease: the others drop it; thawed, it comes back."""
        name = self.rng.choice(sorted(self.members))
        member = self.members[name]
        member.clock.freeze()
        self.frozen.add(name)
        self._settle(self._changed(self.live()), f"freezing {name}")
        self._hold(0.0, 0.5)
        self.frozen.discard(name)
        since = self._changed(self.live())
        member.clock.thaw()
        self._settle(since, f"thawing {name}")

    # -- checks -------------------------------------------------------------------------------

    def check(self) -> Figures:
        """Fill in the figures from what was recorded; problems list what broke a promise."""
        figures = self.figures
        figures.leaders_at_once = self.section.most_inside
        figures.problems += [f"two leaders acting: {o}" for o in self.section.overlaps]
        self._check_hand_overs()
        self._check_shares()
        return figures

    def _check_hand_overs(self) -> None:
        figures = self.figures
        spans = sorted(self.section.spans)
        bound = ELECTION["lease_duration"] + ELECTION["retry_period"]
        for before, after in itertools.pairwise(spans):  # a new leader's first action after began
            if before[2] == after[2] or not self.began <= after[0] <= self.ended:
                continue
            old_end, new_start = before[1], after[0]
            held_up = [end for start, end in self.excused if start < new_start and end > old_end]
            since = max([old_end, *held_up])
            took = new_start - since
            figures.hand_overs += 1
            figures.worst_hand_over = max(figures.worst_hand_over, new_start - old_end)
            figures.worst_hand_over_bound = max(figures.worst_hand_over_bound, took)
            if took > bound:
                figures.problems.append(
                    f"hand-over {before[2]} -> {after[2]} took {took:.2f}s after the old leader's "
                    f"end (or the fault's), bound {bound:.2f}s")

    def _check_shares(self) -> None:
        times = [t for t, _ in self.configs]
        for member in [*self.members.values(), *self.retired]:
            for at, selector in list(member.had):
                if not self.began <= at <= self.ended:
                    continue
                k = bisect.bisect_right(times, at) - 1
                allowed = share(member.identity, self.configs[k][1])
                if k > 0:
                    allowed = allowed + share(member.identity, self.configs[k - 1][1])
                if not within(selector.ranges, allowed):
                    self.figures.share_violations += 1
                    self.figures.problems.append(
                        f"{member.identity} owned {selector} at {at:.3f}, members "
                        f"{sorted(self.configs[k][1])} (before: "
                        f"{sorted(self.configs[k - 1][1]) if k else []})")

    def close(self) -> None:
        self.server.clear_faults()
        if not self.server.running:
            self.server.start()
        for candidate in self.candidates.values():
            candidate.close()
        for member in list(self.members.values()):
            member.close()
        self.server.stop()
