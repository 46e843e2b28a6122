"""docs/examples/sharded_controller.py end to end over FakeAPIServer: three replicas each tag only
their shard, with and without server-side sharding, and the others take over a stopped one's."""

from __future__ import annotations

import threading
from typing import Any

from helpers import TIMEOUT, load_example
from kubernetes import client as k8s

from kinformer import Context, GroupVersionResource, ShardSelector
from kinformer.testing import FakeAPIServer, wait_for

sharded = load_example("sharded_controller")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
TIMING = {"lease_duration": 2.0, "renew_interval": 0.2}


def owners(server: FakeAPIServer, names: list[str]) -> dict[str, str]:
    """Who should have tagged each ConfigMap: the member whose equal shard holds it."""
    shards = [ShardSelector.for_shard(i, len(names)) for i in range(len(names))]
    return {o["metadata"]["name"]: next(n for n, s in zip(names, shards, strict=True) if s.matches(o))
            for o in server.list_objects(CONFIGMAPS, "default")}


def test_the_example_runs_to_its_end() -> None:
    assert sharded.main() == 0


def test_without_server_side_sharding_each_replica_tags_exactly_its_shard(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    core = k8s.CoreV1Api(api_client)
    for i in range(15):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    names = ["a", "b", "c"]
    stops = {name: Context(name) for name in names}
    threads = [threading.Thread(target=sharded.run_replica, name=f"test-replica-{name}",
                                args=(api_client, name, stops[name]), kwargs=TIMING)
               for name in names]
    for thread in threads:
        thread.start()
    try:
        assert wait_for(lambda: sharded.tags(core) == owners(apiserver, names), TIMEOUT)
        stops["b"].cancel()
        assert wait_for(lambda: sharded.tags(core) == owners(apiserver, ["a", "c"]), TIMEOUT)
    finally:
        for stop in stops.values():
            stop.cancel()
        for thread in threads:
            thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
