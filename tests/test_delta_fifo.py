"""DeltaFIFO, classic profile, at FIFO and store level: queueing and compression, relists and their
tombstones, resync, sync tracking, transforms, closing, batch pops and the first-list option."""

from __future__ import annotations

import threading
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import _threads, errors
from kinformer.cache.delta_fifo import Delta, DeltaFIFO, Deltas, DeltaType
from kinformer.cache.store import (
    DeletedFinalStateUnknown,
    Indexer,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)
from kinformer.testing.waiting import wait_for

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC


def kinds(deltas: Deltas) -> list[tuple[DeltaType, Any]]:
    return [(d.type, d.object) for d in deltas]


class Informer:
    """Just enough of an informer's processDeltas to check what handlers would see."""

    def __init__(self) -> None:
        self.store = Indexer(deletion_handling_meta_namespace_key_func)
        self.fifo = DeltaFIFO(known_objects=self.store, emit_delta_type_replaced=True)
        self.events: list[tuple[Any, ...]] = []

    def process(self, deltas: Deltas, is_in_initial_list: bool) -> None:
        for d in deltas:
            if d.type is DELETED:
                self.store.delete(d.object)
                self.events.append(("delete", d.object))
                continue
            old = self.store.get(d.object)
            self.store.update(d.object)
            if old is not None:
                self.events.append(("update", old, d.object))
            else:
                self.events.append(("add", d.object, is_in_initial_list))

    def pop(self) -> Deltas:
        return self.fifo.pop(self.process, timeout=0)


def test_delta_types_carry_client_go_strings() -> None:
    assert [t.value for t in DeltaType] == [
        "Added", "Updated", "Deleted", "Replaced", "Sync", "ReplacedAll", "SyncAll", "Bookmark"]
    assert Delta(ADDED, 1).type is ADDED
    assert str(SYNC) == "Sync"


def test_key_of_uses_the_newest_delta_and_a_tombstones_key() -> None:
    fifo = DeltaFIFO()
    deltas = [Delta(ADDED, helpers.cm("a")), Delta(UPDATED, helpers.cm("b", namespace="n"))]
    assert fifo.key_of(deltas) == "n/b"
    assert fifo.key_of(DeletedFinalStateUnknown("x/y", None)) == "x/y"
    with pytest.raises(errors.KeyFuncError, match="0 length Deltas"):
        fifo.key_of([])


def test_add_then_update_pop_together_and_the_handler_sees_add_then_update() -> None:
    inf = Informer()
    a1, a2 = helpers.cm("a", "1"), helpers.cm("a", "2")
    inf.fifo.add(a1)
    inf.fifo.update(a2)
    assert kinds(inf.pop()) == [(ADDED, a1), (UPDATED, a2)]
    assert inf.events == [("add", a1, False), ("update", a1, a2)]
    assert inf.store.list() == [a2]


def test_a_key_keeps_its_place_in_line_when_more_changes_arrive() -> None:
    fifo = DeltaFIFO()
    fifo.add(helpers.cm("a"))
    fifo.add(helpers.cm("b"))
    fifo.update(helpers.cm("a", "2"))
    assert fifo.list_keys() == ["ns/a", "ns/b"]
    assert [d.type for d in fifo.pop(None)] == [ADDED, UPDATED]
    assert fifo.list_keys() == ["ns/b"]


def test_deleting_an_unknown_object_queues_nothing() -> None:
    inf = Informer()
    inf.fifo.delete(helpers.cm("a"))
    assert len(inf.fifo) == 0
    with pytest.raises(TimeoutError):
        inf.pop()
    bare = DeltaFIFO()
    bare.delete(helpers.cm("a"))
    assert bare.list_keys() == []


def test_deleting_a_known_object_queues_a_deletion() -> None:
    inf = Informer()
    inf.store.add(helpers.cm("a"))
    inf.fifo.delete(helpers.cm("a", "2"))
    assert kinds(inf.fifo.get_by_key("ns/a") or []) == [(DELETED, helpers.cm("a", "2"))]


