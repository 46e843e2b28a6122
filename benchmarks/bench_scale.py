"""A whole large cluster in one process: the initial sync of 150,000 Pods, time and memory.

A FakeAPIServer in a child process holds ``--objects`` Pods (default 150,000, Kubernetes' limit
for one cluster) of about 5 KB each as JSON, spread over ``--namespaces`` namespaces and loaded
with ``FakeAPIServer.preload``: managedFields, status with conditions and containerStatuses, an
owner reference, two or three containers with env, ports, resources and volume mounts, labels and
annotations, each Pod different (:func:`_server_process.scale_pod`). Every contender then lists all
namespaces in a fresh child process of its own, one after another, so each resident set (RSS) is
its own:

- ``floor``: a paged GET (``limit=500``, ``resourceVersion=""``) of the same list with urllib3,
  each page decoded with the decoder kinformer uses and its items kept in a dict by key, the
  cyclic collector off: the least a client that keeps the objects must do;
- ``kinformer paged``: a SharedIndexInformer in its default profile (namespace index, one
  no-op handler) over ``ListWatch.for_resource``, its first list paged (``limit=500``) at
  ``resourceVersion=""`` (a list at "0" is served whole from the watch cache, whatever its
  limit, as kube-apiserver does);
- ``kinformer watchlist``: the same informer streaming its initial state through a watch
  (``sendInitialEvents``, client-go's WatchList): ``use_watch_list=True``;
- ``kinformer compact``: the paged informer with ``compact=True``, its cache holding each Pod
  as compact JSON bytes (decoded afresh on every read);
- each of those again with ``kinformer.transforms.strip_managed_fields`` as the transform (for
  the floor: applied to each item before it is kept);
- ``official``: ``kubernetes.informer.SharedInformer`` (``kubernetes.watch.Watch`` plus a list
  where the package has no informer), one unpaginated list as it makes it, until its ADDED
  handler has seen every object. It keeps the client's model objects, several times the memory,
  so it runs at the largest slice of the Pods (a label selector) that fits the memory budget,
  sized from a small probe run, next to the floor over the same slice.

For each: seconds from start to synced (the first ``has_synced``; for the official informer,
its handler's last initial ADDED) and the CPU seconds the child used meanwhile (steadier than
wall time on a shared host), peak RSS, settled RSS once synced and handlers idle after a
``gc.collect()``, and settled RSS per cached object above the child's RSS before it started.
Once settled, each kinformer contender also times a lister ``get`` (``by_namespace(ns).get(name)``
of :data:`GET_SAMPLES` Pods picked at random, the best of :data:`GET_ROUNDS` rounds): the
per-read price of the compact cache's decode, against the dict cache's lookup.
``--memory-budget`` (GiB, default 10) bounds the server plus one contender: each child's address
space is capped (``RLIMIT_AS``) at its share plus room for thread arenas, so a contender that
needs more fails with MemoryError instead of starving the machine.

Every contender but the official informer runs ``--repeat`` times (default 3), in rounds over
all of them; each one's best counts, every run's time is in the JSON. Run
``python benchmarks/bench_scale.py [--json] [--quick] [--objects N] [--only NAMES] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import multiprocessing
import os
import platform
import re
import resource
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import quote

from _server_process import PART_LABEL, PODS, ServerProcess, rss_mb

OBJECTS = 150_000
NAMESPACES = 300
PARTS = 100  # label slices the official informer may be limited to
PAGE = 500
MEMORY_BUDGET_GIB = 10.0
ADDRESS_ROOM_GIB = 2.0  # address space beyond the RSS share: thread stacks and malloc arenas
PROBE_PARTS = 2  # slices of the official informer's probe run
SAFETY = 0.8  # share of the budget the official informer's predicted peak may take
SYNC_TIMEOUT = 1800.0  # seconds
POLL = 0.005  # seconds between has_synced checks
CHILD_TIMEOUT = SYNC_TIMEOUT + 600.0

GET_SAMPLES = 2000  # Pods read through the lister once synced
GET_ROUNDS = 5

CONTENDERS = ("floor", "floor+strip", "kinformer paged", "kinformer paged+strip",
              "kinformer watchlist", "kinformer watchlist+strip",
              "kinformer compact", "kinformer compact+strip", "official")


# -- in the contender's child process --------------------------------------------------------


def _clocks() -> tuple[float, float, float, int]:
    """Wall clock, user and system CPU, and minor page faults of this process, now."""
    t = os.times()
    return time.perf_counter(), t.user, t.system, resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _spent(began: tuple[float, float, float, int]) -> dict[str, Any]:
    """What a run took since :func:`_clocks` gave ``began``: wall and CPU seconds, the CPU split
    into the process's own (user) and the kernel's (system: on a virtual machine mostly the
    faulting in of fresh memory, which a heap of several GiB pays page by page), and the faults."""
    now = _clocks()
    user, system = now[1] - began[1], now[2] - began[2]
    return {"seconds": now[0] - began[0], "cpu_seconds": user + system, "user_seconds": user,
            "system_seconds": system, "page_faults": now[3] - began[3]}


def _api_client(url: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = url
    return client.ApiClient(configuration)


def _selector(parts: int | None) -> str | None:
    """The label selector of the first ``parts`` slices; None for every Pod."""
    if parts is None:
        return None
    return f"{PART_LABEL} in ({','.join(str(p) for p in range(parts))})"


def run_floor(url: str, n: int, strip: bool, parts: int | None) -> dict[str, Any]:
    """Paged GETs of the list, each page decoded and its items kept by key; collector off."""
    import urllib3

    from kinformer import _json
    from kinformer.transforms import strip_managed_fields

    gc.disable()
    pool = urllib3.PoolManager()
    selector = _selector(parts)
    base = f"{url}/api/v1/pods?limit={PAGE}"
    if selector:
        base += f"&labelSelector={quote(selector)}"
    cache: dict[str, Any] = {}
    wire = 0
    token = ""
    began = _clocks()
    while True:
        data = pool.request("GET", base + (f"&continue={quote(token)}" if token else "")).data
        wire += len(data)
        body = _json.loads(data)
        for item in body["items"]:
            if strip:
                strip_managed_fields(item)
            metadata = item["metadata"]
            cache[f"{metadata['namespace']}/{metadata['name']}"] = item
        token = body["metadata"].get("continue") or ""
        del data, body
        if not token:
            break
    return {**_spent(began), "objects": len(cache), "wire_bytes": wire, "keep": cache}


def run_kinformer(url: str, n: int, strip: bool, watch_list: bool, compact: bool = False
                  ) -> dict[str, Any]:
    """The default informer (namespace index, one handler) from run to has_synced."""
    from kinformer import (
        NAMESPACE_INDEX,
        GroupVersionResource,
        ListWatch,
        ResourceEventHandlerFuncs,
        SharedIndexInformer,
        meta_namespace_index_func,
    )
    from kinformer.handlers import wait_for_cache_sync
    from kinformer.transforms import strip_managed_fields

    def consistent_first_list(options: Any) -> Any:
        if options.resource_version == "0":  # served whole from the watch cache: page it
            options.resource_version = ""
        return options

    api = _api_client(url)
    informer = SharedIndexInformer(
        ListWatch.for_resource(api, GroupVersionResource(*PODS),
                               tweak_list_options=consistent_first_list),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
        compact=compact,
        use_watch_list=watch_list,
    )
    if strip:
        informer.set_transform(strip_managed_fields)
    registration = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda obj: None))
    stop = threading.Event()
    pause = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    began = _clocks()
    thread.start()
    deadline = began[0] + SYNC_TIMEOUT
    while not informer.has_synced() and time.perf_counter() < deadline:
        pause.wait(POLL)
    spent = _spent(began)
    if not informer.has_synced():
        raise RuntimeError(f"not synced after {SYNC_TIMEOUT:.0f}s: {informer.last_error()}")
    wait_for_cache_sync(None, registration.has_synced, timeout=SYNC_TIMEOUT)
    return {**spent, "objects": len(informer.get_indexer()), "keep": (informer, stop, thread)}


def time_lister_get(informer: Any) -> dict[str, Any]:
    """Microseconds per lister ``get`` of a random cached Pod (best of rounds), and its JSON size."""
    import random

    from kinformer import GenericLister, GroupVersionResource, _json

    lister = GenericLister(informer.get_indexer(), GroupVersionResource(*PODS))
    keys = random.Random(7).sample(sorted(informer.get_indexer().list_keys()),
                                   min(GET_SAMPLES, len(informer.get_indexer())))
    pairs = [tuple(key.split("/", 1)) for key in keys]
    namespaced = {ns: lister.by_namespace(ns) for ns, _ in pairs}
    calls = [(namespaced[ns].get, name) for ns, name in pairs]
    best = float("inf")
    for _ in range(GET_ROUNDS):
        began = time.perf_counter()
        for get, name in calls:
            get(name)
        best = min(best, time.perf_counter() - began)
    sizes = [len(_json.dumps(get(name))) for get, name in calls]
    return {"get_us": best / len(calls) * 1e6, "get_object_bytes": sum(sizes) / len(sizes)}


def run_official(url: str, n: int, parts: int | None) -> dict[str, Any]:
    """The official client's informer until its handler has seen every object."""
    from kubernetes import client

    api = _api_client(url)
    list_pods = client.CoreV1Api(api).list_pod_for_all_namespaces
    selector = _selector(parts)
    try:
        from kubernetes.informer import ADDED, SharedInformer
    except ImportError:  # an older client: a list, then a watch, as a user would write it
        return _run_list_and_watch(list_pods, n, selector)
    informer = SharedInformer(list_pods, label_selector=selector)
    done = threading.Event()
    seen = [0]

    def on_added(obj: Any) -> None:
        seen[0] += 1
        if seen[0] >= n:
            done.set()

    informer.add_event_handler(ADDED, on_added)
    began = _clocks()
    informer.start()
    done.wait(SYNC_TIMEOUT)
    spent = _spent(began)
    if not done.is_set():
        raise RuntimeError(f"the official informer saw {seen[0]} of {n} objects")
    return {**spent, "objects": len(informer.cache.list_keys()), "keep": informer}


