"""Owning nothing: the empty shard selector, and a replica that loses sight of its group.

``ShardSelector.empty()`` holds nothing and is never sent. An informer given it sends no list or
watch, reports what it held as deleted, caches nothing and counts as synced, until a real shard
comes. A ShardCoordinator's selector is the empty one (never None, which means *everything*)
before it joins, while its Lease is gone and after it stops; a member whose Lease someone else
deleted creates it again and re-joins. Three replicas over one server: deleting one member's
Lease never makes that replica hold more than its share.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, running
from kubernetes import client as k8s

from kinformer import (
    ConfigurationError,
    DeletedFinalStateUnknown,
    DynamicSharedInformerFactory,
    GroupVersionResource,
    ListWatch,
    ResourceEventHandlerFuncs,
    ShardCoordinator,
    ShardSelector,
    SharedIndexInformer,
)
from kinformer.testing import FakeAPIServer
from kinformer.testing.waiting import wait_for

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
TIMEOUT = 10.0
EMPTY = ShardSelector.empty()
# long enough between renewals that a deleted Lease stays gone for a while
LEASE, RENEW = 2.0, 0.5


def cm_requests(server: FakeAPIServer) -> list[tuple[str, dict[str, str]]]:
    return [(path, query) for _, path, query, _ in server.requests if "/configmaps" in path]


def names(informer: SharedIndexInformer) -> set[str]:
    return {o["metadata"]["name"] for o in informer.get_indexer().list()}


def lease_uid_of(server: FakeAPIServer, name: str) -> str:
    """The uid of the Lease ``default/name``, ``""`` while there is none."""
    leases = [o for o in server.list_objects(LEASES, "default") if o["metadata"]["name"] == name]
    return str(leases[0]["metadata"]["uid"]) if leases else ""


class Held:
    """What an informer's handler saw: every name added and deleted, and the cache's peak size."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self._informer = informer
        self._lock = threading.Lock()
        self.added: set[str] = set()
        self.deleted: list[Any] = []
        self.peak = 0

    def handler(self) -> ResourceEventHandlerFuncs:
        return ResourceEventHandlerFuncs(add_func=self._add, delete_func=self._delete)

    def _add(self, obj: Any) -> None:
        with self._lock:
            self.added.add(obj["metadata"]["name"])
            self.peak = max(self.peak, len(self._informer.get_indexer()))

    def _delete(self, obj: Any) -> None:
        with self._lock:
            self.deleted.append(obj)

    def reset(self) -> None:
        with self._lock:
            self.added.clear()
            self.deleted.clear()
            self.peak = len(self._informer.get_indexer())


# -- the selector and the ListWatch ------------------------------------------------------------


def test_a_listwatch_refuses_the_empty_selector_that_it_would_send_as_everything(
    api_client: Any,
) -> None:
    with pytest.raises(ConfigurationError, match="empty shard selector"):
        ListWatch.for_resource(api_client, CONFIGMAPS, shard_selector=EMPTY)


# -- an informer that owns nothing ---------------------------------------------------------------


def test_an_informer_started_on_the_empty_shard_sends_nothing_and_syncs_empty(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    for i in range(6):
        create_cm(api_client, f"cm-{i}")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="nothing")
    informer.set_shard_selector(EMPTY)
    held = Held(informer)
    informer.add_event_handler(held.handler())
    apiserver.clear_requests()
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert informer.shard_selector() == EMPTY and informer.server_side_sharding() is None
        create_cm(api_client, "late")
        assert cm_requests(apiserver) == [("/api/v1/namespaces/default/configmaps", {})]  # ours
        assert names(informer) == set() and held.added == set()

        informer.set_shard_selector(ShardSelector.for_shard(0, 1))  # a real shard: list it
        assert wait_for(lambda: names(informer) == {*(f"cm-{i}" for i in range(6)), "late"}, TIMEOUT)
        assert informer.has_synced()


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_an_informer_moved_to_the_empty_shard_reports_each_object_left_and_stops_asking(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture, profile: str
) -> None:
    for i in range(5):
        create_cm(api_client, f"cm-{i}")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="emptied",
        profile=profile)
    held = Held(informer)
    informer.add_event_handler(held.handler())
    caplog.set_level(logging.INFO, logger="kinformer")
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        informer.set_shard_selector(EMPTY)
        assert wait_for(lambda: len(held.deleted) == 5, TIMEOUT)
        assert names(informer) == set() and informer.has_synced()
        assert all(isinstance(o, DeletedFinalStateUnknown) for o in held.deleted)
        assert {o.key for o in held.deleted} == {f"default/cm-{i}" for i in range(5)}
        assert wait_for(lambda: apiserver.watcher_count(CONFIGMAPS) == 0, TIMEOUT)
        apiserver.clear_requests()
        create_cm(api_client, "while-empty")
        informer.set_shard_selector(EMPTY)  # the same again: nothing happens
        assert [p for p, _ in cm_requests(apiserver)] == ["/api/v1/namespaces/default/configmaps"]
        assert names(informer) == set()

        informer.set_shard_selector(None)  # the whole resource again
        assert wait_for(lambda: len(names(informer)) == 6, TIMEOUT)
    said = [r.getMessage() for r in caplog.records]
    assert any("shard is now empty" in m for m in said)


