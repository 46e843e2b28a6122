"""CachedClient and staleness through the official client over HTTP: a reconcile requeued at once
while the watch lags does not act on a cache that missed its own write; reads name their cluster and
writes reach that cluster, logical or member."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _fleet import DrivenProvider
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, metric_value
from kubernetes import client as k8s

from kinformer import (
    CachedClient,
    ConfigurationError,
    ControllerBuilder,
    DynamicSharedInformerFactory,
    MultiClusterInformerFactory,
    NotFoundError,
    Request,
    Result,
    StaticClusterProvider,
)
from kinformer.controllers import builder, staleness
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

GROUP = "example.com"
WIDGETS = GroupVersionResource(GROUP, "v1", "widgets")
WATCH_LAG = 1.0  # seconds the re-established watch is held back: the window a stale cache is read in


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


class ChildMaker:
    """Makes one child ConfigMap (generateName) per widget, seen through the cache; requeues at once."""

    def __init__(self, client: CachedClient, before_first_write: Any) -> None:
        self.client = client
        self.before_first_write = before_first_write
        self.settled = threading.Event()
        self.reconciles = 0

    def reconcile(self, request: Request) -> Result | None:
        self.reconciles += 1
        owner = self.client.get(WIDGETS, request.name, request.namespace)
        children = self.client.list(CONFIGMAPS, request.namespace, selector=f"owner={request.name}")
        if children:
            self.settled.set()
            return None
        if self.before_first_write is not None:
            self.before_first_write()
            self.before_first_write = None
        ref = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": request.name,
               "uid": owner["metadata"]["uid"], "controller": True}
        self.client.create(CONFIGMAPS, {"metadata": {
            "generateName": f"{request.name}-", "namespace": request.namespace,
            "labels": {"owner": request.name}, "ownerReferences": [ref]}})
        return Result(requeue_after=0)


def test_a_reconcile_waits_for_the_cache_to_see_its_own_write(
        apiserver: FakeAPIServer, api_client: Any, prometheus: Any, stop: threading.Event,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(builder, "STALE_WARN_AFTER", WATCH_LAG / 4)  # a wait this long is told
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd(WIDGETS))
    k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(GROUP, "v1", "default", "widgets", {
        "apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}})
    factory = DynamicSharedInformerFactory(api_client)
    client = CachedClient(factory, api_client)

    def lag_the_watch() -> None:
        apiserver.set_delay(WATCH_LAG, verb="watch")
        apiserver.drop_watches()

    maker = ChildMaker(client, lag_the_watch)
    controller = (ControllerBuilder("widgets", factory).for_resource(WIDGETS, kind="Widget").owns(CONFIGMAPS)
                  .complete(maker))
    controller.start(stop)
    try:
        assert maker.settled.wait(TIMEOUT + WATCH_LAG)
        assert metric_value(prometheus, "kinformer_store_resource_version", informer="v1/configmaps")
        skips = metric_value(prometheus, "kinformer_stale_sync_skips_total", controller="widgets")
    finally:
        stop.set()
        assert controller.join(TIMEOUT)
        apiserver.clear_faults()
        factory.shutdown()
    children = [o for o in apiserver.list_objects(CONFIGMAPS, "default")
                if (o["metadata"].get("labels") or {}).get("owner") == "w"]
    assert len(children) == 1, [o["metadata"]["name"] for o in children]
    assert skips is not None and skips >= 1
    # a stopped controller's series go with it
    assert metric_value(prometheus, "kinformer_stale_sync_skips_total", controller="widgets") is None
    assert metric_value(prometheus, "workqueue_adds_total", name="widgets") is None
    waited = [r.getMessage() for r in caplog.records if "to show its write" in r.getMessage()]
    assert len(waited) == 1 and "informer v1/configmaps" in waited[0], waited  # once per wait
    assert metric_value(prometheus, "kinformer_store_resource_version", informer="v1/configmaps") is None


def test_reads_and_writes_name_the_logical_cluster(
        logical_clusters_server: FakeAPIServer, client_of: Any) -> None:
    server = logical_clusters_server
    for cluster in ("root:a", "root:b"):
        server.create(CONFIGMAPS, cm("app", None, "default", data={"in": cluster}), cluster=cluster)
    factory = DynamicSharedInformerFactory(client_of(None), cluster="*")
    client = CachedClient(factory, client_of(None))
    factory.for_resource(CONFIGMAPS)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(timeout=TIMEOUT).values())
        assert client.get(CONFIGMAPS, "app", "default", cluster="root:b")["data"] == {"in": "root:b"}
        assert [o["data"] for o in client.list(CONFIGMAPS, "default", cluster="root:a")] == [{"in": "root:a"}]
        made = client.create(CONFIGMAPS, cm("new", None, "default"), cluster="root:b")
        assert made["metadata"]["annotations"]["kcp.io/cluster"] == "root:b"
        client.patch(CONFIGMAPS, "app", {"data": {"in": "patched"}}, "default", cluster="root:a")
        assert server.get(CONFIGMAPS, "default", "app", cluster="root:a")["data"] == {"in": "patched"}
        assert server.get(CONFIGMAPS, "default", "app", cluster="root:b")["data"] == {"in": "root:b"}
        with pytest.raises(NotFoundError):
            server.get(CONFIGMAPS, "default", "new", cluster="root:a")
        assert wait_for(lambda: client.list(CONFIGMAPS, "default", cluster="root:b") != [], timeout=TIMEOUT)
        client.delete(CONFIGMAPS, "new", "default", cluster="root:b")
        with pytest.raises(NotFoundError):
            server.get(CONFIGMAPS, "default", "new", cluster="root:b")
    finally:
        stop.set()
        factory.shutdown()


def test_a_write_without_a_cluster_goes_where_its_object_or_source_names_or_fails(
        logical_clusters_server: FakeAPIServer, client_of: Any) -> None:
    server = logical_clusters_server
    for cluster in ("root", "root:a", "root:b"):
        server.create(CONFIGMAPS, cm("app", None, "default", data={"in": cluster}), cluster=cluster)
    every = DynamicSharedInformerFactory(client_of(None), cluster="*")
    one = DynamicSharedInformerFactory(client_of(None), cluster="root:b")
    over_every, over_one = CachedClient(every, client_of(None)), CachedClient(one, client_of(None))
    stop = threading.Event()
    for factory in (every, one):
        factory.for_resource(CONFIGMAPS)
        factory.start(stop)
    try:
        for factory in (every, one):
            assert all(factory.wait_for_cache_sync(timeout=TIMEOUT).values())
        # an object read from root:a's cache and written back without cluster= goes to root:a
        read = over_every.get(CONFIGMAPS, "app", "default", cluster="root:a")
        over_every.update(CONFIGMAPS, {**read, "data": {"in": "updated"}})
        assert server.get(CONFIGMAPS, "default", "app", cluster="root:a")["data"] == {"in": "updated"}
        assert server.get(CONFIGMAPS, "default", "app", cluster="root")["data"] == {"in": "root"}
        # over every logical cluster, a write naming no cluster is refused, never sent to root
        for write in (lambda: over_every.patch(CONFIGMAPS, "app", {"data": {"in": "x"}}, "default"),
                      lambda: over_every.delete(CONFIGMAPS, "app", "default"),
                      lambda: over_every.create(CONFIGMAPS, cm("new", None, "default"))):
            with pytest.raises(ConfigurationError, match="every logical cluster"):
                write()
        with pytest.raises(ConfigurationError, match="names the logical cluster 'root:a'"):
            over_every.update(CONFIGMAPS, read, cluster="root:b")
        # a source of one logical cluster: its writes go there
        over_one.patch(CONFIGMAPS, "app", {"data": {"in": "patched"}}, "default")
        assert server.get(CONFIGMAPS, "default", "app", cluster="root:b")["data"] == {"in": "patched"}
        assert server.get(CONFIGMAPS, "default", "app", cluster="root")["data"] == {"in": "root"}
        with pytest.raises(ConfigurationError, match="names the logical cluster 'root:a'"):
            over_one.update(CONFIGMAPS, read)
    finally:
        stop.set()
        every.shutdown()
        one.shutdown()


@pytest.mark.parametrize("scoped", ["host", "source"])
def test_a_write_to_another_cluster_than_the_one_watched_is_refused_and_never_sent(
        logical_clusters_server: FakeAPIServer, client_of: Any, scoped: str) -> None:
    server = logical_clusters_server
    for cluster in ("root:a", "root:b"):
        server.create(CONFIGMAPS, cm("app", None, "default", data={"in": cluster}), cluster=cluster)
    if scoped == "host":  # a kcp kubeconfig's context on /clusters/root:a
        api_client = client_of("root:a")
        factory = DynamicSharedInformerFactory(api_client)
    else:
        api_client = client_of(None)
        factory = DynamicSharedInformerFactory(api_client, cluster="root:a")
    client = CachedClient(factory, api_client)
    server.clear_requests()
    writes = [
        lambda: client.create(CONFIGMAPS, cm("new", None, "default"), cluster="root:b"),
        lambda: client.patch(CONFIGMAPS, "app", {"data": {"in": "x"}}, "default", cluster="root:b"),
        lambda: client.update(CONFIGMAPS, cm("app", None, "default", data={"in": "x"}), cluster="root:b"),
        lambda: client.delete(CONFIGMAPS, "app", "default", cluster="root:b"),
    ]
    for write in writes:
        with pytest.raises(ConfigurationError, match="'root:a'"):
            write()
    assert [r for r in server.requests if r[0] != "GET"] == []
    assert server.get(CONFIGMAPS, "default", "app", cluster="root:b")["data"] == {"in": "root:b"}
    with pytest.raises(NotFoundError):
        server.get(CONFIGMAPS, "default", "new", cluster="root:b")
    # the cluster it is scoped to, named or not, is written as before
    client.patch(CONFIGMAPS, "app", {"data": {"in": "patched"}}, "default", cluster="root:a")
    client.create(CONFIGMAPS, cm("new", None, "default"))
    assert server.get(CONFIGMAPS, "default", "app", cluster="root:a")["data"] == {"in": "patched"}
    assert server.get(CONFIGMAPS, "default", "new", cluster="root:a")["metadata"]["name"] == "new"


@pytest.mark.parametrize("scoped", ["host", "source"])
def test_a_read_of_another_cluster_than_the_one_watched_is_refused_not_missing(
        logical_clusters_server: FakeAPIServer, client_of: Any, scoped: str) -> None:
    server = logical_clusters_server
    for cluster in ("root:a", "root:b"):
        server.create(CONFIGMAPS, cm("app", None, "default", data={"in": cluster}), cluster=cluster)
    api_client = client_of("root:a") if scoped == "host" else client_of(None)
    factory = (DynamicSharedInformerFactory(api_client) if scoped == "host"
               else DynamicSharedInformerFactory(api_client, cluster="root:a"))
    client = CachedClient(factory, api_client)
    factory.for_resource(CONFIGMAPS)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(timeout=TIMEOUT).values())
        # root:b holds default/app too: its cache cannot say so, and must not say NotFound
        with pytest.raises(ConfigurationError, match="watches the logical cluster 'root:a' only"):
            client.get(CONFIGMAPS, "app", "default", cluster="root:b")
        with pytest.raises(ConfigurationError, match="watches the logical cluster 'root:a' only"):
            client.list(CONFIGMAPS, "default", cluster="root:b")
        assert client.get(CONFIGMAPS, "app", "default", cluster="root:a")["data"] == {"in": "root:a"}
        assert [o["data"] for o in client.list(CONFIGMAPS, "default")] == [{"in": "root:a"}]
    finally:
        stop.set()
        factory.shutdown()


def test_writes_over_members_go_through_that_members_client(kube_fleet: dict[str, FakeAPIServer]) -> None:
    clients = {name: server.api_client() for name, server in kube_fleet.items()}
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"in": name}))
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    client = CachedClient(factory)
    factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert client.get(CONFIGMAPS, "app", "default", cluster="member-3")["data"] == {"in": "member-3"}
        client.update(CONFIGMAPS, {**client.get(CONFIGMAPS, "app", "default", cluster="member-2"),
                                   "data": {"in": "updated"}}, cluster="member-2")
        assert kube_fleet["member-2"].get(CONFIGMAPS, "default", "app")["data"] == {"in": "updated"}
        assert kube_fleet["member-1"].get(CONFIGMAPS, "default", "app")["data"] == {"in": "member-1"}
        with pytest.raises(ConfigurationError):
            client.create(CONFIGMAPS, cm("x", None, "default"))  # which member?
        with pytest.raises(ConfigurationError):
            client.create(CONFIGMAPS, cm("x", None, "default"), cluster="member-9")
    finally:
        factory.shutdown()
        for api_client in clients.values():
            api_client.close()


def test_the_store_version_gauge_follows_a_member_that_leaves_and_comes_back(
        kube_fleet: dict[str, FakeAPIServer], prometheus: Any) -> None:
    """``kinformer_store_resource_version{informer}`` of a member reads the cache of the member's
    current informer: gone while the member is away (its old cache never moves again), and the
    new informer's cache once it is back, not the stopped one's frozen version."""
    server = kube_fleet["member-1"]
    server.create(CONFIGMAPS, cm("app", None, "default"))
    api_client = server.api_client()
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    client = CachedClient(factory)
    tracker = staleness.StalenessTracker("flapping")
    subject = "v1/configmaps@member-1"

    def gauge() -> float | None:
        return metric_value(prometheus, "kinformer_store_resource_version", informer=subject)

    def write(value: str) -> int:
        with staleness.reconciling(tracker, Request("app", "default", "member-1")):
            answer = client.patch(CONFIGMAPS, "app", {"data": {"v": value}}, "default", cluster="member-1")
        return int(answer["metadata"]["resourceVersion"])

    def cache_version() -> int:
        informer = configmaps.informer_for("member-1")
        assert informer is not None
        return int(informer.get_indexer().last_store_sync_resource_version())

    factory.start(threading.Event())
    try:
        provider.engage("member-1", api_client)
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        first = write("1")
        assert wait_for(lambda: gauge() == first)
        provider.disengage("member-1")
        assert gauge() is None  # no informer of that name runs
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"more-{i}", None, "default"))
        provider.engage("member-1", api_client)
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert wait_for(lambda: cache_version() > first)
        second = write("2")
        assert wait_for(lambda: cache_version() == second)
        assert gauge() == second
    finally:
        factory.shutdown()
        tracker.close()
        api_client.close()
    assert gauge() is None
