"""Controller: worker threads drain a rate-limited work queue into a Reconciler.

controller-runtime's ``internal/controller`` and ``handler.EnqueueRequestForObject``, on
client-go's workqueue. Informer event handlers turn objects into keys that name their cluster
when they have one (:class:`EnqueueRequestForObject`: ``"namespace/name"``, or kcp's
``"<cluster>|namespace/name"`` from ``cache/cluster.py``; on a multi-cluster informer it is a
:class:`~kinformer.cluster_handlers.PerClusterHandler`, made once per member cluster), the
:class:`~kinformer.RateLimitingQueue` (``workqueue/``) deduplicates them, and each worker runs
client-go's canonical loop: reconcile the key; on success forget its backoff; on an exception
retry it with backoff; on :class:`~kinformer.TerminalError` log it and give up; on
``Result(requeue_after=...)`` look again after that delay. Nothing here knows informers or
factories; the :class:`~kinformer.ControllerManager` (``managers/controller_manager.py``) starts
and stops controllers as the resources they need come and go.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3

from kinformer import _checks, _threads, context, errors
from kinformer.cache import cluster as _cluster
from kinformer.cache import store
from kinformer.controllers import lifecycle
from kinformer.workqueue import RateLimitingQueue

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a reconciler's errors: none may quote a token

JOIN_TIMEOUT = 30.0  # seconds run() waits for its workers before naming those still reconciling
STUCK_WARN_INTERVAL = 300.0  # seconds between further warnings while a stopped worker reconciles on
UNREACHABLE_QUIET = 60.0  # seconds a key said unreachable is not said again at WARNING


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: ``requeue_after`` seconds to look again, or nothing.

    ``requeue_after`` is None or finite seconds, else :class:`~kinformer.ConfigurationError`.
    """

    requeue_after: float | None = None

    def __post_init__(self) -> None:
        _checks.timeout("requeue_after", self.requeue_after)


@dataclass(frozen=True, slots=True)
class Skipped(Result):
    """A reconcile that did not run (its cache had not caught up yet): look again after
    ``requeue_after`` seconds, the key's backoff kept as it was. A :class:`Result` tells the
    queue to forget the key's failures, as a reconcile that ran through does; one skipped
    between two failures must not, or a reconcile that fails after each of its writes would be
    retried at the skip's pace instead of its growing backoff."""


class Reconciler(Protocol):
    """Brings the world in line with the desired state of one object, named by its key.

    Called from a worker thread, never concurrently for the same key. Raise to be retried with
    backoff; raise :class:`~kinformer.TerminalError` to give up on the key. A key from
    :meth:`Controller.event_handler` names the object's cluster when it has one
    (``"root:a|default/app"``): the informer's lister finds the object with ``get(key)``
    whatever the key's form, and :func:`~kinformer.split_cluster_aware_key` splits it.
    """

    def reconcile(self, key: str) -> Result | None: ...


