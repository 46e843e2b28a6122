"""MultiClusterInformerFactory over member clusters that are real servers (kube_fleet), through
the official client over HTTP: keys, handlers told the cluster, unreachable members, engaging,
disengaging, re-engaging and cluster shards."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from _fleet import ClusterRecorder, DrivenProvider, cluster_id, excluding, lists_served
from helpers import CONFIGMAPS, TIMEOUT, SilentServer, client_for, cm, keys, metric_value

from kinformer import (
    ClusterProfileProvider,
    ClusterProvider,
    ClusterStatus,
    ConfigurationError,
    GenericLister,
    KubeconfigContextsProvider,
    KubeconfigSecretProvider,
    MultiClusterInformerFactory,
    NotFoundError,
    ResourceEventHandlerFuncs,
    StaticClusterProvider,
    SyncingClusterProvider,
)
from kinformer.testing import FakeAPIServer, wait_for

Fleet = dict[str, FakeAPIServer]


def seed(kube_fleet: Fleet) -> None:
    """``default/app`` in every member, its data naming the member."""
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))


@contextmanager
def started(factory: MultiClusterInformerFactory) -> Iterator[MultiClusterInformerFactory]:
    stop = threading.Event()
    factory.start(stop)
    try:
        yield factory
    finally:
        factory.shutdown()


def test_the_same_key_in_three_clusters_is_three_objects(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        lister = configmaps.lister()
        assert sorted(o["data"]["cluster"] for o in lister.list()) == ["member-1", "member-2", "member-3"]
        for name in kube_fleet:
            one = lister.cluster(name)
            assert isinstance(one, GenericLister)
            assert one.by_namespace("default").get("app")["data"] == {"cluster": name}
            assert keys(one.list()) == ["default/app"]
        assert lister.clusters() == ["member-1", "member-2", "member-3"]
        with pytest.raises(NotFoundError):
            lister.cluster("member-4").by_namespace("default").get("app")
        assert factory.clusters() == ["member-1", "member-2", "member-3"]
        assert configmaps.cluster_status() == {
            name: ClusterStatus(synced=True, last_error=None, objects=1, state="synced",
                                cluster_id=cluster_id(server))
            for name, server in kube_fleet.items()}


def test_each_members_informer_names_its_cluster_in_threads_and_metrics(
    kube_fleet: Fleet, clients: dict[str, Any], prometheus: Any
) -> None:
    seed(kube_fleet)
    kube_fleet["member-2"].create(CONFIGMAPS, cm("more", None, "default"))
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        threads = {t.name for t in threading.enumerate()}
        for name in kube_fleet:
            subject = f"v1/configmaps@{name}"
            one = configmaps.informer_for(name)
            assert one is not None and one.name == subject
            assert {f"kinformer-informer-{subject}", f"kinformer-reflector-{subject}"} <= threads
            objects = 2 if name == "member-2" else 1
            assert metric_value(prometheus, "kinformer_informer_objects", resource=subject) == objects


def test_members_that_come_and_go_leave_no_series_behind(
    kube_fleet: Fleet, clients: dict[str, Any], prometheus: Any
) -> None:
    """Members named anew each time (ephemeral clusters, logical clusters made and deleted) and
    one member flapping: once they left, none of their informers' series is left in the
    registry, whose size stays bounded."""
    seed(kube_fleet)
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    factory.for_resource(CONFIGMAPS)

    def series() -> int:
        return sum(len(family.samples) for family in prometheus.collect()
                   if family.name.startswith("kinformer_"))

    with started(factory):
        for i in range(10):
            for name in (f"ephemeral-{i}", "flapping"):
                provider.engage(name, clients["member-1"])
                assert wait_for(lambda name=name: metric_value(  # type: ignore[misc]
                    prometheus, "kinformer_informer_synced", resource=f"v1/configmaps@{name}") == 1)
                provider.disengage(name)
            assert series() == 0
        provider.engage("member-2", clients["member-2"])
        assert wait_for(lambda: metric_value(
            prometheus, "kinformer_informer_objects", resource="v1/configmaps@member-2") == 1)
        # counted once the list reached the cache, a moment after the objects gauge reads it
        assert wait_for(lambda: metric_value(prometheus, "kinformer_reflector_lists_total",
                                             resource="v1/configmaps@member-2") == 1)


def test_handlers_are_told_the_cluster_on_one_thread(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    plain: list[tuple[Any, ...]] = []
    configmaps.add_event_handler(recorder)
    configmaps.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: plain.append(("add", obj["data"]["cluster"]))))
    with started(factory):
        assert sorted(recorder.take(3)) == [("add", name, "app") for name in kube_fleet]
        kube_fleet["member-2"].create(CONFIGMAPS, cm("new", None, "default"))
        assert recorder.next() == ("add", "member-2", "new")
        app = kube_fleet["member-1"].get(CONFIGMAPS, "default", "app")
        app["data"] = {"cluster": "member-1", "changed": "yes"}
        kube_fleet["member-1"].update(CONFIGMAPS, app)
        assert recorder.next() == ("update", "member-1", "app")
        kube_fleet["member-3"].delete(CONFIGMAPS, "default", "app")
        assert recorder.next() == ("delete", "member-3", "app")
        assert wait_for(lambda: len(plain) == 3)
        assert sorted(plain) == [("add", name) for name in kube_fleet]
    assert len(recorder.threads) == 1  # one delivery thread, whatever the number of clusters


def test_a_late_handler_first_gets_every_cached_object_of_every_cluster(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        recorder = ClusterRecorder()
        registration = configmaps.add_event_handler(recorder)
        assert sorted(recorder.take(3)) == [("add", name, "app") for name in kube_fleet]
        assert wait_for(registration.has_synced)
        configmaps.remove_event_handler(registration)
        kube_fleet["member-1"].create(CONFIGMAPS, cm("after", None, "default"))
        assert wait_for(lambda: configmaps.lister().cluster("member-1").by_namespace("default")
                        .list() != [] and len(configmaps.lister().list()) == 4)
        assert recorder.drained() == []


def test_a_resource_asked_for_after_start_starts_in_every_engaged_cluster(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        configmaps = factory.for_resource(CONFIGMAPS)
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert len(configmaps.lister().list()) == 3


def test_an_unreachable_member_holds_no_other_back(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    kube_fleet["member-3"].stop()  # connection refused until it is started again
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert sorted(recorder.take(2)) == [("add", "member-1", "app"), ("add", "member-2", "app")]
        status = configmaps.cluster_status()
        assert status["member-1"].synced and status["member-2"].synced
        assert wait_for(lambda: configmaps.cluster_status()["member-3"].last_error is not None)
        assert not configmaps.cluster_status()["member-3"].synced
        assert factory.clusters() == ["member-1", "member-2", "member-3"]
        assert not configmaps.has_synced()
        assert not factory.wait_for_cache_sync(timeout=0.3)
        kube_fleet["member-3"].start()  # it retries with backoff in the background
        assert recorder.next() == ("add", "member-3", "app")
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert configmaps.cluster_status()["member-3"] == ClusterStatus(
            True, None, 1, "synced", cluster_id=cluster_id(kube_fleet["member-3"]))


def test_a_member_that_never_answers_is_engaged_at_once_and_disengaged_promptly(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    silent = SilentServer()
    hung = client_for(f"http://127.0.0.1:{silent.port}")
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    try:
        with started(factory):
            provider.engage("hung", hung)  # returns without waiting for the server
            assert factory.clusters() == ["hung"]
            provider.engage("member-1", clients["member-1"])
            assert recorder.next() == ("add", "member-1", "app")
            assert silent.accepted.wait(TIMEOUT)
            assert not configmaps.has_synced()
            assert configmaps.cluster_status()["member-1"].synced
            provider.disengage("hung")  # its list is cancelled: returns once joined
            assert recorder.next() == ("disengaged", "hung")
            assert factory.clusters() == ["member-1"]
            assert configmaps.has_synced()
    finally:
        hung.close()
        silent.close()


def test_disengaging_drops_the_objects_at_once_without_deletes(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder(probe=lambda cluster: configmaps.lister().cluster(cluster).list())
    configmaps.add_event_handler(recorder)
    with started(factory):
        for name in ("member-1", "member-2"):
            provider.engage(name, clients[name])
        assert sorted(recorder.take(2)) == [("add", "member-1", "app"), ("add", "member-2", "app")]
        informer = configmaps.informer_for("member-1")
        assert informer is not None
        provider.disengage("member-1")
        assert informer.is_stopped()  # stopped and joined before disengage returned
        assert configmaps.informer_for("member-1") is None
        assert configmaps.lister().cluster("member-1").list() == []
        assert keys(configmaps.lister().list()) == ["default/app"]
        assert recorder.next() == ("disengaged", "member-1")
        assert recorder.probed[-1] == []  # the lister no longer had them when the handler ran
        assert "member-1" not in configmaps.cluster_status()
        assert kube_fleet["member-1"].get(CONFIGMAPS, "default", "app")  # nothing was deleted
        kube_fleet["member-2"].create(CONFIGMAPS, cm("later", None, "default"))
        assert recorder.next() == ("add", "member-2", "later")  # no delete came before it


def test_on_disengaged_comes_after_the_clusters_last_notification_and_nothing_after_it(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    kube_fleet["member-1"].bulk_create(CONFIGMAPS, [cm(f"cm-{i}", None, "default") for i in range(50)])
    gate = threading.Event()
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder(gate=gate)
    configmaps.add_event_handler(recorder)
    with started(factory):
        provider.engage("member-1", clients["member-1"])
        assert recorder.entered.wait(TIMEOUT)  # the first add is being delivered; 49 wait
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].synced)
        provider.disengage("member-1")
        gate.set()
        events = recorder.until(("disengaged", "member-1"))
        assert events[0][0] == "add"
        assert len(events) < 50  # what was still buffered was dropped
        provider.engage("member-1", clients["member-1"])
        again = recorder.take(50)
        assert {e[0] for e in again} == {"add"}
        assert recorder.drained() == []


def test_reengaging_touches_no_other_cluster(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        for name in ("member-1", "member-2"):
            provider.engage(name, clients[name])
        recorder.take(2)
        other = configmaps.informer_for("member-1")
        assert other is not None
        # the reflector notes the version once the store took the list, a moment after sync
        assert wait_for(lambda: other.last_sync_resource_version() != "", TIMEOUT)
        version, lists = other.last_sync_resource_version(), lists_served(kube_fleet["member-1"])
        old = configmaps.informer_for("member-2")
        provider.engage("member-2", clients["member-3"])  # new credentials (of another server)
        assert recorder.take(2) == [("disengaged", "member-2"), ("add", "member-2", "app")]
        assert old is not None and old.is_stopped()
        assert configmaps.informer_for("member-2") is not old
        assert configmaps.lister().cluster("member-2").by_namespace("default").get("app")["data"] == {
            "cluster": "member-3"}
        assert configmaps.informer_for("member-1") is other
        assert other.last_sync_resource_version() == version
        assert lists_served(kube_fleet["member-1"]) == lists
        provider.engage("member-2", clients["member-3"])  # the same client again: nothing to do
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert recorder.drained() == []


def test_a_provider_not_synced_keeps_the_informers_unsynced(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    provider = DrivenProvider(synced=False)
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        provider.engage("member-1", clients["member-1"])
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].synced)
        assert not configmaps.has_synced()
        assert not factory.wait_for_cache_sync(timeout=0.2)
        provider.synced = True
        assert configmaps.has_synced()


class NoSyncReport:
    """A provider without has_synced: synced once its run has begun."""

    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients

    def run(self, stop: Any, engage: Any, disengage: Any) -> None:
        stop.wait()


def test_a_provider_without_has_synced_is_synced_once_it_runs(clients: dict[str, Any]) -> None:
    factory = MultiClusterInformerFactory(NoSyncReport(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    assert not configmaps.has_synced()
    assert not factory.wait_for_cache_sync(timeout=0.1)  # not started
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert configmaps.cluster_status() == {}
        assert configmaps.lister().list() == []


def test_has_synced_is_the_typed_optional_half_of_the_provider_protocol(clients: dict[str, Any]) -> None:
    plain = NoSyncReport(clients)
    assert isinstance(plain, ClusterProvider)
    assert not isinstance(plain, SyncingClusterProvider)
    for shipped in (StaticClusterProvider, KubeconfigContextsProvider, KubeconfigSecretProvider,
                    ClusterProfileProvider):
        assert callable(getattr(shipped, "has_synced", None)), shipped  # each is a SyncingClusterProvider
    assert isinstance(StaticClusterProvider(clients), SyncingClusterProvider)


def test_a_cluster_shard_engages_only_its_clusters_and_follows_changes(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    factory.set_cluster_shard(excluding("member-2"))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert factory.clusters() == ["member-1", "member-3"]
        assert sorted(recorder.take(2)) == [("add", "member-1", "app"), ("add", "member-3", "app")]
        kept = configmaps.informer_for("member-1")
        factory.set_cluster_shard(excluding("member-3"))
        assert sorted(recorder.take(2)) == [("add", "member-2", "app"), ("disengaged", "member-3")]
        assert factory.clusters() == ["member-1", "member-2"]
        assert configmaps.informer_for("member-1") is kept
        assert configmaps.lister().cluster("member-3").list() == []
        factory.set_cluster_shard(None)
        assert recorder.next() == ("add", "member-3", "app")
        assert factory.clusters() == ["member-1", "member-2", "member-3"]
        factory.set_cluster_shard(excluding("member-1", "member-2", "member-3"))
        assert sorted(recorder.take(3)) == [("disengaged", n) for n in kube_fleet]
        assert factory.clusters() == []
        assert configmaps.lister().list() == []
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert recorder.drained() == []


def test_shutdown_joins_every_thread_and_tells_no_handler(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    factory.start(threading.Event())
    recorder.take(3)
    informers = [configmaps.informer_for(name) for name in kube_fleet]
    factory.shutdown()
    assert all(i is not None and i.is_stopped() for i in informers)
    assert not any(t.name.startswith(("kinformer-clusterhandler", "kinformer-clusters-"))
                   for t in threading.enumerate())
    assert recorder.drained() == []
    factory.start(threading.Event())  # nothing after shutdown
    assert factory.clusters() == []


def test_a_stop_event_stops_everything(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    seed(kube_fleet)
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(CONFIGMAPS)
    stop = threading.Event()
    factory.start(stop)
    assert factory.wait_for_cache_sync(timeout=TIMEOUT)
    informers = [configmaps.informer_for(name) for name in kube_fleet]
    stop.set()
    assert wait_for(lambda: all(i is not None and i.is_stopped() for i in informers))
    assert factory.clusters() == []
    assert not factory.has_synced() and not configmaps.has_synced()  # not "synced, with nothing"
    assert not factory.wait_for_cache_sync(timeout=TIMEOUT)
    factory.shutdown()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="not a cluster provider"):
        MultiClusterInformerFactory(object())
    with pytest.raises(ConfigurationError, match="profile"):
        MultiClusterInformerFactory(StaticClusterProvider({}), profile="newest")
    with pytest.raises(ConfigurationError, match="default_resync"):
        MultiClusterInformerFactory(StaticClusterProvider({}), default_resync=float("nan"))
    with pytest.raises(ConfigurationError, match="'namespace' index is always there"):
        MultiClusterInformerFactory(StaticClusterProvider({}), indexers={"namespace": lambda o: []})
    with pytest.raises(ConfigurationError, match="non-empty string"):
        StaticClusterProvider({"": object()})
    factory = MultiClusterInformerFactory(StaticClusterProvider({}))
    with pytest.raises(TypeError):
        factory.set_cluster_shard("shardRange(object.metadata.uid, '0x0', '0x1')")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an event handler"):
        factory.for_resource(CONFIGMAPS).add_event_handler(object())


class WrongFirst(DrivenProvider):
    """Engages something that is not an API client first, then goes on as driven."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException] = []

    def run(self, stop: Any, engage: Any, disengage: Any) -> None:
        try:
            engage("wrong", "not a client")
        except ConfigurationError as err:
            self.errors.append(err)
        super().run(stop, engage, disengage)


