"""InformerManager over FakeAPIServer: what it knows of a kind follows what discovery says.

A CRD re-created with another scope or another plural, and a handler given before its type was
tracked, through the official client and a :class:`~kinformer.CachedDiscoveryClient`.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CONFIGMAPS, crd, create_cm, name_of
from kubernetes import client as k8s

from kinformer import CachedDiscoveryClient, Context, _threads
from kinformer.client.discovery import DiscoveryResult
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource
from kinformer.managers.informer_manager import InformerManager
from kinformer.testing import FakeAPIServer, Recorder, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
GIZMOS = GroupVersionResource("example.com", "v1", "gizmos")
WIDGET_KIND = GroupVersionKind("example.com", "v1", "Widget")
CM = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), CONFIGMAPS)
SECRET = APIResourceMeta(GroupVersionKind("", "v1", "Secret"), GroupVersionResource("", "v1", "secrets"))
TIMEOUT = 5.0


class Discovery:
    """One discovery pass after another over the example.com group, as fleet's loop runs them."""

    def __init__(self, api_client: Any) -> None:
        self.client = CachedDiscoveryClient(api_client)

    def found(self) -> DiscoveryResult:
        self.client.invalidate()  # a CRD change shows in the next pass, not after the cache's ttl
        return self.client.server_resources()

    def listed(self) -> list[APIResourceMeta]:
        found = self.found().preferred_resources()
        return [m for m in found if m.group_version_resource.group == "example.com"]

    def wait_until(self, expected: dict[GroupVersionResource, bool]) -> list[APIResourceMeta]:
        """Wait until the example.com group serves exactly ``expected`` (resource: cluster-scoped)."""
        listed: list[APIResourceMeta] = []

        def served() -> bool:
            nonlocal listed
            listed = self.listed()
            return {m.group_version_resource: m.is_cluster_scoped for m in listed} == expected

        assert wait_for(served, TIMEOUT), listed
        return listed


def recreate_widget_crd(api_client: Any, body: dict[str, Any]) -> None:
    extensions = k8s.ApiextensionsV1Api(api_client)
    extensions.delete_custom_resource_definition("widgets.example.com")
    extensions.create_custom_resource_definition(body)


def informer_threads(gvr: GroupVersionResource) -> list[str]:
    """The threads of the informer of ``gvr`` (named ``kinformer-<role>-<gvr>``, ``v1/configmaps``
    for the core group)."""
    path = "/".join(part for part in (gvr.group, gvr.version, gvr.resource) if part)
    return [t.name for t in _threads.kinformer_threads() if f"-{path}" in t.name]


def handler_threads(gvr: GroupVersionResource) -> list[str]:
    """One delivery thread per handler registered on the running informer of ``gvr``."""
    return [name for name in informer_threads(gvr) if name.startswith("kinformer-handler-")]


@pytest.mark.parametrize("absent_between", [True, False], ids=["absent-between", "one-period"])
def test_a_kind_re_created_cluster_scoped_is_reported_cluster_scoped(
    apiserver: FakeAPIServer, api_client: Any, absent_between: bool
) -> None:
    discovery = Discovery(api_client)
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS, "Namespaced"))
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_dynamic_resources(discovery.wait_until({WIDGETS: False}), Recorder(), True)
        assert manager.get_name_space_scoped_resources() == [WIDGETS]
        assert not manager.is_cluster_scoped_resources(WIDGET_KIND)

        if absent_between:
            k8s.ApiextensionsV1Api(api_client).delete_custom_resource_definition("widgets.example.com")
            manager.add_dynamic_resources(discovery.wait_until({}), Recorder(), True)
            assert manager.get_all_resources() == []
            k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS, "Cluster"))
        else:  # deleted and re-created between two passes
            recreate_widget_crd(api_client, crd(WIDGETS, "Cluster"))
        manager.add_dynamic_resources(discovery.wait_until({WIDGETS: True}), Recorder(), True)

        assert manager.is_cluster_scoped_resources(WIDGET_KIND)
        assert manager.get_name_space_scoped_resources() == []
        assert manager.get_all_resources() == [WIDGETS]


