"""Acceptance: the public surface of API.md and the scenarios of SEMANTICS.md, through ``kinformer`` only.

Every name here is imported from ``kinformer`` and called with the argument names API.md spells;
scripted ListerWatchers and a FakeClock stand in for the server, so nothing here needs HTTP.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes.client import V1ConfigMap, V1ObjectMeta

from kinformer import (
    NAMESPACE_INDEX,
    AlreadyStartedError,
    APIResourceMeta,
    BucketRateLimiter,
    ChannelWatch,
    Context,
    ControllerManager,
    DelayingQueue,
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    DeltaType,
    FIFOClosedError,
    FilteringResourceEventHandler,
    GenericLister,
    GoneError,
    GroupVersionKind,
    GroupVersionResource,
    Indexer,
    InformerSource,
    ItemExponentialFailureRateLimiter,
    ListOptions,
    ListResult,
    ListWatch,
    ManagedController,
    MaxOfRateLimiter,
    NotFoundError,
    ObjectName,
    RateLimitingQueue,
    Reflector,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    StoppedError,
    ThreadSafeStore,
    WatchEvent,
    WorkQueue,
    context_for_channel,
    default_controller_rate_limiter,
    deleted_object,
    deletion_handling_meta_namespace_key_func,
    index_func_to_key_func_adapter,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
    wait_for_cache_sync,
)
from kinformer.testing import FakeClock, wait_for

TIMEOUT = 5.0
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")


def obj(name: str, rv: int = 1, namespace: str = "ns", **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": str(rv)}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def name_of(o: Any) -> str:
    if isinstance(o, DeletedFinalStateUnknown):
        return f"DFSU({o.key})"
    return str(o["metadata"]["name"]) + str(o["metadata"]["resourceVersion"])


def by_name(o: dict[str, Any]) -> list[str]:
    return [o["metadata"]["name"]]


# -- keys, stores and indexers -----------------------------------------------------------------


def test_key_funcs_accept_official_client_models() -> None:
    namespaced = V1ConfigMap(metadata=V1ObjectMeta(name="a", namespace="ns"))
    cluster = V1ConfigMap(metadata=V1ObjectMeta(name="b"))
    assert meta_namespace_key_func(namespaced) == "ns/a"
    assert meta_namespace_key_func(cluster) == "b"
    assert deletion_handling_meta_namespace_key_func(namespaced) == "ns/a"
    assert meta_namespace_index_func(namespaced) == ["ns"]
    assert meta_namespace_index_func(cluster) == [""]


def test_indexer_caches_official_client_models_and_indexes_them_by_namespace() -> None:
    indexer = Indexer(key_func=meta_namespace_key_func, indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    model = V1ConfigMap(metadata=V1ObjectMeta(name="a", namespace="ns", labels={"app": "web"}))
    indexer.add(model)
    assert indexer.get_by_key("ns/a") is model
    assert indexer.by_index(NAMESPACE_INDEX, "ns") == [model]
    assert GenericLister(indexer, CONFIGMAPS).by_namespace("ns").list("app=web") == [model]


def test_deletion_handling_key_func_reads_the_key_of_a_tombstone_without_touching_its_object() -> None:
    assert deletion_handling_meta_namespace_key_func(DeletedFinalStateUnknown("ns/gone", None)) == "ns/gone"
    tombstone = DeletedFinalStateUnknown(key="k", obj=obj("x"))
    assert (tombstone.key, tombstone.obj["metadata"]["name"]) == ("k", "x")


def test_split_meta_namespace_key_follows_client_go_including_edge_cases() -> None:
    assert split_meta_namespace_key("ns/name") == ("ns", "name")
    assert split_meta_namespace_key("name") == ("", "name")
    assert split_meta_namespace_key("") == ("", "")
    assert split_meta_namespace_key("ns/") == ("ns", "")
    with pytest.raises(ValueError):
        split_meta_namespace_key("a/b/c")


def test_thread_safe_store_replace_rebuilds_every_index_from_a_dict() -> None:
    store = ThreadSafeStore({"by_name": by_name})
    store.add("k1", obj("a"))
    store.update("k1", obj("b"))
    assert store.index_keys("by_name", "a") == []
    assert store.index_keys("by_name", "b") == ["k1"]
    store.replace({"k2": obj("c"), "k3": obj("c")}, "42")
    assert store.get("k1") is None
    assert sorted(store.list_keys()) == ["k2", "k3"]
    assert sorted(store.index_keys("by_name", "c")) == ["k2", "k3"]
    assert store.list_index_func_values("by_name") == ["c"]
    store.delete("k2")
    store.delete("missing")
    assert [o["metadata"]["name"] for o in store.list()] == ["c"]


def test_store_get_returns_none_for_a_missing_object() -> None:
    store = new_store(meta_namespace_key_func)
    assert store.get(obj("a")) is None
    assert store.get_by_key("ns/a") is None
    store.add(obj("a"))
    stored = store.get(obj("a", rv=9))
    assert stored is not None and stored["metadata"]["resourceVersion"] == "1"
    assert len(store) == 1
    store.resync()
    store.delete(obj("missing"))
    assert store.list_keys() == ["ns/a"]


def test_index_queries_and_emptied_values_disappear() -> None:
    indexer = new_indexer(
        meta_namespace_key_func, {"app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]}
    )
    indexer.replace([obj("a", app="web"), obj("b", app="web"), obj("c", app="db")], "5")
    assert sorted(indexer.index_keys("app", "web")) == ["ns/a", "ns/b"]
    assert sorted(name_of(o) for o in indexer.index("app", obj("z", app="web"))) == ["a1", "b1"]
    assert sorted(indexer.list_index_func_values("app")) == ["db", "web"]
    indexer.delete(obj("c"))
    assert indexer.list_index_func_values("app") == ["web"]
    assert indexer.by_index("app", "nothing") == []
    assert set(indexer.get_indexers()) == {"app"}


def test_unknown_index_name_is_a_key_error_but_listing_its_values_is_empty() -> None:
    indexer = Indexer(indexers={})
    with pytest.raises(KeyError):
        indexer.by_index("nope", "x")
    with pytest.raises(KeyError):
        indexer.index_keys("nope", "x")
    with pytest.raises(KeyError):
        indexer.index("nope", obj("a"))
    assert indexer.list_index_func_values("nope") == []


def test_add_indexers_conflict_is_a_value_error_and_adds_nothing() -> None:
    indexer = Indexer(indexers={"a": by_name})
    indexer.add(obj("x"))
    with pytest.raises(ValueError):
        indexer.add_indexers({"b": by_name, "a": by_name})
    assert set(indexer.get_indexers()) == {"a"}
    indexer.add_indexers({"b": by_name})
    assert indexer.index_keys("b", "x") == ["ns/x"]


def test_store_add_of_an_object_without_metadata_raises_and_changes_nothing() -> None:
    store = new_store(meta_namespace_key_func)
    with pytest.raises(KeyError, match="object has no meta"):
        store.add({"kind": "ConfigMap"})
    assert store.list() == []


# -- DeltaFIFO (SC-1..SC-8) -------------------------------------------------------------------


def pop_now(fifo: DeltaFIFO) -> tuple[list[tuple[DeltaType, str]], bool]:
    seen: list[bool] = []
    deltas = fifo.pop(lambda d, initial: seen.append(initial), timeout=TIMEOUT)
    return [(d.type, name_of(d.object)) for d in deltas], seen[0]


def test_delta_type_values_and_delta_shape() -> None:
    assert [DeltaType.ADDED.value, DeltaType.UPDATED.value, DeltaType.DELETED.value] == [
        "Added",
        "Updated",
        "Deleted",
    ]
    assert [DeltaType.REPLACED.value, DeltaType.SYNC.value] == ["Replaced", "Sync"]
    assert DeltaType("Replaced") is DeltaType.REPLACED
    delta = Delta(DeltaType.ADDED, obj("a"))
    assert delta.type is DeltaType.ADDED and delta.object["metadata"]["name"] == "a"
    assert tuple(delta) == (DeltaType.ADDED, obj("a"))


def test_sc1_add_then_update_pop_once_with_both_deltas() -> None:
    fifo = DeltaFIFO(key_func=meta_namespace_key_func)
    fifo.add(obj("a", 1))
    fifo.update(obj("a", 2))
    assert fifo.get_by_key("ns/a") is not None
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "a1"), (DeltaType.UPDATED, "a2")]


def test_sc2_deleting_an_unknown_object_queues_nothing_and_pop_times_out() -> None:
    fifo = DeltaFIFO(known_objects=Indexer())
    fifo.delete(obj("a"))
    assert fifo.list_keys() == []
    with pytest.raises(TimeoutError):
        fifo.pop(lambda d, initial: None, timeout=0.01)


def test_sc3_replace_after_a_pending_add_reports_the_add_deleted() -> None:
    known = Indexer()
    fifo = DeltaFIFO(
        key_func=deletion_handling_meta_namespace_key_func, known_objects=known, emit_delta_type_replaced=True
    )
    fifo.add(obj("a"))
    assert fifo.has_synced()
    fifo.replace([obj("b")], "10")
    assert fifo.list_keys() == ["ns/a", "ns/b"]
    assert pop_now(fifo) == ([(DeltaType.ADDED, "a1"), (DeltaType.DELETED, "DFSU(ns/a)")], False)
    assert pop_now(fifo) == ([(DeltaType.REPLACED, "b1")], False)


def test_sc4_relist_without_a_known_object_queues_a_tombstone_with_its_last_state() -> None:
    known = Indexer(key_func=deletion_handling_meta_namespace_key_func)
    known.add(obj("x"))
    fifo = DeltaFIFO(
        key_func=deletion_handling_meta_namespace_key_func, known_objects=known, emit_delta_type_replaced=True
    )
    fifo.replace([], "2")
    deltas = fifo.pop(lambda d, initial: None, timeout=TIMEOUT)
    assert [d.type for d in deltas] == [DeltaType.DELETED]
    tombstone = deltas[0].object
    assert isinstance(tombstone, DeletedFinalStateUnknown)
    assert (tombstone.key, tombstone.obj) == ("ns/x", obj("x"))


def test_sc5_relist_tombstone_carries_the_newest_queued_object() -> None:
    known = Indexer()
    known.add(obj("x", 1))
    fifo = DeltaFIFO(known_objects=known, emit_delta_type_replaced=True)
    fifo.update(obj("x", 2))
    fifo.replace([], "3")
    deltas = fifo.get_by_key("ns/x")
    assert deltas is not None and [d.type for d in deltas] == [DeltaType.UPDATED, DeltaType.DELETED]
    assert deltas[1].object.obj == obj("x", 2)
    assert fifo.list_keys() == ["ns/x"]


def test_sc6_a_real_delete_beats_a_relist_tombstone_in_either_order() -> None:
    known = Indexer()
    known.add(obj("x"))
    fifo = DeltaFIFO(known_objects=known, emit_delta_type_replaced=True)
    fifo.delete(obj("x"))
    fifo.replace([], "2")
    assert [(d.type, name_of(d.object)) for d in fifo.get_by_key("ns/x") or []] == [(DeltaType.DELETED, "x1")]
    fifo2 = DeltaFIFO(known_objects=known, emit_delta_type_replaced=True)
    fifo2.replace([], "2")
    fifo2.delete(obj("x"))
    assert [(d.type, name_of(d.object)) for d in fifo2.get_by_key("ns/x") or []] == [
        (DeltaType.DELETED, "x1")
    ]


def test_sc7_resync_skips_keys_with_pending_deltas() -> None:
    known = Indexer()
    known.replace([obj("x"), obj("y")], "1")
    fifo = DeltaFIFO(known_objects=known, emit_delta_type_replaced=True)
    fifo.update(obj("y", 2))
    fifo.resync()
    assert sorted(fifo.list_keys()) == ["ns/x", "ns/y"]
    assert [(d.type, name_of(d.object)) for d in fifo.get_by_key("ns/x") or []] == [(DeltaType.SYNC, "x1")]
    assert [(d.type, name_of(d.object)) for d in fifo.get_by_key("ns/y") or []] == [(DeltaType.UPDATED, "y2")]


def test_sc8_initial_population_syncs_after_the_last_initial_pop() -> None:
    fifo = DeltaFIFO(known_objects=Indexer(), emit_delta_type_replaced=True)
    fifo.replace([obj("a"), obj("b"), obj("a")], "1")
    assert not fifo.has_synced()
    assert pop_now(fifo)[1] is True
    assert not fifo.has_synced()
    assert pop_now(fifo)[1] is True
    assert fifo.has_synced()
    fifo.add(obj("c"))
    assert pop_now(fifo) == ([(DeltaType.ADDED, "c1")], False)


def test_replace_emits_sync_deltas_unless_replaced_is_asked_for() -> None:
    fifo = DeltaFIFO()
    fifo.replace([obj("a")], "1")
    assert [d.type for d in fifo.get(obj("a")) or []] == [DeltaType.SYNC]
    assert fifo.list() == [obj("a")]


def test_pop_removes_the_item_before_an_error_from_process_propagates() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))

    def boom(deltas: Any, initial: bool) -> None:
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError):
        fifo.pop(boom, timeout=TIMEOUT)
    assert fifo.list_keys() == []


def test_closed_fifo_drains_then_raises_fifo_closed() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    fifo.close()
    assert fifo.is_closed()
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "a1")]
    with pytest.raises(FIFOClosedError):
        fifo.pop(lambda d, initial: None, timeout=TIMEOUT)


def test_closing_wakes_a_blocked_pop() -> None:
    fifo = DeltaFIFO()
    raised: queue.Queue[BaseException] = queue.Queue()

    def popper() -> None:
        try:
            fifo.pop(lambda d, initial: None)
        except BaseException as exc:
            raised.put(exc)

    thread = threading.Thread(target=popper)
    thread.start()
    fifo.close()
    thread.join(TIMEOUT)
    assert isinstance(raised.get(timeout=TIMEOUT), FIFOClosedError)


def test_fifo_transformer_runs_once_at_enqueue() -> None:
    calls: list[str] = []

    def transform(o: dict[str, Any]) -> dict[str, Any]:
        calls.append(o["metadata"]["name"])
        return {**o, "transformed": True}

    fifo = DeltaFIFO(transformer=transform)
    fifo.add(obj("a"))
    deltas = fifo.pop(lambda d, initial: None, timeout=TIMEOUT)
    assert deltas[0].object["transformed"] and calls == ["a"]


# -- informers over a scripted ListerWatcher ----------------------------------------------------


class Source:
    """A scripted server: ``list`` answers the current objects, each watch is fed by the test."""

    def __init__(self, *objs: dict[str, Any], rv: int = 10) -> None:
        self.items = list(objs)
        self.rv = rv
        self.watches: queue.Queue[ChannelWatch] = queue.Queue()
        self.lister_watcher = ListWatch(self._list, self._watch)

    def _list(self, options: ListOptions) -> ListResult:
        return ListResult(list(self.items), str(self.rv), "")

    def _watch(self, options: ListOptions) -> ChannelWatch:
        watch = ChannelWatch()
        self.watches.put(watch)
        return watch

    def watch(self) -> ChannelWatch:
        return self.watches.get(timeout=TIMEOUT)


class Recorder(ResourceEventHandlerFuncs):
    """Handler funcs that queue ``(kind, ...)`` tuples for the test."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        super().__init__(
            add_func=lambda o: self.events.put(("add", name_of(o))),
            update_func=lambda old, new: self.events.put(("update", name_of(old), name_of(new))),
            delete_func=lambda o: self.events.put(("delete", name_of(o))),
        )

    def next(self) -> tuple[Any, ...]:
        return self.events.get(timeout=TIMEOUT)

    def take(self, count: int) -> list[tuple[Any, ...]]:
        return [self.next() for _ in range(count)]

    def quiet(self) -> bool:
        return self.events.empty()


