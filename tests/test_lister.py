"""Listers over an indexer: label selection, namespaces, and API-server-like NotFound errors."""

from __future__ import annotations

import logging

import pytest
from helpers import CONFIGMAPS, cm, keys

from kinformer import errors
from kinformer.cache import store
from kinformer.cache.labels import parse_selector
from kinformer.cache.lister import GenericLister
from kinformer.gvr import GroupVersionResource

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")


@pytest.fixture
def indexer() -> store.Indexer:
    idx = store.Indexer(
        store.deletion_handling_meta_namespace_key_func,
        {store.NAMESPACE_INDEX: store.meta_namespace_index_func},
    )
    idx.add(cm("web1", namespace="a", app="web", tier="front"))
    idx.add(cm("db1", namespace="a", app="db"))
    idx.add(cm("web2", namespace="b", app="web", tier="back"))
    idx.add(cm("plain", namespace="b"))
    return idx


def test_list_without_selector_returns_every_object(indexer: store.Indexer) -> None:
    lister = GenericLister(indexer, CONFIGMAPS)
    assert keys(lister.list()) == ["a/db1", "a/web1", "b/plain", "b/web2"]
    assert keys(lister.list("")) == keys(lister.list())


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a/web1", "b/web2"]),
        ("app!=web", ["a/db1", "b/plain"]),
        ("app in (db,web),tier", ["a/web1", "b/web2"]),
        ("!app", ["b/plain"]),
        ("app=web,tier notin (back)", ["a/web1"]),
        ("app=nothing", []),
    ],
)
def test_list_filters_by_label_selector(indexer: store.Indexer, selector: str, expected: list[str]) -> None:
    assert keys(GenericLister(indexer, CONFIGMAPS).list(selector)) == expected


def test_list_accepts_a_parsed_selector(indexer: store.Indexer) -> None:
    assert keys(GenericLister(indexer, CONFIGMAPS).list(parse_selector("app=db"))) == ["a/db1"]


def test_an_invalid_selector_raises_a_label_selector_error(indexer: store.Indexer) -> None:
    with pytest.raises(errors.LabelSelectorError):
        GenericLister(indexer, CONFIGMAPS).list("app in (web")


def test_namespace_lister_lists_only_its_namespace(indexer: store.Indexer) -> None:
    lister = GenericLister(indexer, CONFIGMAPS)
    assert keys(lister.by_namespace("b").list()) == ["b/plain", "b/web2"]
    assert keys(lister.by_namespace("b").list("app=web")) == ["b/web2"]
    assert lister.by_namespace("missing").list() == []


def test_namespace_lister_for_all_namespaces_lists_everything(indexer: store.Indexer) -> None:
    assert keys(GenericLister(indexer, CONFIGMAPS).by_namespace("").list("app=web")) == [
        "a/web1",
        "b/web2",
    ]


def test_namespace_lister_without_namespace_index_scans_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    idx = store.Indexer()
    idx.add(cm("x", namespace="a", app="web"))
    idx.add(cm("y", namespace="b", app="web"))
    with caplog.at_level(logging.WARNING, logger="kinformer.cache.lister"):
        found = GenericLister(idx, CONFIGMAPS).by_namespace("a").list("app=web")
    assert keys(found) == ["a/x"]
    assert "scanning the whole cache" in caplog.text


def test_get_returns_the_cached_object_itself(indexer: store.Indexer) -> None:
    lister = GenericLister(indexer, CONFIGMAPS)
    cached = indexer.get_by_key("a/web1")
    assert lister.by_namespace("a").get("web1") is cached
    assert lister.get("a/web1") is cached


def test_get_of_a_cluster_scoped_object_uses_its_bare_name() -> None:
    idx = store.Indexer()
    node = cm("node-1", namespace="")
    idx.add(node)
    assert GenericLister(idx, GroupVersionResource("", "v1", "nodes")).get("node-1") is node


def test_get_of_a_cluster_aware_key_finds_the_object_of_that_cluster_under_its_plain_key() -> None:
    idx = store.Indexer()  # an informer of one logical cluster: plain keys, annotated objects
    app = cm("app", namespace="default", annotations={"kcp.io/cluster": "root:a"})
    idx.add(app)
    lister = GenericLister(idx, CONFIGMAPS)
    assert lister.get("root:a|default/app") is app
    for other in ("root:b|default/app", "root:a|default/db", "a|b|c"):
        with pytest.raises(errors.NotFoundError):
            lister.get(other)


def test_missing_object_raises_not_found_worded_like_the_api_server(indexer: store.Indexer) -> None:
    with pytest.raises(errors.NotFoundError) as info:
        GenericLister(indexer, CONFIGMAPS).by_namespace("a").get("x")
    err = info.value
    assert (err.status, err.reason, err.message) == (404, "NotFound", 'configmaps "x" not found')
    assert err.body["details"] == {"name": "x", "kind": "configmaps"}
    assert isinstance(err, LookupError)


def test_not_found_for_a_custom_resource_names_its_group() -> None:
    with pytest.raises(errors.NotFoundError) as info:
        GenericLister(store.Indexer(), WIDGETS).get("x")
    assert info.value.message == 'widgets.example.com "x" not found'
    assert info.value.body["details"]["group"] == "example.com"


def test_namespace_lister_for_all_namespaces_never_finds_by_name(indexer: store.Indexer) -> None:
    with pytest.raises(errors.NotFoundError):
        GenericLister(indexer, CONFIGMAPS).by_namespace("").get("web1")


def test_listing_an_object_without_metadata_by_label_raises() -> None:
    idx = store.Indexer(lambda o: "k")
    idx.add({"spec": {}})
    lister = GenericLister(idx, CONFIGMAPS)
    assert len(lister.list()) == 1
    with pytest.raises(errors.KeyFuncError):
        lister.list("app=web")
