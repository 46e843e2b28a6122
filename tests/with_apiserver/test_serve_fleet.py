"""``kinformer serve`` as a fleet's member: named kubeconfigs that merge, and temporary directories
that never outlive their owner (none with ``--kubeconfig``; one left by a killed serve goes at the
next start). Each serve is a process of its own, its ``TMPDIR`` under the test's directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import KINFORMER, TIMEOUT, ChildProcess, cm

from kinformer.cli import serve
from kinformer.testing import FakeAPIServer


class Serving:
    """A running ``kinformer serve``: its process, URL and kubeconfig path, from its one line."""

    def __init__(self, process: ChildProcess, line: str) -> None:
        self.process = process
        _, _, self.url, kubeconfig = line.split()  # kinformer serve: URL kubeconfig=PATH
        self.kubeconfig = Path(kubeconfig.removeprefix("kubeconfig="))


@contextmanager
def serving(tmpdir: Path, *args: str, token: str | None = None) -> Iterator[Serving]:
    """``kinformer serve ARGS`` with ``TMPDIR=tmpdir``, stopped with SIGTERM at the end (if still
    running) and waited for."""
    env = {**os.environ, "TMPDIR": os.fspath(tmpdir)}
    env.pop(serve.TOKEN_ENV, None)
    if token is not None:
        env[serve.TOKEN_ENV] = token
    with ChildProcess([*KINFORMER, "serve", *args], env=env, timeout=TIMEOUT) as process:
        yield Serving(process, process.out.next())


@pytest.fixture
def tmpdir_of_serve(tmp_path: Path) -> Path:
    """The ``TMPDIR`` the serves of a test share."""
    path = tmp_path / "tmp"
    path.mkdir()
    return path


def test_serve_with_a_kubeconfig_path_makes_no_temporary_directory(
    tmp_path: Path, tmpdir_of_serve: Path,
) -> None:
    with serving(tmpdir_of_serve, "--kubeconfig", os.fspath(tmp_path / "kubeconfig")) as server:
        assert server.kubeconfig == tmp_path / "kubeconfig" and server.kubeconfig.exists()
        assert list(tmpdir_of_serve.iterdir()) == []
        assert server.process.stop() == 0
    assert list(tmpdir_of_serve.iterdir()) == []
    assert server.kubeconfig.exists()  # one given with --kubeconfig stays


@pytest.mark.parametrize("token", [None, "s3cret"], ids=["http", "https"])
def test_directories_left_by_a_killed_serve_are_removed_at_the_next_start(
    tmp_path: Path, tmpdir_of_serve: Path, token: str | None,
) -> None:
    with serving(tmpdir_of_serve, token=token) as killed:
        left = sorted(tmpdir_of_serve.iterdir())
        assert killed.kubeconfig.parent in left
        assert len(left) == (2 if token else 1)  # with a token, the server's TLS material too
        killed.process.stop(signal.SIGKILL)  # no cleanup runs
    assert sorted(tmpdir_of_serve.iterdir()) == left
    with serving(tmpdir_of_serve, "--kubeconfig", os.fspath(tmp_path / "kubeconfig")):
        assert list(tmpdir_of_serve.iterdir()) == []


def test_a_running_serves_directory_is_left_alone_by_the_next_start(tmpdir_of_serve: Path) -> None:
    with serving(tmpdir_of_serve) as first, serving(tmpdir_of_serve) as second:
        assert first.kubeconfig.exists() and second.kubeconfig.exists()
        assert first.kubeconfig.parent != second.kubeconfig.parent
    assert list(tmpdir_of_serve.iterdir()) == []


def test_serves_named_by_context_merge_into_one_kubeconfig_with_a_context_each(
    tmp_path: Path, tmpdir_of_serve: Path,
) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    east_path, west_path = tmp_path / "east.kubeconfig", tmp_path / "west.kubeconfig"
    with serving(tmpdir_of_serve, "--context", "east", "--kubeconfig", os.fspath(east_path)) as east, \
            serving(tmpdir_of_serve, "--context", "west", "--kubeconfig", os.fspath(west_path)):
        merged = f"{east_path}{os.pathsep}{west_path}"  # KUBECONFIG=east.kubeconfig:west.kubeconfig
        contexts, _current = k8s_config.list_kube_config_contexts(config_file=merged)
        assert sorted(c["name"] for c in contexts) == ["east", "west"]
        assert {c["name"]: (c["context"]["cluster"], c["context"]["user"]) for c in contexts} == {
            "east": ("east", "east"), "west": ("west", "west")}
        clients = {name: k8s_config.new_client_from_config(config_file=merged, context=name)
                   for name in ("east", "west")}
        try:
            assert clients["east"].configuration.host == east.url
            api = {name: k8s.CoreV1Api(c) for name, c in clients.items()}
            api["west"].create_namespaced_config_map("default", cm("only-west", None, "default"))
            assert [c.metadata.name for c in api["west"].list_namespaced_config_map("default").items] \
                == ["only-west"]
            assert api["east"].list_namespaced_config_map("default").items == []
        finally:
            for api_client in clients.values():
                api_client.close()


def test_the_context_names_the_cluster_user_and_context_across_logical_clusters() -> None:
    server = FakeAPIServer(logical_clusters=True)
    named = serve.kubeconfig(server, "fleet-a")
    assert [c["name"] for c in named["clusters"]] == ["fleet-a", "fleet-a-all-clusters"]
    assert [u["name"] for u in named["users"]] == ["fleet-a"]
    assert {c["name"]: (c["context"]["cluster"], c["context"]["user"]) for c in named["contexts"]} \
        == {"fleet-a": ("fleet-a", "fleet-a"), "fleet-a-all-clusters": ("fleet-a-all-clusters",
                                                                         "fleet-a")}
    assert named["current-context"] == "fleet-a"
    assert named["clusters"][1]["cluster"]["server"] == f"{server.url}/clusters/*"
    default = serve.kubeconfig(server)  # the names it always had
    assert [c["name"] for c in default["contexts"]] == ["kinformer", serve.ALL_CLUSTERS_CONTEXT]
    assert serve.ALL_CLUSTERS_CONTEXT == "kinformer-all-clusters"


@pytest.mark.parametrize("name", ["", " east"])
def test_an_empty_or_padded_context_name_exits_2(tmp_path: Path, name: str) -> None:
    result = subprocess.run([sys.executable, "-m", "kinformer", "serve", "--context", name],
                            capture_output=True, text=True, timeout=TIMEOUT,
                            stdin=subprocess.DEVNULL, env={**os.environ, "TMPDIR": os.fspath(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        f"error: argument --context: invalid name {name!r}: must be non-empty, without leading "
        "or trailing blanks")
    assert list(tmp_path.iterdir()) == []
