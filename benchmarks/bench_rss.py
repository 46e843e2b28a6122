"""Memory as ``ps`` shows it: the resident set of a process that syncs one informer.

Each contender runs in a fresh spawned process of its own, against a FakeAPIServer in another
process, and reports its resident set (``VmRSS`` of ``/proc/self/status``) above its own
baseline (the interpreter with kinformer and the official client imported), settled once synced,
every handler's initial adds delivered and a ``gc.collect()`` made; its peak (``VmHWM``) above the
same baseline; the seconds from start to synced; and for the informers a lister ``get`` in
microseconds. The informers are what a user writes: ``ListWatch.for_resource`` with defaults, a
namespace index and one handler, so the first list asks ``resourceVersion=0``, which a watch
cache (and the test server) answers in one page whatever its ``limit``.

Contenders: ``floor`` (the same one GET, decoded and kept by key, the collector off), ``dict``
(the default cache), ``dict+strip`` (with :func:`~kinformer.transforms.strip_managed_fields`),
``compact`` (``compact=True``) and ``compact+strip``. Two object shapes: ``pods``, about 5 KB
with two managers' managedFields and status (``_server_process.scale_pod``), and ``configmaps``, about
1 KB (``_server_process.configmap``); two decoders: orjson and the standard library
(``KINFORMER_JSON=stdlib`` in the child).

Once settled, each process also measures what it gives back: after a relist that replaced
every object (a new shard selector covering everything relists at once), after a second such
relist, and after the server deleted half of the objects (each a watch DELETED). ``half`` is a
fresh process listing only the half that stays (a label selector), for the last comparison.

At each of these points the child also reads what Python's allocator holds free (the free
blocks and empty pools of the arenas it keeps, from ``sys._debugmallocstats``); a second table
gives it, and "in use": the settled RSS less it, over the dict cache's.

Each contender can also run on the C library's allocator rather than Python's own
(``--allocators pymalloc,malloc``: ``PYTHONMALLOC=malloc`` in the child). Python's allocator
keeps a 1 MiB arena while any small object in it lives; glibc's ``malloc_trim``, which the
informer calls after a list, gives back every free page. "x dict" compares with the dict cache
on the same allocator, "x default dict" with the dict cache on Python's.

Run ``python benchmarks/bench_rss.py [--json] [--quick] [--objects N] [--shapes pods,configmaps]
[--decoders orjson,stdlib] [--allocators pymalloc,malloc] [--only dict,compact] [--repeat R]
[--profile classic]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import platform
import re
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from _server_process import CONFIGMAPS, PODS, configmap, rss_mb, scale_pod

OBJECTS = 50_000
NAMESPACES = 100
HALF_LABEL = "bench-half"  # "0" stays, "1" is deleted in the last phase
SYNC_TIMEOUT = 600.0
CHILD_TIMEOUT = SYNC_TIMEOUT + 300.0
POLL = 0.01
GET_SAMPLES = 2000
GET_ROUNDS = 5
SETTLE_STEP = 0.05
SETTLE_MAX = 3.0

SHAPES = {"pods": PODS, "configmaps": CONFIGMAPS}
CONTENDERS = ("floor", "dict", "dict+strip", "compact", "compact+strip", "dict half",
              "compact half")
DECODERS = ("orjson", "stdlib")
ALLOCATORS = ("pymalloc", "malloc")  # PYTHONMALLOC in the child


def _object(shape: str, i: int) -> dict[str, Any]:
    namespace = f"team-{i % NAMESPACES:04d}"
    obj = scale_pod(i, namespace) if shape == "pods" else configmap(i, namespace)
    obj["metadata"].setdefault("labels", {})[HALF_LABEL] = str(i % 2)
    return obj


# -- the server's process -------------------------------------------------------------------


def _serve(conn: Connection, shape: str, n: int) -> None:
    """Child process: a FakeAPIServer holding ``n`` objects of ``shape``; obeys the pipe."""
    from kinformer.gvr import GroupVersionResource
    from kinformer.testing import FakeAPIServer

    gvr = GroupVersionResource(*SHAPES[shape])
    server = FakeAPIServer(history_size=1000, max_backlog=10_000_000)
    server.start()
    namespaces = GroupVersionResource("", "v1", "namespaces")
    server.preload(namespaces, ({"metadata": {"name": f"team-{k:04d}"}} for k in range(NAMESPACES)))
    server.preload(gvr, (_object(shape, i) for i in range(n)))
    gc.freeze()
    conn.send(server.url)
    while True:
        command = conn.recv()
        if command == "delete_half":
            for i in range(1, n, 2):
                obj = _object(shape, i)["metadata"]
                server.delete(gvr, obj["namespace"], obj["name"])
            conn.send(True)
        elif command == "restore_half":
            server.preload(gvr, (_object(shape, i) for i in range(1, n, 2)))
            conn.send(True)
        else:
            break
    server.stop()
    conn.send("stopped")


# -- a contender's process ------------------------------------------------------------------


def _settled(baseline: float) -> tuple[float, float]:
    """RSS and peak above ``baseline`` once a collection was made and the resident set has
    stopped moving (what the informer's threads free or hand back once its handlers are done
    happens on their threads, a moment later): three readings 50 ms apart within 1 MiB, for
    at most 3 s."""
    gc.collect()
    readings = [rss_mb()["rss"]]
    deadline = time.monotonic() + SETTLE_MAX
    pause = threading.Event()
    while time.monotonic() < deadline:
        pause.wait(SETTLE_STEP)
        readings.append(rss_mb()["rss"])
        if len(readings) >= 3 and max(readings[-3:]) - min(readings[-3:]) < 1.0:
            break
    now = rss_mb()
    return now["rss"] - baseline, now["peak"] - baseline


def _note(result: dict[str, Any], phase: str, baseline: float) -> None:
    """Note ``phase``'s settled RSS above ``baseline`` (``<phase>_mb``; ``peak_mb`` with the
    first) and what of it Python's allocator holds free (``<phase>_py_free_mb``)."""
    result[f"{phase}_mb"], peak = _settled(baseline)
    result.setdefault("peak_mb", peak)
    free = _pymalloc_free_mb()
    if free is not None:
        result[f"{phase}_py_free_mb"] = free


