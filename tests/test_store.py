"""Key functions, index functions and the Indexer facade (KF-, DF-, ST- items)."""

from __future__ import annotations

import itertools
from typing import Any

import helpers
import pytest
from kubernetes import client

import kinformer
from kinformer import errors
from kinformer.cache.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ExplicitKey,
    IndexedStore,
    Indexer,
    ObjectName,
    Store,
    deletion_handling_meta_namespace_key_func,
    index_func_to_key_func_adapter,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from kinformer.meta import NamespaceRuns


def by_app(obj: Any) -> list[str]:
    app = obj["metadata"].get("labels", {}).get("app")
    return [app] if app else []


def test_key_is_namespace_slash_name_or_just_the_name() -> None:
    assert meta_namespace_key_func(helpers.cm("a")) == "ns/a"
    assert meta_namespace_key_func(helpers.cm("node-1", namespace="")) == "node-1"


def test_key_functions_accept_official_client_models() -> None:
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p", namespace="ns"))
    node = client.V1Node(metadata=client.V1ObjectMeta(name="n"))
    assert meta_namespace_key_func(pod) == "ns/p"
    assert meta_namespace_key_func(node) == "n"
    assert meta_namespace_index_func(pod) == ["ns"]
    assert meta_namespace_index_func(node) == [""]


def test_an_explicit_key_is_its_own_key() -> None:
    key = meta_namespace_key_func(ExplicitKey("any/thing"))
    assert key == "any/thing"
    assert type(key) is str


def test_an_object_without_metadata_has_no_key() -> None:
    for bad in ({"kind": "X"}, 42, "plain string", {"metadata": "nope"}):
        with pytest.raises(errors.KeyFuncError, match=r"^object has no meta:"):
            meta_namespace_key_func(bad)


def test_deletion_key_function_reads_a_tombstones_key_only() -> None:
    tombstone = DeletedFinalStateUnknown("ns/a", object())
    assert deletion_handling_meta_namespace_key_func(tombstone) == "ns/a"
    assert deletion_handling_meta_namespace_key_func(helpers.cm("a")) == "ns/a"


