"""The cache mutation detector: finds cached objects that someone changed in place.

client-go's ``KUBE_CACHE_MUTATION_DETECTOR``. Every object an informer caches is a plain dict
shared with every handler and lister caller, so one that edits what it was handed silently
changes the cache for everybody. When detection is on, the informer caches into a
:class:`CheckedIndexer`, which hands each object it stores to a :class:`MutationDetector`; the
detector keeps a deep copy of it until the key is written again or deleted, and
:meth:`MutationDetector.check` names the keys whose object no longer equals its copy; the log
line of each also says which fields changed (:func:`field_changes`, as client-go's detector
prints its diff), never a Secret's values. When it is off, the informer uses a plain
:class:`~kinformer.Indexer` and nothing here runs.
"""

from __future__ import annotations

import builtins
import copy
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kinformer import context, meta
from kinformer.cache import store
from kinformer.cache.thread_safe_store import NOT_APPLIED, Indexers
from kinformer.clock import Clock

log = logging.getLogger(__name__)

ENV_VAR = "KINFORMER_CACHE_MUTATION_DETECTOR"
_TRUE = ("1", "true")
MAX_CHANGES = 5  # field paths one log line names; more are counted ("and 3 more")
MAX_VALUE = 40  # characters of a value shown before and after a change
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")  # printed after a dot; others in brackets
_CONTENTS = ("data", "stringData")  # a Secret's credentials: never shown


def field_changes(original: Any, current: Any, limit: int = MAX_CHANGES) -> list[str]:
    """What changed from ``original`` to ``current``, one field path each, at most ``limit``.

    ``metadata.labels.app: 'a' -> 'b'``, ``data.x: added``, ``spec.replicas: removed``; list
    items as ``[2]``, keys that are not plain words as ``['app.kubernetes.io/name']``; values
    shortened to :data:`MAX_VALUE` characters; a Secret's (its ``kind``, or the ``type`` every
    Secret has) under ``data`` or ``stringData`` never shown: ``data.token: changed``. Past
    ``limit`` changes one last entry counts the rest (``and 3 more``). Only JSON-like values
    (dicts, lists, scalars) are walked into.
    """
    found: list[str] = []
    _walk(original, current, "", found, _is_secret(original) or _is_secret(current))
    if len(found) > limit:
        return [*found[:limit], f"and {len(found) - limit} more"]
    return found


def _walk(old: Any, new: Any, path: str, found: list[str], secret: bool) -> None:
    if type(old) is dict and type(new) is dict:
        for key in old:
            child = _join(path, key)
            if key not in new:
                found.append(f"{child}: removed")
            else:
                _walk(old[key], new[key], child, found, secret)
        found.extend(f"{_join(path, key)}: added" for key in new if key not in old)
    elif type(old) is list and type(new) is list:
        for index, (before, after) in enumerate(zip(old, new, strict=False)):  # the rest below
            _walk(before, after, f"{path}[{index}]", found, secret)
        found.extend(f"{path}[{i}]: removed" for i in range(len(new), len(old)))
        found.extend(f"{path}[{i}]: added" for i in range(len(old), len(new)))
    elif type(old) is not type(new) or old != new:
        if secret and re.split(r"[.\[]", path, maxsplit=1)[0] in _CONTENTS:
            found.append(f"{path}: changed")
        else:
            found.append(f"{path or '(the object)'}: {_short(old)} -> {_short(new)}")


def _is_secret(obj: Any) -> bool:
    """Whether ``obj`` is a Secret: its ``kind`` says so, or (a listed one has no kind) it has
    the top-level ``type`` string every Secret has and no other object with data does."""
    return type(obj) is dict and (obj.get("kind") == "Secret" or (
        isinstance(obj.get("type"), str) and any(field in obj for field in _CONTENTS)))


