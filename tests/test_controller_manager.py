"""ControllerManager: controllers run exactly while their resources are synced.

The manager is driven through a real InformerSource made of plain functions and capacity-1
subscription queues; objects with ``has_synced()`` stand in for informers.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Iterator

import helpers
import pytest

import kinformer
from kinformer import Context, GroupVersionResource, errors
from kinformer.controllers.controller import Controller, Result
from kinformer.managers.controller_manager import (
    CONTROLLER_NAME_PREFIX,
    ControllerManager,
    ManagedController,
    StartFunc,
)
from kinformer.managers.source import InformerSource
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for

TIMEOUT = 5.0
WIDGETS = GroupVersionResource("example.io", "v1", "widgets")
GADGETS = GroupVersionResource("example.io", "v1", "gadgets")
GIZMOS = GroupVersionResource("example.io", "v1", "gizmos")


class SyncFlag:
    """Stands in for an informer: the manager only asks whether it synced."""

    def __init__(self, synced: bool) -> None:
        self.synced = synced

    def has_synced(self) -> bool:
        return self.synced


class Served:
    """The resources an informer source serves, with capacity-1 subscriptions that coalesce."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.informers_by_gvr: dict[GroupVersionResource, SyncFlag] = {}
        self.subscriptions: dict[str, queue.Queue[object]] = {}
        self.unsubscribed: list[str] = []
        self.looks = 0
        self.failures = 0  # how many of the next informers() calls raise

    def serve(self, gvr: GroupVersionResource, synced: bool) -> None:
        with self.lock:
            self.informers_by_gvr[gvr] = SyncFlag(synced)

    def withdraw(self, gvr: GroupVersionResource) -> None:
        with self.lock:
            del self.informers_by_gvr[gvr]

    def notify(self) -> None:
        with self.lock:
            subscriptions = list(self.subscriptions.values())
        for subscription in subscriptions:
            with contextlib.suppress(queue.Full):  # one pending notification is enough
                subscription.put_nowait(True)

    def subscribe(self, subscriber: str) -> queue.Queue[object]:
        subscription: queue.Queue[object] = queue.Queue(maxsize=1)
        with self.lock:
            self.subscriptions[subscriber] = subscription
        return subscription

    def unsubscribe(self, subscriber: str) -> None:
        with self.lock:
            self.subscriptions.pop(subscriber, None)
            self.unsubscribed.append(subscriber)

    def informers(self) -> tuple[dict[GroupVersionResource, SyncFlag], list[GroupVersionResource]]:
        with self.lock:
            self.looks += 1
            if self.failures:
                self.failures -= 1
                raise RuntimeError("discovery is unavailable")
            synced = {gvr: i for gvr, i in self.informers_by_gvr.items() if i.has_synced()}
            not_synced = [gvr for gvr, i in self.informers_by_gvr.items() if not i.has_synced()]
            return synced, not_synced

    def source(self) -> InformerSource:
        return InformerSource(self.subscribe, self.informers, self.unsubscribe)


class Instance:
    """One created controller: remembers its contexts and the thread it ran on."""

    def __init__(self, ctx: Context) -> None:
        self.create_ctx = ctx
        self.run_ctx: Context | None = None
        self.thread: threading.Thread | None = None
        self.running = threading.Event()

    def run(self, ctx: Context) -> None:
        self.run_ctx = ctx
        self.thread = threading.current_thread()
        self.running.set()
        ctx.wait()

    def stopped(self) -> bool:
        """Its context was cancelled and its thread has finished."""
        return (
            self.run_ctx is not None
            and self.run_ctx.cancelled()
            and self.thread is not None
            and not self.thread.is_alive()
        )


class Factory:
    """A ManagedController's ``create``: each call makes a fresh :class:`Instance`."""

    def __init__(self, failures: int = 0) -> None:
        self.instances: list[Instance] = []
        self.failures = failures

    def create(self, ctx: Context) -> StartFunc:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("not ready to be created")
        instance = Instance(ctx)
        self.instances.append(instance)
        return instance.run

    def started(self, count: int) -> Instance:
        """Wait until ``count`` instances were created and the last one runs; return it."""
        assert wait_for(lambda: len(self.instances) >= count, TIMEOUT)
        assert len(self.instances) == count
        instance = self.instances[-1]
        assert instance.running.wait(TIMEOUT)
        return instance


