"""kinformer.transforms: strip_managed_fields on both object shapes, and chain's composition."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ManagedFieldsEntry, V1ObjectMeta, V1Pod

import kinformer
from kinformer import DeletedFinalStateUnknown, RealFIFO, meta_namespace_key_func
from kinformer.managers import informer_manager
from kinformer.transforms import chain, strip_managed_fields

FIELDS = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1"}]


class _NoWrites(dict[str, Any]):
    """Metadata that fails the test on any change."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("metadata was written to")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = _refuse


def test_strip_drops_managed_fields_in_place_and_keeps_the_rest() -> None:
    obj = {"metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"},
                        "managedFields": FIELDS}, "spec": {"k": 1}}
    metadata = obj["metadata"]
    assert strip_managed_fields(obj) is obj
    assert obj == {"metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"}},
                   "spec": {"k": 1}}
    assert obj["metadata"] is metadata


def test_strip_never_writes_to_an_object_with_nothing_to_drop() -> None:
    obj = {"metadata": _NoWrites(name="a")}
    assert strip_managed_fields(obj) is obj
    assert strip_managed_fields(strip_managed_fields({"metadata": {"managedFields": []}})) == {
        "metadata": {}}


@pytest.mark.parametrize("other", ["tombstone", None, 7, {"metadata": None}, {"spec": {}},
                                   DeletedFinalStateUnknown("n/a", {"metadata": {}})])
def test_strip_returns_anything_else_unchanged(other: Any) -> None:
    assert strip_managed_fields(other) is other


def test_strip_clears_the_managed_fields_of_an_official_client_model() -> None:
    entry = V1ManagedFieldsEntry(manager="kubectl", operation="Update")
    pod = V1Pod(metadata=V1ObjectMeta(name="a", namespace="n", managed_fields=[entry]))
    assert strip_managed_fields(pod) is pod
    assert pod.metadata.managed_fields is None
    assert pod.metadata.name == "a"
    bare = V1Pod()
    assert strip_managed_fields(bare) is bare


def test_the_manager_and_the_package_export_the_same_function() -> None:
    assert informer_manager.strip_managed_fields is strip_managed_fields
    assert kinformer.strip_managed_fields is strip_managed_fields
    assert kinformer.chain is chain


def _step(name: str, calls: list[str]) -> Any:
    def step(obj: Any) -> Any:
        calls.append(name)
        return {**obj, "steps": [*obj.get("steps", []), name]}

    return step


@pytest.mark.parametrize("count", [2, 3, 4])
def test_chain_applies_each_step_left_to_right_to_what_the_last_returned(count: int) -> None:
    calls: list[str] = []
    steps = [_step(str(i), calls) for i in range(count)]
    assert chain(*steps)({"steps": []}) == {"steps": [str(i) for i in range(count)]}
    assert calls == [str(i) for i in range(count)]


def test_chain_skips_none_and_returns_a_lone_step_itself() -> None:
    calls: list[str] = []
    a, b = _step("a", calls), _step("b", calls)
    assert chain(None, a, None) is a
    assert chain(a, None, b)({}) == {"steps": ["a", "b"]}
    obj = {"metadata": {}}
    assert chain()(obj) is obj
    assert chain(None, None)(obj) is obj


def test_chain_refuses_what_is_not_callable_at_once() -> None:
    with pytest.raises(TypeError, match="not a transform"):
        chain(strip_managed_fields, "strip")  # type: ignore[arg-type]


def test_a_fifo_caches_what_the_chain_returns() -> None:
    fifo = RealFIFO(meta_namespace_key_func, None, chain(
        strip_managed_fields, lambda obj: {**obj, "seen": True}))
    fifo.replace([{"metadata": {"name": "a", "namespace": "n", "managedFields": FIELDS}}], "1")
    popped: list[Any] = []
    fifo.pop(lambda deltas, initial: popped.append(deltas[0][1]), timeout=1)
    assert popped[0].items == {"n/a": {"metadata": {"name": "a", "namespace": "n"}, "seen": True}}
