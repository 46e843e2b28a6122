"""Cache memory: bytes per cached object beyond the decoded objects themselves (tracemalloc).

N_OBJECTS Pods of about 4.5 KB on the wire, each with realistic ``managedFields``, are decoded
from JSON (so they are what a list hands over) and then synced by a SharedIndexInformer
(namespace index, one handler) over an in-process ListWatch. tracemalloc counts:

- ``objects``: the decoded objects' own memory, per object;
- ``overhead``: what the informer adds once synced and every handler has had its adds (cache
  map, index, keys, anything left in the FIFO or handler buffers), per object, and its share of
  the objects' memory;

first as they come, then with a transform dropping ``metadata.managedFields`` (where the
objects' own memory is that of the stripped objects). Run
``python benchmarks/bench_memory.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import threading
import tracemalloc
from typing import Any

from _server_process import pod

from kinformer import _json
from kinformer.cache.store import NAMESPACE_INDEX, meta_namespace_index_func
from kinformer.client.listerwatcher import ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.handlers import ResourceEventHandlerFuncs, wait_for_cache_sync
from kinformer.informer import SharedIndexInformer
from kinformer.testing import ChannelWatch

N_OBJECTS = 20_000
N_NAMESPACES = 50
TIMEOUT = 120.0


def encoded(n: int) -> list[bytes]:
    lines = []
    for i in range(n):
        obj = pod(i, f"ns-{i % N_NAMESPACES}")
        obj["metadata"].update(
            uid=f"{i:08d}-0000-4000-8000-{i:012d}",
            resourceVersion=str(1000 + i),
            creationTimestamp="2026-01-01T00:00:00Z",
        )
        lines.append(_json.dumps(obj))
    return lines


def drop_managed_fields(obj: Any) -> Any:
    obj["metadata"].pop("managedFields", None)
    return obj


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def decoded_size(lines: list[bytes], strip: bool) -> tuple[list[Any], int]:
    """The objects and the bytes they hold (the list holding them not counted)."""
    before = traced()
    objs = [_json.loads(line) for line in lines]
    if strip:
        for obj in objs:
            drop_managed_fields(obj)
    return objs, traced() - before - sys.getsizeof(objs)


def informer_overhead(objs: list[Any], transform: bool) -> int:
    """Bytes the informer holds once synced, beyond the objects it was handed."""
    before = traced()
    informer = SharedIndexInformer(
        ListWatch(lambda options: ListResult(objs, "99999"), lambda options: ChannelWatch()),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
    )
    if transform:
        informer.set_transform(drop_managed_fields)
    registration = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda o: None))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    thread.start()
    try:
        if not wait_for_cache_sync(stop, informer.has_synced, registration.has_synced, timeout=TIMEOUT):
            raise RuntimeError("informer did not sync")
        held = traced() - before
    finally:
        stop.set()
        thread.join()
    gc.unfreeze()  # the informer froze its cache; let the next run start from the same state
    return held


def measure(lines: list[bytes], transform: bool) -> dict[str, Any]:
    n = len(lines)
    objs, full = decoded_size(lines, strip=False)
    overhead = informer_overhead(objs, transform)
    own = full
    if transform:
        # the transform freed every managedFields: count it back, and compare with stripped objects
        stripped_objs, stripped = decoded_size(lines, strip=True)
        del stripped_objs
        overhead += full - stripped
        own = stripped
    del objs
    return {
        "name": "managedFields dropped" if transform else "as decoded",
        "objects": n,
        "object_bytes": own / n,
        "overhead_bytes": overhead / n,
        "overhead_share": overhead / own,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N_OBJECTS, help="objects cached")
    parser.add_argument("--quick", action="store_true", help="a tenth of the objects")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.n //= 10
    lines = encoded(args.n)
    wire = sum(len(line) for line in lines) / args.n
    tracemalloc.start()
    results = [measure(lines, transform=False), measure(lines, transform=True)]
    tracemalloc.stop()
    meta = {"benchmark": "memory", "python": platform.python_version(), "n": args.n,
            "wire_bytes_per_object": wire}
    if args.json:
        print(json.dumps({**meta, "results": results}, indent=2))
        return 0
    print(f"cache memory: {args.n} Pods, {wire:.0f} B each on the wire, namespace index, "
          f"one handler, Python {meta['python']}")
    print(f"{'objects':<24} {'object B':>10} {'overhead B':>11} {'overhead':>9}")
    for r in results:
        print(f"{r['name']:<24} {r['object_bytes']:>10,.0f} {r['overhead_bytes']:>11,.0f} "
              f"{r['overhead_share']:>9.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
