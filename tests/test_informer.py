"""SharedIndexInformer over a scripted ListWatch: cache, handlers, late joiners, resyncs, lifecycle."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import Context, errors, processor
from kinformer.client.listerwatcher import ListOptions, ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer
from kinformer.testing import ChannelWatch, FakeClock, Recorder, ScriptedSource, wait_for

TIMEOUT = 5.0


def test_initial_list_fills_the_cache_and_reaches_handlers_as_initial_adds() -> None:
    source = ScriptedSource(helpers.cm("a", 1), helpers.cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher, name="initial")
    handler = Recorder()
    registration = informer.add_event_handler(handler)
    assert not informer.has_synced() and not registration.has_synced()
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert sorted(handler.take(2)) == [("add", "a1", True), ("add", "b2", True)]
        assert sorted(informer.get_store().list_keys()) == ["ns/a", "ns/b"]
        assert wait_for(registration.has_synced, TIMEOUT)
        # the reflector notes the version once the store took the list, a moment after sync
        assert wait_for(lambda: informer.last_sync_resource_version() == "10", TIMEOUT)
    assert informer.is_stopped()


def test_watch_events_reach_the_cache_before_the_handlers() -> None:
    source = ScriptedSource(helpers.cm("a", 1), helpers.cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher, name="order")

    def cached(obj: Any) -> Any:
        return informer.get_indexer().get_by_key(f"ns/{obj['metadata']['name']}")

    handler = Recorder(probe=cached)
    informer.add_event_handler(handler)
    with helpers.running(informer.run):
        watch = source.next_watch()
        handler.take(2)
        watch.modify(helpers.cm("a", 11))
        watch.add(helpers.cm("c", 12))
        watch.delete(helpers.cm("b", 13))
        assert handler.take(3) == [("update", "a1", "a11"), ("add", "c12", False), ("delete", "b13")]
        seen = handler.probed[2:]
        assert seen[0]["metadata"]["resourceVersion"] == "11"
        assert seen[1]["metadata"]["name"] == "c"
        assert seen[2] is None


def test_relist_after_an_expired_watch_reports_vanished_objects_as_tombstones() -> None:
    clock = FakeClock()
    source, informer, handler = helpers.recorded_informer(
        helpers.cm("a", 1), helpers.cm("b", 2), name="relist", clock=clock)
    with helpers.running(informer.run):
        watch = source.next_watch()
        handler.take(2)
        source.items = [helpers.cm("a", 1)]  # "b" is gone from the next list
        watch.error({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
        assert clock.wait_for_waiters(1, TIMEOUT)  # the reflector backs off before relisting
        clock.step(120)
        source.next_watch()
        # "a" is relisted unchanged: a sync update, still sent since this informer never resyncs
        assert sorted(handler.take(2)) == [("delete", "DFSU(ns/b)"), ("update", "a1", "a1")]
        assert informer.get_store().list_keys() == ["ns/a"]


def test_late_handler_gets_the_cache_as_initial_adds_and_nothing_else() -> None:
    source = ScriptedSource(helpers.cm("a", 1), helpers.cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher, name="late")
    early = Recorder()
    informer.add_event_handler(early)
    with helpers.running(informer.run):
        watch = source.next_watch()
        early.take(2)
        gate = threading.Event()
        late = Recorder(gate=gate)
        registration = informer.add_event_handler(late)
        assert not registration.has_synced()  # its initial adds have not returned yet
        gate.set()
        assert sorted(late.take(2)) == [("add", "a1", True), ("add", "b2", True)]
        assert wait_for(registration.has_synced, TIMEOUT)
        watch.add(helpers.cm("c", 12))
        assert late.next() == ("add", "c12", False)
        assert early.next() == ("add", "c12", False)


def test_a_stuck_handler_stalls_neither_the_cache_nor_other_handlers() -> None:
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, name="stuck")
    gate = threading.Event()
    stuck = Recorder(gate=gate)
    healthy = Recorder()
    stuck_registration = informer.add_event_handler(stuck)
    informer.add_event_handler(healthy)
    with helpers.running(informer.run):
        try:
            watch = source.next_watch()
            for rv in range(11, 31):
                watch.modify(helpers.cm("a", rv))
            assert [e[0] for e in healthy.take(21)] == ["add"] + ["update"] * 20
            assert informer.get_store().get_by_key("ns/a")["metadata"]["resourceVersion"] == "30"
            assert stuck.entered.wait(TIMEOUT) and stuck.quiet()
            assert stuck_registration.pending() == 20  # the first add is being delivered
        finally:
            gate.set()
        assert len(stuck.take(21)) == 21


def test_a_raising_handler_is_logged_and_keeps_receiving(caplog: pytest.LogCaptureFixture) -> None:
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, name="raising")
    received: queue.Queue[str] = queue.Queue()

    def add(obj: Any) -> None:
        received.put(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=add))
    with helpers.running(informer.run):
        source.next_watch().add(helpers.cm("b", 11))
        assert [received.get(timeout=TIMEOUT), received.get(timeout=TIMEOUT)] == ["a", "b"]
    assert "handler bug" in caplog.text


def test_run_returns_despite_a_handler_stuck_forever_and_names_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processor, "LISTENER_JOIN_TIMEOUT", 0.2)
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, name="forever")
    gate = threading.Event()
    entered = threading.Event()

    def add(obj: Any) -> None:
        entered.set()
        gate.wait()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=add))
    try:
        with caplog.at_level(logging.WARNING), helpers.running(informer.run):
            assert entered.wait(TIMEOUT)
        assert "kinformer-handler-forever-1" in caplog.text
    finally:
        gate.set()


def test_run_twice_warns_and_returns_at_once(caplog: pytest.LogCaptureFixture) -> None:
    source = ScriptedSource()
    informer = SharedIndexInformer(source.lister_watcher, name="twice")
    with helpers.running(informer.run, threading.Event()):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.run(Context())  # would block forever if it ran
        assert "run more than once" in caplog.text
        with pytest.raises(errors.AlreadyStartedError):
            informer.set_transform(None)
        with pytest.raises(errors.AlreadyStartedError):
            informer.set_watch_error_handler(None)


def test_a_stopped_informer_refuses_handlers_and_indexers() -> None:
    informer = SharedIndexInformer(ScriptedSource().lister_watcher, name="stopped")
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
    assert informer.is_stopped()
    with pytest.raises(errors.StoppedError):
        informer.add_event_handler(Recorder())
    with pytest.raises(errors.StoppedError):
        informer.add_indexers({"by-name": lambda o: [o["metadata"]["name"]]})


def test_indexers_can_be_added_after_start() -> None:
    source = ScriptedSource(helpers.cm("a", 1, app="web"))
    informer = SharedIndexInformer(source.lister_watcher, name="indexers")
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.add_indexers({"app": lambda o: [o["metadata"]["labels"]["app"]]})
        assert informer.get_indexer().index_keys("app", "web") == ["ns/a"]


def test_the_classic_first_list_is_cached_and_synced_before_the_watch_starts() -> None:
    source = ScriptedSource(helpers.cm("c", 3), helpers.cm("a", 1), helpers.cm("b", 2))
    seen_at_watch: list[tuple[bool, list[str]]] = []

    def watch(options: ListOptions) -> ChannelWatch:
        seen_at_watch.append((informer.has_synced(), sorted(informer.get_store().list_keys())))
        return source.watch(options)

    informer = SharedIndexInformer(ListWatch(source.list, watch), name="first-list", profile="classic")
    handler = Recorder()
    informer.add_event_handler(handler)
    with helpers.running(informer.run):
        source.next_watch()
        assert seen_at_watch[0] == (True, ["ns/a", "ns/b", "ns/c"])
        assert handler.take(3) == [("add", "c3", True), ("add", "a1", True), ("add", "b2", True)]


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        # the classic FIFO queues both under the key's one place in line
        ("classic", [("add", "a1", True), ("update", "a1", "a2"), ("add", "b1", True)]),
        # the modern relist is one state: the key holds its last object, at its first place
        ("modern", [("add", "a2", True), ("add", "b1", True)]),
    ],
)
def test_a_key_listed_twice_is_cached_with_its_last_object(
    profile: str, expected: list[tuple[str, ...]]
) -> None:
    _, informer, handler = helpers.recorded_informer(
        helpers.cm("a", 1), helpers.cm("b", 1), helpers.cm("a", 2), name="listed-twice", profile=profile)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert handler.take(len(expected)) == expected
        assert informer.get_store().get_by_key("ns/a")["metadata"]["resourceVersion"] == "2"


def test_the_first_list_is_transformed_once_per_object() -> None:
    source = ScriptedSource(helpers.cm("a", 1), helpers.cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher, name="transform-once")
    calls: list[str] = []

    def mark(obj: Any) -> Any:
        calls.append(obj["metadata"]["name"])
        return {**obj, "seen": len(calls)}

    informer.set_transform(mark)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert calls == ["a", "b"]
        assert [informer.get_store().get_by_key(k)["seen"] for k in ("ns/a", "ns/b")] == [1, 2]


@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
@pytest.mark.parametrize("fault", ["raises", "gives-none", "gives-a-number"])
def test_an_index_function_failing_on_one_object_drops_only_that_object(
    caplog: pytest.LogCaptureFixture, compact: bool, fault: str,
) -> None:
    def by_app(obj: Any) -> Any:
        if obj["metadata"]["name"] in ("b", "e"):
            if fault == "raises":
                raise ValueError("no app label")
            return None if fault == "gives-none" else [7]
        return ["web"]

    source, informer, handler = helpers.recorded_informer(
        helpers.cm("a", 1), helpers.cm("b", 2), helpers.cm("c", 3), indexers={"app": by_app},
        name="bad-index", compact=compact)
    with caplog.at_level(logging.ERROR, logger="kinformer"), helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)  # the list as a whole is not refused
        assert handler.take(2) == [("add", "a1", True), ("add", "c3", True)]
        watch = source.next_watch()
        for name, rv in (("d", 4), ("e", 5), ("f", 6)):  # and a watch's others are stored
            watch.add(helpers.cm(name, rv))
        assert handler.take(2) == [("add", "d4", False), ("add", "f6", False)]
        assert sorted(informer.get_store().list_keys()) == ["ns/a", "ns/c", "ns/d", "ns/f"]
        assert sorted(informer.get_indexer().index_keys("app", "web")) == ["ns/a", "ns/c", "ns/d", "ns/f"]
    assert caplog.text.count("object dropped") == 2


def test_transform_applies_before_caching() -> None:
    listed = helpers.cm("a", 1)
    listed["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    source = ScriptedSource(listed)
    informer = SharedIndexInformer(source.lister_watcher, name="transform")

    def strip(obj: Any) -> Any:
        obj["metadata"].pop("managedFields", None)
        return obj

    informer.set_transform(strip)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert "managedFields" not in informer.get_store().get_by_key("ns/a")["metadata"]


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_paged_list_is_transformed_page_by_page_as_the_pages_arrive(profile: str) -> None:
    """What the transform drops is freed while later pages download, so their objects reuse the
    memory; transformed at the end of the list, it would lie scattered and unused."""
    transformed: list[str] = []
    seen_at_page: list[list[str]] = []
    pages = {"": (["a", "b"], "page-2"), "page-2": (["c"], "")}

    def list_page(options: ListOptions) -> ListResult:
        seen_at_page.append(list(transformed))
        names, token = pages[options.continue_token or ""]
        return ListResult([helpers.cm(n, 1) for n in names], "10", token)

    def mark(obj: Any) -> Any:
        transformed.append(obj["metadata"]["name"])
        return {**obj, "marked": True}

    informer = SharedIndexInformer(ListWatch(list_page, lambda options: ChannelWatch()),
                                   name="paged-transform", profile=profile)
    informer.set_transform(mark)
    with helpers.running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert seen_at_page == [[], ["a", "b"]]  # the first page, transformed before the second
        assert transformed == ["a", "b", "c"]  # once each
        assert all(obj["marked"] for obj in informer.get_store().list())


def test_watch_events_are_transformed_once_each() -> None:
    source = ScriptedSource(helpers.cm("a", 1), helpers.cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher, name="watch-transform")
    calls: list[str] = []

    def mark(obj: Any) -> Any:
        calls.append(f"{obj['metadata']['name']}{obj['metadata']['resourceVersion']}")
        return {**obj, "marked": True}

    informer.set_transform(mark)
    handler = Recorder()
    informer.add_event_handler(handler)
    deleted: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=deleted.append))
    with helpers.running(informer.run):
        watch = source.next_watch()
        handler.take(2)
        watch.add(helpers.cm("c", 11))
        watch.modify(helpers.cm("a", 12))
        watch.delete(helpers.cm("b", 13))
        assert handler.take(3) == [("add", "c11", False), ("update", "a1", "a12"),
                                   ("delete", "b13")]
        assert calls == ["a1", "b2", "c11", "a12", "b13"]
        assert all(obj["marked"] for obj in informer.get_store().list())
        # the second handler has a thread of its own: a stop would drop what it has not taken
        assert wait_for(lambda: deleted, TIMEOUT)
    assert deleted[0]["marked"]


def test_removed_handler_hears_nothing_more_and_removal_is_idempotent() -> None:
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, name="remove")
    removed, kept = Recorder(), Recorder()
    registration = informer.add_event_handler(removed)
    informer.add_event_handler(kept)
    with helpers.running(informer.run):
        watch = source.next_watch()
        removed.take(1)
        kept.take(1)
        informer.remove_event_handler(registration)
        informer.remove_event_handler(registration)
        watch.add(helpers.cm("b", 11))
        assert kept.next() == ("add", "b11", False)
        assert removed.quiet()
    with pytest.raises(TypeError):
        informer.remove_event_handler("not a registration")  # type: ignore[arg-type]


@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_a_registration_names_the_handler_as_registered_and_removes_it(compact: bool) -> None:
    """The informer may call a handler through an adapter (a cluster handler's, a compact
    informer's copies); its registration still hands back, and shows, what was registered."""
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, name="named", compact=compact)
    plain, clustered = Recorder(), kinformer.ClusterEventHandlerFuncs(add_func=lambda *_: None)
    plain_registration = informer.add_event_handler(plain)
    cluster_registration = informer.add_event_handler(clustered)
    assert plain_registration.handler is plain and cluster_registration.handler is clustered
    assert repr(clustered) in repr(cluster_registration)
    with helpers.running(informer.run):
        source.next_watch()
        assert plain.next() == ("add", "a1", True)
        informer.remove_event_handler(plain_registration)
        late = informer.add_event_handler(plain)
        assert late.handler is plain and plain.next() == ("add", "a1", True)


