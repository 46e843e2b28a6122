"""What the ``kinformer demo`` runs against its workload: handlers, example controllers, HTTP.

:class:`CountingHandler` counts the events of the InformerManager's informers;
:class:`AuditReconciler` and :class:`WidgetReconciler` are the two example controllers the
ControllerManager runs; and :class:`RawAPI` writes JSON for them over the request path
(:mod:`kinformer.client.rest`). :mod:`kinformer.cli.demo.app` wires them together.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kinformer import _json, errors
from kinformer.cache.lister import GenericLister
from kinformer.cache.store import split_meta_namespace_key
from kinformer.cli.demo import workload
from kinformer.client import rest

AUDIT = "configmap-audit"
WIDGET_CONTROLLER = "widget-configmaps"


class CountingHandler:
    """Counts the events of one informer by kind; runs on that informer's handler thread."""

    def __init__(self, stats: workload.Stats) -> None:
        self._stats = stats

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._stats.event("initial" if is_in_initial_list else "added")

    def on_update(self, old: Any, new: Any) -> None:
        self._stats.event("updated")

    def on_delete(self, obj: Any) -> None:
        self._stats.event("deleted")


class AuditReconciler:
    """Reads every changed ConfigMap back from the cache (what a real check would start from)."""

    def __init__(self, configmaps: GenericLister, stats: workload.Stats) -> None:
        self._configmaps = configmaps
        self._stats = stats

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        with contextlib.suppress(errors.NotFoundError):  # deleted since: nothing to audit
            self._configmaps.by_namespace(namespace).get(name)
        self._stats.reconciled(AUDIT)


class RawAPI:
    """JSON requests over the request path, without the official client's typed API classes.

    The typed classes take seconds to import; the demo needs four verbs. Thread-safe.
    Raises :class:`~kinformer.APIError` subclasses for error statuses, except the ones in ``ok``,
    which are returned with the Status body.
    """

    TIMEOUT = (5.0, 30.0)  # (connect, read) seconds: the embedded server answers at once

    def __init__(self, client: rest.Client) -> None:
        self._rest = client

    def request(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (),
                content_type: str = rest.ACCEPT_JSON) -> tuple[int, Any]:
        try:
            response = self._rest.request(method, path, body=body, content_type=content_type,
                                          timeout=self.TIMEOUT)
        except errors.APIError as err:
            if err.status in ok:
                return err.status, err.body
            raise
        data = response.read()
        return response.status, (_json.loads(data) if data else None)


class WidgetReconciler:
    """Keeps a ConfigMap ``widget-<name>`` beside each Widget with ``data.message`` equal to its spec."""

    def __init__(self, widgets: GenericLister, api: RawAPI, stats: workload.Stats) -> None:
        self._widgets = widgets
        self._api = api
        self._stats = stats

    def reconcile(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        collection = rest.resource_path(workload.CONFIGMAPS, namespace)
        path = f"{collection}/widget-{name}"
        self._stats.reconciled(WIDGET_CONTROLLER)
        try:
            widget = self._widgets.by_namespace(namespace).get(name)
        except errors.NotFoundError:
            self._api.request("DELETE", path, ok=(404,))
            return
        data = {"message": str((widget.get("spec") or {}).get("message", ""))}
        status, current = self._api.request("GET", path, ok=(404,))
        if status == 404:
            self._api.request("POST", collection, {
                "metadata": {"name": f"widget-{name}", "labels": {"demo.kinformer.io/widget": name}},
                "data": data}, ok=(409,))
        elif (current.get("data") or {}) != data:
            self._api.request("PATCH", path, {"data": data}, content_type="application/merge-patch+json")
