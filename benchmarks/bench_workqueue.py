"""WorkQueue throughput: add, get and done of N_ITEMS distinct keys, against a bare deque.

Single-threaded figures time ``add`` of N_ITEMS new keys, ``add`` of keys already queued (the
dedup hit an informer resync produces), ``get`` + ``done`` draining a full queue, and the whole
add → get → done cycle; each is compared with the same walk over a ``collections.deque``
(append / popleft), the floor no thread-safe, deduplicating queue can beat. A figure drains
the queue with WORKERS threads while the main thread adds. The last three time the add → get →
done cycle of a named queue with no metrics provider set (the default), with a provider whose
metrics do nothing (the queue's own bookkeeping: add and start times per item) and with the
Prometheus provider on a private registry (needs ``prometheus_client``). Run
``python benchmarks/bench_workqueue.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from _common import Result, measure, parse_args, report

from kinformer import _threads, metrics
from kinformer.workqueue import RateLimitingQueue, WorkQueue

N_ITEMS = 100_000
WORKERS = 2  # the machine class this runs on has two cores


class _DoNothingProvider(metrics.NoopMetricsProvider):
    """Hands out no-op metrics, but as a provider that is set: queues keep their books."""


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_ITEMS)
    n, repeat = args.n, args.repeat
    keys = [f"default/item-{i}" for i in range(n)]
    results: list[Result] = []

    def floor_add(d: collections.deque[str]) -> None:
        append = d.append
        for k in keys:
            append(k)

    def floor_filled() -> collections.deque[str]:
        return collections.deque(keys)

    def floor_drain(d: collections.deque[str]) -> None:
        popleft = d.popleft
        for _ in range(n):
            popleft()

    def floor_cycle(d: collections.deque[str]) -> None:
        append, popleft = d.append, d.popleft
        for k in keys:
            append(k)
            popleft()

    def run_add(q: WorkQueue[str]) -> None:
        add = q.add
        for k in keys:
            add(k)

    def filled() -> WorkQueue[str]:
        q: WorkQueue[str] = WorkQueue()
        run_add(q)
        return q

    def run_drain(q: WorkQueue[str]) -> None:
        get, done = q.get, q.done
        for _ in range(n):
            item, _shutdown = get()
            done(item)  # type: ignore[arg-type]

    def run_cycle(q: WorkQueue[str]) -> None:
        add, get, done = q.add, q.get, q.done
        for k in keys:
            add(k)
            item, _shutdown = get()
            done(item)  # type: ignore[arg-type]

    def run_threaded(q: WorkQueue[str]) -> None:
        def work() -> None:
            while True:
                item, shutdown = q.get()
                if shutdown:
                    return
                q.done(item)  # type: ignore[arg-type]

        threads = [_threads.spawn(work, f"bench-worker-{i}") for i in range(WORKERS)]
        run_add(q)
        q.shut_down()
        for thread in threads:
            thread.join()

    floor = measure(collections.deque, floor_add, n, repeat)
    results.append(Result("add, new keys", measure(WorkQueue, run_add, n, repeat), floor))
    results.append(Result("add, keys already queued (dedup)", measure(filled, run_add, n, repeat), floor))
    floor = measure(floor_filled, floor_drain, n, repeat)
    results.append(Result("get + done, full queue", measure(filled, run_drain, n, repeat), floor))
    floor = measure(collections.deque, floor_cycle, n, repeat)
    results.append(Result("add + get + done, one at a time", measure(WorkQueue, run_cycle, n, repeat), floor))
    results.append(
        Result(
            "add + get + done, RateLimitingQueue",
            measure(RateLimitingQueue, run_cycle, n, repeat),
            floor,
            note="the controller's queue: the same basic operations, no delays involved",
        )
    )
    results.append(
        Result(
            f"add, drained by {WORKERS} worker threads",
            measure(WorkQueue, run_threaded, n, repeat),
            floor,
            note="includes the workers' get + done; floor is the one-thread deque cycle",
        )
    )
    results += _provider_figures(run_cycle, n, repeat, floor)
    report("workqueue", args, results)


def _provider_figures(
    run_cycle: Callable[[WorkQueue[str]], None], n: int, repeat: int, floor: float
) -> list[Result]:
    """The add → get → done cycle of a named queue with no provider, a do-nothing one, Prometheus."""

    def named() -> WorkQueue[str]:
        return WorkQueue(name="bench")

    def cycle_then_shut_down(q: WorkQueue[str]) -> None:
        run_cycle(q)
        q.shut_down()  # joins the metrics updater a provider starts

    providers: list[tuple[str, metrics.MetricsProvider | None]] = [
        ("no provider", None),
        ("do-nothing provider", _DoNothingProvider()),
    ]
    try:
        from prometheus_client import CollectorRegistry
    except ImportError:
        pass
    else:
        providers.append(("Prometheus provider", metrics.PrometheusMetricsProvider(CollectorRegistry())))
    figures: list[Result] = []
    baseline = None
    for label, provider in providers:
        metrics.set_provider(provider)
        try:
            ns = measure(named, cycle_then_shut_down, n, repeat)
        finally:
            metrics.set_provider(None)
        baseline = ns if baseline is None else baseline
        note = "" if provider is None else f"{ns / baseline:.2f}x the figure with no provider"
        figures.append(Result(f"named queue cycle, {label}", ns, floor, note=note))
    return figures


if __name__ == "__main__":
    main()
