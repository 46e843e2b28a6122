"""Metrics of work queues and the provider's gauges, read back from a real Prometheus registry.

Queues run on a FakeClock, so waits and work durations are exact; the periodic unfinished-work
update is driven by stepping that clock.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from helpers import TIMEOUT, metric_value, step_when_waiting

from kinformer import NoopMetricsProvider, RateLimitingQueue, WorkQueue, _threads, metrics
from kinformer.metrics import provider as provider_module
from kinformer.testing import FakeClock, wait_for


def updater_threads() -> list[str]:
    return [t.name for t in _threads.kinformer_threads() if t.name.startswith("kinformer-workqueue-metrics")]


def test_queue_reports_depth_adds_and_waits_as_client_go_does(prometheus: Any) -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(name="q", clock=clock)
    queue.add("a")
    queue.add("b")
    queue.add("a")  # already queued: not an add
    assert metric_value(prometheus, "workqueue_adds_total", name="q") == 2
    assert metric_value(prometheus, "workqueue_depth", name="q") == 2

    clock.step(2)
    assert queue.get() == ("a", False)
    assert metric_value(prometheus, "workqueue_depth", name="q") == 1
    assert metric_value(prometheus, "workqueue_queue_duration_seconds_count", name="q") == 1
    assert metric_value(prometheus, "workqueue_queue_duration_seconds_sum", name="q") == 2

    queue.add("a")  # added again while processed: counted, handed out after done
    assert metric_value(prometheus, "workqueue_adds_total", name="q") == 3
    assert metric_value(prometheus, "workqueue_depth", name="q") == 2
    clock.step(3)
    queue.done("a")
    assert metric_value(prometheus, "workqueue_work_duration_seconds_count", name="q") == 1
    assert metric_value(prometheus, "workqueue_work_duration_seconds_sum", name="q") == 3

    assert queue.get() == ("b", False)  # waited 5 s
    assert queue.get() == ("a", False)  # waited 3 s since it was added again
    assert metric_value(prometheus, "workqueue_depth", name="q") == 0
    assert metric_value(prometheus, "workqueue_queue_duration_seconds_sum", name="q") == 2 + 5 + 3
    assert metric_value(prometheus, "workqueue_queue_duration_seconds_bucket", name="q", le="1.0") == 0
    assert metric_value(prometheus, "workqueue_queue_duration_seconds_bucket", name="q", le="10.0") == 3
    queue.shut_down()


def test_unfinished_work_is_updated_periodically_until_shutdown(prometheus: Any) -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(name="slow", clock=clock)
    queue.add("a")
    queue.add("b")
    queue.get()
    assert updater_threads() == ["kinformer-workqueue-metrics-slow"]

    def unfinished() -> float | None:
        return metric_value(prometheus, "workqueue_unfinished_work_seconds", name="slow")

    step_when_waiting(clock, 0.5)
    assert wait_for(lambda: unfinished() == 0.5, TIMEOUT)
    queue.get()
    step_when_waiting(clock, 0.5)
    assert wait_for(lambda: unfinished() == 1.5, TIMEOUT)
    assert metric_value(prometheus, "workqueue_longest_running_processor_seconds", name="slow") == 1.0
    queue.shut_down()
    assert updater_threads() == []


def test_the_updater_also_stops_on_shutdown_with_drain(prometheus: Any) -> None:
    queue: WorkQueue[str] = WorkQueue(name="drained", clock=FakeClock())
    queue.add("a")
    queue.get()
    assert updater_threads() == ["kinformer-workqueue-metrics-drained"]
    queue.done("a")
    assert queue.shut_down_with_drain(TIMEOUT)
    assert updater_threads() == []


def test_every_delayed_add_counts_as_a_retry(prometheus: Any) -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="ctrl", clock=FakeClock())
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    queue.add_after("b", 0)
    queue.add("c")  # a plain add is no retry
    assert metric_value(prometheus, "workqueue_retries_total", name="ctrl") == 3
    queue.shut_down()  # takes the queue's series away
    queue.add_rate_limited("a")  # ignored after shutdown: the series does not come back
    assert metric_value(prometheus, "workqueue_retries_total", name="ctrl") is None


def test_unnamed_queues_and_queues_made_before_the_provider_keep_no_metrics() -> None:
    client = pytest.importorskip("prometheus_client")
    early: WorkQueue[str] = WorkQueue(name="early")
    registry = client.CollectorRegistry()
    metrics.set_provider(metrics.PrometheusMetricsProvider(registry))
    try:
        unnamed: WorkQueue[str] = WorkQueue()
        for queue in (early, unnamed):
            queue.add("a")
            queue.get()
            queue.done("a")
        assert updater_threads() == []
        assert metric_value(registry, "workqueue_adds_total", name="early") is None
        assert metric_value(registry, "workqueue_adds_total", name="") is None
        early.shut_down()
        unnamed.shut_down()
    finally:
        metrics.set_provider(None)


def test_with_no_provider_a_named_queue_starts_no_thread() -> None:
    queue: WorkQueue[str] = WorkQueue(name="quiet")
    queue.add("a")
    queue.get()
    assert updater_threads() == []
    queue.shut_down()


def test_the_no_op_provider_is_the_default_and_setting_it_restores_the_default() -> None:
    assert metrics.active_provider() is None
    assert isinstance(metrics.get_provider(), NoopMetricsProvider)

    class Partial(NoopMetricsProvider):
        pass

    try:
        metrics.set_provider(Partial())
        assert isinstance(metrics.active_provider(), Partial)
        metrics.set_provider(NoopMetricsProvider())
        assert metrics.active_provider() is None
    finally:
        metrics.set_provider(None)


def test_informer_gauges_are_read_at_collection_and_vanish_when_removed(prometheus: Any) -> None:
    state = {"synced": False, "objects": 3}
    gauges = provider_module.informer_gauges(
        "v1/things", lambda: bool(state["synced"]), lambda: int(state["objects"])
    )
    assert metric_value(prometheus, "kinformer_informer_synced", resource="v1/things") == 0
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/things") == 3
    state.update(synced=True, objects=5)
    assert metric_value(prometheus, "kinformer_informer_synced", resource="v1/things") == 1
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/things") == 5
    gauges.remove()
    gauges.remove()  # idempotent
    assert metric_value(prometheus, "kinformer_informer_synced", resource="v1/things") is None
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/things") is None


def test_a_failing_gauge_callback_leaves_out_only_its_sample(prometheus: Any) -> None:
    def broken() -> float:
        raise RuntimeError("cache gone")

    provider = metrics.get_provider()
    bad = provider.new_objects_metric("v1/bad", broken)
    good = provider.new_objects_metric("v1/good", lambda: 7)
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/bad") is None
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/good") == 7
    bad.remove()
    good.remove()


def test_the_latest_registration_of_a_resource_is_the_one_reported(prometheus: Any) -> None:
    provider = metrics.get_provider()
    first = provider.new_objects_metric("v1/pods", lambda: 1)
    second = provider.new_objects_metric("v1/pods", lambda: 2)
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/pods") == 2
    second.remove()
    assert metric_value(prometheus, "kinformer_informer_objects", resource="v1/pods") == 1
    first.remove()


def test_the_leader_switch_sets_is_leader_per_name(prometheus: Any) -> None:
    switch = metrics.leader_metric()
    switch.on("kube-system/lock")
    assert metric_value(prometheus, "kinformer_leader_election_is_leader", name="kube-system/lock") == 1
    switch.off("kube-system/lock")
    assert metric_value(prometheus, "kinformer_leader_election_is_leader", name="kube-system/lock") == 0


def test_a_registry_takes_one_provider(prometheus: Any) -> None:
    with pytest.raises(ValueError):
        metrics.PrometheusMetricsProvider(prometheus)


def test_importing_kinformer_and_its_metrics_never_imports_prometheus_client() -> None:
    code = "import sys, kinformer, kinformer.metrics; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def series(registry: Any, prefix: str) -> int:
    """How many samples of the families named ``prefix...`` the registry holds now."""
    return sum(len(family.samples) for family in registry.collect() if family.name.startswith(prefix))


def test_queues_made_and_shut_down_in_a_loop_leave_no_series_behind(prometheus: Any) -> None:
    """A controller that comes and goes under a new name each time (one per CRD, per tenant)
    must not grow the registry for good: its queue's series go when the queue shuts down."""
    for i in range(50):
        queue: RateLimitingQueue[str] = RateLimitingQueue(name=f"tenant-{i}", clock=FakeClock())
        queue.add("a")
        queue.add_rate_limited("b")
        assert queue.get() == ("a", False)
        queue.done("a")
        assert metric_value(prometheus, "workqueue_adds_total", name=f"tenant-{i}") == 1
        if i % 2:
            queue.shut_down()
        else:
            assert queue.shut_down_with_drain(TIMEOUT)
    assert series(prometheus, "workqueue_") == 0


