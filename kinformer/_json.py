"""JSON decoding and encoding for the HTTP path: orjson when it is installed, stdlib otherwise.

``KINFORMER_JSON=stdlib`` in the environment (read at import) or :func:`use_stdlib` forces the
standard library, so both paths stay tested. A big body (a whole list) is decoded with
:func:`loads_bulk`, before which a caller higher up may act on its own thread
(:func:`before_bulk_decodes`) without the decoder knowing why: the informer pauses the cyclic
collector there (:mod:`kinformer.collector_policy`). Given a check to call between chunks (a
list request's stop), :func:`loads_bulk` decodes a big list a few MiB of items at a time, so
neither a stop nor another thread waits for the whole decode.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:  # pragma: no cover - depends on the installation
    import orjson as _orjson
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


def dumps_to_keep(obj: Any) -> bytes:
    """:func:`dumps` for bytes kept long (a compact cache): exactly as big as they are long.

    orjson hands back its growing buffer, about twice the size of the JSON in it; a copy of
    just the JSON lets that buffer go.
    """
    data = dumps(obj)
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


def loads_bulk(
    data: bytes | bytearray | memoryview | str, between: Callable[[], object] | None = None
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
    """
    if between is not None:
        between()
    hook = getattr(_hooks, "before", None)
    if hook is not None:
        hook()
    if between is None or type(data) is not bytes or len(data) < 2 * CHUNK_BYTES:
        return loads(data)
    return _loads_in_chunks(data, between)


CHUNK_BYTES = 1 << 21  # 2 MiB of a list's items per decode: 5-20 ms of the interpreter lock
_ITEMS = b'"items":['


def _loads_in_chunks(data: bytes, between: Callable[[], object]) -> Any:
    """A list body decoded a chunk of items at a time (see :func:`loads_bulk`).

    A chunk ends where an item ends: at a ``},{`` after :data:`CHUNK_BYTES`, decoded as
    ``[`` chunk ``]``. Such a cut inside a string or a nested array leaves that text unbalanced,
    so it fails to decode, and the body is then decoded whole, as it is when its ``items`` key
    is not the top-level object's. The last chunk is decoded with the rest of the body, which
    gives the object with every other key as it is.
    """
    decode = loader()
    items_key = data.find(_ITEMS)
    if items_key < 0:
        return loads(data)
    first = items_key + len(_ITEMS)
    head = data[:first]
    try:  # "items" is a key of the top-level object, not of one nested in it
        decode(head + b"]}")
    except ValueError:
        return loads(data)
    items: list[Any] = []
    begin = first
    while True:
        between()
        cut = data.find(b"},{", begin + CHUNK_BYTES)
        if cut < 0:
            break
        try:
            chunk = decode(b"[" + data[begin:cut + 1] + b"]")
        except ValueError:  # the cut was not between two items
            return loads(data)
        items += chunk
        begin = cut + 2
    body = decode(head + data[begin:])
    if type(body) is not dict or type(body.get("items")) is not list:
        return loads(data)  # a second "items" key: what one decode keeps
    items += body["items"]
    body["items"] = items
    return body