def test_last_error_shows_a_failing_list_until_a_list_succeeds() -> None:
    clock = FakeClock()
    source = ScriptedSource(helpers.cm("a", 1))
    source.list_error = errors.ForbiddenError(403, "Forbidden", 'configmaps is forbidden')
    informer = SharedIndexInformer(source.lister_watcher, name="forbidden", clock=clock)
    with helpers.running(informer.run):
        assert clock.wait_for_waiters(1, TIMEOUT)
        assert isinstance(informer.last_error(), errors.ForbiddenError)
        assert not informer.wait_for_sync(timeout=0.05)
        source.list_error = None
        clock.step(120)
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert informer.last_error() is None


def test_resync_reaches_only_handlers_that_asked_for_it() -> None:
    clock = FakeClock()
    source = ScriptedSource(helpers.cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher, None, 10, name="resync", clock=clock)
    resyncing, quiet = Recorder(), Recorder()
    informer.add_event_handler(resyncing)
    informer.add_event_handler_with_resync_period(quiet, 0)
    with helpers.running(informer.run):
        watch = source.next_watch()
        resyncing.take(1)
        quiet.take(1)
        assert clock.wait_for_waiters(1, TIMEOUT)  # the resync timer
        clock.step(10)
        assert resyncing.next() == ("update", "a1", "a1")
        watch.add(helpers.cm("b", 11))
        assert quiet.next() == ("add", "b11", False)
        assert resyncing.next() == ("add", "b11", False)


