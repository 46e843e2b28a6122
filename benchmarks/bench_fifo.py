"""DeltaFIFO throughput: add N_OBJECTS objects, then pop them all, against a deque+dict floor.

The floor does the least a keyed FIFO must: compute the ``"ns/name"`` key, append a
``(type, object)`` pair to the key's list (queuing the key when new), and pop keys in order.
client-go's DeltaFIFO takes GO_ADD_POP_NS per object for the same add-then-pop cycle on this
machine class. Run ``python benchmarks/bench_fifo.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from _common import Result, measure_pair, parse_args, report

from kinformer.cache.delta_fifo import DeltaFIFO, DeltaType

N_OBJECTS = 100_000
N_NAMESPACES = 100
GO_ADD_POP_NS = 1267.0  # client-go DeltaFIFO, add + pop, ns per object


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


def process(deltas: Any, is_in_initial_list: bool) -> None:
    """The cheapest possible consumer."""


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_OBJECTS)
    n, repeat = args.n, args.repeat
    objs = make_objects(n)

    def run_add(fifo: DeltaFIFO) -> None:
        add = fifo.add
        for o in objs:
            add(o)

    def filled() -> DeltaFIFO:
        fifo = DeltaFIFO()
        run_add(fifo)
        return fifo

    def run_pop(fifo: DeltaFIFO) -> None:
        pop = fifo.pop
        for _ in range(n):
            pop(process)

    def filled_floor() -> FloorFIFO:
        floor = FloorFIFO()
        floor.add_all(objs)
        return floor

    def run_both(fifo: DeltaFIFO) -> None:
        run_add(fifo)
        run_pop(fifo)

    def run_floor_both(floor: FloorFIFO) -> None:
        floor.add_all(objs)
        floor.pop_all(process)

    add, floor_add = measure_pair(
        (DeltaFIFO, run_add), (FloorFIFO, lambda f: f.add_all(objs)), n, repeat
    )
    pop, floor_pop = measure_pair(
        (filled, run_pop), (filled_floor, lambda f: f.pop_all(process)), n, repeat
    )
    both, floor_both = measure_pair((DeltaFIFO, run_both), (FloorFIFO, run_floor_both), n, repeat)
    results = [
        Result("add", add, floor_add),
        Result("pop (no-op process)", pop, floor_pop),
        Result("add + pop per object", both, floor_both, GO_ADD_POP_NS),
    ]
    report("bench_fifo", args, results)


if __name__ == "__main__":
    main()
