"""SharedIndexInformer over a scripted ListWatch: cache, handlers, late joiners, resyncs, lifecycle."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import Context, errors, processor
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.client.interface import ChannelWatch, ListOptions, ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeClock, wait_for

TIMEOUT = 5.0


def cm(name: str, rv: int, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), **extra}}


class Source:
    """A scripted API: ``list`` answers the current objects, each ``watch`` is fed by the test."""

    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objs}
        self.rv = 10
        self.list_error: Exception | None = None
        self.watches: queue.Queue[ChannelWatch] = queue.Queue()
        self.watch: ChannelWatch | None = None

    def list(self, options: ListOptions) -> ListResult:
        if self.list_error is not None:
            raise self.list_error
        return ListResult(list(self.objects.values()), str(self.rv))

    def open_watch(self, options: ListOptions) -> ChannelWatch:
        watch = ChannelWatch()
        self.watches.put(watch)
        return watch

    def lister_watcher(self) -> ListWatch:
        return ListWatch(self.list, self.open_watch)

    def next_watch(self) -> ChannelWatch:
        self.watch = self.watches.get(timeout=TIMEOUT)
        return self.watch

    def send(self, kind: str, obj: dict[str, Any]) -> None:
        assert self.watch is not None
        {"ADDED": self.watch.add, "MODIFIED": self.watch.modify, "DELETED": self.watch.delete}[kind](obj)


class Recorder:
    """A handler that queues what it receives; ``gate`` (when given) blocks every callback."""

    def __init__(
        self, gate: threading.Event | None = None, informer: SharedIndexInformer | None = None
    ) -> None:
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.gate = gate
        self.informer = informer
        self.cached_during_callback: list[Any] = []
        self.entered = threading.Event()

    def _record(self, *event: Any) -> None:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        if self.informer is not None:
            key = event[-1]["metadata"]["name"] if isinstance(event[-1], dict) else event[-1].key
            self.cached_during_callback.append(self.informer.get_indexer().get_by_key(f"ns/{key}"))
        self.events.put(event)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record("add", is_in_initial_list, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", old, new)

    def on_delete(self, obj: Any) -> None:
        self._record("delete", obj)

    def next(self) -> tuple[Any, ...]:
        return self.events.get(timeout=TIMEOUT)

    def take(self, count: int) -> list[tuple[Any, ...]]:
        return [self.next() for _ in range(count)]


def summary(event: tuple[Any, ...]) -> tuple[Any, ...]:
    """("add", initial, name) / ("update", old rv, new rv) / ("delete", name or tombstone key)."""
    kind = event[0]
    if kind == "add":
        return ("add", event[1], event[2]["metadata"]["name"])
    if kind == "update":
        return ("update", event[1]["metadata"]["resourceVersion"], event[2]["metadata"]["resourceVersion"])
    obj = event[1]
    if isinstance(obj, DeletedFinalStateUnknown):
        return ("delete", "tombstone", obj.key)
    return ("delete", obj["metadata"]["name"])


@contextmanager
def running(informer: SharedIndexInformer, stop: Any = None) -> Iterator[Context | threading.Event]:
    stop = stop if stop is not None else Context()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer-run")
    thread.start()
    try:
        yield stop
    finally:
        if isinstance(stop, Context):
            stop.cancel()
        else:
            stop.set()
        thread.join(TIMEOUT * 2)
        assert not thread.is_alive(), "run did not return after stop"


def test_initial_list_fills_the_cache_and_reaches_handlers_as_initial_adds() -> None:
    source = Source(cm("a", 1), cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher(), name="initial")
    handler = Recorder()
    registration = informer.add_event_handler(handler)
    assert not informer.has_synced() and not registration.has_synced()
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert sorted(summary(e) for e in handler.take(2)) == [("add", True, "a"), ("add", True, "b")]
        assert sorted(informer.get_store().list_keys()) == ["ns/a", "ns/b"]
        assert wait_for(registration.has_synced, TIMEOUT)
        assert informer.last_sync_resource_version() == "10"
    assert informer.is_stopped()


def test_watch_events_reach_the_cache_before_the_handlers() -> None:
    source = Source(cm("a", 1), cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher(), name="order")
    handler = Recorder(informer=informer)
    informer.add_event_handler(handler)
    with running(informer):
        source.next_watch()
        handler.take(2)
        source.send("MODIFIED", cm("a", 11))
        source.send("ADDED", cm("c", 12))
        source.send("DELETED", cm("b", 13))
        assert [summary(e) for e in handler.take(3)] == [
            ("update", "1", "11"),
            ("add", False, "c"),
            ("delete", "b"),
        ]
        seen = handler.cached_during_callback[2:]
        assert seen[0]["metadata"]["resourceVersion"] == "11"
        assert seen[1]["metadata"]["name"] == "c"
        assert seen[2] is None


def test_relist_after_an_expired_watch_reports_vanished_objects_as_tombstones() -> None:
    clock = FakeClock()
    source = Source(cm("a", 1), cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher(), name="relist", clock=clock)
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer):
        watch = source.next_watch()
        handler.take(2)
        del source.objects["b"]
        watch.error({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
        assert clock.wait_for_waiters(1, TIMEOUT)  # the reflector backs off before relisting
        clock.step(120)
        source.next_watch()
        events = sorted(summary(e) for e in handler.take(2))
        # "a" is relisted unchanged: a sync update, still sent since this informer never resyncs
        assert events == [("delete", "tombstone", "ns/b"), ("update", "1", "1")]
        assert informer.get_store().list_keys() == ["ns/a"]


def test_late_handler_gets_the_cache_as_initial_adds_and_nothing_else() -> None:
    source = Source(cm("a", 1), cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher(), name="late")
    early = Recorder()
    informer.add_event_handler(early)
    with running(informer):
        source.next_watch()
        early.take(2)
        gate = threading.Event()
        late = Recorder(gate)
        registration = informer.add_event_handler(late)
        assert not registration.has_synced()  # its initial adds have not returned yet
        gate.set()
        assert sorted(summary(e) for e in late.take(2)) == [("add", True, "a"), ("add", True, "b")]
        assert wait_for(registration.has_synced, TIMEOUT)
        source.send("ADDED", cm("c", 12))
        assert summary(late.next()) == ("add", False, "c")
        assert summary(early.next()) == ("add", False, "c")


def test_a_stuck_handler_stalls_neither_the_cache_nor_other_handlers() -> None:
    source = Source(cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher(), name="stuck")
    gate = threading.Event()
    stuck = Recorder(gate)
    healthy = Recorder()
    stuck_registration = informer.add_event_handler(stuck)
    informer.add_event_handler(healthy)
    with running(informer):
        try:
            source.next_watch()
            for rv in range(11, 31):
                source.send("MODIFIED", cm("a", rv))
            assert [summary(e)[0] for e in healthy.take(21)] == ["add"] + ["update"] * 20
            assert informer.get_store().get_by_key("ns/a")["metadata"]["resourceVersion"] == "30"
            assert stuck.entered.wait(TIMEOUT) and stuck.events.empty()
            assert stuck_registration.pending() == 20  # the first add is being delivered
        finally:
            gate.set()
        assert len(stuck.take(21)) == 21


def test_a_raising_handler_is_logged_and_keeps_receiving(caplog: pytest.LogCaptureFixture) -> None:
    source = Source(cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher(), name="raising")
    received: queue.Queue[str] = queue.Queue()

    def add(obj: Any) -> None:
        received.put(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=add))
    with running(informer):
        source.next_watch()
        source.send("ADDED", cm("b", 11))
        assert [received.get(timeout=TIMEOUT), received.get(timeout=TIMEOUT)] == ["a", "b"]
    assert "handler bug" in caplog.text


def test_run_returns_despite_a_handler_stuck_forever_and_names_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processor, "LISTENER_JOIN_TIMEOUT", 0.2)
    source = Source(cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher(), name="forever")
    gate = threading.Event()
    entered = threading.Event()

    def add(obj: Any) -> None:
        entered.set()
        gate.wait()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=add))
    try:
        with caplog.at_level(logging.WARNING), running(informer):
            assert entered.wait(TIMEOUT)
        assert "kinformer-handler-forever-1" in caplog.text
    finally:
        gate.set()


def test_run_twice_warns_and_returns_at_once(caplog: pytest.LogCaptureFixture) -> None:
    source = Source()
    informer = SharedIndexInformer(source.lister_watcher(), name="twice")
    with running(informer, threading.Event()):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.run(Context())  # would block forever if it ran
        assert "run more than once" in caplog.text
        with pytest.raises(errors.AlreadyStartedError):
            informer.set_transform(None)
        with pytest.raises(errors.AlreadyStartedError):
            informer.set_watch_error_handler(None)


def test_a_stopped_informer_refuses_handlers_and_indexers() -> None:
    informer = SharedIndexInformer(Source().lister_watcher(), name="stopped")
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
    assert informer.is_stopped()
    with pytest.raises(errors.StoppedError):
        informer.add_event_handler(Recorder())
    with pytest.raises(errors.StoppedError):
        informer.add_indexers({"by-name": lambda o: [o["metadata"]["name"]]})


def test_indexers_can_be_added_after_start() -> None:
    source = Source(cm("a", 1, labels={"app": "web"}))
    informer = SharedIndexInformer(source.lister_watcher(), name="indexers")
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.add_indexers({"app": lambda o: [o["metadata"]["labels"]["app"]]})
        assert informer.get_indexer().index_keys("app", "web") == ["ns/a"]


def test_the_first_list_is_cached_and_synced_before_the_watch_starts() -> None:
    source = Source(cm("c", 3), cm("a", 1), cm("b", 2))
    seen_at_watch: list[tuple[bool, list[str]]] = []

    def watch(options: ListOptions) -> ChannelWatch:
        seen_at_watch.append((informer.has_synced(), sorted(informer.get_store().list_keys())))
        return source.open_watch(options)

    informer = SharedIndexInformer(ListWatch(source.list, watch), name="first-list")
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer):
        source.next_watch()
        assert seen_at_watch[0] == (True, ["ns/a", "ns/b", "ns/c"])
        assert [summary(e) for e in handler.take(3)] == [("add", True, n) for n in ("c", "a", "b")]


def test_a_key_listed_twice_reaches_handlers_as_an_add_then_an_update() -> None:
    source = Source()
    source.list = lambda options: ListResult([cm("a", 1), cm("b", 1), cm("a", 2)], "10")  # type: ignore[method-assign]
    informer = SharedIndexInformer(source.lister_watcher(), name="listed-twice")
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert [summary(e) for e in handler.take(3)] == [
            ("add", True, "a"),
            ("update", "1", "2"),
            ("add", True, "b"),
        ]
        assert informer.get_store().get_by_key("ns/a")["metadata"]["resourceVersion"] == "2"


def test_the_first_list_is_transformed_once_per_object() -> None:
    source = Source(cm("a", 1), cm("b", 2))
    informer = SharedIndexInformer(source.lister_watcher(), name="transform-once")
    calls: list[str] = []

    def mark(obj: Any) -> Any:
        calls.append(obj["metadata"]["name"])
        return {**obj, "seen": len(calls)}

    informer.set_transform(mark)
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert calls == ["a", "b"]
        assert [informer.get_store().get_by_key(k)["seen"] for k in ("ns/a", "ns/b")] == [1, 2]


def test_an_index_function_failing_on_one_listed_object_drops_only_that_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def by_app(obj: Any) -> list[str]:
        if obj["metadata"]["name"] == "b":
            raise ValueError("no app label")
        return ["web"]

    source = Source(cm("a", 1), cm("b", 2), cm("c", 3))
    informer = SharedIndexInformer(source.lister_watcher(), indexers={"app": by_app}, name="bad-index")
    handler = Recorder()
    informer.add_event_handler(handler)
    with caplog.at_level(logging.ERROR, logger="kinformer"), running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert [summary(e) for e in handler.take(2)] == [("add", True, "a"), ("add", True, "c")]
        assert sorted(informer.get_store().list_keys()) == ["ns/a", "ns/c"]
        assert sorted(informer.get_indexer().index_keys("app", "web")) == ["ns/a", "ns/c"]
    assert "object dropped" in caplog.text


def test_transform_applies_before_caching() -> None:
    source = Source(cm("a", 1, managedFields=[{"manager": "kubectl"}]))
    informer = SharedIndexInformer(source.lister_watcher(), name="transform")

    def strip(obj: Any) -> Any:
        obj["metadata"].pop("managedFields", None)
        return obj

    informer.set_transform(strip)
    with running(informer):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert "managedFields" not in informer.get_store().get_by_key("ns/a")["metadata"]


def test_removed_handler_hears_nothing_more_and_removal_is_idempotent() -> None:
    source = Source(cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher(), name="remove")
    removed, kept = Recorder(), Recorder()
    registration = informer.add_event_handler(removed)
    informer.add_event_handler(kept)
    with running(informer):
        source.next_watch()
        removed.take(1)
        kept.take(1)
        informer.remove_event_handler(registration)
        informer.remove_event_handler(registration)
        source.send("ADDED", cm("b", 11))
        assert summary(kept.next()) == ("add", False, "b")
        assert removed.events.empty()
    with pytest.raises(TypeError):
        informer.remove_event_handler("not a registration")  # type: ignore[arg-type]


def test_last_error_shows_a_failing_list_until_a_list_succeeds() -> None:
    clock = FakeClock()
    source = Source(cm("a", 1))
    source.list_error = errors.ForbiddenError(403, "Forbidden", 'configmaps is forbidden')
    informer = SharedIndexInformer(source.lister_watcher(), name="forbidden", clock=clock)
    with running(informer):
        assert clock.wait_for_waiters(1, TIMEOUT)
        assert isinstance(informer.last_error(), errors.ForbiddenError)
        assert not informer.wait_for_sync(timeout=0.05)
        source.list_error = None
        clock.step(120)
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert informer.last_error() is None


def test_resync_reaches_only_handlers_that_asked_for_it() -> None:
    clock = FakeClock()
    source = Source(cm("a", 1))
    informer = SharedIndexInformer(source.lister_watcher(), None, 10, name="resync", clock=clock)
    resyncing, quiet = Recorder(), Recorder()
    informer.add_event_handler(resyncing)
    informer.add_event_handler_with_resync_period(quiet, 0)
    with running(informer):
        source.next_watch()
        resyncing.take(1)
        quiet.take(1)
        assert clock.wait_for_waiters(1, TIMEOUT)  # the resync timer
        clock.step(10)
        assert summary(resyncing.next()) == ("update", "1", "1")
        source.send("ADDED", cm("b", 11))
        assert summary(quiet.next()) == ("add", False, "b")
        assert summary(resyncing.next()) == ("add", False, "b")


def test_resync_periods_follow_the_informer_check_period() -> None:
    never = SharedIndexInformer(Source().lister_watcher(), None, 0, name="never")
    assert never.add_event_handler_with_resync_period(Recorder(), 30).resync_period == 0

    lowered = SharedIndexInformer(Source().lister_watcher(), None, 10, name="lowered")
    older = lowered.add_event_handler(Recorder())
    newer = lowered.add_event_handler_with_resync_period(Recorder(), 5)
    tiny = lowered.add_event_handler_with_resync_period(Recorder(), 0.1)
    assert (older.resync_period, newer.resync_period, tiny.resync_period) == (10, 5, 1)

    started = SharedIndexInformer(Source().lister_watcher(), None, 10, name="started")
    with running(started):
        assert started.wait_for_sync(timeout=TIMEOUT)
        assert started.add_event_handler_with_resync_period(Recorder(), 5).resync_period == 10


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference, over the shared scripted source.


def test_informer_runs_on_an_event_syncs_and_delivers_initial_adds() -> None:
    source = helpers.ScriptedSource(helpers.cm("a"), helpers.cm("b"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher,
        example_object=None,
        default_event_handler_resync_period=0,
        indexers={kinformer.NAMESPACE_INDEX: kinformer.meta_namespace_index_func},
    )
    handler = helpers.Recorder()
    registration = informer.add_event_handler(handler)
    assert not informer.has_synced()
    assert informer.last_sync_resource_version() == ""
    with helpers.running(informer.run, threading.Event()) as stop:
        assert kinformer.wait_for_cache_sync(
            stop, informer.has_synced, registration.has_synced, timeout=helpers.TIMEOUT
        )
        assert sorted(handler.take(2)) == [("add", "a1", True), ("add", "b1", True)]
        assert informer.last_sync_resource_version() == "10"
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
        assert informer.get_store() is informer.get_indexer()
        assert sorted(informer.get_indexer().index_keys(kinformer.NAMESPACE_INDEX, "ns")) == ["ns/a", "ns/b"]
        source.next_watch().add(helpers.cm("c", 11))
        assert handler.next() == ("add", "c11", False)
    assert informer.is_stopped()


def test_an_informer_without_resync_never_resyncs_whatever_a_handler_asks() -> None:
    clock = FakeClock()
    source = helpers.ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=0, clock=clock
    )
    handler = helpers.Recorder()
    informer.add_event_handler_with_resync_period(handler, 30)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "x1", True)
        watch = source.next_watch()
        clock.step(120)
        watch.add(helpers.cm("marker", 11))
        assert handler.next() == ("add", "marker11", False)


def test_a_shorter_handler_period_before_start_lowers_the_check_period_only_for_itself() -> None:
    clock = FakeClock()
    source = helpers.ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=10, clock=clock
    )
    slow, fast = helpers.Recorder(), helpers.Recorder()
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
    source = helpers.ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=10, clock=clock
    )
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        watch = source.next_watch()
        late = helpers.Recorder()
        informer.add_event_handler_with_resync_period(late, 5)
        assert late.next() == ("add", "x1", True)
        helpers.step_when_waiting(clock, 5)
        watch.add(helpers.cm("marker", 11))
        assert late.next() == ("add", "marker11", False)
        helpers.step_when_waiting(clock, 5)
        assert sorted(late.take(2)) == [("update", "marker11", "marker11"), ("update", "x1", "x1")]


def test_a_sub_second_handler_resync_period_is_raised_to_one_second() -> None:
    clock = FakeClock()
    source = helpers.ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(
        source.lister_watcher, default_event_handler_resync_period=1, clock=clock
    )
    handler = helpers.Recorder()
    informer.add_event_handler_with_resync_period(handler, 0.2)
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
    source = helpers.ScriptedSource(helpers.cm("x"))
    informer = kinformer.SharedIndexInformer(source.lister_watcher, clock=clock)
    handler = helpers.Recorder()
    informer.add_event_handler(handler)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "x1", True)
        source.items = [helpers.cm("x"), helpers.cm("y", 20)]
        source.next_watch().error({"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"})
        helpers.step_when_waiting(clock)  # the backoff before the relist
        assert handler.take(2) == [("update", "x1", "x1"), ("add", "y20", False)]


def test_a_stuck_handler_neither_blocks_other_handlers_nor_counts_as_synced() -> None:
    source = helpers.ScriptedSource(helpers.cm("a"))
    informer = kinformer.SharedIndexInformer(source.lister_watcher)
    gate = threading.Event()
    stuck = helpers.Recorder(gate=gate)
    stuck_registration = informer.add_event_handler(stuck)
    fast = helpers.Recorder()
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


def test_deletes_of_unknown_objects_and_repeated_deletes_reach_handlers_once_at_most() -> None:
    source = helpers.ScriptedSource(helpers.cm("a"))
    informer = kinformer.SharedIndexInformer(source.lister_watcher)
    handler = helpers.Recorder()
    informer.add_event_handler(handler)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        assert handler.next() == ("add", "a1", True)
        watch = source.next_watch()
        watch.delete(helpers.cm("ghost", 11))
        watch.delete(helpers.cm("a", 12))
        watch.delete(helpers.cm("a", 12))
        watch.add(helpers.cm("marker", 13))
        assert handler.take(2) == [("delete", "a12"), ("add", "marker13", False)]


def test_bad_objects_and_event_types_are_logged_at_warning_and_never_cached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nameless = {"kind": "ConfigMap", "metadata": {"namespace": "ns", "resourceVersion": "3"}}
    source = helpers.ScriptedSource(helpers.cm("a"), nameless)
    informer = kinformer.SharedIndexInformer(source.lister_watcher)
    handler = helpers.Recorder()
    informer.add_event_handler(handler)
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
    source = helpers.ScriptedSource(helpers.cm("a"), garbage)
    informer = kinformer.SharedIndexInformer(source.lister_watcher)
    handler = helpers.Recorder()
    informer.add_event_handler(handler)
    caplog.set_level(logging.WARNING)
    with helpers.running(informer.run):
        assert wait_for(informer.has_synced, helpers.TIMEOUT)
        watch = source.next_watch()
        watch.add({"metadata": {"name": 7, "namespace": "ns", "resourceVersion": "12"}})
        watch.add(helpers.cm("b", 13))
        assert handler.take(2) == [("add", "a1", True), ("add", "b13", False)]
        assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/b"]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 2
