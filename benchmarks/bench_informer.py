"""Informer initial sync side by side: kinformer, the official informer, Watch + a dict, the floor.

A FakeAPIServer in a child process holds each data set (CONFIGMAPS_SMALL and CONFIGMAPS_LARGE
ConfigMaps of about 1 KB, PODS Pods of about 4.5 KB with managedFields), each in its own
namespace. For every data set, in alternation and best of ``--repeat``:

- ``floor``: one urllib3 GET of the same list and one decode of its bytes (the decoder kinformer
  uses, cyclic GC paused around it, the clock stopped before it comes back): the least any
  client must do;
- ``kinformer``: a SharedIndexInformer (namespace index, one no-op handler) over
  ``ListWatch.for_resource``, from ``run`` to ``has_synced``;
- ``kinformer+detector`` (with ``--detect-mutations``): the same with the cache mutation
  detector on (a deep copy of every object cached);
- ``official``: ``kubernetes.informer.SharedInformer``, from ``start`` until its ADDED handler has
  seen every object (it has no has_synced);
- ``watch+dict``: ``kubernetes.watch.Watch().stream`` without a resourceVersion (the server sends
  every object as ADDED) into a dict, until the dict holds every object.

Then watch delivery: WATCH_EVENTS objects written at once into a watched namespace, events per
second until a kinformer handler has seen them all, next to a raw consumer that only counts the
lines of the same stream (the server's rate). ``bench_watch.py`` goes deeper into the watch path.

Run ``python benchmarks/bench_informer.py [--json] [--quick] [--repeat R] [--skip-official]
[--detect-mutations]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3
from _server_process import CONFIGMAPS, PODS, ServerProcess, path, stop_official
from bench_watch import kinformer_delivery, raw_stream_rate

from kinformer import _gc, _json
from kinformer.cache.store import NAMESPACE_INDEX, meta_namespace_index_func
from kinformer.client.listwatch import ListWatch
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer

CONFIGMAPS_SMALL = 10_000
CONFIGMAPS_LARGE = 100_000
PODS_N = 20_000
WATCH_EVENTS = 20_000
SYNC_TIMEOUT = 600.0  # seconds; a contender slower than this is reported as missing
POLL = 0.001  # seconds between has_synced checks

GVRS = {"configmaps": GroupVersionResource(*CONFIGMAPS), "pods": GroupVersionResource(*PODS)}


def _api_client(url: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = url
    return client.ApiClient(configuration)


def _list_func(api: Any, kind: str) -> Callable[..., Any]:
    from kubernetes import client

    v1 = client.CoreV1Api(api)
    return v1.list_namespaced_pod if kind == "pods" else v1.list_namespaced_config_map


def _settle() -> None:
    """Start every run from the same heap: collect what the previous one left."""
    gc.collect()


def run_floor(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    pool = urllib3.PoolManager()
    began = time.perf_counter()
    response = pool.request(
        "GET", f"{server.url}{path(kind, namespace)}?resourceVersion=0", preload_content=True
    )
    data = response.data
    with _gc.paused():
        body = _json.loads(data)
        # stop the clock before the collector comes back: its first sweep over the decoded
        # objects is not part of the floor (kinformer freezes them instead)
        elapsed = time.perf_counter() - began
    count = len(body["items"])
    del body, data
    pool.clear()
    if count != n:
        raise RuntimeError(f"floor listed {count} objects, expected {n}")
    return elapsed


PROFILE = os.environ.get("KINFORMER_BENCH_PROFILE", "modern")  # "classic" to compare the profiles


def run_kinformer(server: ServerProcess, kind: str, namespace: str, n: int,
                  **options: Any) -> float:
    api = _api_client(server.url)
    informer = SharedIndexInformer(
        ListWatch.for_resource(api, GVRS[kind], namespace=namespace),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
        profile=PROFILE,
        **options,
    )
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda obj: None))
    stop = threading.Event()
    pause = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    began = time.perf_counter()
    thread.start()
    deadline = began + SYNC_TIMEOUT
    while not informer.has_synced() and time.perf_counter() < deadline:
        pause.wait(POLL)
    elapsed = time.perf_counter() - began
    synced = informer.has_synced()
    stop.set()
    thread.join()
    count = len(informer.get_indexer())
    api.close()
    if not synced or count != n:
        raise RuntimeError(f"kinformer synced={synced} with {count} objects, expected {n}")
    return elapsed


def run_official(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    from kubernetes.informer import ADDED, SharedInformer

    api = _api_client(server.url)
    informer = SharedInformer(_list_func(api, kind), namespace=namespace)
    done = threading.Event()
    seen = [0]

    def on_added(obj: Any) -> None:
        seen[0] += 1
        if seen[0] >= n:
            done.set()

    informer.add_event_handler(ADDED, on_added)
    began = time.perf_counter()
    informer.start()
    done.wait(SYNC_TIMEOUT)
    elapsed = time.perf_counter() - began
    count = len(informer.cache.list_keys())
    stop_official(informer, server)
    api.close()
    if not done.is_set() or count != n:
        raise RuntimeError(f"official informer saw {seen[0]}/{count} objects, expected {n}")
    return elapsed


def run_watch_dict(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    from kubernetes import watch

    api = _api_client(server.url)
    cache: dict[tuple[str, str], Any] = {}
    w = watch.Watch()
    began = time.perf_counter()
    stream = w.stream(_list_func(api, kind), namespace=namespace, timeout_seconds=int(SYNC_TIMEOUT))
    for event in stream:
        meta = event["object"].metadata
        cache[(meta.namespace, meta.name)] = event["object"]
        if len(cache) >= n:
            break
    elapsed = time.perf_counter() - began
    w.stop()
    stream.close()
    api.close()
    if len(cache) != n:
        raise RuntimeError(f"watch+dict saw {len(cache)} objects, expected {n}")
    return elapsed


def run_kinformer_detector(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    return run_kinformer(server, kind, namespace, n, detect_mutations=True)


CONTENDERS: dict[str, Callable[[ServerProcess, str, str, int], float]] = {
    "floor": run_floor,
    "kinformer": run_kinformer,
    "kinformer+detector": run_kinformer_detector,
    "official": run_official,
    "watch+dict": run_watch_dict,
}


def bench_sync(
    server: ServerProcess, kind: str, n: int, repeat: int, names: list[str]
) -> dict[str, Any]:
    namespace = f"sync-{kind}-{n}"
    server.load(kind, namespace, n)
    probe = urllib3.PoolManager().request(
        "GET", f"{server.url}{path(kind, namespace)}?resourceVersion=0"
    )
    size = len(probe.data)
    best: dict[str, float] = {}
    for _ in range(repeat):
        for name in names:
            _settle()
            seconds = CONTENDERS[name](server, kind, namespace, n)
            best[name] = min(best.get(name, float("inf")), seconds)
    _settle()
    floor = best["floor"]
    row: dict[str, Any] = {
        "name": f"sync {n} {kind}",
        "kind": kind,
        "objects": n,
        "list_bytes": size,
        "bytes_per_object": size / n,
        "seconds": best,
        "ratio_to_floor": {k: v / floor for k, v in best.items()},
    }
    if "official" in best:
        row["official_over_kinformer"] = best["official"] / best["kinformer"]
    if "watch+dict" in best:
        row["watch_dict_over_kinformer"] = best["watch+dict"] / best["kinformer"]
    if "kinformer+detector" in best:
        row["detector_over_kinformer"] = best["kinformer+detector"] / best["kinformer"]
    return row


def bench_delivery(server: ServerProcess, events: int, repeat: int) -> dict[str, Any]:
    best_k = best_raw = 0.0
    for r in range(repeat):
        _settle()
        best_raw = max(best_raw, raw_stream_rate(server, "configmaps", f"rate-raw-{r}", events))
        _settle()
        best_k = max(best_k, kinformer_delivery(server, "configmaps", f"rate-kinformer-{r}", events))
    return {
        "name": f"watch {events} events",
        "events": events,
        "server_stream_events_per_s": best_raw,
        "kinformer_handler_events_per_s": best_k,
        "kinformer_share_of_stream": best_k / best_raw,
    }


def main() -> int:
    # the official informer logs a traceback when the server ends its watch to stop it
    logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per contender; the best counts")
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, one run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--skip-official", action="store_true", help="only floor and kinformer")
    parser.add_argument("--detect-mutations", action="store_true",
                        help="also kinformer with the cache mutation detector on")
    args = parser.parse_args()
    sizes = [("configmaps", CONFIGMAPS_SMALL), ("configmaps", CONFIGMAPS_LARGE), ("pods", PODS_N)]
    events = WATCH_EVENTS
    if args.quick:
        sizes = [(kind, n // 10) for kind, n in sizes]
        events //= 10
        args.repeat = 1
    names = ["floor", "kinformer"] if args.skip_official else ["floor", "kinformer", "official",
                                                                 "watch+dict"]
    if args.detect_mutations:
        names.insert(2, "kinformer+detector")
    results = []
    with ServerProcess(history_size=2 * events + 1000) as server:
        for kind, n in sizes:
            results.append(bench_sync(server, kind, n, args.repeat, names))
        results.append(bench_delivery(server, events, args.repeat))
    meta = {
        "benchmark": "informer",
        "python": platform.python_version(),
        "json_backend": _json.backend(),
        "repeat": args.repeat,
    }
    if args.json:
        print(json.dumps({**meta, "results": results}, indent=2))
        return 0
    print(f"informer sync, best of {args.repeat}, Python {meta['python']}, "
          f"decoder {meta['json_backend']}, server in a child process")
    header = f"{'data set':<24} {'contender':<18} {'seconds':>9} {'x floor':>8} {'objs/s':>10}"
    print(header)
    print("-" * len(header))
    for row in results[:-1]:
        label = f"{row['name']} ({row['bytes_per_object']:.0f} B)"
        for name, seconds in row["seconds"].items():
            print(f"{label:<24} {name:<18} {seconds:>9.3f} {row['ratio_to_floor'][name]:>8.2f} "
                  f"{row['objects'] / seconds:>10,.0f}")
            label = ""
        if "detector_over_kinformer" in row:
            print(f"{'':<24} kinformer+detector / kinformer = {row['detector_over_kinformer']:.2f}x")
        if "official_over_kinformer" in row:
            print(f"{'':<24} official / kinformer = {row['official_over_kinformer']:.1f}x, "
                  f"watch+dict / kinformer = {row['watch_dict_over_kinformer']:.1f}x")
    d = results[-1]
    print(f"{d['name']}: server stream {d['server_stream_events_per_s']:,.0f}/s, kinformer handler "
          f"{d['kinformer_handler_events_per_s']:,.0f}/s ({d['kinformer_share_of_stream']:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
