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


def configmap(**fields: Any) -> dict[str, Any]:
    return {**fields, "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}}


@pytest.mark.parametrize("where", ["first", "last"])
def test_an_objects_kind_and_api_version_are_kept_once_for_its_type_and_put_back_where_they_stood(
    where: str, kept_as: bool,
) -> None:
    if not kept_as:
        pytest.skip("marshal's form keeps each object whole")
    typed = {"kind": "ConfigMap", "apiVersion": "v1"}
    obj = {**typed, **configmap()} if where == "first" else {**configmap(), **typed}
    data = packed.keep(obj)
    assert b"ConfigMap" not in data and b"apiVersion" not in data
    assert data[0] < 0x20 and data[:1] not in (b"\t", b"\n", b"\r")
    loaded = packed.load(data)
    assert loaded == obj and list(loaded) == list(obj)  # the same fields, in the same order
    other = packed.load(packed.keep({**obj, "kind": "Secret"}))
    assert other["kind"] == "Secret" and list(other) == list(obj)


def test_an_object_whose_kind_and_api_version_stand_apart_or_are_not_strings_is_kept_whole() -> None:
    apart = {"kind": "ConfigMap", "metadata": {"name": "a"}, "apiVersion": "v1", "data": {}}
    odd = {"kind": ["ConfigMap"], "apiVersion": "v1", "metadata": {"name": "a"}}
    for obj in (apart, odd):
        data = packed.keep(obj)
        assert b"ConfigMap" in data
        loaded = packed.load(data)
        assert loaded == obj and list(loaded) == list(obj)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_consuming_pack_keeps_the_type_once_in_either_form_and_takes_nothing_else(
    where: str, kept_as: bool,
) -> None:
    """A packing transform's object is its own: the type comes out of the object itself, so
    marshal's form too is kept without it (no copy of the object made), and the bytes load back
    to the whole object, its fields in their order."""
    typed = {"kind": "ConfigMap", "apiVersion": "v1"}
    obj = {**typed, **configmap()} if where == "first" else {**configmap(), **typed}
    whole = {**obj}
    stub = packed.pack(obj, (), consume=True)
    assert b"ConfigMap" not in stub.data  # marshal's form of the whole object names it
    loaded = packed.load(stub.data)
    assert loaded == whole and list(loaded) == list(whole)
    assert stub["kind"] == "ConfigMap" and stub["apiVersion"] == "v1"


def test_a_consuming_pack_that_fails_leaves_the_type_in_the_object(kept_as: bool) -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", **configmap(), "odd": object()}
    with pytest.raises(TypeError):
        packed.pack(obj, (), consume=True)
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"


def test_once_every_byte_names_a_type_the_objects_of_other_types_are_kept_whole(
    monkeypatch: pytest.MonkeyPatch, kept_as: bool,
) -> None:
    if not kept_as:
        pytest.skip("marshal's form keeps each object whole")
    monkeypatch.setattr(packed, "_FREE_TAGS", packed._FREE_TAGS[:2])
    monkeypatch.setattr(packed, "_tags", dict(packed._tags))
    objs = [{"kind": f"Kind{i}", "apiVersion": "example.com/v1", **configmap()} for i in range(4)]
    kept = [packed.keep(obj) for obj in objs]
    assert [b"Kind" in data for data in kept] == [False, False, True, True]
    assert [packed.load(data) for data in kept] == objs


def test_json_as_the_server_sent_it_is_kept_without_the_opening_its_type_names(kept_as: bool) -> None:
    from kinformer import _json

    if not kept_as:
        pytest.skip("only a cache keeping JSON keeps an object's bytes as the server sent them")

    obj = {"kind": "ConfigMap", "apiVersion": "v1", **configmap()}
    sent = _json.dumps(obj)
    stub = packed.pack(obj, (), sent)
    opening = b'{"kind":"ConfigMap","apiVersion":"v1",'
    assert sent.startswith(opening) and len(stub.data) == len(sent) - len(opening) + 2
    assert packed.load(stub.data) == obj
    # sent otherwise (spaced, or its fields in another order): kept exactly as sent
    for other in (b'{"kind": "ConfigMap", ' + sent[len(b'{"kind":"ConfigMap",'):],
                  _json.dumps({"apiVersion": "v1", "kind": "ConfigMap", **configmap()})):
        assert packed.pack(_json.loads(other), (), other).data == other