@pytest.mark.parametrize(
    ("key", "expected"),
    [("ns/a", ("ns", "a")), ("a", ("", "a")), ("", ("", "")), ("/x", ("", "x")), ("ns/", ("ns", ""))],
)
def test_split_key_into_namespace_and_name(key: str, expected: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == expected


def test_split_key_rejects_more_than_one_slash() -> None:
    with pytest.raises(errors.InvalidKeyError, match='unexpected key format: "a/b/c"'):
        split_meta_namespace_key("a/b/c")
    with pytest.raises(ValueError):
        split_meta_namespace_key("a/b/c")


def test_split_key_refuses_a_cluster_aware_key_that_it_would_split_wrongly() -> None:
    with pytest.raises(errors.InvalidKeyError, match="cluster-aware key: split it with split_cluster_aware"):
        split_meta_namespace_key("root:a|default/app")  # else namespace "root:a|default"


def test_object_name_prints_and_parses_like_a_key() -> None:
    assert str(ObjectName("ns", "a")) == "ns/a"
    assert str(ObjectName("", "a")) == "a"
    assert ObjectName.parse("ns/a") == ObjectName("ns", "a")


def test_namespace_index_function() -> None:
    assert NAMESPACE_INDEX == "namespace"
    assert meta_namespace_index_func(helpers.cm("a")) == ["ns"]
    assert meta_namespace_index_func(helpers.cm("a", namespace="")) == [""]
    with pytest.raises(errors.KeyFuncError):
        meta_namespace_index_func({"no": "meta"})


def test_index_function_adapter_needs_exactly_one_value() -> None:
    key_func = index_func_to_key_func_adapter(by_app)
    assert key_func(helpers.cm("a", app="web")) == "web"
    with pytest.raises(errors.KeyFuncError, match="unexpected empty indexKeys"):
        key_func(helpers.cm("a"))
    with pytest.raises(errors.KeyFuncError, match="too many keys"):
        index_func_to_key_func_adapter(lambda o: ["x", "y"])(helpers.cm("a"))


def test_a_key_failure_names_the_object_and_leaves_the_store_alone() -> None:
    store = new_store(meta_namespace_key_func)
    with pytest.raises(errors.KeyFuncError, match="couldn't create key for object"):
        store.add({"kind": "NoMeta"})
    assert len(store) == 0


def test_tombstones_are_frozen_values() -> None:  # DF-1
    a = DeletedFinalStateUnknown("k", None)
    assert a == DeletedFinalStateUnknown("k", None)
    with pytest.raises(AttributeError):
        a.key = "other"  # type: ignore[misc]


def test_add_update_get_and_delete_by_object() -> None:
    store = new_indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
    a1, a2 = helpers.cm("a", 1), helpers.cm("a", 2)
    store.add(a1)
    store.update(a2)
    assert store.get(helpers.cm("a")) is a2
    assert store.get_by_key("ns/a") is a2
    assert store.get_by_key("ns/zzz") is None
    store.delete(a2)
    store.delete(a2)  # deleting what is gone is fine
    assert store.list() == []
    assert store.by_index(NAMESPACE_INDEX, "ns") == []


def test_an_informer_store_deletes_by_tombstone() -> None:
    store = Indexer(deletion_handling_meta_namespace_key_func)
    store.add(helpers.cm("a"))
    store.delete(DeletedFinalStateUnknown("ns/a", None))
    assert len(store) == 0


def test_replace_keys_everything_first_and_last_duplicate_wins() -> None:
    store = Indexer(indexers={"app": by_app})
    store.add(helpers.cm("old"))
    with pytest.raises(errors.KeyFuncError):
        store.replace([helpers.cm("x"), {"no": "meta"}], "7")
    assert store.list_keys() == ["ns/old"]
    first, second = helpers.cm("x", 1, app="a"), helpers.cm("x", 2, app="b")
    store.replace([first, second], "7")
    assert store.list() == [second]
    assert store.by_index("app", "b") == [second]
    assert store.by_index("app", "a") == []
    assert store.last_store_sync_resource_version() == "7"


def test_resync_of_a_store_changes_nothing() -> None:
    store = new_store(meta_namespace_key_func)
    store.add(helpers.cm("a"))
    store.resync()
    assert store.list_keys() == ["ns/a"]


def test_returned_objects_are_the_stored_ones() -> None:
    store = new_store(meta_namespace_key_func)
    a = helpers.cm("a")
    store.add(a)
    assert store.list()[0] is a


def test_store_tracks_the_resource_version_it_last_saw() -> None:
    store = new_store(meta_namespace_key_func)
    assert store.last_store_sync_resource_version() == ""
    store.replace([helpers.cm("a", 10)], "10")
    store.add(helpers.cm("b", 11))
    assert store.last_store_sync_resource_version() == "11"
    store.delete(helpers.cm("b", 12))
    assert store.last_store_sync_resource_version() == "12"


def test_unknown_index_names_raise_a_key_error_naming_the_index() -> None:
    store = Indexer()
    with pytest.raises(KeyError, match="Index with name nope does not exist"):
        store.by_index("nope", "x")
    assert store.list_index_func_values("nope") == []


def test_indexer_satisfies_the_store_seams() -> None:
    store = Indexer()
    assert isinstance(store, Store)
    assert isinstance(store, IndexedStore)
    assert store.key_func is meta_namespace_key_func
    store.add(helpers.cm("a"))
    assert "ns/a" in store


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference.


def test_a_tombstone_carries_its_key_and_the_last_known_object() -> None:
    last = helpers.cm("x")
    tombstone = kinformer.DeletedFinalStateUnknown(key="ns/x", obj=last)
    assert (tombstone.key, tombstone.obj) == ("ns/x", last)
    assert kinformer.DeletedFinalStateUnknown("ns/y", None).obj is None


def test_store_get_returns_none_for_a_missing_object() -> None:
    store = kinformer.new_store(kinformer.meta_namespace_key_func)
    assert store.get(helpers.cm("a")) is None
    assert store.get_by_key("ns/a") is None
    store.add(helpers.cm("a"))
    stored = store.get(helpers.cm("a", rv=9))
    assert stored is not None and stored["metadata"]["resourceVersion"] == "1"
    assert len(store) == 1
    store.resync()
    store.delete(helpers.cm("missing"))
    assert store.list_keys() == ["ns/a"]


def test_indexer_replace_without_a_version_and_len() -> None:
    indexer = kinformer.Indexer()
    indexer.replace([helpers.cm("a"), helpers.cm("b"), helpers.cm("a", 2)])
    assert len(indexer) == 2
    stored = indexer.get_by_key("ns/a")
    assert stored is not None and stored["metadata"]["resourceVersion"] == "2"


def test_index_queries_and_emptied_values_disappear() -> None:
    indexer = kinformer.new_indexer(
        kinformer.meta_namespace_key_func,
        {"app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]},
    )
    indexer.replace(
        [helpers.cm("a", app="web"), helpers.cm("b", app="web"), helpers.cm("c", app="db")], "5"
    )
    assert sorted(indexer.index_keys("app", "web")) == ["ns/a", "ns/b"]
    assert sorted(helpers.describe(o) for o in indexer.index("app", helpers.cm("z", app="web"))) == [
        "a1",
        "b1",
    ]
    assert sorted(indexer.list_index_func_values("app")) == ["db", "web"]
    indexer.delete(helpers.cm("c"))
    assert indexer.list_index_func_values("app") == ["web"]
    assert indexer.by_index("app", "nothing") == []
    assert set(indexer.get_indexers()) == {"app"}


def test_indexer_caches_official_client_models_and_indexes_them_by_namespace() -> None:
    indexer = kinformer.Indexer(
        key_func=kinformer.deletion_handling_meta_namespace_key_func,  # as an informer's is
        indexers={kinformer.NAMESPACE_INDEX: kinformer.meta_namespace_index_func},
    )
    model = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a", namespace="ns", labels={"app": "web"}))
    indexer.add(model)
    assert indexer.get_by_key("ns/a") is model
    assert indexer.by_index(kinformer.NAMESPACE_INDEX, "ns") == [model]
    configmaps = kinformer.GroupVersionResource("", "v1", "configmaps")
    assert kinformer.GenericLister(indexer, configmaps).by_namespace("ns").list("app=web") == [model]


def _runs(namespaces: list[str]) -> NamespaceRuns:
    return [(ns, len(list(run))) for ns, run in itertools.groupby(namespaces)]


def _listed() -> dict[str, Any]:
    """A first list as the HTTP lister keys it; the objects have no metadata, so only the keys
    and namespaces the list carries can key and index them."""
    objs = [{"data": {"n": "1"}}, {"data": {"n": "2"}}, {"data": {"n": "3"}}]
    return dict(zip(["a/x", "b/y", "z"], objs, strict=True))


def test_a_listed_first_list_fills_the_namespace_index_from_the_namespaces_it_carries() -> None:
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    items = _listed()
    assert indexer.add_new(items, _runs(["a", "b", ""]))
    assert indexer.list_keys() == ["a/x", "b/y", "z"]
    assert indexer.by_index(NAMESPACE_INDEX, "b") == [items["b/y"]]
    assert indexer.index_keys(NAMESPACE_INDEX, "") == ["z"]
    indexer.delete(ExplicitKey("a/x"))  # indexed under its carried value: deleted from it too
    assert indexer.list_index_func_values(NAMESPACE_INDEX) == ["b", ""]


def test_other_indexes_and_lists_without_namespaces_read_the_objects_as_usual() -> None:
    def namespace_of(obj: Any) -> list[str]:
        return [obj["metadata"]["namespace"]]

    for indexers in ({"ns": meta_namespace_index_func},  # the function under another name
                     {NAMESPACE_INDEX: namespace_of},  # another function under the name
                     {NAMESPACE_INDEX: meta_namespace_index_func, "app": by_app}):
        with pytest.raises((errors.KeyFuncError, KeyError)):
            Indexer(indexers=indexers).add_new(_listed(), _runs(["a", "b", ""]))
    # none carried, or not one per object: too few, too many, or a run of none
    for runs in (None, [("a", 1), ("b", 1)], [("a", 2), ("", 2)], [("a", 1), ("b", 0), ("", 2)]):
        with pytest.raises(errors.KeyFuncError):
            Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func}).add_new(_listed(), runs)