def _run_list_and_watch(list_pods: Callable[..., Any], n: int, selector: str | None) -> dict[str, Any]:
    from kubernetes import watch

    began = _clocks()
    listed = list_pods(label_selector=selector)
    cache = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in listed.items}
    spent = _spent(began)
    stream = watch.Watch().stream(list_pods, label_selector=selector,
                                  resource_version=listed.metadata.resource_version,
                                  timeout_seconds=1)
    for event in stream:  # what a user's loop does next; nothing is written meanwhile
        cache[f"{event['object'].metadata.namespace}/{event['object'].metadata.name}"] = event["object"]
    return {**spent, "objects": len(cache), "keep": cache}


def _contender(conn: Connection, name: str, url: str, n: int, parts: int | None,
               address_limit: int) -> None:
    """Child process: run one contender, measure it, send the figures, exit without teardown."""
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)
    try:
        if address_limit:
            resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
        import kubernetes.client  # noqa: F401  (imported before the baseline, as by any user)

        import kinformer  # noqa: F401

        gc.collect()
        baseline = rss_mb()["rss"]
        strip = name.endswith("+strip")
        if name.startswith("floor"):
            result = run_floor(url, n, strip, parts)
        elif name.startswith("kinformer"):
            result = run_kinformer(url, n, strip, "watchlist" in name, "compact" in name)
        else:
            result = run_official(url, n, parts)
        gc.collect()
        settled, peak = rss_mb()["rss"], rss_mb()["peak"]
        if result["objects"] != n:
            raise RuntimeError(f"cached {result['objects']} objects, expected {n}")
        if name.startswith("kinformer"):
            result.update(time_lister_get(result["keep"][0]))
        result.pop("keep")  # held until measured
        conn.send({**result, "name": name, "baseline_mb": baseline, "peak_mb": peak,
                   "settled_mb": settled,
                   "settled_bytes_per_object": (settled - baseline) * 2**20 / n})
    except BaseException as exc:  # reported to the parent, whatever it is
        conn.send({"name": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
    finally:
        conn.close()
        os._exit(0)  # tearing down millions of objects would only take time


# -- in the parent ----------------------------------------------------------------------------


def measure(name: str, url: str, n: int, parts: int | None, address_limit: int) -> dict[str, Any]:
    """Run one contender in a fresh spawned child process and return its figures."""
    parent, child = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("spawn").Process(
        target=_contender, args=(child, name, url, n, parts, address_limit), daemon=True)
    process.start()
    child.close()
    result: dict[str, Any]
    if parent.poll(CHILD_TIMEOUT):
        try:
            result = parent.recv()
        except EOFError:
            result = {"name": name, "error": "the child died (killed for memory?)"}
    else:
        result = {"name": name, "error": f"no answer within {CHILD_TIMEOUT:.0f}s"}
    process.join(30)
    if process.is_alive():
        process.kill()
        process.join()
    result["objects_asked"] = n
    return result


def warm_up(url: str) -> None:
    """One paged pass over the whole list, its bytes dropped: the server's first list pays for
    sorting the keys and for touching memory the preload left; no contender should."""
    import urllib3

    pool = urllib3.PoolManager()
    token = ""
    while True:
        response = pool.request(
            "GET", f"{url}/api/v1/pods?limit={PAGE}" + (f"&continue={quote(token)}" if token else ""))
        found = re.search(rb'"continue":"([^"]*)"', response.data[:1000])  # metadata comes first
        token = found.group(1).decode() if found else ""
        if not token:
            break
    pool.clear()


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in runs if "error" not in r]
    if not good:
        return runs[-1]
    best = min(good, key=lambda r: r["seconds"])
    best = dict(best, runs_seconds=[r["seconds"] for r in good])
    best["peak_mb"] = max(r["peak_mb"] for r in good)
    return best


def official_size(probe: dict[str, Any], part_size: int, share_mb: float, parts: int) -> int:
    """How many slices the official informer may take: its probe's peak per object, scaled."""
    per_object_mb = (probe["peak_mb"] - probe["baseline_mb"]) / max(1, probe["objects"])
    fits = int(SAFETY * share_mb / max(per_object_mb, 1e-9) / part_size)
    return max(PROBE_PARTS, min(parts, fits))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=OBJECTS, help="Pods in the cluster")
    parser.add_argument("--namespaces", type=int, default=NAMESPACES, help="namespaces they fill")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds over the contenders (the official informer runs once); "
                             "each one's best counts")
    parser.add_argument("--memory-budget", type=float, default=MEMORY_BUDGET_GIB,
                        help="GiB for the server and one contender together")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {CONTENDERS}")
    parser.add_argument("--quick", action="store_true", help="a tenth of the Pods, one round")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.objects //= 10
        args.repeat = 1
    names = [c.strip() for c in args.only.split(",") if c.strip()] or list(CONTENDERS)
    unknown = set(names) - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders {sorted(unknown)}; choose from {CONTENDERS}")
    n = args.objects
    parts = min(PARTS, n)
    if n % parts:
        parser.error(f"--objects must be a multiple of {parts}")
    part_size = n // parts

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    results: list[dict[str, Any]] = []
    with ServerProcess() as server:
        say(f"preloading {n:,} Pods over {args.namespaces} namespaces ...")
        preload_seconds, _ = server.preload_scale(n, args.namespaces, parts)
        server_rss = server.rss()
        say(f"  {preload_seconds:.1f} s, server RSS {server_rss['rss']:,.0f} MiB")
        share_mb = args.memory_budget * 1024 - server_rss["rss"]
        limit = int((share_mb / 1024 + ADDRESS_ROOM_GIB) * 2**30)
        warm_up(server.url)
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.repeat):  # in alternation: a busy spell slows every contender alike
            for name in names:
                if name == "official":
                    continue
                say(f"{name} ...")
                runs.setdefault(name, []).append(measure(name, server.url, n, None, limit))
                say(f"  {_line(runs[name][-1])}")
        results.extend(_best(r) for r in runs.values())
        if "official" in names:
            say(f"official probe, {PROBE_PARTS * part_size:,} Pods ...")
            probe = measure("official", server.url, PROBE_PARTS * part_size, PROBE_PARTS, limit)
            say(f"  {_line(probe)}")
            size_parts = official_size(probe, part_size, share_mb, parts) if "error" not in probe \
                else PROBE_PARTS
            size = size_parts * part_size
            floor_at = next((r for r in results if r["name"] == "floor"), None)
            if size < n or floor_at is None:
                say(f"floor, {size:,} Pods ...")
                floor_at = measure("floor", server.url, size, size_parts if size < n else None,
                                   limit)
                floor_at["name"] = f"floor ({size:,})"
                say(f"  {_line(floor_at)}")
                results.append(floor_at)
            say(f"official, {size:,} Pods ...")
            official = measure("official", server.url, size, size_parts if size < n else None, limit)
            say(f"  {_line(official)}")
            if size < n:
                official["note"] = (f"{size:,} of {n:,} Pods: the largest slice that fits "
                                    f"{args.memory_budget:g} GiB with the server, from a probe "
                                    f"of {probe.get('objects', 0):,}")
            official["floor_seconds"] = floor_at.get("seconds")
            official["floor_settled_mb"] = floor_at.get("settled_mb")
            official["floor_cpu_seconds"] = floor_at.get("cpu_seconds")
            official["floor_user_seconds"] = floor_at.get("user_seconds")
            results.append(official)
        server_final = server.rss()
    _ratios(results)
    report = {
        "benchmark": "scale",
        "python": platform.python_version(),
        "json_backend": _json_backend(),
        "objects": n,
        "namespaces": args.namespaces,
        "preload_seconds": preload_seconds,
        "server_rss_mb": server_rss["rss"],
        "server_peak_mb": server_final["peak"],
        "memory_budget_gib": args.memory_budget,
        "run_peak_mb": server_final["peak"] + max((r.get("peak_mb", 0) for r in results), default=0),
        "results": results,
    }
    floor = next((r for r in results if r["name"] == "floor" and "error" not in r), None)
    if floor is not None:
        report["wire_bytes_per_object"] = floor["wire_bytes"] / n
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _table(report)
    return 0


