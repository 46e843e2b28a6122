"""DeltaFIFO: the queue between a reflector and an informer, holding per-key change histories.

client-go's ``DeltaFIFO`` (classic profile). The reflector calls ``add``/``update``/``delete``
for watch events and ``replace`` after each list; the informer's processing loop calls
``pop_batch``, which hands the accumulated :class:`Delta` lists of up to a batch of keys to a
``process`` callback (``pop``: one key's). ``known_objects`` is the informer's indexer:
``replace`` uses it to turn objects that vanished during a disconnect into
``DeletedFinalStateUnknown`` deletions, and ``resync`` re-queues its contents as ``Sync`` deltas.

A first list can skip the queue. Given the constructor option ``take_first_list`` (options in
the manner of client-go's ``DeltaFIFOOptions``; the informer passes one), ``replace`` hands a
first list, keyed and transformed, to that function in one call, and the FIFO is synced when it
returns: the outcome of queueing a ``Replaced`` delta per object and popping them all, without
the per-object queue work. When the function declines, the list is queued as usual.
"""

from __future__ import annotations

import builtins
import enum
import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from kinformer import errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.cache.fifo_base import FIFOBase, TransformFunc
from kinformer.cache.store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    meta_namespace_key_func,
)

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a key function's errors: none may quote a token

__all__ = [
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "ProcessFunc",
    "TakeFirstListFunc",
    "TransformFunc",
]


class DeltaType(str, enum.Enum):
    """What happened to an object; the values are client-go's strings."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"  # the object came from a (re)list
    SYNC = "Sync"  # a periodic resync of an object already known
    # the atomic RealFIFO's: one delta for a whole relist, a whole resync, a bookmark
    REPLACED_ALL = "ReplacedAll"  # object: a ReplacedAllInfo
    SYNC_ALL = "SyncAll"  # object: SYNC_ALL_INFO
    BOOKMARK = "Bookmark"  # object: a BookmarkInfo

    def __str__(self) -> str:
        return self.value


class Delta(NamedTuple):
    """One change: its ``type`` and the ``object`` after it (a DFSU for relist deletions)."""

    type: DeltaType
    object: Any


Deltas = list[Delta]
"""One key's changes, oldest first; never empty while queued."""

ProcessFunc = Callable[[Deltas, bool], None]
"""``process(deltas, is_in_initial_list)``, called by :meth:`DeltaFIFO.pop`."""


TakeFirstListFunc = Callable[[dict[str, Any], str, "meta.NamespaceRuns | None"], bool]
"""``take_first_list(items, resource_version, namespace_runs)``: takes a whole first list (key ->
transformed object, in list order; ``resource_version`` the list's; ``namespace_runs`` their
namespaces as the lister noted them, or None) and returns True, or declines with False having
changed nothing. RealFIFO's has the same shape."""

_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC
_new_delta = tuple.__new__  # builds a Delta without NamedTuple.__new__'s Python frame


def _appender(action: DeltaType, doc: str) -> Callable[[DeltaFIFO, Any], None]:
    """A producer method queueing one ``action`` delta under its key: the add/update path."""

    def append(self: DeltaFIFO, obj: Any) -> None:
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        if self._transformer is not None:
            obj = self._transform(obj)
        delta = _new_delta(Delta, (action, obj))
        lock = self._lock
        lock.acquire()
        try:
            if not self._synced:  # once synced, populated too: nothing left to note
                self._populated = True
                if self._initial_population_count == 0:
                    self._synced = True
            deltas = self._items.get(key)
            if deltas is None:
                self._items[key] = [delta]
                self._queue.append(key)
                if self._waiting:
                    self._cond.notify()
            else:
                deltas.append(delta)
        finally:
            lock.release()

    append.__doc__ = doc
    return append


