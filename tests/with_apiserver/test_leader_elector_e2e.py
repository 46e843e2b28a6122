"""Two and three LeaderElectors on the real clock against one FakeAPIServer.

A sampler looks at every elector throughout: never two report themselves leader, and never two
run their leader's work at once. The hand-over after a leader stops waits out the lease (the
new acquire time is at least lease_duration after the old holder's last renewal) unless the
leader released it; a leader that loses the server steps down by itself, cancelling its work
before ``on_stopped_leading``.
"""

from __future__ import annotations

import datetime
import select
import socket
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


class SilencingRelay:
    """A TCP relay to the server (a network link) that can go silent: once ``silence()`` is
    called it stops passing bytes either way, on every connection, and holds what it gets, as
    a link that drops everything; the client's requests then end only by their timeouts."""

    def __init__(self, port: int) -> None:
        self._upstream = ("127.0.0.1", port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # closing a socket does not wake a blocked accept()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._silent = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        self._threads = [threading.Thread(target=self._accept, name="test-relay-accept")]
        self._threads[0].start()

    def silence(self) -> None:
        self._silent.set()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            server = socket.create_connection(self._upstream)
            self._sockets += [client, server]
            relay = threading.Thread(target=self._relay, args=(client, server), name="test-relay")
            self._threads.append(relay)
            relay.start()

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        peer = {client: server, server: client}
        while not self._closed.is_set():
            if self._silent.is_set():
                self._closed.wait()  # hold the connection, pass nothing
                return
            try:
                ready, _, _ = select.select([client, server], [], [], 0.05)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peer[sock].sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._closed.set()
        self._threads[0].join(TIMEOUT)  # accepts no more: the list of sockets is final
        for sock in self._sockets:
            sock.close()
        for thread in self._threads:
            thread.join(TIMEOUT)
            assert not thread.is_alive(), f"{thread.name} did not end"


class Replica:
    """One elector with its own client, stop context, run thread and leader's-work flag."""

    def __init__(self, apiserver: FakeAPIServer, identity: str, host: str | None = None,
                 **options: Any) -> None:
        self.identity = identity
        self.api_client = apiserver.api_client()
        if host is not None:  # through a link of the test's own
            self.api_client.configuration.host = host
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


def test_a_leader_whose_link_goes_silent_stops_its_work_by_renew_deadline_before_a_takeover(
    apiserver: FakeAPIServer, replicas: list[Replica],
) -> None:
    """A renewal that gets no answer is one attempt, bounded by what is left of renew_deadline
    as a whole. Each of its requests (the renewal, then a read of the Lease) once had all of it
    to itself, so a leader cut off from the server kept working up to about twice renew_deadline,
    past the lease another replica then took."""
    timing = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.2}
    link = SilencingRelay(apiserver.port)
    try:
        replicas.append(Replica(apiserver, "a", host=link.url, **timing))
        first = replicas[0]
        assert wait_for(first.elector.is_leader, TIMEOUT)
        replicas.append(Replica(apiserver, "b", **timing))
        sampler = Sampler(replicas)
        try:
            renewed = spec(apiserver)["renewTime"]
            assert wait_for(lambda: spec(apiserver)["renewTime"] != renewed, TIMEOUT)  # just renewed
            link.silence()
            second = replicas[1]
            # b takes over a lease_duration after a's last renewal it saw: longer than TIMEOUT
            assert wait_for(second.working.is_set, 3 * TIMEOUT), "b never led"
            seen = sampler.samples
            assert wait_for(lambda: sampler.samples > seen + 1, TIMEOUT)  # sampled with b at work
        finally:
            sampler.close()
        assert first.calls[:2] == ["started", "cancelled"]
        assert sampler.most_working == 1, "a's work went on while b led"
    finally:
        for replica in replicas:
            replica.stop.cancel()
        link.close()


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
