"""JSON decoding and encoding for the HTTP path: orjson when it is installed, stdlib otherwise.

``KINFORMER_JSON=stdlib`` in the environment (read at import) or :func:`use_stdlib` forces the
standard library, so both paths stay tested. A big body (a whole list) is decoded with
:func:`loads_bulk`, before which a caller higher up may act on its own thread
(:func:`before_bulk_decodes`) without the decoder knowing why: the informer pauses the cyclic
collector there (:mod:`kinformer.collector_policy`). Given a check to call between chunks (a
list request's stop), :func:`loads_bulk` decodes a big list a chunk of items at a time, so
neither a stop nor another thread waits for the whole decode, and hands each chunk to an
:class:`ItemsTaker` as it is decoded, so the whole list need never be held decoded.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, NamedTuple, Protocol

# imported by name, so mypy types it the same with orjson installed or not (the fast extra)
_orjson: ModuleType | None
try:  # pragma: no cover - depends on the installation
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover
    _orjson = None

_use_orjson = _orjson is not None and os.environ.get("KINFORMER_JSON", "").lower() != "stdlib"
_hooks = threading.local()  # .before: what this thread calls before each bulk decode, if set


def use_stdlib(force: bool = True) -> None:
    """Decode and encode with the standard library (``force=False``: orjson again if available)."""
    global _use_orjson
    _use_orjson = (not force) and _orjson is not None


def backend() -> str:
    """``"orjson"`` or ``"stdlib"``: which decoder :func:`loads` uses now."""
    return "orjson" if _use_orjson else "stdlib"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document; raises ``ValueError`` for malformed input (both backends)."""
    if _use_orjson and _orjson is not None:
        return _orjson.loads(data)
    if isinstance(data, memoryview):
        data = data.tobytes()
    return json.loads(data)


