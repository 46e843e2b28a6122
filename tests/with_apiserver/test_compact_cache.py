"""The compact cache (``compact=True``): objects kept as JSON bytes, decoded afresh on every read.

Through the official client to a FakeAPIServer: every reader (``get``, ``list``, ``by_index``,
listers, each handler) gets an object equal to the cached one and its own, so a handler or
caller that changes what it is handed changes nothing for anyone else; the indexes follow
updates, deletions and relists; the factories and the InformerManager hand ``compact`` on.
"""

from __future__ import annotations

import gc
import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, create_cm, delete_cm, keys, running, write

from kinformer import (
    NAMESPACE_INDEX,
    APIResourceMeta,
    DeletedFinalStateUnknown,
    DynamicSharedInformerFactory,
    GenericLister,
    GroupVersionKind,
    InformerManager,
    ListWatch,
    MultiClusterInformerFactory,
    SharedIndexInformer,
    StaticClusterProvider,
    _threads,
    meta_namespace_index_func,
)
from kinformer.cache.compact_store import CompactIndexer
from kinformer.testing import FakeAPIServer, wait_for
from kinformer.transforms import strip_managed_fields

APP_INDEX = "app"


def app_index(obj: Any) -> list[str]:
    return [obj["metadata"].get("labels", {}).get("app", "")]


def compact_informer(api_client: Any, **kwargs: Any) -> SharedIndexInformer:
    return SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func, APP_INDEX: app_index},
        name="cms", compact=True, **kwargs)


def put_cm(api_client: Any, name: str, app: str, value: str = "v", *, new: bool = False) -> None:
    """Create (``new``) or replace ``default/<name>`` labelled ``app`` with data ``{"k": value}``."""
    body = {"metadata": {"name": name, "labels": {"app": app}}, "data": {"k": value}}
    path = "/api/v1/namespaces/default/configmaps"
    write(api_client, "POST" if new else "PUT", path if new else f"{path}/{name}", body)


# Not kinformer.testing.Recorder: it keeps the objects themselves (their identity, copies) and scribbles.
class Taker:
    """Queues ``(kind, *objects)`` for every callback; with ``vandal``, first scribbles on each
    object it is handed, in place (the bug a compact cache makes harmless), so a call taken
    from the queue has done its scribbling."""

    def __init__(self, vandal: bool = False) -> None:
        self.calls: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.vandal = vandal

    def _touch(self, *objs: Any) -> None:
        if self.vandal:
            for obj in objs:
                target = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
                target["data"] = {"k": "scribbled"}
                target["metadata"]["labels"] = {"app": "scribbled"}

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._touch(obj)
        self.calls.put(("add", obj))

    def on_update(self, old: Any, new: Any) -> None:
        self._touch(old, new)
        self.calls.put(("update", old, new))

    def on_delete(self, obj: Any) -> None:
        self._touch(obj)
        self.calls.put(("delete", obj))

    def next(self) -> tuple[Any, ...]:
        return self.calls.get(timeout=TIMEOUT)


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_handler_changing_what_it_is_handed_changes_neither_the_cache_nor_another_handler(
    api_client: Any, profile: str
) -> None:
    put_cm(api_client, "a", "web", new=True)
    informer = compact_informer(api_client, profile=profile)
    vandal, witness = Taker(vandal=True), Taker()
    informer.add_event_handler(vandal)
    informer.add_event_handler(witness)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert vandal.next()[0] == "add"
        kind, obj = witness.next()
        assert (kind, obj["data"], obj["metadata"]["labels"]) == ("add", {"k": "v"}, {"app": "web"})
        put_cm(api_client, "a", "web", "v2")
        assert vandal.next()[0] == "update"
        kind, old, new = witness.next()
        assert (kind, old["data"], new["data"]) == ("update", {"k": "v"}, {"k": "v2"})
        assert new["metadata"]["labels"] == {"app": "web"}
        indexer = informer.get_indexer()
        assert indexer.get_by_key("default/a")["data"] == {"k": "v2"}
        assert keys(indexer.by_index(APP_INDEX, "web")) == ["default/a"]
        assert indexer.index_keys(APP_INDEX, "scribbled") == []
        delete_cm(api_client, "a")
        assert vandal.next()[0] == "delete"
        kind, gone = witness.next()
        assert (kind, gone["data"]) == ("delete", {"k": "v2"})


