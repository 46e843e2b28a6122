"""A fleet of member clusters in one process: initial sync and memory, and engaging one more.

The member clusters are served by one ``FakeAPIServer(logical_clusters=True)`` in a child process
of its own: each member is the logical cluster ``/clusters/member-N``, reached through an
``ApiClient`` of its own, so to the client they are separate servers (separate URLs, clients,
connection pools, lists and watches) while the machine (2 cores) runs one server process
instead of twenty. Each member holds ``--objects`` ConfigMaps of about 1 KB
(:func:`_server_process.configmap`) in ``default``.

**Initial sync** (``sync``): ``--clusters`` members (default 20 of 2,000 ConfigMaps). Each
contender runs in a fresh child process of its own, one after another, so each resident set
(RSS) is its own:

- ``hand-made``: one ``SharedIndexInformer`` per member started by hand on a thread of its own
  (``ListWatch.for_resource`` over that member's client, the namespace index, the modern
  profile, one no-op handler), as a program without multi-cluster support would do it;
- ``MultiClusterInformerFactory``: a factory over a ``StaticClusterProvider`` of the same
  clients, ``for_resource(configmaps)`` and one no-op ``ClusterEventHandler``.

Both count from start until every member's informer synced and the handler got every initial
add. Reported: seconds and CPU seconds, peak RSS, settled RSS (after ``gc.collect()``, handlers
idle), RSS growth above the child's RSS just before start, and the threads the contender added
(per member and resource, and in all). Each runs ``--repeat`` times (default 3), alternating;
each one's best time and lowest settled RSS count, every run is in the JSON.

**Engaging one more** (``engage``): the factory runs over the same members, engaged through a
provider the benchmark drives, with one ``ClusterEventHandler``; the server updates ConfigMaps
in every member at ``--rate`` a second in all (default 400), each stamped with its send time.
The handler records each update's latency, from the server's send to the handler's call. After
``--before`` seconds of that, a 21st member of as many ConfigMaps is engaged, and the time until
its informer synced and the handler got its initial adds is the engage; it is disengaged a
second later and engaged again, ``--rounds`` times (default 5). Reported: the running members'
handler latency p50/p99/max before any engage and during the engages (from each engage until
its initial adds were handled), and the engage times.

**Logical clusters through one informer** (``logical``): a server process of its own holds
``--tenants`` logical clusters (default 100) of ``--tenant-objects`` ConfigMaps each (default
100) in ``default``, and one more logical cluster, ``flat``, holding as many ConfigMaps in all
(default 10,000) in its namespace ``flat``. Each contender runs in a fresh child process, as for
the initial sync, over one ``ApiClient`` of the server's root URL:

- ``plain``: one ``SharedIndexInformer`` over ``ListWatch.for_resource(namespace="flat",
  cluster="flat")``, keyed ``namespace/name``, one no-op handler;
- ``plain + cluster indexes``: the same, with the two cluster indexes added, to tell what
  they cost from what the cluster-aware keys and handler cost;
- ``cluster="*"``: one cluster-aware informer over ``ListWatch.for_resource(namespace="default",
  cluster="*")`` (``/clusters/*/api/v1/namespaces/default/configmaps``), keyed
  ``<cluster>|<namespace>/<name>`` with both cluster indexes, one no-op ``ClusterEventHandler``.

Both list the same number of objects of the same size through a namespaced list of the same
server, so what differs is the cluster-aware informer: its keys, its two indexes and the
handler told each object's cluster. Reported as for the initial sync, with the ratios.

**One member that never answers** (``hung``): the factory over the same ``--clusters`` members,
with and without one more member, ``member-hung``, whose address accepts connections and never
answers (a listener in the contender's process that takes each connection and holds it). Each
run is a fresh child process, the two alternating, ``--repeat`` times. Counted: the time until
every healthy member's informer synced and the handler got all of its initial adds, then the
handler latency p50/p99 of the healthy members' updates while the server streams ``--rate`` a
second for ``--before`` seconds. The run with the hung member must match the run without it
(the ratios; the issue's bar is 1.1x): its requests time out on their own and retry with
backoff while the others go on.

Run ``python benchmarks/bench_fleet.py [--json] [--quick] [--clusters N] [--objects N]
[--repeat R] [--tenants N] [--tenant-objects N] [--only sync,engage,logical,hung]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import multiprocessing
import platform
import queue
import random
import statistics
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import _server_process
from _server_process import CONFIGMAPS, SENT_ANNOTATION, configmap, rss_mb

CLUSTERS = 20
OBJECTS = 2_000
NAMESPACE = "default"  # every logical cluster has it from the start
REPEAT = 3
RATE = 400.0  # updates a second over the running members, in all
BEFORE = 5.0  # seconds of updates measured before the first engage
ROUNDS = 8
ENGAGE_OBJECTS = 10_000  # the member that joins: larger than the others, so each engage lasts long
                         # enough (a few hundred ms) for its window to hold enough latency samples
GAP = 1.0  # seconds between an engage's end and the disengage, and between rounds
SYNC_TIMEOUT = 600.0
POLL = 0.005
CONTENDERS = ("hand-made", "MultiClusterInformerFactory")
TENANTS = 100  # logical clusters seen through one cluster="*" informer
TENANT_OBJECTS = 100
FLAT = "flat"  # the logical cluster (and its namespace) the plain informer lists
LOGICAL_CONTENDERS = ("plain", "plain + cluster indexes", 'cluster="*"')
EXTRA = "member-extra"  # the member engaged while the others run
HUNG = "member-hung"  # the member whose address accepts connections and never answers
HUNG_CONTENDERS = ("without", "with a hung member")


def member_names(count: int) -> list[str]:
    return [f"member-{i:02d}" for i in range(1, count + 1)]


# -- the server's child process ------------------------------------------------------------------


def _serve(conn: Connection) -> None:
    """Child process: a logical-clusters FakeAPIServer obeying commands from the pipe."""
    from kinformer.gvr import GroupVersionResource
    from kinformer.testing import FakeAPIServer

    gvr = GroupVersionResource(*CONFIGMAPS)
    server = FakeAPIServer(logical_clusters=True, history_size=200_000, max_backlog=10_000_000)
    server.start()
    conn.send(server.url)
    streaming: dict[str, Any] = {}
    while True:
        command, args = conn.recv()
        if command == "load":
            clusters, n = args
            began = time.perf_counter()
            gc.disable()
            for cluster in clusters:
                server.preload(gvr, (configmap(i, NAMESPACE) for i in range(n)), cluster=cluster)
            gc.freeze()
            gc.enable()
            conn.send(time.perf_counter() - began)
        elif command == "load_namespace":  # n ConfigMaps in a namespace created for them
            cluster, namespace, n = args
            began = time.perf_counter()
            server.create(GroupVersionResource("", "v1", "namespaces"), {"metadata": {"name": namespace}},
                          cluster=cluster)
            gc.disable()
            server.preload(gvr, (configmap(i, namespace) for i in range(n)), cluster=cluster)
            gc.freeze()
            gc.enable()
            conn.send(time.perf_counter() - began)
        elif command == "stream":
            clusters, n, rate = args
            stop = threading.Event()
            counter = [0]
            thread = threading.Thread(target=_stream, args=(server, gvr, clusters, n, rate, stop, counter),
                                      name="bench-stream")
            thread.start()
            streaming.update(stop=stop, thread=thread, counter=counter)
            conn.send(None)
        elif command == "stop_stream":
            streaming["stop"].set()
            streaming["thread"].join()
            conn.send(streaming["counter"][0])
        elif command == "rss":
            conn.send(rss_mb())
        else:
            break
    server.stop()
    conn.send("stopped")


def _stream(server: Any, gvr: Any, clusters: list[str], n: int, rate: float, stop: threading.Event,
            counter: list[int]) -> None:
    """Update random ConfigMaps of ``clusters`` at ``rate`` a second, each stamped with its send time."""
    rng = random.Random(1)
    began = time.perf_counter()
    while not stop.is_set():
        due = began + counter[0] / rate
        ahead = due - time.perf_counter()
        if ahead > 0 and stop.wait(ahead):
            return
        cluster = clusters[counter[0] % len(clusters)]
        obj = configmap(rng.randrange(n), NAMESPACE)
        obj["data"]["UPDATED"] = str(counter[0])
        obj["metadata"]["annotations"][SENT_ANNOTATION] = repr(time.time())
        server.update(gvr, obj, cluster=cluster)
        counter[0] += 1


class FleetServer(_server_process.ChildProcessServer):
    """The logical-clusters server in a spawned child process; a context manager."""

    def __init__(self) -> None:
        super().__init__(_serve)


# -- the contenders' child processes -------------------------------------------------------------


def _api_client(url: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = url
    return client.ApiClient(configuration)


def _wait(done: Any, what: str) -> None:
    pause = threading.Event()
    deadline = time.perf_counter() + SYNC_TIMEOUT
    while not done():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{what} not done after {SYNC_TIMEOUT:.0f}s")
        pause.wait(POLL)


def _sync_child(conn: Connection, contender: str, url: str, members: list[str]) -> None:
    """Child process: one contender's initial sync of every member; sends its figures."""
    logging.basicConfig(level=logging.WARNING)
    from kinformer import (
        NAMESPACE_INDEX,
        ClusterEventHandlerFuncs,
        Context,
        GroupVersionResource,
        ListWatch,
        MultiClusterInformerFactory,
        ResourceEventHandlerFuncs,
        SharedIndexInformer,
        StaticClusterProvider,
        meta_namespace_index_func,
    )

    gvr = GroupVersionResource(*CONFIGMAPS)
    clients = {name: _api_client(f"{url}/clusters/{name}") for name in members}
    gc.collect()
    before = rss_mb()["rss"]
    threads_before = threading.active_count()
    stop = Context("bench")
    began, cpu = time.perf_counter(), time.process_time()
    if contender == "hand-made":
        informers, registrations, threads = [], [], []
        for name, api_client in clients.items():
            informer = SharedIndexInformer(ListWatch.for_resource(api_client, gvr),
                                           indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                                           name=f"configmaps-{name}")
            registrations.append(informer.add_event_handler(
                ResourceEventHandlerFuncs(add_func=lambda obj: None)))
            thread = threading.Thread(target=informer.run, args=(stop,), name=f"bench-{name}")
            thread.start()
            informers.append(informer)
            threads.append(thread)
        _wait(lambda: all(i.has_synced() for i in informers) and all(r.has_synced() for r in registrations),
              "sync")
        objects = sum(len(i.get_indexer()) for i in informers)
    else:
        factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
        configmaps = factory.for_resource(gvr)
        registration = configmaps.add_event_handler(
            ClusterEventHandlerFuncs(add_func=lambda cluster, obj: None))
        factory.start(stop)
        _wait(lambda: factory.has_synced() and registration.has_synced(), "sync")
        objects = sum(s.objects for s in configmaps.cluster_status().values())
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    added_threads = threading.active_count() - threads_before
    gc.collect()
    threading.Event().wait(0.5)  # let the handler threads go idle
    gc.collect()
    memory = rss_mb()
    conn.send({"seconds": seconds, "cpu_seconds": cpu, "objects": objects,
               "rss_before_mib": before, "settled_rss_mib": memory["rss"], "peak_rss_mib": memory["peak"],
               "growth_mib": memory["rss"] - before, "threads": added_threads,
               "threads_per_member": added_threads / len(members)})
    stop.cancel()
    if contender == "hand-made":
        for thread in threads:
            thread.join(30)
    else:
        factory.shutdown()
    for api_client in clients.values():
        api_client.close()