def _pymalloc_free_mb() -> float | None:
    """MiB that Python's allocator holds with no object in it: the free blocks of its pools in
    use and its empty pools, inside arenas it keeps because some object still lives in each
    (resident: every one was written once). None where it does not say (``PYTHONMALLOC=malloc``,
    an interpreter without ``sys._debugmallocstats``)."""
    stats = getattr(sys, "_debugmallocstats", None)
    if stats is None:
        return None
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:  # the report goes to the C stderr: catch it there
        os.dup2(out.fileno(), 2)
        try:
            stats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode("ascii", "replace")
    available = re.search(r"# bytes in available blocks\s*=\s*([\d,]+)", text)
    pools = re.search(r"([\d,]+) unused pools \* (\d+) bytes", text)
    if available is None or pools is None:
        return None
    free = int(available.group(1).replace(",", ""))
    free += int(pools.group(1).replace(",", "")) * int(pools.group(2))
    return free / (1 << 20)


def _wait(condition: Any, what: str) -> None:
    deadline = time.monotonic() + SYNC_TIMEOUT
    pause = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not {what} after {SYNC_TIMEOUT:.0f}s")
        pause.wait(POLL)


def _floor(url: str, path: str, conn: Connection, baseline: float, n: int) -> dict[str, Any]:
    import urllib3

    from kinformer import _json

    gc.disable()
    pool = urllib3.PoolManager()

    def fetch(selector: str = "") -> dict[str, Any]:
        data = pool.request("GET", f"{url}{path}?resourceVersion=0{selector}").data
        cache: dict[str, Any] = {}
        for item in _json.loads(data)["items"]:
            metadata = item["metadata"]
            cache[f"{metadata['namespace']}/{metadata['name']}"] = item
        return cache

    began = time.perf_counter()
    cache = fetch()
    result: dict[str, Any] = {"seconds": time.perf_counter() - began, "objects": len(cache)}
    _note(result, "settled", baseline)
    cache = fetch()  # a relist: every object replaced
    _note(result, "relisted", baseline)
    cache = fetch()  # and another: is what the first left reused?
    _note(result, "relisted_twice", baseline)
    conn.send("delete_half")
    conn.recv()
    for key in [k for k, v in cache.items() if v["metadata"]["labels"][HALF_LABEL] == "1"]:
        del cache[key]
    _note(result, "halved", baseline)
    result["halved_objects"] = len(cache)
    return result


