"""ControllerBuilder through the official client over HTTP: an owner reconciled for its own and its
children's changes, predicates, the priority of live changes, and requests that name their cluster
over logical clusters and over member clusters holding the same default/app."""

from __future__ import annotations

import contextlib
import logging
import queue as stdlib_queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, metric_value
from kubernetes import client as k8s

from kinformer import (
    AlreadyStartedError,
    ConfigurationError,
    ControllerBuilder,
    DiscoveringDynamicSharedInformerFactory,
    DynamicSharedInformerFactory,
    GenerationChangedPredicate,
    MultiClusterInformerFactory,
    PredicateFuncs,
    Request,
    StaticClusterProvider,
    StoppedError,
)
from kinformer.controllers import controller as controller_module
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

GROUP = "example.com"
WIDGETS = GroupVersionResource(GROUP, "v1", "widgets")
SECRETS = GroupVersionResource("", "v1", "secrets")


def widget(name: str, size: int = 1, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": metadata, "spec": {"size": size}}


# A reconciler, not an event handler: kinformer.testing.Recorder records notifications, this requests.
class Recorder:
    """A reconciler that reports each request, optionally held at a gate."""

    def __init__(self) -> None:
        self.calls: stdlib_queue.Queue[Request] = stdlib_queue.Queue()
        self.gate: threading.Event | None = None

    def reconcile(self, request: Request) -> None:
        self.calls.put(request)
        if self.gate is not None:
            self.gate.wait(TIMEOUT)

    def next(self) -> Request:
        return self.calls.get(timeout=TIMEOUT)

    def until(self, wanted: Request) -> list[Request]:
        seen = []
        while True:
            seen.append(self.next())
            if seen[-1] == wanted:
                return seen


class WidgetReconciler:
    """Keeps a ConfigMap ``<widget>-child`` holding the widget's size, owned by the widget."""

    def __init__(self, api_client: Any, factory: DynamicSharedInformerFactory) -> None:
        self.core = k8s.CoreV1Api(api_client)
        self.widgets = factory.for_resource(WIDGETS).lister()
        self.requests: stdlib_queue.Queue[Request] = stdlib_queue.Queue()

    def reconcile(self, request: Request) -> None:
        self.requests.put(request)
        try:
            owner = self.widgets.by_namespace(request.namespace).get(request.name)
        except LookupError:
            return
        want = {"size": str(owner["spec"]["size"])}
        name = f"{request.name}-child"
        try:
            child = self.core.read_namespaced_config_map(name, request.namespace)
        except k8s.ApiException as err:
            if err.status != 404:
                raise
            ref = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": request.name,
                   "uid": owner["metadata"]["uid"], "controller": True}
            self.core.create_namespaced_config_map(request.namespace, {
                "metadata": {"name": name, "ownerReferences": [ref]}, "data": want})
            return
        if child.data != want:
            self.core.patch_namespaced_config_map(name, request.namespace, {"data": want})


@pytest.fixture
def widgets(api_client: Any) -> Any:
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    return k8s.CustomObjectsApi(api_client)


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@contextlib.contextmanager
def started(controller: Any, stop: threading.Event, factory: Any,
            clients: Iterable[Any] = ()) -> Iterator[None]:
    """Start ``controller``; on the way out stop it, check it stopped, shut ``factory`` down and
    close ``clients``, whatever the block raised."""
    controller.start(stop)
    try:
        yield
    finally:
        stop.set()
        assert controller.join(TIMEOUT)
        factory.shutdown()
        for api_client in clients:
            api_client.close()


def member_2_list_failures(prometheus: Any) -> float:
    """How many of member-2's ConfigMap lists and watches failed."""
    return metric_value(prometheus, "kinformer_reflector_errors_total",
                        resource="v1/configmaps@member-2") or 0


def child_data(api_client: Any, name: str) -> dict[str, str] | None:
    try:
        return dict(k8s.CoreV1Api(api_client).read_namespaced_config_map(name, "default").data or {})
    except k8s.ApiException:
        return None


