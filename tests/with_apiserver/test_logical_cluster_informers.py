"""Logical clusters over one endpoint: ``cluster=`` on ListWatch.for_resource and the factories,
the cluster-aware informer over ``/clusters/*``, and a ControllerManager on the discovering
factory's cluster-aware informer source; through the official client over HTTP to
FakeAPIServer(logical_clusters=True)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, running
from kubernetes import client as k8s

from kinformer import (
    CachedDiscoveryClient,
    ClusterEventHandlerFuncs,
    ConfigurationError,
    Context,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    DynamicSharedInformerFactory,
    GenericClusterLister,
    GVREventHandlerFuncs,
    ListOptions,
    ListWatch,
    ManagedController,
    NotFoundError,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)
from kinformer.gvr import GroupVersionResource
from kinformer.testing import FakeAPIServer, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
ANNOTATION = "kcp.io/cluster"


@pytest.fixture
def server(logical_clusters_server: FakeAPIServer) -> FakeAPIServer:
    return logical_clusters_server  # and client_of(cluster): see conftest


def seed(server: FakeAPIServer, *clusters: str) -> None:
    """``default/app`` in each of ``clusters``, its data naming the cluster."""
    for cluster in clusters:
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": cluster}), cluster=cluster)


def list_requests(server: FakeAPIServer) -> list[Any]:
    return [r for r in server.requests if r[1].startswith("/clusters/*/") and "watch" not in r[2]]


def data_cluster(obj: Any) -> str:
    return str(obj["data"]["cluster"])


class Calls:
    """What a ClusterEventHandlerFuncs was called with, in order, as tuples."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.handler = ClusterEventHandlerFuncs(
            add_func=lambda c, o: self.calls.put(("add", c, o["metadata"]["name"])),
            update_func=lambda c, old, new: self.calls.put(("update", c, new["metadata"]["name"])),
            delete_func=lambda c, o: self.calls.put(("delete", c, o["metadata"]["name"])),
        )

    def next(self) -> tuple[Any, ...]:
        return self.calls.get(timeout=TIMEOUT)


# -- ListWatch.for_resource(cluster=) --------------------------------------------------------------


def test_a_named_cluster_lists_only_its_objects_and_the_wildcard_lists_them_all(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    api_client = client_of(None)
    one = ListWatch.for_resource(api_client, CONFIGMAPS, cluster="root:b").list(ListOptions())
    assert [(o["metadata"]["name"], data_cluster(o)) for o in one.items] == [("app", "root:b")]
    everyone = ListWatch.for_resource(api_client, CONFIGMAPS, cluster="*").list(ListOptions())
    assert sorted(data_cluster(o) for o in everyone.items) == ["root:a", "root:b"]
    assert sorted(o["metadata"]["annotations"][ANNOTATION] for o in everyone.items) == ["root:a", "root:b"]
    unprefixed = ListWatch.for_resource(api_client, CONFIGMAPS).list(ListOptions())
    assert unprefixed.items == []  # the root cluster holds none


def test_a_named_cluster_watches_only_its_own_changes(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    informer = SharedIndexInformer(ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="root:a"))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        seed(server, "root:b", "root:a")
        assert wait_for(lambda: len(informer.get_indexer()) == 1, TIMEOUT)
        assert informer.get_indexer().list_keys() == ["default/app"]  # not cluster-aware: one cluster
        assert data_cluster(informer.get_indexer().get_by_key("default/app")) == "root:a"
        assert not informer.cluster_aware


@pytest.mark.parametrize("bad", ["Root", "root/a", "", "a:", ":a", "root\n", "-a", "root:org/x", 7])
def test_a_cluster_name_outside_kcps_grammar_is_a_configuration_error(
    client_of: Callable[[str | None], Any], bad: Any
) -> None:
    api_client = client_of(None)
    with pytest.raises(ConfigurationError, match="not a logical cluster"):
        ListWatch.for_resource(api_client, CONFIGMAPS, cluster=bad)
    with pytest.raises(ConfigurationError, match="not a logical cluster"):
        DynamicSharedInformerFactory(api_client, cluster=bad)
    with pytest.raises(ConfigurationError, match="not a logical cluster"):
        DiscoveringDynamicSharedInformerFactory(api_client, cluster=bad)


# -- the cluster-aware informer --------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_the_same_key_in_two_logical_clusters_is_two_objects_of_one_informer(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], profile: str
) -> None:
    seed(server, "root:a", "root:b")
    informer = SharedIndexInformer(
        ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="*"), profile=profile)
    assert informer.cluster_aware
    calls = Calls()
    informer.add_event_handler(calls.handler)
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        indexer = informer.get_indexer()
        assert sorted(indexer.list_keys()) == ["root:a|default/app", "root:b|default/app"]
        lists = len(list_requests(server))
        server.create(CONFIGMAPS, cm("other", None, "default"), cluster="root:a")  # history to compact
        server.fail_next(status=410, verb="watch", resource="configmaps")
        server.drop_watches()  # the watch resumes and is told 410 Gone: a relist
        assert wait_for(lambda: len(list_requests(server)) > lists, TIMEOUT)
        seed(server, "root:c")  # through the watch, after the relist
        assert wait_for(lambda: len(indexer) == 4, TIMEOUT)
        received: list[tuple[Any, ...]] = []
        while ("add", "root:c", "app") not in received:
            received.append(calls.next())
        assert sorted(c for c in received if c[0] == "add") == [
            ("add", "root:a", "app"), ("add", "root:a", "other"), ("add", "root:b", "app"),
            ("add", "root:c", "app")]
        assert [c for c in received if c[0] == "delete"] == []  # the relist deleted nothing
        assert data_cluster(indexer.get_by_key("root:c|default/app")) == "root:c"
        assert [data_cluster(o) for o in indexer.by_index("cluster", "root:b")] == ["root:b"]
        in_a = indexer.by_index("cluster-and-namespace", "root:a|default")
        assert sorted(o["metadata"]["name"] for o in in_a) == ["app", "other"]