class _GeneralIndexer(Indexer):
    """An Indexer whose writes never read the key and namespace inline: the general path."""

    __slots__ = ()
    _standard = None


def _outcome(indexer: Indexer, obj: Any) -> type[BaseException] | None:
    try:
        indexer.add(obj)
    except Exception as exc:
        return type(exc)
    return None


def _contents(indexer: Indexer) -> tuple[dict[str, Any], dict[str, dict[str, list[str]]]]:
    indexes = {name: {value: sorted(indexer.index_keys(name, value))
                      for value in indexer.list_index_func_values(name)}
               for name in indexer.get_indexers()}
    return indexer.snapshot(), indexes


_WRITES: list[Any] = [
    {"metadata": {"namespace": "a", "name": "x", "labels": {"app": "web"}}},
    {"metadata": {"name": "node-1", "labels": {"app": "web"}}},  # cluster-scoped
    {"metadata": {"namespace": "", "name": "y"}},
    {"metadata": {"namespace": None, "name": "z"}},
    {"metadata": {"namespace": "b", "name": "x", "labels": {"app": "db"}}},
    {"metadata": {"namespace": "a", "name": "x", "labels": {"app": "db"}}},  # an update: app moves
    {"metadata": {"namespace": "b", "name": "x"}},  # an update: app dropped
    {"metadata": {"namespace": "a", "name": "x", "labels": {"app": "web"}}},
    client.V1ConfigMap(metadata=client.V1ObjectMeta(namespace="c", name="m")),
    {"metadata": {"namespace": "a"}},  # no name: no key
    {"metadata": {"namespace": 5, "name": "n"}},  # not a string: read the general way
    {"metadata": {"namespace": "a", "name": 7}},
    {"metadata": None},
    {"kind": "ConfigMap"},
]


