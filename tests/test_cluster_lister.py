"""GenericClusterLister: across clusters, and per cluster without ever reading another cluster."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CONFIGMAPS, cm, keys

from kinformer import (
    CLUSTER_AND_NAMESPACE_INDEX,
    CLUSTER_INDEX,
    LOGICAL_CLUSTER_ANNOTATION,
    NAMESPACE_INDEX,
    AmbiguousNameError,
    ConfigurationError,
    GenericClusterLister,
    GenericLister,
    Indexer,
    NotFoundError,
    cluster_and_namespace_index_func,
    cluster_aware_key_func,
    cluster_index_func,
    meta_namespace_index_func,
)

CLUSTER_INDEXES = {CLUSTER_INDEX: cluster_index_func,
                   CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func}


def in_cluster(cluster: str, name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return cm(name, namespace=namespace, annotations={LOGICAL_CLUSTER_ANNOTATION: cluster}, **labels)


class NoScanIndexer(Indexer):
    """A cluster-aware indexer that fails the test on a whole-cache read and records index reads."""

    __slots__ = ("index_reads",)

    def __init__(self) -> None:
        super().__init__(cluster_aware_key_func, CLUSTER_INDEXES)
        self.index_reads: list[tuple[str, str]] = []

    def list(self) -> list[Any]:
        raise AssertionError("a one-cluster read scanned the whole cache")

    def list_keys(self) -> list[str]:
        raise AssertionError("a one-cluster read scanned the whole cache")

    def by_index(self, index_name: str, indexed_value: str) -> list[Any]:
        self.index_reads.append((index_name, indexed_value))
        return super().by_index(index_name, indexed_value)


@pytest.fixture
def logical() -> NoScanIndexer:
    indexer = NoScanIndexer()
    for cluster in ("root:a", "root:b"):
        indexer.add(in_cluster(cluster, "app", app="web"))
        indexer.add(in_cluster(cluster, "db", app="db"))
        indexer.add(in_cluster(cluster, "dns", "kube-system"))
        indexer.add(in_cluster(cluster, "node-" + cluster[-1], ""))
    return indexer


def test_a_cluster_of_one_indexer_reads_only_its_own_index_entries(logical: NoScanIndexer) -> None:
    one = GenericClusterLister(logical, CONFIGMAPS).cluster("root:a")
    assert isinstance(one, GenericLister)
    assert keys(one.list()) == ["default/app", "default/db", "kube-system/dns", "node-a"]
    assert keys(one.list("app=web")) == ["default/app"]
    assert keys(one.by_namespace("default").list()) == ["default/app", "default/db"]
    assert keys(one.by_namespace("default").list("app=db")) == ["default/db"]
    assert logical.index_reads == [
        (CLUSTER_INDEX, "root:a"), (CLUSTER_INDEX, "root:a"),
        (CLUSTER_AND_NAMESPACE_INDEX, "root:a|default"), (CLUSTER_AND_NAMESPACE_INDEX, "root:a|default")]


def test_get_finds_the_object_of_the_cluster_asked_for(logical: NoScanIndexer) -> None:
    lister = GenericClusterLister(logical, CONFIGMAPS)
    for cluster in ("root:a", "root:b"):
        app = lister.cluster(cluster).by_namespace("default").get("app")
        assert app["metadata"]["annotations"][LOGICAL_CLUSTER_ANNOTATION] == cluster
        assert lister.cluster(cluster).get("default/app") is app
    assert lister.cluster("root:a").get("node-a")["metadata"]["name"] == "node-a"
    with pytest.raises(NotFoundError, match=r'configmaps "node-b" not found$'):
        lister.cluster("root:a").get("node-b")
    with pytest.raises(NotFoundError, match=r'configmaps "dns" not found$'):
        lister.cluster("root:a").by_namespace("default").get("dns")


def test_a_cluster_not_held_is_empty(logical: NoScanIndexer) -> None:
    nowhere = GenericClusterLister(logical, CONFIGMAPS).cluster("root:c")
    assert nowhere.list() == []
    assert nowhere.by_namespace("default").list() == []
    with pytest.raises(NotFoundError):
        nowhere.by_namespace("default").get("app")


def test_list_across_clusters_and_the_clusters_held() -> None:
    indexer = Indexer(cluster_aware_key_func, CLUSTER_INDEXES)
    for cluster in ("root:a", "root:b"):
        indexer.add(in_cluster(cluster, "app", app="web"))
        indexer.add(in_cluster(cluster, "db", app="db"))
    lister = GenericClusterLister(indexer, CONFIGMAPS)
    assert len(lister.list()) == 4
    assert sorted(o["metadata"]["annotations"][LOGICAL_CLUSTER_ANNOTATION]
                  for o in lister.list("app=web")) == ["root:a", "root:b"]
    assert lister.clusters() == ["root:a", "root:b"]


def test_objects_without_a_cluster_are_the_cluster_named_empty() -> None:
    indexer = Indexer(cluster_aware_key_func, CLUSTER_INDEXES)
    indexer.add(cm("plain", namespace="default"))
    indexer.add(in_cluster("root:a", "plain"))
    plain = GenericClusterLister(indexer, CONFIGMAPS).cluster("")
    assert keys(plain.list()) == ["default/plain"]
    assert LOGICAL_CLUSTER_ANNOTATION not in plain.by_namespace("default").get("plain")["metadata"].get(
        "annotations", {})


@pytest.mark.parametrize("indexes", [{}, {CLUSTER_INDEX: cluster_index_func},
                                     {NAMESPACE_INDEX: meta_namespace_index_func}])
def test_an_indexer_without_both_cluster_indexes_is_refused(indexes: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="needs the indexes 'cluster' and 'cluster-and-namespace'"):
        GenericClusterLister(Indexer(cluster_aware_key_func, indexes), CONFIGMAPS)


# -- one indexer per member cluster --------------------------------------------------------------


class Untouchable:
    """An indexer of another cluster: any read of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"read {name} of another cluster's indexer")


