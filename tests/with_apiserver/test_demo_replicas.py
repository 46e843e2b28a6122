"""``kinformer demo --replicas 3`` in a subprocess: leaders hand over, released and expired, and
no two replicas ever reconcile at the same moment."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_the_replicas_demo_hands_over_and_reconciles_one_replica_at_a_time() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kinformer", "demo", "--replicas", "3", "--duration", "7",
         "--objects", "100", "--rate", "40", "--handover-every", "2"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stdout + result.stderr
    # every line fits 80 columns, wrapped at word boundaries as the informer demo's display is
    assert [line for line in result.stdout.splitlines() if len(line) > 79] == []
    out = " ".join(result.stdout.split())  # the wrapped lines as one text
    # whichever replica wins the first election is the first to be stopped
    assert re.search(r"stopping replica-\d+ gracefully: it releases the lease", out)
    assert re.search(r"stopping replica-\d+ as a crash would: its lease must expire", out)
    assert re.search(r"new leader replica-\d+, [\d.]+s after the last one stopped \(lease released\)", out)
    assert re.search(r"new leader replica-\d+, [\d.]+s after the last one stopped \(lease expired\)", out)
    summary = out[out.index("kinformer demo summary (replicas)"):]
    assert "one at a time yes (most replicas reconciling at once 1, most leaders at once 1)" in summary
    assert "threads all stopped" in summary
    leaders = re.search(r"leaders in turn ((?:replica-\d+(?: -> )?)+)", summary)
    assert leaders is not None and len(leaders.group(1).split(" -> ")) >= 3


def test_the_replicas_demo_refuses_a_bad_handover_interval() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kinformer", "demo", "--replicas", "3", "--handover-every", "0"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "--handover-every" in result.stderr
