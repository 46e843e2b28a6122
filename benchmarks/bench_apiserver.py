"""FakeAPIServer throughput: a full list of N ConfigMaps, and watch events streamed to watchers.

The server runs in a child process (so client and server do not share one interpreter lock);
the client talks raw HTTP through urllib3, the pool the official client uses. Figures:

- ``list``: one GET of all N objects (seconds, MB/s), next to ``json.loads`` of the same bytes
  with the cyclic GC paused (the decode floor a consumer pays on top);
- ``watch-1`` / ``watch-10``: E new objects written server-side in chunks while 1 or 10 watchers
  stream them; events per second per watcher and in total, counted as lines received (with one
  watcher the server's writes, not the streaming, set the pace);
- ``replay-1`` / ``replay-10``: E events already in the history, streamed to watchers that start
  from the version before them (pure streaming: no writes compete);
- ``list-across``: one GET of ``/clusters/*`` on a server with logical clusters holding
  C clusters of P ConfigMaps each, against one plain GET of C x P ConfigMaps on a server
  without them (both servers in a second child process), measured alternately; the plain
  objects carry a ``kcp.io/cluster`` annotation too, so both answers are the same size.

Run ``python benchmarks/bench_apiserver.py [--json] [--n N] [--events E] [--clusters C]
[--per-cluster P] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import platform
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import urllib3

N_OBJECTS = 100_000
N_EVENTS = 50_000
WRITE_CHUNK = 500  # objects created per storage lock hold while watchers stream
N_CLUSTERS = 100  # logical clusters listed at once by list-across
PER_CLUSTER = 100  # ConfigMaps in each of them


def serve(conn: Connection, n: int, history: int) -> None:
    """Child process: start a server holding ``n`` ConfigMaps, then obey commands."""
    from kinformer.gvr import GroupVersionResource
    from kinformer.testing import FakeAPIServer

    configmaps = GroupVersionResource("", "v1", "configmaps")
    server = FakeAPIServer(history_size=history)
    server.start()
    server.create(GroupVersionResource("", "v1", "namespaces"), {"metadata": {"name": "watched"}})
    server.bulk_create(configmaps, (
        {"metadata": {"name": f"cm-{i:06d}", "namespace": "default",
                      "labels": {"app": f"app-{i % 50}"}},
         "data": {"key": f"value-{i}"}}
        for i in range(n)))
    conn.send(server.url)
    batch = 0
    while True:
        command, arg = conn.recv()
        if command == "write":
            batch += 1
            for start in range(0, arg, WRITE_CHUNK):
                server.bulk_create(configmaps, (
                    {"metadata": {"name": f"ev-{batch}-{i:06d}", "namespace": "watched"}}
                    for i in range(start, min(arg, start + WRITE_CHUNK))))
            conn.send("written")
        elif command == "watchers":
            conn.send(server.wait_for_watchers(configmaps, arg, timeout=30))
        else:
            break
    server.stop()
    conn.send("stopped")


def serve_clusters(conn: Connection, clusters: int, per_cluster: int) -> None:
    """Child process: a server with ``clusters`` logical clusters of ``per_cluster`` ConfigMaps
    and a plain one with as many ConfigMaps in one namespace; serves until told to stop."""
    from kinformer.gvr import GroupVersionResource
    from kinformer.testing import FakeAPIServer

    configmaps = GroupVersionResource("", "v1", "configmaps")

    def objects(count: int, cluster: str) -> Any:
        return ({"metadata": {"name": f"cm-{i:06d}", "namespace": "default",
                              "labels": {"app": f"app-{i % 50}"},
                              "annotations": {"kcp.io/cluster": cluster}},
                 "data": {"key": f"value-{i}"}} for i in range(count))

    plain = FakeAPIServer().start()
    plain.bulk_create(configmaps, objects(clusters * per_cluster, "cluster-0000"))
    logical = FakeAPIServer(logical_clusters=True).start()
    for c in range(clusters):
        name = f"cluster-{c:04d}"
        logical.bulk_create(configmaps, objects(per_cluster, name), cluster=name)
    conn.send((plain.url, logical.url))
    conn.recv()
    plain.stop()
    logical.stop()
    conn.send("stopped")


def list_across(clusters: int, per_cluster: int, repeat: int) -> dict[str, Any]:
    """``/clusters/*`` against a plain list of as many objects, alternately; the best of each."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=serve_clusters, args=(child, clusters, per_cluster))
    process.start()
    try:
        plain_url, logical_url = parent.recv()
        pool = urllib3.PoolManager()
        urls = {"plain": f"{plain_url}/api/v1/configmaps",
                "across": f"{logical_url}/clusters/*/api/v1/configmaps"}
        times: dict[str, list[float]] = {"plain": [], "across": []}
        sizes: dict[str, int] = {}
        for _ in range(max(5 * repeat, 10)):  # milliseconds each: many runs, the best counts
            for name, url in urls.items():
                began = time.perf_counter()
                response = pool.request("GET", url, preload_content=True)
                times[name].append(time.perf_counter() - began)
                sizes[name] = len(response.data)
        count = len(json.loads(response.data)["items"])
        pool.clear()
        parent.send("stop")
        parent.recv()
    finally:
        process.join(30)
        if process.is_alive():
            process.terminate()
    plain, across = min(times["plain"]), min(times["across"])
    return {"name": "list-across", "clusters": clusters, "objects": count,
            "seconds": across, "plain_seconds": plain, "ratio_to_plain": across / plain,
            "bytes": sizes["across"], "plain_bytes": sizes["plain"]}


