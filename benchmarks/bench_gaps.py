"""The last gaps to the floors: five measures, each beside its floor, in one run, collector on.

Every round runs each pair ``--best-of`` times in alternation (floor, then kinformer) and records
the ratio of their best times; ``--rounds`` rounds give a range per measure. A measure's rounds
run together, in the order below (the watch last: see ``main``). The cyclic
collector runs as it does for users (the sync floor pauses it around its one decode, as
kinformer does around a list's).

- ``sync 10,000 configmaps`` and ``sync 100,000 configmaps``: a SharedIndexInformer (namespace
  index, one no-op handler) from ``run`` to ``has_synced``, against one GET and one decode of
  the same list (``bench_informer.py``'s floor); the server runs in a child process;
- ``indexer add, namespace+app``: ``Indexer.add`` of 100,000 objects with a namespace and an
  ``app`` label index, against the same work inline on dicts and sets (``bench_indexer.py``);
- ``DeltaFIFO add+pop``: ``add`` of 100,000 objects, then ``pop`` of each, against a ``deque``
  plus ``dict`` doing the same (``bench_fifo.py``);
- ``watch delivery``: 100,000 events over 10,000 ConfigMaps (each created, then updated nine
  times), replayed from the server's history as fast as the socket takes them, until one
  handler has seen them all; against a loop that reads the same stream in large chunks,
  splits lines, decodes each event and keeps its object by key. Keeping 10,000 objects, not
  100,000, the floor's heap stays small, and so does the collector's work: the tight floor.

Run ``python benchmarks/bench_gaps.py [--json] [--quick] [--rounds R] [--only sync,core,watch] [--threads]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import sys
import threading
import time
from typing import Any

import urllib3
from _common import measure
from _server_process import ServerProcess, path, read_and_keep
from bench_fifo import FloorFIFO, process
from bench_fifo import make_objects as fifo_objects
from bench_indexer import FUNCS, Floor
from bench_indexer import make_objects as indexer_objects
from bench_informer import GVRS, run_floor, run_kinformer
from bench_watch import _api_client

from kinformer import _json
from kinformer.cache.delta_fifo import DeltaFIFO
from kinformer.cache.store import NAMESPACE_INDEX, Indexer
from kinformer.client.listerwatcher import ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer

SYNC_SMALL = 10_000
SYNC_LARGE = 100_000
CORE_N = 100_000  # objects through the Indexer and the DeltaFIFO
WATCH_OBJECTS = 10_000
WATCH_EVENTS = 100_000
TIMEOUT = 300.0
TARGETS = {
    "sync 10,000 configmaps": 1.2,
    "sync 100,000 configmaps": 1.2,
    "indexer add, namespace+app": 1.5,
    "DeltaFIFO add+pop": 1.2,
    "watch delivery": 1.5,
}


# -- sync ------------------------------------------------------------------------------------


CPU: dict[str, list[float]] = {}  # CPU seconds of this process per run, by contender


def _cpu_timed(name: str, run: Any, *args: Any) -> float:
    """``run(*args)``'s result (wall seconds), noting the process's CPU seconds under ``name``.

    The server runs in its own process, so this is the client's work alone: on a shared host
    it moves less than the wall clock does.
    """
    began = time.process_time()
    wall = float(run(*args))
    CPU.setdefault(name, []).append(time.process_time() - began)
    return wall


def sync_pair(server: ServerProcess, namespace: str, n: int) -> tuple[float, float]:
    """(kinformer, floor) seconds for one initial sync of ``n`` ConfigMaps."""
    gc.collect()
    floor = _cpu_timed(f"sync {n} floor", run_floor, server, "configmaps", namespace, n)
    gc.collect()
    subject = _cpu_timed(f"sync {n} kinformer", run_kinformer, server, "configmaps", namespace, n)
    return subject, floor


# -- cache core ------------------------------------------------------------------------------


def indexer_pair(objs: list[dict[str, Any]]) -> tuple[float, float]:
    """(Indexer, inline floor) ns per add, two indexes, collector on."""
    fields = [NAMESPACE_INDEX, "app"]

    def run_add(ix: Indexer) -> None:
        add = ix.add
        for o in objs:
            add(o)

    floor = measure(functools.partial(Floor, fields), lambda fl: fl.add_all(objs), len(objs), 1, True)
    subject = measure(lambda: Indexer(indexers={f: FUNCS[f] for f in fields}), run_add,
                      len(objs), 1, True)
    return subject, floor


def fifo_pair(objs: list[dict[str, Any]]) -> tuple[float, float]:
    """(DeltaFIFO, deque + dict floor) ns per add + pop, collector on."""
    n = len(objs)

    def run_both(fifo: DeltaFIFO) -> None:
        add, pop = fifo.add, fifo.pop
        for o in objs:
            add(o)
        for _ in range(n):
            pop(process)

    def run_floor(floor: FloorFIFO) -> None:
        floor.add_all(objs)
        floor.pop_all(process)

    floor = measure(FloorFIFO, run_floor, n, 1, True)
    subject = measure(DeltaFIFO, run_both, n, 1, True)
    return subject, floor


# -- watch delivery --------------------------------------------------------------------------


FLOOR_CPU: list[float] = []  # µs of the floor's thread CPU per watch event, per run
THREAD_CPU: list[dict[str, float]] = []  # µs of CPU per watch event by kinformer thread, per run
_ROLES = ("reflector", "deltas", "handler")


def _thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each of this process's kinformer threads, by role (Linux only)."""
    ticks = os.sysconf("SC_CLK_TCK")
    spent: dict[str, float] = dict.fromkeys(_ROLES, 0.0)
    for thread in threading.enumerate():
        role = next((r for r in _ROLES if thread.name.startswith(f"kinformer-{r}-")), None)
        if role is None or thread.native_id is None:
            continue
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        spent[role] += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return spent