def test_resync_periods_follow_the_informer_check_period() -> None:
    never = SharedIndexInformer(ScriptedSource().lister_watcher, None, 0, name="never")
    assert never.add_event_handler_with_resync_period(Recorder(), 30).resync_period == 0

    lowered = SharedIndexInformer(ScriptedSource().lister_watcher, None, 10, name="lowered")
    older = lowered.add_event_handler(Recorder())
    newer = lowered.add_event_handler_with_resync_period(Recorder(), 5)
    tiny = lowered.add_event_handler_with_resync_period(Recorder(), 0.1)
    assert (older.resync_period, newer.resync_period, tiny.resync_period) == (10, 5, 1)

    started = SharedIndexInformer(ScriptedSource().lister_watcher, None, 10, name="started")
    with helpers.running(started.run):
        assert started.wait_for_sync(timeout=TIMEOUT)
        assert started.add_event_handler_with_resync_period(Recorder(), 5).resync_period == 10


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference, over the shared scripted source.


def test_informer_runs_on_an_event_syncs_and_delivers_initial_adds() -> None:
    source = ScriptedSource(helpers.cm("a"), helpers.cm("b"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher,
        example_object=None,
        default_event_handler_resync_period=0,
        indexers={kinformer.NAMESPACE_INDEX: kinformer.meta_namespace_index_func},
    )
    handler = Recorder()
    registration = informer.add_event_handler(handler)
    assert not informer.has_synced()
    assert informer.last_sync_resource_version() == ""
    with helpers.running(informer.run, threading.Event()) as stop:
        assert kinformer.wait_for_cache_sync(
            stop, informer.has_synced, registration.has_synced, timeout=helpers.TIMEOUT
        )
        assert sorted(handler.take(2)) == [("add", "a1", True), ("add", "b1", True)]
        assert wait_for(lambda: informer.last_sync_resource_version() == "10", helpers.TIMEOUT)
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
        assert informer.get_store() is informer.get_indexer()
        assert sorted(informer.get_indexer().index_keys(kinformer.NAMESPACE_INDEX, "ns")) == ["ns/a", "ns/b"]
        source.next_watch().add(helpers.cm("c", 11))
        assert handler.next() == ("add", "c11", False)
    assert informer.is_stopped()


def test_an_informer_without_resync_never_resyncs_whatever_a_handler_asks() -> None:
    clock = FakeClock()
    source, informer, handler = helpers.recorded_informer(
        helpers.cm("x"), default_event_handler_resync_period=0, clock=clock, resync_period=30)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "x1", True)
        watch = source.next_watch()
        clock.step(120)
        watch.add(helpers.cm("marker", 11))
        assert handler.next() == ("add", "marker11", False)


