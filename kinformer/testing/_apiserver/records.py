"""Stored records of the fake API server: the JSON codec, object versions and history events.

An :class:`Entry` is one version of an object, decoded and encoded once at write time; an
:class:`Event` is one write as the history and the watchers see it. Both are immutable by
convention once stored, so any number of readers share them without copying.
"""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from typing import Any

from kinformer.testing._apiserver.resources import ResourceType

try:
    import orjson

    def dumps(obj: Any) -> bytes:
        """Compact JSON bytes of ``obj``."""
        return orjson.dumps(obj)

    def loads(data: bytes | str) -> Any:
        """Decode JSON; raises ValueError on bad input."""
        return orjson.loads(data)

except ImportError:  # pragma: no cover - orjson is an optional speed-up

    def dumps(obj: Any) -> bytes:
        """Compact JSON bytes of ``obj``."""
        return json.dumps(obj, separators=(",", ":")).encode()

    def loads(data: bytes | str) -> Any:
        """Decode JSON; raises ValueError on bad input."""
        return json.loads(data)


ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


_stamp_cache: tuple[int, str] = (0, "")


def now_timestamp() -> str:
    """The current UTC time as Kubernetes writes it (``2026-01-02T03:04:05Z``).

    Formatted once per second: bulk writes create thousands of objects within one.
    """
    global _stamp_cache
    second = int(time.time())
    cached = _stamp_cache
    if cached[0] == second:
        return cached[1]
    text = datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    _stamp_cache = (second, text)
    return text


def new_uid() -> str:
    """A random (version 4) UUID string, without building a ``uuid.UUID``."""
    h = f"{random.getrandbits(128) & ~(0xF << 76) & ~(0x3 << 62) | (0x4 << 76) | (0x2 << 62):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Entry:
    """One stored version of an object: the decoded dict (never mutated) and its JSON bytes."""

    __slots__ = ("data", "obj", "rv")

    def __init__(self, obj: dict[str, Any], data: bytes, rv: int) -> None:
        self.obj = obj
        self.data = data
        self.rv = rv


class Event:
    """One write in the history: ``entry`` is the new state (the final state for DELETED)."""

    __slots__ = ("_left", "entry", "gr", "name", "namespace", "prev", "rv", "type")

    def __init__(
        self, type_: str, gr: str, namespace: str, name: str, entry: Entry, prev: Entry | None
    ) -> None:
        self.type = type_
        self.gr = gr
        self.namespace = namespace
        self.name = name
        self.entry = entry
        self.prev = prev
        self.rv = entry.rv
        self._left: bytes | None = None

    def left_data(self) -> bytes:
        """The previous object at this event's version: what a watch sees leaving its selector."""
        if self._left is None:
            assert self.prev is not None
            self._left = dumps(with_resource_version(self.prev.obj, self.rv))
        return self._left


def with_resource_version(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose ``metadata.resourceVersion`` is ``rv``."""
    copy = dict(obj)
    copy["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
    return copy


def data_for(rt: ResourceType, entry: Entry) -> bytes:
    """The entry's bytes, re-encoded only when served under another version of a CRD."""
    if rt.custom and entry.obj.get("apiVersion") != rt.api_version:
        return dumps(dict(entry.obj, apiVersion=rt.api_version))
    return entry.data