def test_an_engage_of_something_not_a_client_is_refused_and_the_others_go_on(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    seed(kube_fleet)
    provider = WrongFirst()
    factory = MultiClusterInformerFactory(provider, indexers={"by-data": lambda o: [str(o.get("data"))]})
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        provider.engage("member-1", clients["member-1"])
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert factory.clusters() == ["member-1"]
        informer = configmaps.informer_for("member-1")
        assert informer is not None
        assert informer.get_indexer().index_keys("by-data", "{'cluster': 'member-1'}") == ["default/app"]
    assert len(provider.errors) == 1 and "expected a kubernetes ApiClient" in str(provider.errors[0])


def test_a_namespace_and_a_label_selector_narrow_every_clusters_informers(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("web", None, "default", data={"cluster": name}, app="web"))
        server.create(CONFIGMAPS, cm("db", None, "default", app="db"))
        server.create(CONFIGMAPS, cm("web", None, "kube-system", app="web"))

    def web_only(options: Any) -> None:
        options.label_selector = "app=web"

    factory = MultiClusterInformerFactory(StaticClusterProvider(clients), namespace="default",
                                          tweak_list_options=web_only)
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert sorted(keys(configmaps.lister().list())) == ["default/web"] * 3
        for name, server in kube_fleet.items():  # the server filtered: nothing else was sent
            server.create(CONFIGMAPS, cm("later", None, "default", app="web"))
            assert wait_for(lambda n=name: "default/later" in keys(
                configmaps.lister().cluster(n).list()), TIMEOUT)
            assert configmaps.cluster_status()[name].objects == 2
            queries = [q for m, p, q, _s in server.requests if p.startswith("/api/v1/namespaces/default/")]
            assert queries and all(q.get("labelSelector") == "app=web" for q in queries)


def test_a_disengaged_clusters_informers_are_freed_without_the_cyclic_collector(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    # A stopped informer kept alive by a reference cycle holds every cache out of the collector's
    # frozen generation and makes the next list begin with a full collection of all of them: a
    # stall of every cluster at each re-engage (see kinformer/_gc.py).
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider)
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        provider.engage("member-1", clients["member-1"])
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        stopped = weakref.ref(configmaps.informer_for("member-1"))
        collecting = gc.isenabled()
        gc.disable()
        try:
            provider.disengage("member-1")  # returns once its informers are joined
            assert stopped() is None  # freed by reference counting alone
        finally:
            if collecting:
                gc.enable()
