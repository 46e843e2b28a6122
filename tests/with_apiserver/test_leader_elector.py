"""LeaderElector on a fake clock, over a real Lease on FakeAPIServer.

The elector's time is a FakeClock the test steps; its requests are real HTTP. Each behaviour of
client-go's elector is checked: acquire and renew, expiry judged on the local clock whatever
times the record holds, takeover, a 409 as a failed attempt, stepping down, release, the health
check, the order of callbacks, and that ``run`` joins every thread it started.
"""

from __future__ import annotations

import datetime
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import (
    TIMEOUT,
    EchoingServer,
    client_for,
    client_threads,
    metric_value,
    running,
    step_when_waiting,
)

from kinformer import (
    AlreadyStartedError,
    Context,
    GroupVersionResource,
    LeaderElectionConfig,
    LeaderElectionError,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
)
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock"
LEASE, RENEW, RETRY = 15.0, 10.0, 2.0  # client-go's defaults; the clock is fake


class Callbacks:
    """Records the elector's callbacks: ``calls`` in order, ``leaders`` from on_new_leader.

    The leader's work waits for its context, then (with a ``gate``) for the gate before it
    returns, so a test can hold it after cancellation.
    """

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: queue.Queue[str] = queue.Queue()
        self.leaders: queue.Queue[str] = queue.Queue()
        self.ctx: Context | None = None
        self.ctx_cancelled_at_stop: bool | None = None
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.gate = gate

    def on_started_leading(self, ctx: Context) -> None:
        self.ctx = ctx
        self.calls.put("started")
        self.started.set()
        ctx.wait()
        self.calls.put("cancelled")
        if self.gate is not None:
            self.gate.wait(TIMEOUT)
        self.calls.put("returned")

    def on_stopped_leading(self) -> None:
        self.ctx_cancelled_at_stop = self.ctx is not None and self.ctx.cancelled()
        self.calls.put("stopped")
        self.stopped.set()

    def on_new_leader(self, identity: str) -> None:
        self.leaders.put(identity)

    def taken(self, q: queue.Queue[str]) -> list[str]:
        found = []
        while not q.empty():
            found.append(q.get_nowait())
        return found


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lock(api_client: Any) -> LeaseLock:
    return LeaseLock(api_client, "default", "lock", "me")


def elector_for(lock: LeaseLock, clock: FakeClock, callbacks: Callbacks, **options: Any) -> LeaderElector:
    config = LeaderElectionConfig(
        lock, lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY,
        on_started_leading=callbacks.on_started_leading,
        on_stopped_leading=callbacks.on_stopped_leading,
        on_new_leader=callbacks.on_new_leader, **options)
    return LeaderElector(config, clock=clock)


def lease_spec(apiserver: FakeAPIServer) -> dict[str, Any]:
    spec: dict[str, Any] = apiserver.get(LEASES, "default", "lock")["spec"]
    return spec


def hold_lease(apiserver: FakeAPIServer, holder: str, renew_time: str, transitions: int = 3) -> None:
    """Create the Lease as held by ``holder``, with ``renew_time`` (a MicroTime) as written."""
    apiserver.create(LEASES, {"metadata": {"name": "lock", "namespace": "default"}, "spec": {
        "holderIdentity": holder, "leaseDurationSeconds": int(LEASE), "leaseTransitions": transitions,
        "acquireTime": renew_time, "renewTime": renew_time}})


def lease_reads(apiserver: FakeAPIServer) -> int:
    return sum(1 for method, path, _, _ in apiserver.requests if method == "GET" and path == LEASE_PATH)


def next_wait(clock: FakeClock) -> float:
    """The time left in the elector's current wait on the clock."""
    assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT), "the elector does not wait"
    return min(w for w in clock.waiters() if w > 0)


def next_attempt(clock: FakeClock) -> float:
    """Step the clock through the elector's current wait; return once its next attempt is over
    (it waits again). Only the elector's run thread waits on the clock."""
    stepped = step_when_waiting(clock)
    assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT), "the elector did not wait again"
    return stepped


