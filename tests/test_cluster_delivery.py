"""HandlerDelivery: one thread per handler of a multi-cluster informer, engagements and their end."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import TIMEOUT, cm

from kinformer import ClusterEventHandler, ResourceEventHandlerDetailedFuncs, ResourceEventHandlerFuncs
from kinformer.clusters.delivery import Engagement, HandlerDelivery
from kinformer.testing import wait_for


class Calls(ClusterEventHandler):
    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.gate = gate
        self.entered = threading.Event()

    def on_add(self, cluster: str, obj: Any) -> None:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(TIMEOUT)
        if obj["metadata"]["name"] == "boom":
            raise RuntimeError("handler failed")
        self.calls.append(("add", cluster, obj["metadata"]["name"]))

    def on_disengaged(self, cluster: str) -> None:
        self.calls.append(("disengaged", cluster))


@pytest.fixture
def gate() -> threading.Event:
    return threading.Event()


@pytest.fixture
def delivery(gate: threading.Event) -> Iterator[HandlerDelivery]:
    made = HandlerDelivery(Calls(gate), "v1/configmaps")
    yield made
    gate.set()
    made.close()
    if made.thread is not None:
        made.thread.join(TIMEOUT)


def calls(delivery: HandlerDelivery) -> list[tuple[str, ...]]:
    handler: Calls = delivery.handler
    return handler.calls


def test_notifications_of_an_engagement_that_ended_are_dropped_and_disengaged_comes_last(
    delivery: HandlerDelivery, gate: threading.Event,
) -> None:
    one, two = Engagement("one"), Engagement("two")
    forward_one, forward_two = delivery.forwarder(one), delivery.forwarder(two)
    delivery.start()
    forward_one.on_add(cm("first"), True)
    assert delivery.handler.entered.wait(TIMEOUT)  # "first" is being delivered
    for name in ("a", "b"):
        forward_one.on_add(cm(name), True)
        forward_two.on_add(cm(name), True)
    assert delivery.pending_initial() == 5
    one.active = False
    delivery.disengaged(one)
    forward_one.on_add(cm("late"), False)  # a push racing the disengage: dropped
    assert delivery.pending_initial() == 3
    gate.set()
    assert wait_for(lambda: len(calls(delivery)) == 4)
    assert calls(delivery) == [("add", "one", "first"), ("add", "two", "a"), ("add", "two", "b"),
                               ("disengaged", "one")]
    assert wait_for(lambda: delivery.pending_initial() == 0)


def test_a_failing_callback_is_logged_and_the_next_delivered(
    delivery: HandlerDelivery, gate: threading.Event, caplog: pytest.LogCaptureFixture,
) -> None:
    gate.set()
    engagement = Engagement("one")
    forward = delivery.forwarder(engagement)
    delivery.start()
    with caplog.at_level(logging.ERROR, logger="kinformer.clusters.delivery"):
        forward.on_add(cm("boom"), True)
        forward.on_add(cm("fine"), True)
        assert wait_for(lambda: calls(delivery) == [("add", "one", "fine")])
    # which member's notification failed: one handler hears every member
    assert "failed on add of cluster one; notification skipped" in caplog.text
    assert wait_for(lambda: delivery.pending_initial() == 0)


def test_a_plain_handler_gets_the_plain_calls_and_no_disengaged(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []
    delivery = HandlerDelivery(ResourceEventHandlerFuncs(
        add_func=lambda o: seen.append(("add", o["metadata"]["name"])),
        delete_func=lambda o: seen.append(("delete", o["metadata"]["name"]))), "v1/configmaps")
    engagement = Engagement("one")
    forward = delivery.forwarder(engagement)
    delivery.start()
    try:
        forward.on_add(cm("a"), False)
        forward.on_delete(cm("a"))
        assert wait_for(lambda: len(seen) == 2)
        engagement.active = False
        delivery.disengaged(engagement)
        assert delivery.pending_initial() == 0
    finally:
        delivery.close()
        assert delivery.thread is not None
        delivery.thread.join(TIMEOUT)
    assert seen == [("add", "a"), ("delete", "a")]
    assert "failed" not in caplog.text  # nothing called a missing on_disengaged


def test_close_drops_the_buffer_and_ends_the_thread(delivery: HandlerDelivery, gate: threading.Event) -> None:
    forward = delivery.forwarder(Engagement("one"))
    delivery.start()
    for name in ("a", "b", "c"):
        forward.on_add(cm(name), False)
    assert delivery.handler.entered.wait(TIMEOUT)
    delivery.close()
    gate.set()
    assert delivery.thread is not None
    delivery.thread.join(TIMEOUT)
    assert not delivery.thread.is_alive()
    assert calls(delivery) == [("add", "one", "a")]
    forward.on_add(cm("d"), False)
    delivery.start()  # closed: starts nothing
    assert calls(delivery) == [("add", "one", "a")]


class PerCluster:
    """A PerClusterHandler: each cluster's handler records its cluster and the plain arguments."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.made: list[str] = []

    def for_cluster(self, cluster: str) -> ResourceEventHandlerDetailedFuncs:
        self.made.append(cluster)
        return ResourceEventHandlerDetailedFuncs(
            add_func=lambda o, initial: self.seen.append(("add", cluster, o["metadata"]["name"], initial)),
            delete_func=lambda o: self.seen.append(("delete", cluster, o["metadata"]["name"])))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        raise AssertionError("a per-cluster handler is called through the handler it made")

    def on_update(self, old: Any, new: Any) -> None:
        raise AssertionError("a per-cluster handler is called through the handler it made")

    def on_delete(self, obj: Any) -> None:
        raise AssertionError("a per-cluster handler is called through the handler it made")


def test_a_per_cluster_handler_makes_one_handler_per_engagement_called_as_usual() -> None:
    handler = PerCluster()
    delivery = HandlerDelivery(handler, "v1/configmaps")
    to_one, to_two = delivery.forwarder(Engagement("one")), delivery.forwarder(Engagement("two"))
    assert handler.made == ["one", "two"]
    delivery.start()
    try:
        to_one.on_add(cm("a"), True)
        to_two.on_add(cm("a"), False)
        to_two.on_delete(cm("a"))
        assert wait_for(lambda: len(handler.seen) == 3)
        assert wait_for(lambda: delivery.pending_initial() == 0)
    finally:
        delivery.close()
        assert delivery.thread is not None
        delivery.thread.join(TIMEOUT)
    assert handler.seen == [("add", "one", "a", True), ("add", "two", "a", False), ("delete", "two", "a")]
