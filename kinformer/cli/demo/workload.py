"""The ``kinformer demo`` workload: its objects, its run options and counters, and the churn.

The namespaces, ConfigMaps and Widgets (with their CustomResourceDefinition) the demo loads into
its embedded :class:`~kinformer.testing.FakeAPIServer`; :class:`Options` of one run;
:class:`Stats`, the counters every part of the demo adds to; and :class:`Churn`, which changes
the objects server-side at a steady rate and injects watch faults. :mod:`kinformer.cli.demo.app` runs
it all; :mod:`kinformer.cli.demo.display` shows it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import random
import threading
import time
from typing import Any

from kinformer import context, errors
from kinformer.gvr import GroupVersionResource
from kinformer.testing.apiserver import FakeAPIServer

log = logging.getLogger(__name__)

NAMESPACES = GroupVersionResource("", "v1", "namespaces")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
WIDGETS = GroupVersionResource("demo.kinformer.io", "v1", "widgets")
DEMO_NAMESPACES = ("team-alpha", "team-beta", "team-gamma", "team-delta")

CHURN_TICK = 0.05  # seconds between churn batches
FIRST_FAULT = 8.0  # seconds of churn before the first injected fault; each gap after is twice the last


@dataclasses.dataclass
class Options:
    duration: float
    objects: int
    rate: float
    faults: bool
    seed: int | None


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


def new_configmap(i: int) -> dict[str, Any]:
    """ConfigMap number ``i`` of the workload, in one of the demo namespaces."""
    namespace = DEMO_NAMESPACES[i % len(DEMO_NAMESPACES)]
    return {
        "metadata": {"name": f"config-{i:05d}", "namespace": namespace,
                     "labels": {"app": f"app-{i % 17}", "tier": ("web", "api", "db")[i % 3]}},
        "data": {"revision": "0", "settings.yaml": f"replicas: {i % 5 + 1}\nlogLevel: info\n" * 4},
    }


def new_widget(i: int) -> dict[str, Any]:
    """Widget number ``i`` of the workload, in one of the demo namespaces."""
    namespace = DEMO_NAMESPACES[i % len(DEMO_NAMESPACES)]
    return {"apiVersion": WIDGETS.group_version, "kind": "Widget",
            "metadata": {"name": f"widget-{i:03d}", "namespace": namespace},
            "spec": {"message": "hello 0"}}


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
                if ctx.cancelled():  # a high --rate makes a long batch: stop within one change
                    return
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
            widget = new_widget(i)
            widget["spec"]["message"] = f"hello {self._revision}"
            self._server.update(WIDGETS, widget)
        elif pick < 0.2 or not self._configmaps:
            self._server.create(CONFIGMAPS, new_configmap(self._next))
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
            configmap = new_configmap(i)
            configmap["data"]["revision"] = str(self._revision)
            self._server.update(CONFIGMAPS, configmap)
        self._stats.changed()

    def _fault(self) -> None:
        if self._stats.snapshot()[3] % 2 == 1:
            self._server.compact()
        self._server.drop_watches()
        self._stats.faulted()