def _by_model_or_dict_app(obj: Any) -> list[str]:
    return by_app(obj) if isinstance(obj, dict) else []


def _two_values(obj: Any) -> list[str]:
    return ["p", "q"]


@pytest.mark.parametrize("names", [
    [NAMESPACE_INDEX], [NAMESPACE_INDEX, "app"], ["app", NAMESPACE_INDEX],
    ["app", NAMESPACE_INDEX, "two"]])
def test_add_reads_the_standard_key_and_namespace_inline_to_the_same_end(names: list[str]) -> None:
    funcs = {NAMESPACE_INDEX: meta_namespace_index_func, "app": _by_model_or_dict_app,
             "two": _two_values}
    fast = Indexer(indexers={name: funcs[name] for name in names})
    general = _GeneralIndexer(indexers={name: funcs[name] for name in names})
    assert fast._ns_at == names.index(NAMESPACE_INDEX) and general._ns_at == -1
    for obj in _WRITES:
        assert _outcome(fast, obj) == _outcome(general, obj)
        assert _contents(fast) == _contents(general)
        assert fast.last_store_sync_resource_version() == general.last_store_sync_resource_version()
    # the general path keys some odd objects too, so must the inline one; a namespace that is
    # no string (5) gives an index value that is none either: refused on both paths
    assert len(fast) == 8


def test_the_inline_read_starts_when_the_namespace_index_is_added_and_needs_the_standard_parts() -> None:
    fast = Indexer(indexers={"app": _by_model_or_dict_app})
    general = _GeneralIndexer(indexers={"app": _by_model_or_dict_app})
    assert fast._ns_at == -1
    for indexer in (fast, general):
        indexer.add(_WRITES[0])
        indexer.add_indexers({NAMESPACE_INDEX: meta_namespace_index_func})
    assert fast._ns_at == 1
    for obj in _WRITES:
        assert _outcome(fast, obj) == _outcome(general, obj)
    assert _contents(fast) == _contents(general)
    assert Indexer(lambda obj: "k", {NAMESPACE_INDEX: meta_namespace_index_func})._ns_at == -1
    assert Indexer(indexers={NAMESPACE_INDEX: lambda obj: ["n"]})._ns_at == -1


def _ordered(indexer: Indexer) -> tuple[list[str], dict[str, list[tuple[str, list[str], list[Any]]]]]:
    """Keys and every index, value by value, in the order a reader sees them."""
    return indexer.list_keys(), {
        name: [(value, indexer.index_keys(name, value), indexer.by_index(name, value))
               for value in indexer.list_index_func_values(name)]
        for name in indexer.get_indexers()}


@pytest.mark.parametrize("namespaces", [
    ["a"] * 5, ["a", "a", "b", "b", "b", "", ""], ["", "a", "a", "a", "z"], ["a", "b"] * 100,
    # few long runs, taken run by run, one namespace in two of them
    ["a"] * 100 + ["b"] * 100 + [""] * 50 + ["a"] * 100])
def test_a_listed_first_list_indexes_its_namespaces_as_reading_each_object_would(
        namespaces: list[str]) -> None:
    objs = [{"metadata": {"namespace": ns, "name": f"o{i}"}} for i, ns in enumerate(namespaces)]
    keys = [meta_namespace_key_func(obj) for obj in objs]
    for cached in ([], [{"metadata": {"namespace": "a", "name": "before"}}]):
        carried = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
        read = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
        for indexer in (carried, read):
            for obj in cached:
                indexer.add(obj)
        items = dict(zip(keys, objs, strict=True))
        assert carried.add_new(items, _runs(namespaces)) and read.add_new(dict(items))
        assert _ordered(carried) == _ordered(read)
        for key in keys[::3]:  # each key indexed under its value: deleting it leaves no trace
            carried.delete(ExplicitKey(key))
            read.delete(ExplicitKey(key))
        assert _ordered(carried) == _ordered(read)
