"""DelayingQueue: add_after on a fake clock, earlier ready time wins, shutdown."""

from __future__ import annotations

import threading

from helpers import clock_waits

from kinformer import DelayingQueue
from kinformer.testing import FakeClock


def test_an_item_added_after_a_delay_appears_when_the_clock_reaches_it() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(name="test", clock=clock)
    try:
        queue.add_after("x", 2.0)
        assert clock_waits(clock, 2.0)
        clock.step(1.0)
        assert clock_waits(clock, 1.0)
        assert len(queue) == 0
        clock.step(1.0)
        assert queue.get(timeout=5) == ("x", False)
    finally:
        queue.shut_down()


def test_a_shorter_delay_wins_and_the_item_arrives_exactly_once() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        queue.add_after("x", 10.0)
        queue.add_after("x", 1.0)
        queue.add_after("marker", 10.0)  # scheduled after x's stale 10 s entry
        assert clock_waits(clock, 1.0)
        clock.step(1.0)
        assert queue.get(timeout=5) == ("x", False)
        queue.done("x")
        assert clock_waits(clock, 9.0)
        clock.step(9.0)
        assert queue.get(timeout=5) == ("marker", False)
        assert len(queue) == 0  # the 10 s entry for x was not added
    finally:
        queue.shut_down()


def test_a_longer_delay_never_postpones_a_waiting_item() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        queue.add_after("x", 1.0)
        queue.add_after("x", 5.0)
        assert clock_waits(clock, 1.0)
        clock.step(1.0)
        assert queue.get(timeout=5) == ("x", False)
    finally:
        queue.shut_down()


def test_items_become_ready_in_order_of_their_ready_times() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        queue.add_after("late", 3.0)
        queue.add_after("early", 1.0)
        queue.add_after("middle", 2.0)
        assert clock_waits(clock, 1.0)
        clock.step(3.0)
        assert [queue.get(timeout=5)[0] for _ in range(3)] == ["early", "middle", "late"]
    finally:
        queue.shut_down()


def test_a_zero_delay_adds_at_once_without_a_waiting_thread() -> None:
    queue: DelayingQueue[str] = DelayingQueue(name="direct", clock=FakeClock())
    queue.add_after("x", 0)
    assert len(queue) == 1
    assert not any(t.name == "kinformer-workqueue-direct" for t in threading.enumerate())
    queue.shut_down()


def test_shut_down_discards_waiting_items_and_joins_the_waiting_thread() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(name="stopping", clock=clock)
    queue.add_after("x", 1.0)
    assert clock_waits(clock, 1.0)
    assert any(t.name == "kinformer-workqueue-stopping" for t in threading.enumerate())
    queue.shut_down()
    assert not any(t.name == "kinformer-workqueue-stopping" for t in threading.enumerate())
    queue.add_after("y", 1.0)
    queue.add_after("z", 0)  # a zero delay is a plain add, which shutdown ignores too
    clock.step(5.0)
    assert len(queue) == 0
    assert queue.get() == (None, True)


def test_shut_down_with_drain_also_stops_the_waiting_thread() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(name="draining", clock=clock)
    queue.add_after("x", 1.0)
    assert clock_waits(clock, 1.0)
    assert queue.shut_down_with_drain(timeout=5)
    assert not any(t.name == "kinformer-workqueue-draining" for t in threading.enumerate())
