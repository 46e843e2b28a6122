"""Leader election: hand-over times and the Lease traffic of each replica.

REPLICAS LeaderElectors (each with its own ApiClient) campaign for one Lease on a FakeAPIServer
in this process, with client-go's default durations (15 s lease, 10 s renew deadline, 2 s retry;
``--quick`` divides them by ten and shortens the run):

- ``traffic``: for ``--seconds`` of steady leadership, the Lease requests the server saw: writes
  (PUT, POST) per minute, all the leader's, and reads (GET) per minute per candidate; then
  writes per minute per replica, averaged over the replicas;
- ``hand-over (released)``: the leader is stopped with ``release_on_cancel``; seconds from the
  stop until another replica reports itself leader, HANDOVERS times;
- ``hand-over (expired)``: the same without release: the Lease must expire first.

Each stopped leader is replaced by a fresh replica, so REPLICAS always campaign; each stop comes
at a random point of the candidates' retry cycles. Figures are printed (``--json`` for JSON);
nothing is asserted.

Run ``python benchmarks/bench_leaderelection.py [--json] [--quick] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from typing import Any

from kinformer import Context, LeaderElectionConfig, LeaderElector, LeaseLock
from kinformer.testing import FakeAPIServer

REPLICAS = 3
HANDOVERS = 8  # of each kind
DEFAULTS = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/bench"
POLL = 0.001  # seconds between looks for a new leader (the resolution of a hand-over time)


class Replica:
    def __init__(self, server: FakeAPIServer, identity: str, timing: dict[str, float],
                 release: bool) -> None:
        self.api = server.api_client()
        self.stop = Context(identity)
        self.elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(self.api, "default", "bench", identity), release_on_cancel=release,
            name=identity, lease_duration=timing["lease_duration"],
            renew_deadline=timing["renew_deadline"], retry_period=timing["retry_period"]))
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), name=f"bench-{identity}")
        self.thread.start()

    def close(self) -> None:
        self.stop.cancel()
        self.thread.join()
        self.api.close()


class Cluster:
    """REPLICAS replicas on one server; a stopped leader is replaced by a new one."""

    def __init__(self, server: FakeAPIServer, timing: dict[str, float], release: bool) -> None:
        self.server = server
        self.timing = timing
        self.release = release
        self.made = 0
        self.replicas = [self._new() for _ in range(REPLICAS)]

    def _new(self) -> Replica:
        self.made += 1
        return Replica(self.server, f"replica-{self.made}", self.timing, self.release)

    def leader(self, timeout: float) -> Replica:
        pause = threading.Event()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            leading = [r for r in self.replicas if r.elector.is_leader()]
            if leading:
                return leading[0]
            pause.wait(POLL)
        raise TimeoutError("no leader")

    def hand_over(self, timeout: float) -> float:
        """Let the replicas settle, stop the leader; seconds until another replica leads.

        The pause (a random one to three retry periods) puts the stop at a random point of the
        candidates' retry cycles, after the replica started last has made its first attempt.
        """
        old = self.leader(timeout)
        threading.Event().wait(self.timing["retry_period"] * random.uniform(1.0, 3.0))
        stopped = time.monotonic()
        old.stop.cancel()
        self.replicas.remove(old)
        new = self.leader(timeout)
        took = time.monotonic() - stopped
        old.close()
        self.replicas.append(self._new())
        assert new is not old
        return took

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()


def traffic(timing: dict[str, float], seconds: float) -> dict[str, float]:
    with FakeAPIServer() as server:
        cluster = Cluster(server, timing, release=False)
        try:
            cluster.leader(timing["lease_duration"] * 3)
            threading.Event().wait(timing["retry_period"] * 3)  # the others' first attempts end
            server.clear_requests()
            threading.Event().wait(seconds)
            collection = LEASE_PATH.rsplit("/", 1)[0]  # where a create goes
            requests = [(m, code) for m, path, _, code in server.requests
                        if path in (LEASE_PATH, collection)]
        finally:
            cluster.close()
    minutes = seconds / 60
    writes = sum(1 for m, _ in requests if m in ("PUT", "POST"))
    reads = sum(1 for m, _ in requests if m == "GET")
    return {
        "seconds": seconds,
        "leader_writes_per_min": writes / minutes,
        "candidate_reads_per_min": reads / minutes / (REPLICAS - 1),
        "writes_per_min_per_replica": writes / minutes / REPLICAS,
        "requests_per_min_per_replica": len(requests) / minutes / REPLICAS,
        "conflicts": sum(1 for _, code in requests if code == 409),
    }


def hand_overs(timing: dict[str, float], release: bool, count: int) -> dict[str, Any]:
    with FakeAPIServer() as server:
        cluster = Cluster(server, timing, release)
        try:
            cluster.leader(timing["lease_duration"] * 3)
            times = [cluster.hand_over(timing["lease_duration"] * 3) for _ in range(count)]
        finally:
            cluster.close()
    return {"count": count, "min_s": min(times), "median_s": statistics.median(times),
            "max_s": max(times), "times_s": [round(t, 3) for t in times]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="durations divided by ten, short run")
    parser.add_argument("--seconds", type=float, default=None,
                        help="length of the traffic window (default 60, 10 with --quick)")
    args = parser.parse_args()
    scale = 10.0 if args.quick else 1.0
    timing = {k: v / scale for k, v in DEFAULTS.items()}
    seconds = args.seconds if args.seconds is not None else (10.0 if args.quick else 60.0)
    report: dict[str, Any] = {
        "benchmark": "leaderelection",
        "replicas": REPLICAS,
        "timing": timing,
        "traffic": traffic(timing, seconds),
        "handover_released": hand_overs(timing, True, HANDOVERS),
        "handover_expired": hand_overs(timing, False, HANDOVERS),
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"leader election, {REPLICAS} replicas, lease {timing['lease_duration']:g}s / renew "
          f"{timing['renew_deadline']:g}s / retry {timing['retry_period']:g}s")
    for key, value in report["traffic"].items():
        print(f"  {key:32} {value:10.2f}")
    for kind in ("released", "expired"):
        h = report[f"handover_{kind}"]
        print(f"  hand-over ({kind:8}) median {h['median_s']:.3f}s  min {h['min_s']:.3f}s  "
              f"max {h['max_s']:.3f}s  over {h['count']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
