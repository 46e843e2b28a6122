"""ShardCoordinator over FakeAPIServer: members agree on disjoint shards through their Leases.

Three coordinators converge to ranges that cover the hash space once; when one stops, its Lease
goes and the others take its range at once; a member whose Lease stops changing is dropped
after the lease duration; informers following the coordinators hold every object exactly once.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, running, step_when_waiting

from kinformer import (
    GroupVersionResource,
    ListWatch,
    ShardCoordinator,
    ShardSelector,
    SharedIndexInformer,
    errors,
)
from kinformer.leaderelection import shard_coordinator
from kinformer.sharding import HASH_SPACE
from kinformer.testing import FakeAPIServer, FakeClock
from kinformer.testing.waiting import wait_for

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
TIMEOUT = 10.0
LEASE, RENEW = 1.0, 0.2  # short, so expiry happens within a test


def coordinator(api_client: Any, identity: str) -> ShardCoordinator:
    return ShardCoordinator(api_client, "workers", identity, lease_duration=LEASE,
                            renew_interval=RENEW)


@contextlib.contextmanager
def members(api_client: Any, *identities: str) -> Iterator[dict[str, tuple[ShardCoordinator, Any]]]:
    """Run a coordinator per identity; yields identity -> (coordinator, its stop context)."""
    with contextlib.ExitStack() as stack:
        started = {}
        for identity in identities:
            member = coordinator(api_client, identity)
            stop = stack.enter_context(running(member.run))
            started[identity] = (member, stop)
        yield started


def renewed(server: FakeAPIServer, name: str, times: int) -> Callable[[], bool]:
    """A predicate: True once the Lease ``default/name`` has changed ``times`` times since now."""
    def version() -> str:
        return str(server.get(LEASES, "default", name)["metadata"]["resourceVersion"])

    seen = {version()}

    def check() -> bool:
        seen.add(version())
        return len(seen) > times

    return check


def converged(coordinators: list[ShardCoordinator], expected: list[str]) -> bool:
    """Every coordinator sees ``expected`` as the members and owns its equal share of them."""
    for member in coordinators:
        if member.members() != expected:
            return False
        index = expected.index(member.identity)
        if member.selector() != ShardSelector.for_shard(index, len(expected)):
            return False
    return True


def covers_once(selectors: list[ShardSelector]) -> bool:
    ranges = sorted(r for s in selectors for r in s.ranges)
    return bool(ranges) and ranges[0][0] == 0 and ranges[-1][1] == HASH_SPACE and all(
        a[1] == b[0] for a, b in itertools.pairwise(ranges))


def test_three_members_converge_to_disjoint_shards_that_cover_the_hash_space(api_client: Any) -> None:
    with members(api_client, "c", "a", "b") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT)
        assert covers_once([m.selector() for m in coordinators])


def test_a_member_that_stops_deletes_its_lease_and_the_others_take_its_range(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    with members(api_client, "a", "b", "c") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT)
        member_b, stop_b = started["b"]
        stop_b.cancel()
        assert wait_for(lambda: member_b.selector() == ShardSelector.empty(), TIMEOUT)
        names = {o["metadata"]["name"] for o in apiserver.list_objects(LEASES, "default")}
        assert names == {"workers-a", "workers-c"}  # its Lease is gone
        remaining = [started["a"][0], started["c"][0]]
        assert wait_for(lambda: converged(remaining, ["a", "c"]), TIMEOUT)
        assert covers_once([m.selector() for m in remaining])


def test_a_member_whose_lease_stops_changing_is_dropped_after_the_lease_duration(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    apiserver.create(LEASES, {  # a member that died: its Lease is never renewed
        "metadata": {"name": "workers-ghost", "namespace": "default",
                     "labels": {"kinformer.io/shard-group": "workers"}},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 1}})
    seen: list[ShardSelector] = []
    with members(api_client, "a") as started:
        member = started["a"][0]
        member.add_listener(seen.append)
        assert wait_for(lambda: member.members() == ["a", "ghost"], TIMEOUT)
        assert member.selector() == ShardSelector.for_shard(0, 2)
        assert wait_for(lambda: member.members() == ["a"], TIMEOUT)  # ghost expired
        assert member.selector() == ShardSelector.for_shard(0, 1)
    assert seen[-2:] == [ShardSelector.for_shard(0, 1), ShardSelector.empty()]


def test_a_member_takes_over_the_lease_an_earlier_run_of_it_left_behind(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    apiserver.create(LEASES, {  # its own Lease, from before a crash, without the group label
        "metadata": {"name": "workers-a", "namespace": "default", "labels": {"team": "x"}},
        "spec": {"holderIdentity": "a-before", "leaseDurationSeconds": 30}})
    with members(api_client, "a") as started:
        member = started["a"][0]
        assert wait_for(lambda: member.members() == ["a"], TIMEOUT)
        assert member.selector() == ShardSelector.for_shard(0, 1)
        lease = apiserver.get(LEASES, "default", "workers-a")
        assert lease["metadata"]["labels"] == {"team": "x", "kinformer.io/shard-group": "workers"}
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 1


def test_a_member_whose_renewals_hang_owns_nothing_once_its_lease_runs_out(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    with members(api_client, "a", "b") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["a", "b"]), TIMEOUT)
        apiserver.set_delay(60, "update")  # every renewal hangs, far longer than the test
        try:
            # without waiting for its request to time out (shard_coordinator.REQUEST_TIMEOUT),
            # each member gives its shard up when its own Lease runs out, as the others drop it
            assert wait_for(lambda: all(m.selector() == ShardSelector.empty() for m in coordinators),
                            shard_coordinator.REQUEST_TIMEOUT / 2)
            assert wait_for(lambda: [m.members() for m in coordinators] == [[], []], TIMEOUT)
        finally:
            apiserver.set_delay(0, "update")
        assert wait_for(lambda: converged(coordinators, ["a", "b"]), TIMEOUT)


def test_a_member_frozen_past_its_lease_gives_its_range_up_before_it_renews(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    clock = FakeClock()
    member = ShardCoordinator(api_client, "workers", "a", lease_duration=5.0, renew_interval=1.0,
                              clock=clock)
    with running(member.run):
        assert wait_for(lambda: member.selector() == ShardSelector.for_shard(0, 1), TIMEOUT)
        apiserver.set_delay(60, "update")  # once it wakes, its renewal hangs (up to 5 s)
        try:
            step_when_waiting(clock, 30.0)  # the process was paused for 30 s
            assert wait_for(lambda: member.selector() == ShardSelector.empty(), 1.0)
        finally:
            apiserver.set_delay(0, "update")


def test_members_whose_identities_differ_only_in_spelling_have_leases_of_their_own(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    assert shard_coordinator.lease_name("workers", "web-1") == "workers-web-1"  # a hostname: as it is
    assert len({shard_coordinator.lease_name("workers", i) for i in ("web-1", "web_1", "Web-1")}) == 3
    with members(api_client, "web-1", "web_1") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["web-1", "web_1"]), TIMEOUT)
        holders = sorted(lease["spec"]["holderIdentity"] for lease in apiserver.list_objects(LEASES))
        assert holders == ["web-1", "web_1"]


def test_two_processes_running_one_lease_are_told(
    api_client: Any, apiserver: FakeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    with members(api_client, "a") as started:
        member = started["a"][0]
        assert wait_for(lambda: member.members() == ["a"], TIMEOUT)
        lease = apiserver.get(LEASES, "default", "workers-a")  # another process writes it as its own
        apiserver.update(LEASES, {**lease, "spec": {**lease["spec"], "holderIdentity": "a-twin"}})
        assert wait_for(lambda: "held by 'a-twin'" in caplog.text, TIMEOUT)
    said = [r for r in caplog.records if "held by" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "ERROR"


@pytest.mark.parametrize("edit", ["holder cleared", "holder renamed", "label removed"])
def test_a_lease_someone_edits_is_written_back_and_no_range_is_left_to_nobody(
    api_client: Any, apiserver: FakeAPIServer, edit: str,
) -> None:
    """A renewal that wrote only renewTime carried someone's edit forward for good: a cleared
    or renamed holder made every member count a member that does not run (its range owned by
    nobody), a removed label left the member out of its own group."""
    with members(api_client, "a", "b", "c") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT)
        lease = apiserver.get(LEASES, "default", "workers-b")
        if edit == "label removed":
            lease["metadata"]["labels"] = {}
        else:
            lease["spec"]["holderIdentity"] = "" if edit == "holder cleared" else "zzz"
        apiserver.update(LEASES, lease)
        written_back = renewed(apiserver, "workers-b", 2)
        assert wait_for(written_back, TIMEOUT)
        lease = apiserver.get(LEASES, "default", "workers-b")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["metadata"]["labels"] == {"kinformer.io/shard-group": "workers"}
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT)
        assert covers_once([m.selector() for m in coordinators])


def test_groups_whose_names_meet_in_one_lease_are_told_and_the_first_keeps_it(
    api_client: Any, apiserver: FakeAPIServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """Group ``web`` with member ``canary-0`` and group ``web-canary`` with member ``0`` both
    name their Lease ``web-canary-0``. The second took it over as its own, relabelled, so group
    ``web`` lost its only member and nobody served it."""
    assert shard_coordinator.lease_name("web", "canary-0") == shard_coordinator.lease_name("web-canary", "0")
    assert shard_coordinator.lease_name("My_Group", "a") != shard_coordinator.lease_name("my_group", "a")
    first = ShardCoordinator(api_client, "web", "canary-0", lease_duration=LEASE, renew_interval=RENEW)
    second = ShardCoordinator(api_client, "web-canary", "0", lease_duration=LEASE, renew_interval=RENEW)
    with running(first.run):
        assert wait_for(lambda: first.members() == ["canary-0"], TIMEOUT)
        with running(second.run):
            assert wait_for(lambda: "belongs to group 'web'" in caplog.text, TIMEOUT)
            assert wait_for(renewed(apiserver, "web-canary-0", 2), TIMEOUT)  # first renews on
            lease = apiserver.get(LEASES, "default", "web-canary-0")
            assert lease["metadata"]["labels"] == {"kinformer.io/shard-group": "web"}
            assert first.members() == ["canary-0"]
            assert first.selector() == ShardSelector.for_shard(0, 1)
            assert second.selector() == ShardSelector.empty()
        assert apiserver.get(LEASES, "default", "web-canary-0") is not None  # second left it be
    said = [r for r in caplog.records if "belongs to group" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "ERROR"


def test_a_member_that_stops_says_it_owns_nothing_before_its_lease_goes(
    api_client: Any, apiserver: FakeAPIServer,
) -> None:
    """The others take a stopping member's range once its Lease is gone; its own listeners must
    have heard it owns nothing by then, or both work on that range for a moment."""
    lease_at_empty: list[bool] = []

    def listener(selector: ShardSelector) -> None:
        if selector == ShardSelector.empty():
            names = {o["metadata"]["name"] for o in apiserver.list_objects(LEASES, "default")}
            lease_at_empty.append("workers-b" in names)

    with members(api_client, "a", "b") as started:
        coordinators = [m for m, _ in started.values()]
        assert wait_for(lambda: converged(coordinators, ["a", "b"]), TIMEOUT)
        member_b, stop_b = started["b"]
        member_b.add_listener(listener)
        stop_b.cancel()
        assert wait_for(lambda: lease_at_empty != [], TIMEOUT)
    assert lease_at_empty == [True]


def test_a_listener_that_takes_long_holds_no_renewal_back(
    api_client: Any, apiserver: FakeAPIServer,
) -> None:
    """A listener busy for longer than the lease (disengaging clusters whose informers are slow
    to stop): the member keeps renewing meanwhile, so the others never take a range it still
    works on; every selector published meanwhile reaches the listener, in order."""
    entered, release = threading.Event(), threading.Event()
    told: list[ShardSelector] = []

    def slow(selector: ShardSelector) -> None:
        told.append(selector)
        if len(told) == 1:
            entered.set()
            release.wait(TIMEOUT)

    member_a = coordinator(api_client, "a")
    member_a.add_listener(slow)
    with running(member_a.run):
        assert entered.wait(TIMEOUT)  # told its first shard, and busy with it
        try:
            assert wait_for(renewed(apiserver, "workers-a", 3 * int(LEASE / RENEW)), TIMEOUT)
            with members(api_client, "b") as started:
                member_b = started["b"][0]
                assert wait_for(lambda: converged([member_a, member_b], ["a", "b"]), TIMEOUT)
                release.set()
                assert wait_for(lambda: told[-1] == member_a.selector(), TIMEOUT)
                assert told == [ShardSelector.for_shard(0, 1), ShardSelector.for_shard(0, 2)]
        finally:
            release.set()


def test_members_whose_view_of_the_group_stalls_never_take_more_than_their_share(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    # renewing at different paces, so their Leases last changed at different times when the
    # views stall: in some member's view the others' Leases then run out before its own
    coordinators = [ShardCoordinator(api_client, "workers", identity, lease_duration=LEASE,
                                     renew_interval=renew)
                    for identity, renew in (("a", 0.15), ("b", 0.25), ("c", 0.35))]
    with contextlib.ExitStack() as stack:
        for member in coordinators:
            stack.enter_context(running(member.run))
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT)
        # they joined together; once the slowest has renewed twice more, their last renewals
        # lie apart
        assert wait_for(renewed(apiserver, "workers-c", 2), TIMEOUT)
        heard: dict[str, list[ShardSelector]] = {m.identity: [] for m in coordinators}
        for member in coordinators:
            member.add_listener(heard[member.identity].append)
        # their watches of the group break and cannot be made again, while renewals go on:
        # in each view the Leases stop changing one after another, its own among them
        apiserver.forbid("leases", "list")
        apiserver.forbid("leases", "watch")
        apiserver.drop_watches()
        try:
            assert wait_for(lambda: all(m.selector() == ShardSelector.empty() for m in coordinators),
                            TIMEOUT)
        finally:
            apiserver.allow("leases", "list")
            apiserver.allow("leases", "watch")
        assert wait_for(lambda: converged(coordinators, ["a", "b", "c"]), TIMEOUT * 3)
        # the listeners hear it on their own threads, a moment later
        assert wait_for(lambda: all(heard[m.identity][-1:] == [m.selector()] for m in coordinators),
                        TIMEOUT)
        had = {name: list(selectors) for name, selectors in heard.items()}
    for index, member in enumerate(coordinators):
        share = ShardSelector.for_shard(index, 3)
        assert ShardSelector.empty() in had[member.identity]
        assert set(had[member.identity]) == {share, ShardSelector.empty()}, (
            f"{member.identity} took {had[member.identity]}")


def test_a_member_retries_its_view_of_the_group_within_two_renew_intervals(
    api_client: Any, apiserver: FakeAPIServer
) -> None:
    clock = FakeClock()
    member = ShardCoordinator(api_client, "workers", "a", lease_duration=2.0, renew_interval=0.5,
                              clock=clock)

    def refused() -> int:
        return sum(1 for _, path, _, code in apiserver.requests if code == 403 and "leases" in path)

    apiserver.forbid("leases", "list")  # its view cannot be made: it lists again and again
    longest = 0.0
    with running(member.run):
        while refused() < 6:  # past the reflector's default 0.8 s doubling to 30 s
            assert wait_for(lambda: len(clock.waiters()) >= 2, TIMEOUT)  # loop and reflector
            longest = max(longest, *(w for w in clock.waiters() if w != float("inf")))
            step_when_waiting(clock)
        apiserver.allow("leases", "list")
    assert longest <= 2 * 0.5  # a backoff step of at most the renew interval, jittered


def test_informers_following_their_coordinators_hold_every_object_exactly_once(
    api_client: Any,
) -> None:
    for i in range(20):
        create_cm(api_client, f"cm-{i}")
    informers = {identity: SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name=identity)
        for identity in ("a", "b", "c")}
    with contextlib.ExitStack() as stack:
        for identity, informer in informers.items():
            member = coordinator(api_client, identity)
            informer.set_shard_selector(member.selector())  # nothing until it has its shard
            member.add_listener(informer.set_shard_selector)
            stack.enter_context(running(member.run))
            stack.enter_context(running(informer.run))

        def held() -> list[set[str]]:
            return [{o["metadata"]["name"] for o in inf.get_indexer().list()}
                    for inf in informers.values()]

        def exactly_once() -> bool:
            caches = held()
            everything = set().union(*caches)
            return (everything == {f"cm-{i}" for i in range(20)}
                    and sum(map(len, caches)) == 20
                    and all(inf.shard_selector() not in (None, ShardSelector.empty())
                            for inf in informers.values()))

        assert wait_for(exactly_once, TIMEOUT)


@pytest.mark.parametrize(
    "kwargs",
    [{"group": "bad group!"}, {"identity": ""}, {"lease_duration": 1.0, "renew_interval": 1.0},
     {"field": "object.metadata.name"}],
)
def test_bad_settings_are_configuration_errors(api_client: Any, kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"group": "workers", "identity": "a", **kwargs}
    with pytest.raises(errors.ConfigurationError):
        ShardCoordinator(api_client, **arguments)


def test_a_coordinator_runs_once(api_client: Any) -> None:
    member = coordinator(api_client, "a")
    with running(member.run):
        assert wait_for(lambda: member.selector() != ShardSelector.empty(), TIMEOUT)
        with pytest.raises(errors.AlreadyStartedError):
            member.run(threading.Event())
