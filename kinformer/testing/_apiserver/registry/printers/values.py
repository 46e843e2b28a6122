"""How kube-apiserver's Table printers write values: the column and row shapes, ages as human
durations (``5s``, ``3m12s``, ``2d4h``), label maps and selectors, and the ``<none>`` placeholder.

Pure functions over decoded objects, shared by the printers of :mod:`.core` and :mod:`.groups`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names"
    "#names")


AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel"
    "/sig-architecture/api-conventions.md#metadata")


NONE = "<none>"


Column = tuple[str, str, str, str, int]  # name, type, format, description, priority


Row = tuple[list[Any], list[dict[str, str]]]  # cells, conditions


NAME: Column = ("Name", "string", "name", NAME_DESCRIPTION, 0)


AGE: Column = ("Age", "string", "", AGE_DESCRIPTION, 0)


CREATED_AT: Column = ("Created At", "date", "", AGE_DESCRIPTION, 0)


def wide(name: str, description: str, type_: str = "string") -> Column:
    return (name, type_, "", description, 1)


def column(name: str, description: str, type_: str = "string") -> Column:
    return (name, type_, "", description, 0)


TEMPLATE_COLUMNS = (
    wide("Containers", "Names of each container in the template."),
    wide("Images", "Images referenced by each container in the template."),
    wide("Selector", "A label query over pods that should match the replicas count."),
)


@dataclass(frozen=True)
class Printer:
    """The Table columns of one type and how a stored object becomes a row."""

    columns: tuple[Column, ...]
    row: Callable[[dict[str, Any], float], Row]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_time(text: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (``Z`` or an offset, any fraction)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        head = text[:19]  # Python 3.10 takes neither any fraction nor a trailing Z
        try:
            return datetime.fromisoformat(head + "+00:00").timestamp()
        except ValueError:
            return None


def human_duration(seconds: float) -> str:
    """A duration as Kubernetes prints ages: ``45s``, ``2m30s``, ``15m``, ``5h2m``, ``3d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(text: Any, now: float) -> str:
    """The age of an RFC 3339 time at ``now``; ``<unknown>`` without one."""
    stamp = parse_time(text)
    return "<unknown>" if stamp is None else human_duration(now - stamp)


def age(obj: dict[str, Any], now: float) -> str:
    return since(as_dict(obj.get("metadata")).get("creationTimestamp"), now)


def name_of(obj: dict[str, Any]) -> str:
    return str(as_dict(obj.get("metadata")).get("name", ""))


def format_labels(labels: Any) -> str:
    """``a=b,c=d`` sorted by key, ``<none>`` when empty (labels.FormatLabels)."""
    if not isinstance(labels, dict) or not labels:
        return NONE
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def selector_text(selector: Any) -> str:
    """A LabelSelector as a selector string, requirements sorted by key; ``<none>`` for null."""
    if not isinstance(selector, dict):
        return NONE
    terms: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in
                                    as_dict(selector.get("matchLabels")).items()]
    for req in as_list(selector.get("matchExpressions")):
        req = as_dict(req)
        key, op, values = str(req.get("key", "")), req.get("operator"), sorted(
            str(v) for v in as_list(req.get("values")))
        if op in ("In", "NotIn"):
            terms.append((key, f"{key} {str(op).lower()} ({','.join(values)})"))
        elif op == "Exists":
            terms.append((key, key))
        elif op == "DoesNotExist":
            terms.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(terms))


def template_cells(spec: Any, selector: str) -> list[Any]:
    containers = [as_dict(c) for c in as_list(as_dict(as_dict(as_dict(spec).get("template")).get("spec"))
                                      .get("containers"))]
    return [",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers), selector]


def now() -> float:
    """The time ages are measured at."""
    return time.time()