def _json_backend() -> str:
    from kinformer import _json

    return _json.backend()


def _ratios(results: list[dict[str, Any]]) -> None:
    """Each result's time and settled memory over the floor's (the official's over its own)."""
    floor = next((r for r in results if r["name"] == "floor" and "error" not in r), None)
    for r in results:
        if "error" in r or r["name"].startswith("floor ("):
            continue
        if r["name"] == "official":
            base_s, base_mb = r.get("floor_seconds"), r.get("floor_settled_mb")
            base_cpu = r.get("floor_cpu_seconds")
            base_user = r.get("floor_user_seconds")
            floor_base = next((f for f in results if f["name"].startswith("floor (")), floor)
            base_per_object = floor_base.get("settled_bytes_per_object") if floor_base else None
        elif floor is not None:
            base_s, base_mb, base_cpu = floor["seconds"], floor["settled_mb"], floor["cpu_seconds"]
            base_user = floor.get("user_seconds")
            base_per_object = floor["settled_bytes_per_object"]
        else:
            continue
        if base_s:
            r["seconds_over_floor"] = r["seconds"] / base_s
        if base_cpu:
            r["cpu_over_floor"] = r["cpu_seconds"] / base_cpu
        if base_user and "user_seconds" in r:
            r["user_over_floor"] = r["user_seconds"] / base_user
        if base_mb and base_per_object:
            r["memory_over_floor"] = r["settled_bytes_per_object"] / base_per_object
    for r in results:  # the compact caches against the dict caches of the same informer
        if "error" in r or not r["name"].startswith("kinformer compact"):
            continue
        for dict_name, field in (("kinformer paged", "memory_over_dict"),
                                 ("kinformer paged+strip", "memory_over_dict_strip")):
            base = next((d for d in results if d["name"] == dict_name and "error" not in d), None)
            if base is not None:
                r[field] = r["settled_bytes_per_object"] / base["settled_bytes_per_object"]


