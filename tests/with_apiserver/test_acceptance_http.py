"""Acceptance over HTTP: the public factories, managers and fault switches through ``kinformer`` names only.

Objects are written with the official client against FakeAPIServer; every kinformer name comes
from ``kinformer`` or ``kinformer.testing`` and is called as the API reference spells it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import (
    CONFIGMAPS,
    TIMEOUT,
    crd,
    create_cm,
    delete_cm,
    name_of,
    names,
    running,
    step_when_waiting,
    write,
)
from kubernetes.dynamic import DynamicClient

from kinformer import (
    APIResourceMeta,
    Context,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    DynamicSharedInformerFactory,
    GroupVersionKind,
    GroupVersionResource,
    InformerManager,
    ListWatch,
    ManagedController,
    NotFoundError,
    SharedIndexInformer,
    _threads,
    wait_for_cache_sync,
)
from kinformer.testing import FakeAPIServer, FakeClock, Recorder, wait_for

SECRETS = GroupVersionResource("", "v1", "secrets")
NAMESPACES = GroupVersionResource("", "v1", "namespaces")
GADGETS = GroupVersionResource("acceptance.io", "v1", "gadgets")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CM = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), CONFIGMAPS)
SECRET = APIResourceMeta(GroupVersionKind("", "v1", "Secret"), SECRETS)
NS = APIResourceMeta(GroupVersionKind("", "v1", "Namespace"), NAMESPACES, is_cluster_scoped=True)


def create_secret(api: Any, name: str) -> None:
    write(api, "POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": name}})


def cached(informer: SharedIndexInformer) -> list[str]:
    return sorted(informer.get_indexer().list_keys())


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer() as apiserver:
        yield apiserver


@pytest.fixture
def api(server: FakeAPIServer) -> Iterator[Any]:
    api_client = server.api_client()
    try:
        yield api_client
    finally:
        api_client.close()


# -- ListWatch.for_resource and the fault switches ---------------------------------------------


@pytest.mark.parametrize("client_kind", ["api_client", "dynamic_client"])
def test_an_informer_over_http_syncs_and_follows_changes(api: Any, client_kind: str) -> None:
    create_cm(api, "a")
    client = api if client_kind == "api_client" else DynamicClient(api)  # type: ignore[no-untyped-call]
    informer = SharedIndexInformer(ListWatch.for_resource(client, CONFIGMAPS, namespace="default"))
    handler = Recorder(name_of)
    informer.add_event_handler(handler)
    with running(informer.run, threading.Event()) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        assert handler.next() == ("add", "a", True)
        # the reflector notes the version once the store took the list, a moment after sync
        assert wait_for(lambda: informer.last_sync_resource_version() not in ("", "0"), TIMEOUT)
        create_cm(api, "b")
        assert handler.next() == ("add", "b", False)
        delete_cm(api, "a")
        assert handler.next() == ("delete", "a")
        assert cached(informer) == ["default/b"]
    assert informer.is_stopped()


def test_for_resource_narrows_by_label_and_field_selectors(api: Any) -> None:
    create_cm(api, "web", app="web")
    create_cm(api, "db", app="db")
    create_cm(api, "web2", app="web")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api, CONFIGMAPS, label_selector="app=web", field_selector="metadata.name=web")
    )
    with running(informer.run, Context()) as ctx:
        assert wait_for_cache_sync(ctx, informer.has_synced, timeout=TIMEOUT)
        assert cached(informer) == ["default/web"]


def test_a_failed_list_is_reported_and_retried_until_the_informer_syncs(
    server: FakeAPIServer, api: Any
) -> None:
    create_cm(api, "a")
    clock = FakeClock()
    server.fail_next(1, status=500, verb="list")
    informer = SharedIndexInformer(ListWatch.for_resource(api, CONFIGMAPS), clock=clock)
    with running(informer.run, threading.Event()) as stop:
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        assert not informer.has_synced()
        step_when_waiting(clock)
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        assert informer.last_error() is None
        assert cached(informer) == ["default/a"]


def test_dropped_watches_and_compaction_lose_no_change(server: FakeAPIServer, api: Any) -> None:
    clock = FakeClock()
    informer = SharedIndexInformer(ListWatch.for_resource(api, CONFIGMAPS), clock=clock)

    def caught_up(*keys: str) -> bool:
        """Wait until the cache holds exactly ``keys``, stepping through any backoff."""

        def check() -> bool:
            if clock.waiters():
                clock.step(max(clock.waiters()))
            return cached(informer) == list(keys)

        return wait_for(check, TIMEOUT)

    with running(informer.run, threading.Event()) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        create_cm(api, "a")
        assert caught_up("default/a")
        server.drop_watches()
        create_cm(api, "b")
        assert caught_up("default/a", "default/b")
        server.compact()
        server.drop_watches()
        create_cm(api, "c")
        delete_cm(api, "a")
        assert caught_up("default/b", "default/c")


# -- DynamicSharedInformerFactory and listers --------------------------------------------------


def test_factory_starts_waits_lists_and_shuts_down(api: Any) -> None:
    create_cm(api, "a", app="web")
    create_cm(api, "b", namespace="kube-system")
    factory = DynamicSharedInformerFactory(api, default_resync=0, namespace="", tweak_list_options=None)
    generic = factory.for_resource(CONFIGMAPS)
    assert factory.for_resource(CONFIGMAPS).informer() is generic.informer()
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
        lister = generic.lister()
        assert names(lister.list()) == ["a", "b"]
        assert names(lister.by_namespace("default").list("app=web")) == ["a"]
        assert lister.by_namespace("kube-system").get("b")["metadata"]["name"] == "b"
        with pytest.raises(NotFoundError, match='configmaps "nope" not found'):
            lister.by_namespace("default").get("nope")
        secrets = factory.for_resource(SECRETS)
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True, SECRETS: True}
        assert secrets.informer().has_synced()
    finally:
        stop.set()
        factory.shutdown()
    assert generic.informer().is_stopped()


def test_factory_started_with_a_context_stops_with_it(api: Any) -> None:
    factory = DynamicSharedInformerFactory(api)
    informer = factory.for_resource(CONFIGMAPS).informer()
    ctx = Context()
    factory.start(ctx)
    assert wait_for_cache_sync(ctx, informer.has_synced, timeout=TIMEOUT)
    ctx.cancel()
    factory.shutdown()
    assert informer.is_stopped()


def test_factory_waits_only_for_started_informers_and_starts_nothing_after_shutdown(api: Any) -> None:
    factory = DynamicSharedInformerFactory(api)
    configmaps = factory.for_resource(CONFIGMAPS).informer()
    stop = threading.Event()
    factory.start(stop)
    secrets = factory.for_resource(SECRETS).informer()
    assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
    stop.set()
    factory.shutdown()
    assert configmaps.is_stopped()
    factory.start(threading.Event())
    assert not secrets.has_synced()
    assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}


# -- InformerManager, with the differences from fleet that docs/managers.md states ---------------------


def test_a_type_missing_from_a_complete_list_is_stopped_and_returns_with_one_handler(api: Any) -> None:
    stop = threading.Event()
    manager = InformerManager(api, 0, stop)
    handler = Recorder(name_of)
    try:
        manager.add_dynamic_resources([CM, SECRET], handler, True)
        manager.start()
        manager.wait_for_cache_sync(timeout=TIMEOUT)
        assert sorted(map(str, manager.get_name_space_scoped_resources())) == sorted(
            map(str, [CONFIGMAPS, SECRETS])
        )
        create_secret(api, "s1")
        assert handler.next() == ("add", "s1", False)

        manager.add_dynamic_resources([CM], handler, True)
        assert manager.get_name_space_scoped_resources() == [CONFIGMAPS]
        create_secret(api, "s2")
        create_cm(api, "marker")
        assert handler.next() == ("add", "marker", False)  # the stopped secrets informer heard nothing

        manager.add_dynamic_resources([CM], handler, False)
        assert manager.get_name_space_scoped_resources() == [CONFIGMAPS]

        manager.add_dynamic_resources([CM, SECRET], handler, True)
        manager.start()
        assert sorted(handler.take(2)) == [("add", "s1", True), ("add", "s2", True)]
        assert manager.wait_for_cache_sync(timeout=TIMEOUT)
        assert manager.is_informer_synced(SECRETS)
        create_cm(api, "marker2")
        assert handler.next() == ("add", "marker2", False)  # s1/s2 came once each: one handler
    finally:
        manager.stop()
    assert handler.quiet()


def test_asking_about_an_unknown_type_creates_an_informer_that_start_runs(api: Any) -> None:
    ctx = Context()
    manager = InformerManager(api, 0, ctx)
    try:
        assert manager.is_informer_synced(NAMESPACES) is False
        assert manager.is_informer_synced(NAMESPACES) is False
        manager.start()
        assert manager.wait_for_cache_sync(timeout=TIMEOUT)
        assert manager.is_informer_synced(NAMESPACES)
        assert "default" in [o["metadata"]["name"] for o in manager.lister(NAMESPACES).list()]
    finally:
        ctx.cancel()
        manager.stop()


def test_manager_reports_scope_statics_and_its_client(api: Any) -> None:
    stop = threading.Event()
    manager = InformerManager(api, 0, stop)
    try:
        manager.add_static_resource(NS, Recorder())
        manager.add_dynamic_resources([CM], Recorder(), True)
        assert manager.is_cluster_scoped_resources(NS.group_version_kind) is True
        assert manager.is_cluster_scoped_resources(CM.group_version_kind) is False
        assert manager.is_cluster_scoped_resources(GroupVersionKind("x", "v1", "Unknown")) is False
        assert manager.get_name_space_scoped_resources() == [CONFIGMAPS]
        assert manager.get_client() is api
    finally:
        manager.stop()


def test_each_static_registration_adds_a_handler(api: Any) -> None:
    create_secret(api, "s1")
    manager = InformerManager(api, 0, Context())
    first, second = Recorder(name_of), Recorder(name_of)
    try:
        manager.add_static_resource(SECRET, first)
        manager.add_static_resource(SECRET, second)
        manager.start()
        assert manager.wait_for_cache_sync(timeout=TIMEOUT)
        assert first.next() == ("add", "s1", True) and second.next() == ("add", "s1", True)
        assert manager.get_name_space_scoped_resources() == []
    finally:
        manager.stop()


def test_setting_the_parent_stop_event_stops_the_managers_informers(api: Any) -> None:
    def started() -> list[str]:  # the server's connection threads are the fixture's
        return [t.name for t in set(_threads.kinformer_threads()) - before if "apiserver" not in t.name]

    before = set(_threads.kinformer_threads())
    stop = threading.Event()
    manager = InformerManager(api, 0, stop)
    manager.add_dynamic_resources([CM], Recorder(), True)
    manager.start()
    assert manager.wait_for_cache_sync(timeout=TIMEOUT)
    assert manager.lister(CONFIGMAPS).list() == []
    assert started()
    stop.set()  # no stop(): the informers and the bridging thread end on their own
    assert wait_for(lambda: not started(), timeout=TIMEOUT), started()
    assert manager.is_informer_synced(SECRETS) is False
    manager.start()  # after the parent stopped, nothing starts again
    assert manager.is_informer_synced(SECRETS) is False


# -- ddsif and ControllerManager -------------------------------------------------------------


def test_a_crd_brings_an_informer_and_a_controller_and_takes_both_away(api: Any) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(api, filter_func=lambda gvr: gvr.group == "acceptance.io")
    notes = ddsif.subscribe("acceptance")
    assert notes.maxsize == 1
    created: queue.Queue[str] = queue.Queue()
    stopped: queue.Queue[str] = queue.Queue()

    def create(ctx: Context) -> Any:
        created.put("created")

        def start_fn(run_ctx: Context) -> None:
            run_ctx.wait()
            stopped.put("stopped")

        return start_fn

    manager = ControllerManager(
        "acceptance", ddsif.informer_source(), {"gadgets": ManagedController({GADGETS}, create)}
    )
    ctx = Context()
    ddsif.start(ctx)
    thread = threading.Thread(target=manager.start, args=(ctx,))
    thread.start()
    try:
        write(api, "POST", CRDS, crd(GADGETS))
        notes.get(timeout=TIMEOUT)
        assert created.get(timeout=TIMEOUT) == "created"
        synced, not_synced = ddsif.informers()
        assert set(synced) | set(not_synced) == {GADGETS}
        informer = ddsif.for_resource(GADGETS).informer()
        assert wait_for(lambda: manager.running_controllers() == {"gadgets"}, TIMEOUT)

        write(api, "DELETE", f"{CRDS}/gadgets.acceptance.io")
        notes.get(timeout=TIMEOUT)
        assert stopped.get(timeout=TIMEOUT) == "stopped"
        assert informer.is_stopped()
        assert ddsif.informers() == ({}, [])
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
        ddsif.unsubscribe("acceptance")
    finally:
        ctx.cancel()
        thread.join(TIMEOUT)
    assert not thread.is_alive()


# -- the test server itself -------------------------------------------------------------------


def test_fake_apiserver_writes_a_kubeconfig_the_official_client_loads(
    server: FakeAPIServer, tmp_path: Any
) -> None:
    from kubernetes import config

    path = tmp_path / "kubeconfig"
    server.write_kubeconfig(str(path))
    api_client = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
    try:
        assert "default" in names(write(api_client, "GET", "/api/v1/namespaces")["items"])
        server.fail_next(1, status=503, verb="list")
        accept = {"Accept": "application/json"}
        request = api_client.param_serialize("GET", "/api/v1/namespaces", header_params=accept)

        def status() -> int:
            response = api_client.call_api(*request)
            response.read()
            return int(response.status)

        assert status() == 503
        server.fail_next(1)
        assert [status(), status()] == [500, 200]
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        api_client.close()
