"""PrometheusMetricsProvider: the metrics provider on ``prometheus_client`` (the ``prometheus`` extra).

Work queue metrics carry controller-runtime's names, help texts and histogram buckets, so
dashboards made for Go controllers work unchanged; reflector, informer and leader election
metrics carry ``kinformer_`` names. Nothing imports this module unless the provider is used:
``import kinformer`` stays free of ``prometheus_client``. :mod:`kinformer.metrics.provider`
holds the protocol; :class:`~kinformer.ProbeServer` serves the registry on ``/metrics``.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from kinformer.metrics import provider

log = logging.getLogger(__name__)

# controller-runtime's: 10 ns to 1000 s in powers of ten, twelve buckets
WORKQUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))


class _CallbackGauges:
    """A collector of one gauge family whose values are read from callbacks at collection.

    Thread-safe. Per label value the most recent live registration is read; a callback that
    raises is logged and its sample left out of that scrape.
    """

    def __init__(self, name: str, documentation: str, label: str) -> None:
        self.name = name
        self._documentation = documentation
        self._label = label
        self._lock = threading.Lock()  # guards _entries
        self._entries: dict[int, tuple[str, Callable[[], float]]] = {}  # insertion order = age
        self._ids = itertools.count()

    def add(self, label_value: str, read: Callable[[], float]) -> _Registration:
        with self._lock:
            token = next(self._ids)
            self._entries[token] = (label_value, read)
        return _Registration(self, token)

    def remove(self, token: int) -> None:
        with self._lock:
            self._entries.pop(token, None)

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(self.name, self._documentation, labels=[self._label])]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            latest = {label_value: read for label_value, read in self._entries.values()}
        family = GaugeMetricFamily(self.name, self._documentation, labels=[self._label])
        for label_value, read in sorted(latest.items()):
            try:
                value = float(read())
            except Exception as exc:
                log.debug("metric %s{%s=%r}: reading failed: %r", self.name, self._label, label_value, exc)
                continue
            family.add_metric([label_value], value)
        yield family


class _Registration:
    """One callback of a :class:`_CallbackGauges`; ``remove()`` is idempotent."""

    __slots__ = ("_gauges", "_token")

    def __init__(self, gauges: _CallbackGauges, token: int) -> None:
        self._gauges = gauges
        self._token = token

    def remove(self) -> None:
        self._gauges.remove(self._token)


class _Series:
    """The labelled series of one metric family, each kept while a component holds it.

    Components of one label value (two informers of one resource, a controller stopping while
    another of its name starts) share its series: counters and histograms add up, and the
    series goes, at the last :meth:`_Held.remove`, so that informers, queues and clusters that
    come and go leave nothing behind. A gauge each component sets (``combine``) shows what its
    live holders set, combined: the sum of their unfinished work, the longest of their running
    processors; set straight through, the holders would overwrite each other at every update.
    Thread-safe.
    """

    def __init__(self, family: Counter | Gauge | Histogram, label: str, give_back: bool = False,
                 combine: Callable[[Iterable[float]], float] | None = None) -> None:
        self._family = family
        self._label = label
        self._give_back = give_back  # an up-down gauge: a holder's net count leaves with it
        self.combine = combine  # a set gauge: what its holders' values show together
        self._lock = threading.Lock()  # guards _holders, each hold's set value and the children
        self._holders: dict[str, dict[_Held, None]] = {}  # label value -> its live holds

    def hold(self, value: str) -> _Held:
        with self._lock:
            child = self._family.labels(**{self._label: value})
            held = _Held(self, value, child)
            self._holders.setdefault(value, {})[held] = None
        return held

    def set(self, held: _Held, value: float) -> None:
        """``held``'s value of a combined gauge; the series shows its holders' together."""
        with self._lock:
            if held.child is None:
                return
            held.set_value = value
            held.child.set(self._combined(held.value))

    def _combined(self, label_value: str) -> float:
        assert self.combine is not None
        return self.combine(held.set_value for held in self._holders[label_value])

    def release(self, held: _Held) -> None:
        with self._lock:
            if held.child is None:
                return
            child, held.child = held.child, None
            holds = self._holders[held.value]
            del holds[held]
            if holds:
                if self._give_back and held.net:
                    child.dec(held.net)
                if self.combine is not None:
                    child.set(self._combined(held.value))
                return
            del self._holders[held.value]
            self._family.remove(held.value)


class _Held:
    """One component's hold on a labelled series: every metric kind's methods, passed on to the
    series until :meth:`remove`, and ignored after it (a late count of a stopped component)."""

    __slots__ = ("child", "net", "series", "set_value", "value")

    def __init__(self, series: _Series, value: str, child: Any) -> None:
        self.series = series
        self.value = value
        self.child: Any = child  # None once removed
        self.net = 0  # inc() less dec() made through this hold (an up-down gauge's share)
        self.set_value = 0.0  # what this hold last set a combined gauge to

    def inc(self) -> None:
        child = self.child
        if child is not None:
            self.net += 1
            child.inc()

    def dec(self) -> None:
        child = self.child
        if child is not None:
            self.net -= 1
            child.dec()

    def set(self, value: float) -> None:
        if self.series.combine is not None:
            self.series.set(self, value)
            return
        child = self.child
        if child is not None:
            child.set(value)

    def observe(self, value: float) -> None:
        child = self.child
        if child is not None:
            child.observe(value)

    def remove(self) -> None:
        """Let go of the series; it goes once no component holds it. Idempotent."""
        self.series.release(self)


class _LeaderSwitch:
    """``kinformer_leader_election_is_leader{name}``: 1 while leading, 0 after."""

    __slots__ = ("_gauge",)

    def __init__(self, gauge: Gauge) -> None:
        self._gauge = gauge

    def on(self, name: str) -> None:
        self._gauge.labels(name=name).set(1)

    def off(self, name: str) -> None:
        self._gauge.labels(name=name).set(0)


class PrometheusMetricsProvider:
    """Exports every kinformer metric into a ``prometheus_client`` registry.

    ``registry`` defaults to ``prometheus_client``'s global ``REGISTRY``. The metric families
    are registered when the provider is made, so one registry takes one provider (a second
    raises ``ValueError`` from ``prometheus_client`` for the duplicated names). Thread-safe.

    Work queues (label ``name``): ``workqueue_depth``, ``workqueue_adds_total``,
    ``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
    ``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds``,
    ``workqueue_retries_total``. Reflectors and informers (label ``resource``):
    ``kinformer_reflector_lists_total``, ``kinformer_reflector_watches_total``,
    ``kinformer_reflector_errors_total``, ``kinformer_informer_synced``,
    ``kinformer_informer_objects``. Leader election (label ``name``):
    ``kinformer_leader_election_is_leader``. Built controllers: ``kinformer_stale_sync_skips_total``
    (label ``controller``) and ``kinformer_store_resource_version`` (label ``informer``).

    A series goes once no live component holds its label value (see :class:`_Series`): an
    informer's when it stops, a work queue's when it shuts down, so informers, queues and member
    clusters that come and go under new names leave nothing behind.

    Example::

        from kinformer import metrics
        metrics.set_provider(metrics.PrometheusMetricsProvider())
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = REGISTRY if registry is None else registry
        reg = self.registry
        self._depth = _Series(
            Gauge("workqueue_depth", "Current depth of workqueue", ["name"], registry=reg),
            "name",
            give_back=True,
        )
        self._adds = _Series(Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"], registry=reg
        ), "name")
        self._latency = _Series(Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=reg,
        ), "name")
        self._work_duration = _Series(Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=reg,
        ), "name")
        self._unfinished = _Series(Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed"
            " by work_duration. Large values indicate stuck threads. One can deduce the number of"
            " stuck threads by observing the rate at which this increases.",
            ["name"],
            registry=reg,
        ), "name", combine=sum)
        self._longest = _Series(Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            ["name"],
            registry=reg,
        ), "name", combine=lambda values: max(values, default=0.0))
        self._retries = _Series(Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"], registry=reg
        ), "name")
        self._lists = _Series(Counter(
            "kinformer_reflector_lists_total",
            "Total number of lists (or watch-list initial syncs) that reached the cache",
            ["resource"],
            registry=reg,
        ), "resource")
        self._watches = _Series(Counter(
            "kinformer_reflector_watches_total", "Total number of watches started", ["resource"], registry=reg
        ), "resource")
        self._errors = _Series(Counter(
            "kinformer_reflector_errors_total",
            "Total number of list and watch errors",
            ["resource"],
            registry=reg,
        ), "resource")
        self._synced = _CallbackGauges(
            "kinformer_informer_synced",
            "1 once the informer's first list reached its cache, else 0",
            "resource",
        )
        self._objects = _CallbackGauges(
            "kinformer_informer_objects", "Objects in the informer's cache", "resource"
        )
        reg.register(self._synced)
        reg.register(self._objects)
        self._stale_skips = _Series(Counter(
            "kinformer_stale_sync_skips_total",
            "Reconciles skipped and requeued because the cache had not seen the controller's last write",
            ["controller"],
            registry=reg,
        ), "controller")
        self._store_rv = _CallbackGauges(
            "kinformer_store_resource_version",
            "The resourceVersion the informer's cache last synced to (NaN when not a number)",
            "informer",
        )
        reg.register(self._store_rv)
        self._leader = Gauge(
            "kinformer_leader_election_is_leader",
            "1 while this process leads the named election, 0 once it stopped leading",
            ["name"],
            registry=reg,
        )

    def new_depth_metric(self, name: str) -> provider.GaugeMetric:
        return self._depth.hold(name)

    def new_adds_metric(self, name: str) -> provider.CounterMetric:
        return self._adds.hold(name)

    def new_latency_metric(self, name: str) -> provider.HistogramMetric:
        return self._latency.hold(name)

    def new_work_duration_metric(self, name: str) -> provider.HistogramMetric:
        return self._work_duration.hold(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> provider.SettableGaugeMetric:
        return self._unfinished.hold(name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> provider.SettableGaugeMetric:
        return self._longest.hold(name)

    def new_retries_metric(self, name: str) -> provider.CounterMetric:
        return self._retries.hold(name)

    def new_lists_metric(self, resource: str) -> provider.CounterMetric:
        return self._lists.hold(resource)

    def new_watches_metric(self, resource: str) -> provider.CounterMetric:
        return self._watches.hold(resource)

    def new_errors_metric(self, resource: str) -> provider.CounterMetric:
        return self._errors.hold(resource)

    def new_synced_metric(self, resource: str, read: Callable[[], float]) -> provider.CallbackGaugeMetric:
        return self._synced.add(resource, read)

    def new_objects_metric(self, resource: str, read: Callable[[], float]) -> provider.CallbackGaugeMetric:
        return self._objects.add(resource, read)

    def new_leader_metric(self) -> provider.SwitchMetric:
        return _LeaderSwitch(self._leader)

    def new_stale_sync_skips_metric(self, controller: str) -> provider.CounterMetric:
        return self._stale_skips.hold(controller)

    def new_store_resource_version_metric(
        self, informer: str, read: Callable[[], float]
    ) -> provider.CallbackGaugeMetric:
        return self._store_rv.add(informer, read)

    def __repr__(self) -> str:
        return f"PrometheusMetricsProvider(registry={self.registry!r})"
