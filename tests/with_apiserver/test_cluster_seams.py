"""The cluster through the controller, lister and asyncio seams, over logical clusters
(FakeAPIServer(logical_clusters=True), ``/clusters/<name>``) and member clusters (kube_fleet),
through the official client over HTTP.

``default/app`` lives in two clusters everywhere here: a controller wired as the tutorial wires
it queues two keys and its reconciler finds both live objects; a delete in one cluster is that
cluster's delete only; listers pair objects with their clusters and refuse to guess between
them; ``aio.events`` names each event's cluster.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _fleet import DrivenProvider
from helpers import CONFIGMAPS, TIMEOUT, cm, crd, running
from kubernetes import client as k8s

from kinformer import (
    AmbiguousNameError,
    CachedClient,
    ClusterEventHandlerFuncs,
    ConfigurationError,
    Context,
    Controller,
    ControllerBuilder,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    DynamicSharedInformerFactory,
    FilteringResourceEventHandler,
    GenericClusterLister,
    GenericLister,
    GroupVersionResource,
    ListWatch,
    ManagedController,
    MultiClusterInformerFactory,
    NotFoundError,
    Request,
    SharedIndexInformer,
    StaticClusterProvider,
    aio,
    split_cluster_aware_key,
)
from kinformer.testing import FakeAPIServer, wait_for

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
LOGICAL = ("root:a", "root:b")
MEMBERS = ("member-1", "member-2")


def data_cluster(obj: Any) -> str:
    return str(obj["data"]["cluster"])


def seed_logical(server: FakeAPIServer, name: str = "app") -> None:
    """``default/<name>`` in root:a and root:b, its data naming the cluster."""
    for cluster in LOGICAL:
        server.create(CONFIGMAPS, cm(name, None, "default", data={"cluster": cluster}), cluster=cluster)


@pytest.fixture
def members(kube_fleet: dict[str, FakeAPIServer]) -> Iterator[dict[str, Any]]:
    """Clients of two member servers, each holding ``default/app`` whose data names the member."""
    made = {}
    for name in MEMBERS:
        kube_fleet[name].create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
        made[name] = kube_fleet[name].api_client()
    yield made
    for api_client in made.values():
        api_client.close()


class Looks:
    """A reconciler that looks each key up as a reconciler would, ``lister.get(key)``, and
    records ``(key, the found object's data cluster or "gone")``."""

    def __init__(self, lister: GenericLister) -> None:
        self.lister = lister
        self.seen: queue.Queue[tuple[str, str]] = queue.Queue()

    def reconcile(self, key: str) -> None:
        try:
            found = data_cluster(self.lister.get(key))
        except NotFoundError:
            found = "gone"
        self.seen.put((key, found))

    def until(self, wanted: set[tuple[str, str]]) -> list[tuple[str, str]]:
        """What was reconciled until every one of ``wanted`` was."""
        taken: list[tuple[str, str]] = []
        while not wanted <= set(taken):
            taken.append(self.seen.get(timeout=TIMEOUT))
        return taken


def reconciled_apart_and_deleted_alone(
    looks: Looks, clusters: tuple[str, str], delete: Callable[[], None]
) -> None:
    """Both clusters' ``default/app`` reconciled live under two keys; after ``delete`` (in the
    first cluster) that cluster's key reconciles as gone, and the other's stays live."""
    one, two = clusters
    live = {(f"{one}|default/app", one), (f"{two}|default/app", two)}
    assert set(looks.until(live)) == live
    delete()
    after = looks.until({(f"{one}|default/app", "gone")})
    assert set(after) == {(f"{one}|default/app", "gone")}  # not the other cluster's
    assert data_cluster(looks.lister.get(f"{two}|default/app")) == two


# -- a controller wired as the tutorial wires it -------------------------------------------------


def test_a_controller_over_every_logical_cluster_keeps_each_clusters_object_apart(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed_logical(logical_clusters_server)
    factory = DynamicSharedInformerFactory(client_of(None), cluster="*")
    configmaps = factory.for_resource(CONFIGMAPS)
    looks = Looks(configmaps.lister())
    controller = Controller("apps", looks)
    configmaps.informer().add_event_handler(controller.event_handler())
    factory.start(threading.Event())
    try:
        with running(controller.run):
            reconciled_apart_and_deleted_alone(looks, LOGICAL, lambda: k8s.CoreV1Api(
                client_of("root:a")).delete_namespaced_config_map("app", "default"))
    finally:
        factory.shutdown()


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filtered"])
def test_a_controller_over_member_clusters_keeps_each_members_object_apart(
    members: dict[str, Any], filtered: bool
) -> None:
    factory = MultiClusterInformerFactory(StaticClusterProvider(members))
    configmaps = factory.for_resource(CONFIGMAPS)
    looks = Looks(configmaps.lister())
    controller = Controller("apps", looks)
    handler: Any = controller.event_handler()
    if filtered:  # client-go's usual wiring: a filter in front of the controller's handler
        handler = FilteringResourceEventHandler(lambda obj: True, handler)
    configmaps.add_event_handler(handler)
    factory.start(threading.Event())
    try:
        with running(controller.run):
            reconciled_apart_and_deleted_alone(looks, MEMBERS, lambda: k8s.CoreV1Api(
                members["member-1"]).delete_namespaced_config_map("app", "default"))
    finally:
        factory.shutdown()


def test_a_controller_manager_over_every_logical_cluster_reconciles_each_clusters_widget(
    client_of: Callable[[str | None], Any]
) -> None:
    for cluster in LOGICAL:
        k8s.ApiextensionsV1Api(client_of(cluster)).create_custom_resource_definition(crd(WIDGETS))
        k8s.CustomObjectsApi(client_of(cluster)).create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets",
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}})
    ddsif = DiscoveringDynamicSharedInformerFactory(
        client_of(None), lambda gvr: gvr.group == "example.com", cluster="*")
    reconciled: queue.Queue[tuple[str, str, str, str]] = queue.Queue()

    class Widgets:
        def __init__(self, lister: GenericLister) -> None:
            self.lister = lister

        def reconcile(self, key: str) -> None:
            cluster, namespace, name = split_cluster_aware_key(key)
            try:
                self.lister.get(key)
                reconciled.put((cluster, namespace, name, "live"))
            except NotFoundError:
                reconciled.put((cluster, namespace, name, "gone"))

    def create(ctx: Context) -> Callable[[Context], None]:
        widgets = ddsif.for_resource(WIDGETS)
        controller = Controller("widgets", Widgets(widgets.lister()))
        registration = widgets.informer().add_event_handler(controller.event_handler())

        def start(run_ctx: Context) -> None:
            try:
                controller.run(run_ctx)
            finally:
                widgets.informer().remove_event_handler(registration)

        return start

    manager = ControllerManager("logical", ddsif.informer_source(),
                                {"widgets": ManagedController({WIDGETS}, create)})
    ctx = Context("test")
    ddsif.start(ctx)
    try:
        with running(manager.run, ctx):
            assert {reconciled.get(timeout=TIMEOUT), reconciled.get(timeout=TIMEOUT)} == {
                ("root:a", "default", "w1", "live"), ("root:b", "default", "w1", "live")}
            k8s.CustomObjectsApi(client_of("root:b")).delete_namespaced_custom_object(
                "example.com", "v1", "default", "widgets", "w1")
            assert reconciled.get(timeout=TIMEOUT) == ("root:b", "default", "w1", "gone")
    finally:
        ddsif.stop()