def test_an_owner_is_reconciled_for_its_own_changes_and_its_childrens(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w", 1))
    factory = DynamicSharedInformerFactory(api_client)
    reconciler = WidgetReconciler(api_client, factory)
    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS).owns(CONFIGMAPS)
                  .complete(reconciler))
    with started(controller, stop, factory):
        assert wait_for(lambda: child_data(api_client, "w-child") == {"size": "1"}, timeout=TIMEOUT)
        widgets.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w", {"spec": {"size": 2}})
        assert wait_for(lambda: child_data(api_client, "w-child") == {"size": "2"}, timeout=TIMEOUT)
        # drift on the child: only its owner's reconcile repairs it
        k8s.CoreV1Api(api_client).patch_namespaced_config_map("w-child", "default", {"data": {"size": "9"}})
        assert wait_for(lambda: child_data(api_client, "w-child") == {"size": "2"}, timeout=TIMEOUT)
        # a ConfigMap controlled by another kind of the group, or by nothing, enqueues nothing
        k8s.CoreV1Api(api_client).create_namespaced_config_map("default", {"metadata": {
            "name": "stray", "ownerReferences": [{"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                                                  "name": "g", "uid": "u", "controller": True}]}})
    seen = set()
    while not reconciler.requests.empty():
        seen.add(reconciler.requests.get())
    assert seen == {Request("w", "default")}


def test_shutdown_stops_a_started_controller_and_leaves_its_source_running(
        api_client: Any, stop: threading.Event) -> None:
    core = k8s.CoreV1Api(api_client)
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    controller = ControllerBuilder("configmaps", factory).for_resource(CONFIGMAPS).complete(recorder)
    assert controller.shutdown(TIMEOUT)  # never started: nothing to stop
    controller.start(stop)
    try:
        core.create_namespaced_config_map("default", cm("before", None, "default"))
        assert recorder.until(Request("before", "default"))
        assert controller.shutdown(TIMEOUT)
        assert not stop.is_set()
        assert not [t for t in threading.enumerate() if t.name.startswith("kinformer-controller-configmaps")]
        # the source's informer is the source's: it keeps its cache up to date after the shutdown
        core.create_namespaced_config_map("default", cm("after", None, "default"))
        lister = factory.for_resource(CONFIGMAPS).lister()
        assert wait_for(lambda: len(lister.by_namespace("default").list()) == 2, timeout=TIMEOUT)
        assert recorder.calls.empty()
        with pytest.raises(AlreadyStartedError):
            controller.run(stop)
    finally:
        stop.set()
        factory.shutdown()


def test_a_built_controller_stops_only_once_its_hung_reconcile_returned(
        api_client: Any, stop: threading.Event, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Its handlers and its run stay until the reconcile in flight has returned: a run that
    ended beside it would let a fresh controller reconcile the same request alongside."""
    monkeypatch.setattr(controller_module, "JOIN_TIMEOUT", 0.05)
    core = k8s.CoreV1Api(api_client)
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    recorder.gate = threading.Event()
    controller = ControllerBuilder("hung", factory).for_resource(CONFIGMAPS).complete(recorder)
    with started(controller, stop, factory):
        try:
            core.create_namespaced_config_map("default", cm("stuck", None, "default"))
            assert recorder.until(Request("stuck", "default"))  # and held at the gate
            with caplog.at_level(logging.WARNING, logger="kinformer.controllers.controller"):
                assert not controller.shutdown(timeout=0)
                assert wait_for(lambda: "still reconciling key=default/stuck" in caplog.text
                                or controller.join(timeout=0), TIMEOUT)
                assert not controller.join(timeout=0), "run returned while its reconcile still ran"
        finally:
            recorder.gate.set()
        assert controller.join(TIMEOUT)


def test_owns_matches_the_kind_given_or_discovered(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    core = k8s.CoreV1Api(api_client)
    made = widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    factory = DiscoveringDynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS).owns(CONFIGMAPS)
                  .complete(recorder))
    controller.start(stop)
    try:
        assert recorder.next() == Request("w", "default")
        assert wait_for(lambda: factory.informers()[0].get(CONFIGMAPS) is not None, timeout=TIMEOUT)
        uid = made["metadata"]["uid"]
        for kind, owner, name in (("Gadget", "g", "other-kind"), ("Widget", "w", "w-child")):
            ref = {"apiVersion": f"{GROUP}/v1", "kind": kind, "name": owner, "uid": uid, "controller": True}
            body = {"metadata": {"name": name, "ownerReferences": [ref]}}
            core.create_namespaced_config_map("default", body)
        assert recorder.next() == Request("w", "default")  # the Widget's child, not the Gadget's
        assert recorder.calls.empty()
    finally:
        stop.set()
        assert controller.join(TIMEOUT)
        factory.stop()


def test_a_predicate_drops_events_before_they_are_queued(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    for name in ("a", "b"):
        widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget(name))
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    controller = (ControllerBuilder("widgets", factory)
                  .for_resource(WIDGETS, predicates=[GenerationChangedPredicate()]).complete(recorder))
    with started(controller, stop, factory):
        assert {recorder.next(), recorder.next()} == {Request("a", "default"), Request("b", "default")}
        widgets.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "a",
                                               {"metadata": {"labels": {"x": "y"}}})  # generation stays
        widgets.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "b", {"spec": {"size": 5}})
        assert recorder.until(Request("b", "default")) == [Request("b", "default")]


def test_workers_wait_until_every_cache_the_controller_reads_has_synced(
        apiserver: FakeAPIServer, api_client: Any, widgets: Any, prometheus: Any,
        stop: threading.Event) -> None:
    """A widget's child exists, but the ConfigMaps' list fails at first: a reconcile then would
    see no child and make a second one. The workers start only once both caches synced."""
    made = widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    ref = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": "w", "uid": made["metadata"]["uid"],
           "controller": True}
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "w-child", "namespace": "default",
                                               "ownerReferences": [ref]}})
    apiserver.forbid("configmaps", "list")
    factory = DynamicSharedInformerFactory(api_client)
    configmaps = factory.for_resource(CONFIGMAPS)
    seen: stdlib_queue.Queue[bool] = stdlib_queue.Queue()

    class Reconciler:
        def reconcile(self, request: Request) -> None:
            seen.put(configmaps.informer().has_synced())

    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS, kind="Widget")
                  .owns(CONFIGMAPS).complete(Reconciler()))
    with started(controller, stop, factory):
        # until a reconcile comes (it must not, yet) or the ConfigMaps' list failed twice
        assert wait_for(lambda: not seen.empty() or (metric_value(
            prometheus, "kinformer_reflector_errors_total", resource="v1/configmaps") or 0) >= 2, TIMEOUT)
        apiserver.allow("configmaps", "list")
        assert seen.get(timeout=TIMEOUT) is True  # the first reconcile read a synced cache


def test_over_members_each_request_waits_for_its_own_members_caches(
        kube_fleet: dict[str, FakeAPIServer], prometheus: Any, stop: threading.Event) -> None:
    """member-2's ConfigMaps cannot be listed at first: member-1's request is reconciled at
    once, member-2's only once member-2's ConfigMaps synced."""
    for server in kube_fleet.values():
        server.create(SECRETS, {"metadata": {"name": "s", "namespace": "default"}})
    kube_fleet["member-2"].forbid("configmaps", "list")
    clients = {name: kube_fleet[name].api_client() for name in ("member-1", "member-2")}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    seen: stdlib_queue.Queue[tuple[str, bool]] = stdlib_queue.Queue()

    class Reconciler:
        def reconcile(self, request: Request) -> None:
            informer = configmaps.informer_for(request.cluster)
            seen.put((request.cluster, informer is not None and informer.has_synced()))

    controller = (ControllerBuilder("secrets", factory).for_resource(SECRETS)
                  .watches(CONFIGMAPS, lambda cluster, obj: ()).complete(Reconciler()))
    with started(controller, stop, factory, clients.values()):
        assert seen.get(timeout=TIMEOUT) == ("member-1", True)  # not held back by member-2
        assert wait_for(lambda: not seen.empty() or member_2_list_failures(prometheus) >= 2, TIMEOUT)
        kube_fleet["member-2"].allow("configmaps", "list")
        assert seen.get(timeout=TIMEOUT) == ("member-2", True)


def test_requests_of_a_member_that_cannot_sync_wait_without_being_retried_each(
        kube_fleet: dict[str, FakeAPIServer], prometheus: Any, stop: threading.Event) -> None:
    """member-2 holds 200 Secrets but its ConfigMaps cannot be listed: its requests wait for
    it without each going round the queue every 0.1 s (thousands of skips a second, a core's
    worth of work for as long as the member stays out of sync), and every one is reconciled
    once it syncs."""
    count = 200
    for i in range(count):
        kube_fleet["member-2"].create(SECRETS, {"metadata": {"name": f"s{i:03d}", "namespace": "default"}})
    kube_fleet["member-1"].create(SECRETS, {"metadata": {"name": "s", "namespace": "default"}})
    kube_fleet["member-2"].forbid("configmaps", "list")
    clients = {name: kube_fleet[name].api_client() for name in ("member-1", "member-2")}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    recorder = Recorder()
    controller = (ControllerBuilder("waiting", factory).for_resource(SECRETS)
                  .watches(CONFIGMAPS, lambda cluster, obj: ()).with_workers(2).complete(recorder))

    def retries() -> float:
        return metric_value(prometheus, "workqueue_retries_total", name="waiting") or 0

    with started(controller, stop, factory, clients.values()):
        assert recorder.next() == Request("s", "default", "member-1")
        assert wait_for(lambda: member_2_list_failures(prometheus) >= 1, TIMEOUT)
        before = retries()
        assert wait_for(lambda: member_2_list_failures(prometheus) >= 2, TIMEOUT)  # a relist backoff later
        assert retries() - before < count  # not every request went round once more
        assert recorder.calls.empty()
        kube_fleet["member-2"].allow("configmaps", "list")
        assert wait_for(lambda: recorder.calls.qsize() >= count, 3 * TIMEOUT)  # the next relist
        seen = [recorder.next() for _ in range(count)]
        assert sorted(seen, key=str) == [Request(f"s{i:03d}", "default", "member-2") for i in range(count)]


def a_live_change_goes_first(widgets: Any, controller: Any, recorder: Recorder, names: list[str]) -> None:
    """With the recorder held at its gate and the rest of ``names`` queued low: a change to the
    last widget moves it up, and it is reconciled first once the gate opens."""
    widgets.patch_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", names[-1], {"spec": {"size": 7}})
    assert wait_for(lambda: controller.queue.len_initial() == len(names) - 2, timeout=TIMEOUT)
    assert recorder.gate is not None
    recorder.gate.set()
    assert recorder.next() == Request(names[-1], "default")


def test_a_live_change_is_reconciled_before_the_initial_lists_keys(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    names = [f"w{i:02d}" for i in range(20)]
    for name in names:
        widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget(name))
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    recorder.gate = threading.Event()
    controller = ControllerBuilder("widgets", factory).for_resource(WIDGETS).complete(recorder)
    with started(controller, stop, factory):
        first = recorder.next()  # held at the gate while the rest of the list queues
        assert first.name != names[-1]
        assert wait_for(lambda: controller.queue.len_initial() == len(names) - 1, timeout=TIMEOUT)
        a_live_change_goes_first(widgets, controller, recorder, names)


def test_a_resync_leaves_the_initial_lists_keys_behind_a_live_change(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    names = [f"w{i:02d}" for i in range(10)]
    for name in names:
        widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget(name))
    factory = DynamicSharedInformerFactory(api_client, default_resync=1.0)
    resyncs: list[str] = []

    def seen(old: Any, new: Any) -> bool:  # called just before the update's requests are queued
        if old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            resyncs.append(new["metadata"]["name"])
        return True

    recorder = Recorder()
    recorder.gate = threading.Event()
    controller = (ControllerBuilder("widgets", factory)
                  .for_resource(WIDGETS, predicates=[PredicateFuncs(update=seen)]).complete(recorder))
    with started(controller, stop, factory):
        recorder.next()  # held at the gate while the rest of the list queues
        assert wait_for(lambda: controller.queue.len_initial() == len(names) - 1, timeout=TIMEOUT)
        assert wait_for(lambda: len(resyncs) >= len(names), timeout=TIMEOUT)  # every key resynced
        assert controller.queue.len_initial() == len(names) - 1  # and still behind live ones
        a_live_change_goes_first(widgets, controller, recorder, names)


def test_workers_start_once_every_initial_list_has_reached_the_handlers(
        apiserver: FakeAPIServer, api_client: Any, widgets: Any, stop: threading.Event) -> None:
    """Each owner and its child are listed by two informers. The workers start only once both
    lists reached the controller's handlers (here the children's pass a predicate that reads
    each child's owner from the server, slower than a list), so each owner waits in the queue
    once and is reconciled once. Workers that began when the stores synced would reconcile an
    owner whose child's add was still on its way, and again when it arrived."""
    count = 150
    for i in range(count):
        made = apiserver.create(WIDGETS, widget(f"w{i:03d}"))
        owner = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": f"w{i:03d}",
                 "uid": made["metadata"]["uid"], "controller": True}
        apiserver.create(CONFIGMAPS, {"metadata": {"name": f"c{i:03d}", "namespace": "default",
                                                   "ownerReferences": [owner]}})
    factory = DynamicSharedInformerFactory(api_client)
    children_seen = 0
    children_seen_at_first_reconcile: list[int] = []

    def owner_exists(child: Any) -> bool:
        nonlocal children_seen
        owner = child["metadata"]["ownerReferences"][0]["name"]
        found = widgets.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", owner)
        children_seen += 1  # one handler thread per registration: no lock needed
        return bool(found)

    class FirstLook(Recorder):
        def reconcile(self, request: Request) -> None:
            if not children_seen_at_first_reconcile:
                children_seen_at_first_reconcile.append(children_seen)
            super().reconcile(request)

    recorder = FirstLook()
    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS)
                  .owns(CONFIGMAPS, predicates=[PredicateFuncs(create=owner_exists)])
                  .complete(recorder))
    with started(controller, stop, factory):
        seen = [recorder.next() for _ in range(count)]
        assert sorted(r.name for r in seen) == [f"w{i:03d}" for i in range(count)]
        assert children_seen_at_first_reconcile == [count]


def test_an_update_that_moves_a_child_tells_its_old_owner_and_its_new_one(
        api_client: Any, widgets: Any, stop: threading.Event) -> None:
    owners = {}
    for name in ("w1", "w2"):
        made = widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget(name))
        owners[name] = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": name,
                        "uid": made["metadata"]["uid"], "controller": True}
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "child",
                                                               "ownerReferences": [owners["w1"]]}})
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS).owns(CONFIGMAPS)
                  .complete(recorder))
    with started(controller, stop, factory):
        assert {recorder.next(), recorder.next()} == {Request("w1", "default"), Request("w2", "default")}
        assert wait_for(lambda: controller.queue.len() == 0, timeout=TIMEOUT)
        child = core.read_namespaced_config_map("child", "default")
        child.metadata.owner_references = [owners["w2"]]
        child = core.replace_namespaced_config_map("child", "default", child)
        assert {recorder.next(), recorder.next()} == {Request("w1", "default"), Request("w2", "default")}
        child.metadata.owner_references = None
        core.replace_namespaced_config_map("child", "default", child)
        assert recorder.next() == Request("w2", "default")  # orphaned: its last owner is told