def _logical_child(conn: Connection, contender: str, url: str) -> None:
    """Child process: one informer's initial sync, plain over the ``flat`` cluster or
    cluster-aware over ``/clusters/*``; sends its figures."""
    logging.basicConfig(level=logging.WARNING)
    from kinformer import (
        CLUSTER_AND_NAMESPACE_INDEX,
        CLUSTER_INDEX,
        NAMESPACE_INDEX,
        ClusterEventHandlerFuncs,
        Context,
        GroupVersionResource,
        ListWatch,
        ResourceEventHandlerFuncs,
        SharedIndexInformer,
        cluster_and_namespace_index_func,
        cluster_index_func,
        meta_namespace_index_func,
    )

    gvr = GroupVersionResource(*CONFIGMAPS)
    api_client = _api_client(url)
    gc.collect()
    before = rss_mb()["rss"]
    stop = Context("bench")
    began, cpu = time.perf_counter(), time.process_time()
    handler: Any
    indexers: dict[str, Any] = {NAMESPACE_INDEX: meta_namespace_index_func}
    if contender == 'cluster="*"':
        lw = ListWatch.for_resource(api_client, gvr, namespace=NAMESPACE, cluster="*")
        handler = ClusterEventHandlerFuncs(add_func=lambda cluster, obj: None)
    else:
        lw = ListWatch.for_resource(api_client, gvr, namespace=FLAT, cluster=FLAT)
        handler = ResourceEventHandlerFuncs(add_func=lambda obj: None)
        if contender != "plain":
            indexers.update({CLUSTER_INDEX: cluster_index_func,
                             CLUSTER_AND_NAMESPACE_INDEX: cluster_and_namespace_index_func})
    informer = SharedIndexInformer(lw, indexers=indexers)
    registration = informer.add_event_handler(handler)
    thread = threading.Thread(target=informer.run, args=(stop,), name="bench-informer")
    thread.start()
    _wait(lambda: informer.has_synced() and registration.has_synced(), "sync")
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    objects = len(informer.get_indexer())
    clusters = len(informer.get_indexer().list_index_func_values("cluster")) if informer.cluster_aware else 1
    gc.collect()
    threading.Event().wait(0.5)  # let the handler thread go idle
    gc.collect()
    memory = rss_mb()
    conn.send({"seconds": seconds, "cpu_seconds": cpu, "objects": objects, "clusters": clusters,
               "rss_before_mib": before, "settled_rss_mib": memory["rss"], "peak_rss_mib": memory["peak"],
               "growth_mib": memory["rss"] - before})
    stop.cancel()
    thread.join(30)
    api_client.close()


