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
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import logging
import random
import shutil
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from types import FrameType
from typing import Any, TextIO

from kinformer import _json, _threads, context, errors
from kinformer.controller import Controller
from kinformer.controller_manager import ControllerManager, ManagedController
from kinformer.discovery import CachedDiscoveryClient, DiscoveringDynamicSharedInformerFactory
from kinformer.gvr import APIResourceMeta, GroupVersionResource
from kinformer.lister import GenericLister
from kinformer.listwatch import resource_path
from kinformer.manager import InformerManager
from kinformer.store import split_meta_namespace_key
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

NAMESPACES = GroupVersionResource("", "v1", "namespaces")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
WIDGETS = GroupVersionResource("demo.kinformer.io", "v1", "widgets")
CACHED = (NAMESPACES, CONFIGMAPS, WIDGETS)  # what the InformerManager caches, in display order
DEMO_NAMESPACES = ("team-alpha", "team-beta", "team-gamma", "team-delta")
AUDIT = "configmap-audit"
WIDGET_CONTROLLER = "widget-configmaps"

LOAD_CHUNK = 1000  # ConfigMaps per bulk insert while loading
DISCOVERY_INTERVAL = 1.0  # seconds between the InformerManager's discovery passes
CHURN_TICK = 0.05  # seconds between churn batches
FIRST_FAULT = 8.0  # seconds of churn before the first injected fault; each gap after is twice the last
CONVERGE_TIMEOUT = 10.0  # seconds the caches get to match the server at the end
RATE_WINDOW = 0.5  # seconds: events/s is recomputed over at least this long
STOP_TIMEOUT = 15.0  # seconds to join the demo's own threads


def add_parser(subparsers: Any) -> None:
    """Register ``demo`` and its options."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="watch informers, an InformerManager and controllers work on a live workload",
        description="Start an embedded Kubernetes API server, load namespaces, ConfigMaps and a "
        "CRD with its objects, churn them, and show the informers and controllers keeping up.")
    parser.add_argument("--duration", type=float, default=30.0,
                        help="seconds to run (default 30; 0 runs until Ctrl-C)")
    parser.add_argument("--objects", type=int, default=5000,
                        help="ConfigMaps to load before the informers start (default 5000)")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="changes per second once loaded (default 100; 0 for none)")
    parser.add_argument("--no-faults", dest="faults", action="store_false",
                        help="do not drop watches nor compact the server's history")
    parser.add_argument("--seed", type=int, default=None, help="random seed of the churn")
    parser.set_defaults(func=run, log_level=logging.WARNING)


# ---- counters ---------------------------------------------------------------------------------


class Stats:
    """Counters shared by the handlers, controllers, churn and display; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: collections.Counter[str] = collections.Counter()  # by event kind
        self.reconciles: collections.Counter[str] = collections.Counter()  # by controller
        self.changes = 0  # writes made by the churn
        self.faults = 0  # faults injected

    def event(self, kind: str) -> None:
        with self._lock:
            self.events[kind] += 1

    def reconciled(self, controller: str) -> None:
        with self._lock:
            self.reconciles[controller] += 1

    def changed(self, count: int = 1) -> None:
        with self._lock:
            self.changes += count

    def faulted(self) -> None:
        with self._lock:
            self.faults += 1

    def snapshot(self) -> tuple[dict[str, int], dict[str, int], int, int]:
        with self._lock:
            return dict(self.events), dict(self.reconciles), self.changes, self.faults


class CountingHandler:
    """Counts the events of one informer by kind; runs on that informer's handler thread."""

    def __init__(self, stats: Stats) -> None:
        self._stats = stats

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._stats.event("initial" if is_in_initial_list else "added")

    def on_update(self, old: Any, new: Any) -> None:
        self._stats.event("updated")

    def on_delete(self, obj: Any) -> None:
        self._stats.event("deleted")


# ---- the example controllers ------------------------------------------------------------------


class AuditReconciler:
    """Reads every changed ConfigMap back from the cache (what a real check would start from)."""

    def __init__(self, configmaps: GenericLister, stats: Stats) -> None:
        self._configmaps = configmaps
        self._stats = stats

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        with contextlib.suppress(errors.NotFoundError):  # deleted since: nothing to audit
            self._configmaps.by_namespace(namespace).get(name)
        self._stats.reconciled(AUDIT)