def test_every_read_returns_an_equal_object_of_its_own(api_client: Any) -> None:
    put_cm(api_client, "a", "web", new=True)
    put_cm(api_client, "b", "db", new=True)
    informer = compact_informer(api_client)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        indexer = informer.get_indexer()
        lister = GenericLister(indexer, CONFIGMAPS)
        reads = {
            "get_by_key": lambda: [indexer.get_by_key("default/a")],
            "get": lambda: [indexer.get(cm("a", None, "default"))],
            "list": lambda: sorted(indexer.list(), key=lambda o: o["metadata"]["name"]),
            "by_index": lambda: indexer.by_index(APP_INDEX, "web"),
            "index": lambda: indexer.index(NAMESPACE_INDEX, cm("x", None, "default")),
            "lister.get": lambda: [lister.by_namespace("default").get("a")],
            "lister.list": lambda: lister.by_namespace("default").list("app=web"),
            "snapshot": lambda: [informer.get_indexer().snapshot()["default/a"]],
        }
        for name, read in reads.items():
            first, second = read(), read()
            assert first == second and first, name
            assert all(x is not y for x, y in zip(first, second, strict=True)), name
            for obj in first:
                obj["data"]["k"] = "changed"
                obj["metadata"]["labels"]["app"] = "changed"
            assert read() == second, name
        assert indexer.index_keys(APP_INDEX, "changed") == []


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_the_indexes_follow_updates_deletions_and_a_relist(
    apiserver: FakeAPIServer, api_client: Any, profile: str
) -> None:
    for name in ("a", "b", "c"):
        put_cm(api_client, name, "web", new=True)
    informer = compact_informer(api_client, profile=profile)
    taker = Taker()
    informer.add_event_handler(taker)
    indexer = informer.get_indexer()
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        put_cm(api_client, "a", "db")
        assert wait_for(lambda: indexer.index_keys(APP_INDEX, "db") == ["default/a"])
        assert sorted(indexer.index_keys(APP_INDEX, "web")) == ["default/b", "default/c"]
        delete_cm(api_client, "b")
        assert wait_for(lambda: indexer.index_keys(APP_INDEX, "web") == ["default/c"])
        assert indexer.get_by_key("default/b") is None
        while taker.next()[0] != "delete":  # the handler has heard of everything up to b's delete
            pass
        # a relist: the watch drops, its history is gone, and meanwhile c left and d came
        apiserver.compact()
        apiserver.delete(CONFIGMAPS, "default", "c")
        apiserver.create(CONFIGMAPS, cm("d", None, "default", app="web"))
        apiserver.compact()
        apiserver.drop_watches()
        assert wait_for(lambda: sorted(indexer.list_keys()) == ["default/a", "default/d"])
        assert indexer.index_keys(APP_INDEX, "web") == ["default/d"]
        assert sorted(indexer.list_index_func_values(APP_INDEX)) == ["db", "web"]
        seen = [taker.next() for _ in range(2)]
        deleted = next(call[1] for call in seen if call[0] == "delete")
        obj = deleted.obj if isinstance(deleted, DeletedFinalStateUnknown) else deleted
        assert obj["metadata"]["name"] == "c" and obj["metadata"]["labels"] == {"app": "web"}


def test_a_handler_added_late_gets_the_cache_as_objects_of_its_own(api_client: Any) -> None:
    put_cm(api_client, "a", "web", new=True)
    informer = compact_informer(api_client)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        vandal, witness = Taker(vandal=True), Taker()
        informer.add_event_handler(vandal)
        assert vandal.next()[0] == "add"
        informer.add_event_handler(witness)
        assert witness.next()[1]["data"] == {"k": "v"}
        assert informer.get_indexer().get_by_key("default/a")["data"] == {"k": "v"}


def test_the_transform_runs_before_the_object_is_kept(apiserver: FakeAPIServer, api_client: Any) -> None:
    create_cm(api_client, "a")
    informer = compact_informer(api_client)
    informer.set_transform(strip_managed_fields)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        cached = informer.get_indexer().get_by_key("default/a")
    assert apiserver.get(CONFIGMAPS, "default", "a")["metadata"].get("managedFields")
    assert "managedFields" not in cached["metadata"]


class Tracked(dict):  # type: ignore[type-arg]
    """A dict that can be referred to weakly: what the test's transform turns objects into."""


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_once_handlers_are_idle_nothing_holds_the_objects_that_came_over_the_wire(
    api_client: Any, profile: str
) -> None:
    for i in range(20):
        put_cm(api_client, f"cm-{i}", "web", new=True)
    arrived: list[weakref.ref[Tracked]] = []

    def track(obj: Any) -> Tracked:
        tracked = Tracked(obj)
        arrived.append(weakref.ref(tracked))
        return tracked

    informer = compact_informer(api_client, profile=profile)
    informer.set_transform(track)
    taker = Taker()
    registration = informer.add_event_handler(taker)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert wait_for(registration.has_synced, TIMEOUT)
        assert len(arrived) == 20
        assert wait_for(lambda: all(ref() is None for ref in arrived), TIMEOUT)
        assert len(informer.get_indexer().list()) == 20


