"""Find pods by the node they run on and by the object that owns them, through custom indexes.

An informer of pods keeps two indexes beside its cache: ``node`` (a pod's ``spec.nodeName``)
and ``owner`` (the uid of each of its ``ownerReferences``). :class:`PodIndex` answers the
questions a node agent or a controller asks, "which pods run on node-a?", "which pods does this
ReplicaSet own?", "which nodes run any pod?", from the cache, without a request and without
looking at every pod.

Run it as it is to see it against an embedded FakeAPIServer::

    python docs/examples/pods_by_node.py
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from kinformer import Context, GroupVersionResource, ListWatch, SharedIndexInformer
from kinformer.testing import FakeAPIServer

PODS = GroupVersionResource("", "v1", "pods")
NODE_INDEX = "node"
OWNER_INDEX = "owner"


def node_name(pod: dict[str, Any]) -> list[str]:
    """The ``node`` index: the node a pod is scheduled to; none while it is pending."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def owner_uids(pod: dict[str, Any]) -> list[str]:
    """The ``owner`` index: the uid of every object that owns the pod (one value per owner)."""
    references = (pod.get("metadata") or {}).get("ownerReferences") or []
    return [ref["uid"] for ref in references if ref.get("uid")]


def pods_informer(api_client: Any, namespace: str = "") -> SharedIndexInformer:
    """An informer of pods with the ``node`` and ``owner`` indexes."""
    return SharedIndexInformer(ListWatch.for_resource(api_client, PODS, namespace),
                               indexers={NODE_INDEX: node_name, OWNER_INDEX: owner_uids})


class PodIndex:
    """Questions about pods answered from an informer's indexes: no request, no full scan."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self._indexer = informer.get_indexer()

    def on_node(self, node: str) -> list[str]:
        """``namespace/name`` of the pods on ``node``, sorted."""
        return sorted(self._indexer.index_keys(NODE_INDEX, node))

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        """The pods whose ``ownerReferences`` name ``uid`` (the cached objects: read-only)."""
        return self._indexer.by_index(OWNER_INDEX, uid)

    def busy_nodes(self) -> list[str]:
        """Every node running at least one cached pod, sorted."""
        return sorted(self._indexer.list_index_func_values(NODE_INDEX))


def pod(name: str, node: str | None = None, owner_uid: str | None = None) -> dict[str, Any]:
    """A pod manifest, scheduled to ``node`` and owned by ``owner_uid`` when given."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner_uid:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "name": "web", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": metadata, "spec": spec}


def main() -> int:
    with FakeAPIServer() as server:
        for manifest in (pod("web-1", "node-a", "rs-1"), pod("web-2", "node-b", "rs-1"),
                         pod("db-1", "node-a"), pod("pending")):
            server.create(PODS, manifest)
        api_client = server.api_client()
        informer = pods_informer(api_client)
        ctx = Context("pods")
        thread = threading.Thread(target=informer.run, args=(ctx,), name="pods-informer")
        thread.start()
        try:
            if not informer.wait_for_sync(timeout=30):
                print(f"cache did not sync: {informer.last_error()}", file=sys.stderr)
                return 1
            pods = PodIndex(informer)
            print("on node-a:", pods.on_node("node-a"))
            print("owned by rs-1:", sorted(p["metadata"]["name"] for p in pods.owned_by("rs-1")))
            print("nodes running pods:", pods.busy_nodes())
            return 0
        finally:
            ctx.cancel()
            thread.join()
            api_client.close()


if __name__ == "__main__":
    sys.exit(main())
