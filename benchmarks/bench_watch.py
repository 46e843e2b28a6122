"""Watch delivery: events per second from the server to a handler, and handler latency at a fixed rate.

A FakeAPIServer in a child process writes EVENTS ConfigMaps (about 1 KB) at once into a
namespace while one consumer watches it; each consumer runs alone, in alternation, best of
``--repeat``:

- ``raw stream``: counts the newline-delimited events as they arrive (the server's rate);
- ``decode floor``: reads the same stream in large chunks, splits lines and decodes each event
  (the decoder kinformer uses): what any client must do;
- ``decode+keep floor``: the same, keeping every decoded object in a dict: what any cache must do;
- ``kinformer``: a SharedIndexInformer over ``ListWatch.for_resource``; the clock stops when its
  handler has seen every event;
- ``official``: ``kubernetes.informer.SharedInformer``, until its ADDED handler has seen them all.

Then latency: LATENCY_EVENTS objects written one by one at OFFERED_RATE per second, each stamped
with its send time; the kinformer handler's p50 and p99 delay from write to ``on_add``.

Run ``python benchmarks/bench_watch.py [--json] [--quick] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
import threading
import time
from typing import Any

import urllib3
from _server_process import (
    CONFIGMAPS,
    PODS,
    SENT_ANNOTATION,
    WATCH_READ,
    ServerProcess,
    path,
    read_and_keep,
    stop_official,
)

from kinformer import _json
from kinformer.client.listerwatcher import ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer

EVENTS = 50_000
LATENCY_EVENTS = 4_000
OFFERED_RATE = 2_000.0  # events per second for the latency run
TIMEOUT = 300.0
READ_CHUNK = WATCH_READ

GVRS = {"configmaps": GroupVersionResource(*CONFIGMAPS), "pods": GroupVersionResource(*PODS)}


def _api_client(url: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = url
    return client.ApiClient(configuration)


def prepare(server: ServerProcess, kind: str, namespace: str, n: int) -> str:
    """Write ``n`` objects into a new namespace; return the resourceVersion just before them.

    A watch from that version gets the ``n`` events from the server's history as fast as the
    server can send them, so the consumer, not the writer, sets the pace.
    """
    rv = server.load(kind, namespace, 0)
    server.write(kind, namespace, n)
    return rv


def _watch_response(server: ServerProcess, kind: str, namespace: str, rv: str) -> tuple[Any, Any]:
    pool = urllib3.PoolManager()
    response = pool.request(
        "GET",
        f"{server.url}{path(kind, namespace)}?watch=true&resourceVersion={rv}&timeoutSeconds=3600",
        preload_content=False,
    )
    return pool, response


def raw_stream_rate(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    """Events per second of the stream itself: newlines counted, nothing decoded."""
    rv = prepare(server, kind, namespace, n)
    began = time.perf_counter()
    pool, response = _watch_response(server, kind, namespace, rv)
    seen = 0
    while seen < n:
        chunk = response.read1(READ_CHUNK)
        if not chunk:
            break
        seen += chunk.count(b"\n")
    elapsed = time.perf_counter() - began
    response.close()
    pool.clear()
    if seen < n:
        raise RuntimeError(f"raw stream ended after {seen} of {n} events")
    return n / elapsed


def decode_floor_rate(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    """Events per second of a consumer that reads, splits and decodes every event, and no more."""
    rv = prepare(server, kind, namespace, n)
    loads = _json.loads
    began = time.perf_counter()
    pool, response = _watch_response(server, kind, namespace, rv)
    seen = 0
    pending = b""
    while seen < n:
        chunk = response.read1(READ_CHUNK)
        if not chunk:
            break
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            loads(line)
        seen += len(lines)
    elapsed = time.perf_counter() - began
    response.close()
    pool.clear()
    if seen < n:
        raise RuntimeError(f"decode floor ended after {seen} of {n} events")
    return n / elapsed


def decode_keep_floor_rate(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    """Like :func:`decode_floor_rate`, but keeping every object in a dict by namespace/name.

    A cache must keep what it decodes; fresh memory for every object costs more than the
    decoder reusing the same few blocks, so this is the floor of any consumer that caches.
    """
    rv = prepare(server, kind, namespace, n)
    cache: dict[str, Any] = {}
    began = time.perf_counter()
    pool, response = _watch_response(server, kind, namespace, rv)
    seen = read_and_keep(response, n, cache)
    elapsed = time.perf_counter() - began
    response.close()
    pool.clear()
    if seen < n:
        raise RuntimeError(f"decode+keep floor ended after {seen} of {n} events")
    return n / elapsed


class _Counter:
    """Counts adds on the handler thread; sets ``done`` at ``n``; records latencies if asked."""

    def __init__(self, n: int, latencies: list[float] | None = None) -> None:
        self.n = n
        self.seen = 0
        self.done = threading.Event()
        self.latencies = latencies

    def on_add(self, obj: Any) -> None:
        if self.latencies is not None:
            sent = (obj["metadata"].get("annotations") or {}).get(SENT_ANNOTATION)
            if sent is not None:
                self.latencies.append(time.time() - float(sent))
        self.seen += 1
        if self.seen >= self.n:
            self.done.set()


def _kinformer_run(
    server: ServerProcess, kind: str, namespace: str, n: int, rate: float, latencies: Any
) -> float:
    """Replay (``rate`` 0): a list answering "empty at the version before the n events", then
    the real HTTP watch, so the informer takes the backlog at full speed. Live (``rate`` > 0):
    a normal informer, with the events written at ``rate`` once it watches."""
    api = _api_client(server.url)
    http = ListWatch.for_resource(api, GVRS[kind], namespace=namespace)
    if rate:
        server.load(kind, namespace, 0)
        lister_watcher = http
    else:
        rv = prepare(server, kind, namespace, n)
        lister_watcher = ListWatch(lambda options: ListResult([], rv), http.watch)
    informer = SharedIndexInformer(lister_watcher)
    counter = _Counter(n, latencies)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=counter.on_add))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    began = time.perf_counter()
    thread.start()
    try:
        if rate:
            if not informer.wait_for_sync(TIMEOUT):
                raise RuntimeError("kinformer did not sync")
            server.wait_for_watchers(kind, 1)
            began = time.perf_counter()
            server.write_async(kind, namespace, n, rate)
        counter.done.wait(TIMEOUT)
        elapsed = time.perf_counter() - began
        if rate:
            server.result()
    finally:
        stop.set()
        thread.join()
        api.close()
    if not counter.done.is_set():
        raise RuntimeError(f"kinformer handler saw {counter.seen} of {n} events")
    return n / elapsed


def kinformer_delivery(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    """Events per second until a kinformer handler has seen ``n`` events replayed by the server."""
    return _kinformer_run(server, kind, namespace, n, 0, None)


def official_delivery(server: ServerProcess, kind: str, namespace: str, n: int) -> float:
    """Events per second until the official SharedInformer's ADDED handler has seen ``n``.

    Its list function is wrapped so the list answers at the version before the events, and
    its watch replays them, as for kinformer.
    """
    from kubernetes import client
    from kubernetes.informer import ADDED, SharedInformer

    rv = prepare(server, kind, namespace, n)
    api = _api_client(server.url)
    v1 = client.CoreV1Api(api)

    def list_func(**kwargs: Any) -> Any:
        if kwargs.get("watch"):
            return v1.list_namespaced_config_map(**kwargs)
        answer = v1.list_namespaced_config_map(**kwargs)
        answer.items = []
        answer.metadata.resource_version = rv
        return answer

    list_func.__doc__ = v1.list_namespaced_config_map.__doc__  # Watch reads the return type here
    informer = SharedInformer(list_func, namespace=namespace)
    counter = _Counter(n)
    informer.add_event_handler(ADDED, lambda obj: counter.on_add({"metadata": {}}))
    began = time.perf_counter()
    informer.start()
    counter.done.wait(TIMEOUT)
    elapsed = time.perf_counter() - began
    stop_official(informer, server)
    api.close()
    if not counter.done.is_set():
        raise RuntimeError(f"official handler saw {counter.seen} of {n} events")
    return n / elapsed


def kinformer_latency(server: ServerProcess, n: int, rate: float) -> dict[str, float]:
    """p50/p99/max seconds from the server's write to the kinformer handler, at ``rate``/s."""
    latencies: list[float] = []
    achieved = _kinformer_run(server, "configmaps", "latency", n, rate, latencies)
    latencies.sort()
    return {
        "offered_per_s": rate,
        "achieved_per_s": achieved,
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
        "max_ms": latencies[-1] * 1e3,
    }


