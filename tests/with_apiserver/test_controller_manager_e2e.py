"""A ControllerManager over the discovering informer factory, with CRDs installed and deleted over HTTP.

A controller starts once its CRD is served and its informer synced; deleting the CRD stops the
informer, cancels the controller's context and joins its thread; reinstalling gives a fresh
informer and a fresh controller. Also docs/examples/crd_controller.py end to end.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any

from helpers import crd, load_example
from kubernetes import client as k8s

from kinformer import (
    Context,
    Controller,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    ManagedController,
)
from kinformer.controllers import controller as controller_module
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
GADGETS = GroupVersionResource("example.com", "v1", "gadgets")
TIMEOUT = 5.0


example = load_example("crd_controller")


class Instances:
    """A ManagedController.create that records each instance's context and thread."""

    def __init__(self) -> None:
        self.created: queue.Queue[tuple[Context, list[threading.Thread]]] = queue.Queue()

    def create(self, ctx: Context) -> Callable[[Context], None]:
        threads: list[threading.Thread] = []
        self.created.put((ctx, threads))

        def start(run_ctx: Context) -> None:
            threads.append(threading.current_thread())
            run_ctx.wait()

        return start

    def next(self) -> tuple[Context, threading.Thread]:
        ctx, threads = self.created.get(timeout=TIMEOUT)
        assert wait_for(lambda: threads, TIMEOUT)
        return ctx, threads[0]


def run_manager(
    api_client: Any, ctx: Context, controllers: dict[str, ManagedController]
) -> tuple[DiscoveringDynamicSharedInformerFactory, ControllerManager, threading.Thread]:
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda g: g.group == "example.com")
    manager = ControllerManager("e2e", ddsif.informer_source(), controllers)
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    assert ddsif.wait_ready(TIMEOUT)
    return ddsif, manager, runner


def stop_all(ctx: Context, ddsif: DiscoveringDynamicSharedInformerFactory, runner: threading.Thread) -> None:
    ctx.cancel()
    runner.join(TIMEOUT)
    assert not runner.is_alive()
    ddsif.stop()


