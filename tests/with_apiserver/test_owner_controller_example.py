"""docs/examples/owner_controller.py as a user runs it, a process of its own against a kubeconfig:
one cluster, every logical cluster of a kcp-style server, and every context as a fleet, each
holding the same default/w; it stops cleanly on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS, EXAMPLES, TIMEOUT, ChildProcess, crd

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CRDS = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CHECKOUT = Path(__file__).resolve().parents[2]  # the kinformer under test, not an installed one
START_BOUND = 20.0  # seconds a fresh process may take to import, list and reconcile on a loaded machine


def widget(message: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"}, "spec": {"message": message}}


def message(server: FakeAPIServer, cluster: str | None = None) -> str | None:
    try:
        found = server.get(CONFIGMAPS, "default", "w-message", cluster=cluster)
    except LookupError:
        return None
    return (found.get("data") or {}).get("message")  # type: ignore[no-any-return]


# A child process, not a thread: helpers.Background and helpers.Running run components in-process.
class Running:
    def __init__(self, tmp_path: Path, processes: contextlib.ExitStack) -> None:
        self.log = tmp_path / "controller.log"
        self.processes = processes  # ends the process with the test
        self.process: ChildProcess | None = None

    def start(self, *args: str) -> None:
        self.process = self.processes.enter_context(ChildProcess(
            [sys.executable, str(EXAMPLES / "owner_controller.py"), *args], log=self.log,
            env={**os.environ, "PYTHONPATH": str(CHECKOUT)}, timeout=TIMEOUT * 2))

    def stop(self) -> str:
        assert self.process is not None
        code = self.process.stop()
        text = self.log.read_text()
        assert code == 0, text
        assert "Traceback" not in text
        return text


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    with contextlib.ExitStack() as processes:
        yield Running(tmp_path, processes)


def test_one_cluster_keeps_the_owned_configmap_and_repairs_drift(
        apiserver: FakeAPIServer, tmp_path: Path, running: Running) -> None:
    running.start("--kubeconfig", apiserver.write_kubeconfig(tmp_path / "kubeconfig"), "--install-crd")
    assert wait_for(lambda: any(o["metadata"]["name"] == WIDGETS.group_resource
                                for o in apiserver.list_objects(CRDS)), START_BOUND)
    apiserver.create(WIDGETS, widget("hello"))
    assert wait_for(lambda: message(apiserver) == "hello", START_BOUND)
    drifted = apiserver.get(CONFIGMAPS, "default", "w-message")
    apiserver.update(CONFIGMAPS, {**drifted, "data": {"message": "edited by hand"}})
    assert wait_for(lambda: message(apiserver) == "hello", TIMEOUT)
    apiserver.delete(CONFIGMAPS, "default", "w-message")
    assert wait_for(lambda: message(apiserver) == "hello", TIMEOUT)
    assert "repairing default/w-message in cluster ''" in running.stop()


def test_every_logical_cluster_gets_its_own_widgets_configmap(
        logical_clusters_server: FakeAPIServer, tmp_path: Path, running: Running) -> None:
    server = logical_clusters_server
    for cluster in ("root:a", "root:b"):
        server.create(CRDS, crd(WIDGETS), cluster=cluster)
        server.create(WIDGETS, widget(f"hello from {cluster}"), cluster=cluster)
    running.start("--kubeconfig", server.write_kubeconfig(tmp_path / "kubeconfig"), "--all-logical-clusters")
    for cluster in ("root:a", "root:b"):
        assert wait_for(lambda c=cluster: message(server, c) == f"hello from {c}", START_BOUND)  # type: ignore[misc]
    running.stop()


def test_every_context_is_a_member_with_its_own_widgets_configmap(
        kube_fleet: dict[str, FakeAPIServer], tmp_path: Path, running: Running) -> None:
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                              "contexts": [], "current-context": "member-1"}
    for name, server in kube_fleet.items():
        one = server.kubeconfig()
        merged["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": one["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    path = tmp_path / "fleet-kubeconfig"
    path.write_text(json.dumps(merged))
    running.start("--kubeconfig", str(path), "--all-contexts", "--install-crd")  # in every member
    for name, server in kube_fleet.items():
        assert wait_for(lambda s=server: any(o["metadata"]["name"] == WIDGETS.group_resource  # type: ignore[misc]
                                             for o in s.list_objects(CRDS)), START_BOUND)
        server.create(WIDGETS, widget(f"hello from {name}"))
    for name, server in kube_fleet.items():
        assert wait_for(lambda s=server, n=name: message(s) == f"hello from {n}", START_BOUND)  # type: ignore[misc]
    running.stop()


def test_install_crd_over_every_logical_cluster_is_refused_at_the_command_line(
        logical_clusters_server: FakeAPIServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "owner_controller.py"), "--kubeconfig",
         logical_clusters_server.write_kubeconfig(tmp_path / "kubeconfig"), "--all-logical-clusters",
         "--install-crd"],
        capture_output=True, text=True, timeout=TIMEOUT * 2, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert done.returncode == 2
    assert "create the CRD in each logical cluster first" in done.stderr
