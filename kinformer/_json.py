"""JSON decoding and encoding for the HTTP path: orjson when it is installed, stdlib otherwise.

``KINFORMER_JSON=stdlib`` in the environment (read at import) or :func:`use_stdlib` forces the
standard library, so both paths stay tested. :func:`gc_paused` is the helper the list path wraps
around decoding a big body: the cyclic collector, walking a growing cache, not the parser, sets
the decode floor.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:  # pragma: no cover - depends on the installation
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_use_orjson = _orjson is not None and os.environ.get("KINFORMER_JSON", "").lower() != "stdlib"

_gc_lock = threading.Lock()  # guards _gc_depth and the collector's enabled state while paused
_gc_depth = 0
_gc_was_enabled = False


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


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON bytes."""
    if _use_orjson and _orjson is not None:
        result: bytes = _orjson.dumps(obj)
        return result
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def pause_gc() -> None:
    """Disable the cyclic collector until the matching :func:`resume_gc`; re-entrant, thread-safe.

    Pauses nest across threads: the collector comes back only when the last pause is resumed,
    and only if it was enabled when the first began. Every call must be paired with exactly
    one :func:`resume_gc`, on every path (use ``try``/``finally``, or :func:`gc_paused`).
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1


def resume_gc() -> None:
    """End one :func:`pause_gc`; the last one restores the collector's earlier state."""
    global _gc_depth
    with _gc_lock:
        if _gc_depth == 0:
            return
        _gc_depth -= 1
        if _gc_depth == 0 and _gc_was_enabled:
            gc.enable()


def freeze_gc() -> None:
    """Move every object tracked now to the collector's permanent generation (``gc.freeze``).

    Called once a cache is synced: later collections no longer walk it, so their cost stays
    that of the young objects. Frozen objects are still freed by reference counting; only
    cyclic garbage that exists at this moment stays until ``gc.unfreeze()``.
    """
    gc.freeze()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block; restore its previous state after.

    Thread-safe and re-entrant: when blocks overlap (several threads decoding at once), the
    collector is re-enabled only when the last one exits, and only if it was enabled before the
    first one entered. The state is restored even when the block raises.
    """
    pause_gc()
    try:
        yield
    finally:
        resume_gc()