class Detailed:
    """A ResourceEventHandler recording ``is_in_initial_list`` too."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.events.put(("add", name_of(obj), is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.events.put(("update", name_of(old), name_of(new)))

    def on_delete(self, obj: Any) -> None:
        self.events.put(("delete", name_of(obj)))

    def take(self, count: int) -> list[tuple[Any, ...]]:
        return [self.events.get(timeout=TIMEOUT) for _ in range(count)]


@contextmanager
def running(informer: SharedIndexInformer, stop: Any = None) -> Iterator[Any]:
    stop = stop if stop is not None else threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,))
    thread.start()
    try:
        yield stop
    finally:
        if isinstance(stop, threading.Event):
            stop.set()
        else:
            stop.cancel()
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert informer.is_stopped()


def test_informer_runs_on_an_event_syncs_and_delivers_initial_adds() -> None:
    source = Source(obj("a"), obj("b"))
    informer = SharedIndexInformer(
        source.lister_watcher,
        example_object=None,
        default_event_handler_resync_period=0,
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
    )
    handler = Detailed()
    registration = informer.add_event_handler(handler)
    assert not informer.has_synced()
    assert informer.last_sync_resource_version() == ""
    with running(informer) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, registration.has_synced, timeout=TIMEOUT)
        assert sorted(handler.take(2)) == [("add", "a1", True), ("add", "b1", True)]
        assert informer.last_sync_resource_version() == "10"
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
        assert informer.get_store() is informer.get_indexer()
        assert informer.get_indexer().index_keys(NAMESPACE_INDEX, "ns") == sorted(["ns/a", "ns/b"])
        watch = source.watch()
        watch.add(obj("c", 11))
        assert handler.take(1) == [("add", "c11", False)]


def test_informer_runs_on_a_context_too() -> None:
    informer = SharedIndexInformer(Source(obj("a")).lister_watcher)
    with running(informer, Context()) as ctx:
        assert wait_for_cache_sync(ctx, informer.has_synced, timeout=TIMEOUT)


def test_sc1_watch_add_and_modify_reach_the_handler_as_add_then_update_with_the_store_first() -> None:
    source = Source()
    informer = SharedIndexInformer(source.lister_watcher)
    seen_in_store: list[Any] = []
    events: queue.Queue[tuple[Any, ...]] = queue.Queue()

    def on_update(old: Any, new: Any) -> None:
        seen_in_store.append(informer.get_indexer().get_by_key("ns/a"))
        events.put(("update", name_of(old), name_of(new)))

    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda o: events.put(("add", name_of(o))), update_func=on_update)
    )
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        watch = source.watch()
        watch.add(obj("a", 11))
        watch.modify(obj("a", 12))
        assert [events.get(timeout=TIMEOUT) for _ in range(2)] == [("add", "a11"), ("update", "a11", "a12")]
        assert seen_in_store[0] is not None and name_of(seen_in_store[0]) in {"a12"}
        assert name_of(informer.get_indexer().get_by_key("ns/a")) == "a12"


def test_sc4_relist_delivers_a_tombstone_to_on_delete() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, clock=clock)
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.next() == ("add", "x1")
        source.items = []
        source.rv = 20
        source.watch().error({"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"})
        backoff(clock)
        assert handler.next() == ("delete", "DFSU(ns/x)")
        assert informer.get_indexer().list() == []


def test_sc9_late_handler_gets_initial_adds_only_and_others_hear_nothing_extra() -> None:
    source = Source(obj("a"), obj("b"))
    informer = SharedIndexInformer(source.lister_watcher)
    first = Detailed()
    informer.add_event_handler(first)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        first.take(2)
        late = Detailed()
        registration = informer.add_event_handler(late)
        assert sorted(late.take(2)) == [("add", "a1", True), ("add", "b1", True)]
        assert wait_for(registration.has_synced, TIMEOUT)
        assert first.events.empty() and late.events.empty()
        informer.remove_event_handler(registration)
        informer.remove_event_handler(registration)


def test_sc10_filtering_handler_turns_moves_across_the_filter_into_add_and_delete() -> None:
    inner = Detailed()
    filtered: list[Any] = []

    def is_web(o: Any) -> bool:
        filtered.append(o)
        if isinstance(o, DeletedFinalStateUnknown):
            return True
        return bool(o["metadata"].get("labels", {}).get("app") == "web")

    handler = FilteringResourceEventHandler(is_web, inner)
    handler.on_update(obj("a", 1, app="web"), obj("a", 2, app="db"))
    handler.on_update(obj("a", 2, app="db"), obj("a", 3, app="web"))
    tombstone = DeletedFinalStateUnknown("ns/a", obj("a", 3, app="web"))
    handler.on_delete(tombstone)
    assert inner.take(3) == [("delete", "a1"), ("add", "a3", False), ("delete", "DFSU(ns/a)")]
    assert filtered[-1] is tombstone


def step_resync(clock: FakeClock, seconds: float) -> None:
    """Step the clock once the reflector's resync timer waits."""
    assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT)
    clock.step(seconds)


