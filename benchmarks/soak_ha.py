"""HA soak: leader electors and shard coordinators under rounds of faults, for minutes.

The chaos driver of ``tests/with_apiserver/_ha_chaos.py`` (three LeaderElectors whose leaders
enter a shared critical section, three to five ShardCoordinators, one FakeAPIServer over real
HTTP in this process), played for ``--minutes`` (default 10) instead of the test's seconds, with
the test's lease timings (elector: 2 s lease, 1.5 s renew deadline, 0.2 s retry; coordinator:
2 s lease, 0.4 s renew interval). Rounds of one action each: 5xx and 429 bursts, 409 storms on
Lease writes, dropped watches, a restart with state, slow answers, compaction, stalled views,
a leader stopped or frozen past its lease, a candidate frozen, members joining, leaving and
frozen; each followed by a wait until a leader acts and the members settle.

Prints the rounds, the actions by kind, the most leaders ever acting at once, the hand-overs
(the worst gap after the old leader's last action, and the worst measured from the end of a
fault that held the hand-over up, against its bound ``lease_duration + retry_period``), the
membership changes and the worst time to settle (bound ``lease_duration + renew_interval``),
coverage and share violations, and every broken promise; exits 1 if there is one. Nothing is
asserted on timing beyond those protocol bounds.

Run ``python benchmarks/soak_ha.py [--minutes M] [--seed S] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "with_apiserver"))

from _ha_chaos import ELECTION, SHARDS, HAChaos

MINUTES = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=MINUTES, help="how long to play rounds")
    parser.add_argument("--seed", type=int, default=2026, help="seeds every random choice")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # the faults make every component complain
    began = time.monotonic()
    chaos = HAChaos(args.seed)
    try:
        chaos.run(args.minutes * 60)
    finally:
        chaos.close()
    figures = chaos.check()
    report = {
        "benchmark": "soak_ha",
        "python": platform.python_version(),
        "minutes": args.minutes,
        "wall_seconds": time.monotonic() - began,
        "election": ELECTION,
        "shards": SHARDS,
        **figures.as_dict(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"HA soak, {args.minutes:g} minutes, Python {report['python']}")
        print(figures.summary())
        for problem in figures.problems:
            print("  ", problem)
    return 1 if figures.problems else 0


if __name__ == "__main__":
    sys.exit(main())
