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

import contextlib
import logging
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Protocol

from kinformer import errors
from kinformer.metrics import provider as metrics_provider

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


def _as_number(rv: str) -> float:
    try:
        return float(_check(rv))
    except errors.InvalidResourceVersionError:
        return float("nan")


class StoreVersioned(Protocol):
    """What the check reads: a cache and the version it last synced to."""

    def last_store_sync_resource_version(self) -> str: ...


_Record = tuple[StoreVersioned, str, str, Callable[[], bool] | None]
"""(the cache, the version written, the cache's own version then, whether its informer stopped)."""


class StalenessTracker:
    """The resourceVersion of each request's last write per informer, and whether the caches
    have caught up.

    Thread-safe. Keys are any hashable (a built controller uses its :class:`Request`).
    :meth:`wrote_at` keeps, for a key, the newest version written through each informer's
    resource with the cache that should see it; :meth:`forget` drops one informer's record (a
    delete through it) or all of them. :meth:`ensure_ready` is True when every cache a key
    wrote through has reached its write (each record is dropped as its cache catches up), or
    when a cache's versions are not numbers (then the check is off for that informer, logged
    once). A reconcile that writes a child and then its own object waits for both caches. A
    record whose informer stopped before its cache showed the write (a member cluster that left
    and came back: a new informer of the same name, which listed after the write) holds nothing
    back: the stopped cache will never move, and a new one is not compared with the old one's
    versions.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._lock = threading.Lock()  # guards _written, _disabled
        # key -> informer -> (cache, rv written, the cache's own rv then, whether the informer
        # of that cache stopped), the informer written last at the end
        self._written: dict[Hashable, dict[str, _Record]] = {}
        self._disabled: set[str] = set()  # informers whose versions are not numbers
        self._gauges: dict[str, _StoreVersionGauge] = {}  # informer -> the gauge of its cache

    def observe(self, informer: str, cache: StoreVersioned,
                stopped: Callable[[], bool] | None = None) -> None:
        """Export ``cache``'s last synced version as ``store_resource_version{informer}`` until
        :meth:`close`, or until ``stopped()`` (whether that cache's informer stopped) turns True.

        One gauge per informer name, reading the cache observed last: an informer made anew
        for a name (a member cluster that left and came back) replaces the stopped one, whose
        cache never moves again. Once ``stopped()``, the gauge is left out of scrapes, and it
        is taken away at the next call here (or :meth:`close`), so members that left leave no
        series behind. The records of writes through a stopped cache go with its gauge: they
        hold nothing back any more (see :meth:`ensure_ready`), and each would keep the whole
        stopped cache, its informer and its client alive for as long as the request is not
        reconciled again, which for a member that left may be never.
        """
        with self._lock:
            gone = [name for name, gauge in self._gauges.items()
                    if name != informer and gauge.stopped()]
            dropped = [self._gauges.pop(name) for name in gone]
            current = self._gauges.get(informer)
            if current is None or current.cache is not cache:
                if current is not None:
                    dropped.append(current)
                self._gauges[informer] = _StoreVersionGauge(informer, cache, stopped)
            if any(gauge.stopped() for gauge in dropped):
                self._drop_stopped_locked()
        for gauge in dropped:
            gauge.remove()

    def _drop_stopped_locked(self) -> None:
        """Drop every record whose informer stopped: its cache never moves again."""
        for key in [k for k, records in self._written.items()
                    if any(r[3] is not None and r[3]() for r in records.values())]:
            records = self._written[key]
            for informer in [i for i, r in records.items() if r[3] is not None and r[3]()]:
                del records[informer]
            if not records:
                del self._written[key]

    def close(self) -> None:
        """Take the gauges of :meth:`observe` away (the controller stopped)."""
        with self._lock:
            gauges, self._gauges = list(self._gauges.values()), {}
        for gauge in gauges:
            gauge.remove()

    def wrote_at(self, key: Hashable, informer: str, cache: StoreVersioned, resource_version: str,
                 stopped: Callable[[], bool] | None = None) -> None:
        """Record that a write for ``key`` returned ``resource_version``, which ``cache`` (the
        store of the informer named ``informer``) must reach before ``key`` is reconciled again.
        A version older than the one recorded for the same key and the same cache is ignored;
        one recorded for another cache of that name (an informer made anew) is replaced.
        ``stopped()``, when given, says whether that informer has stopped: its cache will then
        never reach the write, and the record holds nothing back."""
        if not resource_version:
            return
        self.observe(informer, cache, stopped)
        cached_then = cache.last_store_sync_resource_version()
        with self._lock:
            if informer in self._disabled:
                return
            records = self._written.setdefault(key, {})
            current = records.pop(informer, None)
            if current is not None and current[0] is cache:
                try:
                    if compare_resource_version(resource_version, current[1]) < 0:
                        resource_version = current[1]
                except errors.InvalidResourceVersionError:
                    pass
            records[informer] = (cache, resource_version, cached_then, stopped)

    def forget(self, key: Hashable, informer: str | None = None) -> None:
        """Drop the record of ``key``'s writes through ``informer`` (None: through every one)."""
        with self._lock:
            if informer is None:
                self._written.pop(key, None)
                return
            records = self._written.get(key)
            if records is not None:
                records.pop(informer, None)
                if not records:
                    del self._written[key]

    def written(self, key: Hashable) -> tuple[str, str] | None:
        """``(informer, resourceVersion)`` of ``key``'s last recorded write, or None."""
        with self._lock:
            records = self._written.get(key)
            if not records:
                return None
            informer = next(reversed(records))
            return informer, records[informer][1]

    def ensure_ready(self, key: Hashable) -> bool:
        """True when ``key`` may be reconciled: every cache it wrote through has synced to its
        write's version, or nothing holds it back (see the class docstring)."""
        with self._lock:
            records = self._written.get(key)
            pending = list(records.items()) if records else []
        ready_all = True
        for informer, record in pending:
            cache, written, cached_then, stopped = record
            synced = cache.last_store_sync_resource_version()
            try:
                ready = compare_resource_version(synced, written) >= 0 if synced else not _check(written)
                if not ready and stopped is not None and stopped():
                    # its informer stopped before its cache showed the write (a member cluster
                    # disengaged): that cache never moves again, and an informer made anew for
                    # the same name listed after the write
                    log.info("staleness %s: informer %s stopped at resourceVersion %s before it "
                             "showed %s; no longer waiting for it for %s",
                             self.name, informer, synced or "none", written, key)
                    ready = True
                elif (not ready and synced and cached_then
                      and compare_resource_version(synced, cached_then) < 0):
                    # the cache went back past where it stood at the write: it relisted from a
                    # server restored from a backup or rebuilt, which may never reach the
                    # version written; what it holds now is that server's state
                    log.info("staleness %s: informer %s went back to resourceVersion %s from %s "
                             "(a restored or rebuilt server); no longer waiting for %s for %s",
                             self.name, informer, synced, cached_then, written, key)
                    ready = True
            except errors.InvalidResourceVersionError as err:
                self._disable(informer, err)
                continue
            if not ready:
                ready_all = False
                continue
            with self._lock:
                records = self._written.get(key)
                if records is not None and records.get(informer) is record:
                    del records[informer]
                    if not records:
                        del self._written[key]
        return ready_all

    def _disable(self, informer: str, err: Exception) -> None:
        with self._lock:
            first = informer not in self._disabled
            self._disabled.add(informer)
            for key in [k for k, records in self._written.items() if informer in records]:
                del self._written[key][informer]
                if not self._written[key]:
                    del self._written[key]
        if first:
            log.warning("staleness check off for informer=%s: %s", informer, err)

    def __repr__(self) -> str:
        with self._lock:
            return f"<StalenessTracker {self.name!r} pending={len(self._written)}>"


class _StoreVersionGauge:
    """The ``store_resource_version{informer}`` gauge of one cache, registered with the current
    metrics provider; left out of scrapes once its informer stopped."""

    __slots__ = ("_gauge", "_informer", "_stopped", "cache")

    def __init__(self, informer: str, cache: StoreVersioned, stopped: Callable[[], bool] | None) -> None:
        self._informer = informer
        self.cache = cache
        self._stopped = stopped
        self._gauge = metrics_provider.store_resource_version_gauge(informer, self._read)

    def stopped(self) -> bool:
        """Whether the informer of the cache stopped (never, when that is not known)."""
        return self._stopped is not None and self._stopped()

    def _read(self) -> float:
        if self.stopped():  # its cache never moves again: a failed read leaves the sample out
            raise errors.StoppedError(f"informer {self._informer} stopped")
        return _as_number(self.cache.last_store_sync_resource_version())

    def remove(self) -> None:
        self._gauge.remove()


class _Current(threading.local):
    tracker: StalenessTracker | None = None
    key: Hashable = None


_current = _Current()


@contextlib.contextmanager
def reconciling(tracker: StalenessTracker, key: Hashable) -> Iterator[None]:
    """Within ``with reconciling(tracker, key):`` writes on this thread are ``key``'s writes."""
    _current.tracker, _current.key = tracker, key
    try:
        yield
    finally:
        _current.tracker, _current.key = None, None


def stale_sync_skips_metric(controller: str) -> metrics_provider.CounterMetric:
    """The counter ``stale_sync_skips_total{controller}`` of the current metrics provider."""
    return metrics_provider.stale_sync_skips_metric(controller)


def record_write(informer: str, cache: StoreVersioned, resource_version: str,
                 stopped: Callable[[], bool] | None = None) -> None:
    """Note a write that returned ``resource_version`` for the request being reconciled on this
    thread, if any (see :class:`reconciling`; ``stopped`` as :meth:`StalenessTracker.wrote_at`
    takes it)."""
    tracker = _current.tracker
    if tracker is not None:
        tracker.wrote_at(_current.key, informer, cache, resource_version, stopped)


def record_delete(informer: str) -> None:
    """A delete through the resource of the informer named ``informer``, for the request being
    reconciled on this thread, clears its record of writes through that informer: a delete's
    answer names no version its cache will show. Its writes through other informers stay."""
    tracker = _current.tracker
    if tracker is not None:
        tracker.forget(_current.key, informer)
