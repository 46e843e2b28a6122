"""A controller run as three replicas, each reconciling only its shard of the ConfigMaps.

Each replica runs a :class:`~kinformer.ShardCoordinator` (one Lease per replica in the group
``tagger``) and an informer that follows the coordinator's selector. Its controller tags every
ConfigMap in its shard with the annotation ``kinformer.io/shard: <replica>``. When the replicas
agree, every ConfigMap carries the tag of exactly the replica whose shard holds it; when one
replica stops, its Lease goes, the other two split the hash space between them, their informers
relist with the new selectors, and they re-tag the ConfigMaps that moved to them.

The informer starts on the coordinator's selector, which is empty until the replica sees itself
among the members: a replica caches and reconciles nothing before it has its shard, nor while
its Lease is gone (someone deleted it; it is created again at the next renewal), nor after it
stopped. None, not the empty selector, would mean the whole resource.

Run it as it is to watch three replicas, threads of one process, against an embedded
FakeAPIServer with server-side sharding on::

    python docs/examples/sharded_controller.py

Or run each replica as its own process against any cluster (or ``kinformer serve``), the way
a Deployment runs it; stop one (Ctrl-C or SIGTERM: it deletes its Lease, so the others take its
range at once) or kill it (``kill -9``: the others take its range once its Lease has expired)::

    python docs/examples/sharded_controller.py --replica a --kubeconfig kubeconfig
    python docs/examples/sharded_controller.py --replica b --kubeconfig kubeconfig

``--fast`` uses the demo's short Lease timings (3 s and 0.5 s instead of 15 s and 5 s), so a
killed replica's range moves within seconds. In production each replica is a pod (the pod name
as identity) calling :func:`run_replica` with the cluster's ``ApiClient``. On a server without
the ``ShardedListAndWatch`` feature gate the same code works: each replica then receives every
object and keeps only its shard.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import signal
import sys
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kinformer import (
    Context,
    Controller,
    GroupVersionResource,
    ListWatch,
    NotFoundError,
    ShardCoordinator,
    SharedIndexInformer,
)
from kinformer.context import as_context
from kinformer.testing import FakeAPIServer, wait_for

log = logging.getLogger("sharded")

GROUP = "tagger"
TAG = "kinformer.io/shard"
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
# enough that each of three equal shards of the uids' hash space holds some: with 12, one in
# about 40 runs left a replica with nothing to tag
CONFIGMAP_COUNT = 30
# short so the demo moves within seconds; keep the defaults (15 and 5) against a real cluster
DEMO_TIMING = {"lease_duration": 3.0, "renew_interval": 0.5}


class TagReconciler:
    """Annotates a ConfigMap with the replica that owns it, if it is in this replica's cache."""

    def __init__(self, informer: SharedIndexInformer, core: k8s.CoreV1Api, identity: str) -> None:
        self._informer = informer
        self._core = core
        self._identity = identity

    def reconcile(self, key: str) -> None:
        obj = self._informer.get_indexer().get_by_key(key)
        if obj is None:  # not ours (any more): the owner tags it
            return
        namespace, name = key.split("/", 1)
        if ((obj.get("metadata") or {}).get("annotations") or {}).get(TAG) == self._identity:
            return
        log.info("%s tags %s", self._identity, key)
        with contextlib.suppress(NotFoundError):
            self._core.patch_namespaced_config_map(
                name, namespace, {"metadata": {"annotations": {TAG: self._identity}}})