def test_a_wildcard_factorys_lister_serves_each_cluster_and_handlers_hear_which(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    factory = DynamicSharedInformerFactory(client_of(None), cluster="*")
    configmaps = factory.for_resource(CONFIGMAPS)
    calls = Calls()
    plain: queue.Queue[tuple[Any, ...]] = queue.Queue()
    configmaps.informer().add_event_handler(calls.handler)
    configmaps.informer().add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: plain.put((data_cluster(obj), obj["metadata"]["name"]))))
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
        lister = configmaps.lister()
        assert isinstance(lister, GenericClusterLister)
        assert lister.clusters() == ["root:a", "root:b"]
        assert data_cluster(lister.cluster("root:b").by_namespace("default").get("app")) == "root:b"
        assert data_cluster(lister.get("root:a|default/app")) == "root:a"
        assert sorted(map(data_cluster, lister.by_namespace("default").list())) == ["root:a", "root:b"]
        with pytest.raises(NotFoundError):
            lister.cluster("root:c").by_namespace("default").get("app")
        assert sorted([calls.next(), calls.next()]) == [("add", "root:a", "app"), ("add", "root:b", "app")]
        assert sorted([plain.get(timeout=TIMEOUT), plain.get(timeout=TIMEOUT)]) == [
            ("root:a", "app"), ("root:b", "app")]  # a plain handler is called as usual

        core_b = k8s.CoreV1Api(client_of("root:b"))
        core_b.patch_namespaced_config_map("app", "default", {"data": {"cluster": "root:b", "v": "2"}})
        assert calls.next() == ("update", "root:b", "app")
        k8s.CoreV1Api(client_of("root:a")).delete_namespaced_config_map("app", "default")
        assert calls.next() == ("delete", "root:a", "app")
        assert wait_for(lambda: lister.clusters() == ["root:b"], TIMEOUT)
        assert lister.cluster("root:a").list() == []
    finally:
        factory.shutdown()


def test_a_cluster_handler_on_a_single_cluster_informer_is_told_the_annotated_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:org")
    factory = DynamicSharedInformerFactory(client_of(None), cluster="root:org")
    configmaps = factory.for_resource(CONFIGMAPS)
    calls = Calls()
    configmaps.informer().add_event_handler(calls.handler)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
        assert calls.next() == ("add", "root:org", "app")
        assert not isinstance(configmaps.lister(), GenericClusterLister)
        assert data_cluster(configmaps.lister().by_namespace("default").get("app")) == "root:org"
    finally:
        factory.shutdown()


