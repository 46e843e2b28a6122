"""SharedIndexInformer end to end: the official client changes FakeAPIServer, the informer follows.

Handlers and listers must agree with the server after creates, updates and deletes, after
dropped watches and compacted history, and every object that vanished must reach ``on_delete``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, client_for, create_cm, names, running
from kubernetes import client as k8s

from kinformer import errors
from kinformer.cache.lister import GenericLister
from kinformer.cache.store import NAMESPACE_INDEX, DeletedFinalStateUnknown, meta_namespace_index_func
from kinformer.client.listwatch import ListWatch
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import ResourceEventHandlerFuncs, wait_for_cache_sync
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeAPIServer, FakeClock, wait_for

TIMEOUT = 10.0
NS = "default"


class View:
    """A handler that rebuilds the collection from notifications alone."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[str, dict[str, Any]] = {}
        self.deleted: dict[str, bool] = {}  # name -> delivered as a tombstone

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        with self.lock:
            self.objects[obj["metadata"]["name"]] = obj

    def on_update(self, old: Any, new: Any) -> None:
        with self.lock:
            self.objects[new["metadata"]["name"]] = new

    def on_delete(self, obj: Any) -> None:
        tombstone = isinstance(obj, DeletedFinalStateUnknown)
        name = obj.key.split("/")[-1] if tombstone else obj["metadata"]["name"]
        with self.lock:
            self.objects.pop(name, None)
            self.deleted[name] = tombstone

    def versions(self) -> dict[str, str]:
        with self.lock:
            return {n: o["metadata"]["resourceVersion"] for n, o in self.objects.items()}


def server_versions(api: k8s.CoreV1Api) -> dict[str, str]:
    items = api.list_namespaced_config_map(NS).items
    return {i.metadata.name: i.metadata.resource_version for i in items}


def lister_versions(lister: GenericLister) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in lister.by_namespace(NS).list()}


def new_informer(api_client: Any, **kwargs: Any) -> SharedIndexInformer:
    return SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace=NS),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func},
        name="e2e-configmaps",
        **kwargs,
    )


def test_handlers_and_listers_follow_creates_updates_and_deletes(apiserver: Any, api_client: Any) -> None:
    api = k8s.CoreV1Api(api_client)
    create_cm(api_client, "before", app="web")
    informer = new_informer(api_client)
    view = View()
    registration = informer.add_event_handler(view)
    lister = GenericLister(informer.get_indexer(), CONFIGMAPS)
    with running(informer.run) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, registration.has_synced, timeout=TIMEOUT)
        create_cm(api_client, "web", app="web")
        create_cm(api_client, "db", app="db")
        api.patch_namespaced_config_map("before", NS, {"data": {"v": "1"}})
        api.delete_namespaced_config_map("db", NS)
        expected = server_versions(api)
        assert wait_for(lambda: view.versions() == expected, TIMEOUT)
        assert lister_versions(lister) == expected
        assert names(lister.list("app=web")) == ["before", "web"]
        assert view.deleted == {"db": False}
        assert informer.last_sync_resource_version() != ""


def test_after_dropped_watches_and_compaction_the_cache_equals_the_server(
    apiserver: Any, api_client: Any
) -> None:
    api = k8s.CoreV1Api(api_client)
    for i in range(5):
        create_cm(api_client, f"cm{i}")
    clock = FakeClock()
    informer = new_informer(api_client, clock=clock)
    view = View()
    informer.add_event_handler(view)

    def caught_up() -> bool:
        clock.step(60)  # lets a backed-off reflector go on at once
        return view.versions() == expected

    with running(informer.run) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        for round_ in range(3):
            apiserver.drop_watches()
            api.delete_namespaced_config_map(f"cm{round_}", NS)
            api.patch_namespaced_config_map("cm4", NS, {"data": {"v": str(round_)}})
            create_cm(api_client, f"new{round_}")
            apiserver.compact()
        expected = server_versions(api)
        assert wait_for(caught_up, TIMEOUT)
        assert lister_versions(GenericLister(informer.get_indexer(), CONFIGMAPS)) == expected
        assert sorted(view.deleted) == ["cm0", "cm1", "cm2"]