def test_relist_deletes_an_object_whose_add_is_still_queued() -> None:
    inf = Informer()
    a1, b1 = helpers.cm("a"), helpers.cm("b")
    inf.fifo.add(a1)
    inf.fifo.replace([b1], "5")
    assert inf.fifo.has_synced()
    assert inf.fifo.list_keys() == ["ns/a", "ns/b"]
    assert kinds(inf.fifo.get_by_key("ns/a") or []) == [
        (ADDED, a1),
        (DELETED, DeletedFinalStateUnknown("ns/a", a1)),
    ]
    assert kinds(inf.fifo.get_by_key("ns/b") or []) == [(REPLACED, b1)]
    inf.pop()
    inf.pop()
    assert inf.events == [
        ("add", a1, False),
        ("delete", DeletedFinalStateUnknown("ns/a", a1)),
        ("add", b1, False),
    ]
    assert inf.store.list_keys() == ["ns/b"]


def test_relist_without_a_cached_object_delivers_a_tombstone() -> None:
    inf = Informer()
    x1 = helpers.cm("x")
    inf.store.add(x1)
    inf.fifo.replace([], "9")
    assert kinds(inf.pop()) == [(DELETED, DeletedFinalStateUnknown("ns/x", x1))]
    assert len(inf.store) == 0
    assert inf.events == [("delete", DeletedFinalStateUnknown("ns/x", x1))]


def test_relist_tombstone_carries_the_newest_queued_state() -> None:
    inf = Informer()
    x1, x2 = helpers.cm("x", "1"), helpers.cm("x", "2")
    inf.store.add(x1)
    inf.fifo.update(x2)
    inf.fifo.replace([])
    assert kinds(inf.fifo.get_by_key("ns/x") or []) == [
        (UPDATED, x2),
        (DELETED, DeletedFinalStateUnknown("ns/x", x2)),
    ]


def test_a_real_deletion_beats_a_relist_tombstone_in_either_order() -> None:
    inf = Informer()
    x1 = helpers.cm("x")
    inf.store.add(x1)
    inf.fifo.delete(x1)
    inf.fifo.replace([])
    assert kinds(inf.fifo.get_by_key("ns/x") or []) == [(DELETED, x1)]

    other = Informer()
    other.store.add(x1)
    other.fifo.replace([])
    other.fifo.delete(x1)
    assert kinds(other.fifo.get_by_key("ns/x") or []) == [(DELETED, x1)]


def test_consecutive_deletions_collapse_into_the_older_one() -> None:
    fifo = DeltaFIFO()
    a1, a2 = helpers.cm("a", "1"), helpers.cm("a", "2")
    fifo.add(a1)
    fifo.delete(a1)
    fifo.delete(a2)
    assert kinds(fifo.get_by_key("ns/a") or []) == [(ADDED, a1), (DELETED, a1)]


def test_resync_skips_keys_with_pending_deltas() -> None:
    inf = Informer()
    x1, y1, y2 = helpers.cm("x"), helpers.cm("y", "1"), helpers.cm("y", "2")
    inf.store.add(x1)
    inf.store.add(y1)
    inf.fifo.update(y2)
    inf.fifo.resync()
    assert kinds(inf.fifo.get_by_key("ns/x") or []) == [(SYNC, x1)]
    assert kinds(inf.fifo.get_by_key("ns/y") or []) == [(UPDATED, y2)]
    inf.pop()
    inf.pop()
    assert sorted(inf.events, key=lambda e: e[1]["metadata"]["name"]) == [
        ("update", x1, x1),
        ("update", y1, y2),
    ]


def test_resync_without_known_objects_does_nothing() -> None:
    fifo = DeltaFIFO()
    fifo.resync()
    assert fifo.list_keys() == []


def test_sync_deltas_and_tombstones_are_not_transformed() -> None:
    seen: list[Any] = []

    def transform(o: Any) -> Any:
        seen.append(o)
        return {**o, "transformed": True}

    store = Indexer()
    store.add(helpers.cm("k"))
    fifo = DeltaFIFO(known_objects=store, transformer=transform)
    fifo.add(helpers.cm("a"))
    fifo.resync()
    fifo.delete(DeletedFinalStateUnknown("gone", None))
    assert seen == [helpers.cm("a")]
    assert (fifo.get_by_key("ns/a") or [])[0].object["transformed"]
    assert "transformed" not in (fifo.get_by_key("ns/k") or [])[0].object


