"""Cluster event handlers and the adapters that make ordinary handlers of them."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ScriptedSource, cm, running

from kinformer import (
    LOGICAL_CLUSTER_ANNOTATION,
    ClusterEventHandler,
    ClusterEventHandlerFuncs,
    DeletedFinalStateUnknown,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    cluster_aware_key_func,
)
from kinformer.cluster_handlers import ClusterAnnotationHandler, ClusterBoundHandler, cluster_of_notification
from kinformer.testing import wait_for


def in_cluster(cluster: str, name: str, rv: int = 1) -> dict[str, Any]:
    return cm(name, rv, "default", annotations={LOGICAL_CLUSTER_ANNOTATION: cluster})


class Calls(ClusterEventHandler):
    """Records every cluster call as a tuple of the cluster and the objects' names."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_add(self, cluster: str, obj: Any) -> None:
        self.calls.append(("add", cluster, obj["metadata"]["name"]))

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        self.calls.append(("update", cluster, old["metadata"]["name"], new["metadata"]["name"]))

    def on_delete(self, cluster: str, obj: Any) -> None:
        self.calls.append(("delete", cluster, cluster_aware_key_func(obj)))


def test_the_base_handler_ignores_everything() -> None:
    handler = ClusterEventHandler()
    handler.on_add("a", {})
    handler.on_update("a", {}, {})
    handler.on_delete("a", {})
    handler.on_disengaged("a")


def test_funcs_call_what_was_given_and_ignore_the_rest() -> None:
    seen: list[tuple[Any, ...]] = []
    full = ClusterEventHandlerFuncs(
        add_func=lambda c, o: seen.append(("add", c, o)),
        update_func=lambda c, old, new: seen.append(("update", c, old, new)),
        delete_func=lambda c, o: seen.append(("delete", c, o)),
        disengaged_func=lambda c: seen.append(("disengaged", c)))
    full.on_add("a", 1)
    full.on_update("a", 1, 2)
    full.on_delete("a", 2)
    full.on_disengaged("a")
    assert seen == [("add", "a", 1), ("update", "a", 1, 2), ("delete", "a", 2), ("disengaged", "a")]
    empty = ClusterEventHandlerFuncs()
    empty.on_add("a", 1)
    empty.on_disengaged("a")
    assert isinstance(empty, ClusterEventHandler)
    assert repr(ClusterEventHandlerFuncs(add_func=print)) == "<ClusterEventHandlerFuncs add_func>"


def test_the_bound_adapter_gives_every_notification_its_cluster() -> None:
    calls = Calls()
    adapter: ResourceEventHandler = ClusterBoundHandler("member-1", calls)
    adapter.on_add(cm("a"), True)
    adapter.on_update(cm("a"), cm("a", 2))
    adapter.on_delete(DeletedFinalStateUnknown("ns/a", cm("a")))
    assert calls.calls == [("add", "member-1", "a"), ("update", "member-1", "a", "a"),
                           ("delete", "member-1", "ns/a")]


def test_the_annotation_adapter_reads_each_objects_cluster() -> None:
    calls = Calls()
    adapter: ResourceEventHandler = ClusterAnnotationHandler(calls)
    adapter.on_add(in_cluster("root:a", "x"), False)
    adapter.on_add(in_cluster("root:b", "x"), False)
    adapter.on_update(in_cluster("root:b", "x"), in_cluster("root:b", "x", 2))
    adapter.on_delete(in_cluster("root:a", "x"))
    adapter.on_add(cm("plain"), False)
    assert calls.calls == [("add", "root:a", "x"), ("add", "root:b", "x"), ("update", "root:b", "x", "x"),
                           ("delete", "root:a", "root:a|default/x"), ("add", "", "plain")]


@pytest.mark.parametrize(
    ("tombstone", "cluster"),
    [
        (DeletedFinalStateUnknown("root:a|default/x", None), "root:a"),
        (DeletedFinalStateUnknown("default/x", None), ""),
        # an informer of one logical cluster keys plainly: the object names the cluster
        (DeletedFinalStateUnknown("default/x", in_cluster("root:a", "x")), "root:a"),
        (DeletedFinalStateUnknown("a|b|c", in_cluster("root:c", "x")), "root:c"),
        (DeletedFinalStateUnknown("a|b|c", None), ""),
    ],
)
def test_a_tombstone_names_its_cluster_in_its_key(tombstone: Any, cluster: str) -> None:
    assert cluster_of_notification(tombstone) == cluster


def test_adapters_refuse_a_handler_that_is_not_a_cluster_handler() -> None:
    plain = ResourceEventHandlerFuncs()
    with pytest.raises(TypeError, match="not a ClusterEventHandler"):
        ClusterBoundHandler("a", plain)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a ClusterEventHandler"):
        ClusterAnnotationHandler(plain)  # type: ignore[arg-type]


def test_an_informer_over_logical_clusters_tells_a_handler_each_objects_cluster() -> None:
    source = ScriptedSource(in_cluster("root:a", "app-a"), in_cluster("root:b", "app-b"))
    informer = SharedIndexInformer(source.lister_watcher)
    calls = Calls()
    informer.add_event_handler(ClusterAnnotationHandler(calls))
    with running(informer.run):
        assert informer.wait_for_sync(timeout=5)
        source.next_watch().delete(in_cluster("root:b", "app-b", 2))
        assert wait_for(lambda: len(calls.calls) == 3)
    assert calls.calls == [("add", "root:a", "app-a"), ("add", "root:b", "app-b"),
                           ("delete", "root:b", "root:b|default/app-b")]
