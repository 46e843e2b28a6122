"""Controller: the canonical worker loop with success, failure, terminal errors and requeue_after."""

from __future__ import annotations

import queue as stdlib_queue
import threading
from collections.abc import Callable, Iterator

import pytest
from helpers import Background, clock_waits

from kinformer import errors
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.managers.controller import Controller, Result
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for
from kinformer.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

TIMEOUT = 5.0


class Reconciles:
    """A reconciler whose outcome per call is scripted; each call is reported on ``calls``."""

    def __init__(self, *outcomes: Callable[[str], Result | None]) -> None:
        self.outcomes = list(outcomes)
        self.calls: stdlib_queue.Queue[str] = stdlib_queue.Queue()

    def reconcile(self, key: str) -> Result | None:
        outcome = self.outcomes.pop(0) if self.outcomes else succeed
        try:
            return outcome(key)
        finally:
            self.calls.put(key)

    def next_call(self) -> str:
        return self.calls.get(timeout=TIMEOUT)


def succeed(key: str) -> None:
    return None


def fail(key: str) -> None:
    raise RuntimeError(f"cannot reconcile {key}")


def give_up(key: str) -> None:
    raise errors.TerminalError(f"{key} is invalid")


def requeue_after(seconds: float) -> Callable[[str], Result]:
    return lambda key: Result(requeue_after=seconds)


class Running(Background):
    """A controller on a fake clock, run on a thread for the duration of a test."""

    def __init__(self, reconciler: Reconciles, workers: int = 1) -> None:
        self.clock = FakeClock()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            ItemExponentialFailureRateLimiter(1.0, 60.0), self.clock, name="test"
        )
        self.controller = Controller("test", reconciler, queue=self.queue, workers=workers)
        super().__init__(self.controller.run)


@pytest.fixture
def recorder() -> Reconciles:
    return Reconciles()


@pytest.fixture
def running(recorder: Reconciles) -> Iterator[Running]:
    running = Running(recorder)
    yield running
    running.stop()


def test_a_successful_reconcile_forgets_the_key(running: Running, recorder: Reconciles) -> None:
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert running.queue.num_requeues("default/a") == 0


def test_a_failed_reconcile_is_retried_with_backoff(running: Running, recorder: Reconciles) -> None:
    recorder.outcomes = [fail, fail]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 1.0)
    assert running.queue.num_requeues("default/a") == 1
    running.clock.step(1.0)
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 2.0)  # second failure: now waits 2 s
    assert running.queue.num_requeues("default/a") == 2
    running.clock.step(2.0)
    assert recorder.next_call() == "default/a"
    assert wait_for(lambda: running.queue.num_requeues("default/a") == 0)  # the third call succeeded


def test_a_terminal_error_is_not_retried(running: Running, recorder: Reconciles) -> None:
    recorder.outcomes = [give_up]
    running.controller.enqueue("default/bad")
    running.controller.enqueue("default/b")
    assert recorder.next_call() == "default/bad"
    assert recorder.next_call() == "default/b"  # one worker: bad was fully handled before b
    assert running.queue.num_requeues("default/bad") == 0
    assert not running.clock.has_waiters()  # nothing scheduled for a retry


def test_requeue_after_reconciles_the_key_again_after_the_delay(
    running: Running, recorder: Reconciles
) -> None:
    recorder.outcomes = [requeue_after(30.0)]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 30.0)
    running.clock.step(30.0)
    assert recorder.next_call() == "default/a"


def test_each_key_is_reconciled_once_per_add_across_workers() -> None:
    recorder = Reconciles()
    running = Running(recorder, workers=3)
    try:
        keys = [f"default/{i}" for i in range(30)]
        for key in keys:
            running.controller.enqueue(key)
        assert sorted(recorder.next_call() for _ in keys) == sorted(keys)
    finally:
        running.stop()
    assert recorder.calls.empty()


def test_workers_are_named_after_the_controller_and_joined_on_stop(running: Running) -> None:
    def worker_running() -> bool:  # run() spawns its workers on the controller's own thread
        return "kinformer-controller-test-0" in {t.name for t in threading.enumerate()}

    assert wait_for(worker_running, TIMEOUT)
    running.stop()
    names = {t.name for t in threading.enumerate()}
    assert "kinformer-controller-test-0" not in names
    assert running.queue.shutting_down()


def test_a_controller_runs_only_once(running: Running) -> None:
    running.stop()
    with pytest.raises(errors.AlreadyStartedError):
        running.controller.run(running.signal)


def test_the_event_handler_enqueues_object_keys() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    handler = Controller("keys", Reconciles(), queue=queue).event_handler()
    pod = {"metadata": {"namespace": "default", "name": "a"}}
    handler.on_add(pod, True)
    handler.on_update(pod, {"metadata": {"namespace": "default", "name": "b"}})
    handler.on_delete(DeletedFinalStateUnknown("default/c", pod))
    handler.on_add({"kind": "NoMetadata"}, False)
    assert [queue.get()[0] for _ in range(3)] == ["default/a", "default/b", "default/c"]
    assert len(queue) == 0
    queue.shut_down()
