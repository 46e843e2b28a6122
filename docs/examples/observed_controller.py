"""Stamp every ConfigMap of a namespace with a checksum of its data, observable as a Pod should be.

A small controller in the usual shape (an informer feeds keys into a work queue; a
:class:`~kinformer.Controller` reconciles each key against the cache and writes through the
official client) that also serves what the kubelet and Prometheus ask for: ``/healthz`` for the
liveness probe, ``/readyz`` (ready once the informer synced) for the readiness probe and
``/metrics`` with the work queue, reflector and informer metrics. Needs the ``prometheus``
extra. Run it against the cluster of your kubeconfig, then look at http://127.0.0.1:8081/metrics::

    python docs/examples/observed_controller.py NAMESPACE
"""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import sys
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes import config

from kinformer import (
    Context,
    Controller,
    GenericLister,
    GroupVersionResource,
    ListWatch,
    NotFoundError,
    ProbeServer,
    SharedIndexInformer,
    informers_synced_check,
    metrics,
    split_meta_namespace_key,
)
from kinformer.context import as_context

log = logging.getLogger("checksums")

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
CHECKSUM = "kinformer.io/checksum"
PROBE_PORT = 8081  # containerPort of the probes and the scrape target
STOP_TIMEOUT = 30.0  # seconds to wait for the informer to stop


def checksum(obj: Any) -> str:
    """SHA-256 of a ConfigMap's ``data`` and ``binaryData``, keys sorted."""
    content = {"data": obj.get("data") or {}, "binaryData": obj.get("binaryData") or {}}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


class ChecksumReconciler:
    """Makes one ConfigMap's checksum annotation match its data; reads the cache, writes the API."""

    def __init__(self, lister: GenericLister, core: k8s.CoreV1Api) -> None:
        self._lister = lister
        self._core = core

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        try:
            obj = self._lister.by_namespace(namespace).get(name)
        except NotFoundError:
            return  # deleted since: nothing to stamp
        wanted = checksum(obj)
        if (obj["metadata"].get("annotations") or {}).get(CHECKSUM) != wanted:
            log.info("stamping %s", key)
            patch = {"metadata": {"annotations": {CHECKSUM: wanted}}}
            self._core.patch_namespaced_config_map(name, namespace, patch)


def run_checksums(
    api_client: Any, namespace: str, probes: ProbeServer, stop: threading.Event | Context
) -> None:
    """Reconcile checksums in ``namespace`` and serve ``probes`` until ``stop`` fires; blocks.

    Returns once every thread it started has ended and ``probes`` is stopped.
    """
    ctx = as_context(stop)
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, namespace=namespace),
                                   name="v1/configmaps")  # the "resource" label of its metrics
    lister = GenericLister(informer.get_indexer(), CONFIGMAPS)
    reconciler = ChecksumReconciler(lister, k8s.CoreV1Api(api_client))
    controller = Controller("configmap-checksums", reconciler, workers=2)  # the queue's "name" label
    informer.add_event_handler(controller.event_handler())

    probes.add_healthz_check("ping", lambda: True)
    probes.add_readyz_check("informers", informers_synced_check(informer))
    informer_thread = threading.Thread(target=informer.run, args=(ctx,), name="checksums-informer")
    informer_thread.start()
    probes.start()
    try:
        controller.run(ctx)  # blocks until stop
    finally:
        ctx.cancel()
        probes.stop()
        informer_thread.join(STOP_TIMEOUT)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    config.load_kube_config()
    # before any queue or informer is made: they report to the provider set when they are created
    metrics.set_provider(metrics.PrometheusMetricsProvider())
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())  # Ctrl-C stops cleanly
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())  # as the kubelet stops a Pod
    with k8s.ApiClient() as api_client:
        # in a Pod bind every interface ("0.0.0.0") so the kubelet and Prometheus reach it
        run_checksums(api_client, argv[1], ProbeServer("127.0.0.1", PROBE_PORT), stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
