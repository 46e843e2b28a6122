"""Copy a ConfigMap from a hub cluster into every member cluster, and keep each copy as the hub says.

The hub holds the source ConfigMap (``fleet-system/fleet-settings`` by default) and one
kubeconfig Secret per member cluster, labelled
``sigs.k8s.io/multicluster-runtime-kubeconfig=true`` with the kubeconfig under ``kubeconfig``:
multicluster-runtime's kubeconfig provider reads the same Secrets, so a hub built for it works
unchanged. Every member gets a copy (in ``default``, labelled ``kinformer.io/copied-from-hub``)
with the source's ``data`` and ``binaryData``. A copy edited or deleted in a member is put back;
a member that joins (its Secret created) gets its copy as soon as it is engaged; a change of
the source reaches every member; when the source is deleted, so are the copies. A member that
leaves (its Secret deleted) is no longer touched.

The shape is client-go's, across clusters: a hub informer watches the source, a
:class:`~kinformer.MultiClusterInformerFactory` over a
:class:`~kinformer.KubeconfigSecretProvider` watches the copies in every member, and both feed
member names into one work queue; a :class:`~kinformer.Controller` reconciles each member
against the caches and writes through that member's own client. The provider is wrapped
(:class:`RememberClients`) so the controller knows each member's client and hears of every
engage, which is also how a new member without a copy gets one.

Run it as it is to watch it work in one process, against embedded servers (a hub and three
members, then a fourth that joins)::

    python docs/examples/fleet_controller.py

Or against a real hub, from a kubeconfig and one of its contexts (``kinformer demo --clusters``
and ``kinformer serve`` make such hubs), until Ctrl-C or SIGTERM::

    python docs/examples/fleet_controller.py --kubeconfig ~/.kube/config --hub-context hub
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import signal
import sys
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kinformer import (
    ClusterEventHandler,
    Context,
    Controller,
    GroupVersionResource,
    KubeconfigSecretProvider,
    ListOptions,
    ListWatch,
    MultiClusterInformerFactory,
    NotFoundError,
    Result,
    SharedIndexInformer,
)
from kinformer.context import as_context
from kinformer.testing import FakeAPIServer, wait_for

log = logging.getLogger("fleet")

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
SECRETS = GroupVersionResource("", "v1", "secrets")
COPY_LABEL = "kinformer.io/copied-from-hub"
KUBECONFIG_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
NOT_SYNCED_YET = Result(requeue_after=0.2)  # a member just engaged: look again once it listed
SYNC_TIMEOUT = 60.0  # seconds to wait for the hub's first list before giving up


class RememberClients:
    """A cluster provider around another: the same clusters, and each engaged member's client
    remembered for the controller, which hears of every engage (``on_engage(name)``)."""

    def __init__(self, provider: Any, on_engage: Any) -> None:
        self._provider = provider
        self._on_engage = on_engage
        self._lock = threading.Lock()  # guards _clients
        self._clients: dict[str, Any] = {}

    def run(self, stop: Context, engage: Any, disengage: Any) -> None:
        def engaged(name: str, api_client: Any) -> None:
            engage(name, api_client)
            with self._lock:
                self._clients[name] = api_client
            self._on_engage(name)

        def disengaged(name: str) -> None:
            with self._lock:
                self._clients.pop(name, None)
            disengage(name)

        self._provider.run(stop, engaged, disengaged)

    def has_synced(self) -> bool:
        return bool(self._provider.has_synced())

    def client(self, name: str) -> Any:
        """The member's client while it is engaged, else None."""
        with self._lock:
            return self._clients.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._clients)

    def __repr__(self) -> str:
        return f"<RememberClients {self._provider!r}>"


class CopyEvents(ClusterEventHandler):
    """Any change to a member's copy asks for that member to be reconciled."""

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def on_add(self, cluster: str, obj: Any) -> None:
        self._controller.enqueue(cluster)

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        self._controller.enqueue(cluster)

    def on_delete(self, cluster: str, obj: Any) -> None:
        self._controller.enqueue(cluster)

    def on_disengaged(self, cluster: str) -> None:
        log.info("member %s left the fleet; its copy is no longer kept", cluster)


class SourceEvents:
    """Any change to the hub's source asks for every engaged member to be reconciled."""

    def __init__(self, controller: Controller, members: RememberClients) -> None:
        self._controller = controller
        self._members = members

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._all()

    def on_update(self, old: Any, new: Any) -> None:
        self._all()

    def on_delete(self, obj: Any) -> None:
        self._all()

    def _all(self) -> None:
        for name in self._members.names():
            self._controller.enqueue(name)