def test_a_shorter_handler_period_before_start_lowers_the_check_period_only_for_itself() -> None:
    clock = FakeClock()
    source = ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=10, clock=clock
    )
    slow, fast = Recorder(), Recorder()
    informer.add_event_handler(slow)
    informer.add_event_handler_with_resync_period(fast, 5)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert slow.next() == ("add", "x1", True) and fast.next() == ("add", "x1", True)
        watch = source.next_watch()
        helpers.step_when_waiting(clock, 5)
        assert fast.next() == ("update", "x1", "x1")
        watch.add(helpers.cm("marker", 11))
        assert slow.next() == ("add", "marker11", False) and fast.next() == ("add", "marker11", False)
        helpers.step_when_waiting(clock, 5)
        assert sorted(slow.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]
        assert sorted(fast.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_a_shorter_handler_period_after_start_is_raised_to_the_check_period() -> None:
    clock = FakeClock()
    source = ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=10, clock=clock
    )
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        watch = source.next_watch()
        late = Recorder()
        informer.add_event_handler_with_resync_period(late, 5)
        assert late.next() == ("add", "x1", True)
        helpers.step_when_waiting(clock, 5)
        watch.add(helpers.cm("marker", 11))
        assert late.next() == ("add", "marker11", False)
        helpers.step_when_waiting(clock, 5)
        assert sorted(late.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_a_sub_second_handler_resync_period_is_raised_to_one_second() -> None:
    clock = FakeClock()
    source, informer, handler = helpers.recorded_informer(
        helpers.cm("x"), default_event_handler_resync_period=1, clock=clock, resync_period=0.2)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "x1", True)
        watch = source.next_watch()
        helpers.step_when_waiting(clock, 0.5)
        watch.add(helpers.cm("marker", 11))
        assert handler.next() == ("add", "marker11", False)
        helpers.step_when_waiting(clock, 0.5)
        assert sorted(handler.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_a_relist_of_unchanged_objects_reaches_handlers_as_equal_updates_and_new_ones_as_late_adds() -> None:
    clock = FakeClock()
    source, informer, handler = helpers.recorded_informer(helpers.cm("x"), clock=clock)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "x1", True)
        source.items = [helpers.cm("x"), helpers.cm("y", 20)]
        source.next_watch().error({"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"})
        helpers.step_when_waiting(clock)  # the backoff before the relist
        assert handler.take(2) == [("update", "x1", "x1"), ("add", "y20", False)]