class Controller:
    """Runs ``workers`` threads that feed queued keys to ``reconciler``.

    Lifecycle: ``run(ctx)`` blocks until ``ctx`` (a Context or threading.Event) is cancelled,
    then shuts the queue down, lets each worker finish the reconcile it is in and joins them,
    however long that takes; keys still queued are not reconciled. A worker still reconciling
    :data:`JOIN_TIMEOUT` seconds after the stop is named in a WARNING with its key, again every
    :data:`STUCK_WARN_INTERVAL` seconds: once ``run`` has returned no reconcile of this
    controller runs, so whatever runs next (a fresh instance, another replica) never reconciles
    a key beside it, as controller-runtime's ``Start`` waits for its workers.
    ``start(ctx)`` is the same ``run`` on a thread and returns at once; ``shutdown(timeout)``
    stops either early and joins, returning False while a reconcile runs on past ``timeout``.
    ``enqueue`` is thread-safe and may be called before ``run``. A controller runs once: a
    second ``run`` or ``start`` raises :class:`~kinformer.AlreadyStartedError`.

    A reconcile that raises, or returns what is not a :class:`Result` or None, is logged at
    ERROR with its traceback and retried with backoff;
    one that raises because a server did not answer (refused, reset, timed out: kinformer's
    :class:`~kinformer.TransportError`, a ``ConnectionError``, urllib3's errors) is expected
    while that server is down, so it is one WARNING line without a traceback for the key's
    first failure and DEBUG for its retries.

    Example, with ``informer`` a :class:`~kinformer.SharedIndexInformer`, ``reconciler`` a
    :class:`Reconciler` and ``ctx`` a :class:`~kinformer.Context`::

        controller = Controller("mirror", reconciler, workers=2)
        informer.add_event_handler(controller.event_handler())  # enqueues the key of each change
        controller.run(ctx)  # blocks until ctx is cancelled
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        queue: RateLimitingQueue[str] | None = None,
        workers: int = 1,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.queue: RateLimitingQueue[str] = queue if queue is not None else RateLimitingQueue(name=name)
        self.workers = _checks.integer(f"controller {name}: workers", workers, minimum=1)
        self._once = lifecycle.RunOnce(name)
        # key -> the queue clock's time it was last said unreachable at WARNING: one outage is
        # one line, even when a reconcile in flight as the server went and one that needed no
        # write in between (resetting its retries) make two failing runs of it. Entries older
        # than UNREACHABLE_QUIET say nothing more and are swept once per UNREACHABLE_QUIET, so
        # the keys of objects long deleted, or of members long gone, do not pile up here
        self._said_unreachable: dict[str, float] = {}
        self._said_swept = self.queue.clock.now()
        self._said_lock = threading.Lock()

    def enqueue(self, key: str) -> None:
        """Ask for ``key`` to be reconciled (merged with a pending request for it)."""
        self.queue.add(key)

    def event_handler(self, key_func: Callable[[Any], str] | None = None) -> EnqueueRequestForObject:
        """An informer event handler enqueueing each changed object's key on this controller.

        Without ``key_func`` the key names the object's cluster whenever there is one: see
        :class:`EnqueueRequestForObject`.
        """
        return EnqueueRequestForObject(self.queue, key_func)

    def run(self, stop: context.StopSignal) -> None:
        """Reconcile keys on ``workers`` threads until ``stop`` is cancelled (or :meth:`shutdown`);
        blocks, and returns once the workers exited, after the reconciles they were in."""
        self._run(self._once.claim(stop))

    def start(self, stop: context.StopSignal) -> None:
        """:meth:`run` on a thread (``kinformer-controller-<name>``); returns at once."""
        ctx = self._once.claim(stop)
        self._once.ran_on(_threads.spawn(self._run, _threads.thread_name("controller", self.name), ctx))

    def shutdown(self, timeout: float | None = JOIN_TIMEOUT) -> bool:
        """Stop a running controller as its ``stop`` would and wait until its workers exited;
        True once they have (at once when it never ran), False after ``timeout`` seconds (a
        reconcile still running: the run goes on waiting for it, and :meth:`join` can too)."""
        return self._once.shutdown(timeout)

    def _run(self, ctx: context.Context) -> None:
        try:
            self._work(ctx)
        finally:
            self._once.exited()

    def _work(self, ctx: context.Context) -> None:
        log.info("controller started name=%s workers=%d", self.name, self.workers)
        # per worker, the key it reconciles (None between keys); each slot written by its own
        # worker, read only to name a worker that does not return
        reconciling: list[str | None] = [None] * self.workers
        threads = [
            _threads.spawn(self._worker, _threads.thread_name("controller", f"{self.name}-{i}"),
                           ctx, reconciling, i)
            for i in range(self.workers)
        ]
        try:
            ctx.wait()
        finally:
            self.queue.shut_down()
            self._join_workers(threads, reconciling)
            log.info("controller stopped name=%s", self.name)

    def _join_workers(self, threads: list[threading.Thread], reconciling: list[str | None]) -> None:
        """Join every worker however long its reconcile takes, naming each one still running
        after :data:`JOIN_TIMEOUT` seconds, then every :data:`STUCK_WARN_INTERVAL` seconds."""
        stopped = time.monotonic()
        wait = JOIN_TIMEOUT
        while True:
            deadline = time.monotonic() + wait
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            stuck = [i for i, thread in enumerate(threads) if thread.is_alive()]
            if not stuck:
                return
            for i in stuck:
                log.warning("controller %s: worker %s still reconciling key=%s %.0fs after the "
                            "controller was stopped; run returns once it has", self.name,
                            threads[i].name, reconciling[i] or "-", time.monotonic() - stopped)
            wait = STUCK_WARN_INTERVAL

    def _worker(self, ctx: context.Context, reconciling: list[str | None], index: int) -> None:
        def process(key: str) -> None:
            reconciling[index] = key
            try:
                self._reconcile(key)
            finally:
                reconciling[index] = None

        process_queue(self.queue, ctx, process)

    def _reconcile(self, key: str) -> None:
        try:
            result = self.reconciler.reconcile(key)
            if result is not None and not isinstance(result, Result):  # read below, outside the try
                raise TypeError(f"reconcile returned {result!r}, not a Result or None")
        except errors.TerminalError as err:
            log.error("controller %s: giving up on key=%s: %s", self.name, key, err)
            self.queue.forget(key)
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # a SystemExit or CancelledError too: the worker must live on
            retries = self.queue.num_requeues(key)
            if _unreachable(err):  # expected while a server is down: no traceback, said once
                loud = self._say_unreachable(key, retries)
                log.log(logging.WARNING if loud else logging.DEBUG,
                        "controller %s: reconcile of key=%s could not reach the server, retrying "
                        "with backoff (retries=%d): %s", self.name, key, retries, _one_line(err))
            else:
                log.exception("controller %s: reconcile failed key=%s retries=%d", self.name, key, retries)
            wait = errors.retry_after(err)
            if wait > 0:  # the server asked to wait (a 429's Retry-After): not sooner, backoff counting on
                self.queue.add_after(key, max(wait, self.queue.rate_limiter.when(key)))
            else:
                self.queue.add_rate_limited(key)
        else:
            if type(result) is not Skipped:
                self.queue.forget(key)
            if result is not None and result.requeue_after is not None:
                self.queue.add_after(key, result.requeue_after)

    def _say_unreachable(self, key: str, retries: int) -> bool:
        """Whether ``key``'s failure to reach a server is said at WARNING: its first failure,
        unless it was said within UNREACHABLE_QUIET."""
        now = self.queue.clock.now()
        with self._said_lock:
            said = self._said_unreachable
            if now - self._said_swept >= UNREACHABLE_QUIET:
                self._said_swept = now
                for old in [k for k, at in said.items() if now - at >= UNREACHABLE_QUIET]:
                    del said[old]
            loud = retries == 0 and now - said.get(key, now - UNREACHABLE_QUIET) >= UNREACHABLE_QUIET
            if loud:
                said[key] = now
        return loud

    def __repr__(self) -> str:
        return f"<Controller {self.name} workers={self.workers}>"


def process_queue(
    queue: RateLimitingQueue[str], ctx: context.Context, process: Callable[[str], None]
) -> None:
    """client-go's worker loop: take each key from ``queue``, hand it to ``process``, mark it done.

    Blocks; returns once the queue is shut down or, at the next key, once ``ctx`` is cancelled
    (that key is marked done unprocessed). ``process`` owns what happens to the key next
    (``forget``, ``add_rate_limited``, ``add_after``); an exception it lets out ends the loop
    after the key is marked done. Every :class:`Controller` worker and the
    :class:`~kinformer.ControllerManager`'s own loop run it.
    """
    while True:
        key, shutdown = queue.get()
        if shutdown or key is None:
            return
        try:
            if ctx.cancelled():
                return
            process(key)
        finally:
            queue.done(key)


def _unreachable(error: BaseException) -> bool:
    """Whether a reconcile failed because a server did not answer (refused, reset, timed out):
    kinformer's :class:`~kinformer.TransportError`, the socket's own errors, or urllib3's (the
    official client's transport)."""
    return isinstance(error, (errors.TransportError, ConnectionError, TimeoutError,
                              urllib3.exceptions.HTTPError))


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


