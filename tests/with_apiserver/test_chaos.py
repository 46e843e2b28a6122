"""Chaos: informers keep their caches equal to the server through every fault at once.

Writers change configmaps, nodes and a CRD's widgets through the official client while a fault
driver drops watches, compacts history, fails lists and watches with 500 and 429, delays
responses, restarts the server on its port, deletes and recreates the CRD, and corrupts or cuts
watch streams. Once the faults stop, every cache, every index and every handler's replayed
notifications must equal the server, and stopping must leave no thread. Seeds are fixed; set
``KINFORMER_SOAK_SECONDS`` to run the faults for that long instead of a few seconds.
"""

from __future__ import annotations

import os

import pytest
from _chaos import Chaos

from kinformer import _threads
from kinformer.testing import wait_for

CHAOS_SECONDS = float(os.environ.get("KINFORMER_SOAK_SECONDS", "0") or 0) or 4.0
SYNC_TIMEOUT = 10.0
SETTLE_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


@pytest.mark.timeout(CHAOS_SECONDS + 120)
@pytest.mark.parametrize("seed", [8, 88])
def test_caches_indexes_and_handler_logs_equal_the_server_after_chaos(seed: int) -> None:
    before = set(_threads.kinformer_threads())  # an earlier test's leak is reported by that test
    chaos = Chaos(seed)
    try:
        assert chaos.start_informers(SYNC_TIMEOUT)
        chaos.run(CHAOS_SECONDS)
        settled = chaos.settle(SETTLE_TIMEOUT)
        print(chaos.report())
        assert settled, "\n".join(chaos.all_mismatches()[:40])
        assert sum(chaos.faults.values()) > 0
        assert sum(v for k, v in chaos.operations.items() if not k.startswith(("rejected", "refused"))) > 0
    finally:
        stuck = chaos.stop(STOP_TIMEOUT)
    assert not stuck, f"informer run threads still running: {stuck}"
    assert wait_for(lambda: not set(_threads.kinformer_threads()) - before, STOP_TIMEOUT), [
        t.name for t in set(_threads.kinformer_threads()) - before]