@pytest.mark.parametrize("kind", [None, "Gizmo"], ids=["kind-from-cache", "kind-given"])
def test_a_cluster_scoped_owner_of_a_namespaced_child_is_requested_without_a_namespace(
        api_client: Any, stop: threading.Event, kind: str | None) -> None:
    gizmos = GroupVersionResource(GROUP, "v1", "gizmos")
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(gizmos, "Cluster"))
    made = k8s.CustomObjectsApi(api_client).create_cluster_custom_object(GROUP, "v1", "gizmos", {
        "apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"}})
    factory = DynamicSharedInformerFactory(api_client)
    recorder = Recorder()
    controller = (ControllerBuilder("gizmos", factory).for_resource(gizmos, kind=kind).owns(CONFIGMAPS)
                  .complete(recorder))
    with started(controller, stop, factory):
        assert recorder.next() == Request("g")
        ref = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "name": "g", "uid": made["metadata"]["uid"],
               "controller": True}
        k8s.CoreV1Api(api_client).create_namespaced_config_map(
            "default", {"metadata": {"name": "child", "ownerReferences": [ref]}})
        assert recorder.next() == Request("g")  # not Request("g", "default"), which names nothing


def test_a_members_initial_list_queues_low_and_a_live_change_there_goes_first(
        kube_fleet: dict[str, FakeAPIServer], stop: threading.Event) -> None:
    """Over member clusters, each member's initial list reaches the builder as initial (low
    priority), and a live change in one member promotes that member's request."""
    names = [f"s{i:02d}" for i in range(8)]
    for server in kube_fleet.values():
        for name in names:
            server.create(SECRETS, {"metadata": {"name": name, "namespace": "default"}})
    clients = {name: server.api_client() for name, server in kube_fleet.items()}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    recorder = Recorder()
    recorder.gate = threading.Event()
    controller = ControllerBuilder("secrets", factory).for_resource(SECRETS).complete(recorder)
    controller.start(stop)
    total = len(names) * len(kube_fleet)
    try:
        recorder.next()  # held at the gate while the rest of the lists queue
        assert wait_for(lambda: controller.queue.len_initial() == total - 1, timeout=TIMEOUT)
        assert len(controller.queue) == total - 1  # every one of them low
        kube_fleet["member-2"].update(SECRETS, {"metadata": {"name": names[-1], "namespace": "default"},
                                                "data": {"k": "dg=="}})
        assert wait_for(lambda: controller.queue.len_initial() == total - 2, timeout=TIMEOUT)
        recorder.gate.set()
        assert recorder.next() == Request(names[-1], "default", "member-2")
    finally:
        stop.set()
        assert controller.join(TIMEOUT)
        factory.shutdown()
        for api_client in clients.values():
            api_client.close()