# -- listers: (cluster, object) pairs, and no guessing between clusters ---------------------------


def lookups_keep_clusters_apart(lister: Any, clusters: tuple[str, str]) -> None:
    assert isinstance(lister, GenericClusterLister)
    one, two = clusters
    assert [(c, data_cluster(o)) for c, o in lister.items()] == [(one, one), (two, two)]
    with pytest.raises(AmbiguousNameError, match=f"{one}, {two}"):
        lister.by_namespace("default").get("app")
    with pytest.raises(AmbiguousNameError):
        lister.get("default/app")
    for cluster in clusters:
        assert data_cluster(lister.get(f"{cluster}|default/app")) == cluster
    with pytest.raises(NotFoundError):
        lister.get("nowhere|default/app")


def test_a_wildcard_informers_lister_pairs_objects_with_clusters_and_finds_a_name_in_one(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed_logical(logical_clusters_server)
    factory = DynamicSharedInformerFactory(client_of(None), cluster="*")
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
        lister = configmaps.lister()
        lookups_keep_clusters_apart(lister, LOGICAL)
        k8s.CoreV1Api(client_of("root:b")).create_namespaced_config_map(
            "default", {"metadata": {"name": "solo"}, "data": {"cluster": "root:b"}})
        assert wait_for(lambda: len(lister.list()) == 3, TIMEOUT)
        assert data_cluster(lister.by_namespace("default").get("solo")) == "root:b"
        assert data_cluster(lister.get("default/solo")) == "root:b"
    finally:
        factory.shutdown()


def test_a_multi_cluster_lister_pairs_objects_with_members_and_finds_a_name_in_one(
    members: dict[str, Any]
) -> None:
    factory = MultiClusterInformerFactory(StaticClusterProvider(members))
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        lister = configmaps.lister()
        lookups_keep_clusters_apart(lister, MEMBERS)
        assert [o["metadata"].get("annotations") for o in lister.list()] == [None, None]  # nothing else tells
        k8s.CoreV1Api(members["member-2"]).create_namespaced_config_map(
            "default", {"metadata": {"name": "solo"}, "data": {"cluster": "member-2"}})
        assert wait_for(lambda: len(lister.list()) == 3, TIMEOUT)
        assert data_cluster(lister.by_namespace("default").get("solo")) == "member-2"
    finally:
        factory.shutdown()


# -- a relist across logical clusters ---------------------------------------------------------------


def test_a_relist_across_logical_clusters_deletes_only_what_one_cluster_lost(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    server = logical_clusters_server
    seed_logical(server)
    factory = DynamicSharedInformerFactory(client_of("*"))
    client = CachedClient(factory, client_of("*"))
    seen: queue.Queue[tuple[Request, str]] = queue.Queue()

    class Apps:
        def reconcile(self, request: Request) -> None:
            try:
                found = data_cluster(client.get(CONFIGMAPS, request.name, request.namespace,
                                                cluster=request.cluster))
            except NotFoundError:
                found = "gone"
            seen.put((request, found))

    controller = ControllerBuilder("apps", factory).for_resource(CONFIGMAPS).complete(Apps())
    controller.start(threading.Event())
    try:
        live = {(Request("app", "default", cluster), cluster) for cluster in LOGICAL}
        assert {seen.get(timeout=TIMEOUT), seen.get(timeout=TIMEOUT)} == live
        # root:a's app goes while no watch is open, and the watch cannot resume: a relist
        server.forbid("configmaps", "watch")
        server.drop_watches()
        server.delete(CONFIGMAPS, "default", "app", cluster="root:a")
        server.compact()
        server.allow("configmaps", "watch")
        after = [seen.get(timeout=TIMEOUT)]
        while after[-1] != (Request("app", "default", "root:a"), "gone"):
            after.append(seen.get(timeout=TIMEOUT))
        assert (Request("app", "default", "root:b"), "gone") not in after
        lister = factory.for_resource(CONFIGMAPS).lister()
        assert [cluster for cluster, _ in lister.items()] == ["root:b"]
    finally:
        controller.shutdown()
        factory.shutdown()


# -- a filter in front of a cluster handler --------------------------------------------------------


class FilteredCalls:
    """A ClusterEventHandlerFuncs behind a FilteringResourceEventHandler that passes objects
    labelled ``watched=yes``; what it was called with, as ``(call, cluster, data cluster)``."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, Any, Any]] = queue.Queue()
        put = self.calls.put
        self.handler = FilteringResourceEventHandler(
            lambda obj: (obj["metadata"].get("labels") or {}).get("watched") == "yes",
            ClusterEventHandlerFuncs(
                add_func=lambda c, o: put(("add", c, data_cluster(o))),
                update_func=lambda c, old, new: put(("update", c, data_cluster(new))),
                delete_func=lambda c, o: put(("delete", c, data_cluster(o))),
                disengaged_func=lambda c: put(("disengaged", c, None))))

    def next(self) -> tuple[str, Any, Any]:
        return self.calls.get(timeout=TIMEOUT)


def seed_watched(create: Callable[[str, Any], None], clusters: tuple[str, str]) -> None:
    """``default/app`` (labelled watched=yes) and ``default/other`` in each cluster."""
    for cluster in clusters:
        create(cluster, cm("app", None, "default", data={"cluster": cluster}, watched="yes"))
        create(cluster, cm("other", None, "default", data={"cluster": cluster}))


def filtered_apart(calls: FilteredCalls, clusters: tuple[str, str], api: Callable[[str], Any]) -> None:
    """Both clusters' ``app`` added with their cluster; ``other`` never; an update that leaves
    the filter is that cluster's delete."""
    one, two = clusters
    assert sorted([calls.next(), calls.next()]) == [("add", one, one), ("add", two, two)]
    api(two).patch_namespaced_config_map("app", "default", {"metadata": {"labels": {"watched": "no"}}})
    assert calls.next() == ("delete", two, two)
    api(one).delete_namespaced_config_map("app", "default")
    assert calls.next() == ("delete", one, one)


def test_a_filter_in_front_of_a_cluster_handler_on_every_logical_cluster_passes_the_cluster_on(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed_watched(lambda cluster, obj: logical_clusters_server.create(CONFIGMAPS, obj, cluster=cluster),
                 LOGICAL)
    factory = DynamicSharedInformerFactory(client_of("*"))
    calls = FilteredCalls()
    factory.for_resource(CONFIGMAPS).informer().add_event_handler(calls.handler)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT) == {CONFIGMAPS: True}
        filtered_apart(calls, LOGICAL, lambda cluster: k8s.CoreV1Api(client_of(cluster)))
    finally:
        factory.shutdown()
    assert calls.calls.empty()


def test_a_filter_in_front_of_a_cluster_handler_over_members_passes_the_member_on(
    kube_fleet: dict[str, FakeAPIServer], clients: dict[str, Any]
) -> None:
    seed_watched(lambda cluster, obj: kube_fleet[cluster].create(CONFIGMAPS, obj), MEMBERS)
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    calls = FilteredCalls()
    factory.for_resource(CONFIGMAPS).add_event_handler(calls.handler)
    factory.start(threading.Event())
    try:
        for name in MEMBERS:
            provider.engage(name, clients[name])
        filtered_apart(calls, MEMBERS, lambda member: k8s.CoreV1Api(clients[member]))
        provider.disengage("member-1")
        assert calls.next() == ("disengaged", "member-1", None)
    finally:
        factory.shutdown()


def test_a_multi_cluster_lister_refuses_the_cluster_of_a_key_without_one(members: dict[str, Any]) -> None:
    factory = MultiClusterInformerFactory(StaticClusterProvider(members))
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        lister = configmaps.lister()
        cluster, namespace, name = split_cluster_aware_key("default/app")  # a key naming no member
        with pytest.raises(ConfigurationError, match="names no member cluster"):
            lister.cluster(cluster)
        with pytest.raises(AmbiguousNameError):  # the lookup across members says why it cannot answer
            lister.by_namespace(namespace).get(name)
        assert data_cluster(lister.cluster("member-2").by_namespace(namespace).get(name)) == "member-2"
    finally:
        factory.shutdown()


def test_a_member_on_every_logical_cluster_never_merges_its_logical_clusters(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A member whose client is on kcp's /clusters/* holds default/app in root:a and root:b; a
    member on /clusters/root:c holds its own. Names without a logical cluster are refused, not
    guessed, and a controller's per-member handler, whose keys cannot name a member's logical
    cluster, is refused on that member with an error instead of merging the two."""
    server = logical_clusters_server
    seed_logical(server)
    server.create(CONFIGMAPS, cm("solo", None, "default", data={"cluster": "root:a"}), cluster="root:a")
    server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": "root:c"}), cluster="root:c")
    provider = StaticClusterProvider({"all": client_of("*"), "one": client_of("root:c")})
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    looks = Looks(configmaps.lister())
    controller = Controller("apps", looks)
    with caplog.at_level(logging.ERROR, logger="kinformer.clusters.informer"):
        configmaps.add_event_handler(controller.event_handler())
        factory.start(threading.Event())
        try:
            assert factory.wait_for_cache_sync(timeout=TIMEOUT)
            lister = configmaps.lister()
            with pytest.raises(AmbiguousNameError) as across:
                lister.get("default/app")
            assert across.value.clusters == ["all/root:a", "all/root:b", "all/root:c", "one"]
            for lookup in (lambda: lister.get("all|default/app"),
                           lambda: lister.cluster("all").by_namespace("default").get("app")):
                with pytest.raises(AmbiguousNameError) as within:
                    lookup()
                assert within.value.clusters == ["all/root:a", "all/root:b", "all/root:c"]
            assert data_cluster(lister.cluster("all").get("root:b|default/app")) == "root:b"
            assert data_cluster(lister.cluster("all").by_namespace("default").get("solo")) == "root:a"
            assert data_cluster(lister.get("all|default/solo")) == "root:a"
            assert data_cluster(lister.get("one|default/app")) == "root:c"
            with running(controller.run):
                reconciled = looks.until({("one|default/app", "root:c")})
            assert [key for key, _ in reconciled if key.startswith("all|")] == []
        finally:
            factory.shutdown()
    refused = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(refused) == 1 and "member 'all' caches every logical cluster" in refused[0]


# -- aio.events names the cluster -------------------------------------------------------------------


async def events_then_delete(informer: Any, delete: Callable[[], None]) -> list[tuple[str, str, str]]:
    """The two initial ADDED events and, after ``delete`` (run on a thread), the DELETED one, as
    ``(type, cluster, data cluster)``."""
    async with aio.events(informer) as stream:
        async def take() -> tuple[str, str, str]:
            event = await asyncio.wait_for(stream.__anext__(), TIMEOUT)
            return event.type, event.cluster, data_cluster(event.object)

        taken = [await take(), await take()]
        await asyncio.to_thread(delete)
        taken.append(await take())
        return taken


def test_events_of_a_wildcard_informer_name_their_logical_cluster(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed_logical(logical_clusters_server)
    informer = SharedIndexInformer(ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="*"))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        taken = asyncio.run(events_then_delete(informer, lambda: k8s.CoreV1Api(
            client_of("root:a")).delete_namespaced_config_map("app", "default")))
    assert sorted(taken[:2]) == [("ADDED", "root:a", "root:a"), ("ADDED", "root:b", "root:b")]
    assert taken[2] == ("DELETED", "root:a", "root:a")


def test_events_of_a_multi_cluster_informer_name_their_member(members: dict[str, Any]) -> None:
    factory = MultiClusterInformerFactory(StaticClusterProvider(members))
    configmaps = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        taken = asyncio.run(events_then_delete(configmaps, lambda: k8s.CoreV1Api(
            members["member-2"]).delete_namespaced_config_map("app", "default")))
    finally:
        factory.shutdown()
    assert sorted(taken[:2]) == [("ADDED", "member-1", "member-1"), ("ADDED", "member-2", "member-2")]
    assert taken[2] == ("DELETED", "member-2", "member-2")


def test_events_of_a_single_cluster_informer_name_no_cluster(
    logical_clusters_server: FakeAPIServer, client_of: Callable[[str | None], Any]
) -> None:
    seed_logical(logical_clusters_server)
    informer = SharedIndexInformer(ListWatch.for_resource(client_of(None), CONFIGMAPS, cluster="root:b"))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)

        async def first() -> aio.Event:
            async with aio.events(informer) as stream:
                return await asyncio.wait_for(stream.__anext__(), TIMEOUT)

        event = asyncio.run(first())
    assert (event.type, event.cluster, data_cluster(event.object)) == ("ADDED", "", "root:b")


def test_events_refuse_what_is_not_an_informer() -> None:
    async def make() -> None:
        aio.events(object())

    with pytest.raises(TypeError, match="SharedIndexInformer or a MultiClusterInformer"):
        asyncio.run(make())
