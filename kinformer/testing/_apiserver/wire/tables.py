"""The Table form of the fake API server's answers (``Accept: application/json;as=Table;
g=meta.k8s.io;v=v1``), which ``kubectl get`` asks for first.

A Table has ``columnDefinitions`` (name, type, format, description, priority) and ``rows``, each
with the row's ``cells`` and its ``object``: by default a ``PartialObjectMetadata``
(``includeObject=Metadata``), the whole object with ``includeObject=Object``, null with
``None``. Built-in types print the columns of
:mod:`~kinformer.testing._apiserver.registry.printers`; a custom resource prints its CRD's
``additionalPrinterColumns`` for the served version (an ``Age`` column when it declares none),
each cell evaluated from the column's JSONPath and typed as the column says. Also the
``PartialObjectMetadata`` form that metadata-only clients ask for. Pure functions over stored
entries; the handler writes what they return.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.records import Entry, dumps, served
from kinformer.testing._apiserver.registry import printers
from kinformer.testing._apiserver.resources import ResourceType

META_GROUP = "meta.k8s.io"
INCLUDE = ("Metadata", "Object", "None")


def include_option(query: dict[str, str]) -> str:
    """The ``includeObject`` of a Table request (``Metadata`` when absent); 400 when unknown."""
    value = query.get("includeObject", "") or "Metadata"
    if value not in INCLUDE:
        raise status.bad_request(f'unrecognized includeObject value: "{value}"')
    return value


# ---- custom resource columns -----------------------------------------------------------------

_STEP = re.compile(r"""\.([A-Za-z0-9_\-$/]+)|\[(\d+|\*)\]|\[['"]([^'"]*)['"]\]"""
                   r"""|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*['"]([^'"]*)['"]\)\]""")


def _steps(path: str) -> list[tuple[str, Any]] | None:
    """The steps of a simple JSONPath (``.a.b``, ``[0]``, ``[*]``, ``['x.y']``,
    ``[?(@.type=="Ready")]``); None when it is not one."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        found = _STEP.match(text, pos)
        if found is None:
            return None
        field, index, quoted, filter_path, filter_value = found.groups()
        if field is not None or quoted is not None:
            steps.append(("field", field if field is not None else quoted))
        elif index is not None:
            steps.append(("all", None) if index == "*" else ("index", int(index)))
        else:
            steps.append(("filter", (filter_path.split("."), filter_value)))
        pos = found.end()
    return steps


def evaluate(path: str, obj: Any) -> list[Any]:
    """Every value ``path`` reaches in ``obj``, in order (missing keys reach nothing)."""
    steps = _steps(path)
    if steps is None:
        return []
    values = [obj]
    for kind, arg in steps:
        found: list[Any] = []
        for value in values:
            if (kind == "field" and isinstance(value, dict) and arg in value) or (
                    kind == "index" and isinstance(value, list) and -len(value) <= arg < len(value)):
                found.append(value[arg])
            elif kind == "all" and isinstance(value, (list, dict)):
                found.extend(value if isinstance(value, list) else value.values())
            elif kind == "filter" and isinstance(value, list):
                keys, wanted = arg
                for item in value:
                    node: Any = item
                    for key in keys:
                        node = node.get(key) if isinstance(node, dict) else None
                    if node is not None and str(node) == wanted:
                        found.append(item)
        values = found
    return values


def _text(value: Any) -> str:
    """A value as JSONPath prints it into a string cell."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _cell(column_type: str, value: Any, now: float) -> Any:
    """A custom column's cell from its first JSONPath result, typed as the column says."""
    if value is None:
        return None
    if column_type == "string":
        return _text(value)
    if column_type == "integer" and isinstance(value, (int, float)) and \
            not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, (int, float)) and \
            not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        stamp = printers.parse_time(value)
        return "<invalid>" if stamp is None else printers.human_duration(now - stamp)
    return None


def _custom_printer(rt: ResourceType) -> printers.Printer:
    declared = rt.printer_columns or (
        ("Age", "date", "", printers.AGE_DESCRIPTION, 0, ".metadata.creationTimestamp"),)
    columns = [printers.NAME]
    paths = []
    for name, type_, format_, description, priority, path in declared:
        columns.append((name, type_, format_, description or
                        f"Custom resource definition column (in JSONPath format): {path}",
                        priority))
        paths.append((type_, path))

    def row(obj: dict[str, Any], now: float) -> printers.Row:
        cells: list[Any] = [printers.name_of(obj)]
        for type_, path in paths:
            found = evaluate(path, obj)
            cells.append(_cell(type_, found[0], now) if found else None)
        return cells, []

    return printers.Printer(tuple(columns), row)


# ---- the Table -------------------------------------------------------------------------------


def _partial(version: str, entry: Entry) -> bytes:
    return (b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/' + version.encode()
            + b'","metadata":' + dumps(entry.obj.get("metadata") or {}) + b"}")


def partial_object(version: str, entry: Entry) -> bytes:
    """The ``PartialObjectMetadata`` of a stored object (``meta.k8s.io/<version>``)."""
    return _partial(version, entry)


def partial_list(version: str, entries: Iterable[Entry], list_meta: dict[str, Any]) -> bytes:
    """A ``PartialObjectMetadataList``, its items without kind, as list items are written."""
    items = [b'{"metadata":' + dumps(e.obj.get("metadata") or {}) + b"}" for e in entries]
    return (b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/' + version.encode()
            + b'","metadata":' + dumps(list_meta) + b',"items":[' + b",".join(items) + b"]}")


def table(
    rt: ResourceType, entries: Iterable[Entry], list_meta: dict[str, Any], version: str,
    include: str,
) -> bytes:
    """The Table of ``entries`` (one row each) of type ``rt``, as ``meta.k8s.io/<version>``."""
    printer = _custom_printer(rt) if rt.custom else printers.printer_for(rt.group_resource)
    now = printers.now()
    rows = []
    for entry in entries:
        cells, conditions = printer.row(entry.obj, now)
        if include == "None":
            obj = b"null"
        elif include == "Object":
            view = served(rt, entry)
            obj = view.head + view.tail
        else:
            obj = _partial(version, entry)
        head = {"cells": cells, "conditions": conditions} if conditions else {"cells": cells}
        rows.append(dumps(head)[:-1] + b',"object":' + obj + b"}")
    columns = [{"name": n, "type": t, "format": f, "description": d, "priority": p}
               for n, t, f, d, p in printer.columns]
    return (b'{"kind":"Table","apiVersion":"meta.k8s.io/' + version.encode() + b'","metadata":'
            + dumps(list_meta) + b',"columnDefinitions":' + dumps(columns) + b',"rows":['
            + b",".join(rows) + b"]}")