def test_the_mutation_detector_stays_off_in_a_compact_informer(api_client: Any) -> None:
    create_cm(api_client, "a")
    informer = compact_informer(api_client, detect_mutations=True, mutation_check_period=0.05)
    assert informer.compact
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        informer.get_indexer().get_by_key("default/a")["data"] = {"k": "changed"}
        assert informer.check_mutations() == []
        assert not [t for t in _threads.kinformer_threads() if t.name.startswith("kinformer-mutations-")]


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_the_dynamic_factory_and_the_informer_manager_hand_compact_on(
    api_client: Any, stop: threading.Event
) -> None:
    create_cm(api_client, "a")
    plain = DynamicSharedInformerFactory(api_client).for_resource(CONFIGMAPS).informer()
    assert not plain.compact and not isinstance(plain.get_indexer(), CompactIndexer)
    factory = DynamicSharedInformerFactory(api_client, compact=True)
    informer = factory.for_resource(CONFIGMAPS).informer()
    assert informer.compact and isinstance(informer.get_indexer(), CompactIndexer)
    try:
        factory.start(stop)
        assert informer.wait_for_sync(timeout=TIMEOUT)
        lister = factory.for_resource(CONFIGMAPS).lister()
        lister.by_namespace("default").get("a")["data"] = {"k": "changed"}
        assert lister.by_namespace("default").get("a")["data"] != {"k": "changed"}
    finally:
        factory.shutdown()
    with InformerManager(api_client, 0, stop, compact=True) as manager:
        gvk = GroupVersionKind("", "v1", "ConfigMap")
        manager.add_dynamic_resources([APIResourceMeta(gvk, CONFIGMAPS)], Taker(), True)
        manager.start()
        assert manager.wait_for_cache_sync(timeout=TIMEOUT)
        lister = manager.lister(CONFIGMAPS).by_namespace("default")
        lister.get("a")["data"] = {"k": "changed"}
        assert lister.get("a")["data"] != {"k": "changed"}


def test_the_multi_cluster_factory_hands_compact_on(kube_fleet: dict[str, FakeAPIServer]) -> None:
    clients = {name: server.api_client() for name, server in kube_fleet.items()}
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients), compact=True)
    configmaps = factory.for_resource(CONFIGMAPS)
    try:
        factory.start(threading.Event())
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        for name in kube_fleet:
            member = configmaps.informer_for(name)
            assert member is not None and isinstance(member.get_indexer(), CompactIndexer)
    finally:
        factory.shutdown()
        for api_client in clients.values():
            api_client.close()


def data_index(obj: Any) -> list[str]:
    return [obj.get("data", {}).get("k", "")]


def came_over_the_wire(o: Any) -> bool:
    """Whether ``o`` is a ConfigMap the test's transform marked; other dicts in the process
    (a library's, a plugin's) may hold anything under ``metadata``."""
    if type(o) is not dict or "data" not in o:
        return False
    metadata = o.get("metadata")
    annotations = metadata.get("annotations") if type(metadata) is dict else None
    return type(annotations) is dict and annotations.get("test/over-the-wire") == "yes"


def test_each_listed_object_is_let_go_once_packed_before_any_handler_has_it(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    """A compact informer encodes a list page by page and keeps no decoded object: with its one
    handler held up on the first add, and so every other initial notification still queued,
    no object that came over the wire is alive once the informer has synced; the handler then
    gets every object whole, and the cache is indexed by what the stub leaves out."""
    apiserver.preload(CONFIGMAPS,
                      (cm(f"cm-{i}", None, "default", data={"k": f"v{i % 3}"}) for i in range(30)))

    def mark(obj: Any) -> Any:  # tells the informer's copies apart from the server's
        obj["metadata"].setdefault("annotations", {})["test/over-the-wire"] = "yes"
        return obj

    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
        indexers={"data": data_index}, name="cms", compact=True)
    informer.set_transform(mark)
    release, taker, holding = threading.Event(), Taker(), []

    class HeldUp(Taker):
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            holding.append(obj)  # the handler's own copy of the first object, held meanwhile
            release.wait(TIMEOUT)
            taker.on_add(obj, is_in_initial_list)

    informer.add_event_handler(HeldUp())
    with running(informer.run):
        try:
            assert informer.wait_for_sync(timeout=TIMEOUT)
            gc.unfreeze()  # the informer moved what it had out of the collector's sight
            alive = [o for o in gc.get_objects() if came_over_the_wire(o)
                     and not any(o is held for held in holding)]
        finally:
            release.set()
        assert alive == []
        handed = [taker.next() for _ in range(30)]
        assert sorted(obj["data"]["k"] for _, obj in handed) == ["v0"] * 10 + ["v1"] * 10 + ["v2"] * 10
        indexer = informer.get_indexer()
        assert sorted(indexer.index_keys("data", "v1")) == sorted(f"default/cm-{i}" for i in range(1, 30, 3))
        put_cm(api_client, "cm-1", "web", "v0")
        assert wait_for(lambda: "default/cm-1" in indexer.index_keys("data", "v0"))
        assert indexer.get_by_key("default/cm-1")["metadata"]["annotations"]["test/over-the-wire"] == "yes"
