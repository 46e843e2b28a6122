"""``kinformer watch`` over a context whose server ends in ``/clusters/*`` (the context
``kinformer-all-clusters`` that ``kinformer serve --logical-clusters`` writes): a CLUSTER column
first, one row per cluster's object, and streamed lines that name the cluster; in subprocesses,
against FakeAPIServer(logical_clusters=True)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CONFIGMAPS, KINFORMER, ChildProcess, cm

from kinformer import DeletedFinalStateUnknown
from kinformer.cli import serve
from kinformer.cli.watch import table
from kinformer.testing import FakeAPIServer

TIMEOUT = 30.0  # seconds any one command or line may take before the test fails
TEAMS = ("root:team-a", "root:team-b", "root:team-c")


@pytest.fixture
def server(logical_clusters_server: FakeAPIServer) -> FakeAPIServer:
    return logical_clusters_server


@pytest.fixture
def kubeconfig(server: FakeAPIServer, tmp_path: Path) -> str:
    """The kubeconfig ``kinformer serve --logical-clusters`` writes for ``server``."""
    path = os.fspath(tmp_path / "kubeconfig")
    serve.write_kubeconfig(server, path)
    return path


def hello(server: FakeAPIServer, cluster: str, namespace: str = "default") -> str:
    """``namespace/hello`` made in ``cluster``; its resourceVersion."""
    made = server.create(CONFIGMAPS, cm("hello", None, namespace, data={"cluster": cluster}), cluster=cluster)
    return str(made["metadata"]["resourceVersion"])


def kinformer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinformer", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_once_across_every_cluster_prints_one_row_per_clusters_object_with_the_cluster_first(
    server: FakeAPIServer, kubeconfig: str,
) -> None:
    versions = {team: hello(server, team) for team in TEAMS}
    other = hello(server, "root:team-b", "kube-system")
    result = kinformer("watch", "configmaps", "-A", "--context", serve.ALL_CLUSTERS_CONTEXT, "--once",
                       "--kubeconfig", kubeconfig)
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["CLUSTER", "NAMESPACE", "NAME", "RESOURCEVERSION", "AGE"]
    assert [row[:4] for row in table[1:]] == [
        ["root:team-a", "default", "hello", versions["root:team-a"]],
        ["root:team-b", "default", "hello", versions["root:team-b"]],
        ["root:team-b", "kube-system", "hello", other],
        ["root:team-c", "default", "hello", versions["root:team-c"]],
    ]


def test_once_in_one_namespace_keeps_the_cluster_column_and_drops_the_namespace_one(
    server: FakeAPIServer, kubeconfig: str,
) -> None:
    for team in TEAMS[:2]:
        hello(server, team)
    hello(server, "root:team-c", "kube-system")
    result = kinformer("watch", "cm", "--context", serve.ALL_CLUSTERS_CONTEXT, "--once",
                       "--kubeconfig", kubeconfig)
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["CLUSTER", "NAME", "RESOURCEVERSION", "AGE"]
    assert [row[:2] for row in table[1:]] == [["root:team-a", "hello"], ["root:team-b", "hello"]]


def test_all_contexts_tells_apart_the_logical_clusters_of_a_context_on_clusters_star(
    server: FakeAPIServer, kubeconfig: str,
) -> None:
    versions = {team: hello(server, team) for team in TEAMS[:2]}
    result = kinformer("watch", "cm", "--all-contexts", "-A", "--once", "--kubeconfig", kubeconfig)
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["CLUSTER", "NAMESPACE", "NAME", "RESOURCEVERSION", "AGE"]
    assert [row[:4] for row in table[1:]] == [
        [f"{serve.ALL_CLUSTERS_CONTEXT}/{team}", "default", "hello", versions[team]] for team in TEAMS[:2]]


def test_a_member_printer_names_the_logical_cluster_of_each_line() -> None:
    out = io.StringIO()
    printer = table.ClusterEventPrinter(out, len("east"))
    in_team = {team: cm("hello", "1", "default", annotations={"kcp.io/cluster": team}) for team in TEAMS[:2]}
    for team in TEAMS[:2]:
        printer.on_add("kcp", in_team[team])
    printer.on_add("east", cm("hello", "2", "default"))
    printer.on_delete("kcp", DeletedFinalStateUnknown("root:team-a|default/hello", in_team["root:team-a"]))
    assert rows(out.getvalue()) == [
        ["kcp/root:team-a", "ADDED", "default/hello", "1"],
        ["kcp/root:team-b", "ADDED", "default/hello", "1"],
        ["east", "ADDED", "default/hello", "2"],
        ["kcp/root:team-a", "DELETED", "default/hello", "1"],
    ]


@pytest.fixture
def watching(kubeconfig: str) -> Iterator[ChildProcess]:
    with ChildProcess([*KINFORMER, "watch", "configmaps", "-A", "--context", serve.ALL_CLUSTERS_CONTEXT,
                       "--kubeconfig", kubeconfig], timeout=10, line_timeout=TIMEOUT) as watch:
        yield watch


def test_streamed_lines_name_each_objects_cluster(
    server: FakeAPIServer, watching: ChildProcess,
) -> None:
    first = {team: hello(server, team) for team in TEAMS[:2]}
    lines = watching.out
    initial = [lines.next().split(), lines.next().split()]  # the first list, in the cache's order
    assert sorted(initial) == [[team, "ADDED", "default/hello", first[team]] for team in TEAMS[:2]]
    assert server.wait_for_watchers(CONFIGMAPS, 1, timeout=TIMEOUT, cluster="*")
    made = hello(server, "root:team-c")  # a create, not the others' hello modified
    assert lines.next().split() == ["root:team-c", "ADDED", "default/hello", made]
    server.delete(CONFIGMAPS, "default", "hello", cluster="root:team-a")
    assert lines.next().split()[:3] == ["root:team-a", "DELETED", "default/hello"]
    changed = server.update(CONFIGMAPS, cm("hello", None, "default", data={"k": "v"}), cluster="root:team-b")
    version = changed["metadata"]["resourceVersion"]
    assert lines.next().split() == ["root:team-b", "MODIFIED", "default/hello", version]
    assert watching.stop(signal.SIGINT, TIMEOUT) == 0


def test_a_member_on_clusters_star_keeps_its_logical_clusters_apart_and_finds_them_by_key(
    server: FakeAPIServer, kubeconfig: str,
) -> None:
    from kinformer import Context, KubeconfigContextsProvider, MultiClusterInformerFactory

    for team in TEAMS[:2]:
        hello(server, team)
    provider = KubeconfigContextsProvider(kubeconfig, contexts=[serve.ALL_CLUSTERS_CONTEXT])
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    stop = Context("test")
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(timeout=30)
        member = configmaps.lister().cluster(serve.ALL_CLUSTERS_CONTEXT)
        for team in TEAMS[:2]:
            found = member.get(f"{team}|default/hello")
            assert found["metadata"]["annotations"]["kcp.io/cluster"] == team
        assert len(member.list()) == 2
    finally:
        stop.cancel()
        factory.shutdown()
