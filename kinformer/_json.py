"""JSON decoding and encoding for the HTTP path: orjson when it is installed, stdlib otherwise.

``KINFORMER_JSON=stdlib`` in the environment (read at import) or :func:`use_stdlib` forces the
standard library, so both paths stay tested. :func:`gc_paused` is the helper the list path wraps
around decoding a big body: the cyclic collector, walking a growing cache, not the parser, sets
the decode floor.

A synced informer's cache is frozen (:func:`freeze_gc`) so that later collections do not walk
it again. A frozen object that is part of a reference cycle is never collected, and a stopped
informer is such a cycle holding its whole cache: so an informer that stops reports it
(:func:`informer_stopped`), which gives everything kinformer froze back to the collector, and no
freeze happens while a stopped informer is still alive, since it would keep it for good. The
first pause after a stop starts with one full collection, before the list's objects exist, so
a stopped informer that was already dropped does not hold the next freeze back.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
import weakref
from collections.abc import Iterator
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:  # pragma: no cover - depends on the installation
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_use_orjson = _orjson is not None and os.environ.get("KINFORMER_JSON", "").lower() != "stdlib"

_gc_lock = threading.Lock()  # guards the collector's state below, and its enabled state while paused
_gc_depth = 0
_gc_was_enabled = False
_gc_frozen = False  # gc.freeze() called here since the last gc.unfreeze()
_gc_collect_first = False  # an informer stopped: the next outermost pause begins with a collection
_stopped_informers: weakref.WeakSet[Any] = weakref.WeakSet()  # stopped and not yet reclaimed
_held = threading.local()  # .block: the innermost gc_pause_held block on this thread, if any


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
    global _gc_depth, _gc_was_enabled, _gc_collect_first
    held: list[bool] | None = getattr(_held, "block", None)
    pauses = 1
    if held is not None and not held[0]:  # the first pause in a gc_pause_held block: hold one more
        held[0] = True
        pauses = 2
    with _gc_lock:
        collect = _gc_depth == 0 and _gc_collect_first and len(_stopped_informers) > 0
        if collect:
            _gc_collect_first = False
    if collect:  # outside the lock: a finalizer may run in it
        gc.collect()
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += pauses


def resume_gc() -> None:
    """End one :func:`pause_gc`; the last one restores the collector's earlier state."""
    global _gc_depth
    with _gc_lock:
        if _gc_depth == 0:
            return
        _gc_depth -= 1
        if _gc_depth == 0 and _gc_was_enabled:
            gc.enable()


def freeze_gc() -> bool:
    """Move every object tracked now to the collector's permanent generation (``gc.freeze``).

    Called once a cache is synced: later collections no longer walk it, so their cost stays
    that of the young objects. Frozen objects are still freed by reference counting; cyclic
    garbage that exists at this moment stays until :func:`informer_stopped` unfreezes it. Does
    nothing (False) while a stopped informer is alive: frozen, it could never be reclaimed.
    """
    global _gc_frozen
    with _gc_lock:
        if len(_stopped_informers):
            return False
        gc.freeze()
        _gc_frozen = True
    return True


def informer_stopped(informer: object) -> None:
    """Give what :func:`freeze_gc` froze back to the collector: ``informer`` has stopped.

    A stopped informer and its cache become garbage once its owner drops it, but they are a
    reference cycle that the collector never looks at while frozen. Until ``informer`` is
    reclaimed, :func:`freeze_gc` refuses; the next outermost :func:`pause_gc` collects first.
    """
    global _gc_frozen, _gc_collect_first
    with _gc_lock:
        _stopped_informers.add(informer)
        _gc_collect_first = True
        if _gc_frozen:
            gc.unfreeze()
            _gc_frozen = False


@contextlib.contextmanager
def gc_pause_held() -> Iterator[None]:
    """Keep the first pause begun on this thread inside the block until the block ends.

    The reflector wraps a list in it: the request and the download, which may wait on the
    network for as long as the read timeout, run with the collector on; the lister's first
    pause (around its decode) then lasts until the list is queued, so no collection walks the
    decoded objects in between. A lister that never pauses leaves the collector alone.
    """
    outer = getattr(_held, "block", None)
    held = [False]  # set by the first pause_gc inside the block
    _held.block = held
    try:
        yield
    finally:
        _held.block = outer
        if held[0]:
            resume_gc()


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
