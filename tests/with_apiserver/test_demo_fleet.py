"""``kinformer demo --clusters 3`` in a subprocess: a member leaves and rejoins through its
kubeconfig Secret on the hub, another becomes unreachable and comes back, and at the end every
cluster's cache equals its server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from helpers import ChildProcess

COMMAND = [sys.executable, "-m", "kinformer", "demo", "--clusters", "3"]
TIMEOUT = 60.0  # seconds the whole run may take on a loaded machine


def test_the_fleet_demo_shows_members_leave_fail_and_rejoin_and_ends_with_equal_caches() -> None:
    result = subprocess.run(
        [*COMMAND, "--duration", "10", "--objects", "300", "--rate", "50", "--seed", "7"],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stdout + result.stderr
    # every line fits 80 columns, wrapped at word boundaries as the other demos' are
    assert [line for line in result.stdout.splitlines() if len(line) > 79] == []
    out = " ".join(result.stdout.split())  # the wrapped lines as one text
    # one line per cluster in the live display
    for name in ("member-1", "member-2", "member-3"):
        assert re.search(rf"{name} engaged, synced for \d+s, \d+ objects, \d+ events", out)
    # the member that leaves: its Secret deleted on the hub, disengaged without deletes, back
    assert "member-2 leaves the fleet: its kubeconfig Secret is deleted on the hub" in out
    assert re.search(r"member-2 disengaged [\d.]+s later: its objects left the cache, handlers got "
                     r"on_disengaged and no deletes", out)
    assert re.search(r"member-2 engaged and synced [\d.]+s later \(\d+ ConfigMaps\)", out)
    # the member whose server stops: engaged, its error shown, the others go on
    assert re.search(r"member-3 unreachable, seen [\d.]+s later: .*the others go on", out)
    # and back: shown as plainly, its state synced and the error gone
    assert re.search(r"member-3 recovered [\d.]+s after its server came back: synced, no error", out)
    summary = out[out.index("kinformer demo summary (clusters, finished"):]
    assert re.search(r"left member-2 at [\d.]+s, disengaged [\d.]+s later", summary)
    assert re.search(r"rejoined member-2 at [\d.]+s, synced [\d.]+s later", summary)
    assert re.search(r"unreachable member-3 at [\d.]+s, its error seen [\d.]+s later", summary)
    assert re.search(r"reachable member-3 at [\d.]+s, recovered [\d.]+s later", summary)
    for name in ("member-1", "member-2", "member-3"):
        assert re.search(rf"{name} cache equals its server \(\d+ ConfigMaps\)", summary)
    assert "consistency every cache equals its server" in summary
    assert "threads all stopped" in summary


def test_the_fleet_demo_stops_on_ctrl_c_with_its_summary() -> None:
    with ChildProcess([*COMMAND, "--duration", "0", "--objects", "90"], timeout=TIMEOUT,
                      line_timeout=TIMEOUT, env={**os.environ, "COLUMNS": "80"}) as demo:
        demo.out.next_matching("churn starts")
        assert demo.stop(signal.SIGINT) == 0
        rest = " ".join(demo.out.rest().split())
        assert "kinformer demo summary (clusters, interrupted after" in rest
        assert "consistency every cache equals its server" in rest
        assert "threads all stopped" in rest


def test_the_fleet_demo_refuses_a_cluster_count_out_of_range_and_replicas_with_it() -> None:
    for extra in (["--clusters", "0"], ["--clusters", "21"], ["--clusters", "2", "--replicas", "2"]):
        result = subprocess.run([sys.executable, "-m", "kinformer", "demo", *extra], capture_output=True,
                                text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        assert result.returncode == 2, extra
        assert "--clusters" in result.stderr
