"""``kinformer watch RESOURCE --all-contexts`` in subprocesses, against a kubeconfig whose
contexts are FakeAPIServers: a CLUSTER column first, -A/-n/-l as for one cluster, and a context
that cannot be reached shows as an error line for that cluster while the others go on, whether
it refuses connections or accepts them and never answers (a black hole)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS, KINFORMER, ChildProcess, Lines, SilentServer, cm, crd

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

TIMEOUT = 30.0  # seconds any one command or line may take before the test fails


def merged_kubeconfig(path: Path, servers: dict[str, FakeAPIServer], current: str) -> str:
    """One kubeconfig holding each server's ``kubeconfig()`` under its own context name."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                              "contexts": [], "current-context": current, "preferences": {}}
    for name, server in servers.items():
        document = server.kubeconfig()
        merged["clusters"].append({"name": name, "cluster": document["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": document["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name,
                                                             "namespace": "default"}})
    path.write_text(json.dumps(merged))
    return str(path)


@pytest.fixture
def fleet() -> Iterator[dict[str, FakeAPIServer]]:
    """Three servers under the contexts east, west and down; down is stopped (its port kept)."""
    servers = {name: FakeAPIServer().start() for name in ("east", "west", "down")}
    servers["down"].stop()
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture
def black_hole() -> Iterator[SilentServer]:
    """A listener on loopback that accepts connections and never answers; closed at teardown."""
    hole = SilentServer()
    try:
        yield hole
    finally:
        hole.close()


def kinformer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinformer", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_once_prints_every_reachable_cluster_first_and_an_error_line_for_the_unreachable(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    east = fleet["east"].create(CONFIGMAPS, cm("app", None, "default"))
    west = fleet["west"].create(CONFIGMAPS, cm("app", None, "kube-system"))
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", fleet, "east")
    result = kinformer("watch", "cm", "--all-contexts", "-A", "--once", "--kubeconfig", kubeconfig)
    assert result.returncode == 8, result.stderr  # some contexts listed, not all
    table = rows(result.stdout)
    assert table[0] == ["CLUSTER", "NAMESPACE", "NAME", "RESOURCEVERSION", "AGE"]
    assert [row[:4] for row in table[1:]] == [
        ["east", "default", "app", east["metadata"]["resourceVersion"]],
        ["west", "kube-system", "app", west["metadata"]["resourceVersion"]],
    ]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cluster down: unable to connect to the server at {fleet['down'].url}: "
                      "discovery /api: connection refused"]


