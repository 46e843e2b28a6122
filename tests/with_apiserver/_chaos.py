"""The chaos driver: writers, faults, informers with recording handlers, and the final checks.

A :class:`Chaos` run owns a FakeAPIServer, one SharedIndexInformer per resource kind (a
namespaced built-in, a cluster-scoped built-in, and a CRD's custom objects) plus one watching a
namespace through a label selector (objects move in and out of it), writer threads
changing objects through the official client, and a fault driver. ``run(seconds)`` injects
faults for that long; ``settle(timeout)`` waits until every cache and every handler's replayed
event log equals the server; ``report()`` lists what happened and every mismatch left.
Everything random comes from seeded ``random.Random`` instances.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3
from helpers import crd
from kubernetes import client as k8s

from kinformer.cache.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
)
from kinformer.client.listerwatcher import ListOptions, ListResult
from kinformer.client.listwatch import ListWatch
from kinformer.gvr import GroupVersionResource
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeAPIServer, wait_for

GROUP = "chaos.example.com"
CRDS = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CRD_NAME = f"widgets.{GROUP}"
COLOR_INDEX = "by-color"
COLORS = ("red", "green", "blue", "")
NAMES_PER_NAMESPACE = 12  # few names, so creates, updates and deletes hit the same keys often
WRITE_INTERVAL = 0.004  # seconds between one writer's operations
FAULT_INTERVAL = 0.25  # mean seconds between faults: informers are down often, but not always
READ_TIMEOUT = 5.0  # a watch silent this long is re-established; bookmarks come every 0.2 s
CLOCK_SPEED = 80.0  # the informers' clock runs this much faster: backoff 0.8 s..30 s becomes 10 ms..0.4 s
SLOW_HANDLER_WORK = 0.001  # seconds the slow handler spends on each notification
RAISE_EVERY = 7  # the raising handler raises on about one notification in this many

FAULTS = (
    "drop-watches", "compact", "list-500", "list-429", "watch-500", "watch-429",
    "delay", "restart", "crd-recreate", "watch-garbage", "watch-cut",
)


class ScaledClock:
    """A Clock running ``speed`` times faster than real time, so backoff waits shrink alike."""

    def __init__(self, speed: float) -> None:
        self._speed = speed

    def now(self) -> float:
        return time.monotonic() * self._speed

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(None if timeout is None else timeout / self._speed)


@dataclasses.dataclass(frozen=True)
class Kind:
    """One resource kind under test: its GVR and the namespaces written ("" when cluster-scoped)."""

    name: str
    gvr: GroupVersionResource
    namespaces: tuple[str, ...]


CONFIGMAPS = Kind("configmaps", GroupVersionResource("", "v1", "configmaps"), ("default", "chaos"))
NODES = Kind("nodes", GroupVersionResource("", "v1", "nodes"), ("",))
WIDGETS = Kind("widgets", GroupVersionResource(GROUP, "v1", "widgets"), ("default", "chaos"))
KINDS = (CONFIGMAPS, NODES, WIDGETS)


@dataclasses.dataclass(frozen=True)
class View:
    """What one informer watches: a kind, optionally one namespace and a label selector on color."""

    name: str
    kind: Kind
    namespace: str = ""
    colors: tuple[str, ...] = ()
    resync: float = 0.0  # seconds of the informers' clock between resyncs; 0: never

    @property
    def selector(self) -> str | None:
        return f"color in ({','.join(self.colors)})" if self.colors else None

    def shows(self, obj: Any) -> bool:
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return not self.colors or (meta.get("labels") or {}).get("color") in self.colors


VIEWS = (
    View("configmaps", CONFIGMAPS),
    View("nodes", NODES, resync=20.0),  # every 0.25 s of real time
    View("widgets", WIDGETS),
    View("red-or-green-configmaps-in-chaos", CONFIGMAPS, "chaos", ("red", "green")),
)


def color_index(obj: Any) -> list[str]:
    color = ((obj.get("metadata") or {}).get("labels") or {}).get("color")
    return [color] if color else []


INDEXERS = {NAMESPACE_INDEX: meta_namespace_index_func, COLOR_INDEX: color_index}


def key_of(obj: Any) -> str:
    return deletion_handling_meta_namespace_key_func(obj)


def rv_of(obj: Any) -> str:
    return str(obj["metadata"]["resourceVersion"])


# ---- the object clients: the official typed APIs, one per kind --------------------------------


class Objects:
    """create / replace / delete of one kind through the official client's typed APIs."""

    def __init__(self, kind: Kind, api_client: Any) -> None:
        self.kind = kind
        self._core = k8s.CoreV1Api(api_client)
        self._custom = k8s.CustomObjectsApi(api_client)

    def body(self, namespace: str, name: str, color: str, value: int) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "labels": {"color": color} if color else {}}
        if namespace:
            meta["namespace"] = namespace
        if self.kind is CONFIGMAPS:
            return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": str(value)}}
        if self.kind is NODES:
            return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
                    "spec": {"podCIDR": f"10.{value % 250}.0.0/24"}}
        return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": meta,
                "spec": {"size": value}}

    def create(self, namespace: str, body: dict[str, Any]) -> None:
        if self.kind is CONFIGMAPS:
            self._core.create_namespaced_config_map(namespace, body)
        elif self.kind is NODES:
            self._core.create_node(body)
        else:
            self._custom.create_namespaced_custom_object(GROUP, "v1", namespace, "widgets", body)

    def replace(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        if self.kind is CONFIGMAPS:
            self._core.replace_namespaced_config_map(name, namespace, body)
        elif self.kind is NODES:
            self._core.replace_node(name, body)
        else:
            self._custom.replace_namespaced_custom_object(GROUP, "v1", namespace, "widgets", name, body)

    def delete(self, namespace: str, name: str) -> None:
        if self.kind is CONFIGMAPS:
            self._core.delete_namespaced_config_map(name, namespace)
        elif self.kind is NODES:
            self._core.delete_node(name)
        else:
            self._custom.delete_namespaced_custom_object(GROUP, "v1", namespace, "widgets", name)


# ---- handlers ---------------------------------------------------------------------------------


# Not kinformer.testing.Recorder: it keeps old and new versions for replay() and can be slow or raise.
class Recorder:
    """A handler logging every notification as (op, key, old rv, new rv); optionally slow or raising."""

    def __init__(self, label: str, seed: int = 0, slow: float = 0.0, raise_every: int = 0) -> None:
        self.label = label
        self._lock = threading.Lock()
        self.log: list[tuple[str, str, str, str]] = []
        self.tombstones = 0
        self._slow = slow
        self._pause = threading.Event()  # never set: the slow handler's work takes this long
        self._raise_every = raise_every
        self._rng = random.Random(seed)
        self.raised = 0

    def _record(self, entry: tuple[str, str, str, str]) -> None:
        with self._lock:
            self.log.append(entry)
        if self._slow:
            self._pause.wait(self._slow)
        if self._raise_every and self._rng.randrange(self._raise_every) == 0:
            self.raised += 1
            raise RuntimeError(f"handler {self.label} fails now and then")

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(("add", key_of(obj), "", rv_of(obj)))

    def on_update(self, old: Any, new: Any) -> None:
        self._record(("update", key_of(new), rv_of(old), rv_of(new)))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            with self._lock:
                self.tombstones += 1
        self._record(("delete", key_of(obj), "", ""))

    def replay(self) -> tuple[dict[str, str], list[str]]:
        """The state the notifications add up to, and every notification that did not fit it."""
        with self._lock:
            entries = list(self.log)
        state: dict[str, str] = {}
        anomalies: list[str] = []
        for op, key, old, new in entries:
            if op == "add":
                if key in state:
                    anomalies.append(f"add of {key} already known at rv {state[key]}")
                state[key] = new
            elif op == "update":
                if state.get(key) != old:
                    anomalies.append(f"update of {key} from rv {old}, known at {state.get(key)}")
                if int(new) < int(old):
                    anomalies.append(f"update of {key} went back in time from rv {old} to {new}")
                state[key] = new
            else:
                if key not in state:
                    anomalies.append(f"delete of unknown {key}")
                state.pop(key, None)
        return state, anomalies

    def __repr__(self) -> str:
        return f"<Recorder {self.label}>"


# ---- the run ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Watched:
    """One view's informer, its handlers, its run thread and the errors it reported."""

    view: View
    informer: SharedIndexInformer
    handlers: list[Recorder]
    thread: threading.Thread
    errors: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)