def member_indexer(*objs: Any) -> Indexer:
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for obj in objs:
        indexer.add(obj)
    return indexer


def test_a_member_cluster_reads_only_its_own_indexer() -> None:
    mine = member_indexer(cm("app", namespace="default", app="web"), cm("dns", namespace="kube-system"))
    lister = GenericClusterLister.from_cluster_indexers(
        {"member-1": mine, "member-2": Untouchable(), "member-3": Untouchable()}, CONFIGMAPS)
    one = lister.cluster("member-1")
    assert keys(one.list()) == ["default/app", "kube-system/dns"]
    assert keys(one.list("app=web")) == ["default/app"]
    assert keys(one.by_namespace("kube-system").list()) == ["kube-system/dns"]
    assert one.by_namespace("default").get("app")["metadata"]["name"] == "app"
    with pytest.raises(NotFoundError):
        one.by_namespace("default").get("dns")


def test_member_clusters_are_listed_together_without_a_merged_copy() -> None:
    one, two = cm("app", namespace="default"), cm("app", namespace="default")
    lister = GenericClusterLister.from_cluster_indexers(
        {"member-1": member_indexer(one), "member-2": member_indexer(two)}, CONFIGMAPS)
    listed = lister.list()
    assert len(listed) == 2
    assert listed[0] is one and listed[1] is two
    assert lister.clusters() == ["member-1", "member-2"]


def test_a_member_lister_follows_clusters_joining_and_leaving() -> None:
    indexers: dict[str, Any] = {}
    lister = GenericClusterLister.from_cluster_indexers(indexers, CONFIGMAPS)
    held = lister.cluster("member-1")
    assert held.list() == []
    with pytest.raises(NotFoundError):
        held.by_namespace("default").get("app")
    indexers["member-1"] = member_indexer(cm("app", namespace="default"))
    assert keys(held.list()) == ["default/app"]
    assert keys(held.by_namespace("default").list()) == ["default/app"]
    assert len(lister.list()) == 1
    del indexers["member-1"]
    assert held.list() == []
    assert held.by_namespace("default").list() == []
    assert lister.list() == []


def test_a_cluster_lister_is_a_generic_lister_across_clusters_keyed_by_cluster() -> None:
    logical = Indexer(cluster_aware_key_func, {**CLUSTER_INDEXES, NAMESPACE_INDEX: meta_namespace_index_func})
    for obj in (in_cluster("root:a", "app"), in_cluster("root:b", "app"),
                in_cluster("root:b", "dns", "kube")):
        logical.add(obj)
    members = GenericClusterLister.from_cluster_indexers(
        {"east": member_indexer(cm("app", namespace="default"), cm("dns", namespace="kube")),
         "west": member_indexer(cm("app", namespace="default", tier="web"))}, CONFIGMAPS)
    for lister, first in ((GenericClusterLister(logical, CONFIGMAPS), "root:a"), (members, "east")):
        assert isinstance(lister, GenericLister)
        assert lister.get(f"{first}|default/app")["metadata"]["name"] == "app"
        for missing in ("nowhere|default/app", "a|b|c", "a|b/c/d"):
            with pytest.raises(NotFoundError):
                lister.get(missing)
        assert len(lister.by_namespace("default").list()) == 2
        assert keys(lister.by_namespace("kube").list()) == ["kube/dns"]
    assert members.get("west|default/app")["metadata"]["labels"] == {"tier": "web"}


