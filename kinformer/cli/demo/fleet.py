"""``kinformer demo --clusters N``: a fleet of member clusters that leave, fail and come back.

The demo starts N member :class:`~kinformer.testing.FakeAPIServer`\\ s, each with its share of
``--objects`` ConfigMaps, and a hub server holding one kubeconfig Secret per member as
multicluster-runtime's kubeconfig provider expects them (namespace ``fleet-system``, label
``sigs.k8s.io/multicluster-runtime-kubeconfig=true``, key ``kubeconfig``). A
:class:`~kinformer.MultiClusterInformerFactory` over a
:class:`~kinformer.KubeconfigSecretProvider` on the hub caches every member's ConfigMaps, and a
:class:`~kinformer.ClusterEventHandler` counts each cluster's events, while a churn thread
changes ConfigMaps in every member at ``--rate`` changes a second. Unless ``--no-faults``, one
member then leaves (its Secret deleted on the hub: it is disengaged) and rejoins (the Secret
created again), and later another member's server stops (the member stays engaged but cannot
be reached) and starts again on the same port. One line per cluster shows how it is doing;
at the end the demo puts back what it took away, waits for the caches, and compares each
cluster's cache with its server. Every line wraps at word boundaries to the terminal's width
(80 columns when it is not a terminal). :mod:`kinformer.cli.demo.app` hands over to
:func:`run` when ``--clusters`` is given.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from kinformer import _threads, context, meta
from kinformer.cache import store
from kinformer.cli.demo import display, signals, workload
from kinformer.cli.demo.fleet_workload import (
    HUB_NAMESPACE,
    Churn,
    ClusterCounts,
    kubeconfig_secret,
    member_names,
)
from kinformer.clusters.factory import MultiClusterInformerFactory
from kinformer.clusters.kubeconfig import (
    SECRETS,
    KubeconfigSecretProvider,
)
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

LOAD_CHUNK = 1000  # ConfigMaps per bulk insert while loading: Ctrl-C waits for one chunk at most
TICK = 0.05  # seconds between looks at the fleet
CONVERGE_TIMEOUT = 10.0  # seconds the caches get to match their servers at the end
STOP_TIMEOUT = 15.0  # seconds to join the demo's own threads
# when the faults happen, as fractions of the running phase (leave, rejoin, stop, start again)
FAULT_AT = (0.15, 0.35, 0.5, 0.65)  # the last leaves time for the backoff of the unreachable
OPEN_ENDED_RUN = 40.0  # seconds the faults are spread over when the demo runs until Ctrl-C
SAMPLES = 3  # keys named in a summary line of a cache that differs
SUMMARY_LABEL_WIDTH = 17


@dataclasses.dataclass
class Fault:
    """One step of the script: what the demo does to a member, when, and what it saw follow."""

    at: float  # seconds into the running phase
    cluster: str
    kind: str  # "leave", "rejoin", "stop", "start"
    done_at: float | None = None  # seconds since the demo started
    seen_after: float | None = None  # seconds from done_at until the fleet showed it


class FleetDemo:
    """The hub, the member servers, the factory, the churn and the script of one demo run.

    Everything runs on ``kinformer-*`` threads; :meth:`close` stops and joins all of it,
    whatever state the demo reached.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.monotonic()
        self._threads_before = set(_threads.kinformer_threads())  # to check that close() left none
        self.hub = FakeAPIServer().start()
        self.members = {name: FakeAPIServer().start() for name in member_names(args.clusters)}
        self.loaded = dict.fromkeys(self.members, 0)
        self.hub_api: Any = self.hub.api_client()
        self.factory = MultiClusterInformerFactory(KubeconfigSecretProvider(self.hub_api, HUB_NAMESPACE))
        self.configmaps = self.factory.for_resource(workload.CONFIGMAPS)
        self.counts = ClusterCounts()
        self.configmaps.add_event_handler(self.counts)
        self.ctx = context.Context("demo-fleet")
        self._churn_ctx = self.ctx.child("churn")
        self.churn: Churn | None = None
        self._churn_thread: threading.Thread | None = None
        self.faults: list[Fault] = []
        self.log: list[str] = []  # what happened to the fleet, one line each
        self.synced_after: float | None = None
        self.gone: dict[str, str] = {}  # cluster -> what the demo took away (Secret or server)
        self._events_at_start = 0  # the failing member's events when its server started again

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # -- phases --

    def load(self, stop: threading.Event) -> None:
        """The hub's namespace, each member's namespaces and share of ``--objects`` ConfigMaps,
        then one kubeconfig Secret per member. Returns early once ``stop`` is set."""
        self.hub.create(workload.NAMESPACES, {"metadata": {"name": HUB_NAMESPACE}})
        names = list(self.members)
        for index, (name, server) in enumerate(self.members.items()):
            for namespace in workload.DEMO_NAMESPACES:
                server.create(workload.NAMESPACES, {"metadata": {"name": namespace}})
            share = self.args.objects // len(names) + (1 if index < self.args.objects % len(names) else 0)
            while self.loaded[name] < share and not stop.is_set():
                end = min(share, self.loaded[name] + LOAD_CHUNK)
                server.preload(workload.CONFIGMAPS,
                               (workload.new_configmap(i) for i in range(self.loaded[name], end)))
                self.loaded[name] = end
        for name, server in self.members.items():
            self.hub.create(SECRETS, kubeconfig_secret(name, server))

    def start(self, running_for: float) -> None:
        """Start the factory (which finds the members through the hub's Secrets) and plan the
        faults over ``running_for`` seconds of the running phase."""
        self.factory.start(self.ctx)
        if not self.args.faults:
            return
        names = list(self.members)
        leaving = names[1] if len(names) > 1 else names[0]
        failing = names[2] if len(names) > 2 else names[-1]
        self.faults = [Fault(running_for * at, name, kind) for at, name, kind in zip(
            FAULT_AT, (leaving, leaving, failing, failing), ("leave", "rejoin", "stop", "start"),
            strict=True)]

    def start_churn(self) -> None:
        self.churn = Churn(self.members, self.loaded, self.args.rate, self.args.seed)
        self._churn_thread = _threads.spawn(self.churn.run, _threads.thread_name("demo", "churn"),
                                            self._churn_ctx)

    def stop_churn(self) -> None:
        """Stop the churn and wait for it; the factory keeps running."""
        self._churn_ctx.cancel()
        if self._churn_thread is not None:
            _threads.join_all([self._churn_thread], STOP_TIMEOUT)

    def step(self, running_since: float, say: Callable[[str], None]) -> None:
        """Do the faults that are due, and notice what the fleet showed of those done."""
        now = time.monotonic()
        for fault in self.faults:
            if fault.done_at is None and now - running_since >= fault.at:
                self._do(fault, say)
            elif fault.done_at is not None and fault.seen_after is None:
                self._notice(fault, say)

    def _do(self, fault: Fault, say: Callable[[str], None]) -> None:
        name = fault.cluster
        fault.done_at = self.elapsed()
        if fault.kind == "leave":
            self.hub.delete(SECRETS, HUB_NAMESPACE, name)
            self.gone[name] = "secret"
            say(f"{name} leaves the fleet: its kubeconfig Secret is deleted on the hub")
        elif fault.kind == "rejoin":
            self.hub.create(SECRETS, kubeconfig_secret(name, self.members[name]))
            self.gone.pop(name, None)
            say(f"{name} rejoins: its kubeconfig Secret is created again")
        elif fault.kind == "stop":
            self.members[name].stop()
            self.gone[name] = "server"
            say(f"{name}'s API server stops: the member stays engaged but cannot be reached")
        else:
            self._events_at_start = self.counts.snapshot()[0].get(name, 0)
            self.members[name].start()
            self.gone.pop(name, None)
            say(f"{name}'s API server starts again on the same port")

    def _notice(self, fault: Fault, say: Callable[[str], None]) -> None:
        assert fault.done_at is not None
        name = fault.cluster
        after = self.elapsed() - fault.done_at
        status = self.configmaps.cluster_status().get(name)
        if fault.kind == "leave":
            gone = self.counts.snapshot()[1].get(name)
            if status is None and gone is not None and gone >= self.started + fault.done_at:
                fault.seen_after = after
                say(f"{name} disengaged {after:.2f}s later: its objects left the cache, handlers got "
                    "on_disengaged and no deletes")
        elif fault.kind == "rejoin":
            if status is not None and status.synced:
                fault.seen_after = after
                say(f"{name} engaged and synced {after:.2f}s later ({status.objects} ConfigMaps)")
        elif fault.kind == "stop":
            if status is not None and status.last_error is not None:
                fault.seen_after = after
                say(f"{name} unreachable, seen {after:.2f}s later: {_error(status.last_error)}; the "
                    "others go on")
        elif (status is not None and status.state == "synced"
              and self.counts.snapshot()[0].get(name, 0) > self._events_at_start):
            fault.seen_after = after
            say(f"{name} recovered {after:.2f}s after its server came back: synced, no error, "
                "delivering events again")

    def restore(self, say: Callable[[str], None]) -> None:
        """Put back what the script took away and not yet returned, before the caches are checked."""
        for name, what in list(self.gone.items()):
            if what == "secret":
                self.hub.create(SECRETS, kubeconfig_secret(name, self.members[name]))
                say(f"{name} rejoins before the check: its kubeconfig Secret is created again")
            else:
                self.members[name].start()
                say(f"{name}'s API server starts again before the check")
            del self.gone[name]

    # -- what it shows --

    def cluster_lines(self, width: int) -> list[str]:
        """One line (wrapped) per member: engaged, its state and for how long, objects, events,
        and the error while it fails (none once it recovered)."""
        statuses = self.configmaps.cluster_status()
        events = self.counts.snapshot()[0]
        lines: list[str] = []
        for name in self.members:
            status = statuses.get(name)
            if status is None:
                why = (": its kubeconfig Secret is gone from the hub" if self.gone.get(name) == "secret"
                       else " yet" if name not in events else "")
                text = f"not engaged{why}, {events.get(name, 0)} events"
            else:
                age = max(0.0, time.time() - status.since)
                error = f", error: {_error(status.last_error)}" if status.last_error else ""
                text = (f"engaged, {status.state} for {age:.0f}s, {status.objects} objects, "
                        f"{events.get(name, 0)} events{error}")
            lines += display.wrap(name, text, width, max_lines=2)
        return lines

    def differences(self) -> dict[str, tuple[str, int]]:
        """Each member's cache against its server: (``""`` when equal, else what differs; the
        ConfigMaps cached)."""
        result: dict[str, tuple[str, int]] = {}
        lister = self.configmaps.lister()
        for name, server in self.members.items():
            key = store.meta_namespace_key_func  # the caches' own key
            on_server = {key(o): meta.resource_version(o) for o in server.list_objects(workload.CONFIGMAPS)}
            cached = {key(o): meta.resource_version(o) for o in lister.cluster(name).list()}
            missing = sorted(on_server.keys() - cached.keys())
            extra = sorted(cached.keys() - on_server.keys())
            stale = sorted(k for k in on_server.keys() & cached.keys() if on_server[k] != cached[k])
            parts = [f"{len(keys)} {what} ({', '.join(keys[:SAMPLES])}{', …' if len(keys) > SAMPLES else ''})"
                     for what, keys in (("missing", missing), ("extra", extra), ("stale", stale)) if keys]
            result[name] = ("; ".join(parts), len(cached))
        return result

    def close(self) -> list[str]:
        """Stop and join everything; the names of threads still alive."""
        self.ctx.cancel()
        stuck = _threads.join_all(filter(None, [self._churn_thread]), STOP_TIMEOUT)
        self.factory.shutdown()
        self.hub_api.close()
        for server in (self.hub, *self.members.values()):
            server.stop()
        started_here = [t for t in _threads.kinformer_threads() if t not in self._threads_before]
        return stuck + _threads.join_all(started_here, STOP_TIMEOUT)


def _error(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def run(args: argparse.Namespace) -> int:
    """Run the fleet demo; 0 when every cache ended equal to its server and every thread stopped.

    The options were checked when parsed (``--clusters`` from 1 to
    :data:`~kinformer.cli.demo.app.MAX_CLUSTERS`).
    """
    out = sys.stdout
    screen = display.Screen(out, out.isatty())
    warnings = _Warnings()
    collector = [display.WarningCollector(warnings)] if screen.tty else None
    with signals.stop_on_signals() as stop, signals.root_log_handlers(collector):
        try:
            return _run(args, stop, out, screen, warnings)
        finally:
            screen.close()


class _Warnings:
    """The last log warnings, for the live display on a terminal."""

    def __init__(self) -> None:
        self.warnings: collections.deque[str] = collections.deque(maxlen=2)


def _run(args: argparse.Namespace, stop: threading.Event, out: TextIO, screen: display.Screen,
         warnings: _Warnings, width: int | None = None) -> int:
    width = width or display.terminal_width()
    demo = FleetDemo(args)
    events_seen = [0, time.monotonic(), 0.0]  # total events, when counted, events/s since

    def say(text: str) -> None:
        stamp = f"t={demo.elapsed():6.1f}s "
        demo.log.append(stamp + text)
        if not screen.tty:
            display.write_wrapped(out, text, width, stamp)

    def frame(phase: str) -> None:
        total = sum(demo.counts.snapshot()[0].values())
        now = time.monotonic()
        if now - events_seen[1] >= display.RATE_WINDOW:
            events_seen[2] = (total - events_seen[0]) / (now - events_seen[1])
            events_seen[0], events_seen[1] = total, now
        until = f" / {args.duration:g}s" if args.duration else " (Ctrl-C stops)"
        changes = demo.churn.changes if demo.churn is not None else 0
        lines = display.wrap_text(f"kinformer demo --clusters {args.clusters}  hub {demo.hub.url}  "
                                  f"{demo.elapsed():.1f}s{until}  churn {args.rate:g}/s", width)
        lines += display.wrap("phase", phase, width)
        lines += display.wrap("events/s", f"{events_seen[2]:.0f}  total {total}, {changes} changes made",
                              width)
        lines += demo.cluster_lines(width)
        if screen.tty:
            for i, line in enumerate(demo.log[-2:]):
                lines += display.wrap("fleet" if i == 0 else "", line, width, max_lines=2)
            for i, warning in enumerate(warnings.warnings):
                lines += display.wrap("last warnings" if i == 0 else "", warning, width,
                                      display.MAX_WARNING_LINES)
        screen.write(lines)

    interrupted = False
    differences: dict[str, tuple[str, int]] = {}
    stuck: list[str] = []
    try:
        if not screen.tty:
            display.write_wrapped(
                out, f"kinformer demo: {args.clusters} member clusters, {args.objects} ConfigMaps "
                f"among them changing {args.rate:g}/s; the hub {demo.hub.url} holds their kubeconfig "
                f"Secrets in {HUB_NAMESPACE}", width)
        deadline = demo.started + args.duration if args.duration else float("inf")
        frame_every = 0.5 if screen.tty else 1.0
        demo.load(stop)
        next_frame = time.monotonic()
        if not stop.is_set():
            remaining = deadline - time.monotonic()
            demo.start(OPEN_ENDED_RUN if remaining == float("inf") else max(0.0, remaining))
            while not demo.factory.has_synced() and not stop.is_set() and time.monotonic() < deadline:
                if time.monotonic() >= next_frame:
                    frame("listing: every member's initial list loading")
                    next_frame = time.monotonic() + frame_every
                stop.wait(TICK)
            if demo.factory.has_synced():
                demo.synced_after = demo.elapsed()
        if demo.synced_after is not None and not stop.is_set():
            running_since = time.monotonic()
            demo.start_churn()
            say(f"every member synced after {demo.synced_after:.2f}s; churn starts")
            while not stop.is_set() and time.monotonic() < deadline:
                demo.step(running_since, say)
                if time.monotonic() >= next_frame:
                    frame("running")
                    next_frame = time.monotonic() + frame_every
                stop.wait(min(TICK, max(0.0, deadline - time.monotonic())))
        interrupted = stop.is_set()
        demo.stop_churn()
        if demo.synced_after is not None:
            demo.restore(say)
            frame("checking every cache against its server")
            differences = _converge(demo)
    finally:
        stuck = demo.close()
    _summary(out, demo, interrupted, differences, stuck, width)
    return 1 if stuck or any(diff for diff, _count in differences.values()) else 0


def _converge(demo: FleetDemo) -> dict[str, tuple[str, int]]:
    """Wait until every member's cache equals its server; what still differs after the timeout."""
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    pause = threading.Event()  # never set: ``stop`` may already be, after Ctrl-C
    while True:
        differences = demo.differences()
        if not any(diff for diff, _count in differences.values()) or time.monotonic() >= deadline:
            return differences
        pause.wait(0.1)


def _summary(out: TextIO, demo: FleetDemo, interrupted: bool, differences: dict[str, tuple[str, int]],
             stuck: list[str], width: int) -> None:
    events = demo.counts.snapshot()[0]
    changes = demo.churn.changes if demo.churn is not None else 0
    fields = [
        ("fleet", f"{len(demo.members)} member clusters, {sum(demo.loaded.values())} ConfigMaps loaded "
                  f"among them, {changes} changes made; hub {demo.hub.url}"),
        ("initial sync", f"{demo.synced_after:.2f}s (every member)" if demo.synced_after is not None
         else "not reached"),
        ("events", f"{sum(events.values())} handled: "
                   + ", ".join(f"{name} {events.get(name, 0)}" for name in demo.members)),
    ]
    for fault in demo.faults:
        if fault.done_at is None:
            continue
        seen = (f", {_SEEN[fault.kind]} {fault.seen_after:.2f}s later" if fault.seen_after is not None
                else f", {_SEEN[fault.kind]}: not seen before the run ended")
        fields.append((_LABELS[fault.kind], f"{fault.cluster} at {fault.done_at:.1f}s{seen}"))
    if demo.synced_after is not None:
        differing = [name for name, (diff, _count) in differences.items() if diff]
        for name, (diff, count) in differences.items():
            fields.append((name, f"cache differs from its server: {diff}" if diff
                           else f"cache equals its server ({count} ConfigMaps)"))
        fields.append(("consistency", f"caches differ from their servers: {', '.join(differing)}"
                       if differing else "every cache equals its server"))
    fields.append(("threads", f"still alive after stop: {', '.join(stuck)}" if stuck else "all stopped"))
    how = "interrupted" if interrupted else "finished"
    lines = ["", f"kinformer demo summary (clusters, {how} after {demo.elapsed():.1f}s)"]
    for label, text in fields:
        lines += display.wrap(label, text, width, label_width=SUMMARY_LABEL_WIDTH)
    out.write("\n".join(lines) + "\n")
    out.flush()


_LABELS = {"leave": "left", "rejoin": "rejoined", "stop": "unreachable", "start": "reachable"}
_SEEN = {"leave": "disengaged", "rejoin": "synced", "stop": "its error seen",
         "start": "recovered"}
