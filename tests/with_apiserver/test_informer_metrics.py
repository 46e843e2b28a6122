"""Reflector and informer metrics over FakeAPIServer, read back from a real Prometheus registry.

Lists, watches and errors are counted where they happen; synced and the object count are read
from the informer when the registry is collected; every series of an informer vanishes when the
last informer of its name stops.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, create_cm, metric_value, running

from kinformer import ListWatch, SharedIndexInformer
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

NAME = "metrics-configmaps"


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_an_informer_reports_lists_watches_errors_synced_and_objects(
    prometheus: Any, apiserver: FakeAPIServer, api_client: Any, profile: str
) -> None:
    for i in range(3):
        create_cm(api_client, f"cm{i}")
    clock = FakeClock()  # the reflector's backoff waits on it: stepped below, never slept
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
        name=NAME,
        clock=clock,
        profile=profile,
    )

    def value(metric: str) -> float | None:
        return metric_value(prometheus, metric, resource=NAME)

    assert value("kinformer_informer_synced") is None  # not running: no series
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        assert value("kinformer_reflector_lists_total") == 1
        # the server counts the watcher when the request arrives, the reflector its watch once
        # the answer's headers are read: wait for that side too
        assert wait_for(lambda: value("kinformer_reflector_watches_total") == 1, TIMEOUT)
        assert value("kinformer_reflector_errors_total") == 0
        assert value("kinformer_informer_synced") == 1
        assert value("kinformer_informer_objects") == 3

        create_cm(api_client, "cm3")
        assert wait_for(lambda: value("kinformer_informer_objects") == 4, TIMEOUT)

        # the next watch start fails: one error, then a relist and a new watch
        apiserver.fail_next(1, 500, verb="watch")
        apiserver.end_watches()

        def relisted() -> bool:
            clock.step(60)  # past any backoff
            return value("kinformer_reflector_lists_total") == 2

        assert wait_for(relisted, TIMEOUT)
        apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        assert value("kinformer_reflector_errors_total") == 1
        assert wait_for(lambda: value("kinformer_reflector_watches_total") == 2, TIMEOUT)
        assert value("kinformer_informer_objects") == 4
    assert value("kinformer_informer_synced") is None
    assert value("kinformer_informer_objects") is None
    assert value("kinformer_reflector_lists_total") is None  # the counters go with their informer


def series(registry: Any, prefix: str) -> int:
    """How many samples of the families named ``prefix...`` the registry holds now."""
    return sum(len(family.samples) for family in registry.collect() if family.name.startswith(prefix))


def test_informers_started_and_stopped_in_a_loop_leave_no_series_behind(
    prometheus: Any, api_client: Any
) -> None:
    """Informers named anew each time (a CRD, a member cluster, a logical cluster that comes and
    goes) must not grow the registry for good."""
    create_cm(api_client, "cm0")
    for i in range(20):
        informer = SharedIndexInformer(
            ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name=f"{NAME}-{i}")
        with running(informer.run):
            assert wait_for(lambda i=i: metric_value(  # type: ignore[misc]
                prometheus, "kinformer_reflector_lists_total", resource=f"{NAME}-{i}") == 1, TIMEOUT)
    assert series(prometheus, "kinformer_") == 0


def test_one_of_two_informers_of_a_name_stopping_leaves_the_other_its_series(
    prometheus: Any, api_client: Any
) -> None:
    """Two factories in one process each run ``v1/configmaps``: the one that stops first does
    not take the counters of the one still running away (nor reset them)."""
    create_cm(api_client, "cm0")

    def make() -> SharedIndexInformer:
        return SharedIndexInformer(
            ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name=NAME)

    first, second = make(), make()
    with running(second.run):
        with running(first.run):
            assert first.wait_for_sync(TIMEOUT) and second.wait_for_sync(TIMEOUT)
            assert wait_for(lambda: metric_value(
                prometheus, "kinformer_reflector_lists_total", resource=NAME) == 2, TIMEOUT)
        assert metric_value(prometheus, "kinformer_reflector_lists_total", resource=NAME) == 2
        assert metric_value(prometheus, "kinformer_informer_synced", resource=NAME) == 1
        assert metric_value(prometheus, "kinformer_informer_objects", resource=NAME) == 1
    assert series(prometheus, "kinformer_") == 0
