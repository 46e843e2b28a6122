"""PriorityQueue: live adds before an initial list's, promotion, and RateLimitingQueue's rules kept."""

from __future__ import annotations

import threading
from collections.abc import Callable

import kinformer
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for
from kinformer.workqueue import ItemExponentialFailureRateLimiter, PriorityQueue


def drain(queue: PriorityQueue[str]) -> list[str]:
    out = []
    while len(queue):
        item, _ = queue.get()
        assert item is not None
        out.append(item)
        queue.done(item)
    return out


def test_live_adds_are_served_before_initial_list_adds() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    for key in ("l1", "l2", "l3"):
        queue.add_initial(key)
    queue.add("live1")
    queue.add("live2")
    assert queue.len_initial() == 3 and len(queue) == 5
    assert drain(queue) == ["live1", "live2", "l1", "l2", "l3"]


def test_a_live_add_promotes_a_waiting_initial_item_once() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    for key in ("l1", "l2", "l3"):
        queue.add_initial(key)
    queue.add("l3")
    queue.add("l3")
    assert len(queue) == 3 and queue.len_initial() == 2
    assert drain(queue) == ["l3", "l1", "l2"]


def test_an_initial_add_of_a_waiting_live_item_keeps_it_high() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    queue.add_initial("l1")
    queue.add("x")
    queue.add_initial("x")
    assert drain(queue) == ["x", "l1"]


class _ReleaseHook:
    """The queue's own lock, calling ``hook`` once, on the thread that releases it, the first
    time it is released after ``hook`` was armed: what another thread may do in that moment."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.hook: Callable[[], object] | None = None

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()


def test_an_initial_add_racing_a_live_add_of_the_same_item_leaves_it_high() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    for key in ("i1", "i2"):
        queue.add_initial(key)
    lock = _ReleaseHook(queue._lock)
    queue._lock = lock  # type: ignore[assignment]
    lock.hook = lambda: queue.add_initial("x")  # an initial list names x as its live add runs
    queue.add("x")
    assert drain(queue) == ["x", "i1", "i2"]


def test_an_item_re_added_while_processing_is_queued_at_the_level_of_those_adds() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    queue.add("x")
    queue.add("y")
    assert queue.get() == ("x", False)
    assert queue.get() == ("y", False)
    queue.add_initial("l1")
    queue.add_initial("x")  # while processing: back at the low level
    queue.add_initial("y")
    queue.add("y")  # a live add meanwhile wins
    queue.done("x")
    queue.done("y")
    assert drain(queue) == ["y", "l1", "x"]


def test_retries_keep_the_rate_limiting_queue_rules() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(ItemExponentialFailureRateLimiter(1.0, 10.0), clock=clock)
    try:
        queue.add_initial("l1")
        queue.add_rate_limited("r")
        assert queue.num_requeues("r") == 1 and len(queue) == 1
        clock.step(1.0)
        assert wait_for(lambda: len(queue) == 2, timeout=5)
        assert drain(queue) == ["r", "l1"]  # a retry coming due is live
        queue.forget("r")
        assert queue.num_requeues("r") == 0
    finally:
        queue.shut_down()


def test_an_add_of_an_item_waiting_out_a_delay_is_one_entry_ready_now() -> None:
    """controller-runtime's rule: an item is one entry, ready at the earlier time, so the
    delayed add does not hand it out a second time when it comes due. A sentinel scheduled
    after it shows the waiting loop went past that time."""
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(clock=clock)
    try:
        queue.add_after("live", 5.0)
        queue.add_after("listed", 5.0)
        queue.add_after("sentinel", 6.0)
        queue.add("live")
        queue.add_initial("listed")
        assert drain(queue) == ["live", "listed"]
        clock.step(6.0)
        item, _ = queue.get(timeout=5)
        assert item == "sentinel"  # neither delayed add came due behind it
        queue.done(item)
        assert len(queue) == 0
    finally:
        queue.shut_down()


def test_a_delayed_add_of_an_item_that_waits_now_is_the_same_entry() -> None:
    """The other half of the rule: an item waiting now (or added again while a worker holds it)
    is ready now; an ``add_after`` of it (a failed reconcile's retry, a ``requeue_after``) does
    not hand it out a second time once the delay ran out."""
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(ItemExponentialFailureRateLimiter(1.0, 10.0), clock=clock)
    try:
        queue.add("waiting")
        queue.add_after("waiting", 5.0)
        assert queue.get() == ("waiting", False)
        queue.add("held")  # added again while a worker reconciles it
        queue.done("waiting")
        assert queue.get() == ("held", False)
        queue.add("held")
        queue.add_rate_limited("held")  # the reconcile failed
        queue.done("held")
        assert drain(queue) == ["held"]
        queue.add_after("sentinel", 6.0)
        clock.step(6.0)
        item, _ = queue.get(timeout=5)
        assert item == "sentinel"  # no delayed add came due before it
        queue.done(item)
        assert len(queue) == 0
        assert queue.num_requeues("held") == 1  # the failure still counts for its backoff
    finally:
        queue.shut_down()


def test_shut_down_hands_out_what_is_left_then_reports_shutdown() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    queue.add_initial("l1")
    queue.add("a")
    queue.shut_down()
    queue.add("ignored")
    queue.add_initial("ignored")
    assert queue.get() == ("a", False)
    assert queue.get() == ("l1", False)
    assert queue.get() == (None, True)


def test_a_blocked_worker_wakes_for_an_initial_add() -> None:
    queue: PriorityQueue[str] = PriorityQueue()
    got: list[tuple[str | None, bool]] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(timeout=5)))
    worker.start()
    queue.add_initial("l1")
    worker.join(5)
    assert got == [("l1", False)]


def test_priority_queue_is_exported() -> None:
    assert kinformer.PriorityQueue is PriorityQueue
