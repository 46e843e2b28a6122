"""How an informer applies what its FIFO pops to its cache, and tells its handlers: one applier
per profile.

client-go's ``processDeltas`` (``controller.go``) and the shared informer's
``HandleDeltas``/``HandleBatchDeltas``, as two classes picked once, when an informer runs
(:func:`new_applier`). Each builds the FIFO of its profile and pops it
(:meth:`Applier.pop`); the informer's delta loop (:mod:`kinformer.informer`) only calls that.

- :class:`ModernApplier` (:attr:`InformerProfile.MODERN`, client-go 1.36's): a
  :class:`~kinformer.RealFIFO` in atomic mode; a batch of changes to distinct keys goes into the
  cache in one transaction (``apply_batch``), a relist (``ReplacedAll``) replaces the whole cache
  in one step, deletions first, and the FIFO lock is let go meanwhile; a first list into an
  empty cache is taken whole (``take_first_list``) on the reflector's thread.
- :class:`ClassicApplier` (:attr:`InformerProfile.CLASSIC`, client-go up to 1.32): a
  :class:`~kinformer.DeltaFIFO` merging each key's pending changes; a first list is taken whole
  (``take_first_list``) when it can be, and a queued one is applied a batch at a time.

Both write to the cache through the :class:`~kinformer.cache.store.InformerIndexer` protocol and
hand notifications to the :class:`~kinformer.processor.SharedProcessor`, all under the
informer's delta lock, which a late handler takes to replay the cache.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _gc, errors, meta, processor
from kinformer.cache import cluster as _cluster
from kinformer.cache import delta_fifo, real_fifo, store
from kinformer.cache.thread_safe_store import NOT_APPLIED

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a store's or handler's errors: none may quote a token

INITIAL_BATCH = 1000  # items of a queued first list applied per FIFO lock hold
STEADY_BATCH = 1000  # keys applied per FIFO lock hold once synced

FIFO = delta_fifo.DeltaFIFO | real_fifo.RealFIFO

_DELETED = delta_fifo.DeltaType.DELETED
_REPLACED_ALL = delta_fifo.DeltaType.REPLACED_ALL
_SYNC_ALL = delta_fifo.DeltaType.SYNC_ALL
_BOOKMARK = delta_fifo.DeltaType.BOOKMARK
_TRIM_AFTER = 1000  # objects in a list after whose delivery the C allocator is trimmed
_FREEING = frozenset((_DELETED, delta_fifo.DeltaType.REPLACED))  # deltas that free what was cached
_ADD, _UPDATE, _DELETE = processor.ADD, processor.UPDATE, processor.DELETE
_Notification = processor.Notification
_new_notification = tuple.__new__  # builds a Notification without NamedTuple.__new__'s frame
_CLUSTER = _cluster.LOGICAL_CLUSTER_ANNOTATION


_CHANGE, _RESYNC, _MERGE = 0, 1, 2  # what an update is: see _update_kind


def _update_kind(old: Any, new: Any) -> int:
    """What a new state under a cached key is: ``_RESYNC`` when both carry the same
    resourceVersion (a resync, not a change), ``_MERGE`` when a new version names another
    logical cluster (``kcp.io/cluster``) than the cached one and is another object (its uid
    differs: two objects merged by a key without the cluster, not an update), else ``_CHANGE``.

    Once per update applied, so two decoded objects are compared inline, those without
    annotations (the usual ones) in two more lookups; anything else goes through
    :func:`kinformer.meta.resource_version` and :func:`kinformer.cache.cluster.cluster_of`,
    with the same answer.
    """
    versions_differ = False
    if type(old) is dict and type(new) is dict:
        old_meta, new_meta = old.get("metadata"), new.get("metadata")
        if type(old_meta) is dict and type(new_meta) is dict:
            old_rv, new_rv = old_meta.get("resourceVersion"), new_meta.get("resourceVersion")
            if type(old_rv) is str and type(new_rv) is str:
                if old_rv == new_rv:
                    return _RESYNC
                old_notes, new_notes = old_meta.get("annotations"), new_meta.get("annotations")
                if not old_notes and not new_notes:
                    return _CHANGE
                if (type(old_notes) is dict and type(new_notes) is dict
                        and (old_notes.get(_CLUSTER) or "") == (new_notes.get(_CLUSTER) or "")):
                    return _CHANGE
                versions_differ = True
    if not versions_differ and meta.resource_version(old) == meta.resource_version(new):
        return _RESYNC
    if _cluster.cluster_of(old) == _cluster.cluster_of(new):
        return _CHANGE
    old_uid = meta.uid(old)  # one object whose annotation was edited is still one object
    return _CHANGE if old_uid and old_uid == meta.uid(new) else _MERGE


MergedFunc = Callable[[str, Any, Any], None]
"""``merged(key, old, new)``: a change would have put ``new`` where ``old``, an object of another
logical cluster, was cached under ``key`` (:class:`Applier`); called with the delta lock held."""


class InformerProfile(str, enum.Enum):
    """Which of client-go's informers a :class:`~kinformer.SharedIndexInformer` follows.

    A ``str`` enum: ``"modern"`` and ``"classic"`` are accepted wherever a profile is, and
    compare equal to the members.
    """

    MODERN = "modern"  # client-go 1.36: RealFIFO, atomic, batched, lock let go while applying
    CLASSIC = "classic"  # client-go up to 1.32: DeltaFIFO, per-key merging

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, profile: str) -> InformerProfile:
        """The member named ``profile``; :class:`~kinformer.ConfigurationError` (a ValueError)
        for anything else."""
        try:
            return cls(profile)
        except ValueError:
            raise errors.ConfigurationError(
                f"unknown informer profile {profile!r}: use 'modern' or 'classic'") from None


class Applier:
    """Applies popped deltas to the cache and queues the handlers' notifications.

    Runs on the informer's delta loop thread (and, for a classic first list, on the reflector's,
    inside the FIFO's ``replace``). Every change to the cache and every notification happens
    under ``lock``, the informer's delta lock; the cache takes every change of a batch before
    any handler hears of it.

    A change of a new resourceVersion whose object names another logical cluster
    (``kcp.io/cluster``) than the one cached under its key is two objects merged by a key
    without the cluster, not an update: no handler hears of it, and ``merged(key, old, new)``
    is called instead (the informer then fails: :mod:`kinformer.merge_guard`).
    """

    __slots__ = ("_freed", "_indexer", "_lock", "_merged", "_name", "_processor", "fifo")

    fifo: FIFO

    def __init__(
        self,
        indexer: store.InformerIndexer,
        shared_processor: processor.SharedProcessor,
        lock: threading.Lock,
        name: str,
        merged: MergedFunc | None = None,
    ) -> None:
        self._indexer = indexer
        self._processor = shared_processor
        self._lock = lock
        self._name = name
        self._merged = merged
        self._freed = 0  # objects deleted or replaced by a relist since the allocator's last trim
        self.fifo = self._new_fifo()

    def _new_fifo(self) -> FIFO:
        """Make this profile's FIFO (called once, by the constructor)."""
        raise NotImplementedError

    def pop(self, timeout: float) -> None:
        """Pop the next batch of the FIFO and apply it; blocks for at most ``timeout`` seconds.

        Raises ``TimeoutError`` when nothing came, :class:`~kinformer.FIFOClosedError` once the
        FIFO is closed and drained.
        """
        raise NotImplementedError

    def _add_new(self, items: dict[str, Any], namespace_runs: meta.NamespaceRuns | None = None) -> bool:
        """``InformerIndexer.add_new``; False (nothing changed) also when an index function fails."""
        try:
            return self._indexer.add_new(items, namespace_runs)
        except Exception:
            return False

    def _apply_all(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply each key's deltas oldest first, then hand every handler its notifications at once.

        Call with the lock held. The cache takes every change before any handler hears of the
        batch; an error aborts only the rest of that key's deltas (logged, object dropped), and
        the notifications of the changes already made are still delivered.
        """
        out: list[processor.Notification] = []
        sync_at: list[int] = []  # positions in ``out`` of equal-resourceVersion updates
        apply = self._apply
        for deltas in batch:
            try:
                apply(deltas, is_in_initial_list, out, sync_at)
            except Exception:
                log.exception("informer %s: failed to process deltas; object dropped", self._name)
        if not out:
            return
        initial = 0
        if is_in_initial_list:
            initial = sum(1 for n in out if n[0] == _ADD and n[2])
        self._processor.distribute_batch(out, sync_at, initial)

    def _apply(
        self,
        deltas: list[delta_fifo.Delta],
        is_in_initial_list: bool,
        out: list[processor.Notification],
        sync_at: list[int],
    ) -> None:
        """Apply one key's deltas to the cache, appending their notifications to ``out``."""
        indexer = self._indexer
        append = out.append
        for delta_type, obj in deltas:
            if delta_type == _DELETED:
                indexer.delete(obj)
                append(_new_notification(_Notification, (_DELETE, obj, None)))
                continue
            key = indexer.key_of(obj)
            old = indexer.get_by_key(key)
            indexer.update(obj, key)
            if old is not None:
                kind = _update_kind(old, obj)
                if kind:
                    if kind == _MERGE:
                        self._merge_found(key, old, obj)
                        continue
                    sync_at.append(len(out))
                append(_new_notification(_Notification, (_UPDATE, old, obj)))
            else:
                append(_new_notification(_Notification, (_ADD, obj, is_in_initial_list)))

    def _notify_applied(
        self,
        changes: list[tuple[str, Any, bool]],
        olds: list[Any],
        is_in_initial_list: bool,
        out: list[processor.Notification],
        sync_at: list[int],
    ) -> int:
        """Append the notifications of ``changes`` as ``apply_batch`` applied them.

        ``olds`` is what apply_batch returned: a deletion notifies ``on_delete``, a write to a
        key not cached before ``on_add``, any other ``on_update`` (its position goes to
        ``sync_at`` when the resourceVersion did not change); a change that was not applied is
        logged. Returns how many of the notifications are initial-list adds.
        """
        initial = 0
        append = out.append
        for (key, obj, delete), old in zip(changes, olds, strict=True):
            if old is NOT_APPLIED:
                log.error("informer %s: index function failed for %s (or gave values that are "
                          "not strings, or a compact cache could not encode it); object dropped",
                          self._name, key)
            elif delete:
                append(_new_notification(_Notification, (_DELETE, obj, None)))
            elif old is None:
                append(_new_notification(_Notification, (_ADD, obj, is_in_initial_list)))
                initial += is_in_initial_list
            else:
                kind = _update_kind(old, obj)
                if kind:
                    if kind == _MERGE:
                        self._merge_found(key, old, obj)
                        continue
                    sync_at.append(len(out))
                append(_new_notification(_Notification, (_UPDATE, old, obj)))
        return initial

    def _merge_found(self, key: str, old: Any, new: Any) -> None:
        """``new`` replaced ``old`` of another logical cluster under ``key``: tell ``merged``
        (a raising one is logged), or log it when there is none."""
        merged = self._merged
        if merged is None:
            log.error("informer %s: %s", self._name, errors.ClustersMergedError(
                key, [_cluster.cluster_of(old), _cluster.cluster_of(new)]))
            return
        try:
            merged(key, old, new)
        except Exception:
            log.exception("informer %s: failed to report two clusters' objects under %s",
                          self._name, key)

    def _trim_after_delivery(self, objects: int) -> None:
        """Once the handlers are done with a list of ``objects`` (1,000 or more), give the C
        allocator's free pages back (:func:`kinformer._gc.trim`): what a list replaced, and
        what its notifications held, is freed only as they are delivered. A compact cache of
        30,000 Pods held 1.87x its fresh size after a relist, 1.02x so."""
        if objects >= _TRIM_AFTER:
            self._processor.after_delivered(_gc.trim)

    def _note_freed(self, objects: int) -> None:
        """Count ``objects`` a batch deleted or replaced; once 1,000 are, trim the allocator
        after their delivery, as after a list: many objects freed."""
        self._freed += objects
        if self._freed >= _TRIM_AFTER:
            self._freed = 0
            self._trim_after_delivery(_TRIM_AFTER)


class ClassicApplier(Applier):
    """The classic profile's applier, over a :class:`~kinformer.DeltaFIFO` it makes.

    A first list skips the queue when it can: the FIFO's ``replace`` hands it, keyed, to
    :meth:`_take_first_list`, which stores every object in one pass (``add_new``) and queues
    each handler's ``on_add(obj, True)`` at once, so the informer is synced when ``replace``
    returns. When that cannot be (an index function fails, a key is listed twice), the FIFO
    queues the list and :meth:`pop` applies it a batch at a time; a batch of new keys still
    goes into the cache in one transaction.
    """

    __slots__ = ("_delta_fifo",)

    def _new_fifo(self) -> FIFO:
        self._delta_fifo = delta_fifo.DeltaFIFO(
            key_func=fifo_key_func(self._indexer), known_objects=self._indexer,
            emit_delta_type_replaced=True, take_first_list=self._take_first_list)
        return self._delta_fifo

    def pop(self, timeout: float) -> None:
        fifo = self._delta_fifo
        limit = STEADY_BATCH if fifo.has_synced() else INITIAL_BATCH
        fifo.pop_batch(self._handle_batch, limit, timeout=timeout)

    def _take_first_list(self, items: dict[str, Any], resource_version: str,
                         namespace_runs: meta.NamespaceRuns | None) -> bool:
        """Store a whole first list, keyed, and queue ``on_add(obj, True)`` for each handler.

        The FIFO's ``take_first_list``: runs on the reflector's thread under the FIFO lock. False,
        with nothing changed, when a key is cached already or an index function fails (the list
        is then queued, and applying it logs and drops the object that fails). The cache's
        version is then the list's, as in the modern profile, not that of whichever object was
        listed last (a write of an unchanged object, whose version lies between the two, would
        have its reconcile held back as stale until some later event). A list of 1,000
        objects or more is followed by a trim once every handler has it, as in the modern
        profile: what a compact cache's list leaves (its stubs) is freed as it is delivered.
        """
        with self._lock:
            if not self._add_new_and_notify(items, namespace_runs, resource_version):
                return False
            self._trim_after_delivery(len(items))  # as the modern profile's first list
            return True

    def _handle_batch(self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool) -> None:
        """Apply popped keys in queue order (under the FIFO lock), then notify each handler once.

        A batch of a queued first list in which every item is a single add of a key not cached
        yet goes into the cache in one transaction, as a first list taken whole does: the same
        outcome as applying its items one by one. So does any batch in which every key has one
        delta (``apply_batch``): what a key held before comes back as its cache hands it out (a
        compact cache's as a stub of its bytes, not decoded), and a change whose index values
        cannot be computed is logged and dropped. Once 1,000 objects were replaced by a relist
        or deleted, the allocator is trimmed after their delivery, as the modern profile does.
        """
        with self._lock:
            changes = _single_changes(batch, self._indexer.key_of)
            if (is_in_initial_list and changes is not None
                    and not any(delete for _, _, delete in changes)
                    and self._add_new_and_notify({key: obj for key, obj, _ in changes})):
                return
            if changes is None:
                self._apply_all(batch, is_in_initial_list)
            else:
                olds = self._indexer.apply_batch(changes)
                out: list[processor.Notification] = []
                sync_at: list[int] = []
                initial = self._notify_applied(changes, olds, is_in_initial_list, out, sync_at)
                if out:
                    self._processor.distribute_batch(out, sync_at, initial)
            self._note_freed(sum(1 for deltas in batch for delta_type, _ in deltas
                                 if delta_type in _FREEING))

    def _add_new_and_notify(self, items: dict[str, Any],
                            namespace_runs: meta.NamespaceRuns | None = None,
                            resource_version: str = "") -> bool:
        """Add objects under keys not cached yet, all or none, then queue ``on_add(obj, True)``.

        Call with the lock held; a handler added later replays the cache instead, under the
        same lock. False, with nothing changed, for a key cached already or an index function
        that fails. ``resource_version``, when given, is the cache's version afterwards (a whole
        list's).
        """
        if not self._add_new(items, namespace_runs):
            return False
        if resource_version:
            self._indexer.bookmark(resource_version)
        if self._processor.listeners():
            self._processor.distribute_initial(list(items.values()))
        return True


class ModernApplier(Applier):
    """The modern profile's applier, over an atomic :class:`~kinformer.RealFIFO` it makes.

    A batch of changes to distinct keys is one cache transaction; a ``ReplacedAll`` makes a
    whole list the cache's content in one step before any handler hears of it (an empty cache
    takes it in one pass); a ``SyncAll`` replays the cache as updates; a ``Bookmark`` moves the
    cache's resourceVersion. The FIFO lock is let go while a batch is applied.
    """

    __slots__ = ("_real_fifo",)

    def _new_fifo(self) -> FIFO:
        self._real_fifo = real_fifo.RealFIFO(
            key_func=fifo_key_func(self._indexer), take_first_list=self._take_first_list)
        return self._real_fifo

    def _take_first_list(self, items: dict[str, Any], resource_version: str,
                         namespace_runs: meta.NamespaceRuns | None) -> bool:
        """The FIFO's ``take_first_list``: a first list into an empty cache, on the reflector's
        thread under the FIFO lock, as :meth:`_replace_all_locked` would apply its
        ``ReplacedAll`` (all new, then ``on_add(obj, True)`` for each); False, with nothing
        changed, when the cache holds anything or an index function fails."""
        with self._lock:
            if len(self._indexer) or not self._add_new(items, namespace_runs):
                return False
            self._indexer.bookmark(resource_version)
            self._processor.distribute_initial(list(items.values()))
            self._trim_after_delivery(len(items))
            return True

    def pop(self, timeout: float) -> None:
        self._real_fifo.pop_batch(self._process_batch, self._process_single, timeout, with_keys=True)

    def _process_single(self, deltas: list[delta_fifo.Delta], is_in_initial_list: bool) -> None:
        """Apply one popped delta of the RealFIFO: a whole relist, a resync, a bookmark or a change.

        Runs on the delta loop's thread, without the FIFO lock.
        """
        delta_type, obj = deltas[0]
        with self._lock:
            if delta_type is _REPLACED_ALL:
                self._replace_all_locked(obj, is_in_initial_list)
            elif delta_type is _SYNC_ALL:
                cached = self._indexer.list()
                notifications = [_new_notification(_Notification, (_UPDATE, o, o)) for o in cached]
                self._processor.distribute_batch(notifications, list(range(len(cached))), 0)
            elif delta_type is _BOOKMARK:
                self._indexer.bookmark(obj.resource_version)
            else:
                self._apply_all([deltas], is_in_initial_list)

    def _process_batch(
        self, batch: list[list[delta_fifo.Delta]], is_in_initial_list: bool, keys: list[str]
    ) -> None:
        """Apply a batch of changes to distinct keys in one cache transaction, then notify.

        ``keys`` are the FIFO's, whose key function is the cache's (:func:`fifo_key_func`), so
        nothing is keyed twice. A change whose index values cannot be computed is logged and
        dropped; the others are applied, and only those are notified, in batch order.
        """
        indexer = self._indexer
        changes = [(key, obj, delta_type is _DELETED)
                   for key, ((delta_type, obj),) in zip(keys, batch, strict=True)]
        with self._lock:
            olds = indexer.apply_batch(changes)
            out: list[processor.Notification] = []
            sync_at: list[int] = []
            initial = self._notify_applied(changes, olds, is_in_initial_list, out, sync_at)
            if out:
                self._processor.distribute_batch(out, sync_at, initial)
            self._note_freed(sum(delete for _, _, delete in changes))

    def _replace_all_locked(self, info: real_fifo.ReplacedAllInfo, is_in_initial_list: bool) -> None:
        """Make a whole list the cache's content in one step, then notify: deletions first.

        Objects cached but not listed reach ``on_delete`` as DeletedFinalStateUnknown with
        their last cached state; listed ones ``on_update`` (cached before) or ``on_add``, in
        list order. Handlers reading the cache meanwhile see the complete new list. Call with
        the lock held.
        """
        indexer, items = self._indexer, info.items
        current = indexer.snapshot() if len(indexer) else {}
        first = not current and self._add_new(items, info.namespace_runs)  # an empty cache: one pass
        if not first:
            gone = [key for key in current if key not in items]
            changes: list[tuple[str, Any, bool]] = [(key, None, True) for key in gone]
            changes += [(key, obj, False) for key, obj in items.items()]
            olds = indexer.apply_batch(changes)
        indexer.bookmark(info.resource_version)
        if first and is_in_initial_list:  # the handlers get one item for the whole list
            self._processor.distribute_initial(list(items.values()))
            self._trim_after_delivery(len(items))
            return
        out: list[processor.Notification] = []
        sync_at: list[int] = []
        initial = 0
        if first:
            out = [_new_notification(_Notification, (_ADD, obj, False)) for obj in items.values()]
        else:
            for key in gone:
                dfsu = store.DeletedFinalStateUnknown(key, current[key])
                out.append(_new_notification(_Notification, (_DELETE, dfsu, None)))
            initial = self._notify_applied(
                changes[len(gone):], olds[len(gone):], is_in_initial_list, out, sync_at)
        if out:
            self._processor.distribute_batch(out, sync_at, initial)
        self._trim_after_delivery(len(items) + len(current))


def new_applier(
    profile: InformerProfile,
    indexer: store.InformerIndexer,
    shared_processor: processor.SharedProcessor,
    lock: threading.Lock,
    name: str,
    merged: MergedFunc | None = None,
) -> Applier:
    """The applier of ``profile``, with its FIFO, over ``indexer`` and ``shared_processor``;
    ``merged`` hears of two logical clusters' objects under one key (see :class:`Applier`)."""
    kind = ModernApplier if profile is InformerProfile.MODERN else ClassicApplier
    return kind(indexer, shared_processor, lock, name, merged)


def fifo_key_func(indexer: store.InformerIndexer) -> store.KeyFunc:
    """The key function of a FIFO feeding ``indexer``: the cache's own, so the two never
    disagree (a cluster-aware cache's FIFO must not merge ``default/app`` of two clusters).

    For the usual ``namespace/name`` cache, the plain key function, without the cache's
    tombstone check (the FIFO reads tombstone keys itself); for a cache that does not say its
    key function, its ``key_of``."""
    key_func: store.KeyFunc | None = getattr(indexer, "key_func", None)
    if key_func is store.deletion_handling_meta_namespace_key_func:
        return store.meta_namespace_key_func
    return indexer.key_of if key_func is None else key_func


def _single_changes(batch: list[list[delta_fifo.Delta]], key_of: Callable[[Any], str]
                    ) -> list[tuple[str, Any, bool]] | None:
    """``apply_batch`` changes ``(key, obj, delete)`` when every key of ``batch`` has one
    delta, else None (also on a key error, or two items of one key)."""
    changes: list[tuple[str, Any, bool]] = []
    try:
        for deltas in batch:
            if len(deltas) != 1:
                return None
            delta_type, obj = deltas[0]
            changes.append((key_of(obj), obj, delta_type == _DELETED))
    except errors.KeyFuncError:
        return None
    return changes if len({key for key, _, _ in changes}) == len(changes) else None