def test_sc13_an_informer_without_resync_never_resyncs_whatever_a_handler_asks() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, default_event_handler_resync_period=0, clock=clock)
    handler = Recorder()
    informer.add_event_handler_with_resync_period(handler, 30)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.next() == ("add", "x1")
        watch = source.watch()
        clock.step(120)
        watch.add(obj("marker", 11))
        assert handler.next() == ("add", "marker11")


def test_sc13_a_shorter_handler_period_before_start_lowers_the_check_period_only_for_itself() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, default_event_handler_resync_period=10, clock=clock)
    slow = Recorder()
    fast = Recorder()
    informer.add_event_handler(slow)
    informer.add_event_handler_with_resync_period(fast, 5)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert slow.next() == ("add", "x1") and fast.next() == ("add", "x1")
        watch = source.watch()
        step_resync(clock, 5)
        assert fast.next() == ("update", "x1", "x1")
        watch.add(obj("marker", 11))
        assert slow.next() == ("add", "marker11") and fast.next() == ("add", "marker11")
        step_resync(clock, 5)
        assert sorted(slow.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]
        assert sorted(fast.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_sc13_a_shorter_handler_period_after_start_is_raised_to_the_check_period() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, default_event_handler_resync_period=10, clock=clock)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        watch = source.watch()
        late = Recorder()
        informer.add_event_handler_with_resync_period(late, 5)
        assert late.next() == ("add", "x1")
        step_resync(clock, 5)
        watch.add(obj("marker", 11))
        assert late.next() == ("add", "marker11")
        step_resync(clock, 5)
        assert sorted(late.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_sc7_resync_delivers_equal_version_updates_to_handlers_that_asked() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, default_event_handler_resync_period=10, clock=clock)
    syncing = Recorder()
    quiet = Recorder()
    informer.add_event_handler(syncing)
    informer.add_event_handler_with_resync_period(quiet, 0)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert syncing.next() == ("add", "x1") and quiet.next() == ("add", "x1")
        source.watch()
        assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT)
        clock.step(10)
        assert syncing.next() == ("update", "x1", "x1")
        assert quiet.quiet()