# -- discovery and the ControllerManager -----------------------------------------------------------


def test_wildcard_discovery_finds_a_crd_of_any_logical_cluster(
    client_of: Callable[[str | None], Any]
) -> None:
    k8s.ApiextensionsV1Api(client_of("root:b")).create_custom_resource_definition(crd(WIDGETS))
    def served(cluster: str | None) -> bool:
        return WIDGETS in CachedDiscoveryClient(client_of(None), cluster=cluster).server_resources().resources

    assert served("*") and served("root:b")
    assert not served("root:c") and not served(None)


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}}


def test_a_controller_manager_follows_a_crd_of_one_logical_cluster_through_the_wildcard_factory(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    started: queue.Queue[Context] = queue.Queue()

    def create(ctx: Context) -> Callable[[Context], None]:
        started.put(ctx)
        return lambda run_ctx: run_ctx.wait()

    ddsif = DiscoveringDynamicSharedInformerFactory(
        client_of(None), lambda gvr: gvr.group == "example.com", cluster="*")
    manager = ControllerManager("logical", ddsif.informer_source(),
                                {"widgets": ManagedController({WIDGETS}, create)})
    ctx = Context("test")
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    try:
        assert ddsif.wait_ready(TIMEOUT)
        assert manager.running_controllers() == set()
        extensions = k8s.ApiextensionsV1Api(client_of("root:team"))
        extensions.create_custom_resource_definition(crd(WIDGETS))
        first = started.get(timeout=TIMEOUT)
        assert manager.running_controllers() == {"widgets"}

        widgets = ddsif.for_resource(WIDGETS)
        assert widgets.informer().cluster_aware
        k8s.CustomObjectsApi(client_of("root:team")).create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", widget("w1"))
        lister = widgets.lister()
        assert isinstance(lister, GenericClusterLister)
        assert wait_for(lambda: lister.clusters() == ["root:team"], TIMEOUT)
        assert lister.cluster("root:team").by_namespace("default").get("w1")["metadata"]["name"] == "w1"

        extensions.delete_custom_resource_definition(WIDGETS.group_resource)
        assert first.wait(TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
        assert widgets.informer().is_stopped()
    finally:
        ctx.cancel()
        runner.join(TIMEOUT)
        ddsif.stop()
    assert not runner.is_alive()


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_key_func_keys_the_cache_and_its_fifo_of_any_informer(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], profile: str
) -> None:
    seed(server, "root:a", "root:b")

    def by_uid(obj: Any) -> str:
        return str(obj["metadata"]["uid"])

    informer = SharedIndexInformer(
        ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="*"), key_func=by_uid, profile=profile)
    uids = sorted(o["metadata"]["uid"] for o in server.list_objects(CONFIGMAPS, cluster="*"))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert sorted(informer.get_indexer().list_keys()) == uids
        assert sorted(informer.get_indexer().list_index_func_values("cluster")) == ["root:a", "root:b"]

        # a deletion the watch missed reaches the cache as a tombstone of the relist
        server.fail_next(status=410, verb="watch", resource="configmaps")
        server.set_delay(0.5, verb="list")  # the delete lands before the relist reads
        server.drop_watches()
        gone = server.delete(CONFIGMAPS, "default", "app", cluster="root:a")
        server.clear_faults()
        assert wait_for(lambda: informer.get_indexer().list_keys() == [
            o for o in uids if o != gone["metadata"]["uid"]], TIMEOUT)


@pytest.mark.parametrize("key_func", [meta_namespace_key_func, deletion_handling_meta_namespace_key_func])
def test_a_namespace_name_key_func_across_logical_clusters_is_refused(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], key_func: Any
) -> None:
    seed(server, "root:a", "root:b")
    for client, cluster in ((client_of(None), "*"), (client_of("*"), None)):
        with pytest.raises(ConfigurationError, match=f"{key_func.__name__} keys by namespace/name"):
            SharedIndexInformer(ListWatch.for_resource(client, CONFIGMAPS, cluster=cluster),
                                key_func=key_func)
    # over one logical cluster it keys as asked: one default/app there
    informer = SharedIndexInformer(ListWatch.for_resource(client_of("root:a"), CONFIGMAPS), key_func=key_func)
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert informer.get_indexer().list_keys() == ["default/app"]