def test_once_keeps_the_namespace_and_selector_semantics_in_every_cluster(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    fleet["down"].start()
    for name, server in fleet.items():
        server.create(CONFIGMAPS, cm(f"web-{name}", None, "default", app="web"))
        server.create(CONFIGMAPS, cm(f"db-{name}", None, "default", app="db"))
        server.create(CONFIGMAPS, cm(f"web-{name}", None, "kube-system", app="web"))
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", fleet, "west")
    # no -n: the current context's namespace, in every cluster; -l is sent to every server
    result = kinformer("watch", "cm", "--all-contexts", "--once", "-l", "app=web", "--kubeconfig", kubeconfig)
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["CLUSTER", "NAME", "RESOURCEVERSION", "AGE"]
    every_web = [["east", "web-east"], ["west", "web-west"], ["down", "web-down"]]
    assert [row[:2] for row in table[1:]] == every_web
    result = kinformer("watch", "cm", "--all-contexts", "--once", "-n", "kube-system",
                       "--kubeconfig", kubeconfig)
    assert [row[:2] for row in rows(result.stdout)[1:]] == every_web
    assert len(rows(kinformer("watch", "cm", "--all-contexts", "--once", "-A", "--kubeconfig",
                              kubeconfig).stdout)) == 1 + 3 * 3


def test_all_contexts_refuses_one_context_an_embedded_server_and_a_shard(tmp_path: Path) -> None:
    for extra in (["--context", "east"], ["--embedded"], ["--shard", "0/2"]):
        result = kinformer("watch", "cm", "--all-contexts", *extra)
        assert result.returncode == 2, extra
        assert "--all-contexts cannot be combined" in result.stderr


def test_a_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    result = kinformer("watch", "cm", "--all-contexts", "--kubeconfig", str(tmp_path / "none"))
    assert result.returncode == 7
    assert "cannot read kubeconfig" in result.stderr


@contextlib.contextmanager
def streaming(kubeconfig: str, *extra: str) -> Iterator[tuple[Lines, Lines]]:
    """``watch configmaps --all-contexts`` running: its stdout and stderr lines; ended with
    SIGTERM (exit 0) once the block is done."""
    with ChildProcess([*KINFORMER, "watch", "configmaps", "--all-contexts", "--kubeconfig", kubeconfig,
                       *extra], stderr=True, timeout=TIMEOUT, line_timeout=TIMEOUT) as watch:
        yield watch.out, watch.err
        assert watch.stop() == 0


def test_streaming_prints_each_cluster_first_and_an_unreachable_one_joins_when_it_answers(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    fleet["east"].create(CONFIGMAPS, cm("before", None, "default"))
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", fleet, "east")
    with streaming(kubeconfig) as (out, err):
        assert out.next_matching("default/before").split()[:3] == ["east", "ADDED", "default/before"]
        assert "unable to connect" in err.next_matching("error: cluster down:")
        made = fleet["west"].create(CONFIGMAPS, cm("west-one", None, "default"))
        assert out.next_matching("west-one").split() == [
            "west", "ADDED", "default/west-one", made["metadata"]["resourceVersion"]]
        fleet["down"].start()  # its informer retries with backoff and lists it
        fleet["down"].create(CONFIGMAPS, cm("late", None, "default"))
        assert out.next_matching("default/late").split()[:3] == ["down", "ADDED", "default/late"]
        fleet["east"].update(CONFIGMAPS, cm("before", None, "default", data={"a": "1"}))
        assert out.next_matching("MODIFIED").split()[:3] == ["east", "MODIFIED", "default/before"]


def errors_of(stderr: str) -> list[str]:
    return sorted(line for line in stderr.splitlines() if line.startswith("error:"))


def test_once_prints_the_healthy_table_and_one_line_each_for_a_refused_and_a_hung_context(
    fleet: dict[str, FakeAPIServer], black_hole: SilentServer, tmp_path: Path,
) -> None:
    made = fleet["east"].create(CONFIGMAPS, cm("app", None, "default"))
    hole = FakeAPIServer(port=black_hole.port)  # never started: its address is the black hole's
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig",
                                   {"hole": hole, "down": fleet["down"], "east": fleet["east"]}, "east")
    result = kinformer("watch", "cm", "--all-contexts", "-A", "--once", "--timeout", "6",
                       "--kubeconfig", kubeconfig)
    assert result.returncode == 8, result.stderr  # some contexts listed, not all
    assert [row[:4] for row in rows(result.stdout)] == [
        ["CLUSTER", "NAMESPACE", "NAME", "RESOURCEVERSION"],
        ["east", "default", "app", made["metadata"]["resourceVersion"]],
    ]
    assert black_hole.accepted.is_set()
    assert errors_of(result.stderr) == [
        f"error: cluster down: unable to connect to the server at {fleet['down'].url}: "
        "discovery /api: connection refused",
        f"error: cluster hole: the server at {hole.url} did not answer discovery within 6s",
    ]


def test_once_with_every_context_failing_prints_one_error_line_for_each(
    fleet: dict[str, FakeAPIServer], black_hole: SilentServer, tmp_path: Path,
) -> None:
    hole = FakeAPIServer(port=black_hole.port)
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"down": fleet["down"], "hole": hole}, "down")
    result = kinformer("watch", "cm", "--all-contexts", "--once", "--timeout", "2",
                       "--kubeconfig", kubeconfig)
    assert result.returncode == 9, result.stderr  # no context listed
    assert result.stdout == ""
    assert errors_of(result.stderr) == [
        f"error: cluster down: unable to connect to the server at {fleet['down'].url}: "
        "discovery /api: connection refused",
        f"error: cluster hole: the server at {hole.url} did not answer discovery within 2s",
    ]


