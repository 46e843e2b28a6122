"""Shared pieces of the end-to-end benchmarks: realistic objects and a FakeAPIServer in a child process.

:func:`configmap` builds a ConfigMap of about 1 KB, :func:`pod` a Pod of about 4 KB with
realistic ``managedFields``, and :func:`scale_pod` Pods of about 5 KB that differ from one to
the next, as a large cluster holds them. :class:`ServerProcess` starts a FakeAPIServer in a child
process (spawned, so client and server do not share one interpreter lock) and drives it over a
pipe: load data sets (``FakeAPIServer.preload``), write watch events (in bulk or at a fixed
rate, each stamped with its wall-clock send time in the ``bench/sent`` annotation), end open
watches and report its memory.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from kinformer import _json

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


_TEAMS = ("payments", "search", "checkout", "identity", "ledger", "media", "ads", "infra")
_ENV_NAMES = ("LOG_LEVEL", "REGION", "CACHE_TTL", "FEATURE_FLAGS", "DB_POOL", "TRACE_RATE",
              "UPSTREAM_URL", "WORKERS", "QUEUE_NAME", "TIMEOUT_MS")
_CONDITIONS = ("Initialized", "Ready", "ContainersReady", "PodScheduled")


def scale_pod(i: int, namespace: str) -> dict[str, Any]:
    """A Pod as a large cluster holds them, about 5 KB as JSON (4.7 to 6.2 KB), varied by ``i``.

    Two to four containers (env, ports, resources, probes, volume mounts), owner reference,
    labels and annotations, status with conditions and one containerStatus per container, and
    the managedFields of the controller that made it and of the kubelet. Names, images, node
    names, container counts, env lengths and annotation sizes change from one Pod to the next,
    so no two serialize alike.
    """
    team = _TEAMS[i % len(_TEAMS)]
    app = f"{team}-svc-{i % 97}"
    template_hash = f"{(i * 2654435761) % 0xFFFFFFFFFF:010x}"[:10]
    owner = f"{app}-{template_hash}"
    name = f"{owner}-{(i * 40503) % 0xFFFFF:05x}"
    version = f"{1 + i % 4}.{(i // 7) % 30}.{i % 11}"
    node = f"node-{(i * 7919) % 1500:04d}.eu-west-1.compute.internal"
    ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    started = f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z"
    n_containers = 3 if i % 5 == 0 else 2
    names = ["app", "sidecar", "metrics", "log-shipper"][:n_containers]

    def container(k: int, cname: str) -> dict[str, Any]:
        port = 8080 + k * 1000 + i % 10
        env: list[dict[str, Any]] = [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                             "fieldPath": "metadata.name"}}},
        ]
        for e in range((i + k) % 3):
            env.append({"name": _ENV_NAMES[(i + e) % len(_ENV_NAMES)],
                        "value": f"{team}-{(i * (e + 3)) % 10007}"})
        cpu = 50 * (1 + (i + k) % 8)
        memory = 64 * (1 + (i * 3 + k) % 8)
        spec: dict[str, Any] = {
            "name": cname,
            "image": f"registry.example.com/{team}/{app if k == 0 else cname}:{version}",
            "ports": [{"name": "http" if k == 0 else f"p{k}", "containerPort": port,
                       "protocol": "TCP"}],
            "env": env,
            "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"},
                          "limits": {"cpu": f"{cpu * 2}m", "memory": f"{memory * 2}Mi"}},
            "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }
        if k == 0:
            spec["volumeMounts"].append({"name": "config", "mountPath": f"/etc/{app}"})
        if k == 0 and i % 2:
            spec["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": port,
                                                  "scheme": "HTTP"},
                                      "timeoutSeconds": 1, "periodSeconds": 10,
                                      "successThreshold": 1, "failureThreshold": 3}
        return spec

    def container_status(k: int, cname: str) -> dict[str, Any]:
        digest = f"{(i * 1000003 + k) * 6364136223846793005 % (1 << 64):016x}" * 4
        return {
            "name": cname,
            "state": {"running": {"startedAt": started}},
            "lastState": {},
            "ready": True,
            "restartCount": (i + k) % 3,
            "image": f"registry.example.com/{team}/{app if k == 0 else cname}:{version}",
            "imageID": f"registry.example.com/{team}/{cname}@sha256:{digest}",
            "containerID": f"containerd://{digest}",
            "started": True,
        }

    def fields_of(items: list[str]) -> dict[str, Any]:
        return {f'k:{{"name":"{c}"}}': {".": {}, "f:image": {}, "f:name": {}, "f:env": {},
                                        "f:ports": {}, "f:resources": {}, "f:volumeMounts": {}}
                for c in items}

    annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(8080 + i % 10),
        "checksum/config": f"{(i * 11400714819323198485) % (1 << 64):016x}" * (1 + i % 2),
    }
    if i % 3 == 0:
        annotations["kubectl.kubernetes.io/restartedAt"] = started
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{owner}-",
            "namespace": namespace,
            "labels": {"app": app, "team": team, "version": version,
                       "pod-template-hash": template_hash,
                       "env": ("prod", "staging", "dev")[i % 3]},
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                 "uid": f"{i % 5000:08x}-0000-4000-8000-{i % 977:012x}",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": started, "fieldsType": "FieldsV1", "fieldsV1": {
                     "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}},
                                    "f:ownerReferences": {".": {}}},
                     "f:spec": {"f:containers": fields_of(names), "f:dnsPolicy": {},
                                "f:nodeName": {}, "f:volumes": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                 "time": started, "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {},
                                           "f:hostIP": {}, "f:phase": {}, "f:podIP": {},
                                           "f:podIPs": {}, "f:startTime": {}}}},
            ],
        },
        "spec": {
            "containers": [container(k, c) for k, c in enumerate(names)],
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
            "nodeName": node,
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
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": started} for t in _CONDITIONS],
            "hostIP": f"172.20.{(i * 7919) % 1500 // 250}.{(i * 7919) % 250}",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": started,
            "containerStatuses": [container_status(k, c) for k, c in enumerate(names)],
            "qosClass": "Burstable",
        },
    }


def make(kind: str, i: int, namespace: str) -> dict[str, Any]:
    return pod(i, namespace) if kind == "pods" else configmap(i, namespace)


PART_LABEL = "bench-part"  # scale Pods carry str(i % parts): a label selector takes a slice


def scale_namespace(i: int, spread: int) -> str:
    """The namespace of scale Pod ``i`` among ``spread`` namespaces."""
    return f"team-{i % spread:04d}"


def _preload_scale(server: Any, n: int, spread: int, parts: int) -> tuple[float, str]:
    """Child process: ``n`` scale Pods over ``spread`` namespaces in one preload.

    Returns the seconds it took (namespaces included) and the last resourceVersion. The loaded
    objects are then moved out of the collector's reach (``gc.freeze``, this process only), as
    a long-running server would want: otherwise its next collections walk them all.
    """
    from kinformer.gvr import GroupVersionResource

    def pods() -> Iterator[dict[str, Any]]:
        for i in range(n):
            obj = scale_pod(i, scale_namespace(i, spread))
            obj["metadata"]["labels"][PART_LABEL] = str(i % parts)
            yield obj

    gc.disable()  # from here until frozen: preload's own pause ends inside this one
    began = time.perf_counter()
    server.preload(GroupVersionResource("", "v1", "namespaces"),
                   ({"metadata": {"name": scale_namespace(k, spread)}} for k in range(spread)))
    rv = server.preload(GroupVersionResource(*PODS), pods())
    seconds = time.perf_counter() - began
    gc.freeze()
    gc.enable()
    return seconds, rv


def rss_mb() -> dict[str, float]:
    """This process's resident set now (``rss``) and at its peak (``peak``), in MiB (Linux)."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found["rss" if line.startswith("VmRSS") else "peak"] = int(line.split()[1]) / 1024
    return found


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
            server.preload(gvrs[kind], (make(kind, i, namespace) for i in range(n)))
            conn.send(server.current_resource_version())
        elif command == "preload_scale":
            n, spread, parts = args
            conn.send(_preload_scale(server, n, spread, parts))
        elif command == "rss":
            conn.send(rss_mb())
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
        elif command == "churn":
            kind, namespace, n, events = args  # n objects, then updates until `events` in all
            ensure_namespace(namespace)
            rv = server.current_resource_version()
            objs = [make(kind, i, namespace) for i in range(n)]
            server.bulk_create(gvrs[kind], objs)
            objs = server.list_objects(gvrs[kind], namespace)
            for i in range(events - n):
                obj = objs[i % n]
                obj.setdefault("data", {})["ROUND"] = str(i // n)
                objs[i % n] = server.update(gvrs[kind], obj)
            conn.send(rv)
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


_Server = TypeVar("_Server", bound="ChildProcessServer")


class ChildProcessServer:
    """A server run by ``target(conn, *args)`` in a spawned child process, spoken to over a pipe:
    it sends its URL first, answers each ``(command, args)`` and stops at ``("stop", None)``.
    Use as a context manager. Not thread-safe."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=target, args=(child, *args), daemon=True
        )
        self.url = ""

    def __enter__(self: _Server) -> _Server:
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


class ServerProcess(ChildProcessServer):
    """A FakeAPIServer in a spawned child process; use as a context manager. Not thread-safe."""

    def __init__(self, history_size: int = 10_000, feature_gates: dict[str, bool] | None = None) -> None:
        super().__init__(_serve, history_size, dict(feature_gates or {}))

    def preload_scale(self, n: int, spread: int, parts: int) -> tuple[float, str]:
        """``n`` scale Pods over ``spread`` namespaces, labelled into ``parts`` slices (see
        :data:`PART_LABEL`), in one preload: (seconds, last resourceVersion)."""
        seconds, rv = self.call("preload_scale", n, spread, parts)
        return float(seconds), str(rv)

    def rss(self) -> dict[str, float]:
        """The server process's resident set now and at its peak, in MiB."""
        return dict(self.call("rss"))

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

    def churn(self, kind: str, namespace: str, n: int, events: int) -> str:
        """Create ``n`` objects, then update them in turn until ``events`` were written in all;
        returns the resourceVersion just before the first (a watch from it replays them all)."""
        return str(self.call("churn", kind, namespace, n, events))

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


WATCH_READ = 256 * 1024  # what the floors and the watch benchmarks read from a socket at once


def read_and_keep(response: Any, events: int, cache: dict[str, Any]) -> int:
    """The watch floor: read ``response`` a socket read at a time, split it into lines, decode
    each event and keep its object in ``cache`` by namespace/name, until ``events`` came or the
    stream ended; returns how many came."""
    loads = _json.loads
    seen = 0
    pending = b""
    while seen < events:
        chunk = response.read1(WATCH_READ)
        if not chunk:
            break
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            obj = loads(line)["object"]
            meta = obj["metadata"]
            cache[meta["namespace"] + "/" + meta["name"]] = obj
        seen += len(lines)
    return seen