def test_a_controller_runs_exactly_while_its_crd_is_installed(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    extensions = k8s.ApiextensionsV1Api(api_client)
    instances = Instances()
    ddsif, manager, runner = run_manager(
        api_client, ctx, {"widgets": ManagedController({WIDGETS}, instances.create)}
    )
    try:
        assert manager.running_controllers() == set()
        assert instances.created.empty()

        extensions.create_custom_resource_definition(crd(WIDGETS))
        first_ctx, first_thread = instances.next()
        assert manager.running_controllers() == {"widgets"}
        first_informer = ddsif.for_resource(WIDGETS).informer()
        assert first_informer.has_synced()

        extensions.delete_custom_resource_definition(WIDGETS.group_resource)
        assert first_ctx.wait(TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
        assert not first_thread.is_alive()  # joined before it left running_controllers
        assert first_informer.is_stopped()

        extensions.create_custom_resource_definition(crd(WIDGETS))
        second_ctx, second_thread = instances.next()
        assert second_ctx is not first_ctx and not second_ctx.cancelled()
        assert second_thread is not first_thread
        assert ddsif.for_resource(WIDGETS).informer() is not first_informer
        assert manager.running_controllers() == {"widgets"}
    finally:
        stop_all(ctx, ddsif, runner)
    assert second_ctx.cancelled()
    assert not second_thread.is_alive()


def test_a_controller_waits_for_every_required_informer_to_sync(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    extensions = k8s.ApiextensionsV1Api(api_client)
    instances = Instances()
    extensions.create_custom_resource_definition(crd(WIDGETS))
    apiserver.forbid("gadgets", "list")
    extensions.create_custom_resource_definition(crd(GADGETS))
    ddsif, manager, runner = run_manager(
        api_client, ctx, {"both": ManagedController({WIDGETS, GADGETS}, instances.create)}
    )
    try:
        gadgets = ddsif.for_resource(GADGETS).informer()
        assert wait_for(lambda: gadgets.last_error() is not None, TIMEOUT)
        assert wait_for(lambda: WIDGETS in ddsif.informers()[0], TIMEOUT)
        assert GADGETS in ddsif.informers()[1]
        assert instances.created.empty()
        assert manager.running_controllers() == set()

        apiserver.allow("gadgets", "list")
        ctx_both, _thread = instances.next()
        assert manager.running_controllers() == {"both"}

        extensions.delete_custom_resource_definition(GADGETS.group_resource)
        assert ctx_both.wait(TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
    finally:
        stop_all(ctx, ddsif, runner)
    assert instances.created.empty()  # created once only


def test_the_widget_example_runs_while_its_crd_is_installed(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    extensions = k8s.ApiextensionsV1Api(api_client)
    core = k8s.CoreV1Api(api_client)
    widgets = k8s.CustomObjectsApi(api_client)
    operator = example.WidgetOperator(api_client)
    runner = threading.Thread(target=operator.run, args=(ctx,), name="test-widget-operator")
    runner.start()

    def message() -> Any:
        try:
            return core.read_namespaced_config_map("widget-w1", "default").data.get("message")
        except k8s.ApiException as err:
            assert err.status == 404
            return None

    def create_widget(text: str) -> None:
        body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}}
        body["spec"] = {"message": text}
        widgets.create_namespaced_custom_object("example.com", "v1", "default", "widgets", body)

    try:
        assert operator.factory.wait_ready(TIMEOUT)
        assert operator.manager.running_controllers() == set()
        extensions.create_custom_resource_definition(example.widget_crd())
        create_widget("hello")
        assert wait_for(lambda: message() == "hello", TIMEOUT)
        assert operator.manager.running_controllers() == {"widgets"}

        widgets.patch_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w1", {"spec": {"message": "bye"}}
        )
        assert wait_for(lambda: message() == "bye", TIMEOUT)

        extensions.delete_custom_resource_definition(WIDGETS.group_resource)
        assert wait_for(lambda: operator.manager.running_controllers() == set(), TIMEOUT)

    finally:
        ctx.cancel()
        runner.join(TIMEOUT)
    assert not runner.is_alive()


def test_a_controller_still_running_after_its_stop_is_not_started_again_beside_itself(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context, caplog: Any
) -> None:
    """Its CRD left and came back while the first instance ignored its context past the stop
    timeout: a second instance must wait until the first has returned, not run beside it."""
    extensions = k8s.ApiextensionsV1Api(api_client)
    release = threading.Event()
    entered: queue.Queue[int] = queue.Queue()
    lock = threading.Lock()
    running_now: list[int] = []
    overlapped: list[list[int]] = []
    numbers = itertools.count(1)

    def create(create_ctx: Context) -> Callable[[Context], None]:
        number = next(numbers)

        def start(run_ctx: Context) -> None:
            with lock:
                running_now.append(number)
                if len(running_now) > 1:
                    overlapped.append(list(running_now))
            entered.put(number)
            if number == 1:
                release.wait(TIMEOUT)  # the first ignores its context until the test lets it go
            else:
                run_ctx.wait()
            with lock:
                running_now.remove(number)

        return start

    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda g: g.group == "example.com")
    manager = ControllerManager(
        "e2e", ddsif.informer_source(), {"stubborn": ManagedController({WIDGETS}, create)}, stop_timeout=0.05
    )
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    try:
        assert ddsif.wait_ready(TIMEOUT)
        extensions.create_custom_resource_definition(crd(WIDGETS))
        assert entered.get(timeout=TIMEOUT) == 1
        extensions.delete_custom_resource_definition(WIDGETS.group_resource)
        assert wait_for(lambda: "controller stubborn still running" in caplog.text, TIMEOUT)
        # said before the manager lets go of it: no longer running a moment later
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)

        extensions.create_custom_resource_definition(crd(WIDGETS))
        assert wait_for(lambda: "waits for its previous instance" in caplog.text, TIMEOUT)
        assert entered.empty() and manager.running_controllers() == set()
        release.set()
        assert entered.get(timeout=TIMEOUT) == 2
        assert manager.running_controllers() == {"stubborn"}
    finally:
        release.set()
        stop_all(ctx, ddsif, runner)
    assert overlapped == []