def test_a_queue_shut_down_with_items_leaves_its_namesake_only_its_own_depth(prometheus: Any) -> None:
    """Two queues of one name (a controller stopped while a new one of its name starts): the
    stopped one's items, never to be handed out, no longer count in the shared depth, and its
    shutdown does not take the live one's series away."""
    old: WorkQueue[str] = WorkQueue(name="ctrl", clock=FakeClock())
    new: WorkQueue[str] = WorkQueue(name="ctrl", clock=FakeClock())
    old.add("a")
    old.add("b")
    new.add("c")
    assert metric_value(prometheus, "workqueue_depth", name="ctrl") == 3
    old.shut_down()
    assert metric_value(prometheus, "workqueue_depth", name="ctrl") == 1
    assert metric_value(prometheus, "workqueue_adds_total", name="ctrl") == 3  # a counter never goes back
    assert new.get() == ("c", False)
    assert metric_value(prometheus, "workqueue_depth", name="ctrl") == 0
    assert old.get() == ("a", False)  # still handed out after shutdown: its depth is not counted twice
    assert metric_value(prometheus, "workqueue_depth", name="ctrl") == 0
    new.done("c")
    new.shut_down()
    assert metric_value(prometheus, "workqueue_depth", name="ctrl") is None


def test_queues_of_one_name_show_their_unfinished_work_together(prometheus: Any) -> None:
    """Two queues of one name (a controller stopping while another of its name starts): the
    unfinished work gauge sums both queues' work in progress and the longest running processor
    is the longer of the two, where each queue's updater would overwrite the other's."""
    old_clock, new_clock = FakeClock(), FakeClock()
    old: WorkQueue[str] = WorkQueue(name="ctrl", clock=old_clock)
    new: WorkQueue[str] = WorkQueue(name="ctrl", clock=new_clock)

    def gauges() -> tuple[float | None, float | None]:
        return (metric_value(prometheus, "workqueue_unfinished_work_seconds", name="ctrl"),
                metric_value(prometheus, "workqueue_longest_running_processor_seconds", name="ctrl"))

    old.add("a")
    assert old.get() == ("a", False)
    new.add("b")
    assert new.get() == ("b", False)
    step_when_waiting(old_clock, 3.0)
    assert wait_for(lambda: gauges() == (3.0, 3.0), TIMEOUT), gauges()
    step_when_waiting(new_clock, 0.5)  # the new queue's updater sets its own 0.5 s
    assert wait_for(lambda: gauges() == (3.5, 3.0), TIMEOUT), gauges()
    old.shut_down()  # what the old queue had in progress leaves the series with it
    assert gauges() == (0.5, 0.5)
    new.shut_down()
    assert gauges() == (None, None)


def test_a_series_held_by_two_components_stays_until_both_let_go(prometheus: Any) -> None:
    one = provider_module.ReflectorMetrics("v1/pods")
    two = provider_module.ReflectorMetrics("v1/pods")
    one.lists.inc()
    two.lists.inc()
    assert metric_value(prometheus, "kinformer_reflector_lists_total", resource="v1/pods") == 2
    one.remove()
    one.remove()  # idempotent
    one.lists.inc()  # a late count of a component that let go is dropped
    assert metric_value(prometheus, "kinformer_reflector_lists_total", resource="v1/pods") == 2
    two.remove()
    assert metric_value(prometheus, "kinformer_reflector_lists_total", resource="v1/pods") is None
    assert series(prometheus, "kinformer_reflector_") == 0
