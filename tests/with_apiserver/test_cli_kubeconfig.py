"""``kinformer watch`` reading kubeconfigs as kubectl reads them, in subprocesses against
FakeAPIServers: which context ``$KUBECONFIG=a:b`` makes current, and kubeconfigs that are
broken in one place (a credential plugin that hangs or fails, a user or server missing, a
current context that cannot be used) failing loudly, in that place alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFIGMAPS, cm

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

NAMESPACES = GroupVersionResource("", "v1", "namespaces")
TIMEOUT = 30.0  # seconds any one command may take before the test fails


def kinformer(*args: str, env: dict[str, str] | None = None,
              timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinformer", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def named(server: FakeAPIServer, name: str, namespace: str = "default",
          current: str | None = None) -> dict[str, Any]:
    """``server``'s kubeconfig with its cluster, user and context called ``name``."""
    document = server.kubeconfig()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": document["clusters"][0]["cluster"]}],
        "users": [{"name": name, "user": document["users"][0]["user"]}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name if current is None else current,
    }


def write(path: Path, document: dict[str, Any]) -> str:
    path.write_text(json.dumps(document))
    return os.fspath(path)


@pytest.fixture
def pair() -> Iterator[tuple[FakeAPIServer, FakeAPIServer]]:
    """Two started servers, each with a ConfigMap naming it in its own namespace."""
    first, second = FakeAPIServer().start(), FakeAPIServer().start()
    try:
        for server, name in ((first, "first"), (second, "second")):
            server.create(NAMESPACES, {"metadata": {"name": f"{name}-ns"}})
            server.create(CONFIGMAPS, cm(f"in-{name}", None, f"{name}-ns"))
        yield first, second
    finally:
        first.stop()
        second.stop()


def test_with_several_kubeconfig_files_the_first_current_context_wins_as_in_kubectl(
    pair: tuple[FakeAPIServer, FakeAPIServer], tmp_path: Path,
) -> None:
    first, second = pair
    files = [
        write(tmp_path / "none", {**named(first, "spare", "first-ns"), "current-context": ""}),
        write(tmp_path / "a", named(first, "a", "first-ns")),
        write(tmp_path / "b", named(second, "b", "second-ns")),
    ]
    env = {"KUBECONFIG": os.pathsep.join(["", *files])}
    result = kinformer("watch", "cm", "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert [row.split()[0] for row in result.stdout.splitlines()[1:]] == ["in-first"]
    # --all-contexts: every context, in the namespace of that same current context
    result = kinformer("watch", "cm", "--once", "--all-contexts", env=env)
    assert result.returncode == 0, result.stderr
    assert [row.split()[:2] for row in result.stdout.splitlines()[1:]] == [
        ["spare", "in-first"], ["a", "in-first"]]
