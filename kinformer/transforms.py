"""Ready-made informer transforms, and :func:`chain` to compose them.

A transform (``SharedIndexInformer.set_transform(fn)``, client-go's ``SetTransform``) is applied
once to every object the informer receives, before it is queued and cached, and the cache keeps
what it returns. What it drops is never held: :func:`strip_managed_fields` removes
``metadata.managedFields``, a fifth of a typical Pod's memory, which almost no controller reads.

An informer hands its transform each object freshly decoded from the list or watch, held by
nothing else yet, so a transform may change it in place and return it, as client-go's do; that
is the fast path. A transform over objects other code still holds (a ListerWatcher of your own
that serves objects it keeps) should copy first. Example::

    informer.set_transform(chain(strip_managed_fields, my_transform))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

Transform = Callable[[Any], Any]
"""``fn(obj) -> obj``: what the informer caches instead of ``obj``."""


@runtime_checkable
class JSONTransform(Protocol):
    """A transform that can also be given an object together with its JSON as the server sent
    it, which a listed object's lister may know (a compact cache's packer keeps those bytes
    rather than encoding the object again). It keeps each object's name, namespace and
    logical cluster as they are, so the keys made of them still fit what it returns."""

    def __call__(self, obj: Any) -> Any:
        """The transform of ``obj``."""

    def with_json(self, obj: Any, data: bytes) -> Any:
        """The transform of ``obj``, whose compact JSON, exactly as sent, is ``data``."""


@runtime_checkable
class Packer(Protocol):
    """A transform that keeps nothing of the decoded object it is given, only what it makes of
    it (a compact cache's bytes): its ``packs`` is True. A list whose objects go through one is
    decoded in small chunks, since no decoded object outlives its chunk; one whose objects are
    kept, in bigger ones. A :func:`chain` whose last step is a Packer is one too."""

    packs: bool

    def __call__(self, obj: Any) -> Any:
        """What the cache keeps for ``obj``."""


def strip_managed_fields(obj: Any) -> Any:
    """Drop ``metadata.managedFields`` from ``obj``, in place, and return ``obj``.

    For a decoded object (a dict) the key is removed from its metadata; for one of the official
    client's models, ``metadata.managed_fields`` is set to None. Anything else, and an object
    without managedFields, comes back as it was, unchanged: the function never writes to an
    object that has nothing to drop, so applying it twice, or to an object already cached, is
    harmless. It reads the dict itself, not through ``kinformer.meta``, whose two-shape reader
    would more than double its cost.

    >>> pod = {"metadata": {"name": "web", "managedFields": [{"manager": "kubectl"}]}}
    >>> strip_managed_fields(pod) is pod, pod
    (True, {'metadata': {'name': 'web'}})
    """
    if isinstance(obj, dict):
        metadata = obj.get("metadata")
        if isinstance(metadata, dict) and "managedFields" in metadata:
            del metadata["managedFields"]
        return obj
    model_metadata: Any = getattr(obj, "metadata", None)
    if getattr(model_metadata, "managed_fields", None) is not None:
        model_metadata.managed_fields = None
    return obj


def chain(*fns: Transform | None) -> Transform:
    """One transform applying ``fns`` left to right, each to what the one before returned.

    None entries are skipped, so an optional step reads as ``chain(strip_managed_fields,
    redact if hide_secrets else None)``. With one function left it is returned itself (no
    extra call per object); with none, the identity. Anything else that is not callable raises
    TypeError at once, not on the first object.

    >>> def label(obj):
    ...     obj["metadata"].setdefault("labels", {})["seen"] = "yes"
    ...     return obj
    >>> both = chain(strip_managed_fields, None, label)
    >>> both({"metadata": {"name": "web", "managedFields": []}})
    {'metadata': {'name': 'web', 'labels': {'seen': 'yes'}}}
    >>> chain(strip_managed_fields) is strip_managed_fields
    True

    A chain ending in a :class:`Packer` (your transform, then a compact cache's packer) is a
    Packer itself: what the last step keeps is all that is kept.
    """
    steps = tuple(fn for fn in fns if fn is not None)
    for fn in steps:
        if not callable(fn):
            raise TypeError(f"not a transform (a callable): {fn!r}")
    if not steps:
        return _identity
    if len(steps) == 1:
        return steps[0]
    if isinstance(steps[-1], Packer):
        return _PackingChain(steps)
    if len(steps) == 2:
        first, second = steps

        def both(obj: Any) -> Any:
            return second(first(obj))

        return both

    def chained(obj: Any) -> Any:
        for fn in steps:
            obj = fn(obj)
        return obj

    return chained


class _PackingChain:
    """:func:`chain` of ``steps`` whose last is a :class:`Packer`: a Packer too."""

    __slots__ = ("_steps",)
    packs = True

    def __init__(self, steps: tuple[Transform, ...]) -> None:
        self._steps = steps

    def __call__(self, obj: Any) -> Any:
        for fn in self._steps:
            obj = fn(obj)
        return obj

    def __repr__(self) -> str:
        return f"chain{self._steps!r}"


def _identity(obj: Any) -> Any:
    return obj