class RawAPI:
    """JSON requests through an ``ApiClient``'s own machinery, without the typed API classes.

    The typed classes of the official client take seconds to import; the demo needs four verbs.
    Thread-safe as the ApiClient is. Raises :class:`~kinformer.errors.APIError` subclasses for
    error statuses, except the ones in ``ok``.
    """

    def __init__(self, api: Any) -> None:
        self._api = api

    def request(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (),
                content_type: str = "application/json") -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = self._api.param_serialize(method, path, header_params=headers, body=body)
        response = self._api.call_api(*params, _request_timeout=(5.0, 30.0))
        data = response.read()
        status = int(response.status)
        if not 200 <= status <= 299 and status not in ok:
            raise errors.api_error_from_status(status, data)
        return status, (_json.loads(data) if data else None)


class WidgetReconciler:
    """Keeps a ConfigMap ``widget-<name>`` beside each Widget with ``data.message`` equal to its spec."""

    def __init__(self, widgets: GenericLister, api: RawAPI, stats: Stats) -> None:
        self._widgets = widgets
        self._api = api
        self._stats = stats

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        collection = resource_path(CONFIGMAPS, namespace)
        path = f"{collection}/widget-{name}"
        self._stats.reconciled(WIDGET_CONTROLLER)
        try:
            widget = self._widgets.by_namespace(namespace).get(name)
        except errors.NotFoundError:
            self._api.request("DELETE", path, ok=(404,))
            return
        data = {"message": str((widget.get("spec") or {}).get("message", ""))}
        status, current = self._api.request("GET", path, ok=(404,))
        if status == 404:
            self._api.request("POST", collection, {
                "metadata": {"name": f"widget-{name}", "labels": {"demo.kinformer.io/widget": name}},
                "data": data}, ok=(409,))
        elif (current.get("data") or {}) != data:
            self._api.request("PATCH", path, {"data": data}, content_type="application/merge-patch+json")