def _join(path: str, key: Any) -> str:
    if isinstance(key, str) and _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def _short(value: Any) -> str:
    text = meta.shown(value, MAX_VALUE + 1) if _is_secret(value) else repr(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


def enabled(detect_mutations: bool | None) -> bool:
    """``detect_mutations`` itself when given, else whether ``$KINFORMER_CACHE_MUTATION_DETECTOR``
    is ``1`` or ``true`` (any case)."""
    if detect_mutations is not None:
        return bool(detect_mutations)
    return os.environ.get(ENV_VAR, "").strip().lower() in _TRUE


class MutationDetector:
    """Deep copies of what a cache holds, keyed as the cache keys them.

    Thread-safe. :meth:`cached` records an object as it enters the cache (a copy taken at
    once, before any handler sees it), :meth:`dropped` forgets a key, :meth:`reset` starts over
    from a whole new content. :meth:`check` compares each recorded object with its copy.
    :meth:`run` checks every ``period`` seconds and logs each key found changed at ERROR,
    once until that key is cached again.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()  # guards _copies and _reported
        self._copies: dict[str, tuple[Any, Any]] = {}  # key -> (the cached object, its copy)
        self._reported: set[str] = set()  # keys logged already; a key cached again leaves it

    def cached(self, key: str, obj: Any) -> None:
        """``obj`` is now cached under ``key``."""
        pair = (obj, copy.deepcopy(obj))
        with self._lock:
            self._copies[key] = pair
            self._reported.discard(key)

    def cached_many(self, items: Mapping[str, Any]) -> None:
        """Every ``key: obj`` of ``items`` is now cached."""
        pairs = {key: (obj, copy.deepcopy(obj)) for key, obj in items.items()}
        with self._lock:
            self._copies.update(pairs)
            self._reported.difference_update(pairs)

    def dropped(self, key: str) -> None:
        """``key`` left the cache."""
        with self._lock:
            self._copies.pop(key, None)
            self._reported.discard(key)

    def reset(self, items: Mapping[str, Any]) -> None:
        """The cache's whole content is now ``items``."""
        pairs = {key: (obj, copy.deepcopy(obj)) for key, obj in items.items()}
        with self._lock:
            self._copies = pairs
            self._reported.clear()

    def check(self) -> list[str]:
        """The keys, sorted, whose cached object no longer equals the copy taken when cached."""
        with self._lock:
            pairs = list(self._copies.items())
        mutated = []
        for key, (obj, original) in pairs:
            try:
                changed = obj != original
            except RuntimeError:  # changed while being compared: changed all the same
                changed = True
            if changed:
                mutated.append(key)
        return sorted(mutated)

    def run(self, ctx: context.Context, period: float, clock: Clock) -> None:
        """Check every ``period`` seconds until ``ctx`` is cancelled; log new findings at ERROR."""
        while not clock.wait(ctx.done, period):
            self.report()

    def report(self) -> list[str]:
        """Check, log each mutated key not logged yet at ERROR with the fields that changed,
        and return those keys."""
        mutated = self.check()
        with self._lock:
            new = [(key, self._copies[key]) for key in mutated
                   if key not in self._reported and key in self._copies]
            self._reported.update(key for key, _ in new)
        for key, (obj, original) in new:
            try:
                changes = "; ".join(field_changes(original, obj))
            except RuntimeError:  # changed again while being compared
                changes = "changed while being compared"
            log.error("cache mutation detected: %s (informer %s; copy what the cache hands you "
                      "before changing it): %s", key, self.name, changes)
        return [key for key, _ in new]


class CheckedIndexer(store.Indexer):
    """An :class:`~kinformer.Indexer` that tells a :class:`MutationDetector` what it caches.

    The same behaviour as the Indexer, plus a deep copy of every object written (taken after
    the write succeeded) and forgetting every key deleted or replaced away.
    """

    __slots__ = ("detector",)

    def __init__(
        self, key_func: store.KeyFunc, indexers: Indexers | None, detector: MutationDetector
    ) -> None:
        super().__init__(key_func, indexers)
        self.detector = detector

    def add(self, obj: Any, key: str | None = None) -> None:
        if key is None:
            key = self.key_of(obj)
        self._write(obj, key)
        self.detector.cached(key, obj)

    update = add

    def delete(self, obj: Any) -> None:
        key = self.key_of(obj)
        self._delete(key, obj)
        self.detector.dropped(key)

    def add_new(self, items: dict[str, Any],
                namespace_runs: meta.NamespaceRuns | None = None) -> bool:
        if not super().add_new(items, namespace_runs):
            return False
        self.detector.cached_many(items)
        return True

    def apply_batch(self, changes: Sequence[tuple[str, Any, bool]]) -> builtins.list[Any]:
        olds = super().apply_batch(changes)
        detector = self.detector
        for (key, obj, delete), old in zip(changes, olds, strict=True):
            if old is NOT_APPLIED:
                continue
            if delete:
                detector.dropped(key)
            else:
                detector.cached(key, obj)
        return olds

    def _replace(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        super()._replace(items, resource_version)
        self.detector.reset(items)
