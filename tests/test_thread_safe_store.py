"""ThreadSafeStore: index maintenance, snapshots and concurrent use."""

from __future__ import annotations

import random
import sys
import threading
from typing import Any

import pytest
from helpers import cm, names

from kinformer import _threads, errors
from kinformer.cache.store import (
    NAMESPACE_INDEX,
    Indexer,
    meta_namespace_index_func,
    meta_namespace_key_func,
)
from kinformer.cache.thread_safe_store import ThreadSafeStore


def by_app(obj: Any) -> list[str]:
    app = obj["metadata"].get("labels", {}).get("app")
    return [app] if app else []


def by_tags(obj: Any) -> list[str]:
    tags = obj["metadata"].get("labels", {}).get("tags", "")
    return tags.split(".") if tags else []


def broken_on_bad(obj: Any) -> list[str]:
    """An index function that raises for the object named "bad"."""
    if obj["metadata"]["name"] == "bad":
        raise RuntimeError("index broke")
    return ["x"]


INDEXERS = {NAMESPACE_INDEX: meta_namespace_index_func, "app": by_app, "tags": by_tags}


def store_with(*objs: dict[str, Any]) -> ThreadSafeStore:
    store = ThreadSafeStore(INDEXERS)
    for o in objs:
        store.add(meta_namespace_key_func(o), o)
    return store


def expected_index(store: ThreadSafeStore | Indexer, name: str) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for o in store.list():
        for v in INDEXERS[name](o):
            result.setdefault(v, set()).add(meta_namespace_key_func(o))
    return result


def actual_index(store: ThreadSafeStore | Indexer, name: str) -> dict[str, set[str]]:
    return {v: set(store.index_keys(name, v)) for v in store.list_index_func_values(name)}


def assert_indices_agree(store: ThreadSafeStore | Indexer) -> None:
    for name in INDEXERS:
        assert actual_index(store, name) == expected_index(store, name), name


def test_update_moves_the_key_between_index_values() -> None:
    store = store_with(cm("a", app="web"))
    store.update("ns/a", cm("a", app="db"))
    assert store.by_index("app", "db") == [cm("a", app="db")]
    assert store.by_index("app", "web") == []
    assert_indices_agree(store)


def test_a_key_that_loses_its_index_values_and_gets_them_back_is_indexed_anew() -> None:
    store = store_with(cm("a", app="web", tags="x.y"))
    for app, tags in (("", ""), ("web", "x.y"), ("db", "z"), ("", "x.y"), ("web", "")):
        store.update("ns/a", cm("a", app=app, tags=tags))
        assert_indices_agree(store)
    store.delete("ns/a")
    assert [store.list_index_func_values(name) for name in INDEXERS] == [[], [], []]


def test_update_with_unchanged_index_values_returns_the_new_object() -> None:
    store = store_with(cm("a", app="web", v="1"))
    new = cm("a", app="web", v="2")
    store.update("ns/a", new)
    assert store.by_index("app", "web")[0] is new
    assert store.by_index(NAMESPACE_INDEX, "ns")[0] is new


def test_an_index_function_error_propagates_and_changes_nothing() -> None:
    store = ThreadSafeStore({"x": broken_on_bad})
    store.add("good", cm("good"))
    with pytest.raises(RuntimeError):
        store.add("bad", cm("bad"))
    assert store.list_keys() == ["good"]
    with pytest.raises(RuntimeError):
        store.replace({"bad": cm("bad")}, "2")
    assert store.list_keys() == ["good"]


@pytest.mark.parametrize("values", [None, "web", [7], [{"a": 1}]],
                         ids=["none", "a-string", "a-number", "a-dict"])
def test_index_values_that_are_no_list_of_strings_are_refused_and_change_nothing(values: Any) -> None:
    for indexes in ({"x": lambda obj: values}, {"ns": lambda obj: ["ns"], "x": lambda obj: values}):
        store = ThreadSafeStore(indexes)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="index function gave"):
            store.add("bad", cm("bad"))
        with pytest.raises(TypeError, match="index function gave"):
            store.add_new({"bad": cm("bad")})
        assert store.list_keys() == [] and store.list_index_func_values("x") == []


def test_add_new_stores_and_indexes_as_adding_one_by_one() -> None:
    objs = [cm("a", app="web", tags="x.y"), cm("b", namespace="other", app="db"), cm("c", tags="y")]
    store = ThreadSafeStore(INDEXERS)
    assert store.add_new({meta_namespace_key_func(o): o for o in objs})
    one_by_one = store_with(*objs)
    assert store.list_keys() == one_by_one.list_keys()
    for name in INDEXERS:
        assert actual_index(store, name) == actual_index(one_by_one, name), name
    assert store.by_index("tags", "y") == one_by_one.by_index("tags", "y")


def test_add_new_refuses_a_stored_key_and_changes_nothing() -> None:
    store = store_with(cm("a", app="web"))
    refused = {"ns/b": cm("b", app="db"), "ns/a": cm("a", app="db")}
    assert not store.add_new(refused)
    assert store.list_keys() == ["ns/a"]
    assert store.list_index_func_values("app") == ["web"]
    assert_indices_agree(store)


def test_add_new_propagates_an_index_function_error_and_changes_nothing() -> None:
    store = ThreadSafeStore({"x": broken_on_bad})
    with pytest.raises(RuntimeError):
        store.add_new({"good": cm("good"), "bad": cm("bad")})
    assert store.list_keys() == []
    assert store.index_keys("x", "x") == []