def test_a_members_requests_wait_until_its_initial_lists_reached_the_handlers(
        kube_fleet: dict[str, FakeAPIServer], stop: threading.Event) -> None:
    """Over member clusters, as on one: a member's first request is reconciled only once every
    initial list of that member reached the controller's handlers (past a predicate that reads
    each child's owner from its member), so each owner of each member is reconciled once."""
    count = 60
    for member, server in kube_fleet.items():
        for i in range(count):
            made = server.create(CONFIGMAPS, cm(f"o{i:02d}", None, "default"))
            owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{i:02d}",
                     "uid": made["metadata"]["uid"], "controller": True}
            server.create(SECRETS, {"metadata": {"name": f"{member}-c{i:02d}", "namespace": "default",
                                                 "ownerReferences": [owner]}})
    clients = {name: server.api_client() for name, server in kube_fleet.items()}
    readers = {name: k8s.CoreV1Api(api_client) for name, api_client in clients.items()}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    children_seen = dict.fromkeys(kube_fleet, 0)
    children_seen_at_first_reconcile: dict[str, int] = {}

    def owner_exists(child: Any) -> bool:
        member = child["metadata"]["name"].rsplit("-c", 1)[0]
        owner = child["metadata"]["ownerReferences"][0]["name"]
        found = readers[member].read_namespaced_config_map(owner, "default")
        children_seen[member] += 1  # the controller's handler is called on one thread
        return found is not None

    class FirstLook(Recorder):
        def reconcile(self, request: Request) -> None:
            children_seen_at_first_reconcile.setdefault(request.cluster, children_seen[request.cluster])
            super().reconcile(request)

    recorder = FirstLook()
    controller = (ControllerBuilder("owners", factory).for_resource(CONFIGMAPS, kind="ConfigMap")
                  .owns(SECRETS, predicates=[PredicateFuncs(create=owner_exists)])
                  .complete(recorder))
    with started(controller, stop, factory, clients.values()):
        seen = [recorder.next() for _ in range(count * len(kube_fleet))]
        assert sorted((r.cluster, r.name) for r in seen) == sorted(
            (member, f"o{i:02d}") for member in kube_fleet for i in range(count))
        assert children_seen_at_first_reconcile == dict.fromkeys(kube_fleet, count)


