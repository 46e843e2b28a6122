"""CompactIndexer: objects kept as bytes (JSON or marshal's form, each in turn), indexed once on the
way in, decoded on every read."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, cm, keys

from kinformer import (
    CLUSTER_AND_NAMESPACE_INDEX,
    CLUSTER_INDEX,
    LOGICAL_CLUSTER_ANNOTATION,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    GenericClusterLister,
    IndexerConflictError,
    IndexerError,
    KeyFuncError,
    cluster_and_namespace_index_func,
    cluster_aware_key_func,
    cluster_index_func,
    meta_namespace_index_func,
)
from kinformer.cache import packed
from kinformer.cache.compact_store import CompactIndexer, FreshObjects, fresh
from kinformer.cache.thread_safe_store import NOT_APPLIED
from kinformer.testing import Recorder

pytestmark = pytest.mark.usefixtures("kept_as")


def by_app(obj: Any) -> list[str]:
    return [obj["metadata"].get("labels", {}).get("app", "")]


def by_every_label(obj: Any) -> list[str]:
    return sorted(f"{k}={v}" for k, v in obj["metadata"].get("labels", {}).items())


def new_indexer() -> CompactIndexer:
    return CompactIndexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "app": by_app})


def test_an_object_is_kept_as_its_bytes_and_every_read_decodes_a_new_copy() -> None:
    indexer = new_indexer()
    obj = cm("a", 1, app="web")
    indexer.add(obj)
    obj["data"] = {"changed": "after add"}  # what was handed in is no longer the cache's
    first = indexer.get_by_key("ns/a")
    assert first == cm("a", 1, app="web") and first is not indexer.get_by_key("ns/a")
    first["metadata"]["labels"]["app"] = "db"
    assert indexer.by_index("app", "web") == [cm("a", 1, app="web")]
    assert indexer.index_keys("app", "db") == []
    assert indexer.get(cm("a", None)) == cm("a", 1, app="web")
    assert isinstance(indexer._items["ns/a"], bytes)


def test_an_update_moves_the_key_between_index_values_and_a_delete_takes_it_out() -> None:
    indexer = new_indexer()
    indexer.add(cm("a", 1, app="web"))
    indexer.add(cm("b", 1, app="web"))
    indexer.update(cm("a", 2, app="db"))
    assert indexer.index_keys("app", "web") == ["ns/b"]
    assert indexer.by_index("app", "db") == [cm("a", 2, app="db")]
    indexer.update(cm("b", 2, app="web"))  # the same value: the new bytes are what it serves
    assert indexer.by_index("app", "web") == [cm("b", 2, app="web")]
    indexer.delete(cm("b", 3))
    assert indexer.list_index_func_values("app") == ["db"]
    assert indexer.get_by_key("ns/b") is None and len(indexer) == 1
    assert indexer.last_store_sync_resource_version() == "3"
    indexer.delete(cm("missing", 4))  # a no-op
    assert keys(indexer.list()) == ["ns/a"]


def test_an_object_with_several_or_no_index_values() -> None:
    indexer = CompactIndexer(indexers={"labels": by_every_label})
    indexer.add(cm("a", 1, app="web", tier="front"))
    indexer.add(cm("b", 1))
    assert indexer.index_keys("labels", "tier=front") == ["ns/a"]
    assert keys(indexer.index("labels", cm("x", 1, app="web", tier="back"))) == ["ns/a"]
    indexer.update(cm("a", 2, app="api"))
    assert sorted(indexer.list_index_func_values("labels")) == ["app=api"]
    assert keys(indexer.list()) == ["ns/a", "ns/b"]


def test_a_key_that_loses_its_index_values_and_gets_them_back_is_indexed_anew() -> None:
    def app_if_any(obj: Any) -> list[str]:
        app = obj["metadata"].get("labels", {}).get("app")
        return [app] if app else []

    indexer = CompactIndexer(indexers={"app": app_if_any, "labels": by_every_label})
    for rv, labels in enumerate(({"app": "web"}, {}, {"app": "web", "tier": "a"}, {"tier": "a"}, {})):
        indexer.update(cm("a", rv, **labels))
        expected = {f"{k}={v}": ["ns/a"] for k, v in labels.items()}
        assert {v: indexer.index_keys("labels", v)
                for v in indexer.list_index_func_values("labels")} == expected
        assert indexer.list_index_func_values("app") == ([labels["app"]] if "app" in labels else [])
    indexer.update(cm("a", 9, app="db"))
    assert indexer.by_index("app", "db") == [cm("a", 9, app="db")]
    indexer.delete(cm("a", 10))
    assert indexer.list_index_func_values("app") == indexer.list_index_func_values("labels") == []


def test_each_index_value_is_kept_as_one_string_and_values_gone_are_forgotten() -> None:
    indexer = CompactIndexer(indexers={"uid": lambda obj: [obj["data"]["uid"]], "app": by_app})
    for i in range(300):
        indexer.add(cm(f"a{i}", 1, data={"uid": f"u{i}"}, app="".join(("w", "eb"))))
    kept = indexer._key_values
    assert len({id(v) for v in kept["app"].values()}) == 1  # one string for 300 keys
    for i in range(299):
        indexer.delete(cm(f"a{i}", 2))
    indexer.add(cm("b", 1, data={"uid": "".join(("u", "299"))}, app="web"))
    assert kept["uid"]["ns/b"] is kept["uid"]["ns/a299"]
    assert kept["app"]["ns/b"] is kept["app"]["ns/a299"]
    indexer.add(cm("c", 1, data={"uid": "new"}))  # a new value: those gone are forgotten
    assert len(indexer._values) <= 2 * 4 + 64  # 299 uids came and went; 4 values live


def test_an_unknown_index_and_a_key_failure_raise_typed_errors() -> None:
    indexer = new_indexer()
    with pytest.raises(IndexerError):
        indexer.by_index("nope", "x")
    with pytest.raises(IndexerError):
        indexer.index_keys("nope", "x")
    with pytest.raises(IndexerError):
        indexer.index("nope", cm("a"))
    assert indexer.list_index_func_values("nope") == []
    with pytest.raises(KeyFuncError):
        indexer.add({"no": "metadata"})
    assert len(indexer) == 0


def test_an_object_that_is_not_json_is_refused_and_changes_nothing() -> None:
    indexer = new_indexer()
    indexer.add(cm("a", 1))
    bad = cm("a", 2, data={"k": object()})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        indexer.add(bad)
    assert indexer.get_by_key("ns/a") == cm("a", 1)
    with pytest.raises(TypeError):
        indexer.add_new({"ns/b": cm("b"), "ns/c": cm("c", data={"k": object()})})  # type: ignore[dict-item]
    assert "ns/b" not in indexer


def test_add_new_is_all_or_none() -> None:
    indexer = new_indexer()
    assert indexer.add_new({"ns/a": cm("a", 1, app="web"), "ns/b": cm("b", 2, app="web")})
    assert sorted(indexer.index_keys("app", "web")) == ["ns/a", "ns/b"]
    assert indexer.last_store_sync_resource_version() == "2"
    assert not indexer.add_new({"ns/c": cm("c"), "ns/a": cm("a", 5)})  # a cached already
    assert "ns/c" not in indexer and indexer.get_by_key("ns/a") == cm("a", 1, app="web")
    assert indexer.add_new({})


def test_apply_batch_returns_old_objects_as_stubs_of_their_bytes_and_leaves_out_a_failing_write(
) -> None:
    indexer = new_indexer()
    indexer.add(cm("a", 1, app="web"))
    indexer.add(cm("b", 1, app="web"))
    olds = indexer.apply_batch([
        ("ns/a", cm("a", 2, app="db"), False),
        ("ns/b", None, True),
        ("ns/c", cm("c", 3, data={"k": object()}), False),  # type: ignore[dict-item]
        ("ns/d", cm("d", 4, app="web"), False),
    ])
    assert olds[2:] == [NOT_APPLIED, None]
    # each old object a stub (what reads it on the way to the handlers: its name, namespace
    # and version) whose bytes a handler's fresh copy is decoded from
    assert [type(old) for old in olds[:2]] == [packed.Packed, packed.Packed]
    assert [fresh(old) for old in olds[:2]] == [cm("a", 1, app="web"), cm("b", 1, app="web")]
    assert olds[0]["metadata"] == {"name": "a", "namespace": "ns", "resourceVersion": "1"}
    assert "labels" not in olds[0]["metadata"]  # not decoded whole and kept
    assert keys(indexer.list()) == ["ns/a", "ns/d"]
    assert indexer.index_keys("app", "web") == ["ns/d"]
    assert indexer.last_store_sync_resource_version() == "4"


def test_replace_swaps_the_whole_content_and_rebuilds_the_indexes() -> None:
    indexer = new_indexer()
    indexer.add(cm("a", 1, app="web"))
    indexer.replace([cm("b", 2, app="web"), cm("c", 3, app="db"), cm("b", 4, app="db")], "9")
    assert keys(indexer.list()) == ["ns/b", "ns/c"]
    assert indexer.index_keys("app", "web") == []
    assert sorted(indexer.index_keys("app", "db")) == ["ns/b", "ns/c"]
    assert indexer.last_store_sync_resource_version() == "9"
    with pytest.raises(KeyFuncError):
        indexer.replace([cm("x"), {"no": "metadata"}])
    assert keys(indexer.list()) == ["ns/b", "ns/c"]
    indexer.bookmark("12")
    assert indexer.last_store_sync_resource_version() == "12"


def test_a_reader_without_the_lock_sees_the_old_content_or_the_new_never_half_of_it() -> None:
    indexer = CompactIndexer()
    objs = [cm(f"o{i}", i + 1, "default") for i in range(2000)]
    indexer.replace(objs)
    misses: list[str] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            if indexer.get_by_key("default/o1999") is None or len(indexer) != len(objs):
                misses.append("miss")

    reader = threading.Thread(target=read, name="test-reader")
    reader.start()
    try:
        for _ in range(10):  # a relist replacing the same objects
            indexer.replace(objs)
    finally:
        done.set()
        reader.join(10)
    assert misses == []


def test_a_snapshot_is_taken_at_once_and_decodes_each_object_when_read() -> None:
    indexer = new_indexer()
    indexer.add(cm("a", 1))
    snapshot = indexer.snapshot()
    indexer.delete(cm("a", 2))
    assert list(snapshot) == ["ns/a"] and len(snapshot) == 1 and "ns/a" in snapshot
    assert snapshot["ns/a"] == cm("a", 1) and snapshot["ns/a"] is not snapshot["ns/a"]


def test_add_indexers_indexes_what_is_stored_and_refuses_a_name_taken() -> None:
    indexer = CompactIndexer()
    indexer.add(cm("a", 1, app="web"))
    indexer.add_indexers({"app": by_app})
    assert indexer.index_keys("app", "web") == ["ns/a"]
    assert list(indexer.get_indexers()) == ["app"]
    with pytest.raises(IndexerConflictError):
        indexer.add_indexers({"app": by_app, "other": by_app})
    assert list(indexer.get_indexers()) == ["app"]
    indexer.update(cm("a", 2, app="db"))
    assert indexer.index_keys("app", "db") == ["ns/a"]


def test_fresh_copies_objects_and_the_object_of_a_deleted_final_state_unknown() -> None:
    obj = cm("a", 1)
    copy = fresh(obj)
    assert copy == obj and copy is not obj and copy["metadata"] is not obj["metadata"]
    dfsu = fresh(DeletedFinalStateUnknown("ns/a", obj))
    assert dfsu == DeletedFinalStateUnknown("ns/a", obj) and dfsu.obj is not obj
    assert fresh(None) is None


def test_a_wrapped_handler_gets_copies_of_its_own() -> None:
    recorder = Recorder(describe=lambda obj: obj)  # records the objects themselves
    handler = FreshObjects(recorder)
    old, new = cm("a", 1), cm("a", 2)
    handler.on_add(new, True)
    handler.on_update(old, new)
    handler.on_delete(new)
    events = recorder.take(3)
    assert events == [("add", new, True), ("update", old, new), ("delete", new)]
    handed = [obj for event in events for obj in event[1:] if isinstance(obj, dict)]
    assert all(obj is not old and obj is not new for obj in handed)
    assert repr(handler) == repr(recorder)


def test_a_cluster_aware_cache_keys_and_indexes_by_cluster() -> None:
    indexer = CompactIndexer(cluster_aware_key_func, {
        CLUSTER_INDEX: cluster_index_func,
        CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func,
    })
    for cluster in ("root:a", "root:b"):
        indexer.add(cm("app", 1, "default", annotations={LOGICAL_CLUSTER_ANNOTATION: cluster}))
    assert sorted(indexer.list_keys()) == ["root:a|default/app", "root:b|default/app"]
    assert indexer.index_keys(CLUSTER_INDEX, "root:b") == ["root:b|default/app"]
    lister = GenericClusterLister(indexer, CONFIGMAPS).cluster("root:a")
    found = lister.by_namespace("default").get("app")
    assert found["metadata"]["annotations"] == {LOGICAL_CLUSTER_ANNOTATION: "root:a"}
    found["metadata"]["annotations"].clear()
    assert lister.by_namespace("default").get("app")["metadata"]["annotations"]


class Labels(dict):  # type: ignore[type-arg]
    """A dict of a type of its own: JSON encodes it, marshal does not take it."""


def test_what_is_kept_reads_back_as_the_form_kept_would_have_it(kept_as: bool) -> None:
    indexer = new_indexer()
    plain = cm("a", 1, data={"ports": (80, 443)})  # type: ignore[dict-item]
    indexer.add(plain)
    got = indexer.get_by_key("ns/a")
    # JSON makes a tuple a list; marshal keeps it, as a dict cache would
    assert got["data"]["ports"] == ([80, 443] if kept_as else (80, 443))
    assert fresh(plain) == got
    own = cm("b", 2, data={"ports": (80, 443)})  # type: ignore[dict-item]
    own["metadata"]["labels"] = Labels(app="web")
    indexer.add(own)
    got = indexer.get_by_key("ns/b")
    # a type marshal does not take: the whole object kept as its JSON decodes, in either form
    assert type(got["metadata"]["labels"]) is dict and got["metadata"]["labels"] == {"app": "web"}
    assert got["data"]["ports"] == [80, 443]
    assert indexer.index_keys("app", "web") == ["ns/b"]


@pytest.mark.parametrize("text", ["team-0001/cm-000123", "é/ü", "lone-\ud800-surrogate", ""])
def test_a_key_kept_is_a_string_of_the_caches_own(text: str) -> None:
    from kinformer.cache.compact_store import _own

    kept = _own(text)
    assert kept == text and type(kept) is str
    if text:  # the empty string is one object in all of Python
        assert kept is not text