def test_informer_setters_after_start_and_handlers_after_stop_raise() -> None:
    source = Source()
    informer = SharedIndexInformer(source.lister_watcher)
    informer.set_transform(lambda o: o)
    informer.set_watch_error_handler(lambda r, e: None)
    informer.add_indexers({"by_name": by_name})
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        with pytest.raises(AlreadyStartedError):
            informer.set_transform(lambda o: o)
        with pytest.raises(AlreadyStartedError):
            informer.set_watch_error_handler(lambda r, e: None)
        informer.add_indexers({"later": by_name})
    with pytest.raises(StoppedError):
        informer.add_event_handler(Recorder())


def test_second_run_returns_at_once() -> None:
    informer = SharedIndexInformer(Source().lister_watcher)
    with running(informer) as stop:
        assert wait_for(informer.has_synced, TIMEOUT)
        informer.run(stop)


def test_informer_transform_is_applied_before_caching() -> None:
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher)
    informer.set_transform(lambda o: {**o, "seen": True})
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        cached = informer.get_indexer().get_by_key("ns/a")
        assert cached is not None and cached["seen"] is True


def test_last_error_reports_a_failing_list_and_clears_after_a_good_one() -> None:
    clock = FakeClock()
    failures = [RuntimeError("list failed")]
    source = Source(obj("a"))

    def flaky_list(options: ListOptions) -> ListResult:
        if failures:
            raise failures.pop()
        return ListResult([obj("a")], "10", "")

    informer = SharedIndexInformer(ListWatch(flaky_list, source.lister_watcher.watch_func), clock=clock)
    assert informer.last_error() is None
    with running(informer):
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        assert "list failed" in str(informer.last_error())
        assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT)
        clock.step(max(clock.waiters()))
        assert wait_for(informer.has_synced, TIMEOUT)
        assert informer.last_error() is None


def test_bad_objects_and_event_types_are_logged_at_warning_and_never_cached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nameless = {"kind": "ConfigMap", "metadata": {"namespace": "ns", "resourceVersion": "3"}}
    source = Source(obj("a"), nameless)
    informer = SharedIndexInformer(source.lister_watcher)
    handler = Recorder()
    informer.add_event_handler(handler)
    caplog.set_level(logging.WARNING)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.next() == ("add", "a1")
        watch = source.watch()
        watch.send(WatchEvent("GOSSIP", obj("g", 11)))
        watch.send(
            WatchEvent(
                "ADDED", {"kind": "ConfigMap", "metadata": {"namespace": "ns", "resourceVersion": "12"}}
            )
        )
        watch.add(obj("b", 13))
        assert handler.next() == ("add", "b13")
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) >= 2


# -- listers ----------------------------------------------------------------------------------


def test_generic_lister_gets_lists_and_raises_not_found_like_the_api_server() -> None:
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    indexer.replace(
        [
            obj("a", app="web", tier="a"),
            obj("b", app="web", tier="c"),
            obj("c", app="web", legacy="y"),
            obj("n", namespace=""),
        ],
        "1",
    )
    lister = GenericLister(indexer, DEPLOYMENTS)
    assert len(lister.list()) == 4
    assert [
        o["metadata"]["name"] for o in lister.by_namespace("ns").list("app=web,tier in (a,b),!legacy")
    ] == ["a"]
    assert lister.by_namespace("ns").get("a")["metadata"]["name"] == "a"
    assert lister.get("n")["metadata"]["name"] == "n"
    with pytest.raises(NotFoundError) as info:
        lister.by_namespace("ns").get("zz")
    assert 'deployments.apps "zz" not found' in str(info.value)
    with pytest.raises(NotFoundError) as core:
        GenericLister(indexer, CONFIGMAPS).get("zz")
    assert 'configmaps "zz" not found' in str(core.value)
    assert lister.by_namespace("other").list() == []


def test_group_version_identities_are_values() -> None:
    assert str(DEPLOYMENTS) == "apps/v1, Resource=deployments"
    assert GroupVersionResource("apps", "v1", "deployments") == DEPLOYMENTS
    assert {DEPLOYMENTS: 1}[GroupVersionResource("apps", "v1", "deployments")] == 1
    assert hash(GroupVersionKind("apps", "v1", "Deployment")) == hash(
        GroupVersionKind("apps", "v1", "Deployment")
    )
    with pytest.raises(AttributeError):
        DEPLOYMENTS.group = "x"  # type: ignore[misc]


# -- cancellation -----------------------------------------------------------------------------


def test_context_child_is_cancelled_with_its_parent_or_alone() -> None:
    parent = Context()
    child = parent.child()
    other = parent.child()
    other.cancel()
    assert other.cancelled() and not parent.cancelled()
    assert not child.wait(timeout=0.01)
    parent.cancel()
    assert child.wait() and child.done.is_set() and child.cancelled()


@pytest.mark.parametrize("parent_kind", ["event", "context"])
def test_context_for_channel_follows_its_parent_or_its_cancel(parent_kind: str) -> None:
    parent: Any = threading.Event() if parent_kind == "event" else Context()
    ctx, cancel = context_for_channel(parent)
    assert not ctx.cancelled()
    parent.set() if parent_kind == "event" else parent.cancel()
    assert ctx.wait(timeout=TIMEOUT)
    parent2: Any = threading.Event() if parent_kind == "event" else Context()
    ctx2, cancel2 = context_for_channel(parent2)
    cancel2()
    assert ctx2.wait(timeout=TIMEOUT)
    cancel()


