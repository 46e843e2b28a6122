"""The connect subresources of Pods (``exec``, ``attach``, ``portforward``), answered as
kube-apiserver answers them before it would reach a kubelet.

The real server checks the Pod (404 when missing), then, for ``exec`` and ``attach``, the
container (``container=`` naming one of the Pod's, or the Pod having just one), then that the
Pod has a node; each failure is 400 with its own message. The fake server has no kubelet, so a
Pod that passes every check is answered as a real server answers when it cannot reach the
node's kubelet.
"""

from __future__ import annotations

from typing import Any

from kinformer.testing._apiserver import status

SUBRESOURCES = ("exec", "attach", "portforward")
METHODS = ("GET", "POST")


def _names(containers: Any) -> list[str]:
    return [str(c.get("name", "")) for c in containers or [] if isinstance(c, dict)]


def refuse(pod: dict[str, Any], subresource: str, query: dict[str, str],
           node_exists: bool) -> status.StatusError:
    """The error connecting to ``pod`` ends in (the fake server streams nothing)."""
    name = str(pod["metadata"].get("name", ""))
    spec: dict[str, Any] = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    if subresource != "portforward":
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
        elif container not in containers + _names(spec.get("initContainers")) \
                + _names(spec.get("ephemeralContainers")):
            return status.bad_request(f"container {container} is not valid for pod {name}")
    node = str(spec.get("nodeName") or "")
    if not node:
        return status.bad_request(f"pod {name} does not have a host assigned")
    if not node_exists:
        return status.StatusError(404, "NotFound", f'nodes "{node}" not found',
                                  {"name": node, "kind": "nodes"})
    return status.StatusError(500, "InternalError",
                              f"error dialing backend: no kubelet answers for node {node}")