class Running(helpers.Background):
    """A ControllerManager run on a thread, on a fake clock."""

    def __init__(
        self, served: Served, controllers: dict[str, ManagedController], stop_timeout: float = TIMEOUT
    ) -> None:
        self.clock = FakeClock()
        self.manager = ControllerManager(
            "test", served.source(), controllers, clock=self.clock, stop_timeout=stop_timeout
        )
        super().__init__(self.manager.run)


@pytest.fixture
def served() -> Served:
    return Served()


@pytest.fixture
def factory() -> Factory:
    return Factory()


@pytest.fixture
def running(served: Served, factory: Factory) -> Iterator[Running]:
    running = Running(served, {"widgets": ManagedController({WIDGETS, GADGETS}, factory.create)})
    yield running
    running.stop()


def test_a_controller_runs_exactly_while_its_resources_are_synced_and_restarts_fresh(served: Served) -> None:
    factory = Factory()
    served.serve(WIDGETS, synced=True)
    served.serve(GADGETS, synced=False)
    running = Running(served, {"widgets": ManagedController([WIDGETS, GADGETS], factory.create)})
    try:
        assert helpers.clock_waits(running.clock, 1.0)  # gadgets served but not synced: look again in 1 s
        assert factory.instances == []
        assert running.manager.running_controllers() == set()
        looks = served.looks
        running.clock.step(1.0)
        assert wait_for(lambda: served.looks > looks)
        assert helpers.clock_waits(running.clock, 1.0)
        assert factory.instances == []

        served.serve(GADGETS, synced=True)
        running.clock.step(1.0)
        first = factory.started(1)
        assert first.thread is not None and first.thread.name == "kinformer-controller-widgets"
        assert running.manager.running_controllers() == {"widgets"}

        served.withdraw(GADGETS)
        served.notify()
        assert wait_for(lambda: running.manager.running_controllers() == set())
        assert first.stopped()

        served.serve(GADGETS, synced=True)
        served.notify()
        second = factory.started(2)
        assert second is not first
        assert not second.create_ctx.cancelled()
    finally:
        running.stop()
    assert second.stopped()


def test_a_resource_served_by_a_new_informer_between_two_looks_restarts_its_controller(
    served: Served, factory: Factory, running: Running
) -> None:
    """The type left and came back while the manager was busy: the two notifications coalesced
    into one look, which saw the resource synced as before, but under a new informer. The
    controller started over the stopped one then waited on it for good."""
    served.serve(WIDGETS, synced=True)
    served.serve(GADGETS, synced=True)
    served.notify()
    first = factory.started(1)
    served.serve(WIDGETS, synced=True)  # another informer object, synced, where the old one was
    served.notify()
    second = factory.started(2)
    assert first.stopped()
    assert running.manager.running_controllers() == {"widgets"}
    for _ in range(2):  # the same informers again: nothing to do (the second look follows
        looks = served.looks  # the first's whole reconcile: one worker)
        served.notify()
        assert wait_for(lambda: served.looks > looks)  # noqa: B023
    assert len(factory.instances) == 2 and not second.stopped()


def test_reconciles_once_at_start_so_an_earlier_notification_is_not_needed(
    served: Served, factory: Factory
) -> None:
    served.serve(WIDGETS, synced=True)
    served.serve(GADGETS, synced=True)
    running = Running(served, {"widgets": ManagedController({WIDGETS, GADGETS}, factory.create)})
    try:
        factory.started(1)
        assert list(served.subscriptions) == [CONTROLLER_NAME_PREFIX + "test"]
        assert running.manager.name == "syncer-controller-manager-test"
    finally:
        running.stop()


def test_a_controller_falling_out_of_sync_is_stopped_and_polled_back(
    served: Served, factory: Factory, running: Running
) -> None:
    served.serve(WIDGETS, synced=True)
    served.serve(GADGETS, synced=True)
    served.notify()
    first = factory.started(1)
    served.serve(GADGETS, synced=False)
    served.notify()
    assert helpers.clock_waits(running.clock, 1.0)
    assert first.stopped()
    assert running.manager.running_controllers() == set()
    served.serve(GADGETS, synced=True)
    running.clock.step(1.0)
    assert factory.started(2) is not first


