"""docs/examples/ha_controller.py end to end over FakeAPIServer: of three replicas only the leader
reconciles, and when it stops another takes over and re-stamps everything, with no thread left;
run as threads of one process, and as one process per replica whose leader is killed."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from helpers import TIMEOUT, client_threads, cm_manifest, example_replicas, load_example
from kubernetes import client as k8s

from kinformer import Context
from kinformer.testing import FakeAPIServer, wait_for

ha = load_example("ha_controller")
TIMING = {"lease_duration": 2.0, "renew_deadline": 1.0, "retry_period": 0.2}
PROCESS_TIMEOUT = 30.0  # seconds for replica processes to start, elect, or take over


def stamped_by(core: k8s.CoreV1Api) -> set[str]:
    return set(ha.stamps(core).values())


def test_only_the_leader_reconciles_and_the_next_one_takes_over_when_it_stops(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", cm_manifest("one", app="ha-demo"))
    names = ("a", "b", "c")
    clients = {name: apiserver.api_client() for name in names}
    stops = {name: Context(name) for name in names}
    threads = {name: threading.Thread(target=ha.run_replica, name=f"test-replica-{name}",
                                      args=(clients[name], name, stops[name]), kwargs=TIMING)
               for name in names}
    for thread in threads.values():
        thread.start()
    try:
        assert wait_for(lambda: stamped_by(core) in ({"a"}, {"b"}, {"c"}), TIMEOUT)
        (first,) = stamped_by(core)
        core.create_namespaced_config_map("default", cm_manifest("two", app="ha-demo"))
        core.create_namespaced_config_map("default", cm_manifest("other"))  # not selected
        assert wait_for(lambda: ha.stamps(core).get("two") == first, TIMEOUT)

        stops[first].cancel()
        threads[first].join(TIMEOUT)
        assert not threads[first].is_alive()
        assert wait_for(lambda: len(stamped_by(core) - {first, ""}) == len(stamped_by(core)) == 1,
                        TIMEOUT)
        (second,) = stamped_by(core)
        assert second != first
        other = core.read_namespaced_config_map("other", "default")
        assert ha.RECONCILED_BY not in (other.metadata.annotations or {})
    finally:
        for name in names:
            stops[name].cancel()
            threads[name].join(TIMEOUT)
            clients[name].close()
    assert client_threads() == []


def test_the_runnable_demo_hands_over_once() -> None:
    said: list[str] = []
    leaders = ha.hand_over_demo(said.append, timeout=TIMEOUT * 2)
    assert len(leaders) == 2 and leaders[0] != leaders[1]
    assert f"stopping {leaders[0]}" in said
    assert client_threads() == []


def test_one_process_per_replica_and_another_leads_when_the_leader_is_killed(
    apiserver: FakeAPIServer, api_client: Any, tmp_path: Path
) -> None:
    core = k8s.CoreV1Api(api_client)
    for name in ("one", "two"):
        core.create_namespaced_config_map("default", cm_manifest(name, app="ha-demo"))
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    with example_replicas("ha_controller", kubeconfig, ["a", "b", "c"], tmp_path) as procs:
        assert wait_for(lambda: stamped_by(core) in ({"a"}, {"b"}, {"c"}), PROCESS_TIMEOUT)
        (first,) = stamped_by(core)
        procs[first].stop(signal.SIGKILL)  # no release: the others wait for the lease to expire
        assert wait_for(lambda: len(stamped_by(core) - {first, ""}) == len(stamped_by(core)) == 1,
                        PROCESS_TIMEOUT), ha.stamps(core)
        (second,) = stamped_by(core)
        assert second != first and procs[second].running