class EnqueueRequestForObject:
    """An informer event handler that enqueues the key of every added, updated or deleted object.

    Keys come from ``key_func`` when one is given. Without it, the key names the object's
    cluster, so two clusters' ``default/app`` are never one key:

    - on an informer (ordinary or cluster-aware) the key is
      :func:`~kinformer.cluster_aware_key_func`'s: ``"default/app"`` for an object without the
      ``kcp.io/cluster`` annotation, ``"root:a|default/app"`` with it; a
      :class:`~kinformer.DeletedFinalStateUnknown` keeps its key, given its last known object's
      cluster when the key names none (an informer of one logical cluster keys its cache
      without it);
    - added to a :class:`~kinformer.MultiClusterInformer` it is a
      :class:`~kinformer.cluster_handlers.PerClusterHandler`: :meth:`for_cluster` makes the
      handler of each member cluster, which queues
      ``to_cluster_aware_key(cluster, namespace, name)`` (``"member-1|default/app"``).

    Either way the informer's lister finds the object with ``get(key)``. With a ``key_func``
    every informer, a multi-cluster one too, enqueues ``key_func(obj)`` as it always did. An
    object without a key is logged and skipped. Cheap and non-blocking: safe on an informer's
    delivery thread.
    """

    def __init__(
        self,
        queue: RateLimitingQueue[str],
        key_func: Callable[[Any], str] | None = None,
    ) -> None:
        self.queue = queue
        self._given = key_func is not None
        self.key_func: Callable[[Any], str] = key_func if key_func is not None else object_key

    def for_cluster(self, cluster: str) -> EnqueueRequestForObject:
        """The handler of member cluster ``cluster``: it queues keys naming ``cluster`` (this
        handler itself when a ``key_func`` was given)."""
        if self._given:
            return self
        return EnqueueRequestForObject(self.queue, functools.partial(member_key, cluster))

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(obj)

    def _enqueue(self, obj: Any) -> None:
        try:
            key = self.key_func(obj)
        except Exception as err:
            log.warning("cannot enqueue object without a key: %s", err)
            return
        self.queue.add(key)