def test_requests_name_the_logical_cluster_of_default_app(
        logical_clusters_server: FakeAPIServer, client_of: Any, stop: threading.Event) -> None:
    for cluster in ("root:a", "root:b"):
        logical_clusters_server.create(CONFIGMAPS, cm("app", None, "default"), cluster=cluster)
    factory = DynamicSharedInformerFactory(client_of(None), cluster="*")
    recorder = Recorder()
    controller = (ControllerBuilder("apps", factory).for_resource(CONFIGMAPS)
                  .watches(SECRETS, lambda obj: [Request(obj["metadata"]["name"], "default")])
                  .with_workers(2).complete(recorder))
    with started(controller, stop, factory):
        assert {recorder.next(), recorder.next()} == {
            Request("app", "default", "root:a"), Request("app", "default", "root:b")}
        logical_clusters_server.create(SECRETS, {"metadata": {"name": "app", "namespace": "default"}},
                                       cluster="root:b")
        assert recorder.next() == Request("app", "default", "root:b")  # the event's cluster filled in


def test_requests_name_the_member_and_owners_are_found_in_their_member(
        kube_fleet: dict[str, FakeAPIServer], stop: threading.Event) -> None:
    clients = {name: server.api_client() for name, server in kube_fleet.items()}
    made = {name: server.create(CONFIGMAPS, cm("app", None, "default"))
            for name, server in kube_fleet.items()}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    recorder = Recorder()
    mapped: list[tuple[str, str]] = []

    def map_func(cluster: str, obj: Any) -> list[Request]:
        mapped.append((cluster, obj["metadata"]["name"]))
        return []

    controller = (ControllerBuilder("apps", factory).for_resource(CONFIGMAPS).owns(SECRETS)
                  .watches(GroupVersionResource("", "v1", "serviceaccounts"), map_func).complete(recorder))
    with started(controller, stop, factory, clients.values()):
        assert {recorder.next() for _ in kube_fleet} == {
            Request("app", "default", name) for name in kube_fleet}
        assert wait_for(lambda: all(i.has_synced() for i in (
            factory.for_resource(SECRETS).informer_for(name) for name in kube_fleet) if i is not None),
            timeout=TIMEOUT)
        owner = made["member-2"]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "app", "uid": owner["metadata"]["uid"],
               "controller": True}
        kube_fleet["member-2"].create(
            SECRETS, {"metadata": {"name": "s", "namespace": "default", "ownerReferences": [ref]}})
        assert recorder.next() == Request("app", "default", "member-2")
        kube_fleet["member-3"].create(GroupVersionResource("", "v1", "serviceaccounts"),
                                      {"metadata": {"name": "sa", "namespace": "default"}})
        assert wait_for(lambda: ("member-3", "sa") in mapped, timeout=TIMEOUT)


