"""RealFIFO, the modern profile's queue: one delta per event in arrival order, atomic relists and
resyncs, bookmarks, the non-atomic mode with known objects, batch pops, sync tracking, and the
lock let go while a batch is processed."""

from __future__ import annotations

import threading
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import _threads, errors
from kinformer.cache.delta_fifo import Deltas, DeltaType
from kinformer.cache.real_fifo import SYNC_ALL_INFO, BookmarkInfo, RealFIFO, ReplacedAllInfo
from kinformer.cache.store import DeletedFinalStateUnknown, Indexer, meta_namespace_key_func
from kinformer.testing.waiting import wait_for

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC
REPLACED_ALL, SYNC_ALL, BOOKMARK = DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL, DeltaType.BOOKMARK
cm = helpers.cm
TIMEOUT = 5.0


def popped(fifo: RealFIFO) -> list[tuple[DeltaType, Any, bool]]:
    """Pop everything queued, one delta at a time: (type, object, is_in_initial_list)."""
    out: list[tuple[DeltaType, Any, bool]] = []

    def process(deltas: Deltas, initial: bool) -> None:
        assert len(deltas) == 1
        out.append((deltas[0].type, deltas[0].object, initial))

    while len(fifo):
        fifo.pop(process, timeout=TIMEOUT)
    return out


def known(*objs: Any) -> Indexer:
    store = Indexer()
    for obj in objs:
        store.add(obj)
    return store


# -- one delta per event -------------------------------------------------------------------


def test_every_event_is_one_delta_in_arrival_order_across_keys() -> None:
    fifo = RealFIFO()
    a1, b1, a2 = cm("a", 1), cm("b", 1), cm("a", 2)
    fifo.add(a1)
    fifo.add(b1)
    fifo.update(a2)
    assert [(t, o) for t, o, _ in popped(fifo)] == [(ADDED, a1), (ADDED, b1), (UPDATED, a2)]


def test_a_batch_queues_one_delta_per_object_in_order_after_what_came_before() -> None:
    fifo = RealFIFO(transformer=lambda obj: {**obj, "seen": True})
    a1, b1, a2, b2 = cm("a", 1), cm("b", 1), cm("a", 2), cm("b", 2)
    fifo.add(a1)
    fifo.add_batch([ADDED, UPDATED, DELETED], [b1, a2, b2])
    assert [(t, o["metadata"]["name"], o["metadata"]["resourceVersion"], o["seen"])
            for t, o, _ in popped(fifo)] == [
        (ADDED, "a", "1", True), (ADDED, "b", "1", True), (UPDATED, "a", "2", True),
        (DELETED, "b", "2", True)]


def test_a_batch_with_an_object_that_cannot_be_keyed_queues_nothing() -> None:
    fifo = RealFIFO()
    with pytest.raises(errors.KeyFuncError):
        fifo.add_batch([ADDED, ADDED], [cm("a", 1), {"kind": "ConfigMap"}])
    with pytest.raises(ValueError):
        fifo.add_batch([ADDED], [cm("a", 1), cm("b", 1)])
    assert len(fifo) == 0 and fifo.list_keys() == []


def test_a_batch_wakes_a_waiting_consumer() -> None:
    fifo = RealFIFO()
    got: list[list[str]] = []

    def consume() -> None:
        fifo.pop_batch(lambda batch, initial: got.append(
            [d[0].object["metadata"]["name"] for d in batch]), lambda d, i: None, timeout=TIMEOUT)

    thread = _threads.spawn(consume, "kinformer-test-consumer")
    assert wait_for(lambda: fifo._waiting, TIMEOUT)
    fifo.add_batch([ADDED, ADDED], [cm("a", 1), cm("b", 1)])
    thread.join(TIMEOUT)
    assert got == [["a", "b"]]


def test_deletes_are_queued_for_unknown_keys_and_repeats_are_kept() -> None:
    fifo = RealFIFO()
    ghost, a = cm("ghost", 3), cm("a", 4)
    fifo.delete(ghost)
    fifo.delete(a)
    fifo.delete(a)
    assert [(t, o) for t, o, _ in popped(fifo)] == [(DELETED, ghost), (DELETED, a), (DELETED, a)]