class CopyReconciler:
    """Makes one member's copy (keyed by the member's name) match the hub's source."""

    def __init__(self, source: SharedIndexInformer, copies: Any, members: RememberClients,
                 name: str, target_namespace: str) -> None:
        self._source = source
        self._copies = copies
        self._members = members
        self._name = name
        self._target_namespace = target_namespace

    def reconcile(self, cluster: str) -> Result | None:
        api_client = self._members.client(cluster)
        informer = self._copies.informer_for(cluster)
        if api_client is None or informer is None:
            return None  # left the fleet
        if not informer.has_synced():
            return NOT_SYNCED_YET  # without its cache we cannot tell a missing copy from a late one
        source = next(iter(self._source.get_indexer().list()), None)
        try:
            copy = self._copies.lister().cluster(cluster).by_namespace(self._target_namespace).get(self._name)
        except NotFoundError:
            copy = None
        core = k8s.CoreV1Api(api_client)
        if copy is not None and (copy["metadata"].get("labels") or {}).get(COPY_LABEL) != "true":
            log.error("%s: %s/%s is not a copy; leaving it alone", cluster, self._target_namespace,
                      self._name)
            return None
        if source is None:
            if copy is not None:
                log.info("%s: deleting the copy, its source is gone", cluster)
                _ignore_404(core.delete_namespaced_config_map, self._name, self._target_namespace)
            return None
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self._name, "namespace": self._target_namespace,
                             "labels": {COPY_LABEL: "true"}},
                "data": source.get("data") or {}, "binaryData": source.get("binaryData") or {}}
        if copy is None:
            log.info("%s: creating the copy", cluster)
            core.create_namespaced_config_map(self._target_namespace, body)
        elif (copy.get("data") or {}, copy.get("binaryData") or {}) != (body["data"], body["binaryData"]):
            log.info("%s: updating the copy to match the hub's", cluster)
            body["metadata"]["resourceVersion"] = copy["metadata"]["resourceVersion"]  # 409 if stale
            core.replace_namespaced_config_map(self._name, self._target_namespace, body)
        return None


def _ignore_404(call: Any, *args: Any) -> None:
    try:
        call(*args)
    except k8s.ApiException as err:
        if err.status != 404:
            raise


def run_fleet_controller(hub_client: Any, stop: threading.Event | Context, *,
                         namespace: str = "fleet-system", name: str = "fleet-settings",
                         secrets_namespace: str = "fleet-system",
                         target_namespace: str = "default") -> None:
    """Keep a copy of the hub's ``namespace/name`` ConfigMap in ``target_namespace`` of every
    member cluster the hub's kubeconfig Secrets (in ``secrets_namespace``) name, until ``stop``
    fires. Blocks; returns once every thread it started has ended."""
    ctx = as_context(stop).child()  # cancelled with stop, or on the way out of an error
    controller: Controller  # made below; engages begin with factory.start, once it exists
    members = RememberClients(KubeconfigSecretProvider(hub_client, secrets_namespace),
                              on_engage=lambda member: controller.enqueue(member))

    def only_the_copy(options: ListOptions) -> None:
        options.field_selector = f"metadata.name={name}"

    factory = MultiClusterInformerFactory(members, namespace=target_namespace,
                                          tweak_list_options=only_the_copy)
    copies = factory.for_resource(CONFIGMAPS)
    source = SharedIndexInformer(ListWatch.for_resource(
        hub_client, CONFIGMAPS, namespace, field_selector=f"metadata.name={name}"), name="fleet-source")
    controller = Controller("fleet-copy", CopyReconciler(source, copies, members, name, target_namespace))
    copies.add_event_handler(CopyEvents(controller))
    source.add_event_handler(SourceEvents(controller, members))
    source_thread = threading.Thread(target=source.run, args=(ctx,), name="fleet-source")
    source_thread.start()
    try:
        if not source.wait_for_sync(timeout=SYNC_TIMEOUT, stop=ctx):
            log.error("the hub's ConfigMaps did not sync within %.0fs", SYNC_TIMEOUT)
            return
        factory.start(ctx)  # engages every member; each engage queues it
        controller.run(ctx)
    finally:
        ctx.cancel()
        factory.shutdown()
        source_thread.join()


# -- running it ------------------------------------------------------------------------------------


