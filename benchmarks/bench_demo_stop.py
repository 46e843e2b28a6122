"""How soon ``kinformer demo`` ends after Ctrl-C, in each phase of a large first list.

The demo runs as a child process (``python -m kinformer demo --objects N --duration 0
--no-faults``) and gets SIGINT at one moment: ``loading`` (``--after`` seconds into loading the
workload), or ``--after`` seconds after its first ``listing`` line, which sweeps the first lists
from the request in flight through the decode to caching and into ``running``. Each run records
the seconds from the signal to the summary line and to the process's exit, and what the summary
says of the initial sync (whether the signal came before it completed). Results are compared
between runs, not asserted; the demo's promise (docs/cli.md) is an exit within a second.

Run ``python benchmarks/bench_demo_stop.py [--objects 200000] [--runs 3] [--json] [--quick]``
(``--quick``: 20,000 objects, one run per moment).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

N_OBJECTS = 200_000
QUICK_OBJECTS = 20_000
# (phase line to wait for, seconds after it): loading, then a sweep over the first lists
MOMENTS = (("loading", 1.0), ("listing", 0.0), ("listing", 0.5), ("listing", 1.0), ("listing", 1.5),
           ("listing", 2.0), ("listing", 3.0))
TIMEOUT = 120.0  # seconds a run may take before it counts as hung
ROOT = Path(__file__).resolve().parent.parent


def one_run(objects: int, phase: str, after: float) -> dict[str, Any]:
    """One demo run stopped ``after`` seconds after its first ``phase=<phase>`` line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kinformer", "demo", "--objects", str(objects), "--duration", "0",
         "--no-faults"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        stdin=subprocess.DEVNULL, cwd=ROOT)
    assert process.stdout is not None
    seen = threading.Event()
    summary_at: list[float] = []
    initial_sync: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if f"phase={phase}" in line:
                seen.set()
            elif "kinformer demo summary" in line:
                summary_at.append(time.monotonic())
            elif line.strip().startswith("initial sync"):
                initial_sync.append(line.split(None, 2)[-1].strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not seen.wait(TIMEOUT):
            raise RuntimeError(f"no phase={phase} line")
        time.sleep(after)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(TIMEOUT)
        exited = time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(5.0)
    return {"phase": phase, "after": after, "returncode": process.returncode,
            "summary_s": round(summary_at[0] - sent, 3) if summary_at else None,
            "exit_s": round(exited - sent, 3),
            "initial_sync": initial_sync[0] if initial_sync else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=N_OBJECTS)
    parser.add_argument("--runs", type=int, default=3, help="runs per moment (default 3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--quick", action="store_true", help="20,000 objects, one run per moment")
    args = parser.parse_args()
    if args.quick:
        args.objects, args.runs = QUICK_OBJECTS, 1
    results = [one_run(args.objects, phase, after)
               for _ in range(args.runs) for phase, after in MOMENTS]
    if args.json:
        print(json.dumps({"objects": args.objects, "cpus": os.cpu_count(), "runs": results}, indent=2))
        return 0
    print(f"kinformer demo --objects {args.objects}: seconds from SIGINT to the summary and to exit")
    for (phase, after) in MOMENTS:
        runs = [r for r in results if r["phase"] == phase and r["after"] == after]
        exits = ", ".join(f"{r['exit_s']:.2f}" for r in runs)
        summaries = ", ".join(f"{r['summary_s']:.2f}" if r["summary_s"] is not None else "-" for r in runs)
        syncs = ", ".join(str(r["initial_sync"]) for r in runs)
        print(f"  {phase:<8} +{after:.1f}s  summary {summaries}   exit {exits}   initial sync: {syncs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