def test_a_controller_whose_reconcile_hangs_is_not_started_again_beside_that_reconcile(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context, caplog: Any, monkeypatch: Any
) -> None:
    """A Controller stopped while one of its reconciles hangs: its run used to return after its
    join timeout with that reconcile still going, so the manager started a fresh instance when
    the CRD came back, and both reconciled the same Widget at once."""
    monkeypatch.setattr(controller_module, "JOIN_TIMEOUT", 0.05)
    extensions = k8s.ApiextensionsV1Api(api_client)
    objects = k8s.CustomObjectsApi(api_client)
    release = threading.Event()
    reconciled: queue.Queue[tuple[int, str]] = queue.Queue()
    lock = threading.Lock()
    in_flight: list[str] = []
    overlapped: list[str] = []
    numbers = itertools.count(1)

    class Reconciler:
        def __init__(self, number: int) -> None:
            self.number = number

        def reconcile(self, key: str) -> None:
            with lock:
                if key in in_flight:
                    overlapped.append(key)
                in_flight.append(key)
            reconciled.put((self.number, key))
            try:
                if self.number == 1:
                    release.wait(TIMEOUT)  # the first instance hangs until the test lets it go
            finally:
                with lock:
                    in_flight.remove(key)

    def create(create_ctx: Context) -> Callable[[Context], None]:
        widgets = ddsif.for_resource(WIDGETS)
        controller = Controller("widgets", Reconciler(next(numbers)))
        registration = widgets.informer().add_event_handler(controller.event_handler())

        def start(run_ctx: Context) -> None:
            try:
                controller.run(run_ctx)
            finally:
                widgets.informer().remove_event_handler(registration)

        return start

    def install() -> None:
        extensions.create_custom_resource_definition(crd(WIDGETS))
        assert wait_for(lambda: WIDGETS in ddsif.served_resources(), TIMEOUT)
        objects.create_namespaced_custom_object(
            WIDGETS.group, WIDGETS.version, "default", WIDGETS.resource,
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})

    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda g: g.group == "example.com")
    manager = ControllerManager(
        "e2e", ddsif.informer_source(), {"widgets": ManagedController({WIDGETS}, create)}, stop_timeout=1.0
    )
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    try:
        assert ddsif.wait_ready(TIMEOUT)
        install()
        assert reconciled.get(timeout=TIMEOUT) == (1, "default/w")
        extensions.delete_custom_resource_definition(WIDGETS.group_resource)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)

        install()
        assert wait_for(lambda: "waits for its previous instance" in caplog.text or overlapped, TIMEOUT)
        assert overlapped == []
        assert reconciled.empty() and manager.running_controllers() == set()
        assert "still reconciling key=default/w" in caplog.text
        release.set()
        assert reconciled.get(timeout=TIMEOUT) == (2, "default/w")
        assert manager.running_controllers() == {"widgets"}
    finally:
        release.set()
        stop_all(ctx, ddsif, runner)
    assert overlapped == []


def test_a_controller_starts_soon_after_discovery_answered_503_at_startup(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context
) -> None:
    """The server was starting up: its first answer to discovery was a 503. The controller
    waited a whole poll interval (30 s) for the factory's next look."""
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    apiserver.fail_discovery(count=1, path="/apis")
    instances = Instances()
    ddsif, manager, runner = run_manager(
        api_client, ctx, {"widgets": ManagedController({WIDGETS}, instances.create)}
    )
    try:
        first_ctx, _thread = instances.next()
        assert not first_ctx.cancelled()
        assert manager.running_controllers() == {"widgets"}
    finally:
        stop_all(ctx, ddsif, runner)


def test_a_manager_stopping_late_leaves_the_subscription_of_its_restart_alone(
    apiserver: FakeAPIServer, api_client: Any, ctx: Context, caplog: Any
) -> None:
    """A manager restarted under the same name while its previous run still stopped: the old
    run, done at last, ended the subscription by name, the new run's with it, and the new
    manager never heard of another change."""
    extensions = k8s.ApiextensionsV1Api(api_client)
    release = threading.Event()
    entered = threading.Event()

    def create_stubborn(create_ctx: Context) -> Callable[[Context], None]:
        def start(run_ctx: Context) -> None:
            entered.set()
            release.wait(TIMEOUT)  # ignores its context until the test lets it go

        return start

    instances = Instances()
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda g: g.group == "example.com")
    first_ctx, second_ctx = ctx.child("first"), ctx.child("second")
    first = ControllerManager("e2e", ddsif.informer_source(),
                              {"widgets": ManagedController({WIDGETS}, create_stubborn)},
                              stop_timeout=TIMEOUT)
    second = ControllerManager("e2e", ddsif.informer_source(),
                               {"gadgets": ManagedController({GADGETS}, instances.create)})
    ddsif.start(ctx)
    first_runner = threading.Thread(target=first.start, args=(first_ctx,), name="test-first-manager")
    second_runner = threading.Thread(target=second.start, args=(second_ctx,), name="test-second-manager")
    first_runner.start()
    try:
        assert ddsif.wait_ready(TIMEOUT)
        extensions.create_custom_resource_definition(crd(WIDGETS))
        assert entered.wait(TIMEOUT)
        first_ctx.cancel()  # the first run now waits for its stubborn controller

        second_runner.start()
        assert wait_for(lambda: "subscribed again" in caplog.text, TIMEOUT)
        release.set()
        first_runner.join(TIMEOUT)
        assert not first_runner.is_alive()  # it has unsubscribed

        extensions.create_custom_resource_definition(crd(GADGETS))
        assert wait_for(lambda: second.running_controllers() == {"gadgets"}, TIMEOUT), \
            "the manager started second never heard of gadgets"
        instances.next()
    finally:
        release.set()
        second_ctx.cancel()
        for runner in (first_runner, second_runner):
            if runner.ident is not None:
                runner.join(TIMEOUT)
                assert not runner.is_alive()
        ddsif.stop()
