"""A Widget controller that owns ConfigMaps: one cluster, every logical cluster, or a fleet.

A Widget (``example.com/v1``, namespaced) carries ``spec.message``; the controller keeps a
ConfigMap ``<widget>-message`` beside it holding that message, owned by the Widget (so the API
server's garbage collector deletes it with the Widget). A ConfigMap edited or deleted by hand is
put back: ``owns`` enqueues its owner. Reads come from the informers' caches and writes go to the
server through a :class:`~kinformer.CachedClient`, and the reconciler never needs to know which
cluster it works in beyond passing ``request.cluster`` along, so the same code runs over:

- the cluster of the kubeconfig's current context (or ``--context``)::

      python docs/examples/owner_controller.py --install-crd

- every logical cluster of a kcp-style server (``--all-logical-clusters``: one informer per
  resource across ``/clusters/*``);
- every context of the kubeconfig as a fleet of member clusters (``--all-contexts``).

``--install-crd`` creates the Widget CRD in the cluster, or in every member with
``--all-contexts``; over logical clusters each needs its own, created beforehand.

It runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes import config

from kinformer import (
    CachedClient,
    ConflictError,
    ControllerBuilder,
    DynamicSharedInformerFactory,
    GenerationChangedPredicate,
    GroupVersionResource,
    KubeconfigContextsProvider,
    MultiClusterInformerFactory,
    NotFoundError,
    Request,
    Result,
)

log = logging.getLogger("widgets")

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def widget_crd() -> dict[str, Any]:
    """The CustomResourceDefinition of Widgets."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS.group_resource},
        "spec": {
            "group": WIDGETS.group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": WIDGETS.version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }


class WidgetReconciler:
    """Makes ``<widget>-message`` hold the Widget's ``spec.message``, in the Widget's cluster."""

    def __init__(self, client: CachedClient) -> None:
        self.client = client

    def reconcile(self, request: Request) -> Result | None:
        try:
            widget = self.client.get(WIDGETS, request.name, request.namespace, cluster=request.cluster)
        except NotFoundError:
            return None  # deleted: the garbage collector removes what it owned
        name = f"{request.name}-message"
        want = {"message": str((widget.get("spec") or {}).get("message", ""))}
        try:
            child = self.client.get(CONFIGMAPS, name, request.namespace, cluster=request.cluster)
        except NotFoundError:
            owner = {"apiVersion": "example.com/v1", "kind": "Widget", "name": request.name,
                     "uid": widget["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
            log.info("creating %s/%s in cluster %r", request.namespace, name, request.cluster)
            try:
                self.client.create(CONFIGMAPS, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": request.namespace, "ownerReferences": [owner]},
                    "data": want}, cluster=request.cluster)
            except ConflictError:  # made meanwhile, and our cache has not seen it yet
                return Result(requeue_after=1.0)
            return None
        if child.get("data") != want:
            log.info("repairing %s/%s in cluster %r", request.namespace, name, request.cluster)
            self.client.patch(CONFIGMAPS, name, {"data": want}, request.namespace, cluster=request.cluster)
        return None


def install_crd(api_client: Any) -> None:
    """Create the Widget CRD in the cluster of ``api_client`` (there already: nothing to do)."""
    try:
        k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(widget_crd())
    except k8s.ApiException as err:
        if err.status != 409:
            raise


def source_for(args: argparse.Namespace) -> tuple[Any, Any]:
    """The informer source and the client for writes that the flags ask for."""
    if args.all_contexts:
        if args.install_crd:  # in every member
            contexts, _ = config.list_kube_config_contexts(config_file=args.kubeconfig)
            for context in contexts:
                member = config.new_client_from_config(config_file=args.kubeconfig, context=context["name"])
                with member:
                    install_crd(member)
        return MultiClusterInformerFactory(KubeconfigContextsProvider(args.kubeconfig)), None
    api_client = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
    if args.install_crd:
        install_crd(api_client)
    cluster = "*" if args.all_logical_clusters else None
    return DynamicSharedInformerFactory(api_client, cluster=cluster), api_client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--install-crd", action="store_true", help="create the Widget CRD first")
    parser.add_argument("--workers", type=int, default=2)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--all-logical-clusters", action="store_true", help="every logical cluster (kcp)")
    mode.add_argument("--all-contexts", action="store_true", help="every context, as member clusters")
    args = parser.parse_args(argv)
    if args.install_crd and args.all_logical_clusters:
        # a CRD is served in the logical cluster it was created in, and none is created in all
        parser.error("--install-crd with --all-logical-clusters: create the CRD in each logical "
                     "cluster first (a CRD serves only its own)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    source, api_client = source_for(args)
    controller = (ControllerBuilder("widgets", source)
                  .for_resource(WIDGETS, predicates=[GenerationChangedPredicate()], kind="Widget")
                  .owns(CONFIGMAPS)
                  .with_workers(args.workers)
                  .complete(WidgetReconciler(CachedClient(source, api_client))))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        controller.run(stop)  # blocks until Ctrl-C or SIGTERM
    finally:
        source.shutdown()
        if api_client is not None:
            api_client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