def test_a_transform_error_queues_nothing() -> None:
    def transform(o: Any) -> Any:
        raise RuntimeError("bad object")

    fifo = DeltaFIFO(transformer=transform)
    with pytest.raises(RuntimeError):
        fifo.add(helpers.cm("a"))
    with pytest.raises(RuntimeError):
        fifo.replace([helpers.cm("b")])
    assert fifo.list_keys() == []


def test_replace_with_a_key_error_queues_nothing() -> None:
    fifo = DeltaFIFO()
    with pytest.raises(errors.KeyFuncError):
        fifo.replace([helpers.cm("a"), {"no": "meta"}])
    assert fifo.list_keys() == []


def test_replace_emits_sync_unless_asked_for_replaced() -> None:
    fifo = DeltaFIFO()
    fifo.replace([helpers.cm("a")])
    assert [d.type for d in fifo.get_by_key("ns/a") or []] == [SYNC]


def test_first_relist_syncs_after_its_last_item_is_processed() -> None:
    inf = Informer()
    a1, b1, c1 = helpers.cm("a"), helpers.cm("b"), helpers.cm("c")
    inf.fifo.replace([a1, b1, a1], "3")  # a duplicate key counts once
    assert not inf.fifo.has_synced()
    synced_during_process: list[bool] = []

    def process(deltas: Deltas, initial: bool) -> None:
        synced_during_process.append(inf.fifo.has_synced())
        inf.process(deltas, initial)

    inf.fifo.pop(process)
    assert not inf.fifo.has_synced()
    inf.fifo.pop(process)
    assert inf.fifo.has_synced()
    assert synced_during_process == [False, False]
    inf.fifo.add(c1)
    inf.pop()
    assert [e for e in inf.events if e[0] == "add"] == [
        ("add", a1, True),
        ("add", b1, True),
        ("add", c1, False),
    ]


def test_first_relist_counts_deletions_of_known_objects() -> None:
    inf = Informer()
    inf.store.add(helpers.cm("old"))
    inf.fifo.replace([helpers.cm("a")])
    inf.pop()
    assert not inf.fifo.has_synced()
    inf.pop()
    assert inf.fifo.has_synced()


def test_empty_first_relist_or_a_direct_add_syncs_at_once() -> None:
    fifo = DeltaFIFO()
    fifo.replace([])
    assert fifo.has_synced()
    other = DeltaFIFO()
    assert not other.has_synced()
    other.update(helpers.cm("a"))
    assert other.has_synced()


def test_a_process_error_drops_the_item_and_propagates() -> None:
    fifo = DeltaFIFO()
    fifo.replace([helpers.cm("a")])

    def fail(deltas: Deltas, initial: bool) -> None:
        raise ValueError("handler broke")

    with pytest.raises(ValueError, match="handler broke"):
        fifo.pop(fail)
    assert fifo.list_keys() == []
    assert fifo.has_synced()


def test_a_closed_queue_drains_then_raises() -> None:
    fifo = DeltaFIFO()
    fifo.add(helpers.cm("a"))
    fifo.close()
    assert fifo.is_closed()
    assert fifo.pop(None)[0].object == helpers.cm("a")
    with pytest.raises(errors.FIFOClosedError, match="closed queue"):
        fifo.pop(None)


def test_pop_times_out_when_nothing_arrives() -> None:
    with pytest.raises(TimeoutError):
        DeltaFIFO().pop(None, timeout=0.01)


def test_a_blocked_pop_wakes_for_an_add_and_for_close() -> None:
    fifo = DeltaFIFO()
    got: list[Any] = []
    failures: list[BaseException] = []
    waiting = threading.Event()

    def consume() -> None:
        waiting.set()
        try:
            got.append(fifo.pop(None, timeout=5)[0].object)
            fifo.pop(None, timeout=5)
        except BaseException as exc:
            failures.append(exc)

    thread = _threads.spawn(consume, "kinformer-test-pop")
    assert waiting.wait(5)
    fifo.add(helpers.cm("a"))
    assert wait_for(lambda: bool(got), timeout=5)
    fifo.close()
    thread.join(5)
    assert got == [helpers.cm("a")]
    assert len(failures) == 1 and isinstance(failures[0], errors.FIFOClosedError)


