"""Sharding across replicas: bytes received and CPU seconds per replica, three ways.

A FakeAPIServer in its own process holds N_OBJECTS ConfigMaps. Each replica is a process of
its own running one informer: one unsharded informer; REPLICAS informers on equal shards of a
server that shards (``ShardedListAndWatch`` on: the server filters); and REPLICAS informers on
the same shards of a server that does not (the gate off: every replica receives everything and
filters on the client with the same hash). For the initial sync and for a stream of N_UPDATES
updates, each replica reports the CPU seconds it used (``getrusage``), and a counting TCP proxy
in the parent process, between the server and that replica, the bytes the replica received.
Server-side sharding should cut each replica's bytes and CPU to about 1/REPLICAS of the
unsharded informer's; client-side filtering saves only memory.

Run ``python benchmarks/bench_sharding.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import platform
import resource
import socket
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from _common import parse_args
from _server_process import ServerProcess

N_OBJECTS = 100_000
N_UPDATES = 20_000
REPLICAS = 4
NAMESPACE = "bench"
TIMEOUT = 600.0


class CountingProxy:
    """A TCP forwarder on loopback that counts the bytes going from the server to the client."""

    def __init__(self, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._received = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        accept = threading.Thread(target=self._accept, name="bench-proxy-accept", daemon=True)
        accept.start()

    def received(self) -> int:
        with self._lock:
            return self._received

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for source, sink, counted in ((client, upstream, False), (upstream, client, True)):
                pump = threading.Thread(target=self._pump, args=(source, sink, counted),
                                        name="bench-proxy-pump", daemon=True)
                pump.start()
                self._threads.append(pump)

    def _pump(self, source: socket.socket, sink: socket.socket, counted: bool) -> None:
        try:
            while data := source.recv(1 << 18):
                sink.sendall(data)
                if counted:
                    with self._lock:
                        self._received += len(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()


def _cpu() -> float:
    """CPU seconds this process used so far."""
    rusage = resource.getrusage(resource.RUSAGE_SELF)
    return rusage.ru_utime + rusage.ru_stime


def _replica(conn: Connection, url: str, shard: tuple[int, int] | None) -> None:
    """Child process: one informer on ``shard`` (index, count), or on everything."""
    from kubernetes import client

    from kinformer import GroupVersionResource, ListWatch, ShardSelector, SharedIndexInformer

    configuration = client.Configuration()
    configuration.host = url
    api = client.ApiClient(configuration)
    selector = None if shard is None else ShardSelector.for_shard(*shard)
    informer = SharedIndexInformer(
        ListWatch.for_resource(api, GroupVersionResource("", "v1", "configmaps"), NAMESPACE,
                               shard_selector=selector), name="replica")
    updates = 0
    enough = threading.Event()
    expected = [0]
    lock = threading.Lock()

    class Counter:
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            pass

        def on_update(self, old: Any, new: Any) -> None:
            nonlocal updates
            with lock:
                updates += 1
                if expected[0] and updates >= expected[0]:
                    enough.set()

        def on_delete(self, obj: Any) -> None:
            pass

    informer.add_event_handler(Counter())
    stop = threading.Event()
    cpu0 = _cpu()
    runner = threading.Thread(target=informer.run, args=(stop,), name="bench-replica-run")
    runner.start()
    informer.wait_for_sync(timeout=TIMEOUT)
    cpu1 = _cpu()
    conn.send({"sync_cpu": cpu1 - cpu0, "objects": len(informer.get_indexer()),
               "server_side": informer.server_side_sharding()})
    expected[0] = conn.recv()  # updates this replica must see; the parent writes them next
    with lock:
        if updates >= expected[0]:
            enough.set()
    enough.wait(TIMEOUT)
    conn.send({"update_cpu": _cpu() - cpu1, "updates": updates})
    stop.set()
    runner.join(60)
    api.close()


def run_mode(mode: str, n: int, n_updates: int) -> list[dict[str, Any]]:
    """Start the server and the replicas of ``mode``; their measured figures."""
    gates = {"ShardedListAndWatch": mode == "server-side"}
    context = multiprocessing.get_context("spawn")
    with ServerProcess(history_size=n_updates + 1000, feature_gates=gates) as server:
        server.load("configmaps", NAMESPACE, n)
        shards: list[tuple[int, int] | None] = (
            [None] if mode == "unsharded" else [(i, REPLICAS) for i in range(REPLICAS)])
        _, updated = server.shard_counts("configmaps", NAMESPACE, len(shards), n_updates)
        if mode == "unsharded":
            updated = [n_updates]
        port = int(server.url.rsplit(":", 1)[1])
        replicas = []
        for shard in shards:
            parent, child = context.Pipe()
            proxy = CountingProxy(port)
            process = context.Process(
                target=_replica, args=(child, f"http://127.0.0.1:{proxy.port}", shard), daemon=True)
            process.start()
            replicas.append((process, parent, proxy))
        figures = [parent.recv() for _, parent, _ in replicas]  # every replica synced
        for figure, (_, parent, proxy), count in zip(figures, replicas, updated, strict=True):
            figure["sync_bytes"] = proxy.received()
            parent.send(count)
        server.update("configmaps", NAMESPACE, n_updates)
        for figure, (process, parent, proxy) in zip(figures, replicas, strict=True):
            figure.update(parent.recv())
            figure["update_bytes"] = proxy.received() - figure["sync_bytes"]
            process.join(60)
            proxy.close()
    return figures


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_OBJECTS)
    n = args.n
    n_updates = max(1, n * N_UPDATES // N_OBJECTS)
    modes = {mode: run_mode(mode, n, n_updates) for mode in ("unsharded", "server-side", "client-side")}
    base = modes["unsharded"][0]
    rows = []
    for mode, figures in modes.items():
        count = len(figures)
        mean = {key: sum(f[key] for f in figures) / count
                for key in ("sync_bytes", "sync_cpu", "update_bytes", "update_cpu", "objects")}
        rows.append({
            "mode": mode,
            "replicas": count,
            "per_replica": mean,
            "vs_unsharded": {key: mean[key] / base[key] if base[key] else None
                             for key in ("sync_bytes", "sync_cpu", "update_bytes", "update_cpu")},
            "server_side": [f["server_side"] for f in figures],
        })
    report = {"benchmark": "bench_sharding", "n": n, "updates": n_updates, "replicas": REPLICAS,
              "python": platform.python_version(), "results": rows}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(f"bench_sharding: {n} ConfigMaps, {n_updates} updates, {REPLICAS} replicas, "
          f"Python {report['python']}; figures per replica (mean), ratio to one unsharded informer")
    header = (f"{'mode':<12} {'objects':>8} {'sync MB':>13} {'sync CPU s':>13} "
              f"{'update MB':>13} {'update CPU s':>13}")
    print(header)
    print("-" * len(header))
    for row in rows:
        m, r = row["per_replica"], row["vs_unsharded"]
        print(f"{row['mode']:<12} {m['objects']:>8.0f} "
              f"{m['sync_bytes'] / 1e6:>6.1f} ({r['sync_bytes']:.2f}) "
              f"{m['sync_cpu']:>6.2f} ({r['sync_cpu']:.2f}) "
              f"{m['update_bytes'] / 1e6:>6.1f} ({r['update_bytes']:.2f}) "
              f"{m['update_cpu']:>6.2f} ({r['update_cpu']:.2f})")


if __name__ == "__main__":
    main()
