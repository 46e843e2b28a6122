"""FIFO throughput: RealFIFO and DeltaFIFO add N_OBJECTS objects, then pop them all, each beside a floor.

DeltaFIFO's floor does the least a keyed FIFO must: compute the ``"ns/name"`` key, append a
``(type, object)`` pair to the key's list (queuing the key when new), and pop keys in order.
RealFIFO's floor is the least a log of deltas must do: compute the key and append
``(key, (type, object))`` to a deque, then pop from its left. client-go takes GO_REAL_ADD_POP_NS
(RealFIFO) and GO_DELTA_ADD_POP_NS (DeltaFIFO) per object for the same add-then-pop cycle on
this machine class. Run ``python benchmarks/bench_fifo.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from _common import Result, measure_pair, parse_args, report

from kinformer.cache.delta_fifo import DeltaFIFO, DeltaType
from kinformer.cache.real_fifo import RealFIFO

N_OBJECTS = 100_000
N_NAMESPACES = 100
GO_DELTA_ADD_POP_NS = 1267.0  # client-go DeltaFIFO, add + pop, ns per object
GO_REAL_ADD_POP_NS = 846.0  # client-go RealFIFO, add + pop, ns per object


def make_objects(n: int) -> list[dict[str, Any]]:
    return [
        {
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{i}",
                "namespace": f"ns-{i % N_NAMESPACES}",
                "resourceVersion": "1",
                "labels": {"app": f"app-{i % 50}"},
            },
        }
        for i in range(n)
    ]


class FloorFIFO:
    def __init__(self) -> None:
        self.items: dict[str, list[tuple[DeltaType, Any]]] = {}
        self.queue: deque[str] = deque()

    def add_all(self, objs: list[dict[str, Any]]) -> None:
        items, queue, added = self.items, self.queue, DeltaType.ADDED
        for o in objs:
            meta = o["metadata"]
            key = meta["namespace"] + "/" + meta["name"]
            deltas = items.get(key)
            if deltas is None:
                items[key] = [(added, o)]
                queue.append(key)
            else:
                deltas.append((added, o))

    def pop_all(self, process: Any) -> None:
        items, queue = self.items, self.queue
        while queue:
            key = queue.popleft()
            process(items.pop(key), False)


class FloorLog:
    def __init__(self) -> None:
        self.items: deque[tuple[str, tuple[DeltaType, Any]]] = deque()

    def add_all(self, objs: list[dict[str, Any]]) -> None:
        append, added = self.items.append, DeltaType.ADDED
        for o in objs:
            meta = o["metadata"]
            append((meta["namespace"] + "/" + meta["name"], (added, o)))

    def pop_all(self, process: Any) -> None:
        items = self.items
        popleft = items.popleft
        while items:
            process([popleft()[1]], False)


def process(deltas: Any, is_in_initial_list: bool) -> None:
    """The cheapest possible consumer."""


def measure_fifo(
    label: str,
    fifo_type: type[DeltaFIFO] | type[RealFIFO],
    floor_type: type[FloorFIFO] | type[FloorLog],
    objs: list[dict[str, Any]],
    repeat: int,
    go_ns: float,
) -> list[Result]:
    """add, pop and add + pop per object of ``fifo_type``, each beside ``floor_type`` in one run."""
    n = len(objs)

    def run_add(fifo: Any) -> None:
        add = fifo.add
        for o in objs:
            add(o)

    def filled() -> Any:
        fifo = fifo_type()
        run_add(fifo)
        return fifo

    def run_pop(fifo: Any) -> None:
        pop = fifo.pop
        for _ in range(n):
            pop(process)

    def filled_floor() -> Any:
        floor = floor_type()
        floor.add_all(objs)
        return floor

    def run_both(fifo: Any) -> None:
        run_add(fifo)
        run_pop(fifo)

    def run_floor_both(floor: Any) -> None:
        floor.add_all(objs)
        floor.pop_all(process)

    add, floor_add = measure_pair((fifo_type, run_add), (floor_type, lambda f: f.add_all(objs)), n, repeat)
    pop, floor_pop = measure_pair((filled, run_pop), (filled_floor, lambda f: f.pop_all(process)), n, repeat)
    both, floor_both = measure_pair((fifo_type, run_both), (floor_type, run_floor_both), n, repeat)
    return [
        Result(f"{label} add", add, floor_add),
        Result(f"{label} pop (no-op process)", pop, floor_pop),
        Result(f"{label} add + pop per object", both, floor_both, go_ns),
    ]


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_OBJECTS)
    objs = make_objects(args.n)
    results = measure_fifo("RealFIFO", RealFIFO, FloorLog, objs, args.repeat, GO_REAL_ADD_POP_NS)
    results += measure_fifo("DeltaFIFO", DeltaFIFO, FloorFIFO, objs, args.repeat, GO_DELTA_ADD_POP_NS)
    report("bench_fifo", args, results)


if __name__ == "__main__":
    main()