def test_process_runs_under_the_fifo_lock() -> None:
    fifo = DeltaFIFO()
    fifo.add(helpers.cm("a"))
    producer_done = threading.Event()
    saw_producer_done: list[bool] = []

    def produce() -> None:
        fifo.add(helpers.cm("b"))
        producer_done.set()

    def process(deltas: Deltas, initial: bool) -> None:
        thread = _threads.spawn(produce, "kinformer-test-produce")
        saw_producer_done.append(producer_done.wait(0.2))
        threads.append(thread)

    threads: list[threading.Thread] = []
    fifo.pop(process)
    threads[0].join(5)
    assert saw_producer_done == [False]
    assert producer_done.is_set()


def test_reads_return_newest_objects_and_copies() -> None:
    fifo = DeltaFIFO()
    fifo.add(helpers.cm("a", "1"))
    fifo.update(helpers.cm("a", "2"))
    fifo.add(helpers.cm("b"))
    assert fifo.list() == [helpers.cm("a", "2"), helpers.cm("b")]
    copy = fifo.get(helpers.cm("a")) or []
    copy.clear()
    assert len(fifo.get_by_key("ns/a") or []) == 2
    assert fifo.get_by_key("missing") is None


def test_pop_batch_takes_the_initial_list_alone_and_syncs_after_its_last_batch() -> None:
    fifo = DeltaFIFO(emit_delta_type_replaced=True)
    fifo.replace([helpers.cm("a"), helpers.cm("b"), helpers.cm("c")], "1")
    fifo.add(helpers.cm("d"))  # queued behind the initial list, before it is processed
    seen: list[tuple[list[str], bool, bool]] = []

    def process(batch: list[Deltas], initial: bool) -> None:
        seen.append(([d[-1].object["metadata"]["name"] for d in batch], initial, fifo.has_synced()))

    assert fifo.pop_batch(process, limit=2, timeout=1) == 2
    assert not fifo.has_synced()
    assert fifo.pop_batch(process, limit=100, timeout=1) == 1  # never past the initial list
    assert fifo.has_synced()
    assert fifo.pop_batch(process, limit=100, timeout=1) == 1
    assert seen == [(["a", "b"], True, False), (["c"], True, False), (["d"], False, True)]


def test_pop_batch_syncs_after_an_initial_batch_whose_process_raised() -> None:
    fifo = DeltaFIFO()
    fifo.replace([helpers.cm("a"), helpers.cm("b")], "1")

    def fail(batch: list[Deltas], initial: bool) -> None:
        raise ValueError("handler broke")

    with pytest.raises(ValueError, match="handler broke"):
        fifo.pop_batch(fail, limit=10, timeout=1)
    assert fifo.has_synced()
    assert fifo.list_keys() == []


def test_pop_batch_takes_every_ready_key_in_queue_order_once_synced() -> None:
    fifo = DeltaFIFO()
    for name in ("c", "a", "b"):
        fifo.add(helpers.cm(name))
    fifo.update(helpers.cm("c", "2"))
    batches: list[list[Deltas]] = []
    flags: list[bool] = []

    def process(batch: list[Deltas], initial: bool) -> None:
        batches.append(batch)
        flags.append(initial)

    assert fifo.pop_batch(process, limit=2, timeout=1) == 2
    assert fifo.pop_batch(process, limit=2, timeout=1) == 1
    names = [[d[-1].object["metadata"]["name"] for d in batch] for batch in batches]
    assert names == [["c", "a"], ["b"]]
    c_deltas = [(d.type, d.object["metadata"]["resourceVersion"]) for d in batches[0][0]]
    assert c_deltas == [(DeltaType.ADDED, "1"), (DeltaType.UPDATED, "2")]
    assert flags == [False, False]
    assert fifo.list_keys() == []


