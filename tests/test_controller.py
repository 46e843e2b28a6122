"""Controller: the canonical worker loop with success, failure, terminal errors and requeue_after."""

from __future__ import annotations

import logging
import queue as stdlib_queue
import threading
from collections.abc import Callable, Iterator

import pytest
from helpers import Background, clock_waits

from kinformer import errors
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.controllers import controller as controller_module
from kinformer.controllers.controller import UNREACHABLE_QUIET, Controller, Result, Skipped
from kinformer.handlers import FilteringResourceEventHandler
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


def test_a_write_answered_429_is_retried_no_sooner_than_its_retry_after(
    running: Running, recorder: Reconciles,
) -> None:
    """A reconcile whose write the server refused with 429 and Retry-After: 5 was retried after
    the backoff's 1 s, asking a server that asked for quiet again and again."""
    def throttled(key: str) -> None:
        error = errors.TooManyRequestsError(429, "TooManyRequests", "slow down")
        error.retry_after = 5.0
        raise error

    recorder.outcomes = [throttled, fail]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 5.0)
    assert running.queue.num_requeues("default/a") == 1  # a failure all the same
    running.clock.step(5.0)
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 2.0)  # the next plain failure: the backoff went on


def test_one_outage_is_one_warning_even_when_a_reconcile_succeeds_in_between(
    running: Running, recorder: Reconciles, caplog: pytest.LogCaptureFixture,
) -> None:
    """A reconcile in flight as the server went failed, one that needed no write succeeded
    (resetting the key's retries), and the next failed again: two WARNING lines for one outage."""
    def refused(key: str) -> None:
        raise ConnectionRefusedError("connection refused")

    caplog.set_level(logging.DEBUG, logger="kinformer.controllers.controller")
    recorder.outcomes = [refused, succeed, refused]
    for _ in range(3):
        running.controller.enqueue("default/a")
        assert recorder.next_call() == "default/a"

    def said() -> list[str]:
        return [r.levelname for r in caplog.records if "could not reach the server" in r.getMessage()]

    assert wait_for(lambda: len(said()) == 2)  # logged after the reconcile returned
    assert said() == ["WARNING", "DEBUG"]


def test_keys_said_unreachable_long_ago_are_not_kept(running: Running, recorder: Reconciles) -> None:
    """Each key that failed to reach a server was remembered for good, to keep an outage to
    one WARNING: a controller of objects that come and go, through outages, held every key it
    ever saw. What was said longer than the quiet period ago is let go."""
    def refused(key: str) -> None:
        raise ConnectionRefusedError("connection refused")

    for i in range(10):
        recorder.outcomes = [refused, succeed]  # retried once: the object was deleted meanwhile
        running.controller.enqueue(f"default/gone-{i}")
        assert recorder.next_call() == f"default/gone-{i}"
        assert clock_waits(running.clock, 1.0)
        running.clock.step(1.0)
        assert recorder.next_call() == f"default/gone-{i}"
        assert wait_for(lambda: running.queue.num_requeues(f"default/gone-{i}") == 0)  # noqa: B023
    running.clock.step(UNREACHABLE_QUIET)
    recorder.outcomes = [refused]
    running.controller.enqueue("default/b")
    assert recorder.next_call() == "default/b"
    assert wait_for(lambda: running.queue.num_requeues("default/b") == 1)
    assert list(running.controller._said_unreachable) == ["default/b"]


def test_a_skipped_reconcile_keeps_the_keys_backoff(running: Running, recorder: Reconciles) -> None:
    # a reconcile that fails after its write is skipped next, while the cache catches up
    recorder.outcomes = [fail, lambda key: Skipped(requeue_after=0.5), fail]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 1.0)
    running.clock.step(1.0)
    assert recorder.next_call() == "default/a"  # skipped
    assert clock_waits(running.clock, 0.5)
    assert running.queue.num_requeues("default/a") == 1  # not forgotten
    running.clock.step(0.5)
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 2.0)  # the second failure waits twice as long
    assert running.queue.num_requeues("default/a") == 2


def test_a_reconcile_that_exits_is_retried_and_the_worker_lives_on(
        running: Running, recorder: Reconciles) -> None:
    def exits(key: str) -> None:
        raise SystemExit(f"{key}: a library called sys.exit")

    recorder.outcomes = [exits]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 1.0)  # retried with backoff, as any failure
    running.controller.enqueue("default/b")  # the one worker still takes keys
    assert recorder.next_call() == "default/b"
    running.clock.step(1.0)
    assert recorder.next_call() == "default/a"


def test_a_reconcile_returning_what_is_not_a_result_fails_and_the_worker_lives_on(
        running: Running, recorder: Reconciles) -> None:
    """A reconciler returning True (or a dict, or the object) ended its worker: with one
    worker nothing was reconciled again, while the controller went on running."""
    recorder.outcomes = [lambda key: True]  # type: ignore[list-item,return-value]
    running.controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert clock_waits(running.clock, 1.0)  # retried with backoff, as a reconcile that raised
    running.controller.enqueue("default/b")  # the one worker still takes keys
    assert recorder.next_call() == "default/b"
    running.clock.step(1.0)
    assert recorder.next_call() == "default/a"


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


