"""RealFIFO: the modern informer's queue, one delta per event in strict arrival order.

client-go's ``RealFIFO`` (``InOrderInformers``, with ``AtomicFIFO`` and
``UnlockWhileProcessingFIFO``). Where :class:`~kinformer.DeltaFIFO` keeps one line per key and
merges a key's changes, this FIFO is a log: every ``add``, ``update`` and ``delete`` appends one
delta, and ``pop`` hands them out in the order they came, across keys.

In atomic mode (the default, and the informer's) a whole relist is one ``ReplacedAll`` delta
and a whole resync one ``SyncAll``, so the informer can apply a relist to its cache in one step
before any handler hears of it; watch bookmarks are queued as ``Bookmark`` deltas so the cache
knows how far it has caught up; and the FIFO lock is let go while a popped batch is processed,
so a slow consumer never holds up the reflector. Non-atomic mode needs ``known_objects`` and
turns a relist into a ``Deleted`` per vanished key followed by a ``Replaced`` per object.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

from kinformer import errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.cache.delta_fifo import Delta, Deltas, DeltaType
from kinformer.cache.fifo_base import FIFOBase, TransformFunc
from kinformer.cache.store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    meta_namespace_key_func,
)

__all__ = [
    "SYNC_ALL_INFO",
    "BookmarkInfo",
    "RealFIFO",
    "ReplacedAllInfo",
    "SyncAllInfo",
]

TakeFirstListFunc = Callable[[dict[str, Any], str, "meta.NamespaceRuns | None"], bool]
"""``take_first_list(items, resource_version, namespace_runs)``: takes a whole first list (key ->
object, in list order; ``namespace_runs`` their namespaces as the lister noted them, or None)
and returns True, or declines with False having changed nothing."""

DEFAULT_BATCH_SIZE = 1000  # deltas of distinct keys handed over in one batch (client-go's)

_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC
_REPLACED_ALL = DeltaType.REPLACED_ALL
_SYNC_ALL = DeltaType.SYNC_ALL
_BOOKMARK = DeltaType.BOOKMARK
_BATCHABLE = frozenset((_ADDED, _UPDATED, _DELETED, _REPLACED, _SYNC))
_new_delta = tuple.__new__  # builds a Delta without NamedTuple.__new__'s Python frame


def _all_dicts(objs: builtins.list[Any]) -> bool:
    """Whether every one of ``objs`` is a plain dict (decoded JSON)."""
    return set(map(type, objs)) == {dict}


@dataclasses.dataclass(frozen=True, slots=True)
class ReplacedAllInfo:
    """The object of a ``ReplacedAll`` delta: a whole list and the resourceVersion it was read at.

    ``items`` maps each listed object's key to it, transformed, in list order (a key listed
    twice keeps its last object); :attr:`objects` are its values. ``namespace_runs`` are their
    namespaces as the lister noted them (:data:`kinformer.meta.NamespaceRuns`), or None.
    """

    resource_version: str
    items: dict[str, Any]
    namespace_runs: meta.NamespaceRuns | None = None

    @property
    def objects(self) -> builtins.list[Any]:
        return builtins.list(self.items.values())


class SyncAllInfo(NamedTuple):
    """The object of a ``SyncAll`` delta: a marker; the objects are the cache's when processed."""


SYNC_ALL_INFO = SyncAllInfo()


class BookmarkInfo(NamedTuple):
    """The object of a ``Bookmark`` delta: the resourceVersion the watch has reached."""

    resource_version: str


ProcessBatchFunc = Callable[[builtins.list[Deltas], bool], None]
"""``process_batch(batch, is_in_initial_list)``: each item a one-delta ``Deltas``, keys distinct."""

ProcessKeyedBatchFunc = Callable[[builtins.list[Deltas], bool, builtins.list[str]], None]
"""``process_batch(batch, is_in_initial_list, keys)``: as :data:`ProcessBatchFunc`, each item's key beside."""

ProcessFunc = Callable[[Deltas, bool], None]
"""``process(deltas, is_in_initial_list)``: ``deltas`` holds exactly one delta."""