def best_list(pool: urllib3.PoolManager, url: str, repeat: int) -> dict[str, Any]:
    times, decode_times, size = [], [], 0
    for _ in range(repeat):
        began = time.perf_counter()
        response = pool.request("GET", f"{url}/api/v1/configmaps", preload_content=True)
        times.append(time.perf_counter() - began)
        body = response.data
        size = len(body)
        was = gc.isenabled()
        gc.disable()
        try:
            began = time.perf_counter()
            decoded = json.loads(body)
            decode_times.append(time.perf_counter() - began)
        finally:
            if was:
                gc.enable()
        count = len(decoded["items"])
        del decoded
    best = min(times)
    return {"name": "list", "objects": count, "bytes": size, "seconds": best,
            "mb_per_s": size / best / 1e6, "json_loads_seconds": min(decode_times)}


def watch_rate(
    url: str, conn: Connection, watchers: int, events: int, replay: bool = False
) -> dict[str, Any]:
    ready = threading.Barrier(watchers + 1)
    finished: list[float] = []
    lock = threading.Lock()

    def consume() -> None:
        pool = urllib3.PoolManager()
        response = pool.request(
            "GET", f"{url}/api/v1/namespaces/watched/configmaps?watch=true&resourceVersion="
            f"{rv}&timeoutSeconds=600", preload_content=False)
        ready.wait()
        seen = 0
        tail = b""
        for chunk in response.stream(1 << 16):
            seen += chunk.count(b"\n")
            tail = chunk
            if seen >= events:
                break
        with lock:
            finished.append(time.perf_counter())
        del tail
        response.release_conn()
        response.close()
        pool.clear()

    head = urllib3.PoolManager().request("GET", f"{url}/api/v1/namespaces/watched/configmaps")
    rv = json.loads(head.data)["metadata"]["resourceVersion"]
    written = 0.0
    if replay:
        conn.send(("write", events))
        conn.recv()
    threads = [threading.Thread(target=consume) for _ in range(watchers)]
    began = time.perf_counter()  # replay: from the watch requests on
    for thread in threads:
        thread.start()
    if replay:
        ready.wait()
    else:
        ready.wait()
        conn.send(("watchers", watchers))
        conn.recv()
        began = time.perf_counter()
        conn.send(("write", events))
        conn.recv()
        written = time.perf_counter() - began
    for thread in threads:
        thread.join()
    elapsed = max(finished) - began
    return {"name": f"{'replay' if replay else 'watch'}-{watchers}", "watchers": watchers, "events": events,
            "seconds": elapsed, "events_per_s_per_watcher": events / elapsed,
            "events_per_s_total": events * watchers / elapsed,
            "server_write_seconds": written}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N_OBJECTS, help="ConfigMaps held and listed")
    parser.add_argument("--events", type=int, default=N_EVENTS, help="events per watch run")
    parser.add_argument("--clusters", type=int, default=N_CLUSTERS,
                        help="logical clusters listed at once by list-across")
    parser.add_argument("--per-cluster", type=int, default=PER_CLUSTER,
                        help="ConfigMaps in each logical cluster")
    parser.add_argument("--repeat", type=int, default=3, help="list runs; the best counts")
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, one run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.n, args.events, args.repeat = args.n // 10, args.events // 10, 1
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=serve, args=(child, args.n, args.events + 1000))
    process.start()
    try:
        url = parent.recv()
        pool = urllib3.PoolManager()
        results = [best_list(pool, url, args.repeat)]
        pool.clear()
        results.append(watch_rate(url, parent, 1, args.events))
        results.append(watch_rate(url, parent, 10, args.events))
        results.append(watch_rate(url, parent, 1, args.events, replay=True))
        results.append(watch_rate(url, parent, 10, args.events, replay=True))
        parent.send(("stop", None))
        parent.recv()
    finally:
        process.join(30)
        if process.is_alive():
            process.terminate()
    results.append(list_across(args.clusters, args.per_cluster, args.repeat))
    if args.json:
        print(json.dumps({"benchmark": "apiserver", "python": platform.python_version(),
                          "results": results}, indent=2))
        return 0
    lst = results[0]
    print(f"list {lst['objects']} ConfigMaps: {lst['seconds']:.3f} s, "
          f"{lst['bytes'] / 1e6:.1f} MB, {lst['mb_per_s']:.0f} MB/s "
          f"(json.loads floor {lst['json_loads_seconds']:.3f} s)")
    for r in results[1:-1]:
        print(f"{r['name']:>9}: {r['events']} events in {r['seconds']:.2f} s, "
              f"{r['events_per_s_per_watcher']:,.0f}/s per watcher, "
              f"{r['events_per_s_total']:,.0f}/s total")
    across = results[-1]
    print(f"list /clusters/* of {across['clusters']} clusters, {across['objects']} ConfigMaps: "
          f"{across['seconds']:.3f} s, a plain list of as many {across['plain_seconds']:.3f} s "
          f"({across['ratio_to_plain']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