def _engage_child(conn: Connection, contender: str, url: str, members: list[str], before: float,
                  rounds: int) -> None:
    """Child process: ``members`` cached by ``contender``; :data:`EXTRA` engaged (for
    ``hand-made``: a 21st informer started by hand) ``rounds`` times while the server streams
    updates; sends the handler latencies of the running members."""
    logging.basicConfig(level=logging.WARNING)
    from kinformer import (
        NAMESPACE_INDEX,
        ClusterEventHandler,
        Context,
        GroupVersionResource,
        ListWatch,
        MultiClusterInformerFactory,
        SharedIndexInformer,
        meta_namespace_index_func,
    )

    gvr = GroupVersionResource(*CONFIGMAPS)
    samples: list[tuple[float, float]] = []  # (monotonic time handled, latency seconds)
    lock = threading.Lock()

    class Latency(ClusterEventHandler):
        def on_update(self, cluster: str, old: Any, new: Any) -> None:
            sent = (new["metadata"].get("annotations") or {}).get(SENT_ANNOTATION)
            if sent is not None and cluster != EXTRA:
                now = time.time()
                with lock:
                    samples.append((time.monotonic(), now - float(sent)))

    class PlainLatency:
        """The same for one hand-made informer, which knows its cluster."""

        def __init__(self, cluster: str) -> None:
            self._cluster = cluster

        def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
            pass

        def on_update(self, old: Any, new: Any) -> None:
            handler.on_update(self._cluster, old, new)

        def on_delete(self, obj: Any) -> None:
            pass

    handler = Latency()
    stop = Context("bench")
    clients = {name: _api_client(f"{url}/clusters/{name}") for name in members}
    extra_threads: list[threading.Thread] = []
    if contender == "hand-made":
        def start(name: str, api_client: Any, ctx: Context) -> Any:
            informer = SharedIndexInformer(ListWatch.for_resource(api_client, gvr),
                                           indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                                           name=f"configmaps-{name}")
            registration = informer.add_event_handler(PlainLatency(name))
            thread = threading.Thread(target=informer.run, args=(ctx,), name=f"bench-{name}")
            thread.start()
            extra_threads.append(thread)
            return informer, registration

        running = [start(name, api_client, stop) for name, api_client in clients.items()]
        _wait(lambda: all(i.has_synced() and r.has_synced() for i, r in running), "sync")

        def engage(api_client: Any) -> Any:
            ctx = stop.child()
            informer, registration = start(EXTRA, api_client, ctx)
            _wait(lambda: informer.has_synced() and registration.has_synced(), "engage")
            return ctx

        def disengage(ctx: Any) -> None:
            ctx.cancel()
            extra_threads.pop().join(30)
    else:
        calls: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        done: queue.Queue[None] = queue.Queue()

        class Driven:
            def run(self, stop: Any, engage: Any, disengage: Any) -> None:
                stop.on_cancel(lambda: calls.put(None))
                while (call := calls.get()) is not None:
                    if call[1] is None:
                        disengage(call[0])
                    else:
                        engage(*call)
                    done.put(None)

        def drive(name: str, api_client: Any) -> None:
            calls.put((name, api_client))
            done.get(timeout=SYNC_TIMEOUT)

        factory = MultiClusterInformerFactory(Driven())
        configmaps = factory.for_resource(gvr)
        registration = configmaps.add_event_handler(handler)
        factory.start(stop)
        for name, api_client in clients.items():
            drive(name, api_client)
        _wait(lambda: factory.has_synced() and registration.has_synced(), "sync")

        def engage(api_client: Any) -> Any:
            drive(EXTRA, api_client)
            _wait(lambda: (i := configmaps.informer_for(EXTRA)) is not None and i.has_synced()
                  and registration.has_synced(), "engage")
            return None

        def disengage(ctx: Any) -> None:
            drive(EXTRA, None)

    conn.send("synced")
    conn.recv()  # the server streams from here
    pause = threading.Event()
    measured_from = time.monotonic()
    pause.wait(before)
    windows: list[tuple[float, float]] = []
    for _ in range(rounds):
        extra = _api_client(f"{url}/clusters/{EXTRA}")
        began = time.monotonic()
        engaged = engage(extra)
        windows.append((began, time.monotonic()))
        pause.wait(GAP)
        disengage(engaged)
        extra.close()
        pause.wait(GAP)
    with lock:
        taken = list(samples)
    before_samples = [lat for t, lat in taken if measured_from <= t < measured_from + before]
    during = [lat for t, lat in taken if any(a <= t <= b for a, b in windows)]
    conn.send({"before": _percentiles(before_samples), "during": _percentiles(during),
               "engage_seconds": [b - a for a, b in windows]})
    stop.cancel()
    if contender == "hand-made":
        for thread in extra_threads:
            thread.join(30)
    else:
        factory.shutdown()
    for api_client in clients.values():
        api_client.close()