def test_a_factory_given_the_empty_shard_empties_the_informers_it_made_and_makes(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    for i in range(4):
        create_cm(api_client, f"cm-{i}")
    factory = DynamicSharedInformerFactory(api_client, namespace="default")
    made = factory.for_resource(CONFIGMAPS).informer()
    stop = threading.Event()
    try:
        factory.start(stop)
        assert made.wait_for_sync(timeout=TIMEOUT) and len(names(made)) == 4
        factory.set_shard_selector(EMPTY)
        assert wait_for(lambda: names(made) == set(), TIMEOUT)
        assert factory.shard_selector() == EMPTY
        apiserver.clear_requests()
        later = factory.for_resource(GroupVersionResource("", "v1", "secrets")).informer()
        factory.start(stop)
        assert later.shard_selector() == EMPTY
        assert later.wait_for_sync(timeout=TIMEOUT)
        assert [p for _, p, _, _ in apiserver.requests if "/secrets" in p] == []
    finally:
        stop.set()
        factory.shutdown()


# -- a coordinator that owns nothing -------------------------------------------------------------


def test_a_coordinator_owns_nothing_before_it_joins_and_after_it_stops_and_never_says_everything(
    api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    member = ShardCoordinator(api_client, "workers", "a", lease_duration=LEASE, renew_interval=RENEW)
    assert member.selector() == EMPTY
    seen: list[ShardSelector] = []
    member.add_listener(seen.append)
    assert seen == []  # not called when added
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="follower")
    informer.set_shard_selector(member.selector())
    member.add_listener(informer.set_shard_selector)
    caplog.set_level(logging.INFO, logger="kinformer")
    create_cm(api_client, "one")
    with running(informer.run), running(member.run):
        assert wait_for(lambda: member.selector() == ShardSelector.for_shard(0, 1), TIMEOUT)
        assert wait_for(lambda: names(informer) == {"one"}, TIMEOUT)
    assert member.selector() == EMPTY
    assert seen == [ShardSelector.for_shard(0, 1), EMPTY]
    assert not [r for r in caplog.records if "everything" in r.getMessage()]


@contextlib.contextmanager
def replicas(server: FakeAPIServer, identities: list[str]) -> Iterator[dict[str, Any]]:
    """Run a coordinator and an informer following it per identity, each on its own client,
    wired as docs/sharding.md says: the informer starts on the coordinator's selector.
    Yields identity -> (coordinator, informer, Held, the selectors its listener heard)."""
    with contextlib.ExitStack() as stack:
        started: dict[str, Any] = {}
        for identity in identities:
            client = server.api_client()
            stack.callback(client.close)
            member = ShardCoordinator(client, "taggers", identity, lease_duration=LEASE,
                                      renew_interval=RENEW)
            informer = SharedIndexInformer(
                ListWatch.for_resource(client, CONFIGMAPS, namespace="default"), name=identity)
            informer.set_shard_selector(member.selector())
            member.add_listener(informer.set_shard_selector)
            heard: list[ShardSelector] = []
            member.add_listener(heard.append)
            held = Held(informer)
            informer.add_event_handler(held.handler())
            stack.enter_context(running(informer.run))
            stack.enter_context(running(member.run))
            started[identity] = (member, informer, held, heard)
        yield started


def test_a_replica_whose_lease_is_deleted_never_holds_more_than_its_share_and_rejoins(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    for i in range(30):
        create_cm(api_client, f"cm-{i}")
    identities = ["a", "b", "c"]
    thirds = {name: ShardSelector.for_shard(i, 3) for i, name in enumerate(identities)}
    with replicas(apiserver, identities) as started:
        def converged() -> bool:
            return all(m.selector() == thirds[n] and inf.shard_selector() == thirds[n]
                       and inf.has_synced() for n, (m, inf, _, _) in started.items())

        assert wait_for(converged, TIMEOUT)
        _, informer, held, heard = started["b"]
        share = {o["metadata"]["name"] for o in apiserver.list_objects(CONFIGMAPS, "default")
                 if thirds["b"].matches(o)}
        assert wait_for(lambda: names(informer) == share, TIMEOUT)
        held.reset()
        heard.clear()
        lease_uid = lease_uid_of(apiserver, "taggers-b")

        apiserver.fail_next(2, 500, verb="create", resource="leases")  # b alone creates Leases now
        k8s.CoordinationV1Api(api_client).delete_namespaced_lease("taggers-b", "default")
        # it re-creates its Lease at a later renewal (retrying on the 500s), and comes back to
        # the same share
        assert wait_for(lambda: lease_uid_of(apiserver, "taggers-b") not in ("", lease_uid),
                        TIMEOUT)
        assert wait_for(converged, TIMEOUT)
        assert wait_for(lambda: names(informer) == share, TIMEOUT)
        assert wait_for(lambda: heard[-1:] == [thirds["b"]], TIMEOUT)  # its listeners' thread
        selectors, added, peak = list(heard), set(held.added), held.peak

    assert selectors == [EMPTY, thirds["b"]]  # nothing while its Lease was gone, then its share
    assert added <= share, f"held {sorted(added - share)} outside its share"
    assert peak <= len(share)