def test_informers_of_one_resource_in_two_logical_clusters_are_named_apart(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    factories = {cluster: DynamicSharedInformerFactory(client_of(None), cluster=cluster)
                 for cluster in ("root:a", "root:b", "*")}
    stop = threading.Event()
    try:
        for made in factories.values():
            made.for_resource(CONFIGMAPS)
            made.start(stop)
            assert made.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
        threads = {t.name for t in threading.enumerate()}
        for cluster, made in factories.items():
            subject = f"v1/configmaps@{cluster}"
            assert made.for_resource(CONFIGMAPS).informer().name == subject
            assert {f"kinformer-informer-{subject}", f"kinformer-reflector-{subject}"} <= threads
        informer = SharedIndexInformer(ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="root:a"))
        assert informer.name == "v1/configmaps@root:a"
    finally:
        for made in factories.values():
            made.shutdown()


GADGETS = GroupVersionResource("example.com", "v1", "gadgets")


def test_a_controller_stays_up_while_any_logical_cluster_still_serves_its_type(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    started: queue.Queue[Context] = queue.Queue()

    def create(ctx: Context) -> Callable[[Context], None]:
        started.put(ctx)
        return lambda run_ctx: run_ctx.wait()

    team, other = (k8s.ApiextensionsV1Api(client_of(c)) for c in ("root:team", "root:other"))
    team.create_custom_resource_definition(crd(WIDGETS))
    other.create_custom_resource_definition(crd(WIDGETS))
    ddsif = DiscoveringDynamicSharedInformerFactory(
        client_of(None), lambda gvr: gvr.group == "example.com", cluster="*")
    manager = ControllerManager("logical", ddsif.informer_source(),
                                {"widgets": ManagedController({WIDGETS}, create)})
    ctx = Context("test")
    ddsif.start(ctx)
    runner = threading.Thread(target=manager.start, args=(ctx,), name="test-controller-manager")
    runner.start()
    try:
        controller_ctx = started.get(timeout=TIMEOUT)
        widgets = ddsif.for_resource(WIDGETS).informer()

        team.delete_custom_resource_definition(WIDGETS.group_resource)
        team.create_custom_resource_definition(crd(GADGETS))  # a later pass: it starts gadgets
        assert wait_for(lambda: GADGETS in ddsif.informers()[0], TIMEOUT)
        assert manager.running_controllers() == {"widgets"}  # root:other still serves widgets
        assert not controller_ctx.cancelled() and not widgets.is_stopped()

        other.delete_custom_resource_definition(WIDGETS.group_resource)
        assert controller_ctx.wait(TIMEOUT)
        assert wait_for(lambda: manager.running_controllers() == set(), TIMEOUT)
        assert widgets.is_stopped()
    finally:
        ctx.cancel()
        runner.join(TIMEOUT)
        ddsif.stop()
    assert not runner.is_alive()


@pytest.mark.usefixtures("kept_as_json")  # the form a listed object's JSON is kept in as sent
def test_a_compact_wildcard_informer_keeps_each_clusters_own_json_cut_from_the_list(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinformer import _json

    for cluster in ("root:a", "root:b"):
        for i in range(8):
            server.create(CONFIGMAPS, cm(f"app-{i}", None, "default", data={"cluster": cluster}),
                          cluster=cluster)
    monkeypatch.setattr(_json, "CHUNK_BYTES", 512)  # a chunk of a few objects: cut in the body
    encode = _json.dumps_to_keep
    encoded: list[Any] = []
    monkeypatch.setattr(_json, "dumps_to_keep",
                        lambda obj, *prefix: encoded.append(obj) or encode(obj, *prefix))
    informer = SharedIndexInformer(
        ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="*"), compact=True)
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        indexer = informer.get_indexer()
        assert len(indexer) == 16 and len(encoded) < 8  # most kept as the server sent them
        for cluster in ("root:a", "root:b"):
            for i in range(8):
                obj = indexer.get_by_key(f"{cluster}|default/app-{i}")
                assert obj is not None and data_cluster(obj) == cluster
                assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"
            assert sorted(o["metadata"]["name"] for o in indexer.by_index("cluster", cluster)) == [
                f"app-{i}" for i in range(8)]


def drop_annotations(obj: Any) -> Any:
    """A memory-saving transform: every annotation goes, as nothing here reads them."""
    obj["metadata"].pop("annotations", None)
    return obj


@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_a_transform_dropping_annotations_keeps_each_objects_logical_cluster(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], compact: bool
) -> None:
    seed(server, "root:a", "root:b")
    factory = DynamicSharedInformerFactory(client_of("*"), compact=compact)
    configmaps = factory.for_resource(CONFIGMAPS)
    informer = configmaps.informer()
    informer.set_transform(drop_annotations)
    calls = Calls()
    informer.add_event_handler(calls.handler)
    factory.start(threading.Event())
    try:
        assert all(factory.wait_for_cache_sync(timeout=TIMEOUT).values())
        assert sorted([calls.next(), calls.next()]) == [("add", "root:a", "app"), ("add", "root:b", "app")]
        indexer = informer.get_indexer()
        assert sorted(indexer.list_keys()) == ["root:a|default/app", "root:b|default/app"]
        lister = configmaps.lister()
        assert isinstance(lister, GenericClusterLister) and lister.clusters() == ["root:a", "root:b"]
        assert data_cluster(lister.cluster("root:b").by_namespace("default").get("app")) == "root:b"
        k8s.CoreV1Api(client_of("root:a")).delete_namespaced_config_map("app", "default")
        assert calls.next() == ("delete", "root:a", "app")
        assert wait_for(lambda: indexer.list_keys() == ["root:b|default/app"], TIMEOUT)
    finally:
        factory.shutdown()