def object_key(obj: Any) -> str:
    """The key :class:`EnqueueRequestForObject` queues for ``obj`` of an informer: its
    cluster-aware key; a tombstone's key, given its last known object's cluster when it has none."""
    if type(obj) is store.DeletedFinalStateUnknown:
        key: str = obj.key
        cluster = "" if "|" in key or obj.obj is None else _cluster.cluster_of(obj.obj)
        if not cluster:
            return key
        try:
            namespace, name = store.split_meta_namespace_key(key)
        except errors.InvalidKeyError:  # not a namespace/name key: leave it as the informer made it
            return key
        return _cluster.to_cluster_aware_key(cluster, namespace, name)
    return _cluster.cluster_aware_key_func(obj)


def member_key(cluster: str, obj: Any) -> str:
    """The key :class:`EnqueueRequestForObject` queues for ``obj`` of member cluster
    ``cluster``: ``"<cluster>|<namespace>/<name>"`` (a tombstone's plain key, so prefixed)."""
    if "|" in cluster:
        raise errors.InvalidKeyError(f"cluster {cluster!r} has a '|': no key could name it")
    namespace, name = store.split_meta_namespace_key(store.deletion_handling_meta_namespace_key_func(obj))
    return _cluster.to_cluster_aware_key(cluster, namespace, name)
