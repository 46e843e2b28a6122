"""Staleness mitigation: do not reconcile on a cache that has not seen the controller's own write.

client-go 1.36's answer ("Staleness Mitigation and Observability for Controllers"): a controller
notes the resourceVersion each of its writes returned (:meth:`StalenessTracker.wrote_at`) and,
before reconciling a request, checks that the informer's cache has reached it
(:meth:`StalenessTracker.ensure_ready`, reading ``last_store_sync_resource_version()``). The
comparison is :func:`compare_resource_version`, apimachinery's ``CompareResourceVersion``:
numeric, as Kubernetes 1.35+ guarantees (KEP-5504). A server whose versions are not numbers
turns the check off for that informer, logged once. The builder (``builder.py``) runs the check
and the :class:`~kinformer.CachedClient` (``cached_client.py``) records the writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable
from typing import Protocol

from kinformer import errors

log = logging.getLogger(__name__)


def _check(rv: str) -> str:
    if not isinstance(rv, str) or not rv or not rv.isascii() or not rv.isdigit() or rv[0] == "0":
        raise errors.InvalidResourceVersionError(
            f"resourceVersion {rv!r} is not a positive decimal integer without leading zeros")
    return rv


def compare_resource_version(a: str, b: str) -> int:
    """-1, 0 or 1 as resourceVersion ``a`` is older than, the same as or newer than ``b``.

    Both must be positive decimal integers without leading zeros, else
    :class:`~kinformer.InvalidResourceVersionError` (a ValueError), as apimachinery's
    ``CompareResourceVersion``; they are compared as numbers of any length.

    >>> compare_resource_version("9", "10"), compare_resource_version("10", "10")
    (-1, 0)
    """
    a, b = _check(a), _check(b)
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


class StoreVersioned(Protocol):
    """What the check reads: an informer's store and the version it last synced to."""

    def last_store_sync_resource_version(self) -> str: ...


class StalenessTracker:
    """The resourceVersion of each request's last write, and whether a cache has caught up.

    Thread-safe. Keys are any hashable (a built controller uses its :class:`Request`).
    :meth:`wrote_at` keeps the newest version written for a key, :meth:`forget` drops it (a
    delete, or a request that needs no more checking). :meth:`ensure_ready` is True when no
    write is recorded for the key, when the store's last synced version has reached it, or
    when versions of that store are not numbers (then the check is off for it, logged once).
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._lock = threading.Lock()  # guards _written, _disabled
        self._written: dict[Hashable, tuple[str, str]] = {}  # key -> (informer name, version)
        self._disabled: set[str] = set()  # informers whose versions are not numbers

    def wrote_at(self, key: Hashable, informer: str, resource_version: str) -> None:
        """Record that a write for ``key`` through ``informer``'s resource returned
        ``resource_version``; an older version than the one recorded is ignored."""
        if not resource_version:
            return
        with self._lock:
            current = self._written.get(key)
            if current is not None and current[0] == informer:
                try:
                    if compare_resource_version(resource_version, current[1]) < 0:
                        return
                except errors.InvalidResourceVersionError:
                    pass
            self._written[key] = (informer, resource_version)

    def forget(self, key: Hashable) -> None:
        """Drop the record of ``key``'s writes."""
        with self._lock:
            self._written.pop(key, None)

    def written(self, key: Hashable) -> tuple[str, str] | None:
        """``(informer, resourceVersion)`` of ``key``'s last recorded write, or None."""
        with self._lock:
            return self._written.get(key)

    def ensure_ready(self, key: Hashable, stores: dict[str, StoreVersioned]) -> bool:
        """True when ``key`` may be reconciled: its last write's informer (in ``stores``, by
        name) has synced its store to that write's version, or nothing blocks the check.

        Once the store reached the version the record is dropped. A store not in ``stores``
        (the resource is not watched) does not hold the request back.
        """
        with self._lock:
            record = self._written.get(key)
            if record is None or record[0] in self._disabled:
                return True
        informer, written = record
        source = stores.get(informer)
        if source is None:
            return True
        synced = source.last_store_sync_resource_version()
        if not synced:
            return False
        try:
            ready = compare_resource_version(synced, written) >= 0
        except errors.InvalidResourceVersionError as err:
            with self._lock:
                first = informer not in self._disabled
                self._disabled.add(informer)
                self._written.pop(key, None)
            if first:
                log.warning("staleness check off for informer=%s: %s", informer, err)
            return True
        if ready:
            with self._lock:
                if self._written.get(key) == record:
                    del self._written[key]
        return ready

    def __repr__(self) -> str:
        with self._lock:
            return f"<StalenessTracker {self.name!r} pending={len(self._written)}>"