@pytest.mark.parametrize("absent_between", [True, False], ids=["absent-between", "one-period"])
def test_a_kind_served_under_a_new_plural_is_watched_there_with_its_handler(
    apiserver: FakeAPIServer, api_client: Any, absent_between: bool
) -> None:
    discovery = Discovery(api_client)
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    recorder, later = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_dynamic_resources(discovery.wait_until({WIDGETS: False}), recorder, True)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert len(handler_threads(WIDGETS)) == 1

        gizmos = crd(GIZMOS)
        gizmos["spec"]["names"].update(kind="Widget", singular="widget")  # the same kind, renamed
        if absent_between:
            k8s.ApiextensionsV1Api(api_client).delete_custom_resource_definition("widgets.example.com")
            manager.add_dynamic_resources(discovery.wait_until({}), later, True)
            k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(gizmos)
        else:
            recreate_widget_crd(api_client, gizmos)
        manager.add_dynamic_resources(discovery.wait_until({GIZMOS: False}), later, True)
        assert manager.get_all_resources() == [GIZMOS]
        assert informer_threads(WIDGETS) == []  # the old resource is not relisting 404s
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert manager.is_informer_synced(GIZMOS)
        assert len(handler_threads(GIZMOS)) == 1  # the kind's one handler, moved along

        k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "example.com", "v1", "default", "gizmos",
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "g1"}},
        )
        assert recorder.next() == ("add", "g1", False)
        assert [o["metadata"]["name"] for o in manager.lister(GIZMOS).list()] == ["g1"]
        assert later.quiet()  # a kind seen before keeps the handler it was first given


def test_a_kind_added_as_static_under_another_resource_moves_its_handlers_there(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    """A kind tracked on one resource, then given to ``add_static_resource`` with another (its
    CRD renamed): the old informer stops, and the new one has the kind's handlers and the new."""
    discovery = Discovery(api_client)
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    dynamic, static = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_dynamic_resources(discovery.wait_until({WIDGETS: False}), dynamic, True)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)

        gizmos = crd(GIZMOS)
        gizmos["spec"]["names"].update(kind="Widget", singular="widget")
        recreate_widget_crd(api_client, gizmos)
        manager.add_static_resource(discovery.wait_until({GIZMOS: False})[0], static)
        assert informer_threads(WIDGETS) == []  # not relisting the old resource's 404s
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert manager.is_informer_synced(GIZMOS)
        assert len(handler_threads(GIZMOS)) == 2

        k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "example.com", "v1", "default", "gizmos",
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "g1"}},
        )
        assert dynamic.next() == ("add", "g1", False)
        assert static.next() == ("add", "g1", False)


@pytest.mark.parametrize("track", ["create_informer_for_resource", "add_dynamic_resources"])
def test_a_handler_given_before_its_type_is_tracked_stays_when_the_type_leaves_and_returns(
    apiserver: FakeAPIServer, api_client: Any, track: str
) -> None:
    recorder, refused = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_event_handler_to_informer(CONFIGMAPS, recorder)  # fleet's newer API, handler first
        if track == "create_informer_for_resource":
            manager.create_informer_for_resource(CM)
        else:
            manager.add_dynamic_resources([CM], Recorder(), True)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        expected_handlers = 1 if track == "create_informer_for_resource" else 2
        assert len(handler_threads(CONFIGMAPS)) == expected_handlers  # registered once, not again
        create_cm(api_client, "a")
        assert recorder.next() == ("add", "a", False)

        manager.add_dynamic_resources([SECRET], Recorder(), True)  # configmaps gone: stopped
        assert handler_threads(CONFIGMAPS) == []
        manager.add_dynamic_resources([SECRET, CM], Recorder(), True)  # and back: a fresh informer
        manager.add_event_handler_to_informer(CONFIGMAPS, refused)  # one handler per type, still
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert len(handler_threads(CONFIGMAPS)) == expected_handlers

        assert recorder.next() == ("add", "a", True)  # the fresh informer's initial list
        create_cm(api_client, "b")
        assert recorder.next() == ("add", "b", False)
        assert refused.quiet()


def test_a_handler_given_before_a_static_type_is_registered_once(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    early, static = Recorder(name_of), Recorder(name_of)
    with InformerManager(api_client, 0, Context()) as manager:
        manager.add_event_handler_to_informer(CONFIGMAPS, early)
        manager.add_static_resource(CM, static)
        manager.start()
        assert manager.wait_for_cache_sync(TIMEOUT)
        assert len(handler_threads(CONFIGMAPS)) == 2
        create_cm(api_client, "a")
        assert early.next() == ("add", "a", False)
        assert static.next() == ("add", "a", False)
