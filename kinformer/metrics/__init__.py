"""Metrics and probes: what a controller in a cluster shows to Prometheus and the kubelet.

:mod:`kinformer.metrics.provider` holds the provider protocol (client-go's
``workqueue.MetricsProvider``, plus reflector, informer and leader election metrics), the
no-op default and :func:`set_provider`; work queues, reflectors and informers report through
it. :class:`PrometheusMetricsProvider` (the ``prometheus`` extra) exports everything under
controller-runtime's names and is imported only when first used, so ``import kinformer`` never
loads ``prometheus_client``. :class:`~kinformer.ProbeServer` serves ``/healthz``, ``/readyz``
and ``/metrics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kinformer.metrics.probes import ProbeServer, informers_synced_check, leader_election_check
from kinformer.metrics.provider import (
    CallbackGaugeMetric,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricsProvider,
    NoopMetricsProvider,
    SettableGaugeMetric,
    SwitchMetric,
    active_provider,
    get_provider,
    leader_metric,
    set_provider,
)

if TYPE_CHECKING:
    from kinformer.metrics.prometheus import PrometheusMetricsProvider

__all__ = [
    "CallbackGaugeMetric",
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "ProbeServer",
    "PrometheusMetricsProvider",
    "SettableGaugeMetric",
    "SwitchMetric",
    "active_provider",
    "get_provider",
    "informers_synced_check",
    "leader_election_check",
    "leader_metric",
    "set_provider",
]


def __getattr__(name: str) -> Any:
    if name == "PrometheusMetricsProvider":  # imports prometheus_client: only on first use
        from kinformer.metrics.prometheus import PrometheusMetricsProvider

        return PrometheusMetricsProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
