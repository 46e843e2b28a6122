"""A client whose host ends in ``/clusters/*`` or ``/clusters/<name>`` (a kcp kubeconfig's server)
addresses that cluster as ``cluster=`` does: ListWatch.for_resource, both dynamic factories and
discovery read the host's path, never send a cluster's prefix twice, and refuse a ``cluster=``
that contradicts it; through the official client over HTTP to FakeAPIServer(logical_clusters=True).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, running
from kubernetes import client as k8s

from kinformer import (
    CachedDiscoveryClient,
    ConfigurationError,
    Context,
    DiscoveringDynamicSharedInformerFactory,
    DynamicSharedInformerFactory,
    GenericClusterLister,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    ListOptions,
    ListWatch,
    NotFoundError,
    ShardCoordinator,
    SharedIndexInformer,
)
from kinformer.client import rest
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")


@pytest.fixture
def server(logical_clusters_server: FakeAPIServer) -> FakeAPIServer:
    return logical_clusters_server  # and client_of(cluster): see conftest


def seed(server: FakeAPIServer, *clusters: str) -> None:
    """``default/app`` in each of ``clusters``, its data naming the cluster."""
    for cluster in clusters:
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": cluster}), cluster=cluster)


def data_cluster(obj: Any) -> str:
    return str(obj["data"]["cluster"])


def doubled(server: FakeAPIServer) -> list[str]:
    """Paths of the requests served that named a cluster twice."""
    return [path for _, path, _, _ in server.requests if path.count("/clusters/") > 1]


@pytest.fixture
def factories() -> Iterator[list[DynamicSharedInformerFactory]]:
    made: list[DynamicSharedInformerFactory] = []
    yield made
    for each in made:
        each.shutdown()


# -- the host's path, read --------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "expected"), [
    ("https://kcp:6443/clusters/root:org", ("https://kcp:6443", "root:org")),
    ("http://127.0.0.1:8080/clusters/*", ("http://127.0.0.1:8080", "*")),
    ("http://127.0.0.1:8080/clusters/*/", ("http://127.0.0.1:8080", "*")),
    ("http://127.0.0.1:8080/clusters/%2A", ("http://127.0.0.1:8080", "*")),
    ("https://proxy/k8s/clusters/c-m-4x2", ("https://proxy/k8s", "c-m-4x2")),
    ("https://kcp:6443", ("https://kcp:6443", None)),
    ("https://clusters/app", ("https://clusters/app", None)),  # a host named clusters
    ("https://proxy/clusters/Prod_EU", ("https://proxy/clusters/Prod_EU", None)),  # not kcp's grammar
    ("https://proxy/clusters", ("https://proxy/clusters", None)),
])
def test_a_hosts_path_names_its_logical_cluster_only_when_it_ends_in_one(
    host: str, expected: tuple[str, str | None]
) -> None:
    assert rest.split_cluster_host(host) == expected


def test_a_request_naming_a_cluster_under_a_wildcard_host_goes_to_that_cluster_once(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    wildcard = rest.Client(client_of("*"))
    made = wildcard.request_json("POST", "/clusters/root:a/api/v1/namespaces/default/configmaps",
                                 body={"metadata": {"name": "written"}})
    assert made["metadata"]["annotations"] == {"kcp.io/cluster": "root:a"}
    assert server.get(CONFIGMAPS, "default", "written", cluster="root:a")["metadata"]["uid"] == (
        made["metadata"]["uid"])
    in_b = rest.Client(client_of("root:b")).request_json("GET", "/api/v1/namespaces/default/configmaps")
    assert in_b["items"] == []  # a path without a cluster goes below the host's: root:b holds none
    assert [path for _, path, _, _ in server.requests] == [
        "/clusters/root:a/api/v1/namespaces/default/configmaps",
        "/clusters/root:b/api/v1/namespaces/default/configmaps"]


@pytest.mark.parametrize("other", ["root:b", "*"])
def test_a_client_of_one_logical_cluster_never_reaches_another(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], other: str
) -> None:
    seed(server, "root:b")
    scoped = rest.Client(client_of("root:a"))
    server.clear_requests()
    with pytest.raises(ConfigurationError, match="scoped to the logical cluster 'root:a'"):
        scoped.request_json("POST", f"/clusters/{other}/api/v1/namespaces/default/configmaps",
                            body={"metadata": {"name": "written"}})
    with pytest.raises(ConfigurationError, match="scoped to the logical cluster 'root:a'"):
        scoped.request_json("DELETE", f"/clusters/{other}/api/v1/namespaces/default/configmaps/app")
    assert server.requests == []  # refused before anything was sent
    assert data_cluster(server.get(CONFIGMAPS, "default", "app", cluster="root:b")) == "root:b"
    # its own cluster, named in the path or not, is reached once
    scoped.request_json("POST", "/clusters/root:a/api/v1/namespaces/default/configmaps",
                        body={"metadata": {"name": "written"}})
    assert server.get(CONFIGMAPS, "default", "written", cluster="root:a")["metadata"]["annotations"] == {
        "kcp.io/cluster": "root:a"}
    assert doubled(server) == []


def test_a_lease_needs_a_client_of_one_logical_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    every = client_of("*")
    server.clear_requests()
    with pytest.raises(ConfigurationError, match="every logical cluster"):
        LeaseLock(every, "default", "ctl", "me")
    with pytest.raises(ConfigurationError, match="every logical cluster"):
        ShardCoordinator(every, "workers", "me")
    assert server.requests == []
    # a client of one logical cluster leads there, and only there
    led = threading.Event()
    elector = LeaderElector(LeaderElectionConfig(
        LeaseLock(client_of("root:a"), "default", "ctl", "me"),
        on_started_leading=lambda ctx: led.set(), release_on_cancel=False))
    with running(elector.run, Context("elector")):
        assert led.wait(TIMEOUT)
    assert server.get(LEASES, "default", "ctl", cluster="root:a")["spec"]["holderIdentity"] == "me"
    with pytest.raises(NotFoundError):
        server.get(LEASES, "default", "ctl", cluster="root:b")


# -- ListWatch.for_resource ---------------------------------------------------------------------------


def test_a_wildcard_host_makes_a_cluster_aware_informer_as_cluster_star_does(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    api_client = client_of("*")
    lw = ListWatch.for_resource(api_client, CONFIGMAPS)
    assert lw.cluster == "*"
    informer = SharedIndexInformer(lw)
    assert informer.cluster_aware
    assert informer.name == "v1/configmaps@*"
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        indexer = informer.get_indexer()
        assert sorted(indexer.list_keys()) == ["root:a|default/app", "root:b|default/app"]
        seed(server, "root:c")  # through the watch: a new object, not root:a's or root:b's modified
        assert wait_for(lambda: len(indexer) == 3, TIMEOUT)
        assert data_cluster(indexer.get_by_key("root:c|default/app")) == "root:c"
        assert [data_cluster(o) for o in indexer.by_index("cluster", "root:b")] == ["root:b"]
        assert [data_cluster(o) for o in indexer.by_index("cluster-and-namespace", "root:a|default")] == [
            "root:a"]
    assert api_client.configuration.host == f"{server.url}/clusters/*"  # the caller's, untouched
    assert doubled(server) == []


@pytest.mark.parametrize("cluster", [None, "root:b"])
def test_a_named_host_addresses_that_cluster_as_cluster_does_and_names_the_informer_after_it(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], cluster: str | None
) -> None:
    seed(server, "root:a", "root:b")
    lw = ListWatch.for_resource(client_of("root:b"), CONFIGMAPS, cluster=cluster)
    assert lw.cluster == "root:b"
    assert [data_cluster(o) for o in lw.list(ListOptions()).items] == ["root:b"]
    informer = SharedIndexInformer(lw)
    assert informer.name == "v1/configmaps@root:b"
    assert not informer.cluster_aware  # one cluster: plain keys
    assert doubled(server) == []


def test_a_wildcard_host_with_cluster_star_sends_the_prefix_once(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    items = ListWatch.for_resource(client_of("*"), CONFIGMAPS, cluster="*").list(ListOptions()).items
    assert sorted(map(data_cluster, items)) == ["root:a", "root:b"]
    assert doubled(server) == []
    assert any(path == "/clusters/*/api/v1/configmaps" for _, path, _, _ in server.requests)


@pytest.mark.parametrize(("host", "cluster"), [
    ("root:b", "root:a"), ("root:b", "*"), ("*", "root:a"),
])
def test_a_cluster_that_contradicts_the_hosts_is_a_configuration_error(
    client_of: Callable[[str | None], Any], host: str, cluster: str
) -> None:
    api_client = client_of(host)
    with pytest.raises(ConfigurationError, match="contradicts the client's host"):
        ListWatch.for_resource(api_client, CONFIGMAPS, cluster=cluster)
    with pytest.raises(ConfigurationError, match="contradicts the client's host"):
        DynamicSharedInformerFactory(api_client, cluster=cluster)
    with pytest.raises(ConfigurationError, match="contradicts the client's host"):
        DiscoveringDynamicSharedInformerFactory(api_client, cluster=cluster)
    with pytest.raises(ConfigurationError, match="contradicts the client's host"):
        CachedDiscoveryClient(api_client, cluster=cluster)
    assert api_client.configuration.host.endswith(f"/clusters/{host}")


# -- DynamicSharedInformerFactory ------------------------------------------------------------------


def test_a_factory_on_a_wildcard_host_is_the_cluster_star_factory(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
    factories: list[DynamicSharedInformerFactory],
) -> None:
    seed(server, "root:a", "root:b")
    factory = DynamicSharedInformerFactory(client_of("*"))
    factories.append(factory)
    configmaps = factory.for_resource(CONFIGMAPS)
    assert configmaps.informer().cluster_aware
    assert configmaps.informer().name == "v1/configmaps@*"
    factory.start(threading.Event())
    assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
    lister = configmaps.lister()
    assert isinstance(lister, GenericClusterLister)
    assert lister.clusters() == ["root:a", "root:b"]
    assert data_cluster(lister.cluster("root:b").by_namespace("default").get("app")) == "root:b"
    assert data_cluster(lister.get("root:a|default/app")) == "root:a"
    assert doubled(server) == []


def test_a_factory_on_a_named_host_names_its_informers_as_cluster_does(
    server: FakeAPIServer, client_of: Callable[[str | None], Any],
    factories: list[DynamicSharedInformerFactory],
) -> None:
    seed(server, "root:a", "root:b")
    factory = DynamicSharedInformerFactory(client_of("root:b"))
    factories.append(factory)
    configmaps = factory.for_resource(CONFIGMAPS)
    assert configmaps.informer().name == "v1/configmaps@root:b"
    assert not configmaps.informer().cluster_aware
    factory.start(threading.Event())
    assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
    assert [data_cluster(o) for o in configmaps.lister().list()] == ["root:b"]
    assert doubled(server) == []


# -- DiscoveringDynamicSharedInformerFactory -------------------------------------------------------


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}}


def test_the_discovering_factory_on_a_wildcard_host_discovers_every_clusters_types(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(client_of("*"), lambda gvr: gvr.group == "example.com")
    with ddsif:
        assert ddsif.wait_ready(TIMEOUT)
        k8s.ApiextensionsV1Api(client_of("root:team")).create_custom_resource_definition(crd(WIDGETS))
        assert wait_for(lambda: WIDGETS in ddsif.served_resources(), TIMEOUT)
        widgets = ddsif.for_resource(WIDGETS)
        assert widgets.informer().cluster_aware
        assert widgets.informer().name == "ddsif-example.com/v1/widgets@*"
        k8s.CustomObjectsApi(client_of("root:team")).create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", widget("w1"))
        lister = widgets.lister()
        assert isinstance(lister, GenericClusterLister)
        assert wait_for(lambda: lister.clusters() == ["root:team"], TIMEOUT)
        assert lister.get("root:team|default/w1")["metadata"]["name"] == "w1"
    assert doubled(server) == []


def test_the_discovering_factory_on_a_named_host_serves_that_clusters_types_only(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    k8s.ApiextensionsV1Api(client_of("root:team")).create_custom_resource_definition(crd(WIDGETS))
    seed(server, "root:team", "root:other")
    ddsif = DiscoveringDynamicSharedInformerFactory(
        client_of("root:team"), lambda gvr: gvr in (WIDGETS, CONFIGMAPS))
    with ddsif:
        assert ddsif.wait_ready(TIMEOUT)
        assert set(ddsif.served_resources()) == {WIDGETS, CONFIGMAPS}
        configmaps = ddsif.for_resource(CONFIGMAPS)
        assert configmaps.informer().name == "ddsif-v1/configmaps@root:team"
        assert wait_for(configmaps.informer().has_synced, TIMEOUT)
        assert [data_cluster(o) for o in configmaps.lister().list()] == ["root:team"]
    assert doubled(server) == []
