"""Patch documents the fake API server applies: JSON merge patch and JSON patch.

Strategic merge patch merges lists of objects by the merge keys of the built-in types
(containers by ``name``, volumeMounts by ``mountPath``, ...) and honours the ``$patch``,
``$retainKeys``, ``$setElementOrder/`` and ``$deleteFromPrimitiveList/`` directives kubectl
sends; other lists are replaced. Bad patches raise 400 or 422 Status errors.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

from kinformer.testing._apiserver import status

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def load_apply_body(body: bytes) -> dict[str, Any]:
    """The object of a server-side apply body (YAML or JSON); ValueError when it is not one."""
    yaml: Any = importlib.import_module("yaml")  # a dependency of the kubernetes client

    try:
        doc = yaml.safe_load(body)
    except yaml.YAMLError as err:
        raise ValueError(str(err)) from None
    if not isinstance(doc, dict):
        raise ValueError("the applied configuration is not an object")
    return doc


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# patchMergeKey of the list fields of the built-in types, by field name.
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "secrets": ("name",),
    "hostAliases": ("ip",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "topologySpreadConstraints": ("topologyKey",),
    "ports": ("containerPort", "port"),
}
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Kubernetes' strategic merge patch for built-in types (see the module docstring)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    base: dict[str, Any] = {} if directive == "replace" or not isinstance(target, dict) \
        else dict(target)
    retain = patch.get("$retainKeys")
    orders: dict[str, Any] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith(_ORDER):
            orders[key[len(_ORDER):]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVES):
            field = key[len(_DELETE_PRIMITIVES):]
            if isinstance(base.get(field), list) and isinstance(value, list):
                base[field] = [v for v in base[field] if v not in value]
            continue
        if value is None:
            base.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            base[key] = _merge_list(base.get(key), value, MERGE_KEYS[key])
        else:
            merged = strategic_merge_patch(base.get(key), value)
            if merged is None and isinstance(value, dict):
                base.pop(key, None)
            else:
                base[key] = merged
    for field, order in orders.items():
        if isinstance(base.get(field), list) and isinstance(order, list):
            base[field] = _reorder(base[field], order, MERGE_KEYS.get(field, ()))
    if isinstance(retain, list):
        base = {k: v for k, v in base.items() if k in retain}
    return base


def _merge_key(items: list[Any], candidates: tuple[str, ...]) -> str | None:
    for key in candidates:
        if items and all(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def _merge_list(current: Any, patch: list[Any], candidates: tuple[str, ...]) -> list[Any]:
    key = _merge_key([p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
                     or patch, candidates)
    if key is None or not isinstance(current, list):
        return [strategic_merge_patch(None, p) for p in patch
                if not (isinstance(p, dict) and p.get("$patch") == "delete")]
    result = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            continue
        index = next((i for i, c in enumerate(result)
                      if isinstance(c, dict) and c.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(strategic_merge_patch(None, item))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def _reorder(items: list[Any], order: list[Any], candidates: tuple[str, ...]) -> list[Any]:
    key = _merge_key(order, candidates) if candidates else None
    if key is None:
        return items
    rank = {o[key]: i for i, o in enumerate(order) if isinstance(o, dict)}
    ranked = [i for i in items if isinstance(i, dict) and i.get(key) in rank]
    ranked.sort(key=lambda i: rank[i[key]])
    return ranked + [i for i in items if not (isinstance(i, dict) and i.get(key) in rank)]


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise status.bad_request(f"invalid JSON pointer {path!r}")
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise status.StatusError(422, "Invalid", f"doc is missing path: /{'/'.join(parts)}")
    return node


def _add(doc: Any, parts: list[str], value: Any, replace: bool) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise status.StatusError(422, "Invalid", f"replace operation does not apply: doc is "
                                     f"missing key: /{'/'.join(parts)}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise status.StatusError(422, "Invalid", f"invalid index in path /{'/'.join(parts)}")
    else:
        raise status.StatusError(422, "Invalid", f"doc is missing path: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise status.StatusError(422, "Invalid", "cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise status.StatusError(422, "Invalid", f"remove operation does not apply: doc is missing "
                             f"path: /{'/'.join(parts)}")


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 on a private copy of ``doc``: add, remove, replace, move, copy, test."""
    if not isinstance(operations, list):
        raise status.bad_request("a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise status.bad_request(f"invalid JSON patch operation {op!r}")
        kind = op["op"]
        parts = _pointer(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise status.bad_request(f"{kind} operation needs a value")
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op["value"]), replace=False)
        elif kind == "replace":
            doc = _add(doc, parts, copy.deepcopy(op["value"]), replace=True)
        elif kind == "remove":
            _remove(doc, parts)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            value = _walk(doc, source)
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, parts, copy.deepcopy(value), replace=False)
        elif kind == "test":
            if _walk(doc, parts) != op["value"]:
                raise status.StatusError(422, "Invalid", f"testing value /{'/'.join(parts)} failed")
        else:
            raise status.bad_request(f"unknown JSON patch operation {kind!r}")
    return doc