def test_a_transform_dropping_annotations_on_one_logical_cluster_still_names_it(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    informer = SharedIndexInformer(ListWatch.for_resource(client_of("root:a"), CONFIGMAPS))
    informer.set_transform(drop_annotations)
    calls = Calls()
    informer.add_event_handler(calls.handler)
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert calls.next() == ("add", "root:a", "app")  # the cluster a handler is told


def test_a_watch_list_across_logical_clusters_keeps_each_clusters_object(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed(server, "root:a", "root:b")
    factory = DynamicSharedInformerFactory(client_of("*"), use_watch_list=True)
    informer = factory.for_resource(CONFIGMAPS).informer()
    calls = Calls()
    informer.add_event_handler(calls.handler)
    factory.start(threading.Event())
    try:
        assert all(factory.wait_for_cache_sync(timeout=TIMEOUT).values())
        assert sorted(informer.get_indexer().list_keys()) == ["root:a|default/app", "root:b|default/app"]
        assert sorted([calls.next(), calls.next()]) == [("add", "root:a", "app"), ("add", "root:b", "app")]
        assert list_requests(server) == []  # streamed through the watch, not listed
        seed(server, "root:c")
        assert calls.next() == ("add", "root:c", "app")
        assert data_cluster(factory.for_resource(CONFIGMAPS).lister().get("root:a|default/app")) == "root:a"
    finally:
        factory.shutdown()


def test_the_wildcard_discovering_factory_refuses_a_cluster_handler_and_names_clusters_to_its_own(
    server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    ddsif = DiscoveringDynamicSharedInformerFactory(
        client_of("*"), lambda gvr: gvr == CONFIGMAPS, cluster="*")
    calls = Calls()
    with pytest.raises(TypeError, match="ClusterEventHandler"):  # it would be told the type as cluster
        ddsif.add_event_handler(calls.handler)
    heard: queue.Queue[tuple[GroupVersionResource, str]] = queue.Queue()
    ddsif.add_event_handler(GVREventHandlerFuncs(
        add_func=lambda gvr, obj: heard.put((gvr, obj["metadata"]["annotations"][ANNOTATION]))))
    ctx = Context("test")
    ddsif.start(ctx)
    try:
        assert ddsif.wait_ready(TIMEOUT)
        assert ddsif.for_resource(CONFIGMAPS).informer().wait_for_sync(TIMEOUT)
        seed(server, "root:a", "root:b")
        assert sorted([heard.get(timeout=TIMEOUT), heard.get(timeout=TIMEOUT)]) == [
            (CONFIGMAPS, "root:a"), (CONFIGMAPS, "root:b")]
    finally:
        ctx.cancel()
        ddsif.stop()
