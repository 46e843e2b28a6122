"""Shared helpers for the benchmarks: command line, timing with the cyclic GC paused, a table.

Each benchmark builds rows of ``Result`` and hands them to :func:`report`, which prints a table
(or JSON with ``--json``). Timings are the best of ``--repeat`` runs, in nanoseconds per
operation; nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Result:
    """One measured figure, with its floor and (when known) client-go's figure."""

    name: str
    ns_per_op: float
    floor_ns: float | None = None
    go_ns: float | None = None
    note: str = ""

    @property
    def ops_per_s(self) -> float:
        return 1e9 / self.ns_per_op if self.ns_per_op else float("inf")

    @property
    def ratio_to_floor(self) -> float | None:
        return self.ns_per_op / self.floor_ns if self.floor_ns else None

    @property
    def ratio_to_go(self) -> float | None:
        return self.ns_per_op / self.go_ns if self.go_ns else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            ops_per_s=self.ops_per_s,
            ratio_to_floor=self.ratio_to_floor,
            ratio_to_go=self.ratio_to_go,
        )
        return d


def parse_args(description: str, default_n: int) -> argparse.Namespace:
    """``--n``, ``--repeat``, ``--quick`` (a small, fast run) and ``--json``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=default_n, help="objects per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts")
    parser.add_argument("--quick", action="store_true", help="a tenth of --n, one run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.n = max(1000, args.n // 10)
        args.repeat = 1
    return args


@contextmanager
def gc_paused(collector: bool = False) -> Iterator[None]:
    """Collect, then disable the cyclic GC for the block (leave it on with ``collector``);
    restore it afterwards, even on error."""
    was_enabled = gc.isenabled()
    gc.collect()
    if collector:
        gc.enable()
    else:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def measure(
    setup: Callable[[], T], run: Callable[[T], object], ops: int, repeat: int,
    collector: bool = False,
) -> float:
    """Best nanoseconds per operation of ``run(setup())`` over ``repeat`` runs of ``ops`` ops.

    ``setup`` is not timed; the cyclic GC is paused around each timed ``run``, unless
    ``collector`` (then it runs as it does for users, after a full collection).
    """
    best = float("inf")
    for _ in range(repeat):
        state = setup()
        with gc_paused(collector):
            start = time.perf_counter_ns()
            run(state)
            elapsed = time.perf_counter_ns() - start
        best = min(best, elapsed / ops)
        del state
    return best


def measure_pair(
    subject: tuple[Callable[[], T], Callable[[T], object]],
    floor: tuple[Callable[[], Any], Callable[[Any], object]],
    ops: int,
    repeat: int,
    collector: bool = False,
) -> tuple[float, float]:
    """Best ns/op of a subject and its floor, measured in alternation (``collector``: GC on).

    Alternating runs share whatever else the machine is doing, so their ratio stays meaningful
    on a busy host.
    """
    best_subject = best_floor = float("inf")
    for _ in range(repeat):
        best_floor = min(best_floor, measure(floor[0], floor[1], ops, 1, collector))
        best_subject = min(best_subject, measure(subject[0], subject[1], ops, 1, collector))
    return best_subject, best_floor


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def report(title: str, args: argparse.Namespace, results: list[Result]) -> None:
    """Print the results as a table, or as JSON with ``--json``."""
    meta = {
        "benchmark": title,
        "n": args.n,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "gc": "cyclic GC paused during timed sections",
    }
    if args.json:
        json.dump({**meta, "results": [r.as_dict() for r in results]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(f"{title}: n={args.n}, best of {args.repeat}, Python {meta['python']}")
    print("(cyclic GC paused during timed sections)")
    header = f"{'figure':<46} {'per op':>10} {'ops/s':>12} {'floor':>10} {'x floor':>8} {'x Go':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        floor = _fmt_ns(r.floor_ns) if r.floor_ns else "-"
        x_floor = f"{r.ratio_to_floor:.2f}" if r.ratio_to_floor is not None else "-"
        x_go = f"{r.ratio_to_go:.2f}" if r.ratio_to_go is not None else "-"
        print(
            f"{r.name:<46} {_fmt_ns(r.ns_per_op):>10} {r.ops_per_s:>12,.0f} "
            f"{floor:>10} {x_floor:>8} {x_go:>7}"
        )
        if r.note:
            print(f"    {r.note}")