def watch_floor(server: ServerProcess, namespace: str) -> float:
    """Seconds for the tight floor to read, split, decode and keep by key every event."""
    rv = server.churn("configmaps", namespace, WATCH_OBJECTS, WATCH_EVENTS)
    cache: dict[str, Any] = {}
    gc.collect()
    pool = urllib3.PoolManager()
    began, began_cpu = time.perf_counter(), time.thread_time()
    response = pool.request(
        "GET",
        f"{server.url}{path('configmaps', namespace)}?watch=true&resourceVersion={rv}"
        "&timeoutSeconds=3600",
        preload_content=False,
    )
    seen = read_and_keep(response, WATCH_EVENTS, cache)
    elapsed = time.perf_counter() - began
    FLOOR_CPU.append((time.thread_time() - began_cpu) / WATCH_EVENTS * 1e6)
    response.close()
    pool.clear()
    if seen < WATCH_EVENTS or len(cache) != WATCH_OBJECTS:
        raise RuntimeError(f"watch floor saw {seen} events, {len(cache)} objects")
    return elapsed


def watch_kinformer(server: ServerProcess, namespace: str) -> float:
    """Seconds until one kinformer handler has seen every event (adds and updates).

    The list answers "empty, at the version before the events", so the watch replays them all.
    Each run notes its threads' CPU per event in :data:`THREAD_CPU` (``--threads`` prints it).
    """
    rv = server.churn("configmaps", namespace, WATCH_OBJECTS, WATCH_EVENTS)
    api = _api_client(server.url)
    http = ListWatch.for_resource(api, GVRS["configmaps"], namespace=namespace)
    informer = SharedIndexInformer(ListWatch(lambda options: ListResult([], rv), http.watch))
    seen = [0]
    done = threading.Event()

    def count(*_: Any) -> None:
        seen[0] += 1
        if seen[0] >= WATCH_EVENTS:
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=count, update_func=count))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    gc.collect()
    began = time.perf_counter()
    thread.start()
    try:
        done.wait(TIMEOUT)
        elapsed = time.perf_counter() - began
        THREAD_CPU.append({role: cpu / WATCH_EVENTS * 1e6 for role, cpu in _thread_cpu().items()})
    finally:
        stop.set()
        thread.join()
        api.close()
    if not done.is_set():
        raise RuntimeError(f"kinformer handler saw {seen[0]} of {WATCH_EVENTS} events")
    return elapsed


def watch_pair(server: ServerProcess, prefix: str) -> tuple[float, float]:
    """(kinformer, floor) seconds for the watch delivery, each over events of its own."""
    floor = _cpu_timed("watch floor", watch_floor, server, f"{prefix}-floor-{_fresh()}")
    subject = _cpu_timed("watch kinformer", watch_kinformer, server, f"{prefix}-kinformer-{_fresh()}")
    return subject, floor


_namespaces = iter(range(1 << 30))


def _fresh() -> int:
    return next(_namespaces)


def best_pair(runs: int, pair: Any, *args: Any) -> tuple[float, float]:
    """The best (subject, floor) times of ``runs`` alternating calls of ``pair(*args)``."""
    best_subject = best_floor = float("inf")
    for _ in range(runs):
        subject, floor = pair(*args)
        best_subject, best_floor = min(best_subject, subject), min(best_floor, floor)
    return best_subject, best_floor


def best_ratio(runs: int, pair: Any, *args: Any) -> float:
    subject, floor = best_pair(runs, pair, *args)
    return subject / floor


# -- the run ---------------------------------------------------------------------------------


