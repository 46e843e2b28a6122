"""The cyclic collector's state around big caches: the one owner of ``gc`` state, the mechanism.

A big first list allocates millions of objects and frees none, and the collector, walking the
growing cache again and again, not the parser, sets the decode floor. So an informer pauses it
over its lists (:func:`paused` around a block, a :class:`HeldPause` begun on one thread and
ended on any), and a synced informer's cache is frozen (:func:`freeze`) so that later
collections do not walk it again. This module is the mechanism; when to pause is the informer's
collector policy (:mod:`kinformer.collector_policy`), its one user in the library.

A frozen object that is part of a reference cycle is never collected, and the cache of a stopped
informer may well be held by such a cycle (its reflector's, its FIFO's): so an informer that
stops reports its cache (:func:`informer_stopped`), which gives everything kinformer froze back
to the collector, and no freeze happens while the cache of a stopped informer is still alive,
since it would keep it for good. The first pause after a stop starts with one full collection,
before the list's objects exist, so a cache that was already dropped does not hold the next
freeze back.

Pauses nest across threads and always restore the collector's earlier state, even on errors.
The client and the reflector never import this module (an import-linter contract says so); the
test server (``testing/``) pauses around its own bulk work.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

_lock = threading.Lock()  # guards the collector's state below, and its enabled state while paused
_depth = 0
_was_enabled = False
_frozen = False  # gc.freeze() called here since the last gc.unfreeze()
_collect_first = False  # an informer stopped: the next outermost pause begins with a collection
_stopped_informers: weakref.WeakSet[Any] = weakref.WeakSet()  # their caches, not yet reclaimed
_exiting = False  # exiting() was called: the collector stays off and nothing is given back to it


def pause() -> None:
    """Disable the cyclic collector until the matching :func:`resume`; re-entrant, thread-safe.

    Pauses nest across threads: the collector comes back only when the last pause is resumed,
    and only if it was enabled when the first began. Every call must be paired with exactly
    one :func:`resume`, on every path (use ``try``/``finally``, or :func:`paused`).
    """
    global _depth, _was_enabled, _collect_first
    with _lock:
        collect = _depth == 0 and _collect_first and len(_stopped_informers) > 0 and not _exiting
        if collect:
            _collect_first = False
    if collect:  # outside the lock: a finalizer may run in it
        gc.collect()
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def resume() -> None:
    """End one :func:`pause`; the last one restores the collector's earlier state."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _was_enabled and not _exiting:
            gc.enable()


def freeze() -> bool:
    """Move every object tracked now to the collector's permanent generation (``gc.freeze``).

    Called once a cache is synced: later collections no longer walk it, so their cost stays
    that of the young objects. Frozen objects are still freed by reference counting; cyclic
    garbage that exists at this moment stays until :func:`informer_stopped` unfreezes it. Does
    nothing (False) while a stopped informer's cache is alive: frozen, it could never be
    reclaimed.
    """
    global _frozen
    with _lock:
        if len(_stopped_informers):
            return False
        gc.freeze()
        _frozen = True
    trim()
    return True


def _find_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, found among the symbols the interpreter has loaded already
    (``dlopen(NULL)``: microseconds); None on another system or another libc (musl has none).

    Looked up when this module is imported, not at the first trim: that comes just after a
    first list, and what the lookup leaves (the library handle, its function object) would then
    be made among the list's freed objects and keep their arenas. ``ctypes.util.find_library``
    is not used: it runs ``ldconfig`` in a child process.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        found: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return found


_trim: Callable[[int], int] | None = _find_trim()


def trim() -> bool:
    """Give the C allocator's free pages back to the operating system (glibc's
    ``malloc_trim(0)``); False where there is no such call (another libc, another system).

    A synced cache has just freed what its list was decoded into; the allocator keeps those
    pages for later, and a process holds them as resident memory until it does.
    ``malloc_trim`` returns every whole free page inside its heaps, not only those at the top.
    Pages of Python's own small-object allocator (arenas) that still hold a live object stay.
    Takes milliseconds for a heap of a few hundred MiB; thread-safe.
    """
    if _trim is None:
        return False
    _trim(0)
    return True


def informer_stopped(cache: object) -> None:
    """Give what :func:`freeze` froze back to the collector: the informer of ``cache`` stopped.

    A stopped informer's cache becomes garbage once its owner drops the informer, but a
    reference cycle may hold it, which the collector never looks at while frozen. Until
    ``cache`` is reclaimed, :func:`freeze` refuses; the next outermost :func:`pause` collects
    first.
    """
    global _frozen, _collect_first
    with _lock:
        _stopped_informers.add(cache)
        _collect_first = True
        if _frozen and not _exiting:
            gc.unfreeze()
            _frozen = False


def exiting() -> None:
    """The process exits next: turn the collector off for good and freeze everything tracked.

    A stop then costs no collection: informers that stop give nothing back to the collector
    and a pause that ends leaves it off (the first collection after a list stopped midway
    walks every object the list made: a third of a second at 200,000 objects), and the
    interpreter's last collections at exit leave alone a heap that the operating system takes
    back whole anyway (seconds, for a few hundred thousand cached objects held by cycles).
    Objects are still freed by reference counting. For a command that is about to end, never
    for the library; idempotent.
    """
    global _exiting
    with _lock:
        _exiting = True
        gc.disable()
        gc.freeze()


class HeldPause:
    """One pause that its owner begins on one thread and may end on any, once per beginning.

    :meth:`begin` pauses the collector unless this pause is held already; :meth:`end` resumes
    it if held, after :func:`freeze` when asked. Thread-safe; :meth:`end` is idempotent, so
    every path that may finish the work (success, failure, stop) can call it.
    """

    __slots__ = ("_lock", "held")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards held, and so that one pause is resumed once
        self.held = False  # this object holds one pause; may be read without the lock

    def begin(self) -> None:
        """Pause the collector, unless this pause is held already."""
        with self._lock:
            if not self.held:
                pause()
                self.held = True

    def end(self, freeze_first: bool = False) -> None:
        """Resume the pause if held; with ``freeze_first``, :func:`freeze` before resuming."""
        with self._lock:
            if not self.held:
                return
            self.held = False
            if freeze_first:
                freeze()
            resume()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block; restore its previous state after.

    Thread-safe and re-entrant: when blocks overlap (several threads decoding at once), the
    collector is re-enabled only when the last one exits, and only if it was enabled before the
    first one entered. The state is restored even when the block raises.
    """
    pause()
    try:
        yield
    finally:
        resume()