def test_pop_batch_times_out_when_empty_and_raises_once_closed() -> None:
    fifo = DeltaFIFO()
    with pytest.raises(TimeoutError):
        fifo.pop_batch(lambda batch, initial: None, limit=10, timeout=0.01)
    fifo.add(helpers.cm("a"))
    fifo.close()
    assert fifo.pop_batch(lambda batch, initial: None, limit=10, timeout=1) == 1
    with pytest.raises(errors.FIFOClosedError):
        fifo.pop_batch(lambda batch, initial: None, limit=10, timeout=1)


class FirstListTaker:
    """A ``take_first_list`` that records what it was given and answers ``takes``."""

    def __init__(self, takes: bool = True) -> None:
        self.takes = takes
        self.calls: list[dict[str, Any]] = []
        self.versions: list[str] = []

    def __call__(self, items: dict[str, Any], resource_version: str, namespace_runs: Any) -> bool:
        self.calls.append(dict(items))
        self.versions.append(resource_version)
        return self.takes


def test_a_first_list_goes_whole_to_take_first_list_keyed_transformed_and_in_order() -> None:
    taker = FirstListTaker()
    fifo = DeltaFIFO(transformer=lambda o: {**o, "t": True}, take_first_list=taker)
    fifo.replace([helpers.cm("b", namespace="x"), helpers.cm("a")], "5")
    assert [list(call) for call in taker.calls] == [["x/b", "ns/a"]]
    assert taker.versions == ["5"]  # the list's version, for the cache to take
    assert taker.calls[0]["ns/a"] == {**helpers.cm("a"), "t": True}
    assert fifo.has_synced()
    assert fifo.list_keys() == [] and len(fifo) == 0
    with pytest.raises(TimeoutError):
        fifo.pop_batch(lambda batch, initial: None, limit=10, timeout=0.01)
    fifo.add(helpers.cm("c"))  # later changes are queued as usual, outside the initial list
    flags: list[bool] = []
    deltas = fifo.pop(lambda deltas, initial: flags.append(initial), timeout=1)
    assert kinds(deltas) == [(ADDED, {**helpers.cm("c"), "t": True})]
    assert flags == [False]


def test_a_first_list_keyed_by_its_lister_goes_to_take_first_list_under_those_keys() -> None:
    taker = FirstListTaker()
    fifo = DeltaFIFO(take_first_list=taker)
    a, b = {"data": {"n": "1"}}, {"data": {"n": "2"}}  # no metadata: not keyable by the FIFO
    fifo.replace_listed([a, b], ["x/b", "ns/a"], None, "5")
    assert taker.calls == [{"x/b": a, "ns/a": b}]
    with pytest.raises(errors.KeyFuncError):  # a key function of its own keys every object
        DeltaFIFO(key_func=lambda o: meta_namespace_key_func(o),
                  take_first_list=FirstListTaker()).replace_listed([a, b], ["x/b", "ns/a"], None, "5")


def test_a_first_list_hands_on_the_namespace_runs_its_lister_carried_unless_transformed() -> None:
    a, b = helpers.cm("a"), helpers.cm("b", namespace="x")
    seen: list[Any] = []

    def take(items: dict[str, Any], resource_version: str, runs: Any) -> bool:
        seen.append((items, runs))
        return True

    DeltaFIFO(take_first_list=take).replace_listed([a, b], ["ns/a", "x/b"], [("ns", 1), ("x", 1)])
    DeltaFIFO(transformer=lambda o: {**o, "metadata": {"name": "t", "namespace": "moved"}},
              take_first_list=take).replace_listed([a, b], ["ns/a", "x/b"], [("ns", 1), ("x", 1)])
    assert [runs for _, runs in seen] == [[("ns", 1), ("x", 1)], None]
    assert list(seen[1][0]) == ["ns/a", "x/b"]


