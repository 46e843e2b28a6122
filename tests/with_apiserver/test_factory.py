"""DynamicSharedInformerFactory over FakeAPIServer: one informer per GVR, start, wait, stop, shutdown."""

from __future__ import annotations

import threading
from typing import Any

from helpers import CONFIGMAPS, create_cm, names
from kubernetes import client as k8s

from kinformer import Context, _threads
from kinformer.client.listerwatcher import ListOptions
from kinformer.factory import DynamicSharedInformerFactory
from kinformer.gvr import GroupVersionResource
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.testing import wait_for

SECRETS = GroupVersionResource("", "v1", "secrets")
TIMEOUT = 10.0


def informer_threads() -> list[str]:
    """Names of the live ``kinformer-informer-*`` threads: one per running informer."""
    return [t.name for t in _threads.kinformer_threads() if t.name.startswith("kinformer-informer-")]


def test_for_resource_shares_one_informer_per_resource(apiserver: Any, api_client: Any) -> None:
    factory = DynamicSharedInformerFactory(api_client)
    first = factory.for_resource(CONFIGMAPS)
    assert factory.for_resource(CONFIGMAPS).informer() is first.informer()
    assert factory.for_resource(SECRETS).informer() is not first.informer()


def test_start_wait_and_shutdown_leave_no_thread(apiserver: Any, api_client: Any) -> None:
    create_cm(api_client, "a", app="web")
    factory = DynamicSharedInformerFactory(api_client)
    cms = factory.for_resource(CONFIGMAPS)
    stop = threading.Event()
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
        assert names(cms.lister().by_namespace("default").list("app=web")) == ["a"]
        assert informer_threads() == ["kinformer-informer-v1/configmaps"]

        secrets = factory.for_resource(SECRETS)  # created after start: not started yet
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True, SECRETS: True}
        assert secrets.informer().has_synced()
    finally:
        stop.set()
        factory.shutdown()
    assert informer_threads() == []
    assert cms.informer().is_stopped()


def test_shutdown_stops_informers_and_later_starts_do_nothing(apiserver: Any, api_client: Any) -> None:
    factory = DynamicSharedInformerFactory(api_client)
    cms = factory.for_resource(CONFIGMAPS)
    stop = Context()
    factory.start(stop)
    assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
    factory.shutdown()
    assert cms.informer().is_stopped()
    factory.for_resource(SECRETS)
    factory.start(stop)
    assert informer_threads() == []


def test_stop_informer_stops_one_resource_and_a_fresh_one_can_start(
    apiserver: Any, api_client: Any
) -> None:
    factory = DynamicSharedInformerFactory(api_client)
    cms = factory.for_resource(CONFIGMAPS)
    secrets = factory.for_resource(SECRETS)
    stop = Context()
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True, SECRETS: True}
        assert factory.stop_informer(CONFIGMAPS)
        assert cms.informer().is_stopped() and not secrets.informer().is_stopped()
        assert not factory.stop_informer(CONFIGMAPS)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {SECRETS: True}

        fresh = factory.for_resource(CONFIGMAPS)
        assert fresh.informer() is not cms.informer()
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT)[CONFIGMAPS]
        create_cm(api_client, "late")
        assert wait_for(lambda: names(fresh.lister().list()) == ["late"], TIMEOUT)
    finally:
        stop.cancel()
        factory.shutdown()


def test_namespace_and_tweak_narrow_what_every_informer_sees(apiserver: Any, api_client: Any) -> None:
    k8s.CoreV1Api(api_client).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team")))
    create_cm(api_client, "web", "team", app="web")
    create_cm(api_client, "db", "team", app="db")
    create_cm(api_client, "other", app="web")

    def only_web(options: ListOptions) -> None:
        options.label_selector = "app=web"

    factory = DynamicSharedInformerFactory(api_client, namespace="team", tweak_list_options=only_web)
    cms = factory.for_resource(CONFIGMAPS)
    added: list[str] = []
    cms.informer().add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda o: added.append(o["metadata"]["name"]))
    )
    stop = Context()
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
        assert names(cms.lister().list()) == ["web"]
        create_cm(api_client, "web2", "team", app="web")
        create_cm(api_client, "db2", "team", app="db")
        assert wait_for(lambda: names(cms.lister().by_namespace("team").list()) == ["web", "web2"], TIMEOUT)
        assert wait_for(lambda: sorted(added) == ["web", "web2"], TIMEOUT)
    finally:
        stop.cancel()
        factory.shutdown()


def test_wait_for_cache_sync_reports_a_forbidden_resource_as_unsynced(
    apiserver: Any, api_client: Any
) -> None:
    apiserver.forbid("secrets", verb="list")
    factory = DynamicSharedInformerFactory(api_client)
    factory.for_resource(CONFIGMAPS)
    factory.for_resource(SECRETS)
    stop = Context()
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=0.5) == {CONFIGMAPS: True, SECRETS: False}
    finally:
        stop.cancel()
        factory.shutdown()


def test_a_wait_for_sync_under_way_stops_waiting_for_an_informer_stopped_meanwhile(
    apiserver: Any, api_client: Any
) -> None:
    """Its type left the server while its list was forbidden: once stop_informer dropped it,
    a wait already under way went on waiting for it, until its timeout (or for good)."""
    apiserver.forbid("secrets", verb="list")
    factory = DynamicSharedInformerFactory(api_client)
    factory.for_resource(CONFIGMAPS)
    factory.for_resource(SECRETS)
    stop = Context()
    results: list[dict[GroupVersionResource, bool]] = []
    waiter = threading.Thread(target=lambda: results.append(factory.wait_for_cache_sync(stop, timeout=60)),
                              name="test-waiter")
    try:
        factory.start(stop)
        waiter.start()
        assert wait_for(factory.for_resource(CONFIGMAPS).informer().has_synced, TIMEOUT)
        assert factory.stop_informer(SECRETS)
        waiter.join(TIMEOUT)
        assert not waiter.is_alive(), "still waiting for the stopped informer"
        assert results == [{CONFIGMAPS: True}]
    finally:
        stop.cancel()
        factory.shutdown()
        waiter.join(TIMEOUT)


def test_starts_with_one_stop_event_share_one_bridge_to_it(apiserver: Any, api_client: Any) -> None:
    """Each start that started something bridged the Event to a context of its own: a thread
    per start, alive until the Event fired, even after its informers were stopped."""
    factory = DynamicSharedInformerFactory(api_client)
    stop = threading.Event()
    try:
        for _ in range(3):
            factory.for_resource(CONFIGMAPS)
            factory.start(stop)
            assert factory.wait_for_cache_sync(stop, timeout=TIMEOUT) == {CONFIGMAPS: True}
            assert factory.stop_informer(CONFIGMAPS)
        bridges = [t.name for t in _threads.kinformer_threads() if t.name.startswith("kinformer-context")]
        assert len(bridges) == 1, bridges
    finally:
        stop.set()
        factory.shutdown()