def test_a_controller_that_cannot_register_every_handler_leaves_none_behind(
        api_client: Any, widgets: Any) -> None:
    """The children's informer stopped on its own: registering there fails the run, and the
    handler already put on the owners' informer is taken off again, not left queueing into a
    controller that never runs."""
    factory = DynamicSharedInformerFactory(api_client)
    children = factory.for_resource(CONFIGMAPS).informer()
    children_stop = threading.Event()
    runner = threading.Thread(target=children.run, args=(children_stop,))
    runner.start()
    children_stop.set()
    runner.join(TIMEOUT)
    owners = factory.for_resource(WIDGETS).informer()
    owners_stop = threading.Event()
    factory.start(owners_stop)
    try:
        assert owners.wait_for_sync(TIMEOUT)
        before = handler_threads()
        controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS).owns(CONFIGMAPS)
                      .complete(Recorder()))
        with pytest.raises(StoppedError):
            controller.run(owners_stop)
        assert wait_for(lambda: handler_threads() == before, timeout=TIMEOUT), handler_threads()
    finally:
        owners_stop.set()
        factory.shutdown()


def handler_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("kinformer-handler-"))


def test_the_builder_refuses_what_it_cannot_build(api_client: Any) -> None:
    factory = DynamicSharedInformerFactory(api_client)
    with pytest.raises(ConfigurationError):
        ControllerBuilder("x", object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ControllerBuilder("x", factory).complete(Recorder())  # no for_resource
    with pytest.raises(ConfigurationError, match="instantiated"):
        ControllerBuilder("x", factory).for_resource(WIDGETS, predicates=[GenerationChangedPredicate])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError):
        ControllerBuilder("x", factory).with_workers(0)
    built = ControllerBuilder("x", factory).for_resource(WIDGETS).complete(Recorder())
    stop = threading.Event()
    stop.set()
    built.run(stop)
    with pytest.raises(Exception, match="already started"):
        built.run(stop)
    factory.shutdown()


