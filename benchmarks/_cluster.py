"""Shared pieces of the end-to-end benchmarks: realistic objects and a FakeAPIServer in a child process.

:func:`configmap` builds a ConfigMap of about 1 KB and :func:`pod` a Pod of about 4 KB with
realistic ``managedFields``. :class:`ServerProcess` starts a FakeAPIServer in a child process
(spawned, so client and server do not share one interpreter lock) and drives it over a pipe:
load data sets, write watch events (in bulk or at a fixed rate, each stamped with its wall-clock
send time in the ``bench/sent`` annotation) and end open watches.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

CONFIGMAPS = ("", "v1", "configmaps")
PODS = ("", "v1", "pods")
SENT_ANNOTATION = "bench/sent"
WRITE_CHUNK = 500  # objects per storage lock hold when writing in bulk


def _managed_fields(manager: str, fields: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
    ]


def configmap(i: int, namespace: str) -> dict[str, Any]:
    """A ConfigMap of about 1 KB on the wire (once the server adds uid, version and timestamp)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:06d}",
            "namespace": namespace,
            "labels": {"app": f"app-{i % 50}", "tier": "backend", "release": f"r{i % 7}"},
            "annotations": {"owner": f"team-{i % 13}@example.com"},
        },
        "data": {
            "settings.yaml": (
                f"replicas: {i % 5}\nimage: registry.example.com/app-{i % 50}:1.{i % 9}.0\n"
                + "".join(f"feature_{j}: {'on' if (i + j) % 2 else 'off'}\n" for j in range(30))
            ),
            "LOG_LEVEL": "info",
            "ENDPOINT": f"https://svc-{i % 100}.example.svc.cluster.local:8443/api",
            "TOKEN_ID": f"{i:032x}",
        },
    }


def pod(i: int, namespace: str, managed_fields: bool = True) -> dict[str, Any]:
    """A Pod of about 4 KB on the wire: two containers, probes, volumes, status and managedFields."""
    app = f"app-{i % 50}"

    def container(name: str, port: int) -> dict[str, Any]:
        return {
            "name": name,
            "image": f"registry.example.com/{app}/{name}:1.{i % 9}.{i % 4}",
            "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "REGION", "value": "eu-west-1"},
            ],
            "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "512Mi"},
            },
            "readinessProbe": {
                "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                "periodSeconds": 10,
                "timeoutSeconds": 1,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app"},
                {
                    "name": "kube-api-access",
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "readOnly": True,
                },
            ],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }

    def status(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}},
            "lastState": {},
            "ready": True,
            "restartCount": i % 3,
            "image": f"registry.example.com/{app}/{name}:1.{i % 9}.{i % 4}",
            "imageID": f"registry.example.com/{app}/{name}@sha256:{i:064x}",
            "containerID": f"containerd://{i:064x}",
            "started": True,
        }

    metadata: dict[str, Any] = {
        "name": f"{app}-{i:06d}",
        "namespace": namespace,
        "labels": {"app": app, "pod-template-hash": f"{i % 1000:05d}"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{app}-{i % 1000:05d}",
                "uid": f"{i % 1000:08d}-0000-4000-8000-000000000000",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if managed_fields:
        metadata["managedFields"] = _managed_fields(
            "kube-controller-manager",
            {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                               "f:ownerReferences": {".": {}, 'k:{"uid":"x"}': {}}},
                "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {},
                                                                 "f:name": {}, "f:env": {}}},
                           "f:dnsPolicy": {}, "f:restartPolicy": {}},
            },
        ) + _managed_fields(
            "kubelet",
            {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {},
                          "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}},
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [container("app", 8080), container("sidecar", 9090)],
            "volumes": [
                {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                ]}},
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{i % 200:03d}",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": True,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2026-01-01T00:00:05Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": f"10.0.{i % 200}.{i % 250}",
            "podIP": f"10.244.{i % 250}.{i % 200}",
            "podIPs": [{"ip": f"10.244.{i % 250}.{i % 200}"}],
            "startTime": "2026-01-01T00:00:00Z",
            "containerStatuses": [status("app"), status("sidecar")],
            "qosClass": "Burstable",
        },
    }


def make(kind: str, i: int, namespace: str) -> dict[str, Any]:
    return pod(i, namespace) if kind == "pods" else configmap(i, namespace)


