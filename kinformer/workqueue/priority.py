"""PriorityQueue: a RateLimitingQueue that serves live changes before an initial list's keys.

controller-runtime's priority queue, reduced to its two levels: when a controller starts, its
informers' initial lists queue every object at once, and a change that happens meanwhile would
wait behind all of them. Items added with :meth:`PriorityQueue.add_initial` (an event handler's
``on_add`` with ``is_in_initial_list=True``) wait on a low level; every other add (a live watch
event, an ``add_after`` or rate-limited retry coming due) goes on the high level, and a live add
of an item that waits low moves it up. Everything else is :class:`~kinformer.RateLimitingQueue`'s
(``rate_limiting.py``), itself on :class:`~kinformer.WorkQueue` (``queue.py``): dedup, the
processing set, backoff, ``add_after``, shutdown; only the order of waiting items differs.
"""

from __future__ import annotations

import collections

from kinformer import clock as clock_module
from kinformer.workqueue import rate_limiters
from kinformer.workqueue.queue import T
from kinformer.workqueue.rate_limiting import RateLimitingQueue


class _Levels(collections.deque[T]):
    """The waiting items of a :class:`PriorityQueue`: itself the high level, ``low`` the other.

    Used only under the queue's lock, through the deque calls :class:`WorkQueue` makes
    (``append``, ``popleft``, ``len``, truth). Invariant: an item in ``initial`` that waits, waits
    in ``low``; every item in ``low`` is in ``initial``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.low: collections.deque[T] = collections.deque()
        self.initial: set[T] = set()  # queued (or to be re-queued) only because of an initial list

    def append(self, item: T) -> None:
        if item in self.initial:
            self.low.append(item)
        else:
            super().append(item)

    def popleft(self) -> T:
        item = super().popleft() if super().__len__() else self.low.popleft()
        self.initial.discard(item)
        return item

    def promote(self, item: T) -> None:
        """A live add of ``item``: it no longer waits only because of the initial list."""
        if item not in self.initial:
            return
        self.initial.discard(item)
        try:
            self.low.remove(item)  # O(waiting low items); only a live event on a listed key pays it
        except ValueError:  # not waiting: being processed, it is queued high when done
            return
        super().append(item)

    def __len__(self) -> int:
        return super().__len__() + len(self.low)

    def __bool__(self) -> bool:
        return bool(super().__len__() or self.low)


class PriorityQueue(RateLimitingQueue[T]):
    """A :class:`~kinformer.RateLimitingQueue` with two levels: live adds before initial-list adds.

    Thread-safe. :meth:`add` is a live add: served before every item added only through
    :meth:`add_initial`, and it moves such an item up if it waits. Within a level items are
    served in the order they were queued. An item already waiting is still one item (the
    higher of its levels), and an item being processed is queued again when done, at the level
    of the adds made meanwhile. Retries (``add_rate_limited``, ``add_after``) count as live.

    As in controller-runtime's priority queue, an item is one entry whether it waits now or
    after a delay, ready at the earlier of the two: an add of an item whose ``add_after`` (a
    retry's backoff, a ``requeue_after``) is still to come queues it now and drops the delayed
    add, which would otherwise reconcile it a second time when it came due; an ``add_after``
    of an item that waits now, or was added again while a worker holds it, is dropped the
    same way. (client-go's delaying queue, :class:`~kinformer.DelayingQueue`, keeps both.)
    """

    def __init__(
        self,
        rate_limiter: rate_limiters.RateLimiter | None = None,
        clock: clock_module.Clock = clock_module.REAL_CLOCK,
        name: str = "",
    ) -> None:
        super().__init__(rate_limiter=rate_limiter, clock=clock, name=name)
        self._levels: _Levels[T] = _Levels()
        self._queue = self._levels  # WorkQueue's waiting items, now in two levels

    def add(self, item: T) -> None:
        """A live add (see :meth:`WorkQueue.add <kinformer.WorkQueue.add>`): ahead of every
        initial-list item, moving ``item`` up if it waits as one. An ``add_after`` of ``item``
        still to come is dropped: the item is ready now."""
        self._cancel_delay(item)
        with self._lock:  # one hold: an add_initial in between would leave the item low
            self._levels.promote(item)
            self._add_locked(item)

    def _ready_now(self, item: T) -> bool:
        """An item waiting now, or added again while a worker holds it, is ready now: an
        ``add_after`` of it is that same entry (it is still counted as a retry)."""
        with self._lock:
            return item in self._dirty

    def add_initial(self, item: T) -> None:
        """Queue ``item`` because an initial list named it: served after every live item.

        A no-op for an item already waiting (at whatever level), as :meth:`add` is. An
        ``add_after`` of ``item`` still to come is dropped, as :meth:`add` drops it.
        """
        self._cancel_delay(item)
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._levels.initial.add(item)
            self._add_locked(item)  # WorkQueue's add: queued at the level its mark says

    def len_initial(self) -> int:
        """How many waiting items are there only because of an initial list."""
        with self._lock:
            return len(self._levels.low)