def _appender(action: DeltaType, doc: str) -> Callable[[RealFIFO, Any], None]:
    """A producer method queueing one ``action`` delta: key, transform, then :meth:`RealFIFO._enqueue`."""

    def append(self: RealFIFO, obj: Any) -> None:
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        if self._transformer is not None:
            obj = self._transform(obj)
        self._enqueue(((key, _new_delta(Delta, (action, obj))),))

    append.__doc__ = doc
    return append


class RealFIFO(FIFOBase):
    """A log of deltas, popped in arrival order; safe for many producers and one consumer.

    ``add``, ``update`` and ``delete`` append exactly one delta each (a delete is queued even
    for a key never seen, and repeated ones are not merged); every object is keyed, then
    transformed, before anything is queued, and an error there queues nothing.

    ``atomic=True`` (the default): ``known_objects`` must be None; ``replace`` queues one
    ``ReplacedAll`` delta, ``resync`` one ``SyncAll``, ``bookmark`` one ``Bookmark``; the lock
    is released while ``process`` runs, unless ``2 * batch_size`` or more deltas are waiting
    (then producers wait: backpressure). ``atomic=False``: ``known_objects`` is required;
    ``replace`` queues ``Deleted(DeletedFinalStateUnknown)`` for every queued or known key the
    new list lacks, then ``Replaced`` per listed object; ``resync`` queues ``Sync`` for each
    known key with nothing queued; ``bookmark`` does nothing; ``process`` runs under the lock.

    ``has_synced`` turns True once every delta queued by the time of the first ``replace``
    (including it) has been processed, or at the first change when it comes before any
    ``replace``. ``take_first_list(items, resource_version)`` (keyword only, atomic mode) is
    the first list's way around the queue, as :class:`~kinformer.DeltaFIFO`'s: ``replace``
    calls it, under the FIFO lock, with the whole list keyed (in list order) when nothing was
    ever queued and the FIFO is open; returning True it took the list (the informer applies it
    as it would the ``ReplacedAll``), and the FIFO is synced with nothing queued; returning
    False it changed nothing, and the ``ReplacedAll`` is queued. It must not call back into
    the FIFO. After ``close``, pops drain what is queued, then raise
    :class:`~kinformer.FIFOClosedError`. Bad combinations of options raise
    :class:`~kinformer.ConfigurationError`.
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        transformer: TransformFunc | None = None,
        atomic: bool = True,
        *,
        unlock_while_processing: bool | None = None,
        emit_bookmarks: bool | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        take_first_list: TakeFirstListFunc | None = None,
    ) -> None:
        if unlock_while_processing is None:
            unlock_while_processing = atomic
        if emit_bookmarks is None:
            emit_bookmarks = atomic
        if atomic and known_objects is not None:
            raise errors.ConfigurationError("an atomic RealFIFO takes no known_objects")
        if not atomic:
            if known_objects is None:
                raise errors.ConfigurationError("a non-atomic RealFIFO needs known_objects")
            if unlock_while_processing:
                raise errors.ConfigurationError(
                    "only an atomic RealFIFO can unlock while processing")
            if emit_bookmarks:
                raise errors.ConfigurationError("only an atomic RealFIFO can queue bookmarks")
        if batch_size < 1:
            raise errors.ConfigurationError("batch_size must be >= 1")
        if take_first_list is not None and not atomic:
            raise errors.ConfigurationError("only an atomic RealFIFO can take a first list whole")
        self._take_first_list = take_first_list
        super().__init__(key_func, transformer)
        self._known_objects = known_objects
        self._atomic = atomic
        self._unlock = unlock_while_processing
        self._emit_bookmarks = emit_bookmarks
        self._batch_size = batch_size
        self._backlog = 2 * batch_size  # this many waiting deltas or more: keep the lock (backpressure)
        # guarded by the lock: (key, delta) in arrival order, key "" for the deltas of no one
        # object (ReplacedAll, SyncAll, Bookmark); the rest of the state is FIFOBase's, the
        # initial population counting the deltas of the first replace not processed yet
        self._items: deque[tuple[str, Delta]] = deque()

    @property
    def atomic(self) -> bool:
        return self._atomic

    # -- producers ---------------------------------------------------------------------------

    # add, update and delete, made by _appender: each watch event costs one call, not two
    add = _appender(_ADDED, "Queue an ``Added`` delta.")
    update = _appender(_UPDATED, "Queue an ``Updated`` delta.")
    delete = _appender(_DELETED, "Queue a ``Deleted`` delta, whether or not the key was ever seen.")

    def add_batch(self, actions: builtins.list[DeltaType], objs: builtins.list[Any]) -> None:
        """Queue one ``actions[i]`` delta (``Added``, ``Updated`` or ``Deleted``) per ``objs[i]``,
        in order, in one lock hold, waking the consumer once: the changes of one watch read.

        Every object is keyed, then transformed, first: an error queues nothing.
        """
        if not objs:
            return
        # decoded objects (a watch's) keyed by the key function itself, anything else as add does
        keys = builtins.list(map(self._key_func if _all_dicts(objs) else self.key_of, objs))
        if self._transformer is not None:
            objs = [self._transform(obj) for obj in objs]
        deltas = map(_new_delta, itertools.repeat(Delta), zip(actions, objs, strict=True))
        self._enqueue(builtins.list(zip(keys, deltas, strict=True)))

    def _enqueue(self, entries: Iterable[tuple[str, Delta]]) -> None:
        """Append keyed deltas in one lock hold: the one way changes join the log.

        Only a queue that was empty can have its one consumer waiting; once woken, it needs
        no more notifies (each costs a lock probe) before it takes the lock again.
        """
        lock = self._lock
        lock.acquire()
        try:
            self._populated = True
            self._synced = self._synced or self._initial_population_count == 0
            items = self._items
            was_empty = not items
            items.extend(entries)
            if self._waiting and was_empty:
                self._cond.notify()
        finally:
            lock.release()

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Queue a whole (re)list: one ``ReplacedAll`` (atomic), or deletions then ``Replaced``.

        Every object is keyed and transformed first: an error leaves the FIFO unchanged, as
        does a key listed twice for objects of two logical clusters
        (:class:`~kinformer.ClustersMergedError`).
        """
        keyed: dict[str, Any] | None = None
        if self._atomic and self._transformer is None and isinstance(objs, list):
            key_func = self._key_func
            try:  # the usual first list and relist: decoded objects, keyed in one comprehension
                keyed = {key_func(obj): obj for obj in objs if type(obj) is dict}
            except Exception:
                keyed = None  # _keyed raises the key error as it should
            if keyed is not None and len(keyed) != len(objs):
                keyed = None  # an object that is not decoded JSON, or a key listed twice
        self._replace(objs, keyed, None, resource_version)

    def replace_listed(self, objs: builtins.list[Any], keys: builtins.list[str],
                       namespace_runs: meta.NamespaceRuns | None, resource_version: str = "") -> None:
        """:meth:`replace` of a list its lister keyed: ``keys[i]`` is ``objs[i]``'s
        :func:`~kinformer.meta_namespace_key_func` key, and ``namespace_runs`` (None when not
        noted) their namespaces, handed on with the ``ReplacedAll`` (and to
        ``take_first_list``). A FIFO keyed another way or with a transformer, or keys that do
        not fit (a key listed twice), replace as :meth:`replace` does."""
        keyed: dict[str, Any] | None = None
        if self._atomic and self._transformer is None and self._fits_listed_keys(objs, keys):
            keyed = dict(zip(keys, objs, strict=True))
            if len(keyed) != len(objs):
                keyed = None
        if keyed is None:
            self.replace(objs, resource_version)
            return
        self._replace(objs, keyed, namespace_runs, resource_version)

    def _replace(self, objs: Iterable[Any], keyed: dict[str, Any] | None,
                 namespace_runs: meta.NamespaceRuns | None, resource_version: str) -> None:
        """:meth:`replace`, with the list keyed already (atomic mode) or not (None)."""
        pairs = self._keyed(objs) if keyed is None else []
        if keyed is None:  # a keyed list had no key twice; this one may: not two clusters' objects
            _cluster.check_one_cluster_per_key(pairs)
        with self._cond:
            if self._atomic:
                items = keyed if keyed is not None else dict(pairs)
                take = self._take_first_list
                if (take is not None and not self._populated and not self._items
                        and not self._closed and take(items, resource_version, namespace_runs)):
                    # the first list, applied where it was listed: no hand-over to the consumer
                    # (whose thread would wake only to do the same), nothing left to pop
                    self._populated = self._synced = True
                    self._initial_population_count = 0
                    return
                info = ReplacedAllInfo(resource_version, items, namespace_runs)
                self._items.append(("", _new_delta(Delta, (_REPLACED_ALL, info))))
            else:
                self._replace_non_atomic_locked(pairs)
            if not self._populated:
                self._populated = True
                self._initial_population_count = len(self._items)
            if not self._synced and self._initial_population_count == 0:
                self._synced = True
            if self._waiting:
                self._cond.notify_all()

    def _replace_non_atomic_locked(self, pairs: builtins.list[tuple[str, Any]]) -> None:
        """Deletions for queued or known keys missing from the list, then a ``Replaced`` each."""
        new_keys = {key for key, _ in pairs}
        last_queued: dict[str, Delta] = {}  # key -> its newest queued delta, in first-seen order
        for key, delta in self._items:
            if key:
                last_queued[key] = delta
        items = self._items
        for key, (action, obj) in last_queued.items():
            if key in new_keys or action is _DELETED:
                continue
            if type(obj) is DeletedFinalStateUnknown:
                obj = obj.obj
            items.append((key, _new_delta(Delta, (_DELETED, DeletedFinalStateUnknown(key, obj)))))
        known = self._known_objects
        assert known is not None  # checked by the constructor
        for key in known.list_keys():
            if key in new_keys or key in last_queued:
                continue
            last = self._known_object(known, key, "replace")
            items.append((key, _new_delta(Delta, (_DELETED, DeletedFinalStateUnknown(key, last)))))
        for key, obj in pairs:
            items.append((key, _new_delta(Delta, (_REPLACED, obj))))

    def resync(self) -> None:
        """Queue one ``SyncAll`` (atomic), or ``Sync(known object)`` per known key not queued."""
        with self._cond:
            if self._atomic:
                self._items.append(("", _new_delta(Delta, (_SYNC_ALL, SYNC_ALL_INFO))))
            else:
                known = self._known_objects
                assert known is not None
                queued = {key for key, _ in self._items}
                for key in known.list_keys():
                    if key in queued:
                        continue
                    obj = self._known_object(known, key, "resync")
                    if obj is not None:
                        self._items.append((key, _new_delta(Delta, (_SYNC, obj))))
            if self._waiting:
                self._cond.notify()

    def bookmark(self, resource_version: str) -> None:
        """Queue a ``Bookmark`` delta (atomic mode only; otherwise nothing happens)."""
        if not self._emit_bookmarks:
            return
        with self._cond:
            self._items.append(("", _new_delta(Delta, (_BOOKMARK, BookmarkInfo(resource_version)))))
            if self._waiting:
                self._cond.notify()

    # -- consumer ----------------------------------------------------------------------------

    def _count_processed_locked(self, taken: int) -> None:
        """``taken`` deltas of the first list were processed: shrink it; synced once it is empty."""
        if self._initial_population_count > 0:
            self._initial_population_count = max(0, self._initial_population_count - taken)
        if not self._synced and self._populated and self._initial_population_count == 0:
            self._synced = True

    def _run(self, synced: bool, taken: int, call: Callable[[], None]) -> None:
        """Run ``call`` for ``taken`` popped deltas; the lock is held on entry, released on return.

        The lock is let go while ``call`` runs when unlocking is on and the queue is not backed
        up. Until the FIFO is synced the processed deltas are counted off the first list
        afterwards, also when ``call`` raised; once it is, there is nothing to count and an
        unlocked call never takes the lock again.
        """
        lock = self._lock
        if self._unlock and len(self._items) < self._backlog:
            lock.release()
            try:
                call()
            finally:
                if not synced:
                    with lock:
                        self._count_processed_locked(taken)
            return
        try:
            call()
        finally:
            if not synced:
                self._count_processed_locked(taken)
            lock.release()

    def pop(self, process: ProcessFunc | None, timeout: float | None = None) -> Deltas:
        """Take the oldest delta and run ``process([delta], is_in_initial_list)``; return ``[delta]``.

        Blocks while empty: ``TimeoutError`` after ``timeout`` seconds,
        :class:`~kinformer.FIFOClosedError` once closed and drained. An exception from
        ``process`` propagates; the delta is not retried.
        """
        lock = self._lock
        lock.acquire()
        items = self._items
        try:
            if not items:
                self._wait_for_locked(self._items, timeout)
            deltas = [items.popleft()[1]]
        except BaseException:
            lock.release()
            raise
        synced = self._synced
        if self._unlock and len(items) < self._backlog:  # _run, inlined: once per event
            lock.release()
            try:
                if process is not None:
                    process(deltas, not synced)
            finally:
                if not synced:
                    with lock:
                        self._count_processed_locked(1)
            return deltas
        try:
            if process is not None:
                process(deltas, not synced)
        finally:
            if not synced:
                self._count_processed_locked(1)
            lock.release()
        return deltas

    def pop_batch(
        self,
        process_batch: ProcessBatchFunc | ProcessKeyedBatchFunc,
        process_single: ProcessFunc,
        timeout: float | None = None,
        *,
        with_keys: bool = False,
    ) -> int:
        """Pop consecutive deltas of distinct keys (up to ``batch_size``) and process them.

        The batch ends before a key it already holds, before a ``ReplacedAll``, ``SyncAll`` or
        ``Bookmark`` (taken alone when first), and at the end of the first list's deltas. One
        delta goes to ``process_single([delta], is_in_initial_list)``, more to
        ``process_batch([[delta], ...], is_in_initial_list)``; ``with_keys`` adds a third
        argument, the batch's keys in order, as the key function gave them when each delta
        was queued (a consumer keying with the same function need not key again). Blocks like
        :meth:`pop`. Returns how many deltas were popped.
        """
        self._lock.acquire()
        items = self._items
        try:
            if not items:
                self._wait_for_locked(self._items, timeout)
            synced = self._synced
            limit = self._batch_size
            if not synced and self._initial_population_count > 0:
                limit = min(limit, self._initial_population_count)
            key, first = items.popleft()
            batch: builtins.list[Deltas] = [[first]]
            keys = [key]
            if first[0] in _BATCHABLE:
                seen = {key}
                while items and len(batch) < limit:
                    key, delta = items[0]
                    if delta[0] not in _BATCHABLE or key in seen:
                        break
                    items.popleft()
                    seen.add(key)
                    keys.append(key)
                    batch.append([delta])
        except BaseException:
            self._lock.release()
            raise
        if len(batch) == 1:
            single = batch[0]
            self._run(synced, 1, lambda: process_single(single, not synced))
        elif with_keys:
            keyed = cast(ProcessKeyedBatchFunc, process_batch)
            self._run(synced, len(batch), lambda: keyed(batch, not synced, keys))
        else:
            unkeyed = cast(ProcessBatchFunc, process_batch)
            self._run(synced, len(batch), lambda: unkeyed(batch, not synced))
        return len(batch)

    # -- state and reads ---------------------------------------------------------------------

    def list(self) -> builtins.list[Any]:
        """The newest queued object of every key (deltas of no one object left out)."""
        with self._lock:
            newest = {key: delta[1] for key, delta in self._items if key}
        return builtins.list(newest.values())

    def list_keys(self) -> builtins.list[str]:
        """The keys with queued deltas, in the order they were first queued."""
        with self._lock:
            return builtins.list(dict.fromkeys(key for key, _ in self._items if key))

    def get(self, obj: Any) -> Deltas | None:
        """The deltas queued under ``obj``'s key, oldest first, or None."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """The deltas queued under ``key``, oldest first, or None."""
        with self._lock:
            found = [delta for k, delta in self._items if k == key]
        return found or None

    def __len__(self) -> int:
        """How many deltas are queued."""
        return len(self._items)

