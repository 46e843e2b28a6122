"""Predicates: which events reach a built controller's queue (controller-runtime's ``predicate``).

A predicate answers, per event, whether it should enqueue: ``create(obj)``, ``update(old, new)``,
``delete(obj)`` and ``generic(obj)``, each True or False. The builder (``builder.py``) asks every
predicate given to ``for_resource``, ``owns`` or ``watches`` before it maps an event to requests;
all of them must agree. The "...Changed" predicates filter updates only (create, delete and
generic pass), as controller-runtime's do; :class:`PredicateFuncs` turns functions into a
predicate, and :func:`and_`, :func:`or_` and :func:`not_` combine them.

>>> old = {"metadata": {"name": "a", "generation": 1, "labels": {"app": "web"}}}
>>> new = {"metadata": {"name": "a", "generation": 1, "labels": {"app": "db"}}}
>>> GenerationChangedPredicate().update(old, new), LabelChangedPredicate().update(old, new)
(False, True)
>>> or_(GenerationChangedPredicate(), LabelChangedPredicate()).update(old, new)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kinformer import meta

__all__ = [
    "AnnotationChangedPredicate",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "PredicateFuncs",
    "ResourceVersionChangedPredicate",
    "and_",
    "not_",
    "or_",
]


class Predicate(Protocol):
    """Whether an event should reach the queue; called on an informer's delivery thread, so it
    must be quick and must not change the objects it is given."""

    def create(self, obj: Any) -> bool: ...

    def update(self, old: Any, new: Any) -> bool: ...

    def delete(self, obj: Any) -> bool: ...

    def generic(self, obj: Any) -> bool: ...


class _UpdatesOnly:
    """Lets create, delete and generic events through; subclasses decide updates."""

    __slots__ = ()

    def create(self, obj: Any) -> bool:
        return True

    def delete(self, obj: Any) -> bool:
        return True

    def generic(self, obj: Any) -> bool:
        return True

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            return False
        return self._changed(old, new)

    def _changed(self, old: Any, new: Any) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _generation(obj: Any) -> Any:
    """``metadata.generation`` of decoded JSON or of a model; None when absent."""
    found = meta.metadata(obj)
    if isinstance(found, dict):
        return found.get("generation")
    return getattr(found, "generation", None)


class GenerationChangedPredicate(_UpdatesOnly):
    """Passes an update only when ``metadata.generation`` changed: a change of the spec, not of
    status or metadata (controller-runtime's ``GenerationChangedPredicate``)."""

    __slots__ = ()

    def _changed(self, old: Any, new: Any) -> bool:
        return bool(_generation(old) != _generation(new))


class LabelChangedPredicate(_UpdatesOnly):
    """Passes an update only when the labels changed."""

    __slots__ = ()

    def _changed(self, old: Any, new: Any) -> bool:
        return dict(meta.labels(old)) != dict(meta.labels(new))


class AnnotationChangedPredicate(_UpdatesOnly):
    """Passes an update only when the annotations changed."""

    __slots__ = ()

    def _changed(self, old: Any, new: Any) -> bool:
        return dict(meta.annotations(old)) != dict(meta.annotations(new))


class ResourceVersionChangedPredicate(_UpdatesOnly):
    """Passes an update only when ``metadata.resourceVersion`` changed: drops resyncs."""

    __slots__ = ()

    def _changed(self, old: Any, new: Any) -> bool:
        return meta.resource_version(old) != meta.resource_version(new)


class PredicateFuncs:
    """A predicate of functions, each optional: one that is not given lets its events through.

    ``create(obj)``, ``update(old, new)``, ``delete(obj)`` and ``generic(obj)`` return whether
    the event should enqueue (controller-runtime's ``predicate.Funcs``).
    """

    __slots__ = ("_create", "_delete", "_generic", "_update")

    def __init__(
        self,
        create: Callable[[Any], bool] | None = None,
        update: Callable[[Any, Any], bool] | None = None,
        delete: Callable[[Any], bool] | None = None,
        generic: Callable[[Any], bool] | None = None,
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self._generic = generic

    def create(self, obj: Any) -> bool:
        return True if self._create is None else bool(self._create(obj))

    def update(self, old: Any, new: Any) -> bool:
        return True if self._update is None else bool(self._update(old, new))

    def delete(self, obj: Any) -> bool:
        return True if self._delete is None else bool(self._delete(obj))

    def generic(self, obj: Any) -> bool:
        return True if self._generic is None else bool(self._generic(obj))

    def __repr__(self) -> str:
        given = [n for n in ("create", "update", "delete", "generic") if getattr(self, "_" + n) is not None]
        return f"PredicateFuncs({', '.join(given)})"


class _And:
    __slots__ = ("_predicates",)

    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self._predicates = predicates

    def create(self, obj: Any) -> bool:
        return all(p.create(obj) for p in self._predicates)

    def update(self, old: Any, new: Any) -> bool:
        return all(p.update(old, new) for p in self._predicates)

    def delete(self, obj: Any) -> bool:
        return all(p.delete(obj) for p in self._predicates)

    def generic(self, obj: Any) -> bool:
        return all(p.generic(obj) for p in self._predicates)

    def __repr__(self) -> str:
        return f"and_({', '.join(map(repr, self._predicates))})"


class _Or(_And):
    __slots__ = ()

    def create(self, obj: Any) -> bool:
        return any(p.create(obj) for p in self._predicates)

    def update(self, old: Any, new: Any) -> bool:
        return any(p.update(old, new) for p in self._predicates)

    def delete(self, obj: Any) -> bool:
        return any(p.delete(obj) for p in self._predicates)

    def generic(self, obj: Any) -> bool:
        return any(p.generic(obj) for p in self._predicates)

    def __repr__(self) -> str:
        return f"or_({', '.join(map(repr, self._predicates))})"


class _Not:
    __slots__ = ("_predicate",)

    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def create(self, obj: Any) -> bool:
        return not self._predicate.create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return not self._predicate.update(old, new)

    def delete(self, obj: Any) -> bool:
        return not self._predicate.delete(obj)

    def generic(self, obj: Any) -> bool:
        return not self._predicate.generic(obj)

    def __repr__(self) -> str:
        return f"not_({self._predicate!r})"


def and_(*predicates: Predicate) -> Predicate:
    """A predicate that passes an event when every one of ``predicates`` does (none: all pass)."""
    return _And(tuple(predicates))


def or_(*predicates: Predicate) -> Predicate:
    """A predicate that passes an event when any one of ``predicates`` does (none: nothing passes)."""
    return _Or(tuple(predicates))


def not_(predicate: Predicate) -> Predicate:
    """A predicate that passes exactly the events ``predicate`` drops."""
    return _Not(predicate)