def test_streaming_prints_a_contexts_events_while_another_hangs(
    fleet: dict[str, FakeAPIServer], black_hole: SilentServer, tmp_path: Path,
) -> None:
    fleet["east"].create(CONFIGMAPS, cm("before", None, "default"))
    hole = FakeAPIServer(port=black_hole.port)
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"hole": hole, "east": fleet["east"]}, "hole")
    with streaming(kubeconfig, "--timeout", "600") as (out, _err):  # the hole is waited on long
        assert out.next_matching("default/before").split()[:3] == ["east", "ADDED", "default/before"]
        made = fleet["east"].create(CONFIGMAPS, cm("during", None, "default"))
        assert out.next_matching("default/during").split() == [
            "east", "ADDED", "default/during", made["metadata"]["resourceVersion"]]
        assert black_hole.accepted.is_set()  # asked, and holding the question


def test_streaming_says_once_that_a_context_is_down_and_once_that_it_recovered(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": fleet["east"], "down": fleet["down"]},
                                   "east")
    with streaming(kubeconfig) as (out, err):
        assert "connection refused" in err.next_matching("error: cluster down:")
        fleet["down"].start()  # on the port it had: the context's server is back
        made = fleet["down"].create(CONFIGMAPS, cm("late", None, "default"))
        *before, recovered = err.until("recovered")
        assert before == []  # no error line per retry
        assert re.fullmatch(r"cluster down: recovered after \d+\.\ds", recovered)
        assert out.next_matching("default/late").split() == [
            "down", "ADDED", "default/late", made["metadata"]["resourceVersion"]]


def test_streaming_says_when_a_listed_context_that_went_down_recovers(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    fleet["down"].start()
    fleet["down"].create(CONFIGMAPS, cm("first", None, "default"))
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": fleet["east"], "down": fleet["down"]},
                                   "east")
    with streaming(kubeconfig) as (out, err):
        out.next_matching("default/first")
        fleet["down"].stop()  # its watch breaks; the informer watches again from where it was
        assert "unable to connect" in err.next_matching("error: cluster down:")
        fleet["down"].start()
        made = fleet["down"].create(CONFIGMAPS, cm("late", None, "default"))
        assert out.next_matching("default/late").split() == [
            "down", "ADDED", "default/late", made["metadata"]["resourceVersion"]]
        *before, recovered = err.until("recovered")
        assert before == []
        assert re.fullmatch(r"cluster down: recovered after \d+\.\ds", recovered)


def test_a_context_that_serves_resource_as_another_type_is_left_out_with_its_error_line(
    fleet: dict[str, FakeAPIServer], tmp_path: Path,
) -> None:
    crds = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    served = {"east": GroupVersionResource("example.com", "v1", "widgets"),
              "west": GroupVersionResource("example.com", "v2", "widgets")}
    for name, gvr in served.items():
        fleet[name].create(crds, crd(gvr))
        fleet[name].create(gvr, {"apiVersion": f"example.com/{gvr.version}", "kind": "Widget",
                                 "metadata": {"name": f"w-{name}", "namespace": "default"}})
    kubeconfig = merged_kubeconfig(tmp_path / "kubeconfig", {"east": fleet["east"], "west": fleet["west"]},
                                   "east")
    result = kinformer("watch", "widgets", "--all-contexts", "--once", "--kubeconfig", kubeconfig)
    assert result.returncode == 8, result.stderr
    # the first context to answer gives the type: either may be first
    ((listed, name, _rv, _age),) = rows(result.stdout)[1:]
    other = "west" if listed == "east" else "east"
    assert name == f"w-{listed}"
    assert errors_of(result.stderr) == [
        f'error: cluster {other}: "widgets" is {served[other]} here, not {served[listed]} '
        f"as in context {listed}"]
