"""A built controller over many owners: live changes with and without the priority queue, and
reconciles per second by workers.

A ``FakeAPIServer`` in a child process of its own (the machine has two cores) holds ``--owners``
Widgets (a CRD, default 10,000), each owning two ConfigMaps (``ownerReferences`` with
``controller: true``). Each run is a fresh ``DynamicSharedInformerFactory`` and
``ControllerBuilder(...).for_resource(widgets).owns(configmaps)`` in this process; the reconciler
reads its Widget and lists its namespace's ConfigMaps from the cache, then stands for a call to
the outside world with ``--reconcile-ms`` of waiting (default 1 ms).

**Priority** (``priority``): right after both informers synced (the initial lists' requests are
queued, most not yet reconciled), the server changes one ConfigMap of 1% of the owners. Measured:
seconds from that change until every one of those owners has been reconciled after it, with the
builder's ``PriorityQueue`` and with the same queue serving the initial lists' keys as live ones
(the order a plain ``RateLimitingQueue`` gives), alternating, ``--repeat`` times each (default 3);
the best of each counts. 4 workers.

**Throughput** (``workers``): seconds from start until every owner was reconciled once, and the
reconciles per second that makes, with 1, 4 and 16 workers.

Run ``python benchmarks/bench_controller.py [--owners N] [--reconcile-ms MS] [--repeat R]
[--only priority|workers] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from _server_process import ChildProcessServer

from kinformer import ControllerBuilder, DynamicSharedInformerFactory, Request
from kinformer.controllers import builder as builder_module
from kinformer.gvr import GroupVersionResource
from kinformer.workqueue import PriorityQueue

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
CRDS = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
NAMESPACES = 100  # owners spread over this many namespaces
TIMEOUT = 600.0


def _serve(conn: Connection, owners: int) -> None:
    """Child process: the server with the owners and their ConfigMaps; "touch" changes some."""
    from kinformer.testing import FakeAPIServer

    server = FakeAPIServer(history_size=100_000, max_backlog=10_000_000)
    server.start()
    server.create(CRDS, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    for n in range(NAMESPACES):
        server.create(GroupVersionResource("", "v1", "namespaces"), {"metadata": {"name": f"ns{n}"}})
    server.preload(WIDGETS, ({"apiVersion": "example.com/v1", "kind": "Widget",
                              "metadata": {"name": f"w{i}", "namespace": f"ns{i % NAMESPACES}"},
                              "spec": {"size": 2}} for i in range(owners)))
    uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in server.list_objects(WIDGETS)}

    def child(i: int, n: int) -> dict[str, Any]:
        ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": f"w{i}", "uid": uids[f"w{i}"],
               "controller": True}
        metadata = {"name": f"w{i}-{n}", "namespace": f"ns{i % NAMESPACES}", "ownerReferences": [ref]}
        return {"metadata": metadata, "data": {"n": str(n)}}

    server.preload(CONFIGMAPS, (child(i, n) for i in range(owners) for n in (0, 1)))
    conn.send(server.url)
    rounds = 0
    while True:
        command, args = conn.recv()
        if command == "touch":
            (every,) = args
            rounds += 1
            touched = []
            for k in range(owners // every):  # one owner per block, spread over the namespaces
                i = k * every + k % NAMESPACES
                obj = server.get(CONFIGMAPS, f"ns{i % NAMESPACES}", f"w{i}-0")
                server.update(CONFIGMAPS, {**obj, "data": {"n": "0", "round": str(rounds)}})
                touched.append(f"w{i}")
            conn.send(touched)
        elif command == "stop":
            server.stop()
            conn.send(None)
            return


class Server(ChildProcessServer):
    def __init__(self, owners: int) -> None:
        super().__init__(_serve, owners)


class _FlatQueue(PriorityQueue[str]):
    """The builder's queue with no levels: an initial list's keys are served as live ones."""

    def add_initial(self, item: str) -> None:
        self.add(item)


class Reconciler:
    """Reads its owner and the namespace's ConfigMaps from the cache, waits ``delay``, and notes
    when each owner was reconciled."""

    def __init__(self, factory: DynamicSharedInformerFactory, delay: float, expected: int) -> None:
        self.round = ""  # the change the benchmark made: a reconcile that sees it counts
        self.widgets = factory.for_resource(WIDGETS).lister()
        self.configmaps = factory.for_resource(CONFIGMAPS).lister()
        self.delay = delay
        self.pause = threading.Event()  # never set: its wait() stands for the outside call
        self.lock = threading.Lock()
        self.last: dict[str, float] = {}
        self.expected = expected
        self.all_done = threading.Event()
        self.seen_change: dict[str, float] = {}

    def reconcile(self, request: Request) -> None:
        self.widgets.by_namespace(request.namespace).get(request.name)
        children = self.configmaps.by_namespace(request.namespace).list()
        mine = f"{request.name}-0"
        changed = bool(self.round) and any(
            c["metadata"]["name"] == mine and c["data"].get("round") == self.round for c in children)
        if self.delay:
            self.pause.wait(self.delay)
        now = time.perf_counter()
        with self.lock:
            self.last[request.name] = now
            if changed:
                self.seen_change[request.name] = now
            if len(self.last) >= self.expected:
                self.all_done.set()


def run_once(url: str, owners: int, workers: int, delay: float, flat: bool,
             server: Server | None = None) -> dict[str, float]:
    from kubernetes import client as k8s

    configuration = k8s.Configuration()
    configuration.host = url
    api_client = k8s.ApiClient(configuration)
    factory = DynamicSharedInformerFactory(api_client)
    reconciler = Reconciler(factory, delay, owners)
    saved = builder_module.PriorityQueue
    if flat:
        builder_module.PriorityQueue = _FlatQueue  # type: ignore[misc]
    try:
        controller = (ControllerBuilder("bench", factory).for_resource(WIDGETS, kind="Widget")
                      .owns(CONFIGMAPS).with_workers(workers).complete(reconciler))
    finally:
        builder_module.PriorityQueue = saved  # type: ignore[misc]
    stop = threading.Event()
    began = time.perf_counter()
    controller.start(stop)
    out: dict[str, float] = {}
    try:
        if server is not None:
            deadline = time.monotonic() + TIMEOUT
            while not all(i.has_synced() for i in (factory.for_resource(g).informer()
                                                   for g in (WIDGETS, CONFIGMAPS))):
                if time.monotonic() > deadline or stop.wait(0.005):
                    raise TimeoutError("informers did not sync")
            rounds = getattr(server, "rounds", 0) + 1
            server.rounds = rounds  # type: ignore[attr-defined]
            reconciler.round = str(rounds)
            out["waiting_at_change"] = float(len(controller.queue))
            touched_at = time.perf_counter()
            touched = server.call("touch", 100)
            deadline = time.monotonic() + TIMEOUT
            while True:
                with reconciler.lock:
                    done = sum(1 for name in touched if name in reconciler.seen_change)
                if done == len(touched):
                    break
                if time.monotonic() > deadline or stop.wait(0.002):
                    raise TimeoutError("touched owners were not reconciled")
            out["seconds_to_touched"] = time.perf_counter() - touched_at
            out["touched"] = float(len(touched))
        if not reconciler.all_done.wait(TIMEOUT):
            raise TimeoutError("not every owner was reconciled")
        out["seconds_all"] = time.perf_counter() - began
        out["reconciles_per_s"] = owners / out["seconds_all"]
    finally:
        stop.set()
        controller.join(60)
        factory.shutdown()
        api_client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=10_000)
    parser.add_argument("--reconcile-ms", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("priority", "workers"))
    parser.add_argument("--quick", action="store_true", help="a tenth of --owners, one run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.owners, args.repeat = max(1000, args.owners // 10), 1
    delay = args.reconcile_ms / 1000
    results: dict[str, Any] = {"benchmark": "controller", "owners": args.owners,
                               "reconcile_ms": args.reconcile_ms, "python": platform.python_version()}
    with Server(args.owners) as server:
        if args.only in (None, "priority"):
            runs: dict[str, list[dict[str, float]]] = {"priority": [], "flat": []}
            for _ in range(args.repeat):
                for name in ("priority", "flat"):
                    runs[name].append(run_once(server.url, args.owners, 4, delay, name == "flat", server))
            results["priority"] = runs
            for name, found in runs.items():
                best = min(r["seconds_to_touched"] for r in found)
                print(f"{name:>8} queue: 1% of owners changed after sync, reconciled within "
                      f"{best:.3f} s (best of {len(found)}; initial keys waiting at the change: "
                      f"{int(min(r['waiting_at_change'] for r in found))})", file=sys.stderr)
        if args.only in (None, "workers"):
            results["workers"] = {}
            for workers in (1, 4, 16):
                one = run_once(server.url, args.owners, workers, delay, False)
                results["workers"][workers] = one
                print(f"{workers:>3} workers: every owner reconciled in {one['seconds_all']:.2f} s, "
                      f"{one['reconciles_per_s']:,.0f} reconciles/s", file=sys.stderr)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
