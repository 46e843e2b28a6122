"""A controller that runs only while its CustomResourceDefinition is installed.

A Widget (``example.com/v1``, namespaced) carries ``spec.message``; the widget controller keeps a
ConfigMap ``widget-<name>`` beside each Widget with ``data.message`` equal to it, and deletes the
ConfigMap when the Widget goes.

Nothing here polls for the CRD. A :class:`~kinformer.DiscoveringDynamicSharedInformerFactory`
runs an informer for Widgets while the server serves them, and a
:class:`~kinformer.ControllerManager` starts the controller once that informer has synced,
stops it (cancels its context and joins its thread) when the CRD is deleted, and starts a fresh
one when the CRD is installed again. Run it against the cluster of your kubeconfig, then install
the CRD (``--install-crd`` does it for you)::

    python docs/examples/crd_controller.py [--install-crd]
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
    Context,
    Controller,
    ControllerManager,
    DiscoveringDynamicSharedInformerFactory,
    GenericLister,
    GroupVersionResource,
    ManagedController,
    NotFoundError,
    split_meta_namespace_key,
)
from kinformer.context import as_context

log = logging.getLogger("widgets")

WIDGETS = GroupVersionResource("example.com", "v1", "widgets")


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
            "versions": [
                {
                    "name": WIDGETS.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"message": {"type": "string"}}}
                            },
                        }
                    },
                }
            ],
        },
    }


def configmap_name(widget_name: str) -> str:
    return f"widget-{widget_name}"


class WidgetReconciler:
    """Makes the ConfigMap of one Widget (keyed ``namespace/name``) match it."""

    def __init__(self, widgets: GenericLister, core: k8s.CoreV1Api) -> None:
        self._widgets = widgets
        self._core = core

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cm_name = configmap_name(name)
        try:
            widget = self._widgets.by_namespace(namespace).get(name)
        except NotFoundError:
            try:
                self._core.delete_namespaced_config_map(cm_name, namespace)
                log.info("deleted %s/%s", namespace, cm_name)
            except k8s.ApiException as err:
                if err.status != 404:
                    raise
            return
        data = {"message": str((widget.get("spec") or {}).get("message", ""))}
        body = {"metadata": {"name": cm_name, "labels": {"example.com/widget": name}}, "data": data}
        try:
            current = self._core.read_namespaced_config_map(cm_name, namespace)
        except k8s.ApiException as err:
            if err.status != 404:
                raise
            self._core.create_namespaced_config_map(namespace, body)
            log.info("created %s/%s", namespace, cm_name)
            return
        if (current.data or {}) != data:
            self._core.patch_namespaced_config_map(cm_name, namespace, {"data": data})
            log.info("updated %s/%s", namespace, cm_name)


class WidgetOperator:
    """The discovering factory, the controller manager and the widget controller, wired together.

    :meth:`run` blocks until ``stop`` fires and returns once every thread it started ended.
    ``manager.running_controllers()`` says whether the widget controller runs right now.
    """

    def __init__(self, api_client: Any) -> None:
        self.core = k8s.CoreV1Api(api_client)
        self.factory = DiscoveringDynamicSharedInformerFactory(api_client, lambda gvr: gvr == WIDGETS)
        self.manager = ControllerManager(
            "widgets",
            self.factory.informer_source(),
            {"widgets": ManagedController({WIDGETS}, self._create_widget_controller)},
        )

    def _create_widget_controller(self, ctx: Context) -> Any:
        """Called by the manager once Widgets are served and synced: a fresh controller each time."""
        widgets = self.factory.for_resource(WIDGETS)
        controller = Controller("widgets", WidgetReconciler(widgets.lister(), self.core))
        registration = widgets.informer().add_event_handler(controller.event_handler())

        def start(run_ctx: Context) -> None:
            try:
                controller.run(run_ctx)
            finally:
                widgets.informer().remove_event_handler(registration)

        return start

    def run(self, stop: threading.Event | Context) -> None:
        ctx = as_context(stop)
        self.factory.start(ctx)
        try:
            self.manager.start(ctx)
        finally:
            self.factory.stop()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    config.load_kube_config()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())  # Ctrl-C stops cleanly
    with k8s.ApiClient() as api_client:
        if "--install-crd" in argv:
            k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition(widget_crd())
        WidgetOperator(api_client).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
