"""Objects packed for a compact cache as they arrive (kinformer.cache.packed).

A packed object is a stub (apiVersion, kind, and of its metadata what keys, versions and shard
hashes read) carrying the whole object's bytes and index values: the cache must store and
index the whole object, never the stub, and a handler must be handed the whole object.
"""

from __future__ import annotations

from typing import Any

import pytest

from kinformer.cache import packed
from kinformer.cache.compact_store import CompactIndexer, fresh

pytestmark = pytest.mark.usefixtures("kept_as")


def by_value(obj: Any) -> list[str]:
    return [obj["data"]["k"]]


def pod(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7",
                     "managedFields": [{"manager": "kubectl"}], "labels": {"app": "web"}},
        "data": {"k": value},
    }


def test_a_packed_object_is_a_stub_carrying_the_whole_objects_bytes_and_index_values() -> None:
    obj = pod("a", "one")
    stub = packed.pack(obj, (by_value,))
    assert type(stub) is packed.Packed
    assert stub == {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}}
    assert packed.load(stub.data) == obj
    assert list(stub.index_values) == [["one"]]
    assert packed.decoded(stub) == obj and packed.decoded(obj) is obj


def test_what_is_not_a_decoded_object_is_left_for_the_cache_to_encode() -> None:
    for odd in (["a list"], {"metadata": "not a dict"}, {"no": "metadata"}):
        assert packed.pack(odd, ()) is odd


def test_the_cache_stores_and_indexes_the_whole_object_of_a_stub() -> None:
    indexer = CompactIndexer(indexers={"value": by_value})
    indexer.add(indexer.pack(pod("a", "one")))
    assert indexer.add_new({"ns/b": indexer.pack(pod("b", "two"))})
    indexer.apply_batch([("ns/c", indexer.pack(pod("c", "one")), False)])
    assert indexer.get_by_key("ns/a") == pod("a", "one")
    assert sorted(indexer.index_keys("value", "one")) == ["ns/a", "ns/c"]
    assert indexer.index_keys("value", "two") == ["ns/b"]


def test_a_stub_packed_before_an_index_was_added_is_indexed_from_its_decoded_bytes() -> None:
    indexer = CompactIndexer(indexers={"value": by_value})
    stub = indexer.pack(pod("a", "one"))
    indexer.add_indexers({"app": lambda obj: [obj["metadata"]["labels"]["app"] + "-" + obj["data"]["k"]]})
    indexer.add(stub)
    assert indexer.index_keys("app", "web-one") == ["ns/a"]
    assert indexer.index_keys("value", "one") == ["ns/a"]


def test_a_handler_is_handed_the_whole_object_of_a_stub() -> None:
    copy = fresh(packed.pack(pod("a", "one"), ()))
    assert type(copy) is dict and copy == pod("a", "one")


def test_a_stub_keeps_the_logical_cluster_a_cluster_aware_key_reads_and_the_uid_a_shard_hashes() -> None:
    from kinformer.cache.cluster import LOGICAL_CLUSTER_ANNOTATION, cluster_aware_key_func

    obj = pod("a", "one")
    obj["metadata"].update(uid="u-1", annotations={LOGICAL_CLUSTER_ANNOTATION: "root:org", "x": "y"})
    stub = packed.pack(obj, ())
    assert stub["metadata"]["uid"] == "u-1"
    assert stub["metadata"]["annotations"] == {LOGICAL_CLUSTER_ANNOTATION: "root:org"}
    assert cluster_aware_key_func(stub) == cluster_aware_key_func(obj)
    assert packed.load(stub.data) == obj
