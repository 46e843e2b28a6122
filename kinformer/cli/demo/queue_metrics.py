"""The demo's metrics provider: each work queue's depth and retries, and the reflectors' lists
and watches, kept in memory for the display.

A :class:`~kinformer.metrics.NoopMetricsProvider` that keeps only the figures the display
shows, so the demo needs no Prometheus; :mod:`kinformer.cli.demo.app` sets it before creating
its informers and controllers, and :mod:`kinformer.cli.demo.display` shows
:meth:`QueueFigures.snapshot` and the reconnects and relists of :meth:`QueueFigures.reflector_counts`.
"""

from __future__ import annotations

import threading

from kinformer.metrics import provider


class _Figure:
    """One queue's depth or retries: a counter that goes both ways, under the provider's lock."""

    __slots__ = ("_figures", "_key")

    def __init__(self, figures: QueueFigures, key: tuple[str, str]) -> None:
        self._figures = figures
        self._key = key

    def inc(self) -> None:
        self._figures.change(self._key, 1)

    def dec(self) -> None:
        self._figures.change(self._key, -1)


class _Count:
    """One reflector's lists or watches."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> None:
        self.value += 1  # one reflector thread counts it; the display reads a plain int


class QueueFigures(provider.NoopMetricsProvider):
    """Depth and retries of every named work queue created while it is the provider, and the
    lists and watches of every reflector.

    Thread-safe; the queues call it under their own locks, so it only adds to a dict.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _values, _lists, _watches
        self._values: dict[tuple[str, str], int] = {}  # (queue name, "depth" | "retries") -> value
        self._lists: list[_Count] = []  # one per reflector
        self._watches: list[_Count] = []  # one per reflector

    def change(self, key: tuple[str, str], delta: int) -> None:
        with self._lock:
            self._values[key] = self._values.get(key, 0) + delta

    def new_depth_metric(self, name: str) -> provider.GaugeMetric:
        self.change((name, "depth"), 0)
        return _Figure(self, (name, "depth"))

    def new_retries_metric(self, name: str) -> provider.CounterMetric:
        self.change((name, "retries"), 0)
        return _Figure(self, (name, "retries"))

    def new_lists_metric(self, resource: str) -> provider.CounterMetric:
        count = _Count()
        with self._lock:
            self._lists.append(count)
        return count

    def new_watches_metric(self, resource: str) -> provider.CounterMetric:
        count = _Count()
        with self._lock:
            self._watches.append(count)
        return count

    def reflector_counts(self) -> tuple[int, int]:
        """(watch reconnects, relists): every watch and list of a reflector after its first."""
        with self._lock:
            watches, lists = list(self._watches), list(self._lists)
        return (sum(max(0, c.value - 1) for c in watches), sum(max(0, c.value - 1) for c in lists))

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """``{queue name: (depth, retries)}``, sorted by name."""
        with self._lock:
            values = dict(self._values)
        names = sorted({name for name, _ in values})
        return {name: (values.get((name, "depth"), 0), values.get((name, "retries"), 0)) for name in names}
