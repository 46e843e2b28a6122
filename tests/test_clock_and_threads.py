"""The fake clock releases waiters only when stepped; spawned threads are named and guarded."""

from __future__ import annotations

import threading

import pytest

from kinformer import _threads
from kinformer.clock import REAL_CLOCK
from kinformer.testing import FakeClock, wait_for


def test_fake_clock_wait_returns_false_only_after_time_is_stepped_past_the_deadline() -> None:
    clock = FakeClock()
    event = threading.Event()
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(clock.wait(event, 10)))
    worker.start()
    assert clock.wait_for_waiters(1)
    clock.step(9.9)
    assert results == []
    clock.step(0.2)
    worker.join(5)
    assert results == [False]


def test_fake_clock_wait_returns_true_when_the_event_is_set() -> None:
    clock = FakeClock()
    event = threading.Event()
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(clock.wait(event, None)))
    worker.start()
    assert clock.wait_for_waiters(1)
    assert clock.waiters() == [float("inf")]
    event.set()
    worker.join(5)
    assert results == [True]
    assert not clock.has_waiters()


def test_real_clock_wait_with_no_time_left_only_reads_the_event() -> None:
    event = threading.Event()
    assert REAL_CLOCK.wait(event, 0) is False
    event.set()
    assert REAL_CLOCK.wait(event, 0) is True


def test_spawn_names_threads_and_logs_crashes(caplog: pytest.LogCaptureFixture) -> None:
    def crash() -> None:
        raise RuntimeError("worker exploded sending Authorization: Bearer crash-t0ken-99")

    thread = _threads.spawn(crash, _threads.thread_name("test", "crash"))
    assert thread.name == "kinformer-test-crash"
    thread.join(5)
    assert "worker exploded sending Authorization: [redacted]" in caplog.text  # in its traceback
    assert "kinformer-test-crash" in caplog.text and "crash-t0ken-99" not in caplog.text


def test_join_all_names_threads_that_do_not_finish(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    thread = _threads.spawn(release.wait, "stuck")
    assert _threads.join_all([thread], timeout=0.05) == ["kinformer-stuck"]
    assert "kinformer-stuck" in caplog.text
    release.set()
    assert _threads.join_all([thread], timeout=5) == []


def test_wait_for_polls_until_true_or_timeout() -> None:
    flag = threading.Event()
    threading.Timer(0.01, flag.set).start()
    assert wait_for(flag.is_set, timeout=5)
    assert not wait_for(lambda: False, timeout=0.02)