def widget_crd() -> dict[str, Any]:
    """The CustomResourceDefinition of the demo's Widgets."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS.group_resource},
        "spec": {
            "group": WIDGETS.group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": WIDGETS.version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object",
                                               "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }


# ---- the demo ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Options:
    duration: float
    objects: int
    rate: float
    faults: bool
    seed: int | None


class Demo:
    """The server, the workload, the informers and controllers of one demo run.

    Everything runs on ``kinformer-*`` threads under one root :class:`~kinformer.Context`;
    :meth:`close` cancels it and joins every thread, whatever state the demo reached.
    """

    def __init__(self, options: Options, stats: Stats) -> None:
        from kubernetes import client

        self.options = options
        self.stats = stats
        self.ctx = context.Context("demo")
        self._threads_before = set(_threads.kinformer_threads())  # to check that close() left none
        self.server = FakeAPIServer(bookmark_interval=5.0)  # stopped by close()
        self.server.start()
        configuration = client.Configuration()
        configuration.host = self.server.url
        configuration.connection_pool_maxsize = 32  # one connection per open watch, plus writes
        self.api: Any = _counting_api_client(configuration)
        self.raw = RawAPI(self.api)
        self.manager = InformerManager(self.api, 0, self.ctx)
        self.discovery = CachedDiscoveryClient(self.api)
        self.tracked: dict[GroupVersionResource, APIResourceMeta] = {}
        self._tracked_lock = threading.Lock()
        self.ddsif = DiscoveringDynamicSharedInformerFactory(
            self.api, lambda gvr: gvr in (CONFIGMAPS, WIDGETS), poll_interval=5.0)
        self.controllers = ControllerManager("demo", self.ddsif.informer_source(), {
            AUDIT: ManagedController({CONFIGMAPS}, self._audit_controller),
            WIDGET_CONTROLLER: ManagedController({WIDGETS}, self._widget_controller),
        })
        self.threads: list[threading.Thread] = []
        self._churn_ctx = self.ctx.child("churn")
        self._churn_thread: threading.Thread | None = None
        self.watch_counts_final = (0, 0)
        self.final_cached: dict[GroupVersionResource, int] = {}
        self.loaded = 0
        self.synced_after: float | None = None
        self.crd_installed = False
        self.started = time.monotonic()

    # -- controllers (created by the ControllerManager, on its thread) --

    def _audit_controller(self, ctx: context.Context) -> Callable[[context.Context], None]:
        configmaps = self.ddsif.for_resource(CONFIGMAPS)
        return self._run_controller(Controller(AUDIT, AuditReconciler(configmaps.lister(), self.stats),
                                               workers=2), configmaps.informer())

    def _widget_controller(self, ctx: context.Context) -> Callable[[context.Context], None]:
        widgets = self.ddsif.for_resource(WIDGETS)
        reconciler = WidgetReconciler(widgets.lister(), self.raw, self.stats)
        return self._run_controller(Controller(WIDGET_CONTROLLER, reconciler), widgets.informer())

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

    def load(self, on_progress: Callable[[], None]) -> None:
        """Create the namespaces and ``objects`` ConfigMaps through the server-side bulk helper."""
        for namespace in DEMO_NAMESPACES:
            self.server.create(NAMESPACES, {"metadata": {"name": namespace, "labels": {"demo": "true"}}})
        total = self.options.objects
        while self.loaded < total and not self.ctx.cancelled():
            end = min(total, self.loaded + LOAD_CHUNK)
            self.server.bulk_create(CONFIGMAPS, (_configmap(i) for i in range(self.loaded, end)))
            self.loaded = end
            on_progress()

    def start(self) -> None:
        """Start discovery, the informers and the controllers; does not block."""
        self._discover()
        self.manager.start()
        self.ddsif.start(self.ctx)
        self.threads.append(_threads.spawn(self._discovery_loop, _threads.thread_name("demo", "discovery")))
        self.threads.append(_threads.spawn(self.controllers.start,
                                           _threads.thread_name("demo", "controllers"), self.ctx))

    def _discover(self) -> None:
        """One discovery pass: hand every new cached type, with its own counter, to the manager."""
        result = self.discovery.server_resources()
        for meta in result.preferred_resources():
            gvr = meta.group_version_resource
            with self._tracked_lock:
                if gvr not in CACHED or gvr in self.tracked:
                    continue
                self.tracked[gvr] = meta
            self.manager.add_dynamic_resources([meta], CountingHandler(self.stats), list_complete=False)
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
        self.raw.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
        count = max(3, min(200, self.options.objects // 20))
        self.server.bulk_create(WIDGETS, (_widget(i) for i in range(count)))
        self.crd_installed = True
        return count

    def start_churn(self, widgets: int) -> None:
        churn = Churn(self.server, self.stats, self.options, widgets)
        self._churn_thread = _threads.spawn(churn.run, _threads.thread_name("demo", "churn"), self._churn_ctx)

    def stop_churn(self) -> None:
        """Stop the churn and wait for it; the informers and controllers keep running."""
        self._churn_ctx.cancel()
        if self._churn_thread is not None:
            _threads.join_all([self._churn_thread], STOP_TIMEOUT)

    def watch_counts(self) -> tuple[int, int]:
        """(watch reconnects, relists) of the demo's informers, from the requests they sent.

        Each informer's first list and first watch are not counted; every further watch is a
        re-established one, every further list (not counting continued pages) a relist.
        """
        firsts = {resource_path(gvr): 1 for gvr in CACHED}
        firsts[resource_path(CONFIGMAPS)] += 1  # the InformerManager's and the controllers' informers
        firsts[resource_path(WIDGETS)] += 1
        lists, watches = self.api.counts()
        reconnects = sum(max(0, watches.get(p, 0) - n) for p, n in firsts.items())
        relists = sum(max(0, lists.get(p, 0) - n) for p, n in firsts.items())
        return reconnects, relists

    def mismatches(self) -> list[str]:
        """Types whose cache differs from the server (by key and resourceVersion)."""
        differing = []
        for gvr in self.tracked_types():
            on_server = {_key(o): _rv(o) for o in self.server.list_objects(gvr)}
            in_cache = {_key(o): _rv(o) for o in self.manager.lister(gvr).list()}
            if on_server != in_cache:
                differing.append(gvr.resource)
        return differing

    def close(self) -> list[str]:
        """Cancel everything and join every thread; returns the names of threads still alive.

        Records the final cache sizes and watch counts first, for the summary.
        """
        self.final_cached = {gvr: n for gvr, n in self.cached().items() if n is not None}
        self.watch_counts_final = self.watch_counts()
        self.ctx.cancel()
        _threads.join_all([*self.threads, *filter(None, [self._churn_thread])], STOP_TIMEOUT)
        self.ddsif.stop()
        self.manager.stop()
        self.api.close()
        self.server.stop()
        started_here = [t for t in _threads.kinformer_threads() if t not in self._threads_before]
        return _threads.join_all(started_here, STOP_TIMEOUT)


def _counting_api_client(configuration: Any) -> Any:
    """An ``ApiClient`` that also counts the lists and watches it sends, by path.

    ``counts()`` returns ``(lists, watches)``: Counters of GET requests by path, a list counted
    once however many pages it took. Thread-safe.
    """
    from kubernetes.client import ApiClient

    class CountingApiClient(ApiClient):
        def __init__(self, configuration: Any) -> None:
            super().__init__(configuration)
            self._counts_lock = threading.Lock()  # guards _lists, _watches
            self._lists: collections.Counter[str] = collections.Counter()
            self._watches: collections.Counter[str] = collections.Counter()

        def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            if method == "GET":
                parts = urllib.parse.urlsplit(url)
                query = urllib.parse.parse_qs(parts.query)
                if query.get("watch", [""])[0] in ("true", "1"):
                    with self._counts_lock:
                        self._watches[parts.path] += 1
                elif not query.get("continue"):
                    with self._counts_lock:
                        self._lists[parts.path] += 1
            return super().call_api(method, url, *args, **kwargs)

        def counts(self) -> tuple[dict[str, int], dict[str, int]]:
            with self._counts_lock:
                return dict(self._lists), dict(self._watches)

    return CountingApiClient(configuration)


def _configmap(i: int) -> dict[str, Any]:
    namespace = DEMO_NAMESPACES[i % len(DEMO_NAMESPACES)]
    return {
        "metadata": {"name": f"config-{i:05d}", "namespace": namespace,
                     "labels": {"app": f"app-{i % 17}", "tier": ("web", "api", "db")[i % 3]}},
        "data": {"revision": "0", "settings.yaml": f"replicas: {i % 5 + 1}\nlogLevel: info\n" * 4},
    }


def _widget(i: int) -> dict[str, Any]:
    namespace = DEMO_NAMESPACES[i % len(DEMO_NAMESPACES)]
    return {"apiVersion": WIDGETS.group_version, "kind": "Widget",
            "metadata": {"name": f"widget-{i:03d}", "namespace": namespace},
            "spec": {"message": "hello 0"}}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _key(obj: Any) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _rv(obj: Any) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Churn:
    """Updates, creates and deletes ConfigMaps and updates Widgets at a steady rate, server-side.

    :meth:`run` blocks until its context is cancelled. With faults on it drops every watch after
    :data:`FIRST_FAULT` seconds, then after gaps twice as long each time (a reflector's backoff
    grows with every failure and resets only after two quiet minutes, as in client-go); every
    other fault first forgets the event history, so resuming watches would get 410 Gone.
    """

    def __init__(self, server: FakeAPIServer, stats: Stats, options: Options, widgets: int) -> None:
        self._server = server
        self._stats = stats
        self._options = options
        self._random = random.Random(options.seed)
        self._configmaps = [i for i in range(options.objects)]
        self._next = options.objects
        self._widgets = widgets
        self._revision = 0

    def run(self, ctx: context.Context) -> None:
        rate = self._options.rate
        begun = time.monotonic()
        done = 0
        gap = FIRST_FAULT
        next_fault = begun + gap
        while not ctx.wait(CHURN_TICK):
            now = time.monotonic()
            due = int((now - begun) * rate) - done
            for _ in range(max(0, due)):
                try:
                    self._change()
                except errors.APIError as err:  # e.g. a conflict with a controller's write
                    log.debug("churn change failed: %s", err)
            done += max(0, due)
            if self._options.faults and now >= next_fault:
                gap *= 2  # the reflectors' backoff grows with each failure, as client-go's does
                next_fault = now + gap
                self._fault()

    def _change(self) -> None:
        pick = self._random.random()
        self._revision += 1
        if pick < 0.1 and self._widgets:
            i = self._random.randrange(self._widgets)
            widget = _widget(i)
            widget["spec"]["message"] = f"hello {self._revision}"
            self._server.update(WIDGETS, widget)
        elif pick < 0.2 or not self._configmaps:
            self._server.create(CONFIGMAPS, _configmap(self._next))
            self._configmaps.append(self._next)
            self._next += 1
        elif pick < 0.3:
            index = self._random.randrange(len(self._configmaps))
            i = self._configmaps[index]
            self._configmaps[index] = self._configmaps[-1]
            self._configmaps.pop()
            self._server.delete(CONFIGMAPS, DEMO_NAMESPACES[i % len(DEMO_NAMESPACES)], f"config-{i:05d}")
        else:
            i = self._random.choice(self._configmaps)
            configmap = _configmap(i)
            configmap["data"]["revision"] = str(self._revision)
            self._server.update(CONFIGMAPS, configmap)
        self._stats.changed()

    def _fault(self) -> None:
        if self._stats.snapshot()[3] % 2 == 1:
            self._server.compact()
        self._server.drop_watches()
        self._stats.faulted()


# ---- display ----------------------------------------------------------------------------------


class Display:
    """Draws the status: redrawn in place on a terminal, one plain line per frame otherwise."""

    def __init__(self, out: TextIO, tty: bool) -> None:
        self._out = out
        self.tty = tty
        self._drawn = 0
        self._last_events = 0
        self._last_time = time.monotonic()
        self.rate = 0.0
        self.warnings: collections.deque[str] = collections.deque(maxlen=2)

    def frame(self, demo: Demo, phase: str) -> None:
        now = time.monotonic()
        events, reconciles, changes, faults = demo.stats.snapshot()
        total = sum(events.values())
        if now - self._last_time >= RATE_WINDOW:  # a shorter span would make a jumpy rate
            self.rate = (total - self._last_events) / (now - self._last_time)
            self._last_events, self._last_time = total, now
        elapsed = now - demo.started
        cached = demo.cached()
        running = sorted(demo.controllers.running_controllers())
        reconnects, relists = demo.watch_counts()
        if not self.tty:
            parts = [f"t={elapsed:.1f}s", f"phase={phase}",
                     f"loaded={demo.loaded}/{demo.options.objects}", f"events/s={self.rate:.0f}"]
            parts += [f"{gvr.resource}={'listing' if n is None else n}" for gvr, n in cached.items()]
            parts += [f"controllers={','.join(running) or '-'}", f"reconnects={reconnects}",
                      f"relists={relists}"]
            self._write([" ".join(parts)])
            return
        until = f" / {demo.options.duration:g}s" if demo.options.duration else " (Ctrl-C stops)"
        lines = [
            f"kinformer demo  {demo.server.url}  {elapsed:5.1f}s{until}  "
            f"churn {demo.options.rate:g}/s",
            f"  phase         {phase}",
            f"  loaded        {demo.loaded}/{demo.options.objects} ConfigMaps in "
            f"{len(DEMO_NAMESPACES)} namespaces" + ("  + Widget CRD" if demo.crd_installed else ""),
            f"  events/s      {self.rate:8.0f}   total {total}  ("
            + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")) + ")",
            "  cached        " + "   ".join(
                f"{gvr.resource} {'listing…' if n is None else n}" for gvr, n in cached.items()),
            "  controllers   " + (", ".join(f"{name} ({reconciles.get(name, 0)} reconciles)"
                                            for name in running) or "none yet"),
            f"  watches       {reconnects} reconnects, {relists} relists  "
            f"({_plural(faults, 'fault')} injected, {changes} changes made)",
        ]
        lines += [f"  {'last warnings' if i == 0 else '':<13} {w}" for i, w in enumerate(self.warnings)]
        self._write(lines)

    def _write(self, lines: list[str]) -> None:
        if self.tty:
            # a wrapped line would throw off the cursor-up count of the next frame
            width = max(20, shutil.get_terminal_size().columns - 1)
            lines = [line[:width] for line in lines]
            up = f"\x1b[{self._drawn}F" if self._drawn else "\x1b[?25l"
            self._out.write(up + "".join(line + "\x1b[K\n" for line in lines) + "\x1b[J")
            self._drawn = len(lines)
        else:
            self._out.write("".join(line + "\n" for line in lines))
        self._out.flush()

    def close(self) -> None:
        if self.tty:
            self._out.write("\x1b[?25h")
            self._out.flush()


class _WarningCollector(logging.Handler):
    """Keeps the last warnings for the display instead of printing them over it."""

    def __init__(self, display: Display) -> None:
        super().__init__(logging.WARNING)
        self._display = display

    def emit(self, record: logging.LogRecord) -> None:
        self._display.warnings.append(f"{record.name}: {record.getMessage()}"[:120])


# ---- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0 after a clean stop (end of ``--duration`` or Ctrl-C)."""
    if args.duration < 0 or args.objects < 0 or args.rate < 0:
        print("error: --duration, --objects and --rate must not be negative", file=sys.stderr)
        return 2
    options = Options(args.duration, args.objects, args.rate, args.faults, args.seed)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signum, previous[signum])  # a second Ctrl-C interrupts at once

    previous: dict[int, Any] = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    out = sys.stdout
    display = Display(out, out.isatty())
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    if display.tty:
        root.handlers = [_WarningCollector(display)]
    try:
        return _run(options, stop, display, out)
    finally:
        display.close()
        root.handlers = saved_handlers
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(options: Options, stop: threading.Event, display: Display, out: TextIO) -> int:
    stats = Stats()
    demo = Demo(options, stats)
    interrupted = False
    mismatched: list[str] = []
    alive: list[str] = []
    try:
        deadline = demo.started + options.duration if options.duration else float("inf")
        frame_interval = 0.5 if display.tty else 1.0

        def tick(phase: str) -> bool:
            """Draw a frame; False once the demo should end."""
            display.frame(demo, phase)
            return not stop.is_set() and time.monotonic() < deadline

        last_load_frame = [0.0]

        def loading() -> None:
            if time.monotonic() - last_load_frame[0] >= frame_interval:
                display.frame(demo, "loading the workload")
                last_load_frame[0] = time.monotonic()

        demo.load(loading)
        demo.start()
        phase = "listing: initial lists loading"
        next_frame = time.monotonic()
        while not demo.synced():
            if time.monotonic() >= next_frame:
                if not tick(phase):
                    break
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
        if demo.synced_after is not None:
            display.frame(demo, "checking the caches against the server")
            mismatched = _converge(demo)
    finally:
        alive = demo.close()
    _summary(out, demo, interrupted, mismatched, alive)
    return 1 if alive or mismatched else 0


