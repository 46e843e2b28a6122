"""The one reader of object metadata, in the spirit of apimachinery's ``meta.Accessor``.

Objects reach kinformer in two shapes: decoded JSON (``dict``, the unstructured form every HTTP
path yields) and the official client's model classes (attribute access, snake_case fields). The
functions here read ``metadata`` from either, so no other module writes its own accessor:
the key functions, the store's resourceVersion and the listers' label matching (``cache/``),
the decoder that checks what the server sent (``client/``), the reflector's event checks and
the informer's resourceVersion comparison. Decoded JSON is read first, without a type lookup
through ``Mapping``: several of these run once per watch event.

The readers never raise on a malformed object: a missing field reads as ``""`` (or ``None``
where "no metadata at all" must be told apart, as in :func:`resource_version`).
:func:`namespace_and_name` is the exception, for key functions: an object without metadata
(:func:`has_metadata`) has no key, and it raises :class:`~kinformer.KeyFuncError`.
:func:`is_well_formed` and :func:`check` are the strict test applied to everything the server
sends before it can reach a cache: a name or namespace that is not a string would become a
garbage cache key, and such a resourceVersion the version a reflector resumes from, forever.
"""

from collections.abc import Mapping
from typing import Any

from kinformer import errors

_EMPTY: Mapping[str, str] = {}

NamespaceRuns = list[tuple[str, int]]
"""A listed batch's namespaces in order, one ``(namespace, how many in a row)`` run per change of
namespace (``""`` for cluster-scoped objects): an API server lists in key order, so each
namespace is one run, and the runs are as many as the namespaces, not the objects."""


def object_key(namespace: str | None, name: str) -> str:
    """The store key of the object ``name`` in ``namespace``: ``"namespace/name"``, or ``"name"``
    for a cluster-scoped one (``namespace`` empty or None).

    The one key format: the key functions, the HTTP lister keying a list as it decodes it,
    the listers and the dict store all make keys with it, and
    :func:`~kinformer.split_meta_namespace_key` reads them back.
    """
    return f"{namespace}/{name}" if namespace else name


def runs_cover(runs: NamespaceRuns | None, count: int) -> bool:
    """Whether ``runs`` give one namespace to each of ``count`` objects (every run one or more)."""
    return runs is not None and all(n > 0 for _, n in runs) and sum(n for _, n in runs) == count


def metadata(obj: Any) -> Any:
    """``obj``'s metadata: a dict's ``metadata`` entry or a model's attribute; None when absent."""
    if type(obj) is dict or isinstance(obj, Mapping):  # the exact check first: no ABC lookup
        return obj.get("metadata")
    return getattr(obj, "metadata", None)


def _field(meta: Any, json_name: str, attribute: str) -> Any:
    """One field of ``meta``: a dict's JSON key or a model's snake_case attribute; None when absent."""
    if type(meta) is dict or isinstance(meta, Mapping):
        return meta.get(json_name)
    return getattr(meta, attribute, None)


def _get(obj: Any, json_name: str, attribute: str) -> Any:
    """One metadata field of ``obj``, None when absent; decoded JSON reads it without a call."""
    if type(obj) is dict and type(meta := obj.get("metadata")) is dict:
        return meta.get(json_name)
    return _field(metadata(obj), json_name, attribute)


def name(obj: Any) -> str:
    """``metadata.name``, or ``""`` when the object has none (or not as a string)."""
    value = _get(obj, "name", "name")
    return value if isinstance(value, str) else ""


def namespace(obj: Any) -> str:
    """``metadata.namespace``; ``""`` for a cluster-scoped object or one without metadata."""
    value = _get(obj, "namespace", "namespace")
    return value if isinstance(value, str) else ""


def uid(obj: Any) -> str:
    """``metadata.uid``, or ``""``."""
    value = _get(obj, "uid", "uid")
    return value if isinstance(value, str) else ""


def resource_version(obj: Any) -> str | None:
    """``metadata.resourceVersion``; ``""`` when absent, None when the object has no metadata.

    Read per watch event and per cache update, so decoded JSON takes a short path first.
    """
    if type(obj) is dict and type(meta := obj.get("metadata")) is dict:
        value = meta.get("resourceVersion")
        return "" if value is None else str(value)
    meta = metadata(obj)
    if meta is None:
        return None
    value = _field(meta, "resourceVersion", "resource_version")
    return "" if value is None else str(value)


def labels(obj: Any) -> Mapping[str, str]:
    """``metadata.labels``; an empty mapping when there are none."""
    value = _get(obj, "labels", "labels")
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def annotations(obj: Any) -> Mapping[str, str]:
    """``metadata.annotations``; an empty mapping when there are none."""
    value = _get(obj, "annotations", "annotations")
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def has_metadata(obj: Any) -> bool:
    """Whether ``obj`` carries metadata at all: a dict whose ``metadata`` is a dict, or a model
    whose ``metadata`` is set. Keys and label selectors need it; a missing field does not matter."""
    meta = metadata(obj)
    if meta is None:
        return False
    return not (type(obj) is dict or isinstance(obj, Mapping)) or isinstance(meta, Mapping)


def namespace_and_name(obj: Any) -> tuple[str, str]:
    """``(namespace, name)``, ``""`` for one absent; :class:`~kinformer.KeyFuncError` when the
    object has no metadata (see :func:`has_metadata`): no key can be made for it."""
    if not has_metadata(obj):
        raise no_metadata(obj)
    meta = metadata(obj)
    return _field(meta, "namespace", "namespace") or "", _field(meta, "name", "name") or ""


def no_metadata(obj: Any) -> errors.KeyFuncError:
    """The error for an object without metadata: ``object has no meta: <type> <repr>``."""
    return errors.KeyFuncError(f"object has no meta: {type(obj).__name__} {shown(obj)}")


_CONTENTS = ("data", "stringData", "binaryData", "string_data", "binary_data")  # a Secret's, a ConfigMap's


def shown(obj: Any, limit: int = 200) -> str:
    """``obj``'s repr for an error message, cut at ``limit`` characters, with what its
    ``data``, ``stringData`` and ``binaryData`` hold (a Secret's credentials) left out: their
    keys are shown, each value as ``[redacted]``. A model object holding any shows its type,
    namespace and name alone."""
    if isinstance(obj, dict):
        if any(isinstance(obj.get(field), dict) for field in _CONTENTS):
            obj = {k: dict.fromkeys(v, errors.REDACTED) if k in _CONTENTS and isinstance(v, dict) else v
                   for k, v in obj.items()}
    elif any(isinstance(getattr(obj, field, None), dict) for field in _CONTENTS):
        return f"{type(obj).__name__} {object_key(namespace(obj), name(obj))!r}"[:limit]
    return f"{obj!r:.{limit}}"


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
    saying what is wrong, prefixed by ``what`` (``"list deployments.apps"``)."""
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
