"""HA chaos: leader election and shard coordination keep their promises through faults.

Three LeaderElectors and three (then two to five) ShardCoordinators share one FakeAPIServer
while rounds of faults (5xx and 429 bursts, 409 storms on Lease writes, dropped watches, a
restart with state, slow answers, compaction, stalled views of the Leases) and replica changes
(a leader stopped or frozen past its lease, members joining, leaving, frozen) come one after
another (see ``_ha_chaos.py``). Never two leaders acting at once, every hand-over within
``lease_duration + retry_period`` of the old leader's end, no member ever owning more than its
share of the members before or after the last change, and after each change the live members
cover the hash space exactly once within ``lease_duration + renew_interval``. Seeds are fixed;
``KINFORMER_HA_CHAOS_SEED`` runs another one, and ``benchmarks/soak_ha.py`` runs for minutes.
"""

from __future__ import annotations

import os

import pytest
from _ha_chaos import HAChaos

SECONDS = 12.0  # of rounds per seed; a round lasts up to a few lease durations
SEEDS = [int(os.environ["KINFORMER_HA_CHAOS_SEED"])] if os.environ.get(
    "KINFORMER_HA_CHAOS_SEED") else [3, 31]


@pytest.mark.timeout(SECONDS + 40)
@pytest.mark.parametrize("seed", SEEDS)
def test_electors_and_coordinators_keep_their_promises_through_faults(seed: int) -> None:
    chaos = HAChaos(seed)
    try:
        figures = chaos.run(SECONDS)
    finally:
        chaos.close()
    figures = chaos.check()
    print(figures.summary())
    assert figures.problems == []
    assert figures.leaders_at_once == 1
    assert figures.rounds > 0 and figures.hand_overs > 0