def _converge(demo: Demo) -> list[str]:
    """Wait until every cache equals the server; the types still differing after the timeout."""
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    pause = threading.Event()  # never set: ``stop`` may already be, after Ctrl-C
    while True:
        differing = demo.mismatches()
        if not differing or time.monotonic() >= deadline:
            return differing
        pause.wait(0.1)


def _summary(out: TextIO, demo: Demo, interrupted: bool, mismatched: list[str], alive: list[str]) -> None:
    """Print what the run did and whether the caches ended equal to the server."""
    events, reconciles, changes, faults = demo.stats.snapshot()
    elapsed = time.monotonic() - demo.started
    total = sum(events.values())
    reconnects, relists = demo.watch_counts_final
    lines = [
        "",
        f"kinformer demo summary ({'interrupted' if interrupted else 'finished'} after {elapsed:.1f}s)",
        f"  workload       {demo.loaded} ConfigMaps in {len(DEMO_NAMESPACES)} namespaces"
        + (", Widget CRD installed" if demo.crd_installed else "") + f"; {changes} changes made",
        "  initial sync   "
        + (f"{demo.synced_after:.2f}s" if demo.synced_after is not None else "not reached"),
        f"  events         {total} handled ({total / elapsed if elapsed else 0:.0f}/s): "
        + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")),
        "  cached         " + ("   ".join(f"{gvr.resource} {n}" for gvr, n in demo.final_cached.items())
                                or "nothing"),
        "  controllers    " + (", ".join(f"{name} {n} reconciles" for name, n in sorted(reconciles.items()))
                                or "none ran"),
        f"  watches        {reconnects} reconnects, {relists} relists ({_plural(faults, 'fault')} injected)",
    ]
    if demo.synced_after is not None:
        lines.append("  consistency    " + (f"caches differ from the server: {', '.join(mismatched)}"
                                          if mismatched else "every cache matches the server"))
    if alive:
        lines.append(f"  threads        still alive after stop: {', '.join(alive)}")
    else:
        lines.append("  threads        all stopped")
    out.write("\n".join(lines) + "\n")
    out.flush()