def test_objects_are_transformed_once_and_a_failing_transform_queues_nothing() -> None:
    calls: list[str] = []

    def transform(obj: Any) -> Any:
        calls.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise ValueError("cannot transform")
        return {**obj, "seen": True}

    fifo = RealFIFO(transformer=transform)
    fifo.add(cm("a"))
    with pytest.raises(ValueError):
        fifo.add(cm("bad"))
    fifo.replace([cm("b")], "7")
    assert len(fifo) == 2
    (_, a, _), (_, info, _) = popped(fifo)
    assert a["seen"] and info.objects[0]["seen"]
    assert calls == ["a", "bad", "b"]


def test_an_object_without_a_key_raises_a_key_error_and_queues_nothing() -> None:
    fifo = RealFIFO()
    with pytest.raises(errors.KeyFuncError):
        fifo.add({"kind": "ConfigMap"})
    with pytest.raises(errors.KeyFuncError):
        fifo.replace([cm("a"), {"kind": "ConfigMap"}], "9")
    assert len(fifo) == 0


# -- atomic mode: ReplacedAll, SyncAll, Bookmark --------------------------------------------


def test_an_atomic_replace_is_one_replaced_all_carrying_the_list_and_its_version() -> None:
    fifo = RealFIFO()
    a, b = cm("a", 5), cm("b", 6)
    fifo.replace([a, b], "10")
    [(delta_type, info, initial)] = popped(fifo)
    assert delta_type is REPLACED_ALL and initial
    assert isinstance(info, ReplacedAllInfo)
    assert info.resource_version == "10"
    assert info.objects == [a, b]
    assert info.items == {"ns/a": a, "ns/b": b}


def test_a_list_keyed_by_its_lister_is_not_keyed_again_and_carries_its_namespaces() -> None:
    # objects without metadata cannot be keyed: only the keys the list carries make them storable
    a, b = {"data": {"n": "1"}}, {"data": {"n": "2"}}
    fifo = RealFIFO()
    fifo.replace_listed([a, b], ["ns/a", "ns/b"], [("ns", 2)], "10")
    [(_, info, _)] = popped(fifo)
    assert info.items == {"ns/a": a, "ns/b": b}
    assert info.namespace_runs == [("ns", 2)]
    with pytest.raises(errors.KeyFuncError):  # keys that do not fit: keyed as usual, which fails
        RealFIFO().replace_listed([a, b, cm("c", 7)], ["ns/a", "ns/b"], [("ns", 2)], "10")
    with pytest.raises(errors.KeyFuncError):  # a FIFO keyed another way keys every object itself
        RealFIFO(key_func=lambda o: meta_namespace_key_func(o)).replace_listed(
            [a, b], ["ns/a", "ns/b"], None, "10")


def test_an_atomic_resync_is_one_sync_all_and_bookmarks_are_queued() -> None:
    fifo = RealFIFO()
    fifo.resync()
    fifo.bookmark("42")
    assert [(t, o) for t, o, _ in popped(fifo)] == [
        (SYNC_ALL, SYNC_ALL_INFO), (BOOKMARK, BookmarkInfo("42"))]


# -- non-atomic mode --------------------------------------------------------------------------


def test_a_non_atomic_replace_queues_deletions_first_then_a_replaced_per_object() -> None:
    x1, y1, z1 = cm("x", 1), cm("y", 1), cm("z", 1)
    fifo = RealFIFO(known_objects=known(x1, y1), atomic=False)
    q2 = cm("q", 2)
    fifo.add(q2)  # queued, not listed again: a tombstone with the queued state
    fifo.delete(cm("d", 2))  # its last queued delta is a deletion already: no second one
    y2 = cm("y", 2)
    fifo.replace([y2, z1], "20")
    got = [(t, o) for t, o, _ in popped(fifo)]
    assert got == [
        (ADDED, q2),
        (DELETED, cm("d", 2)),
        (DELETED, DeletedFinalStateUnknown("ns/q", q2)),
        (DELETED, DeletedFinalStateUnknown("ns/x", x1)),  # known, not listed, nothing queued
        (REPLACED, y2),
        (REPLACED, z1),
    ]


