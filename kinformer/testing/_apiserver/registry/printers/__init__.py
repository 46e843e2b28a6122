"""The columns kube-apiserver prints for built-in types in the Table form (``kubectl get``).

One :class:`~.values.Printer` per group-resource: the column definitions (name, type, format,
description, priority; priority 1 columns are those kubectl shows only with ``-o wide``) and how
a stored object becomes the row's cells (and row conditions). The server prints every column,
with its own ``<none>`` and ``<unknown>`` placeholders. :mod:`.values` writes the values,
:mod:`.core` and :mod:`.groups` hold the printers; a type without its own prints NAME and AGE.
:mod:`~kinformer.testing._apiserver.wire.tables` builds the Table around them.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver.registry.printers import core, groups
from kinformer.testing._apiserver.registry.printers.values import (
    AGE,
    AGE_DESCRIPTION,
    NAME,
    Printer,
    Row,
    age,
    human_duration,
    name_of,
    now,
    parse_time,
)

__all__ = ["AGE_DESCRIPTION", "NAME", "Printer", "Row", "human_duration", "name_of", "now",
           "parse_time", "printer_for"]

PRINTERS: dict[str, Printer] = {**core.PRINTERS, **groups.PRINTERS}


def _name_and_age(obj: dict[str, Any], now: float) -> Row:
    return [name_of(obj), age(obj, now)], []


DEFAULT = Printer((NAME, AGE), _name_and_age)


def printer_for(group_resource: str) -> Printer:
    """The printer of a built-in type (NAME and AGE for one without its own)."""
    return PRINTERS.get(group_resource, DEFAULT)
