"""Patch documents the fake API server applies: JSON merge patch and JSON patch.

Strategic merge patch is applied as a JSON merge patch (exact for the maps and scalars tests
patch; lists are replaced rather than merged by key). Bad patches raise 400 or 422 Status errors.
"""

from __future__ import annotations

import copy
from typing import Any

from kinformer.testing._apiserver import status

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


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
