"""``kinformer demo --replicas N``: one controller run as N replicas, exactly one of them active.

Every replica has its own ``ApiClient`` and a :class:`~kinformer.LeaderElector` on one Lease of
the embedded :class:`~kinformer.testing.FakeAPIServer`; the leader runs an
:class:`~kinformer.InformerManager` and a :class:`~kinformer.Controller` that reconciles
ConfigMaps, which a churn thread keeps changing. Every ``--handover-every`` seconds the leader is
stopped, alternately gracefully (it releases the Lease, so the next replica takes over at its
next attempt) and as a crash would (the Lease must expire first), and a fresh replica starts in
its place under a new name, as a restarted pod would. One line a second says who leads and how
many reconciles each replica did; hand-overs are timed; at the end a summary says whether two
replicas ever reconciled at the same moment. Every line wraps at word boundaries to the
terminal's width (80 columns when it is not a terminal), as the informer demo's display does.
:mod:`kinformer.cli.demo.app` hands over to :func:`run` when ``--replicas`` is given.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import logging
import random
import sys
import threading
import time
from typing import Any, TextIO

from kinformer import _threads, context, errors
from kinformer.cache.lister import GenericLister
from kinformer.cli.demo import display, signals, workload
from kinformer.controllers.controller import Controller
from kinformer.gvr import APIResourceMeta, GroupVersionKind
from kinformer.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock
from kinformer.managers.informer_manager import InformerManager
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

LOCK_NAMESPACE, LOCK_NAME = "kube-system", "kinformer-demo"
# short so hand-overs show within seconds; a real deployment keeps client-go's 15, 10 and 2
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.0, 0.25
CONFIGMAPS = APIResourceMeta(GroupVersionKind("", "v1", "ConfigMap"), workload.CONFIGMAPS)
TICK = 0.05  # seconds between looks at the replicas
LINE_EVERY = 1.0  # seconds between status lines
STOP_TIMEOUT = 15.0  # seconds to join a replica's threads
SYNC_TIMEOUT = 30.0  # seconds a new leader waits for its first list
SUMMARY_LABEL_WIDTH = 21  # the column where a summary line's text starts


class Activity:
    """Reconciles per replica, and the most replicas ever reconciling at the same moment.

    Thread-safe; every reconcile of every replica passes through :meth:`enter`/:meth:`leave`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards every attribute
        self._active: collections.Counter[str] = collections.Counter()  # replica -> reconciles in flight
        self.reconciles: collections.Counter[str] = collections.Counter()
        self.most_at_once = 0

    def enter(self, replica: str) -> None:
        with self._lock:
            self._active[replica] += 1
            self.reconciles[replica] += 1
            self.most_at_once = max(self.most_at_once, sum(1 for n in self._active.values() if n > 0))

    def leave(self, replica: str) -> None:
        with self._lock:
            self._active[replica] -= 1

    def snapshot(self) -> tuple[dict[str, int], int]:
        with self._lock:
            return dict(self.reconciles), self.most_at_once


class AuditReconciler:
    """Reads each changed ConfigMap from the leader's cache, counted as this replica's work."""

    def __init__(self, lister: GenericLister, replica: str, activity: Activity) -> None:
        self._lister = lister
        self._replica = replica
        self._activity = activity

    def reconcile(self, key: str) -> None:
        self._activity.enter(self._replica)
        try:
            namespace, name = key.split("/", 1)
            with contextlib.suppress(errors.NotFoundError):  # deleted since: nothing to read
                self._lister.by_namespace(namespace).get(name)
        finally:
            self._activity.leave(self._replica)


class Replica:
    """One incarnation of a replica: its client, its elector on a ``kinformer-*`` thread, and,
    while it leads, an InformerManager and a Controller under the leader's context."""

    def __init__(self, name: str, server: FakeAPIServer, activity: Activity) -> None:
        self.name = name
        self.api: Any = server.api_client()
        self.stop = context.Context(name)
        self._activity = activity
        self.elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(self.api, LOCK_NAMESPACE, LOCK_NAME, name), on_started_leading=self._lead,
            lease_duration=LEASE_DURATION, renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD,
            release_on_cancel=True, name=name))
        self.thread = _threads.spawn(self.elector.run, _threads.thread_name("demo-replica", name), self.stop)

    def _lead(self, ctx: context.Context) -> None:
        with InformerManager(self.api, 0, ctx) as manager:
            controller = Controller(f"audit-{self.name}", AuditReconciler(
                manager.lister(CONFIGMAPS.group_version_resource), self.name, self._activity), workers=2)
            manager.add_static_resource(CONFIGMAPS, controller.event_handler())
            manager.start()
            if manager.wait_for_cache_sync(SYNC_TIMEOUT):
                controller.run(ctx)

    def close(self, graceful: bool = True) -> list[str]:
        """Stop and join, releasing the Lease if it leads and ``graceful`` (else leaving it to
        expire, as a crash would); the names of threads still alive.

        Which way is chosen as it stops, not when it started: whichever replica leads, the
        demo's stops alternate."""
        if not graceful:
            elector = self.elector
            elector.config = dataclasses.replace(elector.config, release_on_cancel=False)
        self.stop.cancel()
        stuck = _threads.join_all([self.thread], STOP_TIMEOUT)
        self.api.close()
        return stuck


def _churn(server: FakeAPIServer, rate: float, seed: int | None, ctx: context.Context) -> None:
    """Change ConfigMaps server-side at ``rate`` a second until ``ctx`` is cancelled."""
    rng = random.Random(seed)
    objects = server.list_objects(workload.CONFIGMAPS)
    revision = 0
    owed = 0.0
    while objects and not ctx.wait(workload.CHURN_TICK):
        owed += rate * workload.CHURN_TICK
        while owed >= 1:
            owed -= 1
            revision += 1
            obj = rng.choice(objects)
            obj["data"]["revision"] = str(revision)
            obj["metadata"].pop("resourceVersion", None)
            server.update(workload.CONFIGMAPS, obj)