def test_a_listed_relist_with_a_key_listed_twice_is_queued_as_replace_queues_it() -> None:
    a, a2 = helpers.cm("a", 1), helpers.cm("a", 2)
    listed, plain = DeltaFIFO(), DeltaFIFO()
    listed.replace_listed([a, a2], ["ns/a", "ns/a"], [("ns", 2)], "5")
    plain.replace([a, a2], "5")
    assert [kinds(listed.pop(lambda d, i: None, timeout=1))] == [
        kinds(plain.pop(lambda d, i: None, timeout=1))]


def test_a_declined_first_list_is_queued_as_without_take_first_list() -> None:
    taker = FirstListTaker(takes=False)
    transformed: list[str] = []

    def transform(o: Any) -> Any:
        transformed.append(o["metadata"]["name"])
        return o

    fifo = DeltaFIFO(emit_delta_type_replaced=True, transformer=transform, take_first_list=taker)
    fifo.replace([helpers.cm("a"), helpers.cm("b")], "1")
    assert len(taker.calls) == 1
    assert transformed == ["a", "b"]  # once per object, though offered and then queued
    assert not fifo.has_synced()
    assert fifo.list_keys() == ["ns/a", "ns/b"]
    assert kinds(fifo.get_by_key("ns/a") or []) == [(REPLACED, helpers.cm("a"))]


def test_take_first_list_is_offered_only_a_first_list_that_could_not_leave_anything_queued() -> None:
    def offered(fifo: DeltaFIFO, taker: FirstListTaker, objs: list[Any]) -> bool:
        fifo.replace(objs, "1")
        return bool(taker.calls)

    taker = FirstListTaker()
    populated = DeltaFIFO(take_first_list=taker)
    populated.add(helpers.cm("a"))
    assert not offered(populated, taker, [helpers.cm("b")])

    taker = FirstListTaker()
    known = Indexer()
    known.add(helpers.cm("cached"))
    with_known = DeltaFIFO(known_objects=known, take_first_list=taker)
    assert not offered(with_known, taker, [helpers.cm("b")])
    assert sorted(with_known.list_keys()) == ["ns/b", "ns/cached"]  # the cached one's tombstone too

    taker = FirstListTaker()
    closed = DeltaFIFO(take_first_list=taker)
    closed.close()
    assert not offered(closed, taker, [helpers.cm("b")])

    taker = FirstListTaker()
    twice = DeltaFIFO(take_first_list=taker)
    assert not offered(twice, taker, [helpers.cm("a", "1"), helpers.cm("a", "2")])
    assert kinds(twice.get_by_key("ns/a") or []) == [
        (SYNC, helpers.cm("a", "1")),
        (SYNC, helpers.cm("a", "2")),
    ]

    taker = FirstListTaker()
    empty = DeltaFIFO(take_first_list=taker)
    assert not offered(empty, taker, [])
    assert empty.has_synced()

    taker = FirstListTaker()
    relisted = DeltaFIFO(take_first_list=taker)
    assert offered(relisted, taker, [helpers.cm("a")])
    relisted.replace([helpers.cm("b")], "2")
    assert len(taker.calls) == 1
    assert [d.type for d in relisted.get_by_key("ns/b") or []] == [SYNC]


def test_a_failing_take_first_list_or_transform_leaves_the_fifo_unchanged() -> None:
    def broken(items: dict[str, Any], resource_version: str, namespace_runs: Any) -> bool:
        raise RuntimeError("cannot take")

    fifo = DeltaFIFO(take_first_list=broken)
    with pytest.raises(RuntimeError, match="cannot take"):
        fifo.replace([helpers.cm("a")], "1")
    assert not fifo.has_synced() and fifo.list_keys() == []

    failures = [ValueError("cannot transform")]

    def transform(o: Any) -> Any:
        if failures:
            raise failures.pop()
        return o

    taker = FirstListTaker()
    other = DeltaFIFO(transformer=transform, take_first_list=taker)
    with pytest.raises(ValueError, match="cannot transform"):
        other.replace([helpers.cm("a")], "1")
    assert taker.calls == [] and not other.has_synced() and other.list_keys() == []
    other.replace([helpers.cm("a")], "2")  # the next list, transformed fine, is still a first list
    assert len(taker.calls) == 1 and other.has_synced()