def test_a_resource_that_is_not_served_is_waited_for_without_polling(
    served: Served, factory: Factory
) -> None:
    other = Factory()
    served.serve(WIDGETS, synced=True)
    running = Running(
        served,
        {
            "widgets": ManagedController({WIDGETS, GIZMOS}, factory.create),
            "only-widgets": ManagedController({WIDGETS}, other.create),
        },
    )
    try:
        other.started(1)
        looks = served.looks
        served.notify()
        assert wait_for(lambda: served.looks > looks)  # the first reconcile has finished
        assert not any(t.name.startswith("kinformer-workqueue-") for t in threading.enumerate())
        assert factory.instances == []
        served.serve(GIZMOS, synced=True)
        served.notify()
        factory.started(1)
    finally:
        running.stop()


def test_notifications_coalesce_into_one_reconcile_per_change(
    served: Served, factory: Factory, running: Running
) -> None:
    served.serve(WIDGETS, synced=True)
    served.serve(GADGETS, synced=True)
    for _ in range(20):
        served.notify()
    factory.started(1)
    assert wait_for(lambda: served.subscriptions[running.manager.name].empty())
    assert len(factory.instances) == 1


def test_a_create_that_raises_is_retried_with_backoff(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    factory = Factory(failures=1)
    served.serve(WIDGETS, synced=True)
    running = Running(served, {"widgets": ManagedController({WIDGETS}, factory.create)})
    try:
        assert wait_for(running.clock.has_waiters)
        assert "creating controller widgets failed" in caplog.text
        assert factory.instances == []
        running.clock.step(1.0)
        factory.started(1)
    finally:
        running.stop()


def test_a_failing_informer_source_is_asked_again_with_backoff(served: Served, factory: Factory) -> None:
    served.serve(WIDGETS, synced=True)
    served.failures = 1
    running = Running(served, {"widgets": ManagedController({WIDGETS}, factory.create)})
    try:
        assert wait_for(running.clock.has_waiters)
        assert factory.instances == []
        running.clock.step(1.0)
        factory.started(1)
    finally:
        running.stop()


def test_a_stuck_controller_is_named_in_a_warning(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    entered = threading.Event()

    def stubborn(ctx: Context) -> None:
        entered.set()
        release.wait(TIMEOUT)  # ignores its context until the test lets it go

    served.serve(WIDGETS, synced=True)
    controllers = {"stubborn": ManagedController({WIDGETS}, lambda ctx: stubborn)}
    running = Running(served, controllers, stop_timeout=0.05)
    try:
        assert entered.wait(TIMEOUT)
        assert running.manager.running_controllers() == {"stubborn"}
        with caplog.at_level(logging.WARNING, logger="kinformer.managers.controller_manager"):
            served.withdraw(WIDGETS)
            served.notify()
            assert wait_for(lambda: running.manager.running_controllers() == set())
        assert "controller stubborn still running" in caplog.text
    finally:
        release.set()
        running.stop()


def test_a_controller_still_running_past_its_stop_is_named_once_and_joined_when_the_manager_stops(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    threads: list[threading.Thread] = []

    def stubborn(ctx: Context) -> None:
        threads.append(threading.current_thread())
        release.wait(TIMEOUT)  # ignores its context until the test lets it go

    served.serve(WIDGETS, synced=True)
    controllers = {"stubborn": ManagedController({WIDGETS}, lambda ctx: stubborn)}
    running = Running(served, controllers, stop_timeout=0.05)
    try:
        assert wait_for(lambda: threads)
        with caplog.at_level(logging.WARNING, logger="kinformer.managers.controller_manager"):
            served.withdraw(WIDGETS)
            served.notify()
            assert wait_for(lambda: "controller stubborn still running" in caplog.text)
            running.stop()  # joins it within stop_timeout once more, without a second warning
        said = [r.getMessage() for r in caplog.records if "stubborn" in r.getMessage()
                and r.levelno >= logging.WARNING]
        assert len(said) == 1, said
    finally:
        release.set()
        running.stop()
    threads[0].join(TIMEOUT)
    assert not threads[0].is_alive()


def test_a_controller_that_exits_its_thread_is_named_as_crashed(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """``sys.exit()`` in a controller ends only its thread, which Python does without a word:
    the controller was gone and nothing said so."""
    def create(ctx: Context) -> StartFunc:
        def start_fn(run_ctx: Context) -> None:
            raise SystemExit(3)

        return start_fn

    served.serve(WIDGETS, synced=True)
    running = Running(served, {"exiting": ManagedController({WIDGETS}, create)})
    try:
        assert wait_for(lambda: "controller exiting crashed" in caplog.text)
        crashed = next(r for r in caplog.records if "controller exiting crashed" in r.getMessage())
        assert crashed.levelno == logging.ERROR
        assert crashed.exc_info is not None and crashed.exc_info[0] is SystemExit
        assert running.manager.running_controllers() == {"exiting"}  # not restarted, as kcp
    finally:
        running.stop()


def test_stopping_the_manager_joins_every_controller_and_unsubscribes(served: Served) -> None:
    factories = {name: Factory() for name in ("a", "b")}
    served.serve(WIDGETS, synced=True)
    running = Running(served, {name: ManagedController({WIDGETS}, f.create) for name, f in factories.items()})
    instances = [f.started(1) for f in factories.values()]
    assert running.manager.running_controllers() == {"a", "b"}
    running.stop()
    assert all(instance.stopped() for instance in instances)
    assert running.manager.running_controllers() == set()
    assert served.unsubscribed == [running.manager.name]
    assert not any(t.name.endswith(running.manager.name) for t in threading.enumerate())


def test_the_manager_hands_unsubscribe_the_queue_it_was_given_when_it_takes_one(served: Served) -> None:
    """So that a source ends that subscription only, not a newer one under the same name (the
    same manager restarted while this run still stopped)."""
    ended: list[tuple[str, queue.Queue[object]]] = []
    given: list[queue.Queue[object]] = []

    def subscribe(subscriber: str) -> queue.Queue[object]:
        given.append(served.subscribe(subscriber))
        return given[-1]

    def unsubscribe(subscriber: str, subscription: queue.Queue[object]) -> None:
        ended.append((subscriber, subscription))

    manager = ControllerManager("queued", InformerSource(subscribe, served.informers, unsubscribe), {})
    with helpers.running(manager.run):
        assert wait_for(lambda: given)
    assert len(given) == 1
    assert ended == [(manager.name, given[0])]


def test_start_accepts_an_event_and_runs_only_once(served: Served, factory: Factory) -> None:
    served.serve(WIDGETS, synced=True)
    manager = ControllerManager("event", served.source(), {"w": ManagedController({WIDGETS}, factory.create)})
    stop = threading.Event()
    with helpers.running(manager.start, stop):
        instance = factory.started(1)
    assert instance.stopped()
    with pytest.raises(errors.AlreadyStartedError):
        manager.start(stop)
    with pytest.raises(errors.AlreadyStartedError):  # run is start under another name
        manager.run(stop)


def test_a_generic_controller_runs_and_stops_under_the_manager(served: Served) -> None:
    reconciled: queue.Queue[str] = queue.Queue()
    controllers: list[Controller] = []

    class Echo:
        def reconcile(self, key: str) -> Result | None:
            reconciled.put(key)
            return None

    def create(ctx: Context) -> StartFunc:
        controller = Controller("echo", Echo(), workers=2)
        controllers.append(controller)
        return controller.run

    served.serve(WIDGETS, synced=True)
    running = Running(served, {"echo": ManagedController({WIDGETS}, create)})
    try:
        assert wait_for(lambda: controllers)
        controllers[0].enqueue("default/a")
        assert reconciled.get(timeout=TIMEOUT) == "default/a"
        served.withdraw(WIDGETS)
        served.notify()
        assert wait_for(lambda: running.manager.running_controllers() == set())
        assert controllers[0].queue.shutting_down()
        workers = [t.name for t in threading.enumerate() if t.name.startswith("kinformer-controller-echo")]
        assert workers == []
    finally:
        running.stop()


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference.


def test_a_source_of_subscribe_and_informers_alone_drives_a_manager_started_by_keyword() -> None:
    served = Served()
    served.serve(WIDGETS, synced=True)
    started = threading.Event()

    def create(ctx: kinformer.Context) -> StartFunc:
        def start_fn(run_ctx: kinformer.Context) -> None:
            started.set()
            run_ctx.wait()

        return start_fn

    source = kinformer.InformerSource(served.subscribe, served.informers)  # no unsubscribe
    manager = kinformer.ControllerManager(
        "initial", source, {"c": kinformer.ManagedController([WIDGETS], create)}
    )
    assert manager.name == kinformer.CONTROLLER_NAME_PREFIX + "initial"
    with helpers.running(lambda ctx: manager.start(ctx=ctx)):
        assert started.wait(helpers.TIMEOUT)  # at its first look, with no notification sent
        assert wait_for(lambda: manager.running_controllers() == {"c"}, helpers.TIMEOUT)
    assert manager.running_controllers() == set()
