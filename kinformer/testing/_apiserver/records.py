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

from kinformer.testing._apiserver.clusters import ROOT
from kinformer.testing._apiserver.resources import ResourceType

# Go's encoder escapes these inside strings (HTML-safe JSON); kube-apiserver's bodies show them so
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def _go_escaped(data: bytes) -> bytes:
    # four fast scans (a regex alternation is ten times slower) for the common case
    if b"<" not in data and b">" not in data and b"&" not in data and b"\xe2\x80" not in data:
        return data
    for raw, escaped in _GO_ESCAPES:
        data = data.replace(raw, escaped)
    return data


try:
    import orjson

    def dumps(obj: Any, sort_keys: bool = False) -> bytes:
        """Compact JSON bytes of ``obj`` as Go writes them (``<``, ``>``, ``&`` escaped);
        ``sort_keys`` orders every object's keys, as Go does for a map."""
        if sort_keys:
            return _go_escaped(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS))
        return _go_escaped(orjson.dumps(obj))

    def loads(data: bytes | str) -> Any:
        """Decode JSON; raises ValueError on bad input."""
        return orjson.loads(data)

    def copy(obj: Any) -> Any:
        """A deep copy of a JSON document (through its encoding: fast for big ones)."""
        return orjson.loads(orjson.dumps(obj))

except ImportError:  # pragma: no cover - orjson is an optional speed-up

    def dumps(obj: Any, sort_keys: bool = False) -> bytes:
        """Compact JSON bytes of ``obj`` as Go writes them (``<``, ``>``, ``&`` escaped);
        ``sort_keys`` orders every object's keys, as Go does for a map."""
        return _go_escaped(json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                                      sort_keys=sort_keys).encode())

    def loads(data: bytes | str) -> Any:
        """Decode JSON; raises ValueError on bad input."""
        return json.loads(data)

    def copy(obj: Any) -> Any:
        """A deep copy of a JSON document (through its encoding: fast for big ones)."""
        return json.loads(json.dumps(obj))


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
    """One stored version of an object: the decoded dict (never mutated) and its JSON bytes.

    The bytes are kept in two parts, split where a list item begins: ``head`` is
    ``{"kind":"K","apiVersion":"V",`` for a built-in type (one bytes object shared by every
    object of the type), or just ``{`` for a custom object, whose list items keep their kind as
    on a real server; ``tail`` is the rest. A list joins tails, a watch event and a GET write
    ``head + tail``: each version is encoded once, at write time.
    """

    __slots__ = ("head", "obj", "rv", "tail")

    def __init__(self, obj: dict[str, Any], head: bytes, tail: bytes, rv: int) -> None:
        self.obj = obj
        self.head = head
        self.tail = tail
        self.rv = rv

    @property
    def data(self) -> bytes:
        """The object's JSON (no trailing newline)."""
        return self.head + self.tail


_heads: dict[tuple[str, str], bytes] = {}


def type_head(rt: ResourceType) -> bytes:
    """``{"kind":"K","apiVersion":"V",``: how every stored object of built-in type ``rt`` begins."""
    key = (rt.kind, rt.api_version)
    head = _heads.get(key)
    if head is None:
        head = _heads.setdefault(key, dumps({"kind": rt.kind, "apiVersion": rt.api_version})[:-1]
                                 + b",")
    return head


def encode(rt: ResourceType, obj: dict[str, Any], rv: int) -> Entry:
    """The entry of ``obj`` (already in the server's key order, see :func:`ordered`) at ``rv``.

    A custom object is written with sorted keys, as Go writes the maps an unstructured object
    is made of; a built-in one in the order its dict has.
    """
    if rt.custom:
        return Entry(obj, b"{", dumps(obj, sort_keys=True)[1:], rv)
    data = dumps(obj)
    head = type_head(rt)
    if data.startswith(head):
        return Entry(obj, head, data[len(head):], rv)
    return Entry(obj, b"{", data[1:], rv)


_LINE_STARTS: dict[tuple[str, bytes], bytes] = {}  # '{"type":"ADDED","object":' + a type's head


class Event:
    """One write in the history: ``entry`` is the new state (the final state for DELETED);
    ``cluster`` the logical cluster it was written in."""

    __slots__ = ("_left", "_line", "cluster", "entry", "gr", "name", "namespace", "prev", "rt",
                 "rv", "type")

    def __init__(
        self, type_: str, rt: ResourceType, namespace: str, name: str, entry: Entry,
        prev: Entry | None, cluster: str = ROOT,
    ) -> None:
        self.type = type_
        self.rt = rt
        self.cluster = cluster
        self.gr = rt.group_resource
        self.namespace = namespace
        self.name = name
        self.entry = entry
        self.prev = prev
        self.rv = entry.rv
        self._left: Entry | None = None
        self._line: bytes | None = None

    def line(self) -> bytes:
        """The watch event line every watcher without selectors sees (made once, shared)."""
        line = self._line
        if line is None:
            entry = self.entry
            start = _LINE_STARTS.get((self.type, entry.head))
            if start is None:
                start = _LINE_STARTS.setdefault(
                    (self.type, entry.head),
                    b'{"type":"' + self.type.encode() + b'","object":' + entry.head)
            line = self._line = b"".join((start, entry.tail, b"}\n"))
        return line

    def left(self) -> Entry:
        """The previous object at this event's version: what a watch sees leaving its selector."""
        if self._left is None:
            assert self.prev is not None
            self._left = encode(self.rt, with_resource_version(self.prev.obj, self.rv), self.rv)
        return self._left


# ObjectMeta's fields in the order of the Go struct, which is the order kube-apiserver writes them
META_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
              "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
              "labels", "annotations", "ownerReferences", "finalizers", "managedFields")


class _Rank(dict[str, int]):
    def __missing__(self, key: str) -> int:
        return len(META_ORDER)  # unknown fields go last, in the order given


_META_RANK = _Rank((key, i) for i, key in enumerate(META_ORDER))
_TOP = frozenset({"kind", "apiVersion", "metadata", "status"})


def ordered(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its keys in the order kube-apiserver writes a built-in object: ``kind``,
    ``apiVersion``, ``metadata`` (fields in Go's order, unknown ones last), the other fields as
    given, ``status`` last (it follows the spec in every Go type)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta = {k: meta[k] for k in sorted(meta, key=_META_RANK.__getitem__)}
    out = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "metadata": meta}
    out.update({k: v for k, v in obj.items() if k not in _TOP})
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def with_resource_version(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose ``metadata.resourceVersion`` is ``rv``."""
    copy = dict(obj)
    copy["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
    return copy


def served(rt: ResourceType, entry: Entry) -> Entry:
    """``entry`` as ``rt`` serves it: re-encoded only under another version of a CRD."""
    if rt.custom and entry.obj.get("apiVersion") != rt.api_version:
        return encode(rt, dict(entry.obj, apiVersion=rt.api_version), entry.rv)
    return entry
