"""docs/multicluster.md's "Build a fleet", run as a user runs it: its shell blocks in order, in an
empty directory, with ``kinformer`` and ``python`` the ones under test. Three members and a hub
from ``kinformer serve --context``, their kubeconfigs merged, watched at once, and registered on
the hub as multicluster-runtime's kubeconfig Secrets that a KubeconfigSecretProvider finds."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "multicluster.md"
MEMBERS = ["member-1", "member-2", "member-3"]
TIMEOUT = 120.0  # seconds the whole section may take on a loaded machine before the test fails


def section_script() -> str:
    """The shell blocks of the "Build a fleet" section, in order, as one script."""
    section = GUIDE.read_text(encoding="utf-8").split("\n## Build a fleet\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3
    return "set -e\n" + "".join(blocks)


def shims(folder: Path) -> Path:
    """A directory of ``kinformer`` and ``python`` commands that run this checkout's kinformer."""
    folder.mkdir()
    for name, command in (("kinformer", f'"{sys.executable}" -m kinformer'),
                          ("python", f'"{sys.executable}"')):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return folder


def test_the_build_a_fleet_section_merges_members_and_registers_them_on_a_hub(tmp_path: Path) -> None:
    work, tmpdir = tmp_path / "fleet", tmp_path / "tmp"
    work.mkdir()
    tmpdir.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    env.update(PATH=f"{shims(tmp_path / 'bin')}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [os.fspath(ROOT), env.get("PYTHONPATH")])),
               TMPDIR=os.fspath(tmpdir), HOME=os.fspath(tmp_path))
    process = subprocess.Popen(["bash", "-c", section_script()], cwd=work, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the servers, should the script have failed
            os.killpg(process.pid, signal.SIGTERM)
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
    assert process.returncode == 0, err
    lines = out.splitlines()
    for member in MEMBERS:
        assert f"created default/app in {member}" in lines
        assert any(line.split()[:1] == [member] and "app" in line.split() for line in lines), out
        assert f"registered {member}" in lines
        assert f"{member} has default/app from {member}" in lines  # through the hub's Secrets
    assert sorted(path.name for path in work.glob("*.kubeconfig")) == [
        "hub.kubeconfig", *(f"{member}.kubeconfig" for member in MEMBERS)]
    assert list(tmpdir.iterdir()) == []  # servers given --kubeconfig make no temporary directory