def test_a_non_atomic_resync_skips_known_keys_with_queued_deltas() -> None:
    x1, y1 = cm("x", 1), cm("y", 1)
    fifo = RealFIFO(known_objects=known(x1, y1), atomic=False)
    y2 = cm("y", 2)
    fifo.update(y2)
    fifo.resync()
    fifo.bookmark("5")  # no bookmarks in non-atomic mode
    assert [(t, o) for t, o, _ in popped(fifo)] == [(UPDATED, y2), (SYNC, x1)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"atomic": True, "known_objects": Indexer()},
        {"atomic": False},
        {"atomic": False, "known_objects": Indexer(), "unlock_while_processing": True},
        {"atomic": False, "known_objects": Indexer(), "emit_bookmarks": True},
        {"batch_size": 0},
    ],
    ids=["atomic-with-known", "non-atomic-without-known", "non-atomic-unlocking",
         "non-atomic-bookmarks", "no-batch"],
)
def test_contradictory_options_are_configuration_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(errors.ConfigurationError):
        RealFIFO(**kwargs)


# -- sync tracking ----------------------------------------------------------------------------


def test_the_first_replace_counts_every_delta_queued_by_then_and_syncs_after_the_last() -> None:
    fifo = RealFIFO()
    seen: list[bool] = []
    fifo.bookmark("1")  # queued before the first replace: part of the initial population
    fifo.replace([cm("a")], "2")
    fifo.add(cm("b"))
    assert not fifo.has_synced()

    def process(deltas: Deltas, initial: bool) -> None:
        seen.append(initial)
        assert not fifo.has_synced()  # the count drops only once process returned

    fifo.pop(process, timeout=TIMEOUT)
    assert not fifo.has_synced()
    fifo.pop(process, timeout=TIMEOUT)
    assert fifo.has_synced()
    fifo.pop(lambda deltas, initial: seen.append(initial), timeout=TIMEOUT)
    assert seen == [True, True, False]


def test_changes_before_any_replace_and_an_empty_first_list_sync_at_once() -> None:
    early = RealFIFO()
    early.add(cm("a"))
    assert early.has_synced()
    empty = RealFIFO()
    empty.replace([], "1")
    assert not empty.has_synced()  # its ReplacedAll still waits to be processed
    popped(empty)
    assert empty.has_synced()


def test_a_closed_fifo_drains_then_raises_and_pop_times_out_when_empty() -> None:
    fifo = RealFIFO()
    with pytest.raises(TimeoutError):
        fifo.pop(None, timeout=0.01)
    fifo.add(cm("a"))
    fifo.close()
    assert fifo.is_closed()
    assert fifo.pop(None, timeout=TIMEOUT)[0].type is ADDED
    with pytest.raises(errors.FIFOClosedError):
        fifo.pop(None, timeout=TIMEOUT)


def test_reads_show_what_is_queued() -> None:
    fifo = RealFIFO()
    a1, b1, a2 = cm("a", 1), cm("b", 1), cm("a", 2)
    fifo.add(a1)
    fifo.add(b1)
    fifo.update(a2)
    fifo.bookmark("3")
    assert fifo.list_keys() == ["ns/a", "ns/b"]
    assert fifo.list() == [a2, b1]
    assert [d.object for d in fifo.get(a1) or []] == [a1, a2]
    assert fifo.get_by_key("ns/none") is None
    assert len(fifo) == 4


# -- batches ------------------------------------------------------------------------------------


class Batches:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], bool]] = []

    def batch(self, batch: list[Deltas], initial: bool) -> None:
        self.calls.append(("batch", [describe(d[0]) for d in batch], initial))

    def single(self, deltas: Deltas, initial: bool) -> None:
        self.calls.append(("single", [describe(deltas[0])], initial))


def describe(delta: Any) -> str:
    obj = delta.object
    if isinstance(obj, dict):
        return f"{delta.type}:{helpers.describe(obj)}"
    return str(delta.type)


def test_a_batch_takes_distinct_keys_and_stops_before_a_repeated_key_or_a_whole_list_delta() -> None:
    fifo = RealFIFO()
    fifo.add(cm("a", 1))
    fifo.add(cm("b", 1))
    fifo.update(cm("a", 2))  # a repeated key starts the next batch
    fifo.delete(cm("c", 3))
    fifo.resync()  # taken alone
    fifo.add(cm("d", 4))
    out = Batches()
    while len(fifo):
        fifo.pop_batch(out.batch, out.single, timeout=TIMEOUT)
    assert out.calls == [
        ("batch", ["Added:a1", "Added:b1"], False),
        ("batch", ["Updated:a2", "Deleted:c3"], False),
        ("single", ["SyncAll"], False),
        ("single", ["Added:d4"], False),
    ]