@pytest.fixture
def running_elector(lock: LeaseLock, clock: FakeClock) -> Iterator[tuple[LeaderElector, Callbacks]]:
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        yield elector, callbacks


# -- acquire and renew --


def test_a_missing_lease_is_created_and_the_elector_leads(
    running_elector: tuple[LeaderElector, Callbacks], apiserver: FakeAPIServer,
) -> None:
    elector, callbacks = running_elector
    assert callbacks.started.wait(TIMEOUT)
    assert elector.is_leader()
    assert elector.get_leader() == "me"
    spec = lease_spec(apiserver)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("me", 15, 0)
    assert spec["acquireTime"] == spec["renewTime"]
    assert callbacks.ctx is not None and not callbacks.ctx.cancelled()
    assert callbacks.leaders.get(timeout=TIMEOUT) == "me"


def test_the_leader_renews_every_retry_period_keeping_acquire_time_and_transitions(
    running_elector: tuple[LeaderElector, Callbacks], apiserver: FakeAPIServer, clock: FakeClock,
) -> None:
    elector, callbacks = running_elector
    assert callbacks.started.wait(TIMEOUT)
    first = lease_spec(apiserver)
    assert step_when_waiting(clock) == RETRY  # the leader's pause is not jittered
    assert wait_for(lambda: lease_spec(apiserver)["renewTime"] != first["renewTime"], TIMEOUT)
    renewed = lease_spec(apiserver)
    assert renewed["acquireTime"] == first["acquireTime"]
    assert renewed["leaseTransitions"] == 0
    assert renewed["renewTime"] > first["renewTime"]
    assert elector.is_leader()


# -- expiry and takeover --


@pytest.mark.parametrize("skewed", ["2001-01-01T00:00:00.000000Z", "2100-01-01T00:00:00.000000Z"])
def test_expiry_is_judged_on_the_local_clock_whatever_the_record_times_say(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock, skewed: str,
) -> None:
    hold_lease(apiserver, "other", skewed)
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        assert callbacks.leaders.get(timeout=TIMEOUT) == "other"
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
        waited = 0.0
        while waited + next_wait(clock) < LEASE:  # the next attempt still comes before expiry
            reads = lease_reads(apiserver)
            waited += next_attempt(clock)
            assert lease_reads(apiserver) > reads
            assert not elector.is_leader()
            assert elector.get_leader() == "other"
        waited += step_when_waiting(clock)  # the first attempt at or after lease_duration
        assert callbacks.started.wait(TIMEOUT)
        assert LEASE <= waited < LEASE + RETRY * 2.2
        assert elector.is_leader()
        spec = lease_spec(apiserver)
        assert spec["holderIdentity"] == "me"
        assert spec["leaseTransitions"] == 4
        assert spec["acquireTime"] == spec["renewTime"] != skewed
        assert callbacks.leaders.get(timeout=TIMEOUT) == "me"


def test_a_holder_that_keeps_renewing_is_never_taken_over(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "other", "2026-12-03T08:00:00.000000Z")
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
        waited = 0.0
        second = 0
        while waited < 3 * LEASE:
            second += 1
            lease = apiserver.get(LEASES, "default", "lock")
            lease["spec"]["renewTime"] = f"2026-12-03T08:00:{second:02d}.000000Z"  # the holder renews
            apiserver.update(LEASES, lease)
            waited += next_attempt(clock)
            assert not elector.is_leader()
        assert lease_spec(apiserver)["holderIdentity"] == "other"
    assert callbacks.taken(callbacks.calls) == []


def test_a_released_lease_is_acquired_at_once(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "", "2026-12-03T08:00:00.000000Z", transitions=7)
    callbacks = Callbacks()
    with running(elector_for(lock, clock, callbacks).run):
        assert callbacks.started.wait(TIMEOUT)
        assert lease_spec(apiserver)["leaseTransitions"] == 8
        assert callbacks.leaders.get(timeout=TIMEOUT) == "me"


