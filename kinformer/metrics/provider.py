"""The metrics provider: where work queues, reflectors, informers and leader electors report.

client-go's ``workqueue.MetricsProvider`` in Python: one process-wide provider hands each
component the metric objects it reports to (gauges, counters, histograms, settable gauges), and
a component asks for them once, when it is created. The default provider is a no-op, and a work
queue created while it is in place skips its bookkeeping altogether. Implementations:
:class:`NoopMetricsProvider` here (subclass it to export only some metrics) and
:class:`~kinformer.metrics.prometheus.PrometheusMetricsProvider` on ``prometheus_client``.
Work queues (:mod:`kinformer.workqueue`), the reflector and the informer are the users;
:mod:`kinformer.metrics.probes` serves what a Prometheus provider collects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class GaugeMetric(Protocol):
    """A value that goes up and down by one (a queue's depth)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A value set outright (seconds of unfinished work)."""

    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    """A count that only grows (adds, retries, lists)."""

    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    """A distribution of observed values (seconds an item waited)."""

    def observe(self, value: float) -> None: ...


class CallbackGaugeMetric(Protocol):
    """A gauge read from a callback when metrics are collected, not updated per event.

    Costs nothing between scrapes. ``remove()`` stops reading the callback (the component
    stopped); the series then disappears, unless another live registration has the same label.
    """

    def remove(self) -> None: ...


class SwitchMetric(Protocol):
    """A per-name on/off value (client-go's leader election ``SwitchMetric``)."""

    def on(self, name: str) -> None: ...

    def off(self, name: str) -> None: ...


class MetricsProvider(Protocol):
    """Makes the metric objects each component reports to.

    Work queue methods take the queue's name (client-go ``workqueue.MetricsProvider``);
    reflector and informer methods take the resource they serve (the informer's name, as
    ``v1/configmaps``). Called when a component is created, from any thread; the metric objects
    returned are used from the component's threads, some under its lock, so they must be
    thread-safe and quick. A metric object may also have ``remove()``: the component calls it
    once when it stops (an informer's reflector, a work queue at shutdown, a built controller)
    and uses the object no more, so a provider can drop the series no live component holds
    (:class:`~kinformer.metrics.prometheus.PrometheusMetricsProvider` does).
    """

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...

    def new_lists_metric(self, resource: str) -> CounterMetric: ...

    def new_watches_metric(self, resource: str) -> CounterMetric: ...

    def new_errors_metric(self, resource: str) -> CounterMetric: ...

    def new_synced_metric(self, resource: str, read: Callable[[], float]) -> CallbackGaugeMetric: ...

    def new_objects_metric(self, resource: str, read: Callable[[], float]) -> CallbackGaugeMetric: ...

    def new_leader_metric(self) -> SwitchMetric: ...

    def new_stale_sync_skips_metric(self, controller: str) -> CounterMetric: ...

    def new_store_resource_version_metric(
        self, informer: str, read: Callable[[], float]) -> CallbackGaugeMetric: ...


class _Noop:
    """Every metric kind at once, doing nothing."""

    __slots__ = ()

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass

    def remove(self) -> None:
        pass

    def on(self, name: str) -> None:
        pass

    def off(self, name: str) -> None:
        pass


NOOP_METRIC = _Noop()


class NoopMetricsProvider:
    """The default provider: every metric it hands out does nothing.

    Subclass it to export only some metrics. Installing this class itself (not a subclass)
    with :func:`set_provider` is the same as the default: work queues then keep no books.
    """

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return NOOP_METRIC

    def new_lists_metric(self, resource: str) -> CounterMetric:
        return NOOP_METRIC

    def new_watches_metric(self, resource: str) -> CounterMetric:
        return NOOP_METRIC

    def new_errors_metric(self, resource: str) -> CounterMetric:
        return NOOP_METRIC

    def new_synced_metric(self, resource: str, read: Callable[[], float]) -> CallbackGaugeMetric:
        return NOOP_METRIC

    def new_objects_metric(self, resource: str, read: Callable[[], float]) -> CallbackGaugeMetric:
        return NOOP_METRIC

    def new_leader_metric(self) -> SwitchMetric:
        return NOOP_METRIC

    def new_stale_sync_skips_metric(self, controller: str) -> CounterMetric:
        return NOOP_METRIC

    def new_store_resource_version_metric(
        self, informer: str, read: Callable[[], float]) -> CallbackGaugeMetric:
        return NOOP_METRIC

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_NOOP = NoopMetricsProvider()
_lock = threading.Lock()  # guards _provider
_provider: MetricsProvider | None = None  # None: the no-op default


def set_provider(provider: MetricsProvider | None) -> None:
    """Make ``provider`` the process-wide metrics provider (None: back to the no-op default).

    Work queues, reflectors and leader electors created afterwards, and informers started
    afterwards, report to it; those created before keep the provider they were created with
    (client-go's ``SetProvider`` takes effect only for queues made after it, too). Thread-safe.
    """
    global _provider
    with _lock:
        _provider = None if provider is None or type(provider) is NoopMetricsProvider else provider


def get_provider() -> MetricsProvider:
    """The process-wide provider; a :class:`NoopMetricsProvider` unless one was set."""
    current = _provider
    return _NOOP if current is None else current


def active_provider() -> MetricsProvider | None:
    """The provider set with :func:`set_provider`, or None while the no-op default is in place.

    Components with per-event bookkeeping (work queues) skip it entirely on None.
    """
    return _provider


def leader_metric() -> SwitchMetric:
    """The switch a leader elector reports its status to, from the current provider.

    A leader elector asks for it once when created and calls ``on(name)`` when it starts
    leading and ``off(name)`` when it stops; under Prometheus that is
    ``kinformer_leader_election_is_leader{name=...}`` at 1 or 0.
    """
    return get_provider().new_leader_metric()


def stale_sync_skips_metric(controller: str) -> CounterMetric:
    """The counter of reconciles a controller skipped because its cache had not yet seen its
    own last write (``stale_sync_skips_total{controller}``); a provider made before it existed
    (without ``new_stale_sync_skips_metric``) gets a no-op."""
    make = getattr(get_provider(), "new_stale_sync_skips_metric", None)
    return NOOP_METRIC if make is None else make(controller)


def store_resource_version_gauge(informer: str, read: Callable[[], float]) -> CallbackGaugeMetric:
    """Register the gauge of the resourceVersion an informer's cache last synced to
    (``store_resource_version{informer}``), read when collected; ``remove()`` takes it away."""
    make = getattr(get_provider(), "new_store_resource_version_metric", None)
    return NOOP_METRIC if make is None else make(informer, read)


def release(*metrics: object) -> None:
    """Call ``remove()`` on each of ``metrics`` that has one: their component stopped.

    A provider's metric objects need not have it (the protocols above ask only for what a
    component reports); those without are left alone.
    """
    for metric in metrics:
        remove = getattr(metric, "remove", None)
        if remove is not None:
            remove()


class ReflectorMetrics:
    """The counters one reflector reports to: lists, watches started, and errors."""

    __slots__ = ("errors", "lists", "watches")

    def __init__(self, resource: str) -> None:
        current = get_provider()
        self.lists = current.new_lists_metric(resource)
        self.watches = current.new_watches_metric(resource)
        self.errors = current.new_errors_metric(resource)

    def remove(self) -> None:
        """Let go of the three counters (the reflector stopped); idempotent."""
        release(self.lists, self.watches, self.errors)


class _Both:
    """Removes two callback gauges at once."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: CallbackGaugeMetric, second: CallbackGaugeMetric) -> None:
        self._first = first
        self._second = second

    def remove(self) -> None:
        self._first.remove()
        self._second.remove()


def informer_gauges(
    resource: str, has_synced: Callable[[], bool], count: Callable[[], int]
) -> CallbackGaugeMetric:
    """Register a running informer's synced and object-count gauges, read when collected.

    ``remove()`` on the result takes both away (the informer stopped).
    """
    current = get_provider()
    return _Both(
        current.new_synced_metric(resource, lambda: 1.0 if has_synced() else 0.0),
        current.new_objects_metric(resource, lambda: float(count())),
    )