def test_take_first_list_runs_under_the_fifo_lock() -> None:
    producer_done = threading.Event()
    saw_producer_done: list[bool] = []
    threads: list[threading.Thread] = []

    def produce() -> None:
        fifo.add(helpers.cm("b"))
        producer_done.set()

    def take(items: dict[str, Any], resource_version: str, namespace_runs: Any) -> bool:
        threads.append(_threads.spawn(produce, "kinformer-test-produce"))
        saw_producer_done.append(producer_done.wait(0.2))
        return True

    fifo = DeltaFIFO(take_first_list=take)
    fifo.replace([helpers.cm("a")], "1")
    threads[0].join(5)
    assert saw_producer_done == [False]
    assert producer_done.is_set()
    assert fifo.list_keys() == ["ns/b"]


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference.


def test_a_closed_fifo_still_accepts_items() -> None:
    fifo = kinformer.DeltaFIFO()
    fifo.close()
    fifo.add(helpers.cm("a"))
    deltas = fifo.pop(lambda deltas, is_in_initial_list: None, timeout=helpers.TIMEOUT)
    assert [(d.type, helpers.describe(d.object)) for d in deltas] == [(kinformer.DeltaType.ADDED, "a1")]


def test_relist_tombstone_of_a_known_key_that_cannot_be_looked_up_carries_none() -> None:
    class Known:
        """A KeyListerGetter whose ``ns/ghost`` vanished between listing keys and the lookup."""

        def list_keys(self) -> list[str]:
            return ["ns/ghost", "ns/x"]

        def get_by_key(self, key: str) -> Any:
            return helpers.cm("x") if key == "ns/x" else None

    fifo = kinformer.DeltaFIFO(known_objects=Known(), emit_delta_type_replaced=True)
    fifo.replace([], "1")
    tombstones = {key: (fifo.get_by_key(key) or [])[-1].object for key in fifo.list_keys()}
    assert {key: t.obj for key, t in tombstones.items()} == {"ns/ghost": None, "ns/x": helpers.cm("x")}


def test_pops_once_synced_hand_over_outside_the_initial_list_as_before() -> None:
    fifo = DeltaFIFO()
    fifo.replace([helpers.cm("a")])
    flags: list[bool] = []
    fifo.pop(lambda deltas, initial: flags.append(initial))
    assert fifo.has_synced()
    fifo.add(helpers.cm("b"))
    fifo.update(helpers.cm("b"))
    fifo.add(helpers.cm("c"))
    fifo.add(helpers.cm("d"))
    assert [d.type for d in fifo.pop(None)] == [DeltaType.ADDED, DeltaType.UPDATED]

    def fail(deltas: Deltas, initial: bool) -> None:
        flags.append(initial)
        raise ValueError("handler broke")

    with pytest.raises(ValueError, match="handler broke"):
        fifo.pop(fail)
    fifo.pop(lambda deltas, initial: flags.append(initial))
    assert flags == [True, False, False] and fifo.list_keys() == [] and fifo.has_synced()
    with pytest.raises(TimeoutError):
        fifo.pop(None, timeout=0.01)


@pytest.mark.parametrize("populated", [False, True])
def test_a_list_holding_one_key_for_two_logical_clusters_objects_is_refused(populated: bool) -> None:
    taken: list[dict[str, Any]] = []
    fifo = DeltaFIFO(take_first_list=lambda items, rv, runs: bool(taken.append(items)) or True)
    if populated:
        fifo.replace([helpers.cm("other", "3")], "3")
    queued = len(fifo)
    of_a = helpers.cm("app", "1", annotations={"kcp.io/cluster": "root:a"})
    of_b = helpers.cm("app", "2", annotations={"kcp.io/cluster": "root:b"})
    for listed in (lambda: fifo.replace([of_a, of_b], "5"),
                   lambda: fifo.replace_listed([of_a, of_b], ["ns/app", "ns/app"], None, "5")):
        with pytest.raises(kinformer.ClustersMergedError) as caught:
            listed()
        assert (caught.value.key, caught.value.clusters) == ("ns/app", ["root:a", "root:b"])
    assert len(fifo) == queued and len(taken) == (1 if populated else 0)  # nothing queued or taken
