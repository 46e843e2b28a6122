"""A controller run as three replicas, exactly one of them active, with a LeaderElector.

Each replica campaigns for the Lease ``default/stamp-controller``. The one that leads starts an
:class:`~kinformer.InformerManager` and a :class:`~kinformer.Controller` under the context the
elector gives it; the controller stamps every ConfigMap labelled ``app=ha-demo`` with the
annotation ``kinformer.io/reconciled-by: <replica>``. When the leader stops, its context is
cancelled, its informers and workers are joined, it releases the Lease, and another replica
takes over at its next attempt and re-stamps every ConfigMap from its own initial list. Without
``release_on_cancel`` the hand-over would wait for the lease to expire instead. A replica that
loses the lead without being stopped (no renewal for ``renew_deadline``) campaigns again.

Run it as it is to watch the hand-over between three replicas, threads of one process, against
an embedded FakeAPIServer::

    python docs/examples/ha_controller.py

Or run each replica as its own process against any cluster (or ``kinformer serve``), the way a
Deployment runs it; stop the leader (Ctrl-C or SIGTERM: it releases the Lease, so another takes
over at its next attempt) or kill it (``kill -9``: another takes over once the Lease has
expired)::

    python docs/examples/ha_controller.py --replica a --kubeconfig kubeconfig
    python docs/examples/ha_controller.py --replica b --kubeconfig kubeconfig

``--fast`` uses the demo's short timings (a 3 s lease instead of 15 s), so a killed leader is
replaced within seconds. In production each replica is a pod (the pod name as identity)
calling :func:`run_replica` with the cluster's ``ApiClient``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kinformer import (
    APIResourceMeta,
    Context,
    Controller,
    GroupVersionKind,
    GroupVersionResource,
    InformerManager,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    NotFoundError,
)
from kinformer.testing import FakeAPIServer, wait_for

log = logging.getLogger("ha")

LOCK_NAME = "stamp-controller"
RECONCILED_BY = "kinformer.io/reconciled-by"
SELECTOR = "app=ha-demo"
CONFIGMAPS = APIResourceMeta(
    GroupVersionKind("", "v1", "ConfigMap"), GroupVersionResource("", "v1", "configmaps")
)
SYNC_TIMEOUT = 60.0  # seconds the leader waits for its first list
# the embedded run uses short durations so the hand-over shows within seconds; keep the
# defaults (15, 10, 2) against a real cluster
DEMO_TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}


class StampReconciler:
    """Annotates a ConfigMap (keyed ``namespace/name``) with the replica that reconciled it."""

    def __init__(self, manager: InformerManager, core: k8s.CoreV1Api, identity: str) -> None:
        self._lister = manager.lister(CONFIGMAPS.group_version_resource)
        self._core = core
        self._identity = identity

    def reconcile(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        try:
            obj = self._lister.by_namespace(namespace).get(name)
        except NotFoundError:
            return
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if labels.get("app") != "ha-demo":
            return
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if annotations.get(RECONCILED_BY) != self._identity:
            log.info("%s stamps %s", self._identity, key)
            self._core.patch_namespaced_config_map(
                name, namespace, {"metadata": {"annotations": {RECONCILED_BY: self._identity}}})


def run_replica(
    api_client: Any,
    identity: str,
    stop: threading.Event | Context,
    *,
    namespace: str = "default",
    on_new_leader: Callable[[str], object] | None = None,
    **timing: float,
) -> None:
    """Run one replica until ``stop`` fires; blocks, and returns with every thread joined.

    It reconciles only while it leads; when it loses the lead it campaigns again, with a new
    elector (an elector runs once). ``timing`` may set ``lease_duration``, ``renew_deadline``
    and ``retry_period`` (client-go's 15, 10 and 2 seconds by default).
    """
    core = k8s.CoreV1Api(api_client)

    def lead(ctx: Context) -> None:
        log.info("%s leads", identity)
        with InformerManager(api_client, 0, ctx) as manager:
            controller = Controller(f"stamp-{identity}", StampReconciler(manager, core, identity))
            manager.add_static_resource(CONFIGMAPS, controller.event_handler())
            manager.start()
            if manager.wait_for_cache_sync(SYNC_TIMEOUT):
                controller.run(ctx)
        log.info("%s stopped reconciling", identity)

    stopped = stop.is_set if isinstance(stop, threading.Event) else stop.cancelled
    while not stopped():
        elector = LeaderElector(LeaderElectionConfig(
            LeaseLock(api_client, namespace, LOCK_NAME, identity),
            on_started_leading=lead,
            on_stopped_leading=lambda: log.info("%s stepped down", identity),
            on_new_leader=on_new_leader,
            release_on_cancel=True,
            name=LOCK_NAME,
            **timing,
        ))
        elector.run(stop)  # returns once stopped, or once it lost the lead


def stamps(core: k8s.CoreV1Api) -> dict[str, str]:
    """Who stamped each demo ConfigMap in ``default`` (``""`` when nobody has yet)."""
    found = core.list_namespaced_config_map("default", label_selector=SELECTOR)
    return {cm.metadata.name: (cm.metadata.annotations or {}).get(RECONCILED_BY, "")
            for cm in found.items}


def hand_over_demo(say: Callable[[str], object] = print, timeout: float = 30.0) -> list[str]:
    """Three replicas against an embedded server; stop the leader once and watch the next one
    take over. Returns the leaders in order."""
    leaders: list[str] = []
    names = ("replica-a", "replica-b", "replica-c")
    with FakeAPIServer() as server, server.api_client() as api_client:
        core = k8s.CoreV1Api(api_client)
        for i in range(3):
            core.create_namespaced_config_map("default", {"metadata": {
                "name": f"demo-{i}", "labels": {"app": "ha-demo"}}})
        clients = {name: server.api_client() for name in names}  # one per replica, as processes
        stops = {name: Context(name) for name in names}
        threads = {name: threading.Thread(target=run_replica, name=name,
                                          args=(clients[name], name, stops[name]), kwargs=DEMO_TIMING)
                   for name in names}
        for thread in threads.values():
            thread.start()
        try:
            while True:
                if not wait_for(lambda: _stamped_by_new_leader(core, leaders), timeout):
                    raise TimeoutError("no replica took the lead")
                say(f"every ConfigMap stamped by {leaders[-1]}: {stamps(core)}")
                if len(leaders) == 2:
                    break
                say(f"stopping {leaders[-1]}")
                stops[leaders[-1]].cancel()
        finally:
            for name in names:
                stops[name].cancel()
                threads[name].join()
                clients[name].close()
    return leaders


def _stamped_by_new_leader(core: k8s.CoreV1Api, leaders: list[str]) -> bool:
    """True once every demo ConfigMap carries the stamp of one replica that did not lead before."""
    by = set(stamps(core).values())
    if len(by) != 1 or "" in by or by <= set(leaders):
        return False
    leaders.append(by.pop())
    return True


def run_process(identity: str, kubeconfig: str, namespace: str, fast: bool) -> int:
    """Run one replica in this process until SIGTERM or SIGINT; 0 once it stopped cleanly."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {identity} %(message)s")
    stop = Context(identity)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.cancel())
    api_client = k8s_config.new_client_from_config(config_file=kubeconfig)
    try:
        run_replica(api_client, identity, stop, namespace=namespace,
                    **(DEMO_TIMING if fast else {}))
    finally:
        api_client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The demo with no arguments; one replica with ``--replica NAME --kubeconfig PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replica", metavar="NAME",
                        help="run only this replica, in this process (needs --kubeconfig)")
    parser.add_argument("--kubeconfig", metavar="PATH", help="the cluster of --replica")
    parser.add_argument("--namespace", default="default", help="the Lease's namespace")
    parser.add_argument("--fast", action="store_true",
                        help="the demo's short lease timings instead of client-go's")
    args = parser.parse_args(argv or [])
    if args.replica is None:
        if args.kubeconfig is not None:
            parser.error("--kubeconfig goes with --replica")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
        leaders = hand_over_demo()
        print(f"leaders in turn: {' -> '.join(leaders)}")
        return 0
    if args.kubeconfig is None:
        parser.error("--replica needs --kubeconfig")
    return run_process(args.replica, args.kubeconfig, args.namespace, args.fast)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
