"""InformerManager (fleet) over FakeAPIServer, with the differences from fleet that docs/managers.md states.

kinformer's difference from fleet: with ``list_complete=True`` a dynamic type missing from the
list has its informer stopped and dropped, and a fresh one with the same handler starts when it
returns.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, client_threads, crd, create_cm, name_of
from kubernetes import client as k8s

from kinformer import Context, _threads
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.managers.informer_manager import InformerManager, strip_managed_fields
from kinformer.testing import FakeAPIServer, Recorder, wait_for

SECRETS = GroupVersionResource("", "v1", "secrets")
NAMESPACES = GroupVersionResource("", "v1", "namespaces")
WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CM = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), CONFIGMAPS)
SECRET = APIResourceMeta(GroupVersionKind("", "v1", "Secret"), SECRETS)
NS = APIResourceMeta(GroupVersionKind("", "v1", "Namespace"), NAMESPACES, is_cluster_scoped=True)
WIDGET = APIResourceMeta(GroupVersionKind("example.com", "v1", "Widget"), WIDGETS)
TIMEOUT = 5.0


def create_widget(api_client: Any, name: str) -> None:
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}
    k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", body
    )


def widget_informer_threads() -> list[str]:
    return [t.name for t in _threads.kinformer_threads() if "example.com/v1/widgets" in t.name]


def test_a_type_missing_from_a_complete_list_is_stopped_and_comes_back_fresh_with_one_handler(
    apiserver: FakeAPIServer, api_client: Any
) -> None:  # fleet would leave the missing type's informer running
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    recorder = Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_dynamic_resources([CM, WIDGET], recorder, True)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        create_widget(api_client, "w1")
        assert recorder.next() == ("add", "w1", False)
        old_lister = manager.lister(WIDGETS)

        manager.add_dynamic_resources([CM], recorder, True)
        assert manager.get_all_resources() == [CONFIGMAPS]
        assert widget_informer_threads() == []  # stopped and joined, not relisting
        assert not manager.is_informer_synced(WIDGETS)
        manager.start()  # asking about the gone type created nothing to start
        assert widget_informer_threads() == []
        create_widget(api_client, "w2")
        assert [o["metadata"]["name"] for o in old_lister.list()] == ["w1"]

        manager.add_dynamic_resources([CM], recorder, False)  # partial list hides nothing more
        assert manager.get_all_resources() == [CONFIGMAPS]

        manager.add_dynamic_resources([CM, WIDGET], recorder, True)
        assert sorted(manager.get_all_resources(), key=str) == [CONFIGMAPS, WIDGETS]
        assert not manager.is_informer_synced(WIDGETS)  # fresh, not started until start()
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        # the fresh informer's initial list, each object once: the one handler, registered once
        assert recorder.take(2) == [("add", "w1", True), ("add", "w2", True)]
        create_widget(api_client, "w3")
        assert recorder.next() == ("add", "w3", False)
        assert recorder.quiet()
        assert {"w1", "w2", "w3"} == {o["metadata"]["name"] for o in manager.lister(WIDGETS).list()}


def test_an_incomplete_list_never_hides_a_type(apiserver: FakeAPIServer, api_client: Any) -> None:
    recorder = Recorder(name_of)
    manager = InformerManager(api_client, 0, Context())
    manager.add_dynamic_resources([CM, SECRET], recorder, True)
    manager.add_dynamic_resources([CM], recorder, False)
    assert sorted(manager.get_all_resources(), key=str) == [CONFIGMAPS, SECRETS]
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    k8s.CoreV1Api(api_client).create_namespaced_secret("default", {"metadata": {"name": "s1"}})
    assert recorder.next() == ("add", "s1", False)
    manager.stop()


def test_asking_about_an_unknown_type_creates_an_informer_that_start_runs(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    create_cm(api_client, "a")
    manager = InformerManager(api_client, 0, Context())
    manager.start()
    assert not manager.is_informer_synced(CONFIGMAPS)
    assert manager.wait_for_cache_sync(TIMEOUT)  # not started: not waited for
    assert not manager.is_informer_synced(CONFIGMAPS)

    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    assert manager.is_informer_synced(CONFIGMAPS)
    assert [o["metadata"]["name"] for o in manager.lister(CONFIGMAPS).by_namespace("default").list()] == ["a"]
    assert manager.get_all_resources() == []  # created on demand, not tracked
    manager.stop()


def test_resource_reports_follow_scope_and_staticness(apiserver: FakeAPIServer, api_client: Any) -> None:
    manager = InformerManager(api_client, 0, Context())
    handler = ResourceEventHandlerFuncs()
    manager.add_dynamic_resources([CM, NS], handler, True)
    manager.add_static_resource(SECRET, handler)
    assert manager.get_name_space_scoped_resources() == [CONFIGMAPS]
    assert sorted(manager.get_all_resources(), key=str) == [CONFIGMAPS, NAMESPACES]
    assert manager.is_cluster_scoped_resources(NS.group_version_kind)
    assert not manager.is_cluster_scoped_resources(CM.group_version_kind)
    assert not manager.is_cluster_scoped_resources(GroupVersionKind("x", "v1", "Unknown"))
    assert manager.get_client() is api_client
    manager.stop()


def test_a_static_type_survives_complete_lists_that_omit_it(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    recorder = Recorder(name_of)
    manager = InformerManager(api_client, 0, Context())
    manager.add_static_resource(CM, recorder)
    manager.add_dynamic_resources([SECRET], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    manager.add_dynamic_resources([], ResourceEventHandlerFuncs(), True)
    assert manager.get_all_resources() == []
    assert manager.is_informer_synced(CONFIGMAPS)
    create_cm(api_client, "still-watched")
    assert recorder.next() == ("add", "still-watched", False)
    manager.stop()


def test_a_resource_without_its_kind_is_refused_where_it_is_given(api_client: Any) -> None:
    manager = InformerManager(api_client, 0, Context())
    with pytest.raises(TypeError, match="APIResourceMeta"):
        manager.add_static_resource(CONFIGMAPS, ResourceEventHandlerFuncs())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="APIResourceMeta"):
        manager.add_dynamic_resources([SECRETS], ResourceEventHandlerFuncs(), True)  # type: ignore[list-item]
    assert manager.get_all_resources() == []
    manager.stop()


def test_dynamic_types_are_cached_without_managed_fields(apiserver: FakeAPIServer, api_client: Any) -> None:
    # the server records who wrote the data, as a real one does on every write
    k8s.CoreV1Api(api_client).create_namespaced_config_map(
        "default", {"metadata": {"name": "m"}, "data": {"k": "v"}}
    )
    assert apiserver.get(CONFIGMAPS, "default", "m")["metadata"].get("managedFields")
    manager = InformerManager(api_client, 0, Context())
    manager.add_dynamic_resources([CM], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    cached = manager.lister(CONFIGMAPS).by_namespace("default").get("m")
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["name"] == "m"
    manager.stop()


def test_strip_managed_fields_leaves_other_objects_alone() -> None:
    obj = {"metadata": {"name": "a", "managedFields": [{}]}}
    assert strip_managed_fields(obj) == {"metadata": {"name": "a"}}
    assert strip_managed_fields("tombstone") == "tombstone"


def test_stop_joins_every_informer_and_start_after_stop_does_nothing(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    manager = InformerManager(api_client, 0, Context())
    manager.add_dynamic_resources([CM, SECRET], ResourceEventHandlerFuncs(), True)
    manager.start()
    manager.start()  # idempotent
    assert manager.wait_for_cache_sync(TIMEOUT)
    manager.stop()
    assert client_threads() == []
    manager.stop()

    manager.add_dynamic_resources([NS], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert not manager.is_informer_synced(NAMESPACES)
    assert client_threads() == []


def test_shutdown_is_stop_by_the_factories_name(apiserver: FakeAPIServer, api_client: Any) -> None:
    manager = InformerManager(api_client, 0, Context())
    manager.add_dynamic_resources([CM], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    manager.shutdown()
    assert client_threads() == []  # joined, as stop joins
    manager.add_dynamic_resources([SECRET], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert client_threads() == []


def test_the_parent_stop_event_stops_the_informers(apiserver: FakeAPIServer, api_client: Any) -> None:
    stop = threading.Event()
    manager = InformerManager(api_client, 0, stop)
    manager.add_dynamic_resources([CM], ResourceEventHandlerFuncs(), True)
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    stop.set()
    assert wait_for(lambda: not client_threads(), TIMEOUT)
    manager.add_dynamic_resources([SECRET], ResourceEventHandlerFuncs(), True)
    manager.start()  # the parent is done: nothing starts
    assert client_threads() == []
    manager.stop()


def test_the_newer_api_registers_one_handler_per_type(apiserver: FakeAPIServer, api_client: Any) -> None:
    first, second = Recorder(name_of), Recorder(name_of)
    manager = InformerManager(api_client, 0, Context())
    manager.create_informer_for_resource(CM)
    manager.create_informer_for_resource(CM)
    assert manager.get_all_resources() == [CONFIGMAPS]
    manager.add_event_handler_to_informer(CONFIGMAPS, first)
    manager.add_event_handler_to_informer(CONFIGMAPS, second)  # one per type: ignored
    manager.start()
    assert manager.wait_for_cache_sync(TIMEOUT)
    create_cm(api_client, "one")
    create_cm(api_client, "two")
    assert first.take(2) == [("add", "one", False), ("add", "two", False)]
    assert second.quiet()
    manager.stop()


def test_start_right_after_the_parent_event_is_set_starts_nothing(api_client: Any) -> None:
    # The bridge from a plain Event to the manager's context runs on a thread of its own; a
    # start() before that thread ran must see the Event itself. A long switch interval keeps
    # the bridge from running between set() and start().
    stop = threading.Event()
    manager = InformerManager(api_client, 0, stop)
    manager.add_dynamic_resources([CM], Recorder(), True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        stop.set()
        manager.start()
        started = [t.name for t in _threads.kinformer_threads() if "configmaps" in t.name]
    finally:
        sys.setswitchinterval(interval)
    manager.stop()
    assert started == []