def test_a_stuck_handler_neither_blocks_other_handlers_nor_counts_as_synced() -> None:
    source = ScriptedSource(helpers.cm("a"))
    informer = kinformer.SharedIndexInformer(source.lister_watcher)
    gate = threading.Event()
    stuck = Recorder(gate=gate)
    stuck_registration = informer.add_event_handler(stuck)
    fast = Recorder()
    informer.add_event_handler(fast)
    with helpers.running(informer.run):
        try:
            assert wait_for(informer.has_synced, helpers.TIMEOUT)
            assert stuck.entered.wait(helpers.TIMEOUT)
            source.next_watch().add(helpers.cm("b", 11))
            assert fast.take(2) == [("add", "a1", True), ("add", "b11", False)]
            assert not stuck_registration.has_synced()
        finally:
            gate.set()
        assert wait_for(stuck_registration.has_synced, helpers.TIMEOUT)


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        # classic: a delete of a key neither queued nor cached is skipped, repeats merge
        ("classic", [("delete", "a12"), ("add", "marker13", False)]),
        # modern: every watch event reaches handlers, in order
        ("modern", [("delete", "ghost11"), ("delete", "a12"), ("delete", "a12"),
                    ("add", "marker13", False)]),
    ],
)
def test_deletes_of_unknown_objects_and_repeated_deletes_per_profile(
    profile: str, expected: list[tuple[str, ...]]
) -> None:
    source, informer, handler = helpers.recorded_informer(helpers.cm("a"), profile=profile)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "a1", True)
        watch = source.next_watch()
        watch.delete(helpers.cm("ghost", 11))
        watch.delete(helpers.cm("a", 12))
        watch.delete(helpers.cm("a", 12))
        watch.add(helpers.cm("marker", 13))
        assert handler.take(len(expected)) == expected
        assert informer.get_store().list_keys() == ["ns/marker"]


