"""The one reader of object metadata, in the spirit of apimachinery's ``meta.Accessor``.

Objects reach kinformer in two shapes: decoded JSON (``dict``, the unstructured form every HTTP
path yields) and the official client's model classes (attribute access, snake_case fields). The
functions here read ``metadata`` from either, so no other module writes its own accessor:
the key functions and the store (``cache/``), the decoder that checks what the server sent
(``client/``), the reflector's event checks and the informer's resourceVersion tracking.

The readers never raise on a malformed object: a missing field reads as ``""`` (or ``None``
where "no metadata at all" must be told apart, as in :func:`resource_version`).
:func:`is_well_formed` and :func:`check` are the strict test applied to everything the server
sends before it can reach a cache: a name or namespace that is not a string would become a
garbage cache key, and such a resourceVersion the version a reflector resumes from, forever.
"""

from collections.abc import Mapping
from typing import Any

from kinformer import errors

_EMPTY: Mapping[str, str] = {}


def metadata(obj: Any) -> Any:
    """``obj``'s metadata: a dict's ``metadata`` entry or a model's attribute; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get("metadata")
    return getattr(obj, "metadata", None)


def _field(meta: Any, json_name: str, attribute: str) -> Any:
    if isinstance(meta, Mapping):
        return meta.get(json_name)
    return getattr(meta, attribute, None)


def name(obj: Any) -> str:
    """``metadata.name``, or ``""`` when the object has none (or not as a string)."""
    value = _field(metadata(obj), "name", "name")
    return value if isinstance(value, str) else ""


def namespace(obj: Any) -> str:
    """``metadata.namespace``; ``""`` for a cluster-scoped object or one without metadata."""
    value = _field(metadata(obj), "namespace", "namespace")
    return value if isinstance(value, str) else ""


def uid(obj: Any) -> str:
    """``metadata.uid``, or ``""``."""
    value = _field(metadata(obj), "uid", "uid")
    return value if isinstance(value, str) else ""


def resource_version(obj: Any) -> str | None:
    """``metadata.resourceVersion``; ``""`` when absent, None when the object has no metadata."""
    meta = metadata(obj)
    if meta is None:
        return None
    value = _field(meta, "resourceVersion", "resource_version")
    return "" if value is None else str(value)


def labels(obj: Any) -> Mapping[str, str]:
    """``metadata.labels``; an empty mapping when there are none."""
    value = _field(metadata(obj), "labels", "labels")
    return value if isinstance(value, Mapping) else _EMPTY


def annotations(obj: Any) -> Mapping[str, str]:
    """``metadata.annotations``; an empty mapping when there are none."""
    value = _field(metadata(obj), "annotations", "annotations")
    return value if isinstance(value, Mapping) else _EMPTY


def namespace_and_name(obj: Any) -> tuple[str, str]:
    """``(namespace, name)``; :class:`~kinformer.KeyFuncError` when the object has no metadata."""
    meta = metadata(obj)
    if meta is None or (isinstance(obj, Mapping) and not isinstance(meta, Mapping)):
        raise errors.KeyFuncError(f"object has no meta: {type(obj).__name__} {obj!r:.200}")
    return _field(meta, "namespace", "namespace") or "", _field(meta, "name", "name") or ""


def has_name(obj: Any) -> bool:
    """Whether the object carries a non-empty string ``metadata.name`` (a bookmark need not)."""
    return name(obj) != ""


def is_well_formed(obj: Any) -> bool:
    """Whether ``obj`` is decoded JSON fit for a cache: a dict whose ``metadata`` is a dict with a
    non-empty string ``name`` and, where present, a string ``namespace`` and ``resourceVersion``.

    The test every listed item and watched object passes before it can be stored; it costs
    one call and a few lookups, which is why the decoder calls it rather than :func:`check`.
    """
    return (
        type(obj) is dict
        and type(meta := obj.get("metadata")) is dict
        and type(value := meta.get("name")) is str
        and value != ""
        and type(meta.get("resourceVersion", "")) is str
        and type(meta.get("namespace", "")) is str
    )


def check(obj: Any, what: str) -> dict[str, Any]:
    """Return ``obj`` when :func:`is_well_formed`; else raise :class:`~kinformer.DecodeError`
    saying what is wrong, prefixed by ``what`` (``"list apps/v1, Resource=deployments"``)."""
    if not isinstance(obj, dict):
        raise errors.DecodeError(f"{what}: expected an object, got {type(obj).__name__}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise errors.DecodeError(f"{what}: object has no metadata.name")
    if type(meta["name"]) is not str:
        raise errors.DecodeError(f"{what}: metadata.name is not a string")
    for field in ("namespace", "resourceVersion"):
        value = meta.get(field)
        if value is not None and type(value) is not str:
            raise errors.DecodeError(f"{what}: metadata.{field} is not a string")
    return obj