def _line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    return (f"{r['seconds']:.2f} s ({r['user_seconds']:.2f} s user + {r['system_seconds']:.2f} s "
            f"system CPU, {r['page_faults']:,} faults), peak {r['peak_mb']:,.0f} MiB, "
            f"settled {r['settled_mb']:,.0f} MiB, {r['settled_bytes_per_object']:,.0f} B per object")


def _table(report: dict[str, Any]) -> None:
    print(f"scale: {report['objects']:,} Pods over {report['namespaces']} namespaces, "
          f"{report.get('wire_bytes_per_object', 0):,.0f} B each on the wire, Python "
          f"{report['python']}, decoder {report['json_backend']}")
    print(f"preload {report['preload_seconds']:.1f} s; server RSS {report['server_rss_mb']:,.0f} "
          f"MiB; run peak (server + largest contender) {report['run_peak_mb'] / 1024:.1f} GiB")
    header = (f"{'contender':<26} {'objects':>8} {'synced s':>9} {'x floor':>8} {'CPU s':>7} "
              f"{'x floor':>8} {'user s':>7} {'x floor':>8} {'peak MiB':>9} {'settled':>8} "
              f"{'B/object':>9} {'x floor':>8} {'get us':>7}")
    print(header)
    print("-" * len(header))
    for r in report["results"]:
        if "error" in r:
            print(f"{r['name']:<26} error: {r['error']}")
            continue
        ratio_s = f"{r['seconds_over_floor']:.2f}" if "seconds_over_floor" in r else "-"
        ratio_c = f"{r['cpu_over_floor']:.2f}" if "cpu_over_floor" in r else "-"
        ratio_u = f"{r['user_over_floor']:.2f}" if "user_over_floor" in r else "-"
        ratio_m = f"{r['memory_over_floor']:.2f}" if "memory_over_floor" in r else "-"
        get_us = f"{r['get_us']:.1f}" if "get_us" in r else "-"
        print(f"{r['name']:<26} {r['objects']:>8,} {r['seconds']:>9.2f} {ratio_s:>8} "
              f"{r['cpu_seconds']:>7.2f} {ratio_c:>8} {r['user_seconds']:>7.2f} {ratio_u:>8} "
              f"{r['peak_mb']:>9,.0f} "
              f"{r['settled_mb']:>8,.0f} {r['settled_bytes_per_object']:>9,.0f} {ratio_m:>8} "
              f"{get_us:>7}")
        if r.get("note"):
            print(f"    {r['note']}")
        for field, base in (("memory_over_dict", "kinformer paged"),
                            ("memory_over_dict_strip", "kinformer paged+strip")):
            if field in r:
                print(f"    settled memory {r[field]:.2f}x the dict cache's ({base})")


if __name__ == "__main__":
    sys.exit(main())
