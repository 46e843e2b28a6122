"""Mirror labelled ConfigMaps from one namespace into another, with an InformerManager.

Every ConfigMap in the source namespace labelled ``kinformer.io/mirror=true`` gets a copy of the
same name in the target namespace (its ``data`` and ``binaryData``, labelled
``kinformer.io/mirrored-from=<source>``). Changes to the source are copied; the copy goes away
when its source is deleted or loses the label; a copy edited or deleted by hand is put back. A
ConfigMap in the target namespace that is not a copy is never touched.

The shape is client-go's: an informer (here through fleet's InformerManager) feeds keys into a
work queue; one :class:`~kinformer.Controller` worker reconciles each key against the cache and
writes through the official client. Run it against the cluster of your kubeconfig::

    python docs/examples/mirror_configmaps.py SOURCE_NAMESPACE TARGET_NAMESPACE
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes import config

from kinformer import (
    APIResourceMeta,
    Context,
    Controller,
    GroupVersionKind,
    GroupVersionResource,
    InformerManager,
    NotFoundError,
    TerminalError,
    deleted_object,
)
from kinformer.context import as_context

log = logging.getLogger("mirror")

MIRROR_LABEL = "kinformer.io/mirror"
MIRRORED_FROM_LABEL = "kinformer.io/mirrored-from"
CONFIGMAPS = APIResourceMeta(
    GroupVersionKind("", "v1", "ConfigMap"), GroupVersionResource("", "v1", "configmaps")
)
SYNC_TIMEOUT = 60.0  # seconds to wait for the first list before giving up


class MirrorEvents:
    """Informer handler: enqueue the name of every ConfigMap that may need its copy changed."""

    def __init__(self, controller: Controller, source_ns: str, target_ns: str) -> None:
        self._controller = controller
        self._source_ns = source_ns
        self._target_ns = target_ns

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(deleted_object(obj))

    def _enqueue(self, obj: Any) -> None:
        meta = (obj or {}).get("metadata") or {}
        namespace = meta.get("namespace")
        labels = meta.get("labels") or {}
        if namespace == self._source_ns or (
            namespace == self._target_ns and labels.get(MIRRORED_FROM_LABEL) == self._source_ns
        ):
            self._controller.enqueue(meta["name"])


class MirrorReconciler:
    """Makes the copy of one ConfigMap (keyed by name) match its source; read the cache, write the API."""

    def __init__(self, manager: InformerManager, core: k8s.CoreV1Api, source_ns: str, target_ns: str) -> None:
        lister = manager.lister(CONFIGMAPS.group_version_resource)
        self._source = lister.by_namespace(source_ns)
        self._target = lister.by_namespace(target_ns)
        self._core = core
        self._source_ns = source_ns
        self._target_ns = target_ns

    def reconcile(self, name: str) -> None:
        source = _get(self._source, name)
        copy = _get(self._target, name)
        wanted = source is not None and _labels(source).get(MIRROR_LABEL) == "true"
        if copy is not None and _labels(copy).get(MIRRORED_FROM_LABEL) != self._source_ns:
            raise TerminalError(f"{self._target_ns}/{name} exists and is not a copy; leaving it alone")
        if not wanted:
            if copy is not None:
                log.info("deleting copy %s/%s", self._target_ns, name)
                try:
                    self._core.delete_namespaced_config_map(name, self._target_ns)
                except k8s.ApiException as err:
                    if err.status != 404:
                        raise
            return
        assert source is not None
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self._target_ns,
                "labels": {MIRRORED_FROM_LABEL: self._source_ns},
            },
            "data": source.get("data") or {},
            "binaryData": source.get("binaryData") or {},
        }
        if copy is None:
            log.info("creating copy %s/%s", self._target_ns, name)
            self._core.create_namespaced_config_map(self._target_ns, body)
        elif (copy.get("data") or {}, copy.get("binaryData") or {}) != (body["data"], body["binaryData"]):
            log.info("updating copy %s/%s", self._target_ns, name)
            body["metadata"]["resourceVersion"] = copy["metadata"]["resourceVersion"]  # 409 if stale
            self._core.replace_namespaced_config_map(name, self._target_ns, body)


def _get(lister: Any, name: str) -> Any:
    try:
        return lister.get(name)
    except NotFoundError:
        return None


def _labels(obj: Any) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def run_mirror(api_client: Any, source_ns: str, target_ns: str, stop: threading.Event | Context) -> None:
    """Mirror ConfigMaps from ``source_ns`` into ``target_ns`` until ``stop`` fires; blocks.

    Returns once every thread it started has ended.
    """
    ctx = as_context(stop)
    with InformerManager(api_client, 0, ctx) as manager:
        reconciler = MirrorReconciler(manager, k8s.CoreV1Api(api_client), source_ns, target_ns)
        controller = Controller(f"mirror-{source_ns}-{target_ns}", reconciler)
        manager.add_static_resource(CONFIGMAPS, MirrorEvents(controller, source_ns, target_ns))
        manager.start()
        if not manager.wait_for_cache_sync(SYNC_TIMEOUT):
            log.error("ConfigMaps did not sync within %.0fs", SYNC_TIMEOUT)
            return
        controller.run(ctx)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    config.load_kube_config()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())  # Ctrl-C stops cleanly
    with k8s.ApiClient() as api_client:
        run_mirror(api_client, argv[1], argv[2], stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