def test_wait_for_cache_sync_with_a_set_stop_still_checks_once() -> None:
    stop = threading.Event()
    stop.set()
    assert wait_for_cache_sync(stop, lambda: True) is True
    assert wait_for_cache_sync(stop, lambda: False) is False
    ctx = Context()
    ctx.cancel()
    assert wait_for_cache_sync(ctx, lambda: False, timeout=None) is False
    assert wait_for_cache_sync(threading.Event(), lambda: False, timeout=0.01) is False


# -- reflector (SC-14..SC-19) ------------------------------------------------------------------


class Script:
    """Hands each list/watch request to the test; the test answers with a result or an error."""

    def __init__(self) -> None:
        self.requests: queue.Queue[tuple[str, ListOptions]] = queue.Queue()
        self.answers: queue.Queue[Any] = queue.Queue()
        self.closed = threading.Event()
        self.lister_watcher = ListWatch(lambda o: self._answer("list", o), lambda o: self._answer("watch", o))

    def _answer(self, verb: str, options: ListOptions) -> Any:
        self.requests.put((verb, options))
        while not self.closed.is_set():
            try:
                answer = self.answers.get(timeout=0.02)
            except queue.Empty:
                continue
            if isinstance(answer, BaseException):
                raise answer
            return answer
        raise ConnectionRefusedError("closed")

    def expect(self, verb: str, answer: Any) -> ListOptions:
        got, options = self.requests.get(timeout=TIMEOUT)
        assert got == verb, (got, options)
        self.answers.put(answer)
        return options


@contextmanager
def reflecting(store: Any = None) -> Iterator[tuple[Script, FakeClock, Any]]:
    script = Script()
    clock = FakeClock()
    store = store if store is not None else Indexer()
    reflector = Reflector(
        script.lister_watcher, store, resync_period=0, name="acceptance", clock=clock, random=lambda: 0.0
    )
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,))
    thread.start()
    try:
        yield script, clock, reflector
    finally:
        stop.set()
        script.closed.set()
        thread.join(TIMEOUT)
        assert not thread.is_alive()


def backoff(clock: FakeClock) -> float:
    assert wait_for(lambda: any(w > 0 for w in clock.waiters()), TIMEOUT)
    delay = min(w for w in clock.waiters() if w > 0)
    clock.step(delay)
    return delay


def gone() -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 410,
        "reason": "Expired",
        "message": "too old",
    }


def test_sc14_first_list_at_zero_then_a_bookmarked_watch_at_the_list_version() -> None:
    store = Indexer()
    with reflecting(store) as (script, _clock, reflector):
        assert script.expect("list", ListResult([obj("a", 100)], "100", "")).resource_version == "0"
        watch_options = script.expect("watch", ChannelWatch())
        assert watch_options.resource_version == "100"
        assert watch_options.allow_watch_bookmarks
        assert watch_options.timeout_seconds is not None and 300 <= watch_options.timeout_seconds < 600
        assert reflector.last_sync_resource_version() == "100"
        assert store.list_keys() == ["ns/a"]


def test_sc15_sc16_rewatch_after_a_clean_close_then_relist_at_the_last_version_after_410() -> None:
    with reflecting() as (script, clock, _reflector):
        script.expect("list", ListResult([], "100", ""))
        watch = ChannelWatch()
        script.expect("watch", watch)
        watch.modify(obj("a", 105))
        watch.end()
        rewatch = ChannelWatch()
        assert script.expect("watch", rewatch).resource_version == "105"
        rewatch.error(gone())
        assert backoff(clock) == pytest.approx(0.8)
        got, options = script.requests.get(timeout=TIMEOUT)
        assert (got, options.resource_version) == ("list", "105")


def test_sc16_a_410_list_is_retried_at_once_at_the_empty_version() -> None:
    with reflecting() as (script, clock, _reflector):
        script.expect("list", ListResult([], "100", ""))
        watch = ChannelWatch()
        script.expect("watch", watch)
        watch.error(gone())
        backoff(clock)
        assert script.expect("list", GoneError(410, "Expired", "too old", gone())).resource_version == "100"
        assert script.expect("list", ListResult([], "120", "")).resource_version == ""
        assert script.expect("watch", ChannelWatch()).resource_version == "120"


def test_sc17_a_very_short_empty_watch_relists_after_backoff() -> None:
    with reflecting() as (script, clock, _reflector):
        script.expect("list", ListResult([], "100", ""))
        watch = ChannelWatch()
        script.expect("watch", watch)
        watch.end()
        assert backoff(clock) == pytest.approx(0.8)
        assert script.expect("list", ListResult([], "100", "")).resource_version == "100"


def test_sc17_a_refused_watch_is_retried_as_a_watch_after_backoff() -> None:
    with reflecting() as (script, clock, _reflector):
        script.expect("list", ListResult([], "100", ""))
        script.expect("watch", ConnectionRefusedError("refused"))
        backoff(clock)
        assert script.expect("watch", ChannelWatch()).resource_version == "100"


def test_sc18_backoff_doubles_to_thirty_seconds_with_jitter_at_zero() -> None:
    with reflecting() as (script, clock, _reflector):
        delays = []
        for _ in range(8):
            script.expect("list", RuntimeError("down"))
            delays.append(backoff(clock))
        assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30])


def test_sc18_backoff_starts_over_after_two_quiet_minutes() -> None:
    with reflecting() as (script, clock, _reflector):
        for expected in (0.8, 1.6, 3.2):
            script.expect("list", RuntimeError("down"))
            assert backoff(clock) == pytest.approx(expected)
        script.expect("list", ListResult([], "100", ""))
        watch = ChannelWatch()
        script.expect("watch", watch)
        clock.step(121)
        watch.error({"kind": "Status", "status": "Failure", "code": 500, "reason": "InternalError"})
        assert backoff(clock) == pytest.approx(0.8)
        script.expect("list", ListResult([], "100", ""))


def test_sc19_an_expired_continuation_page_falls_back_to_one_full_list() -> None:
    with reflecting() as (script, _clock, reflector):
        first = script.expect("list", ListResult([obj("a")], "100", "token"))
        assert first.limit == 500
        assert script.expect("list", GoneError(410, "Expired", "too old", gone())).continue_token == "token"
        full = script.expect("list", ListResult([obj("a"), obj("b")], "101", ""))
        assert full.resource_version == "0"
        assert not full.limit and not full.continue_token
        script.expect("watch", ChannelWatch())
        assert reflector.last_sync_resource_version() == "101"


# -- work queues (SC-21..SC-24) ----------------------------------------------------------------


def test_sc21_an_item_is_deduplicated_and_never_handed_out_twice_at_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("x")
    q.add("x")
    assert q.len() == 1
    assert q.get(timeout=TIMEOUT) == ("x", False)
    q.add("x")
    assert q.len() == 0
    assert q.get(timeout=0.01) == (None, False)
    q.done("x")
    assert q.len() == 1
    q.shut_down()