def test_a_delete_missed_while_the_watch_was_down_arrives_as_a_tombstone(
    apiserver: Any, api_client: Any
) -> None:
    api = k8s.CoreV1Api(api_client)
    create_cm(api_client, "keep")
    create_cm(api_client, "gone")
    clock = FakeClock()  # holds the reflector in its backoff until the test steps time
    informer = new_informer(api_client, clock=clock)
    view = View()
    informer.add_event_handler(view)
    with running(informer.run) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        apiserver.fail_next(1, status=500, verb="watch")
        apiserver.drop_watches()
        assert clock.wait_for_waiters(1, TIMEOUT)
        api.delete_namespaced_config_map("gone", NS)
        apiserver.compact()
        clock.step(120)
        assert wait_for(lambda: "gone" in view.deleted, TIMEOUT)
        assert view.deleted == {"gone": True}
        assert view.versions() == server_versions(api)


def test_a_forbidden_list_shows_in_last_error_and_the_wait_times_out(
    apiserver: Any, api_client: Any
) -> None:
    apiserver.forbid("configmaps", verb="list")
    informer = new_informer(api_client)
    with running(informer.run) as stop:
        assert not wait_for_cache_sync(stop, informer.has_synced, timeout=0.5)
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        err = informer.last_error()
        assert isinstance(err, errors.ForbiddenError) and err.status == 403


def test_a_resource_the_server_does_not_serve_shows_not_found(apiserver: Any, api_client: Any) -> None:
    widgets = GroupVersionResource("example.com", "v1", "widgets")
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, widgets), name="e2e-widgets")
    with running(informer.run) as stop:
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        assert isinstance(informer.last_error(), errors.NotFoundError)
        assert not wait_for_cache_sync(stop, informer.has_synced, timeout=0.1)


def test_an_unnamed_informer_is_named_after_its_resource_in_logs_and_threads(
    apiserver: Any, api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    deployments = GroupVersionResource("apps", "v1", "deployments")
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, deployments))
    assert informer.name == "apps/v1/deployments"
    with caplog.at_level(logging.INFO, logger="kinformer.informer"), running(informer.run) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        assert "kinformer-reflector-apps/v1/deployments" in [t.name for t in threading.enumerate()]
    assert "informer apps/v1/deployments starting" in caplog.messages
    anonymous = SharedIndexInformer(ListWatch(lambda options: None, lambda options: iter(())))
    assert anonymous.name.startswith("#")


def test_a_label_selected_informer_sees_an_object_losing_its_label_as_a_deletion(
    apiserver: Any, api_client: Any
) -> None:
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": NS, "labels": {"export": "true"}}})
    deleted: list[Any] = []
    lw = ListWatch.for_resource(api_client, CONFIGMAPS, label_selector="export=true")
    informer = SharedIndexInformer(lw)
    informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=deleted.append))
    with running(informer.run) as stop:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=TIMEOUT)
        assert apiserver.wait_for_watchers(CONFIGMAPS, 1, timeout=TIMEOUT)
        unlabelled = apiserver.get(CONFIGMAPS, NS, "a")
        unlabelled["metadata"]["labels"] = {}
        apiserver.update(CONFIGMAPS, unlabelled)
        assert wait_for(lambda: len(deleted) == 1, TIMEOUT)
    assert deleted[0]["metadata"]["labels"] == {"export": "true"}  # as it last matched
    assert informer.get_indexer().list_keys() == []
    assert apiserver.get(CONFIGMAPS, NS, "a")["metadata"]["name"] == "a"  # still on the server


def test_a_tls_failure_keeps_its_whole_reason_in_last_error_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reason = "certificate verify failed: unable to get local issuer certificate"
    with FakeAPIServer(token="s3cret") as server:
        api = client_for(server.url, "s3cret")  # https, but the server's CA is not trusted
        informer = SharedIndexInformer(ListWatch.for_resource(api, CONFIGMAPS))
        try:
            with caplog.at_level(logging.WARNING, logger="kinformer.reflector"), running(informer.run):
                assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        finally:
            api.close()
    error = informer.last_error()
    assert isinstance(error, errors.TransportError)
    assert str(error).startswith(f"list configmaps: TLS failure: [SSL: CERTIFICATE_VERIFY_FAILED] {reason}")
    assert any(reason in message and "s3cret" not in message for message in caplog.messages)
