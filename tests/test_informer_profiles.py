"""The two informer profiles side by side: ordering, atomic relists, resyncs, bookmarks, batches.

The modern profile (the default) follows client-go 1.36: one delta per event in arrival order,
a relist applied to the cache in one step before its notifications, a resync as one pass over
the cache, bookmarks reaching the cache's resourceVersion. The classic profile keeps client-go
1.32's per-key merging.
"""

from __future__ import annotations

import threading
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import errors
from kinformer.cache.delta_fifo import DeltaFIFO, Deltas
from kinformer.cache.real_fifo import RealFIFO
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.client.listerwatcher import WatchEvent
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeClock, Recorder, ScriptedSource, wait_for

cm = helpers.cm
TIMEOUT = helpers.TIMEOUT


def gone_status() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
            "reason": "Expired", "message": "too old"}


def describe(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return f"dfsu:{helpers.describe(obj.obj)}"
    return helpers.describe(obj)


class GatedIndex:
    """An index by name that holds the delta loop while it indexes ``gate`` (``busy`` is set
    then) until ``release`` is set, and fails on the names in ``bad``."""

    def __init__(self, *bad: str) -> None:
        self.busy, self.release = threading.Event(), threading.Event()
        self.bad = set(bad)

    def __call__(self, obj: Any) -> list[str]:
        name: str = obj["metadata"]["name"]
        if name == "gate":
            self.busy.set()
            assert self.release.wait(TIMEOUT)
        if name in self.bad:
            raise ValueError(f"cannot index {name}")
        return [name]


def gated_informer(index: GatedIndex) -> tuple[SharedIndexInformer, ScriptedSource,
                                                Recorder]:
    source, informer, handler = helpers.recorded_informer(indexers={"name": index})
    return informer, source, handler


def test_an_unknown_profile_is_a_value_error_naming_both() -> None:
    source = ScriptedSource()
    with pytest.raises(ValueError, match="'modern' or 'classic'"):
        SharedIndexInformer(source.lister_watcher, profile="fast")
    with pytest.raises(errors.ConfigurationError):
        kinformer.DynamicSharedInformerFactory(object(), profile="old")


def test_the_modern_profile_is_the_default() -> None:
    assert SharedIndexInformer(ScriptedSource().lister_watcher).profile == "modern"


@pytest.mark.parametrize(
    ("fifo", "expected"),
    [
        (RealFIFO(), [["a1"], ["b1"], ["a2"]]),
        (DeltaFIFO(), [["a1", "a2"], ["b1"]]),
    ],
    ids=["modern", "classic"],
)
def test_pops_follow_arrival_order_across_keys_only_in_the_modern_fifo(
    fifo: RealFIFO | DeltaFIFO, expected: list[list[str]]
) -> None:
    fifo.add(cm("a", 1))
    fifo.add(cm("b", 1))
    fifo.update(cm("a", 2))
    got: list[list[str]] = []

    def process(deltas: Deltas, initial: bool) -> None:
        got.append([helpers.describe(d.object) for d in deltas])

    while len(fifo):
        fifo.pop(process, timeout=TIMEOUT)
    assert got == expected


def test_modern_handlers_hear_changes_in_arrival_order_while_the_delta_loop_was_busy() -> None:
    index = GatedIndex()
    informer, source, handler = gated_informer(index)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        watch = source.next_watch()
        watch.add(cm("gate", 11))
        assert index.busy.wait(TIMEOUT)  # the delta loop is applying the gate; the watch goes on
        watch.add(cm("a", 12))
        watch.add(cm("b", 13))
        watch.modify(cm("a", 14))
        index.release.set()
        assert handler.take(4) == [
            ("add", "gate11", False), ("add", "a12", False), ("add", "b13", False),
            ("update", "a12", "a14")]


def test_a_modern_relist_replaces_the_cache_in_one_step_before_its_notifications() -> None:
    source = ScriptedSource(cm("a", 1), cm("b", 1))
    clock = FakeClock()
    informer = SharedIndexInformer(source.lister_watcher, clock=clock)
    lister = informer.get_indexer()
    handler = Recorder(describe, probe=lambda _obj: sorted(map(helpers.describe, lister.list())))
    informer.add_event_handler(handler)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert handler.take(2) == [("add", "a1", True), ("add", "b1", True)]
        source.items, source.rv = [cm("a", 2), cm("c", 1)], 20
        source.next_watch().error(gone_status())  # 410: relist after a backoff step
        helpers.step_when_waiting(clock)
        assert handler.take(3) == [
            ("delete", "dfsu:b1"), ("update", "a1", "a2"), ("add", "c1", False)]
        # every callback of the relist saw the whole new list, none a mix of old and new
        assert handler.probed[2:] == [["a2", "c1"]] * 3
        assert lister.last_store_sync_resource_version() == "20"


def test_a_modern_resync_is_one_pass_over_the_cache_as_sync_updates() -> None:
    source = ScriptedSource(cm("a", 1), cm("b", 2))
    clock = FakeClock()
    informer = SharedIndexInformer(source.lister_watcher, None, 10, clock=clock)
    handler = Recorder()
    informer.add_event_handler(handler)
    quiet = Recorder()
    informer.add_event_handler_with_resync_period(quiet, 0)  # never resyncs
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert handler.take(2) == [("add", "a1", True), ("add", "b2", True)]
        assert quiet.take(2) == [("add", "a1", True), ("add", "b2", True)]
        source.next_watch()
        helpers.step_when_waiting(clock, 10)
        assert sorted(handler.take(2)) == [("update", "a1", "a1"), ("update", "b2", "b2")]
        assert quiet.quiet()


def test_modern_bookmarks_move_the_caches_resource_version() -> None:
    source = ScriptedSource(cm("a", 5), rv=7)
    informer = SharedIndexInformer(source.lister_watcher)
    lister = informer.get_indexer()
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert lister.last_store_sync_resource_version() == "7"
        watch = source.next_watch()
        watch.send(WatchEvent("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                                           "metadata": {"resourceVersion": "30"}}))
        assert wait_for(lambda: lister.last_store_sync_resource_version() == "30", TIMEOUT)
        watch.add(cm("b", 31))
        assert wait_for(lambda: lister.last_store_sync_resource_version() == "31", TIMEOUT)


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_after_a_first_list_the_caches_version_is_the_lists(profile: str) -> None:
    """Classic took the version of whichever object was listed last (here 2, below the list's
    9), so a write of an unchanged object (its version 5 answered again) was held back as
    stale until some later event moved the cache past it."""
    source = ScriptedSource(cm("a", 5), cm("b", 2), rv=9)
    informer = SharedIndexInformer(source.lister_watcher, profile=profile)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert informer.get_indexer().last_store_sync_resource_version() == "9"
        source.next_watch().add(cm("c", 12))
        assert wait_for(lambda: informer.get_indexer().last_store_sync_resource_version() == "12",
                        TIMEOUT)


def test_a_modern_batch_with_an_object_that_fails_to_index_applies_and_notifies_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = GatedIndex("bad")
    informer, source, handler = gated_informer(index)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        watch = source.next_watch()
        watch.add(cm("gate", 2))
        assert index.busy.wait(TIMEOUT)
        for name in ("x", "bad", "y"):  # queued meanwhile: popped as one batch
            watch.add(cm(name, 3))
        index.release.set()
        assert handler.take(3) == [("add", "gate2", False), ("add", "x3", False), ("add", "y3", False)]
    assert sorted(informer.get_indexer().list_keys()) == ["ns/gate", "ns/x", "ns/y"]
    assert "ns/bad" in caplog.text and "object dropped" in caplog.text


def _first_list_outcome() -> tuple[Any, ...]:
    items = [cm("a", 1), cm("b", 1, namespace="x"), cm("c", 1)]
    source, informer, handler = helpers.recorded_informer(
        *items, indexers={kinformer.NAMESPACE_INDEX: kinformer.meta_namespace_index_func})
    source.rv = 7
    with helpers.running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        seen = handler.take(3)
        cache = informer.get_indexer()
        return (seen, cache.list_keys(), cache.index_keys(kinformer.NAMESPACE_INDEX, "x"),
                cache.last_store_sync_resource_version())


def test_a_modern_first_list_taken_where_it_was_listed_ends_as_the_queued_one_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _first_list_outcome()
    calls: list[int] = []

    def decline(self: Any, items: dict[str, Any], resource_version: str, namespace_runs: Any) -> bool:
        calls.append(len(items))
        return False

    monkeypatch.setattr(kinformer.appliers.ModernApplier, "_take_first_list", decline)
    queued = _first_list_outcome()
    assert calls == [3]
    assert taken == queued
    assert taken[0] == [("add", "a1", True), ("add", "b1", True), ("add", "c1", True)]
    assert taken[3] == "7"