def test_sc22_shutdown_hands_out_what_was_queued_then_reports_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    q.shut_down()
    assert q.shutting_down()
    q.add("c")
    assert [q.get(), q.get(), q.get()] == [("a", False), ("b", False), (None, True)]


def test_shut_down_with_drain_waits_for_items_in_flight() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    item, _ = q.get()
    assert item == "a"
    drained = threading.Event()

    def drain() -> None:
        q.shut_down_with_drain()
        drained.set()

    thread = threading.Thread(target=drain)
    thread.start()
    assert not drained.wait(0.05)
    q.done(item)
    thread.join(TIMEOUT)
    assert drained.is_set()


def test_sc23_default_limiter_backs_off_exponentially_and_forget_resets() -> None:
    limiter = default_controller_rate_limiter()
    delays = [limiter.when("x") for _ in range(3)]
    assert delays == pytest.approx([0.005, 0.01, 0.02])
    assert limiter.num_requeues("x") == 3
    limiter.forget("x")
    assert limiter.when("x") == pytest.approx(0.005)
    clock = FakeClock()
    bucket = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000), BucketRateLimiter(10, 100, clock=clock)
    )
    waits = [bucket.when(i) for i in range(101)]
    assert max(waits[:100]) <= 0.005
    assert waits[100] == pytest.approx(0.1)


def test_sc23_rate_limiting_queue_counts_requeues_and_forget_clears_them() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(1, 10), clock=clock
    )
    try:
        q.add_rate_limited("x")
        q.add_rate_limited("x")
        assert q.num_requeues("x") == 2
        assert q.len() == 0
        assert wait_for(lambda: clock.waiters() != [], TIMEOUT)
        clock.step(1)
        assert q.get(timeout=TIMEOUT) == ("x", False)
        q.forget("x")
        assert q.num_requeues("x") == 0
    finally:
        q.shut_down()


def test_sc24_a_shorter_add_after_wins_and_the_item_arrives_once() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        q.add_after("x", 10)
        q.add_after("x", 1)
        assert wait_for(lambda: clock.waiters() != [], TIMEOUT)
        clock.step(1)
        assert q.get(timeout=TIMEOUT) == ("x", False)
        q.done("x")
        clock.step(10)
        assert q.get(timeout=0.05) == (None, False)
    finally:
        q.shut_down()


# -- ControllerManager (SC-26) -----------------------------------------------------------------


class Synced:
    def __init__(self, synced: bool) -> None:
        self.synced = synced

    def has_synced(self) -> bool:
        return self.synced