def test_a_conflict_while_taking_over_is_a_failed_attempt(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "", "2026-12-03T08:00:00.000000Z")
    apiserver.set_delay(0.3, verb="update")  # room for a rival to write between read and update
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        assert wait_for(lambda: lease_reads(apiserver) == 1, TIMEOUT)
        lease = apiserver.get(LEASES, "default", "lock")
        lease["spec"]["holderIdentity"] = "rival"
        apiserver.update(LEASES, lease)
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
        apiserver.set_delay(0)
        assert ("PUT", LEASE_PATH, {}, 409) in apiserver.requests
        assert not elector.is_leader()
        next_attempt(clock)
        assert elector.get_leader() == "rival"
        assert not elector.is_leader()
        assert lease_spec(apiserver)["holderIdentity"] == "rival"
    assert callbacks.taken(callbacks.calls) == []


# -- stepping down --


def test_a_leader_that_cannot_renew_steps_down_after_renew_deadline(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        assert callbacks.started.wait(TIMEOUT)
        apiserver.fail_next(1000, 500, resource="leases")
        waited = 0.0
        while waited + RETRY < RENEW:
            waited += next_attempt(clock)
            assert elector.is_leader()
        clock.step(RENEW - waited)
        assert callbacks.stopped.wait(TIMEOUT)
        assert not elector.is_leader()
        assert callbacks.ctx_cancelled_at_stop is True
        assert callbacks.taken(callbacks.calls) == ["started", "cancelled", "returned", "stopped"]
    apiserver.fail_next(0, resource="leases")


def test_a_leader_that_finds_another_holder_steps_down_at_once(
    running_elector: tuple[LeaderElector, Callbacks], apiserver: FakeAPIServer, clock: FakeClock,
) -> None:
    elector, callbacks = running_elector
    assert callbacks.started.wait(TIMEOUT)
    lease = apiserver.get(LEASES, "default", "lock")
    lease["spec"]["holderIdentity"] = "usurper"
    apiserver.update(LEASES, lease)
    step_when_waiting(clock)
    assert callbacks.stopped.wait(TIMEOUT)
    assert not elector.is_leader()
    assert elector.get_leader() == "usurper"
    assert ("PUT", LEASE_PATH, {}, 409) in apiserver.requests  # the renewal over the old version
    # on_new_leader runs on its own thread, which may not have got to the usurper yet
    assert [callbacks.leaders.get(timeout=TIMEOUT) for _ in range(2)] == ["me", "usurper"]


def test_a_leader_whose_work_fails_steps_down_and_releases_the_lease(
    lock: LeaseLock, clock: FakeClock, apiserver: FakeAPIServer, caplog: pytest.LogCaptureFixture,
) -> None:
    callbacks = Callbacks()

    def fails(ctx: Context) -> None:  # a manager that could not start its informers, say
        raise RuntimeError("no such resource")

    elector = LeaderElector(LeaderElectionConfig(
        lock, lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY, release_on_cancel=True,
        on_started_leading=fails, on_stopped_leading=callbacks.on_stopped_leading), clock=clock)
    returned = threading.Event()

    def run() -> None:
        elector.run(threading.Event())  # never stopped: it returns by stepping down
        returned.set()

    thread = threading.Thread(target=run, name="test-elector")
    thread.start()
    try:
        assert wait_for(lambda: "on_started_leading failed" in caplog.text, TIMEOUT)
        # the renewal loop sees the failure at once, or at its next renewal: step to that
        assert wait_for(lambda: returned.is_set() or any(w > 0 for w in clock.waiters()), TIMEOUT)
        if not returned.is_set():
            clock.step(RETRY)
        assert returned.wait(TIMEOUT)
    finally:
        thread.join(TIMEOUT)
    assert callbacks.stopped.is_set() and not elector.is_leader()
    assert lease_spec(apiserver)["holderIdentity"] == ""  # another replica may lead at once


def test_a_leaders_work_failing_with_an_error_that_quotes_a_token_is_logged_redacted(
    lock: LeaseLock, clock: FakeClock, caplog: pytest.LogCaptureFixture,
) -> None:
    from kubernetes import client as k8s

    token = "leader-secret-token-1618"
    echoing = EchoingServer(as_status=False)  # its answer echoes the request's headers
    client = client_for(f"http://127.0.0.1:{echoing.server_address[1]}", token)

    def reads(ctx: Context) -> None:  # its work reads through the official client, refused
        k8s.CoreV1Api(client).read_namespaced_config_map("app", "default")

    elector = LeaderElector(LeaderElectionConfig(
        lock, lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY, release_on_cancel=True,
        on_started_leading=reads, on_stopped_leading=lambda: None), clock=clock)
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), name="test-elector")
    thread.start()
    try:
        assert wait_for(lambda: "on_started_leading failed" in caplog.text, TIMEOUT)
    finally:
        stop.set()
        thread.join(TIMEOUT)
        client.close()
        echoing.close()
    assert not thread.is_alive()
    assert token not in caplog.text
    assert "HTTP response body: denied GET /api/v1/namespaces/default/configmaps/app" in caplog.text
    assert "authorization: [redacted]" in caplog.text.lower()