def loader() -> Callable[[bytes], Any]:
    """:func:`loads` as the decoder it calls now, for mapping over many documents (no frame each).

    Bytes only; raises ``ValueError`` for malformed input, as :func:`loads` does.
    """
    if _use_orjson and _orjson is not None:
        decode: Callable[[bytes], Any] = _orjson.loads
        return decode
    return json.loads


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON bytes."""
    if _use_orjson and _orjson is not None:
        result: bytes = _orjson.dumps(obj)
        return result
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def dumps_to_keep(obj: Any, prefix: bytes = b"") -> bytes:
    """:func:`dumps` for bytes kept long (a compact cache): exactly as big as they are long,
    begun with ``prefix``.

    orjson hands back its growing buffer, about twice the size of the JSON in it; a copy of
    just the JSON (made with the prefix) lets that buffer go.
    """
    data = dumps(obj)
    if prefix:
        return prefix + memoryview(data)
    if _use_orjson:
        return bytes(memoryview(data))
    return data


@contextlib.contextmanager
def before_bulk_decodes(hook: Callable[[], object]) -> Iterator[None]:
    """Call ``hook()`` before every :func:`loads_bulk` this thread makes inside the block.

    Blocks nest: the innermost hook is the one called, and the outer one is back after it. A
    hook that raises fails the decode.
    """
    outer = getattr(_hooks, "before", None)
    _hooks.before = hook
    try:
        yield
    finally:
        _hooks.before = outer


class ItemBytes(NamedTuple):
    """Where a decoded chunk's items lie in a list body: ``data[start:end]``, the items as the
    server sent them, separated by commas."""

    data: bytes
    start: int
    end: int

    def split(self, items: list[Any], opening: bytes = b"{") -> list[bytes] | None:
        """Each of ``items`` (the chunk, decoded) as its own bytes, exactly as sent; None when
        the text cannot be cut between items with certainty. ``opening``, when given, stands for
        each item's own ``{`` (say ``{"kind":"Pod",``: the fields a lister gives items sent
        without them), made with each item's bytes at once.

        Every item's first key must be the first item's. The cuts are then the places where
        ``},`` meets ``{`` and that key's quoted name, which can only be structure, never text
        inside a string (a string's quotes are escaped): between two items, or between two
        objects of an array inside one that begin with the same key. There must be exactly one
        fewer such places than items, so that every one lies between two items. That holds when
        the items are parted by a bare comma; a serializer parts all items of one array alike,
        so the first cut must give the first item, and the text must hold none of the newlines
        and tabs of one that lays its output out.
        """
        data, start, end = self
        if not items or data[start:start + 2] != b'{"':
            return None
        colon = data.find(b'":', start + 2, start + 256)
        if colon < 0:
            return None
        first = data[start + 2:colon].decode("utf-8", "replace")
        # every item a dict whose first key is that one, checked without a Python frame per item
        # (a loop here took a sixth of a compact list's cutting and keying)
        if set(map(type, items)) != {dict}:
            return None
        firsts = list(map(next, map(iter, items)))  # an empty item ends it early: one short
        if len(firsts) != len(items) or firsts.count(first) != len(firsts):
            return None
        for layout in (b"\n", b"\t", b"\r"):  # never raw inside a string
            if data.find(layout, start, end) >= 0:
                return None
        marker = b"}," + data[start:colon + 2]
        find, parts, at = data.find, [], start
        view = memoryview(data)  # one new bytes per item: its opening and the rest of its text
        for _ in range(len(items) - 1):
            cut = find(marker, at, end)
            if cut < 0:  # fewer cuts than boundaries
                return None
            parts.append(opening + view[at + 1:cut + 1])
            at = cut + 2
        if find(marker, at, end) >= 0:  # more cuts than boundaries
            return None
        parts.append(opening + view[at + 1:end])
        first_end = start + len(parts[0]) - len(opening) + 1  # the first item's text as sent
        try:
            if loads(data[start:first_end]) != items[0]:
                return None
        except ValueError:
            return None
        return parts


class ItemsTaker(Protocol):
    """What :func:`loads_bulk` hands a list's items to as they are decoded, a chunk at a time."""

    def restart(self) -> None:
        """Forget every chunk taken so far: the items come again, from the first."""

    def __call__(self, head: dict[str, Any], items: list[Any],
                 raw: ItemBytes | None = None) -> list[Any]:
        """The items to keep for ``items``, the next chunk; ``head`` holds the list's other
        keys that precede ``items`` in the body (all of them with the last chunk), and ``raw``,
        when not None, where the chunk's items lie in the body (:class:`ItemBytes`)."""


def loads_bulk(
    data: bytes | bytearray | memoryview | str, between: Callable[[], object] | None = None,
    take: ItemsTaker | None = None, *, kept: bool = True,
) -> Any:
    """:func:`loads` of a big body (a list), after calling this thread's hook of
    :func:`before_bulk_decodes`, if any.

    With ``between``, a list body (an object with an ``items`` array) of bytes is decoded
    :data:`CHUNK_BYTES` of items at a time, calling ``between()`` before each chunk: the decoder
    holds the interpreter lock for one chunk, not for the whole list (a second of a 200,000
    object list), so other threads run meanwhile, and ``between`` may raise to break the decode
    off (a stop); it is called once before anything else too, so a list stopped while its body
    was read is not decoded at all, nor is the hook called for it. The result is what one
    decode gives.

    With ``take``, a list body's ``items`` are what ``take`` kept of them: it is handed each
    chunk as soon as it is decoded, before the next is, so what it drops of a chunk (a
    transform's cut, the decoded form of an object it packs) is freed while the rest of the list
    still waits to be decoded, and the next chunk reuses that memory; the whole list is never
    held decoded. Decoded whole (a small body, no ``between``, a chunk that did not cut between
    two items), the list's items are handed over in one call, after ``take.restart()``. A body
    that is not an object with an ``items`` array never reaches ``take``.

    ``kept`` says whether the caller keeps the decoded objects (a dict cache) or only what it
    makes of them (False: a compact cache's bytes). A list whose objects are kept is decoded
    :data:`KEPT_CHUNK_FACTOR` times :data:`CHUNK_BYTES` at a time.
    """
    if between is not None:
        between()
    hook = getattr(_hooks, "before", None)
    if hook is not None:
        hook()
    size = CHUNK_BYTES * KEPT_CHUNK_FACTOR if kept else CHUNK_BYTES
    if between is None or type(data) is not bytes or len(data) < 2 * size:
        return _taken(loads(data), take)
    return _loads_in_chunks(data, between, take, size)


def _taken(body: Any, take: ItemsTaker | None) -> Any:
    """``body`` with its ``items`` handed to ``take`` whole (when there is one and it is a list)."""
    if take is not None and type(body) is dict and type(body.get("items")) is list:
        take.restart()
        body["items"] = take(body, body["items"])
    return body


# 32 KiB of a list's items per decode when its decoded objects are not kept (a compact cache's:
# about 30 ConfigMaps or 6 Pods, a quarter of a millisecond of the interpreter lock). A chunk's
# decoded objects fill part of one of the allocator's 1 MiB arenas, which the next chunk reuses,
# and what a cache keeps of each chunk (keys, stubs, bytes) is made among them: the bigger the
# chunk, the more arenas those few survivors end up spread over, each kept whole. From 2 MiB to
# 256 KiB a compact cache of 50,000 ConfigMaps settled 8-10 MiB smaller; from 256 KiB to 32 KiB,
# one of 30,000 settled at 38-40 MiB instead of 43-44, with no change in the sync's time.
CHUNK_BYTES = 1 << 15
# A list whose decoded objects are kept (a dict cache's) is decoded 256 KiB at a time: in 32 KiB
# chunks, the standard library's decoder, which makes one string per distinct key per decode,
# gave 30,000 5 KB Pods their own copies of their keys (801 MiB against 769), and with orjson
# the dict cache held 1.96x its fresh size after a relist against 1.83x (docs/benchmarks.md).
KEPT_CHUNK_FACTOR = 8
_ITEMS = b'"items":['
_CUT_TRIES = 8  # cuts tried per chunk before the list is decoded whole


def _item_start(data: bytes, first: int) -> bytes:
    """Where a chunk may end: ``},`` and the start of the first item up to its first key
    (``},{"metadata":``), which inside an item can only begin an object of an array whose
    objects begin alike (rare); ``},{`` when the first item does not start so."""
    colon = data.find(b":", first, first + 64)
    if colon < 0 or data[first:first + 2] != b'{"':
        return b"},{"
    return b"}," + data[first:colon + 1]


def _loads_in_chunks(data: bytes, between: Callable[[], object], take: ItemsTaker | None,
                     size: int) -> Any:
    """A list body decoded a chunk of items at a time (see :func:`loads_bulk`).

    A chunk ends where an item ends: at a ``},`` followed by the first key the first item
    begins with (``},{"metadata":``), after ``size`` bytes, decoded as ``[`` chunk ``]``.
    Such a cut inside a string or a nested array leaves that text unbalanced, so it fails to
    decode, and the next such place is tried; after :data:`_CUT_TRIES` failures in one chunk,
    the body is decoded whole, as it is when its ``items`` key
    is not the top-level object's. The last chunk is decoded with the rest of the body, which
    gives the object with every other key as it is. Each chunk goes to ``take`` as it is
    decoded, with the keys before ``items``; a list whose ``kind`` does not come before its
    items is decoded whole for ``take``, so that every chunk is handed over knowing it.
    """
    decode = loader()
    items_key = data.find(_ITEMS)
    if items_key < 0:
        return _taken(loads(data), take)
    first = items_key + len(_ITEMS)
    head = data[:first]
    try:  # "items" is a key of the top-level object, not of one nested in it
        before_items = decode(head + b"]}")
    except ValueError:
        return _taken(loads(data), take)
    if take is not None:
        if type(before_items) is not dict or "kind" not in before_items:
            return _taken(loads(data), take)
        take.restart()
    items: list[Any] = []
    begin = first
    marker = _item_start(data, first)
    view = memoryview(data)  # a chunk is copied once, into the text decoded
    while True:
        between()
        cut = data.find(marker, begin + size)
        tries = _CUT_TRIES
        while True:  # a cut between two objects of an array inside an item does not decode
            if cut < 0:
                break
            try:
                chunk = decode(b"".join((b"[", view[begin:cut + 1], b"]")))
                break
            except ValueError:
                tries -= 1
                if not tries:
                    return _taken(loads(data), take)
                cut = data.find(marker, cut + 1)
        if cut < 0:
            break
        items += chunk if take is None else take(before_items, chunk, ItemBytes(data, begin, cut + 1))
        del chunk  # freed before the next chunk is decoded, into the memory it leaves
        begin = cut + 2
    body = decode(head + data[begin:])
    if type(body) is not dict or type(body.get("items")) is not list:
        return _taken(loads(data), take)  # a second "items" key: what one decode keeps
    items += body["items"] if take is None else take(body, body["items"])
    body["items"] = items
    return body
