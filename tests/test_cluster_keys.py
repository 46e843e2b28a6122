"""Cluster-aware keys and the two cluster indexes, in kcp-dev/apimachinery's exact formats."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import cm
from kubernetes import client

from kinformer import (
    ALL_LOGICAL_CLUSTERS,
    CLUSTER_AND_NAMESPACE_INDEX,
    CLUSTER_INDEX,
    LOGICAL_CLUSTER_ANNOTATION,
    NAMESPACE_INDEX,
    ConfigurationError,
    DeletedFinalStateUnknown,
    Indexer,
    InvalidKeyError,
    KeyFuncError,
    check_logical_cluster,
    cluster_and_namespace_index_func,
    cluster_aware_key_func,
    cluster_index_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_cluster_aware_key,
    to_cluster_aware_key,
    with_cluster_indexes,
)
from kinformer.cache.cluster import cluster_and_namespace_index_value, cluster_of, keeping_cluster
from kinformer.cache.store import ExplicitKey


def in_cluster(cluster: str, name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return cm(name, namespace=namespace, annotations={LOGICAL_CLUSTER_ANNOTATION: cluster}, **labels)


def test_the_annotation_is_kcps() -> None:
    assert LOGICAL_CLUSTER_ANNOTATION == "kcp.io/cluster"
    assert (CLUSTER_INDEX, CLUSTER_AND_NAMESPACE_INDEX) == ("cluster", "cluster-and-namespace")


# kcp-dev/apimachinery pkg/cache keyfunc_test.go: the same objects, the same keys
@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (in_cluster("cluster", "name", "namespace"), "cluster|namespace/name"),
        (in_cluster("cluster", "name", ""), "cluster|name"),
        (cm("name", namespace="namespace"), "namespace/name"),
        (cm("name", namespace=""), "name"),
        (ExplicitKey("whatever"), "whatever"),
        (DeletedFinalStateUnknown("whatever", None), "whatever"),
        (in_cluster("root:org:team", "app"), "root:org:team|default/app"),
    ],
)
def test_keys_are_kcps(obj: Any, expected: str) -> None:
    assert cluster_aware_key_func(obj) == expected


def test_an_empty_annotation_names_no_cluster() -> None:
    assert cluster_aware_key_func(in_cluster("", "app")) == "default/app"
    assert cluster_index_func(in_cluster("", "app")) == [""]


def test_the_same_name_in_two_clusters_gives_two_keys() -> None:
    a, b = in_cluster("root:a", "app"), in_cluster("root:b", "app")
    assert meta_namespace_key_func(a) == meta_namespace_key_func(b)
    assert cluster_aware_key_func(a) != cluster_aware_key_func(b)


def test_official_client_models_are_keyed_too() -> None:
    model = client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="app", namespace="default", annotations={LOGICAL_CLUSTER_ANNOTATION: "root:a"}))
    plain = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app", namespace="default"))
    assert cluster_aware_key_func(model) == "root:a|default/app"
    assert cluster_aware_key_func(plain) == "default/app"
    assert cluster_index_func(model) == ["root:a"]
    assert cluster_and_namespace_index_func(model) == ["root:a|default"]


@pytest.mark.parametrize("obj", ["invalid", {"kind": "ConfigMap"}, None])
def test_an_object_without_metadata_has_no_key(obj: Any) -> None:
    with pytest.raises(KeyFuncError, match="object has no meta"):
        cluster_aware_key_func(obj)
    with pytest.raises(KeyFuncError):
        cluster_index_func(obj)
    with pytest.raises(KeyFuncError):
        cluster_and_namespace_index_func(obj)


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        ("clusterName|namespace/name", ("clusterName", "namespace", "name")),
        ("clusterName|name", ("clusterName", "", "name")),
        ("namespace/name", ("", "namespace", "name")),
        ("name", ("", "", "name")),
        ("root:org|ns/", ("root:org", "ns", "")),
    ],
)
def test_split_inverts_the_key(key: str, parts: tuple[str, str, str]) -> None:
    assert split_cluster_aware_key(key) == parts
    assert to_cluster_aware_key(*parts) == key


@pytest.mark.parametrize("key", ["|||", "a|b|c/d", "root:something|//2", "c|a/b/c", "a/b/c"])
def test_split_refuses_what_kcp_refuses(key: str) -> None:
    with pytest.raises(InvalidKeyError, match=f'^unexpected key format: "{key}"$') as raised:
        split_cluster_aware_key(key)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("cluster", ["", "root", "root:org"])
@pytest.mark.parametrize("namespace", ["", "default"])
def test_keys_of_objects_round_trip(cluster: str, namespace: str) -> None:
    obj = in_cluster(cluster, "app", namespace)
    assert split_cluster_aware_key(cluster_aware_key_func(obj)) == (cluster, namespace, "app")


def test_index_values() -> None:
    assert cluster_index_func(in_cluster("root:a", "app")) == ["root:a"]
    assert cluster_and_namespace_index_func(in_cluster("root:a", "app")) == ["root:a|default"]
    assert cluster_and_namespace_index_func(in_cluster("root:a", "node", "")) == ["root:a|"]
    assert cluster_and_namespace_index_func(cm("app", namespace="default")) == ["|default"]
    assert cluster_and_namespace_index_value("root:a", "default") == "root:a|default"


def test_a_malformed_annotation_reads_as_no_cluster() -> None:
    odd = cm("app", namespace="default")
    odd["metadata"]["annotations"] = {LOGICAL_CLUSTER_ANNOTATION: 7}
    assert cluster_of(odd) == ""
    assert cluster_aware_key_func(odd) == "default/app"
    odd["metadata"]["annotations"] = ["not", "a", "map"]
    assert cluster_of(odd) == ""
    assert cluster_aware_key_func(odd) == "default/app"


def test_an_indexer_holds_both_clusters_and_finds_each_through_the_indexes() -> None:
    indexer = Indexer(cluster_aware_key_func, {
        CLUSTER_INDEX: cluster_index_func,
        CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func,
    })
    for cluster in ("root:a", "root:b"):
        indexer.add(in_cluster(cluster, "app"))
        indexer.add(in_cluster(cluster, "other", "kube-system"))
    assert sorted(indexer.list_keys()) == [
        "root:a|default/app", "root:a|kube-system/other", "root:b|default/app", "root:b|kube-system/other"]
    assert sorted(indexer.index_keys(CLUSTER_INDEX, "root:a")) == [
        "root:a|default/app", "root:a|kube-system/other"]
    assert indexer.index_keys(CLUSTER_AND_NAMESPACE_INDEX, "root:b|default") == ["root:b|default/app"]
    indexer.delete(DeletedFinalStateUnknown("root:a|default/app", None))
    assert indexer.index_keys(CLUSTER_AND_NAMESPACE_INDEX, "root:a|default") == []
    assert indexer.get_by_key("root:b|default/app") is not None


@pytest.mark.parametrize("name", ["root", "root:org", "root:org:team-1", "a" * 63, "*"])
def test_kcp_logical_cluster_names_and_the_wildcard_pass(name: str) -> None:
    assert check_logical_cluster(name) == name
    assert ALL_LOGICAL_CLUSTERS == "*"


@pytest.mark.parametrize("name", ["", "Root", "root/org", "root::org", "-root", "root-", "a" * 64, "**",
                                  "root\n", None])
def test_names_outside_kcps_grammar_are_refused(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="not a logical cluster"):
        check_logical_cluster(name)


def test_with_cluster_indexes_adds_both_and_keeps_what_is_given() -> None:
    given = {NAMESPACE_INDEX: meta_namespace_index_func}
    assert with_cluster_indexes(given) == {
        NAMESPACE_INDEX: meta_namespace_index_func, CLUSTER_INDEX: cluster_index_func,
        CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func}
    assert given == {NAMESPACE_INDEX: meta_namespace_index_func}  # a copy

    def mine(obj: Any) -> list[str]:
        return ["x"]

    assert with_cluster_indexes({CLUSTER_INDEX: mine})[CLUSTER_INDEX] is mine
    assert set(with_cluster_indexes(None)) == {CLUSTER_INDEX, CLUSTER_AND_NAMESPACE_INDEX}


def test_keeping_cluster_gives_a_transforms_result_back_its_objects_cluster() -> None:
    def drop(obj: Any) -> Any:
        obj["metadata"]["annotations"] = None
        return obj

    kept = keeping_cluster(drop)
    assert cluster_aware_key_func(kept(in_cluster("root:a", "app"))) == "root:a|default/app"
    relabelled = keeping_cluster(lambda obj: {**obj, "metadata": {**obj["metadata"], "annotations": {
        LOGICAL_CLUSTER_ANNOTATION: "root:b", "x": "y"}}})
    assert relabelled(in_cluster("root:a", "app"))["metadata"]["annotations"] == {
        LOGICAL_CLUSTER_ANNOTATION: "root:a", "x": "y"}
    model = keeping_cluster(lambda obj: client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app")))
    assert cluster_of(model(in_cluster("root:a", "app"))) == "root:a"
    assert keeping_cluster(drop)(cm("plain"))["metadata"]["annotations"] is None  # no cluster to keep
    with pytest.raises(KeyFuncError, match="dropped the logical cluster 'root:a'"):
        keeping_cluster(lambda obj: "packed")(in_cluster("root:a", "app"))
