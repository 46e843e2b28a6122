"""The fleet demo's workload: its members' kubeconfig Secrets, its event counts and its churn.

:func:`kubeconfig_secret` is the hub's Secret for one member, as multicluster-runtime's
kubeconfig provider reads it; :class:`ClusterCounts` is the cluster handler counting each
cluster's events; :class:`Churn` changes ConfigMaps in every member server-side.
:mod:`kinformer.cli.demo.fleet` runs them.
"""

from __future__ import annotations

import base64
import collections
import json
import logging
import random
import threading
import time
from typing import Any

from kinformer import context, errors
from kinformer.cli.demo import workload
from kinformer.cluster_handlers import ClusterEventHandler
from kinformer.clusters.kubeconfig import DEFAULT_SECRET_KEY, DEFAULT_SECRET_LABEL
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

HUB_NAMESPACE = "fleet-system"


def member_names(count: int) -> list[str]:
    return [f"member-{i}" for i in range(1, count + 1)]


def kubeconfig_secret(name: str, server: FakeAPIServer) -> dict[str, Any]:
    """The hub's Secret for member ``name``: its kubeconfig, as multicluster-runtime keeps it."""
    document = json.dumps(server.kubeconfig()).encode()
    return {"metadata": {"name": name, "namespace": HUB_NAMESPACE, "labels": {DEFAULT_SECRET_LABEL: "true"}},
            "type": "Opaque", "data": {DEFAULT_SECRET_KEY: base64.b64encode(document).decode()}}


class ClusterCounts(ClusterEventHandler):
    """Counts each cluster's events and remembers when it was last disengaged; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards every attribute
        self.events: collections.Counter[str] = collections.Counter()
        self.disengaged: dict[str, float] = {}  # cluster -> monotonic time of its last on_disengaged

    def _count(self, cluster: str) -> None:
        with self._lock:
            self.events[cluster] += 1

    def on_add(self, cluster: str, obj: Any) -> None:
        self._count(cluster)

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        self._count(cluster)

    def on_delete(self, cluster: str, obj: Any) -> None:
        self._count(cluster)

    def on_disengaged(self, cluster: str) -> None:
        with self._lock:
            self.disengaged[cluster] = time.monotonic()

    def snapshot(self) -> tuple[dict[str, int], dict[str, float]]:
        with self._lock:
            return dict(self.events), dict(self.disengaged)


class Churn:
    """Updates, creates and deletes ConfigMaps of every member server-side, round robin, at
    ``rate`` changes a second in all; a stopped server changes all the same (it is unreachable,
    not frozen). :meth:`run` blocks until its context is cancelled."""

    def __init__(self, members: dict[str, FakeAPIServer], loaded: dict[str, int], rate: float,
                 seed: int | None) -> None:
        self._members = members
        self._random = random.Random(seed)
        self._live = {name: list(range(count)) for name, count in loaded.items()}
        self._next = dict(loaded)
        self._rate = rate
        self._lock = threading.Lock()  # guards changes
        self.changes = 0

    def run(self, ctx: context.Context) -> None:
        names = list(self._members)
        begun = time.monotonic()
        done = 0
        while names and not ctx.wait(workload.CHURN_TICK):
            due = int((time.monotonic() - begun) * self._rate) - done
            for _ in range(max(0, due)):
                if ctx.cancelled():  # a high --rate makes a long batch: stop within one change
                    return
                name = names[done % len(names)]
                done += 1
                try:
                    self._change(name)
                except errors.APIError as err:
                    log.debug("churn change in %s failed: %s", name, err)

    def _change(self, name: str) -> None:
        server, live = self._members[name], self._live[name]
        pick = self._random.random()
        if pick < 0.15 or not live:
            server.create(workload.CONFIGMAPS, workload.new_configmap(self._next[name]))
            live.append(self._next[name])
            self._next[name] += 1
        elif pick < 0.3:
            index = self._random.randrange(len(live))
            i = live[index]
            live[index] = live[-1]
            live.pop()
            server.delete(workload.CONFIGMAPS, workload.new_configmap(i)["metadata"]["namespace"],
                          f"config-{i:05d}")
        else:
            configmap = workload.new_configmap(self._random.choice(live))
            configmap["data"]["revision"] = str(self.changes + 1)
            server.update(workload.CONFIGMAPS, configmap)
        with self._lock:
            self.changes += 1
