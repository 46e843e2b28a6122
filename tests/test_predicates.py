"""Predicates filter update events by what changed, and combine as controller-runtime's do."""

from __future__ import annotations

from typing import Any

import pytest

import kinformer
from kinformer.controllers.predicates import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    PredicateFuncs,
    ResourceVersionChangedPredicate,
    and_,
    not_,
    or_,
)


def obj(rv: str = "1", generation: int = 1, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "app", "namespace": "default", "resourceVersion": rv,
                         "generation": generation, "labels": labels or {}, "annotations": annotations or {}}}


CHANGED = [
    (GenerationChangedPredicate, obj(generation=2)),
    (LabelChangedPredicate, obj(labels={"a": "b"})),
    (AnnotationChangedPredicate, obj(annotations={"a": "b"})),
    (ResourceVersionChangedPredicate, obj(rv="2")),
]


@pytest.mark.parametrize(("predicate", "changed"), CHANGED)
def test_a_changed_predicate_passes_updates_of_its_field_only(
        predicate: Any, changed: dict[str, Any]) -> None:
    p = predicate()
    assert p.update(obj(), changed)
    assert not p.update(obj(), obj())
    for other_predicate, other in CHANGED:
        if other_predicate is not predicate:
            assert not p.update(obj(), other), (predicate, other)
    assert p.create(obj()) and p.delete(obj()) and p.generic(obj())
    assert not p.update(None, obj())


def test_predicate_funcs_not_given_let_events_through() -> None:
    p = PredicateFuncs(update=lambda old, new: new["metadata"]["resourceVersion"] == "9")
    assert p.create(obj()) and p.delete(obj()) and p.generic(obj())
    assert p.update(obj(), obj(rv="9")) and not p.update(obj(), obj(rv="8"))
    q = PredicateFuncs(create=lambda o: False, delete=lambda o: False, generic=lambda o: False)
    assert not q.create(obj()) and not q.delete(obj()) and not q.generic(obj()) and q.update(obj(), obj())


def test_and_or_not_combine() -> None:
    gen, labels = GenerationChangedPredicate(), LabelChangedPredicate()
    both = obj(generation=2, labels={"a": "b"})
    assert and_(gen, labels).update(obj(), both)
    assert not and_(gen, labels).update(obj(), obj(generation=2))
    assert or_(gen, labels).update(obj(), obj(generation=2))
    assert not or_(gen, labels).update(obj(), obj())
    assert not_(gen).update(obj(), obj()) and not not_(gen).update(obj(), obj(generation=2))
    assert not not_(gen).create(obj())
    assert and_().create(obj()) and not or_().create(obj())


def test_predicates_are_exported() -> None:
    for name in ("GenerationChangedPredicate", "LabelChangedPredicate", "AnnotationChangedPredicate",
                 "ResourceVersionChangedPredicate", "PredicateFuncs", "and_", "or_", "not_"):
        assert name in kinformer.__all__ and hasattr(kinformer, name)