class Chaos:
    """A FakeAPIServer under writes and faults, watched by informers; see the module docstring."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.server = FakeAPIServer(bookmark_interval=0.2, future_rv_wait=0.3)
        self.server.start()
        self.server.create(GroupVersionResource("", "v1", "namespaces"),
                           {"metadata": {"name": "chaos"}})
        self.server.create(CRDS, crd(WIDGETS.gvr))
        self._writer_client = self.server.api_client()
        self._informer_client = self.server.api_client()
        self._stop_faults = threading.Event()
        self._stop_writers = threading.Event()
        self._stop_informers = threading.Event()
        self.operations: collections.Counter[str] = collections.Counter()
        self.faults: collections.Counter[str] = collections.Counter()
        self.lists: collections.Counter[str] = collections.Counter()  # successful, per view
        self._stats_lock = threading.Lock()
        self.watched: list[Watched] = []
        self._threads: list[threading.Thread] = []
        clock = ScaledClock(CLOCK_SPEED)
        for view in VIEWS:
            http = ListWatch.for_resource(self._informer_client, view.kind.gvr, view.namespace,
                                          label_selector=view.selector, read_timeout=READ_TIMEOUT)
            informer = SharedIndexInformer(
                ListWatch(self._counting(view.name, http.list), http.watch),
                default_event_handler_resync_period=view.resync,
                indexers=INDEXERS,
                clock=clock,
                name=f"chaos-{view.name}",
            )
            handlers = [
                Recorder(f"{view.name}-fast"),
                Recorder(f"{view.name}-slow", slow=SLOW_HANDLER_WORK),
                Recorder(f"{view.name}-raising", seed=seed, raise_every=RAISE_EVERY),
            ]
            for handler in handlers:
                informer.add_event_handler(handler)
            watched = Watched(view, informer, handlers, threading.Thread())
            informer.set_watch_error_handler(self._error_counter(watched))
            watched.thread = threading.Thread(target=informer.run, args=(self._stop_informers,),
                                              name=f"chaos-informer-{view.name}")
            self.watched.append(watched)

    def _counting(self, name: str, list_func: Callable[[ListOptions], ListResult]
                  ) -> Callable[[ListOptions], ListResult]:
        def counted(options: ListOptions) -> ListResult:
            result = list_func(options)
            self._count(self.lists, name)
            return result

        return counted

    @staticmethod
    def _error_counter(watched: Watched) -> Callable[[Any, BaseException], None]:
        def count(_reflector: Any, error: BaseException) -> None:
            watched.errors[type(error).__name__] += 1

        return count

    # -- phases -------------------------------------------------------------------------------

    def start_informers(self, timeout: float) -> bool:
        for watched in self.watched:
            watched.thread.start()
        return all(w.informer.wait_for_sync(timeout=timeout) for w in self.watched)

    def run(self, seconds: float) -> None:
        """Write and inject faults for ``seconds``, then stop both and restore a healthy server."""
        for index, kind in enumerate(KINDS):
            objects = Objects(kind, self._writer_client)  # built here: the first import is slow
            self._spawn(self._writer, f"chaos-writer-{kind.name}", objects, self.seed * 100 + index)
        self._spawn(self._fault_driver, "chaos-faults", self.seed)
        self._stop_faults.wait(seconds)
        self._stop_faults.set()
        self._stop_writers.set()
        for thread in self._threads:
            thread.join(30)
            assert not thread.is_alive(), f"{thread.name} did not stop"
        self._threads.clear()
        self.server.set_delay(0, "list")
        self.server.set_delay(0, "watch")
        self.server.start()
        self._ensure_crd()

    def settle(self, timeout: float) -> bool:
        """Wait until every cache, index and replayed handler log equals the server."""
        deadline = time.monotonic() + timeout
        return all(
            wait_for(lambda w=w: not self.mismatches(w), max(0.0, deadline - time.monotonic()), 0.05)
            for w in self.watched
        )

    def stop(self, timeout: float) -> list[str]:
        """Stop the informers (their run threads must return within ``timeout``) and the server."""
        self._stop_informers.set()
        stuck = []
        deadline = time.monotonic() + timeout
        for watched in self.watched:
            watched.thread.join(max(0.0, deadline - time.monotonic()))
            if watched.thread.is_alive():
                stuck.append(watched.thread.name)
        self._writer_client.close()
        self._informer_client.close()
        self.server.stop()
        return stuck

    # -- checks -------------------------------------------------------------------------------

    def server_state(self, view: View) -> dict[str, str]:
        return {key_of(o): rv_of(o) for o in self.server.list_objects(view.kind.gvr) if view.shows(o)}

    def mismatches(self, watched: Watched) -> list[str]:
        """Every difference between the server and this kind's cache, indexes and handler logs."""
        try:
            truth = self.server_state(watched.view)
        except Exception as exc:  # the CRD may be gone for a moment
            return [f"server state unavailable: {exc}"]
        found: list[str] = []
        indexer = watched.informer.get_indexer()
        cache = {key_of(o): rv_of(o) for o in indexer.list()}
        found += _diff(f"{watched.view.name} cache", cache, truth)
        found += index_mismatches(watched.view.name, indexer)
        for handler in watched.handlers:
            state, anomalies = handler.replay()
            found += _diff(f"{handler.label} replay", state, truth)
            found += [f"{handler.label}: {a}" for a in anomalies]
        return found

    def all_mismatches(self) -> list[str]:
        return [m for w in self.watched for m in self.mismatches(w)]

    def relists(self) -> dict[str, int]:
        """Successful lists per view after the first one."""
        with self._stats_lock:
            return {v.name: max(0, self.lists[v.name] - 1) for v in VIEWS}

    def report(self) -> str:
        events = sum(len(h.log) for w in self.watched for h in w.handlers)
        tombstones = sum(h.tombstones for w in self.watched for h in w.handlers)
        raised = sum(h.raised for w in self.watched for h in w.handlers)
        errors = collections.Counter[str]()
        for w in self.watched:
            errors.update(w.errors)
        lines = [
            f"chaos seed={self.seed}",
            f"  operations: {dict(sorted(self.operations.items()))}",
            f"  faults: {dict(sorted(self.faults.items()))}",
            f"  relists: {self.relists()}",
            f"  list/watch errors seen by informers: {dict(sorted(errors.items()))}",
            f"  handler notifications: {events} (tombstones {tombstones}, raised {raised})",
            f"  objects seen by each view: { {v.name: len(self.server_state(v)) for v in VIEWS} }",
            f"  final mismatches: {len(self.all_mismatches())}",
        ]
        return "\n".join(lines)

    # -- threads ------------------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name)
        thread.start()
        self._threads.append(thread)

    def _count(self, counter: collections.Counter[str], what: str) -> None:
        with self._stats_lock:
            counter[what] += 1

    def _writer(self, objects: Objects, seed: int) -> None:
        rng = random.Random(seed)
        kind = objects.kind
        known: set[tuple[str, str]] = set()
        value = 0
        while not self._stop_writers.wait(WRITE_INTERVAL):
            namespace = rng.choice(kind.namespaces)
            name = f"{kind.name[:-1]}-{rng.randrange(NAMES_PER_NAMESPACE)}"
            value += 1
            color = rng.choice(COLORS)
            exists = (namespace, name) in known
            op = rng.choice(("update", "update", "delete")) if exists else "create"
            try:
                if op == "create":
                    objects.create(namespace, objects.body(namespace, name, color, value))
                    known.add((namespace, name))
                elif op == "update":
                    objects.replace(namespace, name, objects.body(namespace, name, color, value))
                else:
                    objects.delete(namespace, name)
                    known.discard((namespace, name))
                self._count(self.operations, f"{kind.name}-{op}")
            except k8s.ApiException as exc:
                self._count(self.operations, f"rejected-{exc.status}")
                if exc.status == 409:
                    known.add((namespace, name))
                elif exc.status == 404:
                    known.discard((namespace, name))
            except (urllib3.exceptions.HTTPError, OSError):
                self._count(self.operations, "refused")

    def _fault_driver(self, seed: int) -> None:
        rng = random.Random(seed)
        server = self.server
        while not self._stop_faults.wait(FAULT_INTERVAL * (0.5 + rng.random())):
            fault = rng.choice(FAULTS)
            resource = rng.choice(KINDS).gvr.resource
            self._count(self.faults, fault)
            if fault == "drop-watches":
                server.drop_watches()
            elif fault == "compact":
                server.compact()
                server.end_watches()  # the clean close makes each reflector resume: 410 if behind
            elif fault in ("list-500", "list-429", "watch-500", "watch-429"):
                verb, code = fault.split("-")
                server.fail_next(rng.randint(1, 3), int(code), verb=verb, resource=resource)
                if verb == "watch":
                    server.drop_watches()  # so a watch request comes soon to meet the failure
            elif fault == "delay":
                verb = rng.choice(("list", "watch"))
                server.set_delay(rng.uniform(0.05, 0.3), verb)
                self._stop_faults.wait(FAULT_INTERVAL)
                server.set_delay(0, verb)
            elif fault == "restart":
                server.stop()
                self._stop_faults.wait(rng.uniform(0, FAULT_INTERVAL))
                server.start()
            elif fault == "crd-recreate":
                server.delete(CRDS, None, CRD_NAME)
                self._stop_faults.wait(rng.uniform(0, FAULT_INTERVAL))
                server.create(CRDS, crd(WIDGETS.gvr))
            elif fault == "watch-garbage":
                server.inject_watch_garbage(rng.choice(
                    (b"not json", b'{"type":"ADDED","object":{}}', b'{"type":"EXPLODED"}')))
            elif fault == "watch-cut":
                server.cut_watches_midline()

    def _ensure_crd(self) -> None:
        try:
            self.server.get(CRDS, None, CRD_NAME)
        except Exception:
            self.server.create(CRDS, crd(WIDGETS.gvr))


def _diff(what: str, have: dict[str, str], want: dict[str, str]) -> list[str]:
    out = [f"{what}: extra {k}@{v}" for k, v in have.items() if k not in want]
    out += [f"{what}: missing {k}@{v}" for k, v in want.items() if k not in have]
    out += [f"{what}: {k} at rv {v}, server at {want[k]}"
            for k, v in have.items() if k in want and want[k] != v]
    return out


def index_mismatches(label: str, indexer: Any) -> list[str]:
    """Differences between each index of ``indexer`` and one recomputed from its objects."""
    objects = {key_of(o): o for o in indexer.list()}
    found = []
    for name, fn in indexer.get_indexers().items():
        expected: dict[str, set[str]] = collections.defaultdict(set)
        for key, obj in objects.items():
            for value in fn(obj):
                expected[value].add(key)
        actual = {v: set(indexer.index_keys(name, v)) for v in indexer.list_index_func_values(name)}
        actual = {v: keys for v, keys in actual.items() if keys}
        if actual != dict(expected):
            found.append(f"{label} index {name}: {actual} != recomputed {dict(expected)}")
    return found