def test_the_builder_example_runs_as_written(api_client: Any, widgets: Any) -> None:
    import inspect
    import re
    import textwrap

    import kinformer

    doc = inspect.getdoc(kinformer.ControllerBuilder)
    assert doc is not None
    match = re.search(r"::\n\n((?:(?: {4}.*)?\n)+)", doc + "\n")
    assert match is not None
    widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
    factory = DynamicSharedInformerFactory(api_client)
    stop = threading.Event()

    class Reconciler:
        def reconcile(self, request: Request) -> None:
            assert request == Request("w", "default")
            stop.set()

    scope: dict[str, Any] = {name: getattr(kinformer, name) for name in kinformer.__all__}
    scope.update(factory=factory, reconciler=Reconciler(), stop=stop, WIDGETS=WIDGETS, CONFIGMAPS=CONFIGMAPS)
    exec(compile(textwrap.dedent(match.group(1)), "<ControllerBuilder example>", "exec"), scope)
    factory.shutdown()
    assert stop.is_set() and scope["controller"].workers == 4


def test_a_factory_of_one_logical_cluster_names_it_in_requests(
        logical_clusters_server: FakeAPIServer, client_of: Any, stop: threading.Event) -> None:
    for cluster in ("root:a", "root:b"):
        logical_clusters_server.create(CONFIGMAPS, cm("app", None, "default"), cluster=cluster)
    factory = DynamicSharedInformerFactory(client_of("root:b"))  # the host names the cluster
    recorder = Recorder()
    controller = ControllerBuilder("apps", factory).for_resource(CONFIGMAPS).complete(recorder)
    with started(controller, stop, factory):
        assert recorder.next() == Request("app", "default", "root:b")
    assert recorder.calls.empty()


def test_a_controller_manager_runs_a_built_controller_while_its_crd_is_served(
        api_client: Any, widgets: Any) -> None:
    from kinformer import Context, ControllerManager, ManagedController

    ctx = Context("test")
    ddsif = DiscoveringDynamicSharedInformerFactory(api_client, lambda g: g.group == GROUP)
    recorder = Recorder()

    def create(_ctx: Context) -> Any:
        return ControllerBuilder("widgets", ddsif).for_resource(WIDGETS).complete(recorder).run

    managed = {"widgets": ManagedController({WIDGETS}, create)}
    manager = ControllerManager("built", ddsif.informer_source(), managed)
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    try:
        widgets.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("w"))
        assert recorder.next() == Request("w", "default")
    finally:
        ctx.cancel()
        runner.join(TIMEOUT)
        ddsif.stop()
    assert not runner.is_alive()