def test_stop_cancels_the_leaders_context_before_on_stopped_leading_and_keeps_the_lease(
    lock: LeaseLock, clock: FakeClock, apiserver: FakeAPIServer,
) -> None:
    callbacks = Callbacks()
    with running(elector_for(lock, clock, callbacks).run):
        assert callbacks.started.wait(TIMEOUT)
    assert callbacks.taken(callbacks.calls) == ["started", "cancelled", "returned", "stopped"]
    assert callbacks.ctx_cancelled_at_stop is True
    assert lease_spec(apiserver)["holderIdentity"] == "me"


def test_release_on_cancel_empties_the_holder_after_the_work_returned(
    lock: LeaseLock, clock: FakeClock, apiserver: FakeAPIServer,
) -> None:
    callbacks = Callbacks()
    seen_at_stop: list[dict[str, Any]] = []
    stopped = callbacks.on_stopped_leading

    def on_stopped_leading() -> None:
        seen_at_stop.append(lease_spec(apiserver))
        stopped()

    callbacks.on_stopped_leading = on_stopped_leading  # type: ignore[method-assign]
    elector = elector_for(lock, clock, callbacks, release_on_cancel=True)
    with running(elector.run):
        assert callbacks.started.wait(TIMEOUT)
        acquired = lease_spec(apiserver)
    assert callbacks.taken(callbacks.calls) == ["started", "cancelled", "returned", "stopped"]
    released = seen_at_stop[0]
    assert (released["holderIdentity"], released["leaseDurationSeconds"]) == ("", 1)
    assert released["leaseTransitions"] == acquired["leaseTransitions"]
    assert released["renewTime"] > acquired["renewTime"]
    assert elector.get_leader() == ""


def test_release_still_happens_when_stop_broke_off_a_renewal_the_server_wrote(
    lock: LeaseLock, clock: FakeClock, apiserver: FakeAPIServer,
) -> None:
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks, release_on_cancel=True)
    with running(elector.run):
        assert callbacks.started.wait(TIMEOUT)
        apiserver.set_delay(0.3, verb="update")  # the server writes the renewal after a pause
        step_when_waiting(clock)
        assert wait_for(lambda: not clock.has_waiters(), TIMEOUT)  # the renewal is in flight
    assert callbacks.stopped.is_set()
    assert ("PUT", LEASE_PATH, {}, 409) in apiserver.requests  # the first release was stale
    assert lease_spec(apiserver)["holderIdentity"] == ""


def test_a_stop_before_leading_calls_neither_start_nor_stop(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "other", "2026-12-03T08:00:00.000000Z")
    callbacks = Callbacks()
    with running(elector_for(lock, clock, callbacks, release_on_cancel=True).run):
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
    assert callbacks.taken(callbacks.calls) == []
    assert callbacks.taken(callbacks.leaders) == ["other"]
    assert lease_spec(apiserver)["holderIdentity"] == "other"


# -- callbacks and threads --