def run_replica(api_client: Any, identity: str, stop: threading.Event | Context,
                namespace: str = "default", **timing: float) -> None:
    """Run one replica until ``stop`` fires; blocks, and returns with every thread joined."""
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace), name=f"cms-{identity}")
    coordinator = ShardCoordinator(api_client, GROUP, identity, namespace, **timing)
    informer.set_shard_selector(coordinator.selector())  # empty: nothing until it has its shard
    coordinator.add_listener(informer.set_shard_selector)  # relist whenever the shard moves
    controller = Controller(f"tag-{identity}", TagReconciler(informer, k8s.CoreV1Api(api_client),
                                                               identity))
    informer.add_event_handler(controller.event_handler())
    ctx = as_context(stop).child()  # cancelled with stop, or on the way out of an error
    threads = [threading.Thread(target=run, args=(ctx,), name=f"{identity}-{part}")
               for part, run in (("coordinator", coordinator.run), ("informer", informer.run),
                                 ("controller", controller.run))]
    for thread in threads:
        thread.start()
    try:
        ctx.wait()
    finally:
        ctx.cancel()
        for thread in threads:
            thread.join()


def tags(core: k8s.CoreV1Api) -> dict[str, str]:
    """Which replica tagged each ConfigMap in ``default`` (``""`` when none has yet)."""
    return {cm.metadata.name: (cm.metadata.annotations or {}).get(TAG, "")
            for cm in core.list_namespaced_config_map("default").items}


def shares(core: k8s.CoreV1Api) -> str:
    """How many ConfigMaps each replica tagged: ``replica-a 9, replica-b 11, ...``."""
    counts = collections.Counter(tags(core).values())
    return ", ".join(f"{who or 'untagged'} {n}" for who, n in sorted(counts.items()))


def run_process(identity: str, kubeconfig: str, namespace: str, fast: bool) -> int:
    """Run one replica in this process until SIGTERM or SIGINT; 0 once it stopped cleanly."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {identity} %(message)s")
    stop = Context(identity)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.cancel())
    api_client = k8s_config.new_client_from_config(config_file=kubeconfig)
    try:
        run_replica(api_client, identity, stop, namespace, **(DEMO_TIMING if fast else {}))
    finally:
        api_client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The demo with no arguments; one replica with ``--replica NAME --kubeconfig PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replica", metavar="NAME",
                        help="run only this replica, in this process (needs --kubeconfig)")
    parser.add_argument("--kubeconfig", metavar="PATH", help="the cluster of --replica")
    parser.add_argument("--namespace", default="default", help="the ConfigMaps' and Leases' namespace")
    parser.add_argument("--fast", action="store_true",
                        help="the demo's short Lease timings instead of the defaults")
    args = parser.parse_args(argv or [])
    if args.replica is None:
        if args.kubeconfig is not None:
            parser.error("--kubeconfig goes with --replica")
        return run_demo()
    if args.kubeconfig is None:
        parser.error("--replica needs --kubeconfig")
    return run_process(args.replica, args.kubeconfig, args.namespace, args.fast)


def run_demo() -> int:
    """Three replicas as threads of this process against an embedded FakeAPIServer."""
    logging.basicConfig(level=logging.INFO, format="%(threadName)s %(message)s")
    with FakeAPIServer(feature_gates={"ShardedListAndWatch": True}) as server:
        api_client = server.api_client()
        core = k8s.CoreV1Api(api_client)
        for i in range(CONFIGMAP_COUNT):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
        stops = {name: Context(name) for name in ("replica-a", "replica-b", "replica-c")}
        replicas = [threading.Thread(target=run_replica, args=(api_client, name, stop),
                                     kwargs=DEMO_TIMING, name=name)
                    for name, stop in stops.items()]
        for replica in replicas:
            replica.start()
        try:
            every = {"replica-a", "replica-b", "replica-c"}
            if not wait_for(lambda: set(tags(core).values()) == every, 30):  # none untagged
                print("the three replicas did not share the ConfigMaps", file=sys.stderr)
                return 1
            print("tagged by three replicas:", shares(core))
            stops["replica-b"].cancel()
            if not wait_for(lambda: set(tags(core).values()) == {"replica-a", "replica-c"}, 30):
                print("the two remaining replicas did not take over", file=sys.stderr)
                return 1
            print("after replica-b stopped:", shares(core))
            return 0
        finally:
            for stop in stops.values():
                stop.cancel()
            for replica in replicas:
                replica.join()
            api_client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