class Served:
    """An InformerSource made of plain functions and capacity-1 subscriptions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_gvr: dict[GroupVersionResource, Synced] = {}
        self.subscriptions: dict[str, queue.Queue[Any]] = {}

    def subscribe(self, id: str) -> queue.Queue[Any]:
        q: queue.Queue[Any] = queue.Queue(maxsize=1)
        with self.lock:
            self.subscriptions[id] = q
        return q

    def informers(self) -> tuple[dict[GroupVersionResource, Any], list[GroupVersionResource]]:
        with self.lock:
            synced = {g: i for g, i in self.by_gvr.items() if i.has_synced()}
            return synced, [g for g, i in self.by_gvr.items() if not i.has_synced()]

    def change(self, gvr: GroupVersionResource, synced: bool | None) -> None:
        with self.lock:
            if synced is None:
                self.by_gvr.pop(gvr, None)
            else:
                self.by_gvr[gvr] = Synced(synced)
            subscriptions = list(self.subscriptions.values())
        for q in subscriptions:
            with contextlib.suppress(queue.Full):
                q.put_nowait(True)


def test_sc26_controller_runs_exactly_while_its_resources_are_synced_and_is_joined_when_stopped() -> None:
    g1 = GroupVersionResource("example.io", "v1", "ones")
    g2 = GroupVersionResource("example.io", "v1", "twos")
    served = Served()
    served.change(g1, True)
    served.change(g2, False)
    created: queue.Queue[Context] = queue.Queue()
    finished: queue.Queue[str] = queue.Queue()

    def create(ctx: Context) -> Any:
        created.put(ctx)

        def start_fn(run_ctx: Context) -> None:
            run_ctx.wait()
            finished.put("done")

        return start_fn

    manager = ControllerManager(
        "acceptance",
        InformerSource(served.subscribe, served.informers),
        {"c": ManagedController({g1, g2}, create)},
    )
    assert manager.name == "syncer-controller-manager-acceptance"
    stop = threading.Event()
    thread = threading.Thread(target=manager.start, args=(stop,))
    thread.start()
    try:
        assert wait_for(lambda: manager.name in served.subscriptions, TIMEOUT)
        assert created.empty() and manager.running_controllers() == set()
        served.change(g2, True)
        created.get(timeout=TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == {"c"}, TIMEOUT)
        served.change(g2, None)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
        assert finished.get_nowait() == "done"  # joined before it stopped being listed
        served.change(g2, True)
        created.get(timeout=TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == {"c"}, TIMEOUT)
    finally:
        stop.set()
        thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert finished.get_nowait() == "done"  # start() returned after joining it
    assert manager.running_controllers() == set()


def test_controller_manager_reconciles_once_at_start_without_a_notification() -> None:
    g1 = GroupVersionResource("example.io", "v1", "ones")
    served = Served()
    served.change(g1, True)
    started = threading.Event()

    def create(ctx: Context) -> Any:
        def start_fn(run_ctx: Context) -> None:
            started.set()
            run_ctx.wait()

        return start_fn

    manager = ControllerManager(
        "initial", InformerSource(served.subscribe, served.informers), {"c": ManagedController([g1], create)}
    )
    ctx = Context()
    thread = threading.Thread(target=manager.start, kwargs={"ctx": ctx})
    thread.start()
    try:
        assert started.wait(TIMEOUT)
    finally:
        ctx.cancel()
        thread.join(TIMEOUT)
    assert not thread.is_alive()


# -- more of API.md's shapes -------------------------------------------------------------------


def test_list_and_watch_value_types_take_api_md_field_names() -> None:
    options = ListOptions(
        resource_version="5",
        resource_version_match="NotOlderThan",
        limit=10,
        continue_token="t",
        label_selector="app=web",
        field_selector="metadata.name=a",
        timeout_seconds=300,
        allow_watch_bookmarks=True,
        send_initial_events=False,
    )
    assert (options.resource_version, options.limit, options.continue_token) == ("5", 10, "t")
    result = ListResult(items=[obj("a")], resource_version="7", continue_token="")
    assert (len(result.items), result.resource_version) == (1, "7")
    event = WatchEvent(type="ADDED", object=obj("a"))
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "a")
    meta = APIResourceMeta(
        group_version_kind=GroupVersionKind("apps", "v1", "Deployment"), group_version_resource=DEPLOYMENTS
    )
    assert meta.is_cluster_scoped is False


def test_closing_a_channel_watch_from_another_thread_ends_its_iteration() -> None:
    watch = ChannelWatch()
    ended = threading.Event()

    def consume() -> None:
        for _ in watch:
            pass
        ended.set()

    thread = threading.Thread(target=consume)
    thread.start()
    watch.close()
    thread.join(TIMEOUT)
    assert ended.is_set()


def test_sc11_classic_fifo_pops_a_key_with_all_its_deltas_in_first_arrival_order() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a", 1))
    fifo.add(obj("b", 1))
    fifo.update(obj("a", 2))
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "a1"), (DeltaType.UPDATED, "a2")]
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "b1")]


def test_indexer_replace_without_a_version_and_len() -> None:
    indexer = Indexer()
    indexer.replace([obj("a"), obj("b"), obj("a", 2)])
    assert len(indexer) == 2
    stored = indexer.get_by_key("ns/a")
    assert stored is not None and stored["metadata"]["resourceVersion"] == "2"


def test_an_index_function_that_raises_is_not_silently_skipped() -> None:
    def broken(o: Any) -> list[str]:
        raise RuntimeError("index failed")

    indexer = Indexer(indexers={"broken": broken})
    with pytest.raises(RuntimeError):
        indexer.add(obj("a"))


def test_index_func_adapter_wants_exactly_one_value() -> None:
    key_func = index_func_to_key_func_adapter(lambda o: o["keys"])
    assert key_func({"keys": ["k"]}) == "k"
    with pytest.raises(Exception, match="unexpected empty indexKeys"):
        key_func({"keys": []})
    with pytest.raises(Exception, match="too many keys"):
        key_func({"keys": ["a", "b"]})


def test_handler_funcs_skip_missing_callbacks_and_a_raising_handler_keeps_getting_events() -> None:
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher)
    updates: queue.Queue[str] = queue.Queue()

    def add_func(o: Any) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=add_func, update_func=lambda old, new: updates.put(name_of(new)))
    )
    informer.add_event_handler(ResourceEventHandlerFuncs())
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        watch = source.watch()
        watch.modify(obj("a", 11))
        watch.delete(obj("a", 12))
        assert updates.get(timeout=TIMEOUT) == "a11"


def test_remove_event_handler_rejects_what_is_not_a_registration() -> None:
    informer = SharedIndexInformer(Source().lister_watcher)
    registration = informer.add_event_handler(Recorder())
    informer.remove_event_handler(registration)
    informer.remove_event_handler(registration)
    with pytest.raises(TypeError):
        informer.remove_event_handler(object())  # type: ignore[arg-type]


def test_add_indexers_after_stop_raises() -> None:
    informer = SharedIndexInformer(Source().lister_watcher)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
    with pytest.raises(StoppedError):
        informer.add_indexers({"late": by_name})


def test_late_indexer_indexes_objects_already_cached() -> None:
    informer = SharedIndexInformer(Source(obj("a"), obj("b")).lister_watcher)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        informer.add_indexers({"by_name": by_name})
        assert informer.get_indexer().index_keys("by_name", "b") == ["ns/b"]
        with pytest.raises(ValueError):
            informer.add_indexers({"by_name": by_name})


def test_last_error_reports_a_watch_error() -> None:
    clock = FakeClock()
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher, clock=clock)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert informer.last_error() is None
        source.watch().error({"kind": "Status", "status": "Failure", "code": 500, "reason": "InternalError"})
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        backoff(clock)
        source.watch()
        assert informer.last_error() is None


def test_watch_error_handler_hears_watch_errors() -> None:
    clock = FakeClock()
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher, clock=clock)
    heard: queue.Queue[BaseException] = queue.Queue()
    informer.set_watch_error_handler(lambda reflector, error: heard.put(error))
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        source.watch().fail(ConnectionResetError("cut"))
        assert heard.get(timeout=TIMEOUT) is not None


def test_object_name_and_deleted_object_helpers() -> None:
    assert str(ObjectName("ns", "a")) == "ns/a"
    assert str(ObjectName("", "a")) == "a"
    assert ObjectName.parse("ns/a") == ObjectName("ns", "a")
    assert deleted_object(DeletedFinalStateUnknown("ns/a", obj("a"))) == obj("a")
    assert deleted_object(obj("b")) == obj("b")


def test_limiters_take_api_md_argument_names() -> None:
    limiter = ItemExponentialFailureRateLimiter(base=0.001, max=0.004)
    assert [limiter.when("x") for _ in range(4)] == pytest.approx([0.001, 0.002, 0.004, 0.004])
    bucket = BucketRateLimiter(qps=1, burst=1, clock=FakeClock())
    assert [bucket.when("a"), bucket.when("b")] == pytest.approx([0, 1])
    assert bucket.num_requeues("a") == 0
    q: RateLimitingQueue[str] = RateLimitingQueue()
    q.add_rate_limited("x")
    assert q.get(timeout=TIMEOUT) == ("x", False)
    q.shut_down()


def test_add_after_with_no_delay_adds_at_once_and_nothing_after_shutdown() -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=FakeClock())
    q.add_after("now", 0)
    assert q.len() == 1
    q.shut_down()
    q.add_after("late", 0)
    q.add_after("later", 5)
    assert [q.get(), q.get()] == [("now", False), (None, True)]


def test_wait_for_cache_sync_checks_again_until_every_cache_synced() -> None:
    answers = iter([False, False, True])
    assert wait_for_cache_sync(Context(), lambda: next(answers), lambda: True, timeout=TIMEOUT)


# -- edges a careful reader of SEMANTICS.md would try ---------------------------------------------


def test_split_key_with_a_leading_slash_has_an_empty_namespace() -> None:
    assert split_meta_namespace_key("/x") == ("", "x")


def test_replace_with_an_unkeyable_object_changes_nothing() -> None:
    indexer = Indexer()
    indexer.add(obj("keep"))
    with pytest.raises(KeyError):
        indexer.replace([obj("a"), {"kind": "NoMeta"}], "2")
    assert indexer.list_keys() == ["ns/keep"]


def test_a_failing_fifo_transformer_queues_nothing() -> None:
    def transform(o: Any) -> Any:
        raise ValueError("cannot transform")

    fifo = DeltaFIFO(transformer=transform)
    with pytest.raises(ValueError):
        fifo.add(obj("a"))
    assert fifo.list_keys() == []


def test_a_closed_fifo_still_accepts_items() -> None:
    fifo = DeltaFIFO()
    fifo.close()
    fifo.add(obj("a"))
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "a1")]


def test_namespace_lister_for_the_empty_namespace_finds_nothing_by_name_but_lists_all() -> None:
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    indexer.replace([obj("a", namespace="x"), obj("b", namespace="y")], "1")
    lister = GenericLister(indexer, CONFIGMAPS)
    assert len(lister.by_namespace("").list()) == 2
    assert len(lister.list("")) == 2
    with pytest.raises(NotFoundError):
        lister.by_namespace("").get("a")


def test_not_found_names_the_object_without_its_namespace() -> None:
    lister = GenericLister(Indexer(), DEPLOYMENTS)
    with pytest.raises(NotFoundError) as info:
        lister.by_namespace("ns").get("web")
    assert "ns" not in str(info.value).replace('deployments.apps "web" not found', "")


def test_a_relist_of_unchanged_objects_reaches_handlers_as_equal_updates_and_new_ones_as_late_adds() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, clock=clock)
    handler = Detailed()
    informer.add_event_handler(handler)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.take(1) == [("add", "x1", True)]
        source.items = [obj("x"), obj("y", 20)]
        source.watch().error({"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"})
        backoff(clock)
        assert handler.take(2) == [("update", "x1", "x1"), ("add", "y20", False)]


def test_a_stuck_handler_neither_blocks_other_handlers_nor_counts_as_synced() -> None:
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher)
    gate = threading.Event()
    entered = threading.Event()

    def stuck(o: Any) -> None:
        entered.set()
        gate.wait(TIMEOUT)

    slow_registration = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=stuck))
    fast = Recorder()
    informer.add_event_handler(fast)
    with running(informer):
        try:
            assert wait_for(informer.has_synced, TIMEOUT)
            assert entered.wait(TIMEOUT)
            source.watch().add(obj("b", 11))
            assert fast.take(2) == [("add", "a1"), ("add", "b11")]
            assert not slow_registration.has_synced()
        finally:
            gate.set()
        assert wait_for(slow_registration.has_synced, TIMEOUT)


def test_a_sub_second_handler_resync_period_is_raised_to_one_second() -> None:
    clock = FakeClock()
    source = Source(obj("x"))
    informer = SharedIndexInformer(source.lister_watcher, default_event_handler_resync_period=1, clock=clock)
    handler = Recorder()
    informer.add_event_handler_with_resync_period(handler, 0.2)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.next() == ("add", "x1")
        watch = source.watch()
        step_resync(clock, 0.5)
        watch.add(obj("marker", 11))
        assert handler.next() == ("add", "marker11")
        step_resync(clock, 0.5)
        assert sorted(handler.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_namespace_lister_without_a_namespace_index_scans() -> None:
    indexer = Indexer()
    indexer.replace([obj("a", namespace="x", app="web"), obj("b", namespace="y", app="web")], "1")
    assert [
        o["metadata"]["name"] for o in GenericLister(indexer, CONFIGMAPS).by_namespace("y").list("app=web")
    ] == ["b"]


def test_a_controller_whose_resource_falls_out_of_sync_is_stopped_and_a_failed_create_is_retried() -> None:
    g1 = GroupVersionResource("example.io", "v1", "ones")
    served = Served()
    served.change(g1, True)
    attempts: queue.Queue[str] = queue.Queue()
    stopped: queue.Queue[str] = queue.Queue()

    calls: list[Context] = []

    def create(ctx: Context) -> Any:
        calls.append(ctx)
        if len(calls) == 1:
            attempts.put("failed")
            raise RuntimeError("cannot build the controller yet")
        attempts.put("created")

        def start_fn(run_ctx: Context) -> None:
            run_ctx.wait()
            stopped.put("stopped")

        return start_fn

    manager = ControllerManager(
        "retry", InformerSource(served.subscribe, served.informers), {"c": ManagedController({g1}, create)}
    )
    ctx = Context()
    thread = threading.Thread(target=manager.start, args=(ctx,))
    thread.start()
    try:
        assert attempts.get(timeout=TIMEOUT) == "failed"
        assert attempts.get(timeout=TIMEOUT) == "created"
        assert wait_for(lambda: manager.running_controllers() == {"c"}, TIMEOUT)
        served.change(g1, False)
        assert stopped.get(timeout=TIMEOUT) == "stopped"
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
    finally:
        ctx.cancel()
        thread.join(TIMEOUT)
    assert not thread.is_alive()


def test_an_object_whose_name_is_not_a_string_is_never_cached(caplog: pytest.LogCaptureFixture) -> None:
    garbage = {"metadata": {"name": ["ghost"], "namespace": "ns", "resourceVersion": "3"}}
    source = Source(obj("a"), garbage)
    informer = SharedIndexInformer(source.lister_watcher)
    handler = Recorder()
    informer.add_event_handler(handler)
    caplog.set_level(logging.WARNING)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        watch = source.watch()
        watch.add({"metadata": {"name": 7, "namespace": "ns", "resourceVersion": "12"}})
        watch.add(obj("b", 13))
        assert [handler.next(), handler.next()] == [("add", "a1"), ("add", "b13")]
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 2


def test_fifo_without_known_objects_deletes_only_what_it_holds() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    fifo.delete(obj("a"))
    fifo.delete(obj("b"))
    fifo.resync()
    assert fifo.list_keys() == ["ns/a"]
    assert pop_now(fifo)[0] == [(DeltaType.ADDED, "a1"), (DeltaType.DELETED, "a1")]


def test_relist_tombstone_of_a_known_key_that_cannot_be_looked_up_carries_none() -> None:
    class Known:
        """A KeyListerGetter whose ``ns/ghost`` vanished between listing keys and the lookup."""

        def list_keys(self) -> list[str]:
            return ["ns/ghost", "ns/x"]

        def get_by_key(self, key: str) -> Any:
            return obj("x") if key == "ns/x" else None

    fifo = DeltaFIFO(known_objects=Known(), emit_delta_type_replaced=True)
    fifo.replace([], "1")
    tombstones = {key: (fifo.get_by_key(key) or [])[-1].object for key in fifo.list_keys()}
    assert {key: t.obj for key, t in tombstones.items()} == {"ns/ghost": None, "ns/x": obj("x")}


def test_exponential_limiter_is_capped_even_after_thousands_of_failures() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1000)
    delays = [limiter.when("x") for _ in range(3000)]
    assert delays[-1] == 1000 and limiter.num_requeues("x") == 3000
    both = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.001, 1), ItemExponentialFailureRateLimiter(0.002, 1)
    )
    both.when("a")
    both.when("a")
    assert both.num_requeues("a") == 2
    both.forget("a")
    assert both.num_requeues("a") == 0 and both.when("a") == pytest.approx(0.002)


def test_deletes_of_unknown_objects_and_repeated_deletes_reach_handlers_once_at_most() -> None:
    source = Source(obj("a"))
    informer = SharedIndexInformer(source.lister_watcher)
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer):
        assert wait_for(informer.has_synced, TIMEOUT)
        assert handler.next() == ("add", "a1")
        watch = source.watch()
        watch.delete(obj("ghost", 11))
        watch.delete(obj("a", 12))
        watch.delete(obj("a", 12))
        watch.add(obj("marker", 13))
        assert handler.take(2) == [("delete", "a12"), ("add", "marker13")]


def test_filtering_handler_passes_the_initial_list_flag_through_and_skips_what_never_matched() -> None:
    inner = Detailed()
    handler = FilteringResourceEventHandler(
        filter_func=lambda o: o["metadata"].get("labels", {}).get("app") == "web", handler=inner
    )
    handler.on_add(obj("a", app="web"), True)
    handler.on_add(obj("b", app="db"), True)
    handler.on_update(obj("b", 1, app="db"), obj("b", 2, app="db"))
    handler.on_update(obj("a", 1, app="web"), obj("a", 2, app="web"))
    handler.on_delete(obj("b", app="db"))
    assert inner.take(2) == [("add", "a1", True), ("update", "a1", "a2")]
    assert inner.events.empty()