def test_on_new_leader_hears_each_new_holder_in_order(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "first", "2026-12-03T08:00:00.000000Z")
    callbacks = Callbacks()
    with running(elector_for(lock, clock, callbacks).run):
        assert callbacks.leaders.get(timeout=TIMEOUT) == "first"
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
        lease = apiserver.get(LEASES, "default", "lock")
        lease["spec"]["holderIdentity"] = "second"
        apiserver.update(LEASES, lease)
        next_attempt(clock)
        assert callbacks.leaders.get(timeout=TIMEOUT) == "second"
        clock.step(LEASE)
        assert callbacks.started.wait(TIMEOUT)
        assert callbacks.leaders.get(timeout=TIMEOUT) == "me"
    assert callbacks.taken(callbacks.leaders) == []


def test_run_returns_only_after_the_leaders_work_returned(
    lock: LeaseLock, clock: FakeClock,
) -> None:
    gate = threading.Event()
    callbacks = Callbacks(gate)
    elector = elector_for(lock, clock, callbacks)
    stop = Context()
    returned = threading.Event()

    def run() -> None:
        elector.run(stop)
        returned.set()

    thread = threading.Thread(target=run, name="test-run")
    thread.start()
    try:
        assert callbacks.started.wait(TIMEOUT)
        stop.cancel()
        assert callbacks.calls.get(timeout=TIMEOUT) == "started"
        assert callbacks.calls.get(timeout=TIMEOUT) == "cancelled"
        assert not returned.wait(0.2)  # held by the leader's work, which waits for the gate
        assert not callbacks.stopped.is_set()
    finally:
        gate.set()
        thread.join(TIMEOUT)
    assert returned.is_set()
    assert callbacks.taken(callbacks.calls) == ["returned", "stopped"]
    assert client_threads() == []


def test_an_elector_runs_once(lock: LeaseLock, clock: FakeClock) -> None:
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    stop = Context()
    stop.cancel()
    elector.run(stop)
    with pytest.raises(AlreadyStartedError):
        elector.run(stop)


# -- the health check --


def test_check_fails_only_while_a_leader_is_stuck_past_its_lease(
    apiserver: FakeAPIServer, lock: LeaseLock, clock: FakeClock,
) -> None:
    hold_lease(apiserver, "other", "2026-12-03T08:00:00.000000Z")
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks)
    with running(elector.run):
        assert wait_for(lambda: clock.has_waiters(), TIMEOUT)
        elector.check(0)  # a candidate is healthy
        clock.step(LEASE)
        assert callbacks.started.wait(TIMEOUT)
        elector.check(0)
        apiserver.set_delay(1.0, verb="update")  # the next renewal hangs
        step_when_waiting(clock)
        assert wait_for(lambda: not clock.has_waiters(), TIMEOUT)  # the elector is in its request
        clock.step(LEASE + 5)
        elector.check(10)
        with pytest.raises(LeaderElectionError, match="not renewed"):
            elector.check(1)
        assert not elector.is_leader()  # past renew_deadline: not reported as leader any more
        apiserver.set_delay(0)
        assert callbacks.stopped.wait(TIMEOUT)
    elector.check(0)


def test_the_record_written_reads_back_equal(lock: LeaseLock) -> None:
    now = datetime.datetime(2026, 12, 3, 8, 15, 2, tzinfo=datetime.timezone.utc)  # microsecond 0
    record = LeaderElectionRecord("me", 15, now, now, 2)
    lock.create(record)
    assert lock.get() == record
    renewed = LeaderElectionRecord("me", 15, now, now + datetime.timedelta(microseconds=1), 2)
    lock.update(renewed)
    assert lock.get() == renewed


def test_the_is_leader_metric_follows_leadership(
    prometheus: Any, lock: LeaseLock, clock: FakeClock,
) -> None:
    callbacks = Callbacks()
    elector = elector_for(lock, clock, callbacks, name="ha")
    assert metric_value(prometheus, "kinformer_leader_election_is_leader", name="ha") is None
    with running(elector.run):
        assert callbacks.started.wait(TIMEOUT)
        assert metric_value(prometheus, "kinformer_leader_election_is_leader", name="ha") == 1
    assert metric_value(prometheus, "kinformer_leader_election_is_leader", name="ha") == 0
