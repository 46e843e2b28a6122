"""Replicas split a fleet of member clusters through Leases: ShardCoordinator listeners drive
MultiClusterInformerFactory.set_cluster_shard, so once membership is stable each cluster is
cached by exactly one replica, and a replica leaving hands its clusters to the others."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import (
    LOGICAL_CLUSTER_ANNOTATION,
    Context,
    MultiClusterInformerFactory,
    ShardCoordinator,
    ShardSelector,
    StaticClusterProvider,
    cluster_shard_hash,
)
from kinformer.testing import FakeAPIServer, wait_for

CLUSTERS = [f"cluster-{n}" for n in range(1, 10)]
MEMBERS = [f"member-{n}" for n in range(1, 13)]  # names that differ at the end only
LEASE, RENEW = 1.0, 0.2  # short, so membership settles within a test


class Replica:
    """One process of a sharded deployment: a multi-cluster factory over the whole fleet, whose
    shard of clusters its ShardCoordinator sets."""

    def __init__(self, identity: str, hub: FakeAPIServer, fleet: FakeAPIServer,
                 clusters: list[str] = CLUSTERS) -> None:
        self.identity = identity
        self.hub_client = hub.api_client()
        self.clients = {name: fleet.api_client(cluster=name) for name in clusters}
        self.factory = MultiClusterInformerFactory(StaticClusterProvider(self.clients))
        self.factory.set_cluster_shard(ShardSelector.empty())  # nothing until the group says
        self.owned: list[ShardSelector] = []  # every shard the coordinator gave it
        self.configmaps = self.factory.for_resource(CONFIGMAPS)
        self.coordinator = ShardCoordinator(self.hub_client, "fleet", identity,
                                            lease_duration=LEASE, renew_interval=RENEW)
        self.coordinator.add_listener(self._reshard)
        self.stop = Context(identity)
        self.factory.start(self.stop)
        self.thread = threading.Thread(target=self.coordinator.run, args=(self.stop,),
                                       name=f"test-{identity}")
        self.thread.start()

    def _reshard(self, selector: ShardSelector) -> None:
        self.owned.append(selector)
        self.factory.set_cluster_shard(selector)

    def cached(self) -> list[str]:
        """The cluster of every ConfigMap this replica caches."""
        return [o["metadata"]["annotations"][LOGICAL_CLUSTER_ANNOTATION]
                for o in self.configmaps.lister().list()]

    def leave(self) -> None:
        self.stop.cancel()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive()
        self.factory.shutdown()
        for api_client in [self.hub_client, *self.clients.values()]:
            api_client.close()


@pytest.fixture
def fleet() -> Iterator[FakeAPIServer]:
    """Member clusters behind one server (logical clusters), each holding ``default/app``."""
    with FakeAPIServer(logical_clusters=True) as server:
        for name in CLUSTERS + MEMBERS:
            server.create(CONFIGMAPS, cm("app", None, "default"), cluster=name)
        yield server


def split_once(replicas: list[Replica], clusters: list[str] = CLUSTERS) -> bool:
    """Every replica synced, and every cluster engaged and cached by exactly one of them."""
    if not all(r.factory.has_synced() for r in replicas):
        return False
    engaged = sorted(c for r in replicas for c in r.factory.clusters())
    cached = sorted(c for r in replicas for c in r.cached())
    return engaged == cached == sorted(clusters)


def owns_its_shard(replica: Replica, clusters: list[str] = CLUSTERS) -> bool:
    """The replica engages exactly the clusters whose name hashes into its coordinator's shard."""
    shard = replica.coordinator.selector()
    return replica.factory.clusters() == sorted(
        c for c in clusters if shard.matches_hash(cluster_shard_hash(c)))


def test_replicas_split_the_fleet_and_take_over_from_one_that_leaves(
    apiserver: FakeAPIServer, fleet: FakeAPIServer,
) -> None:
    replicas = [Replica(f"replica-{n}", apiserver, fleet) for n in range(1, 4)]
    try:
        assert wait_for(lambda: all(len(r.coordinator.members()) == 3 for r in replicas), TIMEOUT)
        assert wait_for(lambda: split_once(replicas), TIMEOUT)
        assert all(owns_its_shard(r) for r in replicas)
        leaving = max(replicas, key=lambda r: len(r.factory.clusters()))
        assert leaving.factory.clusters()  # it held some clusters to hand over
        leaving.leave()
        replicas.remove(leaving)
        assert leaving.owned[-1] == ShardSelector.empty()  # on the way out it owns nothing
        assert wait_for(lambda: split_once(replicas) and all(
            len(r.coordinator.members()) == 2 for r in replicas), TIMEOUT)
        assert all(owns_its_shard(r) for r in replicas)
    finally:
        for replica in replicas:
            replica.leave()


def test_members_whose_names_differ_at_the_end_spread_over_every_replica(
    apiserver: FakeAPIServer, fleet: FakeAPIServer,
) -> None:
    # placed by fnv1a_64, member-1..12 all hashed into one third: two replicas would idle
    replicas = [Replica(f"replica-{n}", apiserver, fleet, MEMBERS) for n in range(1, 4)]
    try:
        assert wait_for(lambda: all(len(r.coordinator.members()) == 3 for r in replicas), TIMEOUT)
        assert wait_for(lambda: split_once(replicas, MEMBERS), TIMEOUT)
        held = sorted(len(r.factory.clusters()) for r in replicas)
        assert held[0] >= 1 and held[-1] <= 1.5 * len(MEMBERS) / len(replicas), held
        assert all(owns_its_shard(r, MEMBERS) for r in replicas)
    finally:
        for replica in replicas:
            replica.leave()
