"""README's code, run as a user runs it: a script of its own, against a FakeAPIServer or none."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer

README = Path(__file__).resolve().parents[2] / "README.md"
PODS = GroupVersionResource("", "v1", "pods")
TIMEOUT = 30.0  # seconds the script may take before the test fails (a hang)


def first_informer(sync_timeout: int) -> str:
    """README's "A first informer" example, its sync timeout set to ``sync_timeout`` seconds."""
    section = README.read_text().split("## A first informer", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    code = match.group(1)
    assert code.count("timeout=30") == 1
    return code.replace("timeout=30", f"timeout={sync_timeout}")


def run_script(code: str, kubeconfig: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                          env={**os.environ, "KUBECONFIG": kubeconfig})


def pod(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_the_first_informer_example_prints_the_web_pods_and_ends(
    apiserver: FakeAPIServer, tmp_path: Path,
) -> None:
    apiserver.create(PODS, pod("web-1", app="web"))
    apiserver.create(PODS, pod("db-1", app="db"))
    result = run_script(first_informer(30), apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    assert result.returncode == 0, result.stderr
    assert "1 web pods in the cache" in result.stdout.splitlines()


def test_the_first_informer_example_ends_when_the_cache_does_not_sync(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = FakeAPIServer(port=port).write_kubeconfig(tmp_path / "kubeconfig")
    result = run_script(first_informer(1), kubeconfig)
    assert result.returncode == 1
    assert "cache did not sync: list pods: connection refused" in result.stderr