def main() -> int:
    # the official informer logs a traceback when the server ends its watch to stop it
    logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per consumer; the best counts")
    parser.add_argument("--events", type=int, default=EVENTS, help="events per throughput run")
    parser.add_argument("--quick", action="store_true", help="a tenth of the events, one run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    latency_events = LATENCY_EVENTS
    if args.quick:
        args.events //= 10
        latency_events //= 4
        args.repeat = 1
    consumers = {
        "raw stream": raw_stream_rate,
        "decode floor": decode_floor_rate,
        "decode+keep floor": decode_keep_floor_rate,
        "kinformer": kinformer_delivery,
        "official": official_delivery,
    }
    best: dict[str, float] = {}
    with ServerProcess(history_size=2 * args.events + 1000) as server:
        for r in range(args.repeat):
            for i, (name, consumer) in enumerate(consumers.items()):
                rate = consumer(server, "configmaps", f"w{r}-{i}", args.events)
                best[name] = max(best.get(name, 0.0), rate)
        latency = kinformer_latency(server, latency_events, OFFERED_RATE)
    floor = best["decode floor"]
    result = {
        "benchmark": "watch",
        "python": platform.python_version(),
        "json_backend": _json.backend(),
        "events": args.events,
        "repeat": args.repeat,
        "events_per_s": best,
        "floor_over_kinformer": floor / best["kinformer"],
        "keep_floor_over_kinformer": best["decode+keep floor"] / best["kinformer"],
        "kinformer_over_official": best["kinformer"] / best["official"],
        "latency": latency,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"watch delivery: {args.events} events of ~1 KB, best of {args.repeat}, "
          f"Python {result['python']}, decoder {result['json_backend']}")
    for name, rate in best.items():
        print(f"  {name:<13} {rate:>10,.0f} events/s   floor/this = {floor / rate:.2f}")
    print(f"  latency at {latency['offered_per_s']:,.0f}/s offered: p50 {latency['p50_ms']:.1f} ms, "
          f"p99 {latency['p99_ms']:.1f} ms, max {latency['max_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
