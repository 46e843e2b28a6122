"""The checked indexer keeps a copy of exactly what it caches, through every way of writing."""

from __future__ import annotations

from typing import Any

from helpers import cm

from kinformer.cache.mutation_detector import CheckedIndexer, MutationDetector, field_changes
from kinformer.cache.store import NAMESPACE_INDEX, meta_namespace_index_func, meta_namespace_key_func
from kinformer.cache.thread_safe_store import NOT_APPLIED


def checked(**indexers: Any) -> CheckedIndexer:
    return CheckedIndexer(meta_namespace_key_func, indexers, MutationDetector("test"))


def touch(obj: dict[str, Any]) -> None:
    obj["metadata"]["labels"] = {"touched": "yes"}


def test_every_write_is_copied_and_every_removal_forgotten() -> None:
    indexer = checked(**{NAMESPACE_INDEX: meta_namespace_index_func})
    a, b, c, d = cm("a"), cm("b"), cm("c"), cm("d")
    indexer.add(a)
    indexer.update(b, "ns/b")
    assert indexer.add_new({"ns/c": c, "ns/d": d})
    for obj in (a, b, c, d):
        touch(obj)
    assert indexer.detector.check() == ["ns/a", "ns/b", "ns/c", "ns/d"]
    indexer.delete(a)
    indexer.update(cm("b", 2))  # written again: a fresh copy
    assert indexer.apply_batch([("ns/c", None, True), ("ns/e", cm("e"), False)]) == [c, None]
    assert indexer.detector.check() == ["ns/d"]
    indexer.replace([cm("x")])
    assert indexer.detector.check() == []
    touch(indexer.get_by_key("ns/x"))
    assert indexer.detector.check() == ["ns/x"]


def test_a_write_that_did_not_happen_is_not_copied() -> None:
    def failing(obj: Any) -> list[str]:
        if obj["metadata"]["name"] == "bad":
            raise ValueError("no index value")
        return []

    indexer = checked(by=failing)
    bad, good = cm("bad"), cm("good")
    assert indexer.apply_batch([("ns/bad", bad, False), ("ns/good", good, False)]) == [
        NOT_APPLIED, None]
    assert indexer.add(cm("a")) is None and not indexer.add_new({"ns/a": cm("a", 2)})
    touch(bad)
    assert indexer.detector.check() == []
    assert sorted(indexer.list_keys()) == ["ns/a", "ns/good"]


def test_a_finding_is_reported_once_until_the_key_is_cached_again() -> None:
    indexer = checked()
    a = cm("a")
    indexer.add(a)
    touch(a)
    assert indexer.detector.report() == ["ns/a"]
    assert indexer.detector.report() == []
    a2 = cm("a", 2)
    indexer.update(a2)
    touch(a2)
    assert indexer.detector.report() == ["ns/a"]


def test_field_changes_name_each_path_in_the_order_met() -> None:
    before = {"metadata": {"labels": {"app.kubernetes.io/name": "a"}},
              "spec": {"replicas": 3, "ports": [80, 443, 8080]}, "data": {}}
    after = {"metadata": {"labels": {"app.kubernetes.io/name": "b"}},
             "spec": {"ports": [80, 8443]}, "data": {"x": 1}}
    assert field_changes(before, after) == [
        "metadata.labels['app.kubernetes.io/name']: 'a' -> 'b'", "spec.replicas: removed",
        "spec.ports[1]: 443 -> 8443", "spec.ports[2]: removed", "data.x: added"]
    assert field_changes(before, after, limit=2)[-1] == "and 3 more"
    assert field_changes({"a": 1}, {"a": 1.0}) == ["a: 1 -> 1.0"]  # equal, yet another type
    assert field_changes(before, before) == []