def kubeconfig_secret(member: str, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    """The hub's Secret naming ``member`` and holding its kubeconfig."""
    document = base64.b64encode(json.dumps(kubeconfig).encode()).decode()
    return {"metadata": {"name": member, "namespace": "fleet-system", "labels": {KUBECONFIG_LABEL: "true"}},
            "data": {"kubeconfig": document}}


def copy_in(member: FakeAPIServer, name: str = "fleet-settings") -> dict[str, str] | None:
    """The data of ``member``'s copy, or None when it has none."""
    try:
        return dict(member.get(CONFIGMAPS, "default", name).get("data") or {})
    except NotFoundError:
        return None


def run_demo() -> int:
    """A hub and three members, then a fourth, as embedded servers; 0 when every step worked."""
    logging.basicConfig(level=logging.INFO, format="%(threadName)s %(message)s")
    names = ("hub", "member-1", "member-2", "member-3", "member-4")
    servers = {name: FakeAPIServer().start() for name in names}
    hub = servers["hub"]
    members = {name: server for name, server in servers.items() if name != "hub"}
    hub.create(GroupVersionResource("", "v1", "namespaces"), {"metadata": {"name": "fleet-system"}})
    hub.create(CONFIGMAPS, {"metadata": {"name": "fleet-settings", "namespace": "fleet-system"},
                            "data": {"logLevel": "info"}})
    for member in ("member-1", "member-2", "member-3"):
        hub.create(SECRETS, kubeconfig_secret(member, members[member].kubeconfig()))
    hub_client = hub.api_client()
    stop = Context("fleet-demo")
    thread = threading.Thread(target=run_fleet_controller, args=(hub_client, stop), name="fleet-controller")
    thread.start()

    def step(what: str, done: Any) -> bool:
        ok = wait_for(done, 30)
        print(f"{'ok' if ok else 'FAILED'}: {what}")
        return ok

    try:
        steps = [
            ("every member got its copy", lambda: all(copy_in(members[m]) == {"logLevel": "info"}
                                                      for m in ("member-1", "member-2", "member-3")))]
        if not step(*steps[0]):
            return 1
        edited = members["member-2"].get(CONFIGMAPS, "default", "fleet-settings")
        edited["data"] = {"logLevel": "debug"}
        members["member-2"].update(CONFIGMAPS, edited)
        if not step("member-2's edited copy was put back",
                    lambda: copy_in(members["member-2"]) == {"logLevel": "info"}):
            return 1
        members["member-3"].delete(CONFIGMAPS, "default", "fleet-settings")
        if not step("member-3's deleted copy was put back",
                    lambda: copy_in(members["member-3"]) == {"logLevel": "info"}):
            return 1
        hub.create(SECRETS, kubeconfig_secret("member-4", members["member-4"].kubeconfig()))
        if not step("member-4 joined and got its copy",
                    lambda: copy_in(members["member-4"]) == {"logLevel": "info"}):
            return 1
        source = hub.get(CONFIGMAPS, "fleet-system", "fleet-settings")
        source["data"] = {"logLevel": "warn"}
        hub.update(CONFIGMAPS, source)
        if not step("the hub's change reached every member",
                    lambda: all(copy_in(m) == {"logLevel": "warn"} for m in members.values())):
            return 1
        return 0
    finally:
        stop.cancel()
        thread.join()
        hub_client.close()
        for server in servers.values():
            server.stop()


def run_process(kubeconfig: str | None, hub_context: str | None, args: argparse.Namespace) -> int:
    """Run against the hub of ``kubeconfig``'s ``hub_context`` until SIGTERM or SIGINT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    stop = Context("fleet-controller")
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.cancel())
    hub_client = k8s_config.new_client_from_config(config_file=kubeconfig, context=hub_context)
    try:
        run_fleet_controller(hub_client, stop, namespace=args.namespace, name=args.name,
                             secrets_namespace=args.secrets_namespace,
                             target_namespace=args.target_namespace)
    finally:
        hub_client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The in-process demo with no arguments; a controller for a real hub with ``--kubeconfig``
    or ``--hub-context``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", metavar="PATH", help="the kubeconfig holding the hub's context")
    parser.add_argument("--hub-context", metavar="NAME", help="the hub's context (default: the current one)")
    parser.add_argument("--namespace", default="fleet-system", help="the source ConfigMap's namespace")
    parser.add_argument("--name", default="fleet-settings", help="the source ConfigMap's name")
    parser.add_argument("--secrets-namespace", default="fleet-system",
                        help="where the hub keeps the members' kubeconfig Secrets")
    parser.add_argument("--target-namespace", default="default", help="where each member gets its copy")
    args = parser.parse_args(argv or [])
    if args.kubeconfig is None and args.hub_context is None:
        return run_demo()
    return run_process(args.kubeconfig, args.hub_context, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
