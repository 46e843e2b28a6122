"""The demo's metrics provider: each work queue's depth and retries, kept in memory for the display.

A :class:`~kinformer.metrics.NoopMetricsProvider` that keeps only the two figures the display
shows, so the demo needs no Prometheus; :mod:`kinformer.cli.demo.app` sets it before creating
its controllers and :mod:`kinformer.cli.demo.display` shows :meth:`QueueFigures.snapshot`.
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


class QueueFigures(provider.NoopMetricsProvider):
    """Depth and retries of every named work queue created while it is the provider.

    Thread-safe; the queues call it under their own locks, so it only adds to a dict.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _values
        self._values: dict[tuple[str, str], int] = {}  # (queue name, "depth" | "retries") -> value

    def change(self, key: tuple[str, str], delta: int) -> None:
        with self._lock:
            self._values[key] = self._values.get(key, 0) + delta

    def new_depth_metric(self, name: str) -> provider.GaugeMetric:
        self.change((name, "depth"), 0)
        return _Figure(self, (name, "depth"))

    def new_retries_metric(self, name: str) -> provider.CounterMetric:
        self.change((name, "retries"), 0)
        return _Figure(self, (name, "retries"))

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """``{queue name: (depth, retries)}``, sorted by name."""
        with self._lock:
            values = dict(self._values)
        names = sorted({name for name, _ in values})
        return {name: (values.get((name, "depth"), 0), values.get((name, "retries"), 0)) for name in names}