def main() -> int:
    global WATCH_OBJECTS, WATCH_EVENTS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each gives every ratio once")
    parser.add_argument("--best-of", type=int, default=3, help="alternating runs per pair a round")
    parser.add_argument("--only", default="", help="comma-separated: sync,core,watch")
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, one round")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--threads", action="store_true",
                        help="also print each watch run's CPU per event by kinformer thread")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(","))) or {"sync", "core", "watch"}
    scale = 10 if args.quick else 1
    rounds = 1 if args.quick else args.rounds
    small, large, core_n = SYNC_SMALL // scale, SYNC_LARGE // scale, CORE_N // scale
    WATCH_OBJECTS, WATCH_EVENTS = WATCH_OBJECTS // scale, WATCH_EVENTS // scale
    names = {
        "sync": [f"sync {small:,} configmaps", f"sync {large:,} configmaps"],
        "core": ["indexer add, namespace+app", "DeltaFIFO add+pop"],
        "watch": ["watch delivery"],
    }
    ratios: dict[str, list[float]] = {
        name: [] for part in ("sync", "core", "watch") if part in only for name in names[part]}
    rates: list[tuple[float, float]] = []
    cpu_per_event: list[dict[str, float]] = []  # µs of the client's CPU per watch event, a round's best
    cpu_ratios: dict[str, list[float]] = {}

    def note_cpu(name: str, prefix: str) -> None:  # this round's best CPU, kinformer over floor
        subject, floor = CPU[f"{prefix} kinformer"][-args.best_of:], CPU[f"{prefix} floor"][-args.best_of:]
        cpu_ratios.setdefault(name, []).append(min(subject) / min(floor))

    index_objs, fifo_objs = indexer_objects(core_n, "1"), fifo_objects(core_n)
    with ServerProcess(history_size=2 * WATCH_EVENTS + 1000) as server:
        if "sync" in only:
            server.load("configmaps", "gaps-small", small)
            server.load("configmaps", "gaps-large", large)
        # Each measure's rounds run together, the syncs first: the watch's runs churn a million
        # objects through the server, and on a virtual machine the memory that frees comes back
        # slowly (the next large decode spent 5-10x the kernel time), so a sync measured after a
        # watch measured the host's memory, for whichever contender came first.
        if "sync" in only:
            for _ in range(rounds):
                for name, namespace, n in ((names["sync"][0], "gaps-small", small),
                                           (names["sync"][1], "gaps-large", large)):
                    ratios[name].append(best_ratio(args.best_of, sync_pair, server, namespace, n))
                    note_cpu(name, f"sync {n}")
        if "core" in only:
            for _ in range(rounds):
                for name, pair, objs in ((names["core"][0], indexer_pair, index_objs),
                                         (names["core"][1], fifo_pair, fifo_objs)):
                    ratios[name].append(best_ratio(args.best_of, pair, objs))
        if "watch" in only:
            for r in range(rounds):
                subject, floor = best_pair(args.best_of, watch_pair, server, f"gaps-w{r}")
                ratios["watch delivery"].append(subject / floor)
                note_cpu("watch delivery", "watch")
                rates.append((WATCH_EVENTS / subject, WATCH_EVENTS / floor))
                cpu_per_event.append({
                    who: min(CPU[f"watch {who}"][-args.best_of:]) / WATCH_EVENTS * 1e6
                    for who in ("kinformer", "floor")})
    result = {
        "benchmark": "gaps",
        "python": platform.python_version(),
        "json_backend": _json.backend(),
        "rounds": rounds,
        "ratios": ratios,
        "ranges": {k: [min(v), max(v)] for k, v in ratios.items()},
        "targets": {k: TARGETS.get(k.replace(f"{small:,}", "10,000").replace(f"{large:,}", "100,000"))
                    for k in ratios},
        "cpu_ratios": cpu_ratios,
        "watch_events_per_s": [{"kinformer": k, "floor": f} for k, f in rates],
        "watch_cpu_us_per_event": cpu_per_event,
        "watch_thread_cpu_us_per_event": THREAD_CPU,
        "watch_floor_thread_cpu_us_per_event": FLOOR_CPU,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"the last gaps: {rounds} rounds, collector on, Python {result['python']}, "
          f"decoder {result['json_backend']}")
    for name, values in ratios.items():
        low, high = min(values), max(values)
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name:<28} {low:.2f}-{high:.2f}x the floor (target {result['targets'][name]}x)"
              f"   [{runs}]")
    for name, values in cpu_ratios.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name:<28} {min(values):.2f}-{max(values):.2f}x the floor's CPU   [{runs}]")
    for (k, f), cpu in zip(rates, cpu_per_event, strict=True):
        print(f"  watch: kinformer {k:,.0f} events/s, floor {f:,.0f} events/s; client CPU per event "
              f"{cpu['kinformer']:.1f} µs against {cpu['floor']:.1f} µs")
    if args.threads:
        print("  watch floor runs, µs of CPU per event: " + ", ".join(f"{c:.1f}" for c in FLOOR_CPU))
        for run in THREAD_CPU:
            parts = ", ".join(f"{role} {run[role]:.1f}" for role in _ROLES)
            print(f"  watch run, µs of CPU per event by thread: {parts}; in all {sum(run.values()):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