def _serve(conn: Connection, history_size: int, feature_gates: dict[str, bool]) -> None:
    """Child process: run a FakeAPIServer and obey commands from the pipe until "stop"."""
    from kinformer.gvr import GroupVersionResource
    from kinformer.sharding import ShardSelector
    from kinformer.testing import FakeAPIServer

    gvrs = {"configmaps": GroupVersionResource(*CONFIGMAPS), "pods": GroupVersionResource(*PODS)}
    namespaces = GroupVersionResource("", "v1", "namespaces")
    known: set[str] = set()
    server = FakeAPIServer(history_size=history_size, max_backlog=10_000_000,
                           feature_gates=feature_gates)
    server.start()
    conn.send(server.url)
    pacer = threading.Event()  # never set: its wait() paces the fixed-rate writer

    def ensure_namespace(ns: str) -> None:
        if ns not in known:
            known.add(ns)
            with contextlib.suppress(Exception):  # already there
                server.create(namespaces, {"metadata": {"name": ns}})

    batches = 0
    while True:
        command, args = conn.recv()
        if command == "load":
            kind, namespace, n = args
            ensure_namespace(namespace)
            for start in range(0, n, 5000):
                server.bulk_create(
                    gvrs[kind], (make(kind, i, namespace) for i in range(start, min(n, start + 5000)))
                )
            conn.send(server.current_resource_version())
        elif command == "write":
            kind, namespace, n, rate = args
            ensure_namespace(namespace)
            batches += 1
            began = time.perf_counter()
            if rate:
                interval = 1.0 / rate
                for i in range(n):
                    due = began + i * interval
                    ahead = due - time.perf_counter()
                    if ahead > 0:
                        pacer.wait(ahead)
                    obj = make(kind, i, namespace)
                    obj["metadata"]["name"] = f"w{batches}-{i:07d}"
                    obj["metadata"].setdefault("annotations", {})[SENT_ANNOTATION] = repr(time.time())
                    server.create(gvrs[kind], obj)
            else:
                for start in range(0, n, WRITE_CHUNK):
                    objs = [make(kind, i, namespace) for i in range(start, min(n, start + WRITE_CHUNK))]
                    for i, obj in enumerate(objs, start):
                        obj["metadata"]["name"] = f"w{batches}-{i:07d}"
                    server.bulk_create(gvrs[kind], objs)
            conn.send(time.perf_counter() - began)
        elif command == "update":
            kind, namespace, n = args
            objs = server.list_objects(gvrs[kind], namespace)[:n]
            for obj in objs:
                obj.setdefault("data", {})["UPDATED"] = str(batches)
                server.update(gvrs[kind], obj)
            conn.send(len(objs))
        elif command == "shard_counts":
            kind, namespace, count, first = args  # objects per shard, and among the first `first`
            objs = server.list_objects(gvrs[kind], namespace)
            shards = [ShardSelector.for_shard(i, count) for i in range(count)]
            conn.send(([sum(map(s.matches, objs)) for s in shards],
                       [sum(map(s.matches, objs[:first])) for s in shards]))
        elif command == "end_watches":
            conn.send(server.end_watches())
        elif command == "watchers":
            kind, count = args
            conn.send(server.wait_for_watchers(gvrs[kind], count, timeout=30))
        else:
            break
    server.stop()
    conn.send("stopped")


class ServerProcess:
    """A FakeAPIServer in a spawned child process; use as a context manager. Not thread-safe."""

    def __init__(self, history_size: int = 10_000, feature_gates: dict[str, bool] | None = None) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(child, history_size, dict(feature_gates or {})), daemon=True
        )
        self.url = ""

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.url = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._conn.send(("stop", None))
            self._conn.recv()
        finally:
            self._process.join(30)
            if self._process.is_alive():
                self._process.terminate()

    def call(self, command: str, *args: Any) -> Any:
        self._conn.send((command, args))
        return self._conn.recv()

    def load(self, kind: str, namespace: str, n: int) -> str:
        """Create ``n`` objects of ``kind`` ("configmaps" or "pods") in ``namespace``."""
        return str(self.call("load", kind, namespace, n))

    def write(self, kind: str, namespace: str, n: int, rate: float = 0) -> float:
        """Create ``n`` more objects (at ``rate`` per second, 0: in bulk); returns seconds taken."""
        return float(self.call("write", kind, namespace, n, rate))

    def write_async(self, kind: str, namespace: str, n: int, rate: float = 0) -> None:
        """Start :meth:`write`; collect its answer with :meth:`result`."""
        self._conn.send(("write", (kind, namespace, n, rate)))

    def result(self) -> Any:
        return self._conn.recv()

    def update(self, kind: str, namespace: str, n: int) -> int:
        """Update the first ``n`` objects of ``kind`` in ``namespace`` (in list order)."""
        return int(self.call("update", kind, namespace, n))

    def shard_counts(self, kind: str, namespace: str, count: int, first: int) -> tuple[list[int], list[int]]:
        """Objects in each of ``count`` equal shards, overall and among the first ``first``."""
        overall, among_first = self.call("shard_counts", kind, namespace, count, first)
        return list(overall), list(among_first)

    def end_watches(self) -> int:
        return int(self.call("end_watches"))

    def wait_for_watchers(self, kind: str, count: int = 1) -> bool:
        return bool(self.call("watchers", kind, count))


def stop_official(informer: Any, server: ServerProcess) -> None:
    """Stop an official ``SharedInformer`` whose watch is idle.

    Its ``stop()`` stops the current ``Watch`` and joins a thread blocked in a read; but a
    watch the server ends is re-opened, as a new ``Watch`` that ``stop()`` may have missed and
    that looks at the stop flag only when an event arrives. So: stop whatever watch is current
    and end the server's watches until the join returns.
    """
    stopper = threading.Thread(target=informer.stop, name="bench-official-stop")
    stopper.start()
    while stopper.is_alive():
        watch = getattr(informer, "_watch", None)
        if watch is not None:
            watch.stop()
        server.end_watches()
        stopper.join(0.2)


def path(kind: str, namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/{kind}"