def run(args: argparse.Namespace) -> int:
    """Run the replicas demo; 0 when no two replicas ever reconciled at once and all stopped.

    The options were checked when parsed (``--replicas`` at least 2, ``--handover-every``
    positive).
    """
    with signals.stop_on_signals() as stop:
        return _run(args, stop, sys.stdout)


def _run(args: argparse.Namespace, stop: threading.Event, out: TextIO, width: int | None = None) -> int:
    started = time.monotonic()
    before = set(_threads.kinformer_threads())
    width = width or display.terminal_width()

    def say(text: str) -> None:
        stamp = f"t={time.monotonic() - started:6.1f}s "
        display.write_wrapped(out, text, width, stamp)

    activity = Activity()
    server = FakeAPIServer().start()
    churn_ctx = context.Context("churn")
    replicas: dict[str, Replica] = {}
    leaders: list[str] = []
    handovers: list[tuple[float, bool]] = []  # (seconds, whether the lease was released)
    most_leaders = 0
    stuck: list[str] = []
    churn = None
    try:
        for namespace in workload.DEMO_NAMESPACES:
            server.create(workload.NAMESPACES, {"metadata": {"name": namespace}})
        server.bulk_create(workload.CONFIGMAPS, (workload.new_configmap(i) for i in range(args.objects)))
        display.write_wrapped(out, f"kinformer demo: {args.replicas} replicas of one controller, one "
                              f"Lease {LOCK_NAMESPACE}/{LOCK_NAME} (lease {LEASE_DURATION:g}s, renew "
                              f"{RENEW_DEADLINE:g}s, retry {RETRY_PERIOD:g}s), {args.objects} "
                              f"ConfigMaps changing {args.rate:g}/s, server {server.url}", width)
        incarnations = 0
        while incarnations < args.replicas:
            incarnations += 1
            name = f"replica-{incarnations}"
            replicas[name] = Replica(name, server, activity)
        churn = _threads.spawn(_churn, _threads.thread_name("demo", "churn"), server, args.rate,
                               args.seed, churn_ctx)
        deadline = started + args.duration if args.duration else float("inf")
        next_line = next_handover = time.monotonic()
        next_handover += args.handover_every
        leader = ""
        stopped_at: tuple[float, bool] | None = None
        while not stop.is_set() and time.monotonic() < deadline:
            leading = [name for name, r in replicas.items() if r.elector.is_leader()]
            most_leaders = max(most_leaders, len(leading))
            now = time.monotonic()
            if leading and leading[0] != leader:
                leader = leading[0]
                leaders.append(leader)
                if stopped_at is not None:
                    handovers.append((now - stopped_at[0], stopped_at[1]))
                    how = "released" if stopped_at[1] else "expired"
                    say(f"new leader {leader}, {now - stopped_at[0]:.2f}s after the last one stopped "
                        f"(lease {how})")
                    stopped_at = None
                else:
                    say(f"new leader {leader}")
            if leader in replicas and now >= next_handover and replicas[leader].elector.is_leader():
                old = replicas[leader]
                graceful = len(leaders) % 2 == 1  # the first leader releases, the next crashes, ...
                say(f"stopping {leader} " + ("gracefully: it releases the lease" if graceful
                                             else "as a crash would: its lease must expire"))
                stopped_at = (time.monotonic(), graceful)
                stuck += old.close(graceful)
                del replicas[leader]
                incarnations += 1
                name = f"replica-{incarnations}"  # a restarted pod comes back under a new name
                replicas[name] = Replica(name, server, activity)
                next_handover = time.monotonic() + args.handover_every
            if now >= next_line:
                leading = [name for name, r in replicas.items() if r.elector.is_leader()]
                reconciles, most = activity.snapshot()
                counts = " ".join(f"{name}={reconciles.get(name, 0)}" for name in replicas)
                say(f"leader={','.join(leading) or '-'} reconciles: {counts} "
                    f"most replicas reconciling at once={most}")
                next_line = now + LINE_EVERY
            stop.wait(TICK)
    finally:
        churn_ctx.cancel()
        if churn is not None:
            stuck += _threads.join_all([churn], STOP_TIMEOUT)
        for replica in replicas.values():
            stuck += replica.close()
        server.stop()
        started_here = [t for t in _threads.kinformer_threads() if t not in before]
        stuck += _threads.join_all(started_here, STOP_TIMEOUT)
    reconciles, most = activity.snapshot()
    times = ", ".join(f"{s:.2f}s ({'released' if r else 'expired'})" for s, r in handovers)
    one_at_a_time = most <= 1 and most_leaders <= 1
    fields = [
        ("leaders in turn", " -> ".join(leaders) or "none"),
        ("hand-overs", f"{len(handovers)}{': ' + times if times else ''}"),
        ("reconciles", ", ".join(f"{name} {count}" for name, count in sorted(reconciles.items()))),
        ("one at a time", f"{'yes' if one_at_a_time else 'NO'} (most replicas reconciling at once "
                          f"{most}, most leaders at once {most_leaders})"),
        ("threads", "all stopped" if not stuck else "still running: " + ", ".join(stuck)),
    ]
    lines = ["", "kinformer demo summary (replicas)"]
    for label, text in fields:
        lines += display.wrap(label, text, width, label_width=SUMMARY_LABEL_WIDTH)
    out.write("\n".join(lines) + "\n")
    out.flush()
    return 0 if one_at_a_time and not stuck else 1
