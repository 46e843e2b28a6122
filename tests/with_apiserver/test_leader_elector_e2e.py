"""Two and three LeaderElectors on the real clock against one FakeAPIServer.

A sampler looks at every elector throughout: never two report themselves leader, and never two
run their leader's work at once. The hand-over after a leader stops waits out the lease (the
new acquire time is at least lease_duration after the old holder's last renewal) unless the
leader released it; a leader that loses the server steps down by itself, cancelling its work
before ``on_stopped_leading``.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import TIMEOUT, client_threads

from kinformer import (
    Context,
    GroupVersionResource,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
)
from kinformer.testing import FakeAPIServer, wait_for

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
# short, with a full second between a leader's step-down deadline and the others' takeover, so
# a busy machine cannot make two leaders overlap
LEASE, RENEW, RETRY = 2.0, 1.0, 0.2
SAMPLE_EVERY = 0.005  # seconds between looks at every elector


class Replica:
    """One elector with its own client, stop context, run thread and leader's-work flag."""

    def __init__(self, apiserver: FakeAPIServer, identity: str, **options: Any) -> None:
        self.identity = identity
        self.api_client = apiserver.api_client()
        self.working = threading.Event()  # set while on_started_leading runs and ctx is live
        self.calls: list[str] = []
        self.leaders: list[str] = []
        self.stop = Context(identity)
        options = {"lease_duration": LEASE, "renew_deadline": RENEW, "retry_period": RETRY} | options
        self.elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(self.api_client, "default", "ha", identity),
            on_started_leading=self._lead, on_stopped_leading=self._stopped,
            on_new_leader=self.leaders.append, name="ha", **options))
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,),
                                       name=f"test-replica-{identity}")
        self.thread.start()

    def _lead(self, ctx: Context) -> None:
        self.working.set()
        self.calls.append("started")
        ctx.wait()
        self.calls.append("cancelled")
        self.working.clear()

    def _stopped(self) -> None:
        self.calls.append("stopped")

    def close(self) -> None:
        self.stop.cancel()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), f"replica {self.identity} did not stop"
        self.api_client.close()


class Sampler:
    """Counts, on its own thread, the most replicas leading and working at the same moment."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.most_leaders = 0
        self.most_working = 0
        self.samples = 0
        self.seen: set[str] = set()  # identities seen leading
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-sampler")
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(SAMPLE_EVERY):
            leading = [r.identity for r in list(self.replicas) if r.elector.is_leader()]
            working = sum(r.working.is_set() for r in list(self.replicas))
            self.seen.update(leading)
            self.most_leaders = max(self.most_leaders, len(leading))
            self.most_working = max(self.most_working, working)
            self.samples += 1

    def close(self) -> None:
        self._done.set()
        self._thread.join(TIMEOUT)


@pytest.fixture
def replicas(apiserver: FakeAPIServer) -> Iterator[list[Replica]]:
    made: list[Replica] = []
    yield made
    for replica in made:
        replica.close()
    assert client_threads() == []


def leader_of(replicas: list[Replica]) -> Replica | None:
    leading = [r for r in replicas if r.elector.is_leader()]
    assert len(leading) <= 1
    return leading[0] if leading else None


def wait_for_leader(
    replicas: list[Replica], sampler: Sampler, other_than: Replica | None = None,
) -> Replica:
    """The next leader, once the sampler has seen it lead (so its reign was sampled)."""
    assert wait_for(lambda: leader_of(replicas) not in (None, other_than), TIMEOUT), "no new leader"
    leader = leader_of(replicas)
    assert leader is not None
    assert wait_for(lambda: leader.identity in sampler.seen, TIMEOUT)
    return leader


def spec(apiserver: FakeAPIServer) -> dict[str, Any]:
    found: dict[str, Any] = apiserver.get(LEASES, "default", "ha")["spec"]
    return found


def micro_time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def test_two_electors_hand_over_only_after_the_lease_expires(
    apiserver: FakeAPIServer, replicas: list[Replica],
) -> None:
    replicas += [Replica(apiserver, "a"), Replica(apiserver, "b")]
    sampler = Sampler(replicas)
    try:
        first = wait_for_leader(replicas, sampler)
        first.stop.cancel()  # no release: the lease must expire first
        first.thread.join(TIMEOUT)
        before = spec(apiserver)  # the last renewal: nobody may take over for a lease_duration
        assert before["holderIdentity"] == first.identity
        second = wait_for_leader(replicas, sampler, other_than=first)
    finally:
        sampler.close()
    taken = spec(apiserver)
    assert taken["holderIdentity"] == second.identity
    assert taken["leaseTransitions"] == 1
    gap = (micro_time(taken["acquireTime"]) - micro_time(before["renewTime"])).total_seconds()
    assert gap >= LEASE
    assert first.calls == ["started", "cancelled", "stopped"]
    # on_new_leader runs on a thread of its own, which may not have got to the second yet
    assert wait_for(lambda: second.leaders == [first.identity, second.identity], TIMEOUT), second.leaders
    assert sampler.most_leaders == 1 and sampler.most_working <= 1 and sampler.samples > 20


def test_a_released_lease_is_taken_over_at_once_not_after_its_duration(
    apiserver: FakeAPIServer, replicas: list[Replica],
) -> None:
    long_lease = {"lease_duration": 60.0, "release_on_cancel": True}  # expiry would take a minute
    replicas += [Replica(apiserver, "a", **long_lease), Replica(apiserver, "b", **long_lease)]
    sampler = Sampler(replicas)
    try:
        first = wait_for_leader(replicas, sampler)
        first.stop.cancel()
        second = wait_for_leader(replicas, sampler, other_than=first)
    finally:
        sampler.close()
    assert spec(apiserver)["holderIdentity"] == second.identity
    assert sampler.most_leaders == 1 and sampler.most_working <= 1


def test_three_electors_hand_over_one_by_one_and_never_overlap(
    apiserver: FakeAPIServer, replicas: list[Replica],
) -> None:
    replicas += [Replica(apiserver, name, release_on_cancel=True) for name in ("a", "b", "c")]
    sampler = Sampler(replicas)
    order = []
    try:
        leader = wait_for_leader(replicas, sampler)
        for _ in range(2):
            order.append(leader.identity)
            leader.stop.cancel()
            leader.thread.join(TIMEOUT)
            leader = wait_for_leader(replicas, sampler, other_than=leader)
        order.append(leader.identity)
    finally:
        sampler.close()
    assert sorted(order) == ["a", "b", "c"]
    assert spec(apiserver)["leaseTransitions"] == 2
    last = next(r for r in replicas if r.identity == order[-1])
    assert wait_for(lambda: last.leaders[-1:] == [order[-1]], TIMEOUT)
    heard = iter(order)  # holders heard of come in order (a short reign may go unseen)
    assert all(name in heard for name in last.leaders)
    assert sampler.most_leaders == 1 and sampler.most_working <= 1


def test_a_leader_that_loses_the_server_steps_down_after_renew_deadline(
    apiserver: FakeAPIServer, replicas: list[Replica],
) -> None:
    replicas += [Replica(apiserver, "a"), Replica(apiserver, "b")]
    sampler = Sampler(replicas)
    try:
        leader = wait_for_leader(replicas, sampler)
    finally:
        sampler.close()
    apiserver.stop()
    leader.thread.join(TIMEOUT)  # run returns by itself: leadership is lost
    assert not leader.thread.is_alive()
    assert leader.calls == ["started", "cancelled", "stopped"]
    assert leader_of(replicas) is None
    apiserver.start()  # the other replica keeps trying; the fixture stops it
