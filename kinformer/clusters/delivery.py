"""Delivery to the handlers of a multi-cluster informer: one thread per handler, every cluster.

Each member cluster's informer (``member.py``) calls a :class:`Forwarder` per handler on its own
listener thread; the forwarder only appends to that handler's :class:`HandlerDelivery` buffer,
whose one thread calls the handler in arrival order. So a handler's code never runs on two
threads at once, whatever the number of clusters, and a slow handler stalls no informer. Every
notification is tagged with the :class:`Engagement` (one watch of one cluster) it came from:
when a cluster is disengaged, the factory (``factory.py``) marks its engagement over and each
delivery drops what of it is still buffered and queues ``on_disengaged(cluster)`` instead, so
that call comes after every notification of the cluster the handler will ever get, and no
stale notification of the engagement can follow it.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from kinformer import _threads, errors, processor
from kinformer.cluster_handlers import ClusterEventHandler, PerClusterHandler
from kinformer.handlers import ResourceEventHandler

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a handler's errors: none may quote a token

_numbers = itertools.count(1)

_Item = tuple["Engagement | None", Callable[..., object], tuple[Any, ...], bool]
"""(engagement or None for a disengage notice, callback, its arguments, is an initial add)."""


class Engagement:
    """One continuous watch of one cluster, from engage to disengage; ``active`` until then.

    ``active`` is set False once, by the factory, before any delivery is told; a delivery reads
    it under its own lock, which orders the two.
    """

    __slots__ = ("active", "cluster")

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.active = True

    def __repr__(self) -> str:
        return f"<Engagement {self.cluster} {'active' if self.active else 'over'}>"


class HandlerDelivery:
    """One handler, its buffer and its delivery thread (``kinformer-clusterhandler-<gvr>-<n>``).

    :meth:`push` never blocks on the handler. Callbacks run in order, one at a time; an
    exception from the handler is logged and the notification skipped. A
    :class:`~kinformer.ClusterEventHandler` is called with each notification's cluster and gets
    ``on_disengaged``; a :class:`~kinformer.cluster_handlers.PerClusterHandler` gets the plain
    calls on the handler it makes for each cluster; any other handler gets the plain calls.
    After :meth:`close` the buffer is dropped and the thread exits once the callback in
    progress returns.
    """

    def __init__(self, handler: Any, subject: str) -> None:
        self.handler = handler
        self.is_cluster_handler = isinstance(handler, ClusterEventHandler)
        self.is_per_cluster = not self.is_cluster_handler and isinstance(handler, PerClusterHandler)
        self._name = _threads.thread_name("clusterhandler", f"{subject}-{next(_numbers)}")
        self._lock = threading.Lock()  # guards _buffer, _closed, _pending_initial, _idle
        self._cond = threading.Condition(self._lock)
        self._buffer: deque[_Item] = deque()
        self._closed = False
        self._pending_initial = 0  # initial-list adds buffered or being delivered
        self._pending_initial_of: dict[Engagement, int] = {}  # the same, by engagement
        self._idle = False  # the delivery thread waits on _cond: only then does a push notify it
        self.thread: threading.Thread | None = None

    def forwarder(self, engagement: Engagement) -> Forwarder:
        """What to register on ``engagement``'s informer for this handler."""
        if self.is_cluster_handler:
            return Forwarder(self, engagement, self.handler, engagement.cluster)
        if self.is_per_cluster:
            return Forwarder(self, engagement, self.handler.for_cluster(engagement.cluster))
        return Forwarder(self, engagement, self.handler)

    def start(self) -> None:
        """Start the delivery thread (once; a closed delivery starts nothing)."""
        with self._lock:
            if self.thread is not None or self._closed:
                return
            self.thread = _threads.spawn(self._run, self._name)

    def push(self, engagement: Engagement, fn: Callable[..., object], args: tuple[Any, ...],
             initial: bool) -> None:
        """Buffer ``fn(*args)``, unless ``engagement`` is over or the delivery closed."""
        with self._lock:
            if self._closed or not engagement.active:
                return
            self._buffer.append((engagement, fn, args, initial))
            if initial:
                self._pending_initial += 1
                self._pending_initial_of[engagement] = self._pending_initial_of.get(engagement, 0) + 1
            if self._idle:
                self._cond.notify()

    def disengaged(self, engagement: Engagement) -> None:
        """Drop what ``engagement`` left buffered; queue ``on_disengaged`` for a cluster handler.

        Call after ``engagement.active`` was set False.
        """
        with self._lock:
            if self._closed:
                return
            kept = [item for item in self._buffer if item[0] is not engagement]
            dropped = len(self._buffer) - len(kept)
            self._pending_initial_of.pop(engagement, None)
            if dropped:
                self._pending_initial -= sum(1 for item in self._buffer
                                             if item[0] is engagement and item[3])
                self._buffer.clear()
                self._buffer.extend(kept)
                log.debug("handler %r: %d notifications of %s dropped on disengage",
                          self.handler, dropped, engagement.cluster)
            if self.is_cluster_handler:
                self._buffer.append((None, self.handler.on_disengaged, (engagement.cluster,), False))
                self._cond.notify()

    def pending_initial(self, engagement: Engagement | None = None) -> int:
        """Initial-list adds buffered or being delivered: of every engagement, or of one."""
        with self._lock:
            if engagement is None:
                return self._pending_initial
            return self._pending_initial_of.get(engagement, 0)

    def close(self) -> None:
        """Stop delivering: drop the buffer; the thread exits after its current callback. The
        handler's ``delivery_closed()``, when it has one, is called (see
        :meth:`kinformer.processor.ProcessorListener.close`)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._buffer.clear()
            self._pending_initial = 0
            self._pending_initial_of.clear()
            self._cond.notify_all()
        processor.delivery_closed(self.handler)

    def _run(self) -> None:
        # Everything buffered is taken in one hold of the lock and called outside it, so the
        # informers pushing and this thread do not take turns at the lock (and at the
        # interpreter's) once per notification. An item of an engagement that ended after it
        # was taken is skipped, as disengaged() drops those still buffered; on_disengaged,
        # buffered after them, follows them.
        lock, buffer = self._lock, self._buffer
        while True:
            with lock:
                while not buffer and not self._closed:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                if self._closed:
                    return
                taken = list(buffer)
                buffer.clear()
            initial_done = 0
            done_of: dict[Engagement, int] = {}
            for engagement, fn, args, initial in taken:
                if self._closed:
                    return
                if engagement is None or engagement.active:
                    try:
                        fn(*args)
                    except Exception:
                        log.exception("event handler %r failed on %s of cluster %s; notification "
                                      "skipped", self.handler, _kind(fn),
                                      engagement.cluster if engagement is not None else args[0])
                if initial:
                    initial_done += 1
                    if engagement is not None:
                        done_of[engagement] = done_of.get(engagement, 0) + 1
            if initial_done:
                with lock:
                    if not self._closed:
                        self._pending_initial -= initial_done
                        pending_of = self._pending_initial_of
                        for engagement, done in done_of.items():
                            left = pending_of.get(engagement, 0) - done
                            if left > 0:
                                pending_of[engagement] = left
                            else:
                                pending_of.pop(engagement, None)

    def __repr__(self) -> str:
        return f"<HandlerDelivery {self._name} {self.handler!r}>"


def _kind(fn: Callable[..., object]) -> str:
    """``add``, ``update``, ``delete`` or ``disengaged``: what a buffered callback is."""
    return str(getattr(fn, "__name__", fn)).removeprefix("on_")


class Forwarder:
    """The ordinary handler registered on one engagement's informer: buffers into a delivery.

    For a cluster handler it buffers the handler's own call with the cluster first
    (``on_add(cluster, obj)``), as :class:`~kinformer.cluster_handlers.ClusterBoundHandler`
    would make it, without the extra call per notification.
    """

    __slots__ = ("_add", "_cluster", "_delete", "_delivery", "_engagement", "_update")

    def __init__(self, delivery: HandlerDelivery, engagement: Engagement,
                 target: ResourceEventHandler | ClusterEventHandler, cluster: str | None = None) -> None:
        self._delivery = delivery
        self._engagement = engagement
        self._cluster = cluster  # None: target is an ordinary handler, called as usual
        self._add = target.on_add
        self._update = target.on_update
        self._delete = target.on_delete

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        args = (obj, is_in_initial_list) if self._cluster is None else (self._cluster, obj)
        self._delivery.push(self._engagement, self._add, args, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        args = (old, new) if self._cluster is None else (self._cluster, old, new)
        self._delivery.push(self._engagement, self._update, args, False)

    def on_delete(self, obj: Any) -> None:
        args = (obj,) if self._cluster is None else (self._cluster, obj)
        self._delivery.push(self._engagement, self._delete, args, False)

    def __repr__(self) -> str:
        return f"<Forwarder {self._engagement.cluster} {self._delivery.handler!r}>"
