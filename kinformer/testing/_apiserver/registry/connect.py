"""The subresources of Pods that reach a kubelet (``exec``, ``attach``, ``portforward`` and
``log``), answered as kube-apiserver answers them before it would reach one.

The real server checks the Pod (404 when missing), then, for ``exec``, ``attach`` and ``log``,
the container (``container=`` naming one of the Pod's, or the Pod having just one), then that
the Pod has a node; each failure is 400 with its own message, except that ``log`` of a Pod with
no node is 204 with no body (nothing has run, so there is nothing to print). The fake server
has no kubelet, so a Pod that passes every check is answered as a real server answers when it
cannot reach the node's kubelet.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver import status

SUBRESOURCES = ("exec", "attach", "portforward")
METHODS = ("GET", "POST")
LOG = "log"
KUBELET_PORT = 10250


def _names(containers: Any) -> list[str]:
    return [str(c.get("name", "")) for c in containers or [] if isinstance(c, dict)]


def _container(name: str, spec: dict[str, Any], query: dict[str, str]) -> str | status.StatusError:
    """The container a request names (or the Pod's only one), or the 400 refusing it."""
    container = query.get("container", "")
    containers = _names(spec.get("containers"))
    if not container:
        if not containers:
            return status.bad_request(f"a container name must be specified for pod {name}")
        if len(containers) > 1:
            message = (f"a container name must be specified for pod {name}, choose one of: "
                       f"[{' '.join(containers)}]")
            init = _names(spec.get("initContainers"))
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
            return status.bad_request(message)
        return containers[0]
    if container not in containers + _names(spec.get("initContainers")) \
            + _names(spec.get("ephemeralContainers")):
        return status.bad_request(f"container {container} is not valid for pod {name}")
    return container


def log_answer(pod: dict[str, Any], query: dict[str, str],
               node: dict[str, Any] | None) -> status.StatusError | None:
    """The error reading ``pod``'s log ends in, or None for the empty answer (no node yet).

    ``node`` is the Node the Pod runs on, None when it has none or that Node does not exist.
    With a node, the real server would dial its kubelet: the fake one has none, so the answer
    is the 500 of a refused connection to the Node's first InternalIP (or its name), as
    kube-apiserver words it; a Node that does not exist is 404.
    """
    name = str(pod["metadata"].get("name", ""))
    namespace = str(pod["metadata"].get("namespace", ""))
    spec: dict[str, Any] = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    container = _container(name, spec, query)
    if isinstance(container, status.StatusError):
        return container
    node_name = str(spec.get("nodeName") or "")
    if not node_name:
        return None
    if node is None:
        return status.StatusError(404, "NotFound", f'nodes "{node_name}" not found',
                                  {"name": node_name, "kind": "nodes"})
    addresses = (node.get("status") or {}).get("addresses") or []
    host = next((str(a.get("address")) for a in addresses if isinstance(a, dict)
                 and a.get("type") == "InternalIP" and a.get("address")), node_name)
    url = f"https://{host}:{KUBELET_PORT}/containerLogs/{namespace}/{name}/{container}"
    return status.StatusError(500, "", f'Get "{url}": dial tcp {host}:{KUBELET_PORT}: '
                              "connect: connection refused")


def refuse(pod: dict[str, Any], subresource: str, query: dict[str, str],
           node_exists: bool) -> status.StatusError:
    """The error connecting to ``pod`` ends in (the fake server streams nothing)."""
    name = str(pod["metadata"].get("name", ""))
    spec: dict[str, Any] = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    if subresource != "portforward":
        container = _container(name, spec, query)
        if isinstance(container, status.StatusError):
            return container
    node = str(spec.get("nodeName") or "")
    if not node:
        return status.bad_request(f"pod {name} does not have a host assigned")
    if not node_exists:
        return status.StatusError(404, "NotFound", f'nodes "{node}" not found',
                                  {"name": node, "kind": "nodes"})
    return status.StatusError(500, "InternalError",
                              f"error dialing backend: no kubelet answers for node {node}")