class DeltaFIFO(FIFOBase):
    """A FIFO of keys, each holding every change not yet processed for that object.

    A key keeps its place in line while more changes for it arrive; ``pop`` hands all of them
    over at once, oldest first. Consecutive deletions of one key collapse into one (a real
    deletion wins over a relist's ``DeletedFinalStateUnknown``). Safe for many producers and
    one consumer. ``process`` runs while the FIFO lock is held, so producers wait meanwhile:
    keep it short (the informer only updates its cache and enqueues notifications there).
    ``has_synced`` turns True once everything from the first ``replace`` (or any earlier
    ``add``/``update``/``delete``) has been processed. After ``close``, ``pop`` drains what is
    queued and then raises :class:`~kinformer.FIFOClosedError`.

    ``take_first_list`` (keyword only) is the first list's way around the queue. ``replace``
    calls it, under the FIFO lock as ``pop`` calls ``process``, with the whole list keyed and
    transformed, when nothing was ever queued, nothing is known, the FIFO is open and no key is
    listed twice (a key listed twice must merge its deltas in the queue). Returning True, it
    took every object (the informer stores them and queues the handlers' ``on_add(obj, True)``):
    the FIFO is then synced, with nothing to pop. Returning False, it changed nothing, and the
    list is queued as without it. An exception from it propagates and leaves the FIFO
    unchanged. It must not call back into the FIFO.
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        emit_delta_type_replaced: bool = False,
        transformer: TransformFunc | None = None,
        *,
        take_first_list: TakeFirstListFunc | None = None,
    ) -> None:
        super().__init__(key_func, transformer)
        self._known_objects = known_objects
        self._emit_delta_type_replaced = emit_delta_type_replaced
        self._take_first_list = take_first_list
        # guarded by the lock: a key is in _queue iff it is in _items, and _items values are
        # never empty; the rest of the state is FIFOBase's
        self._items: dict[str, Deltas] = {}
        self._queue: deque[str] = deque()

    # -- producers ---------------------------------------------------------------------------

    def _queue_locked(self, action: DeltaType, obj: Any, key: str) -> None:
        """Append one delta under ``key``, collapsing a trailing pair of deletions."""
        deltas = self._items.get(key)
        delta = _new_delta(Delta, (action, obj))
        if deltas is None:
            self._items[key] = [delta]
            self._queue.append(key)
            if self._waiting:
                self._cond.notify()
            return
        deltas.append(delta)
        if action is _DELETED and len(deltas) > 1 and deltas[-2][0] is _DELETED:
            older = deltas[-2]
            # keep a real deletion over a relist's DeletedFinalStateUnknown, else the older one
            keep = delta if type(older[1]) is DeletedFinalStateUnknown else older
            deltas[-2:] = [keep]

    # add and update, made by _appender: each watch event costs one call, not two
    add = _appender(_ADDED, "Queue an ``Added`` delta (transformed first; a transform error queues nothing).")
    update = _appender(_UPDATED, "Queue an ``Updated`` delta (transformed first).")

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` delta, unless the key is neither queued nor known.

        Without ``known_objects`` a key that is not queued is skipped; with them, only a key
        absent from both is (a relist presumably reported its deletion already).
        """
        key = self.key_of(obj)
        obj = self._transform(obj)
        with self._cond:
            self._populated = True
            if not self._synced and self._initial_population_count == 0:
                self._synced = True
            if key not in self._items:
                known = self._known_objects
                if known is None:
                    return
                try:
                    if known.get_by_key(key) is None:
                        return
                except Exception:
                    log.warning("known-object lookup failed key=%s", key, exc_info=True)
            self._queue_locked(_DELETED, obj, key)

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Queue a whole (re)list: ``Replaced`` (or ``Sync``) per object, then the deletions.

        Keys queued or known but missing from ``objs`` get ``Deleted(DeletedFinalStateUnknown)``
        carrying the newest state seen. Every object is keyed and transformed before anything is
        queued, so an error leaves the FIFO unchanged; so does a key listed twice for objects of
        two logical clusters (:class:`~kinformer.ClustersMergedError`). A first list may go to
        ``take_first_list`` instead (see the class docstring), with ``resource_version``; the
        queue does not use it.
        """
        if self._take_first_list is not None and not self._populated:  # checked again, locked
            listed = objs if isinstance(objs, list) else list(objs)
            key_func, key_of = self._key_func, self.key_of
            keyed = {key_func(obj) if type(obj) is dict else key_of(obj): obj for obj in listed}
            if self._first_list(listed, keyed, resource_version, None):
                return
            objs = listed  # a key listed twice (or nothing listed): queue it, keyed once more
        pairs = self._keyed(objs)
        _cluster.check_one_cluster_per_key(pairs)  # a key listed twice: not two clusters' objects
        with self._cond:
            self._replace_locked(pairs)

    def replace_listed(self, objs: builtins.list[Any], keys: builtins.list[str],
                       namespace_runs: meta.NamespaceRuns | None, resource_version: str = "") -> None:
        """:meth:`replace` of a list its lister keyed: ``keys[i]`` is ``objs[i]``'s
        :func:`~kinformer.meta_namespace_key_func` key, and ``namespace_runs`` (None when not
        noted) their namespaces, which a first list hands ``take_first_list`` unless a
        transformer may have moved an object. A FIFO keyed another way, or keys that do not
        fit (a key listed twice), replace as :meth:`replace` does."""
        if not self._fits_listed_keys(objs, keys):
            self.replace(objs, resource_version)
            return
        keyed = dict(zip(keys, objs, strict=True))
        if (self._take_first_list is not None and not self._populated
                and self._first_list(objs, keyed, resource_version, namespace_runs)):
            return
        if len(keyed) != len(objs):  # a key listed twice: its deltas merge in the queue
            self.replace(objs, resource_version)
            return
        pairs: Iterable[tuple[str, Any]] = keyed.items()
        if self._transformer is not None:
            transform = self._transform
            pairs = [(key, transform(obj)) for key, obj in keyed.items()]
        with self._cond:
            self._replace_locked(pairs)

    def _first_list(self, listed: builtins.list[Any], keyed: dict[str, Any], resource_version: str,
                    namespace_runs: meta.NamespaceRuns | None) -> bool:
        """A first list, keyed: to ``take_first_list``, else queued; False (nothing done) when
        nothing was listed or a key was listed twice."""
        take = self._take_first_list
        if take is None or not listed or len(keyed) != len(listed):
            return False
        if self._transformer is not None:
            namespace_runs = None  # a transform may move an object: the cache reads them again
            transform = self._transform
            for key, obj in keyed.items():
                keyed[key] = transform(obj)
        with self._cond:
            if not self._take_first_locked(take, keyed, resource_version, namespace_runs):
                self._replace_locked(keyed.items())
        return True

    def _take_first_locked(self, take: TakeFirstListFunc, keyed: dict[str, Any],
                           resource_version: str, namespace_runs: meta.NamespaceRuns | None) -> bool:
        """Hand a first list to ``take``, lock held; True, and synced, when it took the list.

        Only while nothing was ever queued, nothing is known and the FIFO is open: the state
        in which queueing the list and popping every item would leave nothing behind.
        """
        if self._populated or self._items or self._closed:
            return False
        known = self._known_objects
        if known is not None and known.list_keys():
            return False
        if not take(keyed, resource_version, namespace_runs):
            return False
        self._populated = True
        self._initial_population_count = 0
        self._synced = True
        return True

    def _replace_locked(self, pairs: Iterable[tuple[str, Any]]) -> None:
        """Queue a keyed, transformed (re)list and its deletions; the lock is held."""
        action = _REPLACED if self._emit_delta_type_replaced else _SYNC
        new_keys: set[str] = set()
        items, queue = self._items, self._queue
        for key, obj in pairs:
            new_keys.add(key)
            if key in items:
                self._queue_locked(action, obj, key)
            else:  # the usual case, inlined: a key with nothing queued
                items[key] = [_new_delta(Delta, (action, obj))]
                queue.append(key)
        deletions = 0
        for key in [k for k in self._items if k not in new_keys]:
            newest = self._items[key][-1][1]
            if type(newest) is DeletedFinalStateUnknown:
                newest = newest.obj
            self._queue_locked(_DELETED, DeletedFinalStateUnknown(key, newest), key)
            deletions += 1
        known = self._known_objects
        if known is not None:
            for key in known.list_keys():
                if key in new_keys or key in self._items:
                    continue
                last = self._known_object(known, key, "replace")
                self._queue_locked(_DELETED, DeletedFinalStateUnknown(key, last), key)
                deletions += 1
        if not self._populated:
            self._populated = True
            self._initial_population_count = len(new_keys) + deletions
        if not self._synced and self._initial_population_count == 0:
            self._synced = True
        if self._waiting:
            self._cond.notify_all()

    def resync(self) -> None:
        """Queue ``Sync(known object)`` for every known key that has nothing queued.

        A no-op without ``known_objects``. Keys with pending deltas are skipped: the known copy
        is older than what is queued.
        """
        known = self._known_objects
        if known is None:
            return
        with self._cond:
            for key in known.list_keys():
                if key in self._items:
                    continue
                obj = self._known_object(known, key, "resync")
                if obj is not None:
                    self._queue_locked(_SYNC, obj, key)

    # -- consumer ----------------------------------------------------------------------------

    def pop(self, process: ProcessFunc | None, timeout: float | None = None) -> Deltas:
        """Take the oldest key's deltas, run ``process(deltas, is_in_initial_list)``, return them.

        Blocks while the queue is empty: raises ``TimeoutError`` after ``timeout`` seconds, or
        :class:`~kinformer.FIFOClosedError` once closed and drained. The item is removed
        before ``process`` runs (under the FIFO lock); an exception from ``process`` propagates
        and the item is dropped, not retried. ``has_synced`` turns True only after ``process``
        for the last item of the initial list has returned.
        """
        lock = self._lock
        lock.acquire()
        try:
            queue = self._queue
            if queue and self._synced:
                # the usual pop once synced: no initial list left to count (synced means its
                # count is 0), so the bookkeeping below would change nothing
                deltas = self._items.pop(queue.popleft())
                if process is not None:
                    process(deltas, False)
                return deltas
            if not queue:
                self._wait_for_locked(queue, timeout)
            deltas = self._items.pop(queue.popleft())
            is_in_initial_list = not self._synced
            if self._initial_population_count > 0:
                self._initial_population_count -= 1
            try:
                if process is not None:
                    process(deltas, is_in_initial_list)
            finally:
                if not self._synced and self._populated and self._initial_population_count == 0:
                    self._synced = True
            return deltas
        finally:
            lock.release()

    def pop_batch(
        self,
        process: Callable[[builtins.list[Deltas], bool], None],
        limit: int,
        timeout: float | None = None,
    ) -> int:
        """Pop up to ``limit`` keys in one lock hold: ``process(batch, is_in_initial_list)``.

        ``batch`` holds each key's deltas in queue order: the same as that many :meth:`pop`
        calls. Blocks like :meth:`pop` (``TimeoutError`` after ``timeout`` seconds,
        :class:`~kinformer.FIFOClosedError` once closed and drained). Until the FIFO is synced,
        a batch holds items of the initial list only, with ``is_in_initial_list`` True, and
        ``has_synced`` turns True once ``process`` has returned for the batch holding the last
        of them; after that, every queued key up to ``limit`` is taken, with
        ``is_in_initial_list`` False. The items are removed before ``process`` runs (under the
        FIFO lock); an exception from ``process`` propagates and the batch is dropped, not
        retried. Returns how many keys were popped.
        """
        lock = self._lock
        lock.acquire()
        try:
            queue = self._queue
            if not queue:
                self._wait_for_locked(self._queue, timeout)
            items = self._items
            popleft = queue.popleft
            if self._synced:
                take = min(limit, len(queue))
                batch = [items.pop(popleft()) for _ in range(take)]
                process(batch, False)
                return take
            count = self._initial_population_count
            take = max(1, min(limit, count, len(queue)))
            batch = [items.pop(popleft()) for _ in range(take)]
            self._initial_population_count = max(0, count - take)
            try:
                process(batch, True)
            finally:
                if self._populated and self._initial_population_count == 0:
                    self._synced = True
            return take
        finally:
            lock.release()

    # -- state and reads ---------------------------------------------------------------------

    def list(self) -> builtins.list[Any]:
        """The newest queued object of every key."""
        with self._cond:
            return [deltas[-1][1] for deltas in self._items.values()]

    def list_keys(self) -> builtins.list[str]:
        """Queued keys in queue order."""
        with self._cond:
            return builtins.list(self._queue)

    def get(self, obj: Any) -> Deltas | None:
        """A copy of the deltas queued under ``obj``'s key, or None."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """A copy of the deltas queued under ``key``, or None."""
        with self._cond:
            deltas = self._items.get(key)
            return builtins.list(deltas) if deltas is not None else None

    def __len__(self) -> int:
        return len(self._queue)
