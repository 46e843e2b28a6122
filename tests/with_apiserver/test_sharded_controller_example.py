"""docs/examples/sharded_controller.py end to end over FakeAPIServer: three replicas each tag only
their shard, with and without server-side sharding, and the others take over a stopped one's;
run as threads of one process, and as one process per replica of which one is killed."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from helpers import CONFIGMAPS, TIMEOUT, example_replicas, load_example
from kubernetes import client as k8s

from kinformer import Context, GroupVersionResource, ShardSelector
from kinformer.testing import FakeAPIServer, wait_for

sharded = load_example("sharded_controller")
TIMING = {"lease_duration": 2.0, "renew_interval": 0.2}
LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")
PROCESS_TIMEOUT = 30.0  # seconds for replica processes to start, agree, or take over


def owners(server: FakeAPIServer, names: list[str]) -> dict[str, str]:
    """Who should have tagged each ConfigMap: the member whose equal shard holds it."""
    shards = [ShardSelector.for_shard(i, len(names)) for i in range(len(names))]
    return {o["metadata"]["name"]: next(n for n, s in zip(names, shards, strict=True) if s.matches(o))
            for o in server.list_objects(CONFIGMAPS, "default")}


def lease_names(server: FakeAPIServer) -> set[str]:
    return {o["metadata"]["name"] for o in server.list_objects(LEASES, "default")}


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


def test_one_process_per_replica_and_the_others_re_split_when_one_is_killed(
    apiserver: FakeAPIServer, api_client: Any, tmp_path: Path
) -> None:
    core = k8s.CoreV1Api(api_client)
    for i in range(12):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    with example_replicas("sharded_controller", kubeconfig, ["a", "b", "c"], tmp_path) as procs:
        # every replica joined (the uids may leave one third without a ConfigMap, and the tags
        # then match before that replica has even started)
        assert wait_for(lambda: lease_names(apiserver) == {"tagger-a", "tagger-b", "tagger-c"},
                        PROCESS_TIMEOUT), lease_names(apiserver)
        assert wait_for(lambda: sharded.tags(core) == owners(apiserver, ["a", "b", "c"]),
                        PROCESS_TIMEOUT), sharded.tags(core)
        procs["b"].stop(signal.SIGKILL)  # no clean stop: its Lease stays until it expires
        assert wait_for(lambda: sharded.tags(core) == owners(apiserver, ["a", "c"]),
                        PROCESS_TIMEOUT), sharded.tags(core)
    assert lease_names(apiserver) == {"tagger-b"}  # a and c deleted theirs on SIGTERM