def test_start_returns_at_once_and_shutdown_stops_and_joins_the_workers() -> None:
    recorder = Reconciles()
    controller = Controller("started", recorder, workers=2)
    stop = threading.Event()  # never set: only shutdown stops it
    controller.start(stop)
    controller.enqueue("default/a")
    assert recorder.next_call() == "default/a"
    assert controller.shutdown(timeout=TIMEOUT)
    names = {t.name for t in threading.enumerate()}
    assert not {n for n in names if n.startswith("kinformer-controller-started")}
    assert wait_for(lambda: not [t for t in threading.enumerate()  # the Event's bridge ends too
                                 if t.name.startswith("kinformer-context-")], TIMEOUT)
    assert controller.queue.shutting_down()
    with pytest.raises(errors.AlreadyStartedError):
        controller.start(stop)


def test_shutdown_ends_a_blocking_run_and_is_harmless_before_one() -> None:
    controller = Controller("blocking", Reconciles())
    assert controller.shutdown(timeout=TIMEOUT)  # never ran: nothing to wait for
    running = Background(controller.run)
    assert wait_for(lambda: controller.queue.len() == 0 and "kinformer-controller-blocking-0" in
                    {t.name for t in threading.enumerate()}, TIMEOUT)
    assert controller.shutdown(timeout=TIMEOUT)
    running.thread.join(TIMEOUT)
    assert not running.thread.is_alive()  # run returned without its stop being cancelled


def test_run_returns_only_once_a_reconcile_still_running_after_the_stop_has_returned(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A run that returned with a reconcile still in it would let whatever runs next (a fresh
    instance under a ControllerManager, another replica) reconcile that key beside it."""
    monkeypatch.setattr(controller_module, "JOIN_TIMEOUT", 0.05)
    monkeypatch.setattr(controller_module, "STUCK_WARN_INTERVAL", 0.05)
    entered = threading.Event()
    release = threading.Event()

    def hang(key: str) -> None:
        entered.set()
        release.wait(TIMEOUT)  # until the test lets it go

    recorder = Reconciles(hang)
    controller = Controller("hung", recorder, workers=2)
    running = Background(controller.run)
    try:
        controller.enqueue("default/a")
        assert entered.wait(TIMEOUT)

        def warnings() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                    and "still reconciling key=default/a" in r.getMessage()]

        with caplog.at_level(logging.WARNING, logger="kinformer.controllers.controller"):
            assert not controller.shutdown(timeout=0)  # cancelled; its worker is still in hang
            # said, then said again, past its join timeout twice: and still waiting
            assert wait_for(lambda: len(warnings()) >= 2 or not running.thread.is_alive(), TIMEOUT)
            assert running.thread.is_alive(), "run returned while its reconcile still ran"
            assert len(warnings()) >= 2
        assert "worker kinformer-controller-hung-" in warnings()[0]
    finally:
        release.set()
    running.stop()  # returns now that the reconcile has
    assert controller.shutdown(timeout=0)
    assert recorder.next_call() == "default/a"


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


def in_cluster(cluster: str, name: str, namespace: str = "default") -> dict[str, object]:
    return {"metadata": {"namespace": namespace, "name": name, "annotations": {"kcp.io/cluster": cluster}}}


def queued(queue: RateLimitingQueue[str]) -> list[str]:
    keys = [queue.get()[0] for _ in range(len(queue))]
    queue.shut_down()
    return [k for k in keys if k is not None]


def test_the_event_handler_keys_name_the_cluster_an_object_names() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    handler = Controller("keys", Reconciles(), queue=queue).event_handler()
    handler.on_add(in_cluster("root:a", "app"), True)
    handler.on_add(in_cluster("root:b", "app"), True)
    handler.on_delete(DeletedFinalStateUnknown("root:b|default/gone", None))
    # an informer of one logical cluster keys its cache without the cluster; its tombstone
    # gets the cluster of its last known object, as that object's other events did
    handler.on_delete(DeletedFinalStateUnknown("default/old", in_cluster("root:a", "old")))
    handler.on_delete(DeletedFinalStateUnknown("default/plain", {"metadata": {"name": "plain"}}))
    assert queued(queue) == ["root:a|default/app", "root:b|default/app", "root:b|default/gone",
                             "root:a|default/old", "default/plain"]


def test_the_event_handler_of_a_member_cluster_queues_keys_naming_it() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    handler = Controller("keys", Reconciles(), queue=queue).event_handler()
    east, west = handler.for_cluster("east"), handler.for_cluster("west")
    app = {"metadata": {"namespace": "default", "name": "app"}}
    east.on_add(app, True)
    west.on_update(app, app)
    west.on_delete(DeletedFinalStateUnknown("default/gone", None))
    east.on_add({"metadata": {"name": "node"}}, False)
    handler.for_cluster("a|b").on_add(app, False)  # no key could name it: logged, skipped
    assert queued(queue) == ["east|default/app", "west|default/app", "west|default/gone", "east|node"]


def test_a_key_func_given_is_used_everywhere_as_before() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    handler = Controller("keys", Reconciles(), queue=queue).event_handler(lambda obj: obj["metadata"]["name"])
    assert handler.for_cluster("east") is handler
    filtered = FilteringResourceEventHandler(lambda obj: True, handler)
    assert filtered.for_cluster("east") is filtered  # one handler for every member, as before
    handler.on_add(in_cluster("root:a", "app"), False)
    assert queued(queue) == ["app"]