# -- items, lookups without a cluster, and each cluster's own keys ------------------------------


def both_kinds() -> list[GenericClusterLister]:
    """``default/app`` in two clusters, ``kube/dns`` and the cluster-scoped ``node`` in one: over
    one cluster-aware indexer (``root:a``, ``root:b``) and over member indexers (``east``, ``west``)."""
    logical = Indexer(cluster_aware_key_func, {**CLUSTER_INDEXES, NAMESPACE_INDEX: meta_namespace_index_func})
    for obj in (in_cluster("root:a", "app", tier="web"), in_cluster("root:b", "app"),
                in_cluster("root:b", "dns", "kube"), in_cluster("root:a", "node", "")):
        logical.add(obj)
    members = GenericClusterLister.from_cluster_indexers(
        {"west": member_indexer(cm("app", namespace="default"), cm("dns", namespace="kube")),
         "east": member_indexer(cm("app", namespace="default", tier="web"), cm("node", namespace=""))},
        CONFIGMAPS)
    return [GenericClusterLister(logical, CONFIGMAPS), members]


def test_items_pair_every_object_with_its_cluster() -> None:
    logical, members = both_kinds()
    for lister, (one, two) in ((logical, ("root:a", "root:b")), (members, ("east", "west"))):
        assert [(c, o["metadata"]["name"]) for c, o in lister.items()] == [
            (one, "app"), (one, "node"), (two, "app"), (two, "dns")]
        assert [(c, o["metadata"]["name"]) for c, o in lister.items("tier=web")] == [(one, "app")]
        assert [(c, o["metadata"]["name"]) for c, o in lister.by_namespace("default").items()] == [
            (one, "app"), (two, "app")]
        assert [c for c, _ in lister.by_namespace("kube").items()] == [two]
    # member objects carry no cluster annotation: only items() tells whose they are
    assert [c for c, o in members.items() if o["metadata"]["name"] == "app"] == ["east", "west"]


def test_a_name_without_a_cluster_is_the_one_clusters_or_ambiguous() -> None:
    logical, members = both_kinds()
    for lister, (one, two) in ((logical, ("root:a", "root:b")), (members, ("east", "west"))):
        named = f'"default/app" is in 2 clusters [(]{one}, {two}[)]'
        with pytest.raises(AmbiguousNameError, match=named) as info:
            lister.by_namespace("default").get("app")
        assert isinstance(info.value, LookupError) and info.value.clusters == [one, two]
        with pytest.raises(AmbiguousNameError, match=named):
            lister.get("default/app")
        assert lister.by_namespace("kube").get("dns") is lister.get(f"{two}|kube/dns")
        assert lister.get("kube/dns") is lister.get(f"{two}|kube/dns")
        assert lister.get("node") is lister.get(f"{one}|node")  # cluster-scoped: a plain name
        with pytest.raises(NotFoundError):
            lister.get("default/db")
        with pytest.raises(NotFoundError):
            lister.by_namespace("kube").get("app")
        with pytest.raises(NotFoundError):
            lister.get("dns")
        with pytest.raises(NotFoundError):
            lister.get("a/b/c")


def test_a_lookup_without_a_cluster_reads_no_clusters_objects(logical: NoScanIndexer) -> None:
    lister = GenericClusterLister(logical, CONFIGMAPS)  # list() and list_keys() fail the test
    with pytest.raises(AmbiguousNameError):
        lister.by_namespace("default").get("app")
    assert lister.get("node-b")["metadata"]["annotations"][LOGICAL_CLUSTER_ANNOTATION] == "root:b"
    assert logical.index_reads == []


def test_a_one_cluster_lister_takes_its_own_cluster_aware_keys_and_no_other() -> None:
    logical, members = both_kinds()
    for lister, (one, two) in ((logical, ("root:a", "root:b")), (members, ("east", "west"))):
        view = lister.cluster(one)
        assert view.get(f"{one}|default/app") is view.get("default/app")
        assert view.get(f"{one}|node") is view.get("node")
        for other in (f"{two}|default/app", "a|b|c", f"{one}|a/b/c"):
            with pytest.raises(NotFoundError):
                view.get(other)
