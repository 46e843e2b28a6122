"""docs/tutorial.md's whole script, run as a user runs it: a process of its own against a
FakeAPIServer, exporting labelled ConfigMaps to files and stopping cleanly on SIGINT and SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CONFIGMAPS, TIMEOUT, ChildProcess

from kinformer.testing import FakeAPIServer, wait_for

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
STOP_BOUND = 15.0  # seconds a signalled script may take to exit on a loaded machine


def whole_script() -> str:
    """The code of the tutorial's "The whole script" section."""
    section = TUTORIAL.read_text(encoding="utf-8").split("## The whole script", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match.group(1)


def exporting(script: Path, exported: Path, kubeconfig: str) -> ChildProcess:
    """``script`` (the whole script) exporting into ``exported`` over ``kubeconfig``, its stderr read."""
    return ChildProcess([sys.executable, os.fspath(script), os.fspath(exported)], stdout=False,
                        stderr=True, env={**os.environ, "KUBECONFIG": kubeconfig}, timeout=STOP_BOUND)


@pytest.fixture
def exporter(apiserver: FakeAPIServer, tmp_path: Path) -> Iterator[tuple[ChildProcess, Path]]:
    """The script running against ``apiserver``, exporting into ``tmp_path / "exported"``."""
    script = tmp_path / "export_configmaps.py"
    script.write_text(whole_script(), encoding="utf-8")
    exported = tmp_path / "exported"
    with exporting(script, exported, apiserver.write_kubeconfig(tmp_path / "kubeconfig")) as process:
        yield process, exported


def configmap(name: str, export: str = "true") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default", "labels": {"export": export}},
            "data": {"greeting": name}}


def test_the_whole_script_exports_labelled_configmaps_and_removes_deleted_ones(
    apiserver: FakeAPIServer, exporter: tuple[ChildProcess, Path],
) -> None:
    process, exported = exporter
    apiserver.create(CONFIGMAPS, configmap("a"))
    apiserver.create(CONFIGMAPS, configmap("b", export="false"))
    assert wait_for(lambda: (exported / "default" / "a.json").exists(), TIMEOUT)
    apiserver.delete(CONFIGMAPS, "default", "a")
    assert wait_for(lambda: not (exported / "default" / "a.json").exists(), TIMEOUT)
    assert not (exported / "default" / "b.json").exists()
    assert process.running


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_whole_script_stops_cleanly_on_ctrl_c_and_on_sigterm(
    apiserver: FakeAPIServer, exporter: tuple[ChildProcess, Path], sig: signal.Signals,
) -> None:
    process, exported = exporter
    apiserver.create(CONFIGMAPS, configmap("a"))
    assert wait_for(lambda: (exported / "default" / "a.json").exists(), TIMEOUT)  # it runs
    code = process.stop(sig)
    err = process.err.rest()
    assert code == 0, err
    assert "Traceback" not in err


def test_the_whole_script_keeps_two_logical_clusters_apart_over_a_clusters_star_context(
    logical_clusters_server: FakeAPIServer, tmp_path: Path,
) -> None:
    """The same script, unchanged, over a kubeconfig whose server ends in ``/clusters/*``:
    ``default/a`` of two logical clusters are two files, and a delete in one removes only its own."""
    server = logical_clusters_server
    script = tmp_path / "export_configmaps.py"
    script.write_text(whole_script(), encoding="utf-8")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig", cluster="*")
    exported = tmp_path / "exported"
    for cluster in ("root:a", "root:b"):
        server.create(CONFIGMAPS, configmap("a"), cluster=cluster)
    with exporting(script, exported, kubeconfig) as process:
        in_a, in_b = (exported / cluster / "default" / "a.json" for cluster in ("root:a", "root:b"))
        assert wait_for(lambda: in_a.exists() and in_b.exists(), TIMEOUT)
        server.delete(CONFIGMAPS, "default", "a", cluster="root:a")
        assert wait_for(lambda: not in_a.exists(), TIMEOUT)
        server.create(CONFIGMAPS, configmap("late"), cluster="root:b")
        assert wait_for(lambda: (exported / "root:b" / "default" / "late.json").exists(), TIMEOUT)
        assert in_b.exists()  # root:a's delete was root:a's alone
        assert process.running
        assert process.stop(signal.SIGINT) == 0, process.err.rest()
