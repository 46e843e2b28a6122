"""LeaderElector: acquire a lock, lead while renewing it, and step down cleanly.

client-go's ``leaderelection.LeaderElector`` over a :class:`~kinformer.leaderelection.lease_lock.ResourceLock`
(in practice a Lease), configured by :class:`~kinformer.leaderelection.config.LeaderElectionConfig`.
Candidates try every ``retry_period`` (jittered); a lock held by another replica is taken over
only once this elector has seen it unchanged for ``lease_duration`` on its own clock, never by
reading the times in the record, so clocks that disagree between replicas cannot steal a lease.
The leader renews every ``retry_period`` and steps down when no renewal succeeded for
``renew_deadline``: it stops reporting itself leader, cancels the leader's context, joins the
leader's thread, gives the lock up if asked to, and only then calls ``on_stopped_leading``.
Timing goes through a :class:`~kinformer.clock.Clock` so tests step a fake one.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import queue
import random
import threading
from collections.abc import Callable

from kinformer import _threads, errors
from kinformer import clock as clock_module
from kinformer import context as _context
from kinformer.leaderelection.config import JITTER_FACTOR, LeaderElectionConfig
from kinformer.leaderelection.record import LeaderElectionRecord, lease_seconds
from kinformer.metrics import provider as metrics_provider

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a callback's errors: none may quote a token

JOIN_WARN_INTERVAL = 10.0  # seconds between warnings while run() waits for a callback to return
RELEASE_ATTEMPTS = 3  # writes of the released record, each after reading the Lease again on a 409
_ATTEMPT_ERRORS = (errors.KinformerError, OSError)  # a failed attempt, retried; not raised


class LeaderElector:
    """Runs one replica's side of a leader election.

    Lifecycle: ``run(stop)`` blocks, and is the only way to run one (put it on a thread of your
    own to go on). It tries to acquire the lock until it succeeds or ``stop`` (a
    :class:`~kinformer.Context` or ``threading.Event``) is set; then it calls
    ``on_started_leading(ctx)`` on thread ``kinformer-leader-<name>`` and renews until ``stop``
    is set or leadership is lost (no renewal for ``renew_deadline``, or another holder seen).
    It returns after the leader's ``ctx`` was cancelled, that thread returned, the lock was
    released (``release_on_cancel``, only when stopped while leading) and
    ``on_stopped_leading()`` was called; a stop before leading calls neither. A leader whose
    ``on_started_leading`` raises steps down within ``retry_period`` as a stopped one does (the
    exception logged), so that another replica can lead instead of one holding the lock idle.
    ``on_new_leader`` runs on thread ``kinformer-leader-notify-<name>``, in the order holders
    were seen, and has returned too by then. An elector runs once (:class:`~kinformer.AlreadyStartedError`).

    :meth:`is_leader`, :meth:`get_leader` and :meth:`check` are thread-safe and cheap enough
    for a metrics gauge or a health probe. The metrics provider current when the elector is
    made hears ``on(name)`` when it starts leading and ``off(name)`` when it steps down
    (``kinformer_leader_election_is_leader`` under Prometheus). ::

        elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(api_client, "default", "my-controller", identity=hostname),
            on_started_leading=controller.run))
        elector.run(stop)
    """

    def __init__(self, config: LeaderElectionConfig, clock: clock_module.Clock | None = None) -> None:
        if not isinstance(config, LeaderElectionConfig):
            raise errors.ConfigurationError(
                f"LeaderElector needs a LeaderElectionConfig, got {type(config).__name__}")
        self.config = config
        self.name = config.election_name
        self._clock: clock_module.Clock = clock if clock is not None else clock_module.REAL_CLOCK
        self._identity = config.lock.identity
        self._lease_seconds = lease_seconds(config.lease_duration)
        self._is_leader_metric = metrics_provider.leader_metric()  # on while leading, by name
        # guards every attribute below. _leading is True from acquiring until stepping down;
        # while it is, _renewed_at is the clock time at which the last successful write began
        self._lock = threading.Lock()
        self._observed: LeaderElectionRecord | None = None  # the record as last read or written
        self._observed_time = 0.0  # clock time when _observed last changed
        self._leading = False
        self._renewed_at = 0.0
        self._reported = ""  # the holder last queued for on_new_leader
        self._started = False
        self._notices: queue.SimpleQueue[str | None] = queue.SimpleQueue()

    # -- state, for anyone --

    def is_leader(self) -> bool:
        """True while this elector leads: from acquiring the lock until it steps down, and never
        once ``renew_deadline`` passed without a successful renewal."""
        with self._lock:
            leading, renewed_at = self._leading, self._renewed_at
        return leading and self._clock.now() < renewed_at + self.config.renew_deadline

    def get_leader(self) -> str:
        """The holder of the lock as last observed ("" before the first read or once released)."""
        with self._lock:
            return self._observed.holder_identity if self._observed is not None else ""

    def check(self, max_tolerable_expired_lease: float) -> None:
        """A health check: raise :class:`~kinformer.LeaderElectionError` while this elector
        believes it leads but its last successful renewal is older than ``lease_duration +
        max_tolerable_expired_lease`` seconds (it should have stepped down: something is
        stuck). Returns None when healthy, and always when not leading."""
        with self._lock:
            leading, renewed_at = self._leading, self._renewed_at
        if not leading:
            return
        overdue = self._clock.now() - renewed_at - self.config.lease_duration
        if overdue > max_tolerable_expired_lease:
            raise errors.LeaderElectionError(
                f"leader election {self.name}: lease not renewed for "
                f"{overdue + self.config.lease_duration:.1f}s, "
                f"{overdue:.1f}s past its duration of {self.config.lease_duration:g}s")

    # -- the run loop --

    def run(self, stop: _context.StopSignal) -> None:
        """Acquire, lead and renew until ``stop`` is set or leadership is lost; see the class.

        Cancelling a ``Context`` breaks off a request in flight at once; with a plain
        ``threading.Event`` that request ends within its timeout first.
        """
        with self._lock:
            if self._started:
                raise errors.AlreadyStartedError(f"leader elector {self.name} already ran")
            self._started = True
        if isinstance(stop, _context.Context):
            stop_event = stop.done
            requests = stop.child(f"leader-election-{self.name}")  # stop breaks a request off
        elif isinstance(stop, threading.Event):
            stop_event = stop
            requests = _context.Context(f"leader-election-{self.name}")
        else:
            raise TypeError(f"stop must be a threading.Event or a Context, not {type(stop).__name__}")
        notifier = None
        if self.config.on_new_leader is not None:
            notifier = _threads.spawn(self._deliver_notices, _threads.thread_name("leader-notify", self.name),
                                      self.config.on_new_leader)
        try:
            if self._acquire(stop_event, requests):
                self._lead(stop_event, requests)
        finally:
            requests.cancel()
            if notifier is not None:
                self._notices.put(None)
                _join(notifier)

    def _acquire(self, stop: threading.Event, requests: _context.Context) -> bool:
        """Try until the lock is ours (True) or ``stop`` is set (False)."""
        log.info("leader election %s: trying to acquire lease as %s", self.name, self._identity)
        while not stop.is_set():
            if self._try_acquire_or_renew(requests, self.config.renew_deadline):
                return True
            if self._clock.wait(stop, self._jittered(self.config.retry_period)):
                break
        return False

    def _lead(self, stop: threading.Event, requests: _context.Context) -> None:
        leader_ctx = _context.Context(f"leader-{self.name}")
        log.info("leader election %s: %s became leader", self.name, self._identity)
        self._is_leader_metric.on(self.name)
        worker = None
        failed = threading.Event()  # the leader's work raised: step down
        if self.config.on_started_leading is not None:
            worker = _threads.spawn(self._work, _threads.thread_name("leader", self.name),
                                    self.config.on_started_leading, leader_ctx, failed)
        stopped = False
        try:
            stopped = self._renew(stop, requests, failed)
        finally:
            with self._lock:
                self._leading = False
            self._is_leader_metric.off(self.name)
            leader_ctx.cancel()
            if worker is not None:
                _join(worker)
            if stopped and self.config.release_on_cancel:
                self._release()
            log.info("leader election %s: %s stopped leading", self.name, self._identity)
            if self.config.on_stopped_leading is not None:
                try:
                    self.config.on_stopped_leading()
                except Exception:
                    log.exception("leader election %s: on_stopped_leading failed", self.name)

    def _work(self, on_started_leading: Callable[[_context.Context], object], ctx: _context.Context,
              failed: threading.Event) -> None:
        """The leader's work; if it raises, the elector steps down (``failed``): a leader that
        holds the lock doing nothing would keep every other replica from taking over."""
        try:
            on_started_leading(ctx)
        except Exception:
            log.exception("leader election %s: on_started_leading failed; stepping down", self.name)
            failed.set()

    def _renew(self, stop: threading.Event, requests: _context.Context, failed: threading.Event) -> bool:
        """Renew every ``retry_period`` while leading; True once stopped (or the leader's work
        failed), False once lost.

        Leadership is lost when ``renew_deadline`` passes without a renewal that began after
        the last successful one (a renewal that succeeds too late counts as none), or at once
        when another holder is seen. A failed work is seen at the next renewal, within
        ``retry_period``.
        """
        config = self.config
        while True:
            if failed.is_set():
                return True
            with self._lock:
                deadline = self._renewed_at + config.renew_deadline
            remaining = deadline - self._clock.now()
            if remaining > 0 and self._clock.wait(stop, min(config.retry_period, remaining)):
                return True
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                log.warning("leader election %s: failed to renew lease within %gs, stepping down",
                            self.name, config.renew_deadline)
                return False
            if self._try_acquire_or_renew(requests, remaining):
                continue
            if stop.is_set():
                return True
            holder = self.get_leader()
            if holder and holder != self._identity:
                log.warning("leader election %s: lease taken over by %s, stepping down",
                            self.name, holder)
                return False

    def _deliver_notices(self, on_new_leader: Callable[[str], object]) -> None:
        while True:
            identity = self._notices.get()
            if identity is None:
                return
            try:
                on_new_leader(identity)
            except Exception:
                log.exception("leader election %s: on_new_leader(%r) failed", self.name, identity)

    @staticmethod
    def _jittered(period: float) -> float:
        return period * (1.0 + random.random() * JITTER_FACTOR)

    # -- one attempt --

    def _try_acquire_or_renew(self, requests: _context.Context, timeout: float) -> bool:
        """One attempt to acquire or renew the lock: True when it is ours now.

        A leader whose lease is still valid writes its renewal over the Lease it last saw;
        otherwise (or when that write fails) the Lease is read, created when missing, left
        alone while another holder's lease is valid, and else written with this elector as
        holder. Errors, a lost race and a 409 Conflict are a failed attempt, logged.

        The whole attempt takes at most ``timeout`` seconds, as client-go bounds it by one
        context: each request gets what is left of it, and none is sent once it is spent. (Each
        request given all of it let a leader's attempt of three slow requests run three times
        past ``renew_deadline``, and past ``lease_duration``, while another replica led.)
        """
        lock = self.config.lock
        now = self._clock.now()
        deadline = now + timeout

        def left(step: str) -> float | None:
            """Seconds this attempt has left for ``step``; None (logged) when none."""
            remaining = deadline - self._clock.now()
            if remaining > 0:
                return remaining
            log.warning("leader election %s: no time left of %gs to %s", self.name, timeout, step)
            return None
        wall = datetime.datetime.now(datetime.timezone.utc)
        desired = LeaderElectionRecord(self._identity, self._lease_seconds, wall, wall, 0)
        with self._lock:
            observed, observed_time = self._observed, self._observed_time
        if (observed is not None and observed.holder_identity == self._identity
                and observed_time + self.config.lease_duration > now):
            mine = dataclasses.replace(desired, acquire_time=observed.acquire_time,
                                       leader_transitions=observed.leader_transitions)
            try:
                lock.update(mine, ctx=requests, timeout=timeout)  # the first: all of it is left
            except _ATTEMPT_ERRORS as err:
                log.info("leader election %s: optimistic renewal failed, reading the lease: %s",
                         self.name, err)
            else:
                self._wrote(mine, now)
                return True
        if (budget := left("read the lease")) is None:
            return False
        try:
            current = lock.get(ctx=requests, timeout=budget)
        except _ATTEMPT_ERRORS as err:
            log.warning("leader election %s: error reading lease: %s", self.name, err)
            return False
        if current is None:
            if (budget := left("create the lease")) is None:
                return False
            try:
                lock.create(desired, ctx=requests, timeout=budget)
            except errors.ConflictError as err:
                log.info("leader election %s: lost a race creating the lease: %s", self.name, err)
                return False
            except _ATTEMPT_ERRORS as err:
                log.warning("leader election %s: error creating lease: %s", self.name, err)
                return False
            self._wrote(desired, now)
            return True
        self._saw(current)
        holder = current.holder_identity
        if holder and holder != self._identity:
            with self._lock:
                expired = self._observed_time + self.config.lease_duration <= now
            if not expired:
                log.debug("leader election %s: lease held by %s and not expired", self.name, holder)
                return False
        if holder == self._identity:
            desired = dataclasses.replace(desired, acquire_time=current.acquire_time,
                                          leader_transitions=current.leader_transitions)
        else:
            desired = dataclasses.replace(desired, leader_transitions=current.leader_transitions + 1)
        if (budget := left("write the lease")) is None:
            return False
        try:
            lock.update(desired, ctx=requests, timeout=budget)
        except errors.ConflictError as err:
            log.info("leader election %s: lost a race for the lease: %s", self.name, err)
            return False
        except _ATTEMPT_ERRORS as err:
            log.warning("leader election %s: error updating lease: %s", self.name, err)
            return False
        self._wrote(desired, now)
        return True

    def _saw(self, record: LeaderElectionRecord) -> None:
        """Note a record read from the server; its observation time restarts when it changed."""
        now = self._clock.now()
        with self._lock:
            if record != self._observed:
                self._observed = record
                self._observed_time = now
            self._report_locked(record.holder_identity)

    def _wrote(self, record: LeaderElectionRecord, started: float) -> None:
        """Note a successful write of ``record`` begun at clock time ``started``: we lead."""
        with self._lock:
            self._observed = record
            self._observed_time = self._clock.now()
            self._renewed_at = started
            self._leading = True
            self._report_locked(record.holder_identity)

    def _report_locked(self, holder: str) -> None:
        if holder and holder != self._reported:
            self._reported = holder
            if self.config.on_new_leader is not None:
                self._notices.put(holder)

    def _release(self) -> None:
        """Give the lock up: an empty holder, so a successor need not wait for expiry.

        A conflict means the Lease changed since this elector last saw it (a renewal broken off
        by the stop may still have been written): it is read again and released if still ours.
        """
        lock = self.config.lock
        timeout = self.config.renew_deadline
        with self._lock:
            observed = self._observed
        for _ in range(RELEASE_ATTEMPTS):
            if observed is None or observed.holder_identity != self._identity:
                return
            wall = datetime.datetime.now(datetime.timezone.utc)
            released = LeaderElectionRecord("", 1, wall, wall, observed.leader_transitions)
            try:
                lock.update(released, timeout=timeout)
            except errors.ConflictError:
                try:
                    observed = lock.get(timeout=timeout)
                except _ATTEMPT_ERRORS as err:
                    log.warning("leader election %s: failed to release lease: %s", self.name, err)
                    return
                continue
            except _ATTEMPT_ERRORS as err:
                log.warning("leader election %s: failed to release lease: %s", self.name, err)
                return
            with self._lock:
                self._observed = released
                self._observed_time = self._clock.now()
            log.info("leader election %s: released lease", self.name)
            return
        log.warning("leader election %s: lease kept changing, not released", self.name)

    def __repr__(self) -> str:
        state = "leading" if self.is_leader() else "candidate"
        return f"<LeaderElector {self.name} identity={self._identity} {state}>"


def _join(thread: threading.Thread) -> None:
    """Join ``thread`` however long it takes, warning now and then that it is still running."""
    if thread is threading.current_thread():
        return
    while True:
        thread.join(JOIN_WARN_INTERVAL)
        if not thread.is_alive():
            return
        log.warning("leader election waits for thread %s to return", thread.name)