def test_bad_objects_and_event_types_are_logged_at_warning_and_never_cached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nameless = {"kind": "ConfigMap", "metadata": {"namespace": "ns", "resourceVersion": "3"}}
    source, informer, handler = helpers.recorded_informer(helpers.cm("a"), nameless)
    caplog.set_level(logging.WARNING)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "a1", True)
        watch = source.next_watch()
        watch.send(kinformer.WatchEvent("GOSSIP", helpers.cm("g", 11)))
        watch.send(
            kinformer.WatchEvent(
                "ADDED", {"kind": "ConfigMap", "metadata": {"namespace": "ns", "resourceVersion": "12"}}
            )
        )
        watch.add(helpers.cm("b", 13))
        assert handler.next() == ("add", "b13", False)
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 2


def test_an_object_whose_name_is_not_a_string_is_never_cached(caplog: pytest.LogCaptureFixture) -> None:
    garbage = {"metadata": {"name": ["ghost"], "namespace": "ns", "resourceVersion": "3"}}
    source, informer, handler = helpers.recorded_informer(helpers.cm("a"), garbage)
    caplog.set_level(logging.WARNING)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        watch = source.next_watch()
        watch.add({"metadata": {"name": 7, "namespace": "ns", "resourceVersion": "12"}})
        watch.add(helpers.cm("b", 13))
        assert handler.take(2) == [("add", "a1", True), ("add", "b13", False)]
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 2
