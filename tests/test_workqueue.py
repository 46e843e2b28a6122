"""WorkQueue: dedup, one worker per item, shutdown and drain."""

from __future__ import annotations

import threading

from kinformer import WorkQueue
from kinformer.testing import wait_for


def test_adding_an_item_twice_queues_it_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    queue.add("x")
    assert len(queue) == 1
    assert queue.len() == 1


def test_items_come_out_in_the_order_they_were_added() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ("a", "b", "c", "a"):
        queue.add(item)
    assert [queue.get()[0] for _ in range(3)] == ["a", "b", "c"]


def test_an_item_added_while_processing_is_queued_again_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    assert queue.get() == ("x", False)
    queue.add("x")
    queue.add("x")
    assert len(queue) == 0  # processing items are not counted and not handed out
    queue.done("x")
    assert len(queue) == 1
    assert queue.get() == ("x", False)
    queue.done("x")
    assert len(queue) == 0


def test_a_second_worker_never_receives_an_item_the_first_one_holds() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    assert queue.get() == ("x", False)
    queue.add("x")
    assert queue.get(timeout=0.05) == (None, False)  # the re-added x is held back
    queue.done("x")
    assert queue.get(timeout=5) == ("x", False)


def test_get_blocks_until_an_item_is_added() -> None:
    queue: WorkQueue[str] = WorkQueue()
    got: list[tuple[str | None, bool]] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(timeout=5)))
    worker.start()
    queue.add("x")
    worker.join(5)
    assert got == [("x", False)]


def test_done_for_an_item_not_being_processed_does_not_duplicate_it() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    queue.done("x")
    assert len(queue) == 1


def test_queued_items_are_still_handed_out_after_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.shut_down()
    assert queue.shutting_down()
    assert queue.get() == ("a", False)
    assert queue.get() == ("b", False)
    assert queue.get() == (None, True)


def test_adds_after_shut_down_are_ignored() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.shut_down()
    queue.add("c")
    assert len(queue) == 0
    assert queue.get() == (None, True)


def test_shut_down_wakes_every_blocked_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    results: list[tuple[str | None, bool]] = []
    workers = [threading.Thread(target=lambda: results.append(queue.get(timeout=5))) for _ in range(3)]
    for worker in workers:
        worker.start()
    queue.shut_down()
    for worker in workers:
        worker.join(5)
    assert results == [(None, True)] * 3


def test_shut_down_with_drain_waits_for_items_in_flight() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    assert queue.get() == ("x", False)
    drained = threading.Event()

    def drain() -> None:
        queue.shut_down_with_drain(timeout=5)
        drained.set()

    drainer = threading.Thread(target=drain)
    drainer.start()
    assert wait_for(queue.shutting_down)
    assert not drained.wait(0.05)
    queue.done("x")
    assert drained.wait(5)
    drainer.join(5)


def test_shut_down_cuts_a_drain_short() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    queue.get()
    results: list[bool] = []
    drainer = threading.Thread(target=lambda: results.append(queue.shut_down_with_drain(timeout=5)))
    drainer.start()
    assert wait_for(queue.shutting_down)
    queue.shut_down()
    drainer.join(5)
    assert results == [True]


def test_shut_down_with_drain_reports_a_timeout() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    queue.get()
    assert queue.shut_down_with_drain(timeout=0.01) is False


def test_many_workers_process_each_add_exactly_once() -> None:
    queue: WorkQueue[int] = WorkQueue()
    seen: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            assert item is not None
            with lock:
                seen.append(item)
            queue.done(item)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for i in range(1000):
        queue.add(i)
    assert wait_for(lambda: len(seen) == 1000)
    queue.shut_down()
    for worker in workers:
        worker.join(5)
    assert sorted(seen) == list(range(1000))