def _informer(url: str, shape: str, name: str, conn: Connection, baseline: float, n: int,
              profile: str) -> dict[str, Any]:
    from kubernetes import client

    from kinformer import (
        NAMESPACE_INDEX,
        GenericLister,
        GroupVersionResource,
        ListWatch,
        ResourceEventHandlerFuncs,
        ShardSelector,
        SharedIndexInformer,
        meta_namespace_index_func,
    )
    from kinformer.transforms import strip_managed_fields

    configuration = client.Configuration()
    configuration.host = url
    api = client.ApiClient(configuration)
    gvr = GroupVersionResource(*SHAPES[shape])
    half = name.endswith(" half")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api, gvr, label_selector=f"{HALF_LABEL}=0" if half else None),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
        compact=name.startswith("compact"),
        profile=profile,
    )
    if name.endswith("+strip"):
        informer.set_transform(strip_managed_fields)
    counts = {"add": 0, "update": 0, "delete": 0}

    def count(kind: str) -> Any:
        def handler(*args: Any) -> None:
            counts[kind] += 1
        return handler

    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=count("add"), update_func=count("update"), delete_func=count("delete")))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    began = time.perf_counter()
    thread.start()
    _wait(informer.has_synced, "synced")
    seconds = time.perf_counter() - began
    expected = n // 2 if half else n
    _wait(lambda: counts["add"] >= expected, "delivered")
    indexer = informer.get_indexer()
    result: dict[str, Any] = {"seconds": seconds, "objects": len(indexer)}
    _note(result, "settled", baseline)
    import random

    lister = GenericLister(indexer, gvr)
    keys = random.Random(7).sample(sorted(indexer.list_keys()), min(GET_SAMPLES, len(indexer)))
    calls = [(lister.by_namespace(ns).get, nm) for ns, nm in (k.split("/", 1) for k in keys)]
    best = float("inf")
    for _ in range(GET_ROUNDS):
        t = time.perf_counter()
        for get, nm in calls:
            get(nm)
        best = min(best, time.perf_counter() - t)
    result["get_us"] = best / len(calls) * 1e6
    del calls, lister, keys
    if not half:
        informer.set_shard_selector(ShardSelector.for_shard(0, 1))  # relists at once
        _wait(lambda: counts["update"] >= n, "relisted")
        _note(result, "relisted", baseline)
        informer.set_shard_selector(None)  # and again: is what the first left reused?
        _wait(lambda: counts["update"] >= 2 * n, "relisted twice")
        _note(result, "relisted_twice", baseline)
        conn.send("delete_half")
        conn.recv()
        _wait(lambda: counts["delete"] >= n // 2, "halved")
        _note(result, "halved", baseline)
        result["halved_objects"] = len(indexer)
    result["keep"] = (informer, stop, thread)
    return result


def _contender(conn: Connection, name: str, shape: str, url: str, n: int, profile: str) -> None:
    """Child process: run one contender, measure it, send the figures, exit without teardown."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    try:
        import kubernetes.client  # noqa: F401  (imported before the baseline, as by any user)

        import kinformer  # noqa: F401
        from kinformer import _json

        gc.collect()
        baseline = rss_mb()["rss"]
        if name == "floor":
            path = "/api/v1/" + SHAPES[shape][2]
            result = _floor(url, path, conn, baseline, n)
        else:
            result = _informer(url, shape, name, conn, baseline, n, profile)
        result.pop("keep", None)
        conn.send({**result, "name": name, "shape": shape, "decoder": _json.backend(),
                   "allocator": os.environ.get("PYTHONMALLOC", "pymalloc"),
                   "baseline_mb": baseline})
    except BaseException as exc:  # reported to the parent, whatever it is
        conn.send({"name": name, "shape": shape, "error": f"{type(exc).__name__}: {exc}"[:500]})
    finally:
        conn.close()
        os._exit(0)


# -- the parent -----------------------------------------------------------------------------


def measure(name: str, shape: str, decoder: str, url: str, n: int, server: Connection,
            profile: str = "modern", allocator: str = "pymalloc") -> dict[str, Any]:
    """One contender in a fresh spawned process; the server deletes half when it asks."""
    parent, child = multiprocessing.Pipe()
    settings = {"KINFORMER_JSON": decoder, "PYTHONMALLOC": allocator}
    saved = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)  # a spawned child starts a new interpreter, which reads them
    try:
        process = multiprocessing.get_context("spawn").Process(
            target=_contender, args=(child, name, shape, url, n, profile), daemon=True)
        process.start()
    finally:
        for key, value in saved.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value
    child.close()
    deleted = False
    result: dict[str, Any] = {"name": name, "shape": shape, "allocator": allocator,
                              "error": "no answer"}
    while parent.poll(CHILD_TIMEOUT):
        try:
            message = parent.recv()
        except EOFError:
            result = {"name": name, "shape": shape, "allocator": allocator,
                      "error": "the child died"}
            break
        if message == "delete_half":
            server.send("delete_half")
            server.recv()
            deleted = True
            parent.send(True)
            continue
        result = message
        break
    process.join(30)
    if process.is_alive():
        process.kill()
        process.join()
    if deleted:
        server.send("restore_half")
        server.recv()
    return result


def run_shape(shape: str, n: int, names: list[str], decoders: list[str], repeat: int,
              say: Any, profile: str = "modern",
              allocators: tuple[str, ...] = ("pymalloc",)) -> list[dict[str, Any]]:
    conn, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(child, shape, n), daemon=True)
    server.start()
    url = conn.recv()
    import urllib3

    # the server's first list of them pays for sorting the keys: no contender should
    urllib3.PoolManager().request("GET", f"{url}/api/v1/{SHAPES[shape][2]}?resourceVersion=0")
    runs: list[dict[str, Any]] = []
    try:
        for _ in range(repeat):  # in alternation: a busy spell slows every contender alike
            for decoder in decoders:
                for allocator in allocators:
                    for name in names:
                        r = measure(name, shape, decoder, url, n, conn, profile, allocator)
                        r.setdefault("decoder", decoder)
                        say(f"{shape} {decoder} {allocator} {name}: {_line(r)}")
                        runs.append(r)
    finally:
        conn.send("stop")
        conn.recv()
        server.join(30)
    return runs


def _line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    text = (f"{r['seconds']:.2f} s, settled +{r['settled_mb']:.0f} MiB, peak +{r['peak_mb']:.0f}")
    if "relisted_mb" in r:
        text += f", relisted +{r['relisted_mb']:.0f}, halved +{r['halved_mb']:.0f}"
    if "get_us" in r:
        text += f", get {r['get_us']:.1f} us"
    return text


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per shape, decoder and contender: ranges over the runs, and ratios to the dict cache and
    the floor of the same run."""
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    good = [r for r in runs if "error" not in r]
    for r in good:
        allocator = r.get("allocator", "pymalloc")
        row = rows.setdefault((r["shape"], r["decoder"], allocator, r["name"]),
                              {"shape": r["shape"], "decoder": r["decoder"],
                               "allocator": allocator, "name": r["name"]})
        for field in ("seconds", "settled_mb", "peak_mb", "relisted_mb", "relisted_twice_mb",
                      "halved_mb", "get_us", "settled_py_free_mb", "relisted_py_free_mb",
                      "halved_py_free_mb"):
            if field in r:
                row.setdefault(field, []).append(r[field])
        if "settled_py_free_mb" in r:  # what the objects take: the RSS less what is held free
            row.setdefault("in_use_mb", []).append(r["settled_mb"] - r["settled_py_free_mb"])
    for (shape, decoder, allocator, name), row in rows.items():
        base = rows.get((shape, decoder, allocator, "dict"))
        default = rows.get((shape, decoder, "pymalloc", "dict"))
        floor = rows.get((shape, decoder, allocator, "floor"))
        if base is not None and name != "dict":
            row["settled_over_dict"] = _ratio(row["settled_mb"], base["settled_mb"])
            if "in_use_mb" in row and "in_use_mb" in base:
                row["in_use_over_dict"] = _ratio(row["in_use_mb"], base["in_use_mb"])
        if default is not None and allocator != "pymalloc":
            row["settled_over_default_dict"] = _ratio(row["settled_mb"], default["settled_mb"])
        if floor is not None and name != "floor":
            row["peak_over_floor"] = _ratio(row["peak_mb"], floor["peak_mb"])
            row["seconds_over_floor"] = _ratio(row["seconds"], floor["seconds"])
        fresh_half = rows.get((shape, decoder, allocator, name.split("+")[0] + " half"))
        if fresh_half is not None and "halved_mb" in row and "+" not in name:
            row["halved_over_fresh"] = _ratio(row["halved_mb"], fresh_half["settled_mb"])
        if "relisted_mb" in row:
            row["relisted_over_fresh"] = [a / b for a, b in zip(row["relisted_mb"],
                                                                 row["settled_mb"], strict=True)]
    return list(rows.values())


def _ratio(values: list[float], bases: list[float]) -> list[float]:
    """Each run's value over the base of the same round (as many as both have)."""
    return [v / b for v, b in zip(values, bases, strict=False) if b]


def _range(values: list[float] | None, fmt: str = "{:.0f}") -> str:
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _table(report: dict[str, Any]) -> None:
    print(f"rss: {report['objects']:,} objects per shape, Python {report['python']}, "
          f"{report['repeat']} alternating rounds (ranges)")
    header = (f"{'shape':<11} {'decoder':<7} {'alloc':<8} {'contender':<14} {'sync s':>10} "
              f"{'x floor':>10} {'settled MiB':>12} {'x dict':>10} {'x def dict':>10} "
              f"{'peak MiB':>10} {'x floor':>10} {'relisted':>10} {'x fresh':>10} "
              f"{'halved':>9} {'x fresh half':>12} {'get us':>10}")
    print(header)
    print("-" * len(header))
    for row in report["rows"]:
        print(f"{row['shape']:<11} {row['decoder']:<7} {row['allocator']:<8} {row['name']:<14} "
              f"{_range(row.get('seconds'), '{:.2f}'):>10} "
              f"{_range(row.get('seconds_over_floor'), '{:.2f}'):>10} "
              f"{_range(row.get('settled_mb')):>12} "
              f"{_range(row.get('settled_over_dict'), '{:.2f}'):>10} "
              f"{_range(row.get('settled_over_default_dict'), '{:.2f}'):>10} "
              f"{_range(row.get('peak_mb')):>10} {_range(row.get('peak_over_floor'), '{:.2f}'):>10} "
              f"{_range(row.get('relisted_mb')):>10} "
              f"{_range(row.get('relisted_over_fresh'), '{:.2f}'):>10} "
              f"{_range(row.get('halved_mb')):>9} "
              f"{_range(row.get('halved_over_fresh'), '{:.2f}'):>12} "
              f"{_range(row.get('get_us'), '{:.1f}'):>10}")
    rows = [row for row in report["rows"] if "settled_py_free_mb" in row]
    if not rows:
        return
    print()
    print("held free by Python's allocator (MiB): in arenas it keeps for their other objects; "
          "'in use' is the settled RSS less it")
    header = (f"{'shape':<11} {'decoder':<7} {'alloc':<8} {'contender':<14} {'settled':>10} "
              f"{'in use':>10} {'x dict':>10} {'relisted':>10} {'halved':>10}")
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['shape']:<11} {row['decoder']:<7} {row['allocator']:<8} {row['name']:<14} "
              f"{_range(row.get('settled_py_free_mb'), '{:.1f}'):>10} "
              f"{_range(row.get('in_use_mb')):>10} "
              f"{_range(row.get('in_use_over_dict'), '{:.2f}'):>10} "
              f"{_range(row.get('relisted_py_free_mb'), '{:.1f}'):>10} "
              f"{_range(row.get('halved_py_free_mb'), '{:.1f}'):>10}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=OBJECTS, help="objects of each shape")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="pods,configmaps")
    parser.add_argument("--decoders", default=",".join(DECODERS), help="orjson,stdlib")
    parser.add_argument("--allocators", default="pymalloc",
                        help="pymalloc,malloc: Python's allocator, the C library's, or both")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {CONTENDERS}")
    parser.add_argument("--repeat", type=int, default=2, help="alternating rounds")
    parser.add_argument("--quick", action="store_true", help="a tenth of the objects, one round")
    parser.add_argument("--profile", default="modern", choices=("modern", "classic"),
                        help="the informers' profile")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.objects //= 10
        args.repeat = 1
    names = [c.strip() for c in args.only.split(",") if c.strip()] or list(CONTENDERS)
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    decoders = [d.strip() for d in args.decoders.split(",") if d.strip()]
    allocators = tuple(a.strip() for a in args.allocators.split(",") if a.strip())
    for given, known in ((names, CONTENDERS), (shapes, tuple(SHAPES)), (decoders, DECODERS),
                         (list(allocators), ALLOCATORS)):
        unknown = set(given) - set(known)
        if unknown:
            parser.error(f"unknown {sorted(unknown)}; choose from {known}")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    runs: list[dict[str, Any]] = []
    for shape in shapes:
        runs += run_shape(shape, args.objects, names, decoders, args.repeat, say, args.profile,
                          allocators)
    report = {"benchmark": "rss", "python": platform.python_version(), "objects": args.objects,
              "repeat": args.repeat, "profile": args.profile, "rows": summarize(runs), "runs": runs}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
