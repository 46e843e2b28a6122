"""What the member-cluster tests share: a recording cluster handler, a provider the test drives,
kubeconfig Secrets, and reading a member server's request log."""

from __future__ import annotations

import base64
import json
import queue
import threading
from typing import Any

from helpers import TIMEOUT

from kinformer import (
    ClusterEventHandler,
    Context,
    GroupVersionResource,
    ShardSelector,
    cluster_shard_hash,
)
from kinformer.clusters.provider import Disengage, Engage
from kinformer.testing import FakeAPIServer

SECRETS = GroupVersionResource("", "v1", "secrets")
NAMESPACES = GroupVersionResource("", "v1", "namespaces")
KUBECONFIG_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
HUB_NAMESPACE = "fleet-system"


# A cluster handler: kinformer.testing.Recorder hears plain notifications, without their cluster.
class ClusterRecorder(ClusterEventHandler):
    """Queues every call as ``(kind, cluster, name)`` (``("disengaged", cluster)``) for the test.

    With a ``probe``, each call first appends ``probe(cluster)`` to ``probed``: what a lister
    showed while the handler ran. Callbacks wait for ``gate`` when one is given.
    """

    def __init__(self, gate: threading.Event | None = None, probe: Any = None) -> None:
        self.events: queue.Queue[tuple[str, ...]] = queue.Queue()
        self.gate = gate
        self.probe = probe
        self.probed: list[Any] = []
        self.threads: set[str] = set()
        self.entered = threading.Event()

    def _record(self, *event: str) -> None:
        self.entered.set()
        self.threads.add(threading.current_thread().name)
        if self.gate is not None:
            self.gate.wait(TIMEOUT)
        if self.probe is not None:
            self.probed.append(self.probe(event[1]))
        self.events.put(event)

    def on_add(self, cluster: str, obj: Any) -> None:
        self._record("add", cluster, obj["metadata"]["name"])

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        self._record("update", cluster, new["metadata"]["name"])

    def on_delete(self, cluster: str, obj: Any) -> None:
        self._record("delete", cluster, obj["metadata"]["name"])

    def on_disengaged(self, cluster: str) -> None:
        self._record("disengaged", cluster)

    def next(self, timeout: float = TIMEOUT) -> tuple[str, ...]:
        return self.events.get(timeout=timeout)

    def take(self, count: int, timeout: float = TIMEOUT) -> list[tuple[str, ...]]:
        return [self.next(timeout) for _ in range(count)]

    def until(self, event: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Every event up to and including ``event``."""
        taken = [self.next()]
        while taken[-1] != event:
            taken.append(self.next())
        return taken

    def drained(self) -> list[tuple[str, ...]]:
        """The events queued now, without waiting."""
        out = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out


class DrivenProvider:
    """A ClusterProvider whose engagements the test makes: ``engage``/``disengage`` from the test
    thread are handed to the factory on the provider's own thread, in order."""

    def __init__(self, synced: bool = True) -> None:
        self.synced = synced
        self._calls: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._done: queue.Queue[None] = queue.Queue()

    def run(self, stop: Context, engage: Engage, disengage: Disengage) -> None:
        stop.on_cancel(lambda: self._calls.put(None))
        while (call := self._calls.get()) is not None:
            name, api_client = call
            if api_client is None:
                disengage(name)
            else:
                engage(name, api_client)
            self._done.put(None)

    def has_synced(self) -> bool:
        return self.synced

    def engage(self, name: str, api_client: Any) -> None:
        """Engage ``name`` and wait until the factory returned from it."""
        self._calls.put((name, api_client))
        self._done.get(timeout=TIMEOUT)

    def disengage(self, name: str) -> None:
        """Disengage ``name`` and wait until the factory returned (its informers are joined)."""
        self._calls.put((name, None))
        self._done.get(timeout=TIMEOUT)


def excluding(*names: str) -> ShardSelector:
    """A shard of every hash but those of ``names``."""
    ranges, start = [], 0
    for point in sorted(cluster_shard_hash(name) for name in names):
        if point > start:
            ranges.append((start, point))
        start = point + 1
    if start < 2**64:
        ranges.append((start, 2**64))
    return ShardSelector.from_ranges(ranges)


def kubeconfig_secret(name: str, kubeconfig: dict[str, Any] | bytes | None,
                      **labels: str) -> dict[str, Any]:
    """A Secret of the hub holding ``kubeconfig`` (a document, raw bytes, or None: no key)."""
    labels = labels or {KUBECONFIG_LABEL: "true"}
    secret: dict[str, Any] = {"metadata": {"name": name, "namespace": HUB_NAMESPACE, "labels": labels},
                              "data": {}}
    if kubeconfig is not None:
        raw = kubeconfig if isinstance(kubeconfig, bytes) else json.dumps(kubeconfig).encode()
        secret["data"]["kubeconfig"] = base64.b64encode(raw).decode()
    return secret


def lists_served(server: FakeAPIServer, path: str = "/api/v1/configmaps") -> int:
    """How many lists (not watches) of ``path`` the server answered."""
    return sum(1 for method, p, query, _status in server.requests
               if method == "GET" and p == path and query.get("watch") not in ("true", "1"))


def cluster_id(server: FakeAPIServer) -> str:
    """The uid of ``server``'s kube-system namespace: the identity of the cluster it serves."""
    uid: str = server.get(NAMESPACES, None, "kube-system")["metadata"]["uid"]
    return uid
