"""CustomResourceDefinitions as the discovering factory reads them.

:data:`CRD_GVR` is the CRD resource type; :func:`served_resources` says which resource types a
set of CRDs makes the server serve (established, not being deleted, per served version); and
:class:`CRDChangeHandler` is the informer handler that turns a CRD change into a callback. The
one user is :class:`~kinformer.DiscoveringDynamicSharedInformerFactory`
(``managers/discovering_factory.py``), which, like kcp's ddsif, watches CRDs to learn of new
resource types within about a second instead of at its next discovery poll.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kinformer import handlers, meta
from kinformer.gvr import GroupVersionResource

CRD_GVR = GroupVersionResource("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class CRDChangeHandler:
    """An informer handler calling ``on_change(crd)`` for each CRD change that can change discovery.

    Adds and deletes always count (a delete passes the last known object, unwrapped from a
    tombstone); an update counts only when ``spec`` or ``status`` changed, so metadata-only updates
    are ignored. ``on_change`` runs on the informer's handler thread.
    """

    __slots__ = ("_on_change",)

    def __init__(self, on_change: Callable[[Any], object]) -> None:
        self._on_change = on_change

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._on_change(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        if old.get("spec") != new.get("spec") or old.get("status") != new.get("status"):
            self._on_change(new)

    def on_delete(self, obj: Any) -> None:
        self._on_change(handlers.deleted_object(obj))


def served_resources(crds: Iterable[Mapping[str, Any]]) -> set[GroupVersionResource]:
    """The resource types that established CRDs not being deleted serve, one per served version."""
    expected: set[GroupVersionResource] = set()
    for obj in crds:
        if _established(obj) and not (meta.metadata(obj) or {}).get("deletionTimestamp"):
            expected.update(_served_gvrs(obj))
    return expected


def _established(crd: Mapping[str, Any]) -> bool:
    for cond in (crd.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established":
            return bool(cond.get("status") == "True")
    return False


def _served_gvrs(crd: Mapping[str, Any]) -> Iterable[GroupVersionResource]:
    spec = crd.get("spec") or {}
    group = spec.get("group", "")
    plural = (spec.get("names") or {}).get("plural", "")
    for version in spec.get("versions") or []:
        if version.get("served", True):
            yield GroupVersionResource(group, version.get("name", ""), plural)
