"""Reflector and informer metrics over FakeAPIServer, read back from a real Prometheus registry.

Lists, watches and errors are counted where they happen; synced and the object count are read
from the informer when the registry is collected, and vanish when the informer stops.
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
    assert value("kinformer_reflector_lists_total") == 2  # counters stay
