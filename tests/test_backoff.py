"""Backoff: client-go's 0.8 s doubling to 30 s with jitter, and the classic 2-minute reset."""

from __future__ import annotations

import threading

import pytest

from kinformer.backoff import Backoff, BackoffManager
from kinformer.context import Context
from kinformer.testing.clock import FakeClock


def no_jitter() -> float:
    return 0.0


def test_backoff_values_double_up_to_the_cap_without_changing_the_original() -> None:
    first = Backoff()
    steps = [first]
    for _ in range(8):
        steps.append(steps[-1].next())
    assert [s.duration for s in steps] == pytest.approx(
        [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]
    )
    assert first.duration == 0.8


def test_jitter_one_spreads_the_wait_over_d_to_2d() -> None:
    step = Backoff(duration=2.0)
    assert step.delay(lambda: 0.0) == 2.0
    assert step.delay(lambda: 0.5) == 3.0
    assert step.delay(lambda: 0.999) < 4.0


def test_manager_sequence_with_jitter_stubbed_to_zero_matches_client_go() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    delays = []
    for _ in range(9):
        delays.append(manager.next_delay())
        clock.step(1.0)
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])


def test_manager_starts_over_after_more_than_two_minutes_since_the_previous_request() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    for _ in range(4):
        manager.next_delay()
    clock.step(120.0)
    assert manager.next_delay() == pytest.approx(12.8)  # exactly 2 min is not "more than"
    clock.step(120.5)
    assert manager.next_delay() == pytest.approx(0.8)
    assert manager.next_delay() == pytest.approx(1.6)


def test_continuous_failure_stays_at_the_cap() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    for _ in range(10):
        delay = manager.next_delay()
        clock.step(delay)
    for _ in range(10):
        delay = manager.next_delay()
        assert delay == pytest.approx(30.0)
        clock.step(delay)


def test_wait_blocks_for_the_delay_on_the_clock_and_returns_false() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    ctx = Context()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(manager.wait(ctx)))
    waiter.start()
    assert clock.wait_for_waiters(1)
    assert clock.waiters() == pytest.approx([0.8])
    clock.step(0.8)
    waiter.join(5)
    assert result == [False]


def test_wait_returns_true_at_once_when_stopped() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    ctx = Context()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(manager.wait(ctx)))
    waiter.start()
    assert clock.wait_for_waiters(1)
    ctx.cancel()
    waiter.join(5)
    assert result == [True]
    assert manager.wait(ctx) is True


def test_remaining_counts_down_the_wait_in_progress_and_is_none_otherwise() -> None:
    clock = FakeClock()
    manager = BackoffManager(clock=clock, random=no_jitter)
    ctx = Context()
    assert manager.remaining() is None
    waiter = threading.Thread(target=manager.wait, args=(ctx,))
    waiter.start()
    assert clock.wait_for_waiters(1)
    assert manager.remaining() == pytest.approx(0.8)
    clock.step(0.5)
    assert manager.remaining() == pytest.approx(0.3)
    clock.step(0.3)
    waiter.join(5)
    assert manager.remaining() is None