class _BlackHole:
    """A loopback listener that accepts every connection and never answers; ``close`` ends it."""

    def __init__(self) -> None:
        import socket

        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._held: list[Any] = []
        self._thread = threading.Thread(target=self._accept, name="bench-black-hole", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(connection)

    def close(self) -> None:
        self._listener.close()
        for connection in self._held:
            connection.close()
        self._thread.join(5)


def _hung_child(conn: Connection, contender: str, url: str, members: list[str], objects: int) -> None:
    """Child process: the factory over ``members`` (and, for the second contender, a member that
    never answers); sends the healthy members' sync time, then their update latencies."""
    logging.basicConfig(level=logging.ERROR)
    from kinformer import (
        ClusterEventHandler,
        Context,
        GroupVersionResource,
        MultiClusterInformerFactory,
        StaticClusterProvider,
    )

    gvr = GroupVersionResource(*CONFIGMAPS)
    clients = {name: _api_client(f"{url}/clusters/{name}") for name in members}
    hole = None
    if contender != HUNG_CONTENDERS[0]:
        hole = _BlackHole()
        clients[HUNG] = _api_client(hole.url)
    samples: list[float] = []
    added: dict[str, int] = {name: 0 for name in members}
    lock = threading.Lock()
    measuring = threading.Event()

    class Handler(ClusterEventHandler):
        def on_add(self, cluster: str, obj: Any, is_in_initial_list: bool = False) -> None:
            with lock:
                added[cluster] = added.get(cluster, 0) + 1

        def on_update(self, cluster: str, old: Any, new: Any) -> None:
            sent = (new["metadata"].get("annotations") or {}).get(SENT_ANNOTATION)
            if sent is not None and measuring.is_set():
                latency = time.time() - float(sent)
                with lock:
                    samples.append(latency)

    factory = MultiClusterInformerFactory(StaticClusterProvider(clients))
    configmaps = factory.for_resource(gvr)
    configmaps.add_event_handler(Handler())
    stop = Context("bench")
    began = time.perf_counter()
    factory.start(stop)

    def healthy_synced() -> bool:
        for name in members:
            informer = configmaps.informer_for(name)
            if informer is None or not informer.has_synced():
                return False
        with lock:
            return all(added[name] >= objects for name in members)

    _wait(healthy_synced, "healthy members' sync")
    seconds = time.perf_counter() - began
    status = configmaps.cluster_status().get(HUNG)
    conn.send({"sync_seconds": seconds,
               "hung_status": None if status is None else {"synced": status.synced,
                                                            "error": repr(status.last_error)}})
    conn.recv()  # the server streams from here
    measuring.set()
    conn.recv()  # the server stopped streaming
    measuring.clear()
    with lock:
        taken = list(samples)
    conn.send(_percentiles(taken))
    stop.cancel()
    factory.shutdown()
    for api_client in clients.values():
        api_client.close()
    if hole is not None:
        hole.close()


def _percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"count": 0}
    ordered = sorted(latencies)
    return {"count": len(ordered), "p50_ms": 1000 * ordered[len(ordered) // 2],
            "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "max_ms": 1000 * ordered[-1]}


def _in_child(target: Any, *args: Any) -> Any:
    """Run ``target(conn, *args)`` in a fresh spawned process; its one message."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=target, args=(child, *args), daemon=True)
    process.start()
    try:
        return parent.recv()
    finally:
        process.join(60)
        if process.is_alive():
            process.terminate()


# -- the measures ----------------------------------------------------------------------------------


def measure_sync(server: FleetServer, members: list[str], repeat: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONTENDERS}
    for _ in range(repeat):
        for contender in CONTENDERS:
            runs[contender].append(_in_child(_sync_child, contender, server.url, members))
    best = {name: min(r["seconds"] for r in results) for name, results in runs.items()}
    cpu = {name: min(r["cpu_seconds"] for r in results) for name, results in runs.items()}
    settled = {name: min(r["settled_rss_mib"] for r in results) for name, results in runs.items()}
    growth = {name: min(r["growth_mib"] for r in results) for name, results in runs.items()}
    peak = {name: min(r["peak_rss_mib"] for r in results) for name, results in runs.items()}
    hand, multi = CONTENDERS
    return {
        "name": "sync", "clusters": len(members),
        "objects_per_cluster": runs[hand][0]["objects"] // len(members),
        "seconds": best, "cpu_seconds": cpu, "settled_rss_mib": settled, "growth_mib": growth,
        "peak_rss_mib": peak, "threads": {n: runs[n][0]["threads"] for n in CONTENDERS},
        "ratio": {"seconds": best[multi] / best[hand], "cpu_seconds": cpu[multi] / cpu[hand],
                  "settled_rss": settled[multi] / settled[hand], "growth": growth[multi] / growth[hand]},
        "runs": runs,
    }


def measure_logical(server: FleetServer, repeat: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in LOGICAL_CONTENDERS}
    for _ in range(repeat):
        for contender in LOGICAL_CONTENDERS:
            runs[contender].append(_in_child(_logical_child, contender, server.url))
    best = {name: min(r["seconds"] for r in results) for name, results in runs.items()}
    cpu = {name: min(r["cpu_seconds"] for r in results) for name, results in runs.items()}
    settled = {name: min(r["settled_rss_mib"] for r in results) for name, results in runs.items()}
    growth = {name: min(r["growth_mib"] for r in results) for name, results in runs.items()}
    peak = {name: min(r["peak_rss_mib"] for r in results) for name, results in runs.items()}
    plain, indexed, aware = LOGICAL_CONTENDERS
    return {
        "name": "logical", "objects": {n: runs[n][0]["objects"] for n in LOGICAL_CONTENDERS},
        "clusters": {n: runs[n][0]["clusters"] for n in LOGICAL_CONTENDERS},
        "seconds": best, "cpu_seconds": cpu, "settled_rss_mib": settled, "growth_mib": growth,
        "peak_rss_mib": peak,
        "ratio": {"seconds": best[aware] / best[plain], "cpu_seconds": cpu[aware] / cpu[plain],
                  "settled_rss": settled[aware] / settled[plain], "growth": growth[aware] / growth[plain]},
        "ratio_to_plain_with_cluster_indexes": {
            "seconds": best[aware] / best[indexed], "cpu_seconds": cpu[aware] / cpu[indexed],
            "settled_rss": settled[aware] / settled[indexed], "growth": growth[aware] / growth[indexed]},
        "runs": runs,
    }


def measure_engage(server: FleetServer, members: list[str], objects: int, engage_objects: int, rate: float,
                   before: float, rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = {"name": "engage", "clusters": len(members), "objects_per_cluster": objects,
                              "engage_objects": engage_objects, "rate": rate}
    for contender in CONTENDERS:
        parent, child = multiprocessing.Pipe()
        process = multiprocessing.get_context("spawn").Process(
            target=_engage_child, args=(child, contender, server.url, members, before, rounds), daemon=True)
        process.start()
        try:
            assert parent.recv() == "synced"
            server.call("stream", members, objects, rate)
            parent.send("go")
            found: dict[str, Any] = parent.recv()
            found["updates_sent"] = server.call("stop_stream")
        finally:
            process.join(60)
            if process.is_alive():
                process.terminate()
        before_p, during_p = found["before"], found["during"]
        if before_p.get("count") and during_p.get("count"):
            found["during_over_before"] = {"p50": during_p["p50_ms"] / before_p["p50_ms"],
                                           "p99": during_p["p99_ms"] / before_p["p99_ms"]}
        result[contender] = found
    hand, multi = (result[c] for c in CONTENDERS)
    if hand["during"].get("count") and multi["during"].get("count"):
        result["factory_over_hand_made_during"] = {
            "p50": multi["during"]["p50_ms"] / hand["during"]["p50_ms"],
            "p99": multi["during"]["p99_ms"] / hand["during"]["p99_ms"],
            "engage": statistics.median(multi["engage_seconds"]) / statistics.median(hand["engage_seconds"])}
    return result


def measure_hung(server: FleetServer, members: list[str], objects: int, rate: float, before: float,
                 repeat: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in HUNG_CONTENDERS}
    for _ in range(repeat):
        for contender in HUNG_CONTENDERS:
            parent, child = multiprocessing.Pipe()
            process = multiprocessing.get_context("spawn").Process(
                target=_hung_child, args=(child, contender, server.url, members, objects), daemon=True)
            process.start()
            try:
                found: dict[str, Any] = parent.recv()
                server.call("stream", members, objects, rate)
                parent.send("go")
                threading.Event().wait(before)
                server.call("stop_stream")
                parent.send("stop")
                found["latency"] = parent.recv()
            finally:
                process.join(60)
                if process.is_alive():
                    process.terminate()
            runs[contender].append(found)
    without, hung = HUNG_CONTENDERS

    def best(name: str, pick: Any) -> float:
        return float(min(pick(r) for r in runs[name]))

    sync = {n: best(n, lambda r: r["sync_seconds"]) for n in HUNG_CONTENDERS}
    p50 = {n: statistics.median(r["latency"]["p50_ms"] for r in runs[n]) for n in HUNG_CONTENDERS}
    p99 = {n: statistics.median(r["latency"]["p99_ms"] for r in runs[n]) for n in HUNG_CONTENDERS}
    return {"name": "hung", "clusters": len(members), "objects_per_cluster": objects, "rate": rate,
            "sync_seconds": sync, "p50_ms": p50, "p99_ms": p99,
            "ratio": {"sync": sync[hung] / sync[without], "p50": p50[hung] / p50[without],
                      "p99": p99[hung] / p99[without]},
            "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="200 ConfigMaps a member, one round")
    parser.add_argument("--clusters", type=int, default=CLUSTERS)
    parser.add_argument("--objects", type=int, default=None, help=f"ConfigMaps a member (default {OBJECTS})")
    parser.add_argument("--repeat", type=int, default=None, help=f"runs of each contender (default {REPEAT})")
    parser.add_argument("--rate", type=float, default=RATE)
    parser.add_argument("--rounds", type=int, default=None, help=f"engages (default {ROUNDS})")
    parser.add_argument("--engage-objects", type=int, default=None,
                        help=f"ConfigMaps of the member engaged (default {ENGAGE_OBJECTS})")
    parser.add_argument("--tenants", type=int, default=TENANTS,
                        help=f"logical clusters seen through one informer (default {TENANTS})")
    parser.add_argument("--tenant-objects", type=int, default=None,
                        help=f"ConfigMaps a logical cluster (default {TENANT_OBJECTS})")
    parser.add_argument("--only", default="sync,engage,logical,hung")
    args = parser.parse_args()
    objects = args.objects or (200 if args.quick else OBJECTS)
    repeat = args.repeat or (1 if args.quick else REPEAT)
    rounds = args.rounds or (2 if args.quick else ROUNDS)
    engage_objects = args.engage_objects or (1000 if args.quick else ENGAGE_OBJECTS)
    before = 2.0 if args.quick else BEFORE
    only = set(args.only.split(","))
    members = member_names(args.clusters)
    results = []
    with FleetServer() as server:
        load_seconds = server.call("load", members, objects)
        load_seconds += server.call("load", [EXTRA], engage_objects)
        if "sync" in only:
            results.append(measure_sync(server, members, repeat))
        if "engage" in only:
            results.append(measure_engage(server, members, objects, engage_objects, args.rate, before,
                                          rounds))
        if "hung" in only:
            results.append(measure_hung(server, members, objects, args.rate, before, repeat))
        server_rss = server.call("rss")
    if "logical" in only:
        tenant_objects = args.tenant_objects or (20 if args.quick else TENANT_OBJECTS)
        with FleetServer() as logical:  # a server of its own: cluster="*" lists everything in it
            tenants = [f"tenant-{i:03d}" for i in range(1, args.tenants + 1)]
            load_seconds += logical.call("load", tenants, tenant_objects)
            load_seconds += logical.call("load_namespace", FLAT, FLAT, args.tenants * tenant_objects)
            results.append(measure_logical(logical, repeat))
    report = {"benchmark": "fleet", "server": "one FakeAPIServer(logical_clusters=True) in a child "
              "process, one logical cluster per member, each reached through its own ApiClient",
              "load_seconds": load_seconds, "server_rss_mib": server_rss["rss"],
              "python": platform.python_version(), "results": results}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    for r in results:
        if r["name"] == "sync":
            print(f"initial sync of {r['clusters']} members x {r['objects_per_cluster']} ConfigMaps "
                  f"(best of {repeat}):")
            for name in CONTENDERS:
                print(f"  {name:<28} {r['seconds'][name]:6.2f} s  cpu {r['cpu_seconds'][name]:6.2f} s  "
                      f"settled {r['settled_rss_mib'][name]:7.1f} MiB (+{r['growth_mib'][name]:.1f})  "
                      f"peak {r['peak_rss_mib'][name]:7.1f} MiB  threads {r['threads'][name]}")
            ratio = r["ratio"]
            print(f"  factory / hand-made: time {ratio['seconds']:.2f}x, cpu {ratio['cpu_seconds']:.2f}x, "
                  f"settled RSS {ratio['settled_rss']:.3f}x, growth {ratio['growth']:.3f}x")
        elif r["name"] == "logical":
            plain, _, aware = LOGICAL_CONTENDERS
            print(f"initial sync of {r['objects'][aware]} ConfigMaps in {r['clusters'][aware]} logical "
                  f"clusters through one informer, against {r['objects'][plain]} in one (best of {repeat}):")
            for name in LOGICAL_CONTENDERS:
                print(f"  {name:<28} {r['seconds'][name]:6.2f} s  cpu {r['cpu_seconds'][name]:6.2f} s  "
                      f"settled {r['settled_rss_mib'][name]:7.1f} MiB (+{r['growth_mib'][name]:.1f})  "
                      f"peak {r['peak_rss_mib'][name]:7.1f} MiB")
            ratio = r["ratio"]
            print(f'  cluster="*" / plain: time {ratio["seconds"]:.2f}x, cpu {ratio["cpu_seconds"]:.2f}x, '
                  f'settled RSS {ratio["settled_rss"]:.3f}x, growth {ratio["growth"]:.3f}x')
            ratio = r["ratio_to_plain_with_cluster_indexes"]
            print(f'  cluster="*" / plain + cluster indexes: time {ratio["seconds"]:.2f}x, '
                  f'cpu {ratio["cpu_seconds"]:.2f}x, settled RSS {ratio["settled_rss"]:.3f}x, '
                  f'growth {ratio["growth"]:.3f}x')
        elif r["name"] == "hung":
            print(f"{r['clusters']} members x {r['objects_per_cluster']} ConfigMaps, with and without one "
                  f"member that never answers (sync: best of {repeat}; latency: median of runs):")
            for name in HUNG_CONTENDERS:
                print(f"  {name:<28} sync {r['sync_seconds'][name]:6.2f} s  p50 {r['p50_ms'][name]:7.2f} ms  "
                      f"p99 {r['p99_ms'][name]:7.2f} ms")
            ratio = r["ratio"]
            print(f"  hung / without: sync {ratio['sync']:.2f}x, p50 {ratio['p50']:.2f}x, "
                  f"p99 {ratio['p99']:.2f}x")
        else:
            print(f"engaging a member of {r['engage_objects']} ConfigMaps while {r['clusters']} stream "
                  f"{r['rate']:g} updates/s:")
            for name in CONTENDERS:
                found = r[name]
                print(f"  {name}: engages {', '.join(f'{s:.2f}' for s in found['engage_seconds'])} s")
                for window in ("before", "during"):
                    p = found[window]
                    if p.get("count"):
                        print(f"    {window:<7} n={p['count']:<6} p50 {p['p50_ms']:7.2f} ms  "
                              f"p99 {p['p99_ms']:7.2f} ms  max {p['max_ms']:7.2f} ms")
            if "factory_over_hand_made_during" in r:
                ratio = r["factory_over_hand_made_during"]
                print(f"  factory / hand-made during the engages: p50 {ratio['p50']:.2f}x, "
                      f"p99 {ratio['p99']:.2f}x, engage time {ratio['engage']:.2f}x")

if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