def test_delete_removes_index_entries_and_ignores_missing_keys() -> None:
    store = store_with(cm("a", app="web"), cm("b", app="web"))
    store.delete("ns/a")
    store.delete("ns/missing")
    assert store.index_keys("app", "web") == ["ns/b"]
    assert_indices_agree(store)


def test_emptied_index_values_disappear() -> None:
    store = store_with(cm("a", namespace="one", app="web", tags="x.y"))
    store.update("one/a", cm("a", namespace="one", app="db", tags="z"))
    assert store.list_index_func_values("app") == ["db"]
    assert store.list_index_func_values("tags") == ["z"]
    store.delete("one/a")
    for name in INDEXERS:
        assert store.list_index_func_values(name) == []


def test_replace_rebuilds_every_index() -> None:
    store = store_with(cm("a", app="web"))
    store.replace({"other/b": cm("b", namespace="other", app="db")}, "42")
    assert store.list_keys() == ["other/b"]
    assert store.list_index_func_values(NAMESPACE_INDEX) == ["other"]
    assert store.by_index("app", "web") == []
    assert store.last_store_sync_resource_version() == "42"
    assert_indices_agree(store)


def test_index_returns_the_deduplicated_union_over_an_objects_values() -> None:
    a, b, c = cm("a", tags="x.y"), cm("b", tags="y"), cm("c", tags="z")
    store = store_with(a, b, c)
    assert names(store.index("tags", cm("q", tags="x.y"))) == ["a", "b"]
    assert store.index("tags", cm("q")) == []
    assert store.index("app", cm("q", app="none")) == []
    with pytest.raises(errors.IndexerError, match="Index with name nope does not exist"):
        store.index("nope", a)


def test_by_index_and_index_keys_on_unknown_names_and_values() -> None:
    store = store_with(cm("a", app="web"))
    assert store.by_index("app", "nothing") == []
    assert store.index_keys("app", "nothing") == []
    for call in (store.by_index, store.index_keys):
        with pytest.raises(KeyError, match="Index with name nope does not exist"):
            call("nope", "x")
    assert store.list_index_func_values("nope") == []


def test_get_indexers_is_a_live_read_only_view() -> None:
    store = ThreadSafeStore({"app": by_app})
    view = store.get_indexers()
    store.add_indexers({"tags": by_tags})
    assert set(view) == {"app", "tags"}
    with pytest.raises(TypeError):
        view["x"] = by_app  # type: ignore[index]


def test_added_indexers_cover_what_is_already_stored() -> None:
    store = ThreadSafeStore({NAMESPACE_INDEX: meta_namespace_index_func})
    store.add("ns/a", cm("a", app="web"))
    store.add_indexers({"app": by_app, "tags": by_tags})
    assert store.index_keys("app", "web") == ["ns/a"]
    store.add("ns/b", cm("b", app="web"))
    assert sorted(store.index_keys("app", "web")) == ["ns/a", "ns/b"]
    assert_indices_agree(store)


def test_conflicting_indexers_are_named_and_none_is_added() -> None:
    store = ThreadSafeStore({"app": by_app})
    with pytest.raises(errors.IndexerConflictError, match=r"indexer conflict: \['app'\]"):
        store.add_indexers({"app": by_app, "tags": by_tags})
    assert set(store.get_indexers()) == {"app"}
    assert store.list_index_func_values("tags") == []


def test_list_holds_one_entry_per_key() -> None:
    store = store_with(cm("a"))
    store.add("ns/a", cm("a", v="2"))
    assert len(store.list()) == 1
    assert len(store) == 1


def test_concurrent_writers_and_readers_never_see_a_torn_index() -> None:
    indexer = Indexer(meta_namespace_key_func, INDEXERS)
    namespaces = ["ns0", "ns1"]  # few keys: writers collide on the same ones
    apps = ["web", "db", "cache"]
    stop = threading.Event()
    failures: list[str] = []

    def write(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(3000):
                if i == 1000 and seed == 0:
                    indexer.replace(indexer.list(), "")  # a relist in the middle of the churn
                name, ns = f"o{rng.randrange(4)}", rng.choice(namespaces)
                tags = rng.choice(["a", "a.b", "c"])
                obj = cm(name, namespace=ns, app=rng.choice(apps), tags=tags)
                if rng.random() < 0.2:
                    indexer.delete(obj)
                else:
                    indexer.update(obj)
        except Exception as exc:  # a torn index shows up as a KeyError here
            failures.append(f"writer {seed} failed: {exc!r}")

    def read() -> None:
        while not stop.is_set():
            for app in apps:
                for o in indexer.by_index("app", app):
                    if by_app(o) != [app]:
                        failures.append(f"by_index(app, {app}) returned {o}")
            for ns in namespaces:
                keys = indexer.index_keys(NAMESPACE_INDEX, ns)
                if len(keys) != len(set(keys)) or any(not k.startswith(ns + "/") for k in keys):
                    failures.append(f"index_keys({ns}) returned {keys}")
            listed = indexer.list_keys()
            if len(listed) != len(set(listed)):
                failures.append("list_keys repeated a key")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so unlocked windows would show
    try:
        readers = [_threads.spawn(read, f"kinformer-test-reader-{i}") for i in range(2)]
        writers = [_threads.spawn(write, f"kinformer-test-writer-{i}", i) for i in range(3)]
        for t in writers:
            t.join(30)
        stop.set()
        for t in readers:
            t.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(indexer) > 0
    assert_indices_agree(indexer)
    for name in INDEXERS:
        for value in indexer.list_index_func_values(name):
            assert indexer.by_index(name, value), f"empty value {value!r} kept in {name}"