def test_a_batch_popped_with_keys_gets_the_keys_each_delta_was_queued_under() -> None:
    fifo = RealFIFO(key_func=lambda obj: "k-" + obj["metadata"]["name"])
    fifo.add(cm("a", 1))
    fifo.update(cm("b", 1))
    fifo.delete(cm("c", 1))
    fifo.add(cm("a", 2))  # a repeated key: the next batch
    fifo.add(cm("d", 2))
    got: list[tuple[list[str], list[str]]] = []

    def keyed(batch: list[Deltas], initial: bool, keys: list[str]) -> None:
        got.append(([d[0].object["metadata"]["name"] for d in batch], keys))

    while len(fifo):
        fifo.pop_batch(keyed, lambda deltas, initial: None, TIMEOUT, with_keys=True)
    assert got == [(["a", "b", "c"], ["k-a", "k-b", "k-c"]), (["a", "d"], ["k-a", "k-d"])]


def test_a_batch_holds_at_most_batch_size_deltas_and_never_crosses_the_initial_list() -> None:
    fifo = RealFIFO(known_objects=Indexer(), atomic=False, batch_size=2)
    fifo.replace([cm("a"), cm("b"), cm("c")], "1")  # three Replaced deltas: the first list
    fifo.add(cm("d"))
    out = Batches()
    while len(fifo):
        fifo.pop_batch(out.batch, out.single, timeout=TIMEOUT)
    assert out.calls == [
        ("batch", ["Replaced:a1", "Replaced:b1"], True),
        ("single", ["Replaced:c1"], True),  # the last of the first list, alone
        ("single", ["Added:d1"], False),
    ]
    assert fifo.has_synced()


def test_an_error_in_process_drops_the_batch_and_still_counts_it() -> None:
    fifo = RealFIFO()
    fifo.replace([cm("a")], "1")

    def boom(deltas: Deltas, initial: bool) -> None:
        raise RuntimeError("handler bug")

    with pytest.raises(RuntimeError):
        fifo.pop_batch(lambda batch, initial: None, boom, timeout=TIMEOUT)
    assert fifo.has_synced() and len(fifo) == 0


# -- unlock while processing ------------------------------------------------------------------


def lock_free_while_processing(fifo: RealFIFO) -> bool:
    """Pop one delta and report whether the FIFO lock was free while it was being processed."""
    free: list[bool] = []

    def probe(deltas: Deltas, initial: bool) -> None:
        taken = fifo._lock.acquire(blocking=False)
        if taken:
            fifo._lock.release()
        free.append(taken)

    fifo.pop(probe, timeout=TIMEOUT)
    return free[0]


def test_the_lock_is_let_go_while_processing_only_in_atomic_mode() -> None:
    atomic = RealFIFO()
    atomic.add(cm("a"))
    assert lock_free_while_processing(atomic)
    non_atomic = RealFIFO(known_objects=Indexer(), atomic=False)
    non_atomic.add(cm("a"))
    assert not lock_free_while_processing(non_atomic)


def test_the_lock_stays_held_while_processing_when_the_queue_is_backed_up() -> None:
    fifo = RealFIFO(batch_size=1)  # backed up from two waiting deltas on
    for name in "abcd":
        fifo.add(cm(name))
    assert not lock_free_while_processing(fifo)  # three wait: producers must wait too
    assert not lock_free_while_processing(fifo)  # two wait
    assert lock_free_while_processing(fifo)  # one waits


def test_a_producer_goes_on_while_a_slow_batch_is_processed() -> None:
    fifo = RealFIFO()
    fifo.add(cm("a"))
    inside, release = threading.Event(), threading.Event()

    def slow(deltas: Deltas, initial: bool) -> None:
        inside.set()
        assert release.wait(TIMEOUT)

    consumer = _threads.spawn(fifo.pop, "kinformer-test-pop", slow, TIMEOUT)
    try:
        assert inside.wait(TIMEOUT)
        fifo.add(cm("b"))  # would block until release if the lock were held
        assert fifo.list_keys() == ["ns/b"]
    finally:
        release.set()
        _threads.join_all([consumer], TIMEOUT)


