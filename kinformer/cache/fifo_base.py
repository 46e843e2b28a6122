"""What the two FIFOs share: sync tracking, closing, keys, transforms and waiting for work.

:class:`~kinformer.DeltaFIFO` (per-key histories, the classic profile) and
:class:`~kinformer.RealFIFO` (a log of deltas, the modern one) differ in how they queue and
pop; both keep the same state under one lock and follow the same rules for it, kept here once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from kinformer import _checks, errors
from kinformer.cache.store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a key function's errors: none may quote a token

TransformFunc = Callable[[Any], Any]
"""Applied once to every incoming object before it is queued."""


class FIFOBase:
    """The state of a FIFO and its rules; subclasses hold the queue itself.

    ``_lock`` guards everything; ``_cond`` wakes poppers. ``_initial_population_count`` counts
    what is left of the first list, and ``_synced`` (written under the lock, read without it)
    never turns True before ``_populated``. ``_waiting`` counts poppers inside ``wait()`` so
    producers notify only while someone listens.
    """

    def __init__(self, key_func: KeyFunc, transformer: TransformFunc | None) -> None:
        self._key_func = key_func
        self._transformer = transformer
        self._lock = threading.Lock()  # hot paths take it directly: Condition.__enter__ is slower
        self._cond = threading.Condition(self._lock)
        self._populated = False
        self._initial_population_count = 0
        self._closed = False
        self._waiting = 0
        self._synced = False

    # -- keys and transforms -----------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """The key for an object, a DeletedFinalStateUnknown (its key) or Deltas (the newest's)."""
        if type(obj) is list:
            if not obj:
                raise errors.KeyFuncError("0 length Deltas object; can't get key")
            obj = obj[-1][1]
        if type(obj) is DeletedFinalStateUnknown:
            return obj.key
        return self._key_func(obj)

    def _fits_listed_keys(self, objs: list[Any], keys: list[str]) -> bool:
        """Whether a lister's keys (:func:`~kinformer.meta_namespace_key_func`'s, one per
        object) are this FIFO's: it keys by that function, and they are as many as ``objs``."""
        return (self._key_func in (meta_namespace_key_func, deletion_handling_meta_namespace_key_func)
                and len(keys) == len(objs))

    def _keyed(self, objs: Iterable[Any]) -> list[tuple[str, Any]]:
        """Each of ``objs`` with its key, transformed, in order; a key or transform error
        raises before anything is queued."""
        key_func, key_of, transformer = self._key_func, self.key_of, self._transformer
        pairs = []
        for obj in objs:
            key = key_func(obj) if type(obj) is dict else key_of(obj)
            if transformer is not None:
                obj = self._transform(obj)
            pairs.append((key, obj))
        return pairs

    def _known_object(self, known: KeyListerGetter, key: str, during: str) -> Any | None:
        """The known object under ``key``; None, with a warning, when the lookup failed or the
        object vanished from ``known`` since its key was listed (``during`` names the step)."""
        try:
            obj = known.get_by_key(key)
        except Exception:
            log.warning("known-object lookup failed key=%s", key, exc_info=True)
            return None
        if obj is None:
            log.warning("key=%s vanished from known objects during %s", key, during)
        return obj

    def _transform(self, obj: Any) -> Any:
        """``obj`` through the transformer; a DeletedFinalStateUnknown went through it already."""
        transformer = self._transformer
        if transformer is None or type(obj) is DeletedFinalStateUnknown:
            return obj
        return transformer(obj)

    # -- waiting -----------------------------------------------------------------------------

    def _wait_for_locked(self, line: deque[Any], timeout: float | None) -> None:
        """With the lock held and ``line`` (the queue) empty: wait until something is queued.

        Raises :class:`~kinformer.FIFOClosedError` once closed and still empty,
        ``TimeoutError`` after ``timeout`` seconds, :class:`~kinformer.ConfigurationError` for a
        ``timeout`` that is neither None nor finite seconds.
        """
        timeout = _checks.timeout("timeout", timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not line:
            if self._closed:
                raise errors.FIFOClosedError()
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"{type(self).__name__}.pop: nothing queued after {timeout}s")
            self._waiting += 1
            try:
                self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    # -- state -------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list (or earlier direct changes) has been fully processed."""
        return self._synced

    def close(self) -> None:
        """Close the queue and wake every ``pop``; producers may still add (and pops drain)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed
