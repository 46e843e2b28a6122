"""``kinformer demo``: the whole machinery at work against an embedded FakeAPIServer.

The demo starts a :class:`~kinformer.testing.FakeAPIServer`, loads a workload (a few namespaces,
thousands of ConfigMaps), then runs what an operator runs: an
:class:`~kinformer.InformerManager` fed by a discovery loop caches namespaces, ConfigMaps and
Widgets; a :class:`~kinformer.DiscoveringDynamicSharedInformerFactory` and a
:class:`~kinformer.ControllerManager` run two example controllers, one of which starts only once
the Widget CustomResourceDefinition is installed. Then the objects churn at ``--rate`` changes a
second while the server now and then drops every watch and forgets its history, so the reflectors
reconnect and relist. A live display shows it all (redrawn in place on a terminal, one plain line
a second otherwise); at the end the caches are checked against the server and a summary printed.
This module is the command and the orchestration; the workload and churn live in
:mod:`kinformer.cli.demo.workload`, the handlers and example controllers in
:mod:`kinformer.cli.demo.controllers`, the display in :mod:`kinformer.cli.demo.display`.
``--replicas N`` hands over to :mod:`kinformer.cli.demo.replicas` (leader election) and
``--clusters N`` to :mod:`kinformer.cli.demo.fleet` (member clusters that come and go).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from kinformer import _gc, _threads, context, errors, factory, meta
from kinformer.cache import store
from kinformer.cli import options
from kinformer.cli.demo import controllers, display, fleet, queue_metrics, replicas, signals, workload
from kinformer.client import rest
from kinformer.client.discovery import CachedDiscoveryClient
from kinformer.controllers.controller import Controller
from kinformer.gvr import APIResourceMeta, GroupVersionResource
from kinformer.managers.controller_manager import ControllerManager, ManagedController
from kinformer.managers.discovering_factory import DiscoveringDynamicSharedInformerFactory
from kinformer.managers.informer_manager import InformerManager
from kinformer.metrics import provider as metrics_provider
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

# what the InformerManager caches, in display order
CACHED = (workload.NAMESPACES, workload.CONFIGMAPS, workload.WIDGETS)
LOAD_CHUNK = 1000  # ConfigMaps per bulk insert while loading
DISCOVERY_INTERVAL = 1.0  # seconds between the InformerManager's discovery passes
CONVERGE_TIMEOUT = 10.0  # seconds the caches get to match the server at the end
STOP_TIMEOUT = 15.0  # seconds to join the demo's own threads
MAX_RATE = 1_000_000.0  # changes a second: far above what the embedded server takes
MAX_CLUSTERS = 20  # member servers of --clusters, each with its own threads, in one process


def add_parser(subparsers: Any) -> None:
    """Register ``demo`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="watch informers, an InformerManager and controllers work on a live workload",
        description="Start an embedded Kubernetes API server, load namespaces, ConfigMaps and a "
        "CRD with its objects, churn them, and show the informers and controllers keeping up.")
    parser.add_argument("--duration", type=options.seconds(), default=30.0,
                        help="seconds to run (default 30; 0 runs until Ctrl-C)")
    parser.add_argument("--objects", type=options.integer(minimum=0), default=5000,
                        help="ConfigMaps to load before the informers start (default 5000)")
    parser.add_argument("--rate", type=options.number(minimum=0.0, maximum=MAX_RATE), default=100.0,
                        help=f"changes per second once loaded (default 100; 0 for none; at most "
                        f"{MAX_RATE:g}, which the embedded server does not reach)")
    parser.add_argument("--no-faults", dest="faults", action="store_false",
                        help="do not drop watches nor compact the server's history")
    parser.add_argument("--seed", type=options.integer(), default=None, help="random seed of the churn")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--replicas", type=options.integer(minimum=2), default=None, metavar="N",
                      help="instead of the informer demo, run one controller as N (at least 2) "
                      "replicas under leader election, stopping the leader now and then")
    mode.add_argument("--clusters", type=options.integer(minimum=1, maximum=MAX_CLUSTERS), default=None,
                      metavar="N", help=f"instead of the informer demo, cache N (1 to {MAX_CLUSTERS}) member "
                      "clusters found through kubeconfig Secrets on a hub, one of which leaves and "
                      "rejoins while another becomes unreachable and comes back")
    parser.add_argument("--handover-every", type=options.seconds(positive=True), default=8.0,
                        help="with --replicas: seconds between stopping leaders (default 8)")
    parser.set_defaults(func=run, log_level=logging.WARNING)


class Demo:
    """The server, the workload, the informers and controllers of one demo run.

    Everything runs on ``kinformer-*`` threads under one root :class:`~kinformer.Context`;
    :meth:`close` cancels it and joins every thread, whatever state the demo reached.
    """

    def __init__(self, options: workload.Options, stats: workload.Stats) -> None:
        from kubernetes import client

        self.options = options
        self.stats = stats
        self.ctx = context.Context("demo")
        self._threads_before = set(_threads.kinformer_threads())  # to check that close() left none
        # the work queues' depth and retries, from the metrics they report; unset by close()
        self.queue_figures = queue_metrics.QueueFigures()
        metrics_provider.set_provider(self.queue_figures)
        self.server = FakeAPIServer(bookmark_interval=5.0)  # stopped by close()
        self.server.start()
        configuration = client.Configuration()
        configuration.host = self.server.url
        configuration.connection_pool_maxsize = 32  # one connection per open watch, plus writes
        self.api: Any = client.ApiClient(configuration)
        self.raw = controllers.RawAPI(rest.Client(self.api))
        self.manager = InformerManager(self.api, 0, self.ctx)
        self.discovery = CachedDiscoveryClient(self.api)
        self.tracked: dict[GroupVersionResource, APIResourceMeta] = {}
        self._tracked_lock = threading.Lock()
        self.ddsif = DiscoveringDynamicSharedInformerFactory(
            self.api, lambda gvr: gvr in (workload.CONFIGMAPS, workload.WIDGETS), poll_interval=5.0)
        self.controllers = ControllerManager("demo", self.ddsif.informer_source(), {
            controllers.AUDIT: ManagedController({workload.CONFIGMAPS}, self._audit_controller),
            controllers.WIDGET_CONTROLLER: ManagedController({workload.WIDGETS}, self._widget_controller),
        })
        self.threads: list[threading.Thread] = []
        self._churn_ctx = self.ctx.child("churn")
        self._churn_thread: threading.Thread | None = None
        self.final: display.Status | None = None  # the run as it stopped, for the summary
        self.loaded = 0
        self.synced_after: float | None = None
        self.crd_installed = False
        self.started = time.monotonic()

    # -- controllers (created by the ControllerManager, on its thread) --

    def _audit_controller(self, ctx: context.Context) -> Callable[[context.Context], None]:
        configmaps = self.ddsif.for_resource(workload.CONFIGMAPS)
        reconciler = controllers.AuditReconciler(configmaps.lister(), self.stats)
        controller = Controller(controllers.AUDIT, reconciler, workers=2)
        return self._run_controller(controller, configmaps.informer())

    def _widget_controller(self, ctx: context.Context) -> Callable[[context.Context], None]:
        widgets = self.ddsif.for_resource(workload.WIDGETS)
        reconciler = controllers.WidgetReconciler(widgets.lister(), self.raw, self.stats)
        return self._run_controller(Controller(controllers.WIDGET_CONTROLLER, reconciler), widgets.informer())

    @staticmethod
    def _run_controller(controller: Controller, informer: Any) -> Callable[[context.Context], None]:
        registration = informer.add_event_handler(controller.event_handler())

        def start(run_ctx: context.Context) -> None:
            try:
                controller.run(run_ctx)
            finally:
                informer.remove_event_handler(registration)

        return start

    # -- phases --

    def load(self, on_progress: Callable[[], None], stop: threading.Event) -> None:
        """Create the namespaces and ``objects`` ConfigMaps through the server-side bulk helper.

        Returns early once ``stop`` is set (Ctrl-C): within one chunk of :data:`LOAD_CHUNK`.
        """
        for namespace in workload.DEMO_NAMESPACES:
            self.server.create(workload.NAMESPACES,
                               {"metadata": {"name": namespace, "labels": {"demo": "true"}}})
        total = self.options.objects
        while self.loaded < total and not stop.is_set() and not self.ctx.cancelled():
            end = min(total, self.loaded + LOAD_CHUNK)
            self.server.bulk_create(workload.CONFIGMAPS,
                                    (workload.new_configmap(i) for i in range(self.loaded, end)))
            self.loaded = end
            on_progress()

    def start(self) -> None:
        """Start discovery, the informers and the controllers; does not block."""
        self._discover()
        self.manager.start()
        self.ddsif.start(self.ctx)
        self.threads.append(_threads.spawn(self._discovery_loop, _threads.thread_name("demo", "discovery")))
        self.threads.append(_threads.spawn(self.controllers.run,
                                           _threads.thread_name("demo", "controllers"), self.ctx))

    def _discover(self) -> None:
        """One discovery pass: hand every new cached type, with its own counter, to the manager."""
        result = self.discovery.server_resources()
        for resource in result.preferred_resources():
            gvr = resource.group_version_resource
            with self._tracked_lock:
                if gvr not in CACHED or gvr in self.tracked:
                    continue
                self.tracked[gvr] = resource
            self.manager.add_dynamic_resources([resource], controllers.CountingHandler(self.stats),
                                               list_complete=False)
        self.manager.start()

    def _discovery_loop(self) -> None:
        while not self.ctx.wait(DISCOVERY_INTERVAL):
            try:
                self._discover()
            except (errors.KinformerError, OSError) as err:
                log.warning("discovery failed: %s", err)

    def tracked_types(self) -> list[GroupVersionResource]:
        with self._tracked_lock:
            return [gvr for gvr in CACHED if gvr in self.tracked]

    def synced(self) -> bool:
        types = self.tracked_types()
        return bool(types) and all(self.manager.is_informer_synced(gvr) for gvr in types)

    def cached(self) -> dict[GroupVersionResource, int | None]:
        """Objects cached per tracked type; None while its first list is still loading."""
        counts: dict[GroupVersionResource, int | None] = {}
        for gvr in self.tracked_types():
            synced = self.manager.is_informer_synced(gvr)
            counts[gvr] = len(self.manager.lister(gvr).list()) if synced else None
        return counts

    def install_crd(self) -> int:
        """Install the Widget CRD over HTTP, then create its objects; returns how many."""
        self.raw.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                         workload.widget_crd())
        count = max(3, min(200, self.options.objects // 20))
        self.server.bulk_create(workload.WIDGETS, (workload.new_widget(i) for i in range(count)))
        self.crd_installed = True
        return count

    def start_churn(self, widgets: int) -> None:
        churn = workload.Churn(self.server, self.stats, self.options, widgets)
        self._churn_thread = _threads.spawn(churn.run, _threads.thread_name("demo", "churn"), self._churn_ctx)

    def stop_churn(self) -> None:
        """Stop the churn and wait for it; the informers and controllers keep running."""
        self._churn_ctx.cancel()
        if self._churn_thread is not None:
            _threads.join_all([self._churn_thread], STOP_TIMEOUT)

    def status(self) -> display.Status:
        """The run as it is now, for the display."""
        events, reconciles, changes, faults = self.stats.snapshot()
        reconnects, relists = self.queue_figures.reflector_counts()
        synced, _not_synced = self.ddsif.informers()
        waits = [w for w in (i.backoff_remaining() for i in synced.values()) if w is not None]
        return display.Status(
            url=self.server.url, elapsed=time.monotonic() - self.started, options=self.options,
            loaded=self.loaded, crd_installed=self.crd_installed, events=events,
            reconciles=reconciles, changes=changes, faults=faults, cached=self.cached(),
            running=sorted(self.controllers.running_controllers()), reconnects=reconnects,
            relists=relists, queues=self.queue_figures.snapshot(),
            backoff=max(waits) if waits else None)

    def mismatches(self) -> list[str]:
        """Types whose cache differs from the server (by key and resourceVersion)."""
        differing = []
        for gvr in self.tracked_types():
            on_server = {store.meta_namespace_key_func(o): _rv(o) for o in self.server.list_objects(gvr)}
            in_cache = {store.meta_namespace_key_func(o): _rv(o) for o in self.manager.lister(gvr).list()}
            if on_server != in_cache:
                differing.append(gvr.resource)
        return differing

    def close(self) -> list[str]:
        """Cancel everything and join every thread; returns the names of threads still alive.

        Records the run's final :meth:`status` first, for the summary. The process exits after
        it, so the cyclic collector is turned off first (:func:`kinformer._gc.exiting`): the
        stopping threads would otherwise wait for it to walk the heap.
        """
        _gc.exiting()
        self.final = self.status()
        self.ctx.cancel()
        _threads.join_all([*self.threads, *filter(None, [self._churn_thread])], STOP_TIMEOUT)
        self.ddsif.stop()
        self.manager.stop()
        self.api.close()
        self.server.stop()
        metrics_provider.set_provider(None)
        started_here = [t for t in _threads.kinformer_threads() if t not in self._threads_before]
        return _threads.join_all(started_here, STOP_TIMEOUT)


def informer_names() -> dict[str, str]:
    """What log lines call the demo's informers, and what the display calls them instead.

    The InformerManager's and the controllers' informers of one type would otherwise read alike.
    """
    names = {"reflector ddsif-crds": "customresourcedefinitions (the controllers' informer)"}
    for gvr in CACHED:
        subject = factory.gvr_subject(gvr)
        names[f"reflector ddsif-{subject}"] = f"{gvr.group_resource} (the controllers' informer)"
        names[f"reflector {subject}"] = f"{gvr.group_resource} (the manager's informer)"
    return names


def _rv(obj: Any) -> str:
    return meta.resource_version(obj) or ""


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0 after a clean stop (end of ``--duration`` or Ctrl-C)."""
    if args.replicas is not None:
        return replicas.run(args)
    if args.clusters is not None:
        return fleet.run(args)
    options = workload.Options(args.duration, args.objects, args.rate, args.faults, args.seed)
    out = sys.stdout
    screen = display.Display(out, out.isatty())
    collector = [display.WarningCollector(screen, informer_names())] if screen.tty else None
    with signals.stop_on_signals() as stop, signals.root_log_handlers(collector):
        try:
            return _run(options, stop, screen, out)
        finally:
            screen.close()
            _gc.exiting()  # the process ends next: walking what the run leaves takes seconds


def _run(options: workload.Options, stop: threading.Event, screen: display.Display, out: TextIO) -> int:
    stats = workload.Stats()
    demo = Demo(options, stats)
    interrupted = False
    mismatched: list[str] | None = None  # None: the caches were not checked
    alive: list[str] = []
    try:
        deadline = demo.started + options.duration if options.duration else float("inf")
        frame_interval = 0.5 if screen.tty else 1.0

        def tick(phase: str) -> bool:
            """Draw a frame; False once the demo should end."""
            screen.frame(demo.status(), phase)
            return not stop.is_set() and time.monotonic() < deadline

        last_load_frame = [0.0]

        def loading() -> None:
            if time.monotonic() - last_load_frame[0] >= frame_interval:
                screen.frame(demo.status(), "loading the workload")
                last_load_frame[0] = time.monotonic()

        demo.load(loading, stop)
        if not stop.is_set():  # Ctrl-C while loading: nothing to start
            demo.start()
            phase = "listing: initial lists loading"
            next_frame = time.monotonic()
            while not demo.synced():
                if stop.is_set() or time.monotonic() >= deadline:
                    break  # at once, not at the next frame: the lists may take long
                if time.monotonic() >= next_frame:
                    screen.frame(demo.status(), phase)
                    next_frame = time.monotonic() + frame_interval
                stop.wait(0.05)
            else:
                demo.synced_after = time.monotonic() - demo.started
        if demo.synced_after is not None and not stop.is_set() and time.monotonic() < deadline:
            widgets = demo.install_crd()
            demo.start_churn(widgets)
            phase = f"running (initial lists synced after {demo.synced_after:.2f}s)"
            while tick(phase):
                stop.wait(min(frame_interval, max(0.0, deadline - time.monotonic())))
        interrupted = stop.is_set()
        demo.stop_churn()
        if demo.synced_after is not None and not interrupted:  # Ctrl-C: stop now, check nothing
            screen.frame(demo.status(), "checking the caches against the server")
            mismatched = _converge(demo)
    finally:
        alive = demo.close()
    assert demo.final is not None  # close() records it first
    display.summary(out, demo.final, demo.synced_after, interrupted, mismatched, alive)
    unsynced = demo.synced_after is None and not interrupted  # --duration ended first
    return 1 if alive or mismatched or unsynced else 0


def _converge(demo: Demo) -> list[str]:
    """Wait until every cache equals the server; the types still differing after the timeout."""
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    pause = threading.Event()  # never set: ``stop`` may already be, after Ctrl-C
    while True:
        differing = demo.mismatches()
        if not differing or time.monotonic() >= deadline:
            return differing
        pause.wait(0.1)