def test_a_waiting_consumer_is_woken_by_the_first_add_and_takes_the_rest_in_order() -> None:
    # only an add to an empty queue notifies the waiting consumer; it must still see them all,
    # and be woken again once it has emptied the queue and waits anew
    fifo = RealFIFO()
    taken: list[str] = []
    all_in = threading.Event()

    def record(batch: list[Deltas], initial: bool) -> None:
        taken.extend(d[0].object["metadata"]["name"] for d in batch)
        if len(taken) >= 4:
            all_in.set()

    def one(deltas: Deltas, initial: bool) -> None:
        record([deltas], initial)

    def consume() -> None:
        while not all_in.is_set():
            fifo.pop_batch(record, one, TIMEOUT)

    consumer = _threads.spawn(consume, "kinformer-test-pop")
    try:
        assert wait_for(lambda: fifo._waiting == 1, TIMEOUT)
        for name in ("a", "b", "c"):
            fifo.add(cm(name))
        assert wait_for(lambda: len(taken) == 3 and fifo._waiting == 1, TIMEOUT)
        fifo.add(cm("d"))
        assert all_in.wait(TIMEOUT)
    finally:
        _threads.join_all([consumer], TIMEOUT)
    assert taken == ["a", "b", "c", "d"]


def test_the_modern_names_are_exported() -> None:
    assert kinformer.RealFIFO is RealFIFO
    assert "ReplacedAllInfo" not in kinformer.__all__  # a value the informer reads, not an API
    assert kinformer.DeltaType.REPLACED_ALL.value == "ReplacedAll"
    assert kinformer.DeltaType.SYNC_ALL.value == "SyncAll"
    assert kinformer.DeltaType.BOOKMARK.value == "Bookmark"


class _Taker:
    """A ``take_first_list`` that records what it was given and answers ``takes``."""

    def __init__(self, takes: bool) -> None:
        self.takes = takes
        self.seen: list[tuple[list[tuple[str, Any]], str]] = []

    def __call__(self, items: dict[str, Any], resource_version: str, namespace_runs: Any) -> bool:
        self.seen.append((list(items.items()), resource_version))
        return self.takes


def test_a_first_list_goes_whole_to_take_first_list_and_the_fifo_is_synced_with_nothing_queued() -> None:
    taker = _Taker(True)
    fifo = RealFIFO(take_first_list=taker)
    a, b = helpers.cm("a"), helpers.cm("b", namespace="x")
    fifo.replace([b, a], "5")
    assert taker.seen == [([("x/b", b), ("ns/a", a)], "5")]
    assert fifo.has_synced() and len(fifo) == 0
    fifo.replace([a], "6")  # a relist is queued as ever
    assert len(taker.seen) == 1 and len(fifo) == 1


def test_a_declined_first_list_a_fifo_used_already_or_closed_queues_the_replaced_all() -> None:
    declined = RealFIFO(take_first_list=_Taker(False))
    declined.replace([helpers.cm("a")], "5")
    assert not declined.has_synced() and len(declined) == 1
    taker = _Taker(True)
    used = RealFIFO(take_first_list=taker)
    used.add(helpers.cm("z"))
    used.replace([helpers.cm("a")], "5")
    closed = RealFIFO(take_first_list=taker)
    closed.close()
    closed.replace([helpers.cm("a")], "5")
    assert taker.seen == [] and len(used) == 2 and len(closed) == 1
    with pytest.raises(errors.ConfigurationError):
        RealFIFO(known_objects=Indexer(), atomic=False, take_first_list=taker)


@pytest.mark.parametrize("atomic", [True, False])
def test_a_list_holding_one_key_for_two_logical_clusters_objects_is_refused(atomic: bool) -> None:
    fifo = RealFIFO(atomic=atomic, known_objects=None if atomic else known())
    of_a = cm("app", "1", annotations={"kcp.io/cluster": "root:a"})
    of_b = cm("app", "2", annotations={"kcp.io/cluster": "root:b"})
    with pytest.raises(kinformer.ClustersMergedError) as caught:
        fifo.replace([cm("other", "3"), of_a, of_b], "5")
    assert (caught.value.key, caught.value.clusters) == ("ns/app", ["root:a", "root:b"])
    with pytest.raises(kinformer.ClustersMergedError):
        fifo.replace_listed([of_a, of_b], ["ns/app", "ns/app"], None, "5")
    assert len(fifo) == 0 and not fifo.has_synced()  # nothing queued
    # one cluster's object listed twice is no merge of clusters: queued as before, the last last
    newer = cm("app", "4", annotations={"kcp.io/cluster": "root:a"})
    fifo.replace([of_a, newer], "5")
    kind, obj, _ = popped(fifo)[-1]
    assert obj.items == {"ns/app": newer} if atomic else (kind, obj) == (REPLACED, newer)
