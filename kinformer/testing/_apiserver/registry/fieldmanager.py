"""``metadata.managedFields`` of the fake API server: who set which field, as kube-apiserver
records it on every write made through the API.

Each write names a :class:`Writer`: the field manager (the ``fieldManager`` query parameter, else
the User-Agent up to its first ``/``) and the operation (``Update``, or ``Apply`` for server-side
apply). An Update owns what it added or changed compared with the object before it (for a
create, an empty object of the type); an Apply owns the fields of the applied configuration.
Another manager that owned a changed field loses it; a manager's entry is updated in place by its
later writes, and dropped when it owns nothing. Fields are FieldsV1 paths (``f:name``,
``k:{"name":"web"}`` for an item of a list keyed by merge keys, ``v:"x"`` for a set's element),
serialized as nested objects where ``"."`` marks a path owned itself and not only through its
children.

The walk knows just enough of the built-in types' schemas: which lists are keyed (and by what),
which are sets, which nested objects are plain structs (present in an empty object, so owning a
field inside them does not own them) and which are atomic label selectors. Custom objects have
no such structs: every object field is owned where it is set, as for CRDs on a real server.
Called by :class:`~kinformer.testing._apiserver.storage.storage.Storage` under its lock; pure
functions of their arguments otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType

UPDATE = "Update"
APPLY = "Apply"
MAX_MANAGER_LENGTH = 128  # the real server's limit on a fieldManager name

Path = tuple[str, ...]

# keyed lists of the built-in types: field name -> the merge keys of its items
_KEYED: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "env": ("name",), "volumes": ("name",), "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",), "imagePullSecrets": ("name",), "hostAliases": ("ip",),
    "conditions": ("type",), "ownerReferences": ("uid",), "readinessGates": ("conditionType",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
_CONTAINER_PORT_KEYS = ("containerPort", "protocol")
_SERVICE_PORT_KEYS = ("port", "protocol")
_SETS = frozenset({("f:metadata", "f:finalizers")})
# struct (not pointer) fields: an empty object of the type already has them
_STRUCTS = frozenset({"metadata", "spec", "status", "template", "strategy", "updateStrategy",
                      "resources", "jobTemplate", "loadBalancer", "roleRef", "involvedObject",
                      "source"})
_ALWAYS_PRESENT_LISTS = frozenset({"containers"})  # a list an empty PodSpec has (as null)
_ATOMIC_SELECTORS = frozenset({"selector", "labelSelector", "namespaceSelector"})
# never owned: what the server sets, and the identity of the object
_STRIPPED = frozenset({
    ("f:apiVersion",), ("f:kind",), ("f:metadata",),
    *(("f:metadata", f"f:{name}") for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")),
})
_MISSING = object()


@dataclass(frozen=True)
class Writer:
    """Who makes a write through the API: its field manager and the operation."""

    manager: str
    operation: str = UPDATE
    applied: dict[str, Any] | None = None  # the applied configuration of an Apply

    @classmethod
    def of_request(cls, field_manager: str, user_agent: str) -> Writer:
        """The writer of a request: ``fieldManager``, else the User-Agent up to its first ``/``
        (``python-urllib3/2.2`` is ``python-urllib3``); 400 for a name over 128 characters."""
        if len(field_manager) > MAX_MANAGER_LENGTH:
            raise status.bad_request(
                f"fieldManager: Too long: must have at most {MAX_MANAGER_LENGTH} bytes")
        return cls(field_manager or user_agent.split("/", 1)[0])


# ---- paths of an object ----------------------------------------------------------------------


def _keys_of(path: Path, field: str, item: Any) -> tuple[str, ...] | None:
    if field == "ports" and isinstance(item, dict):
        return _CONTAINER_PORT_KEYS if "containerPort" in item else _SERVICE_PORT_KEYS
    return _KEYED.get(field)


def _item_element(keys: tuple[str, ...], item: Any) -> str | None:
    """``k:{...}`` naming a keyed list's item (its key fields, sorted), or None without them."""
    if not isinstance(item, dict) or not all(k in item for k in keys):
        return None
    return "k:" + json.dumps({k: item[k] for k in sorted(keys)}, separators=(",", ":"),
                             ensure_ascii=False)


def _list_elements(path: Path, field: str, items: list[Any]) -> dict[str, Any] | None:
    """The items of a keyed list or set by their path elements; None for an atomic list."""
    if path in _SETS:
        return {"v:" + json.dumps(v, separators=(",", ":"), ensure_ascii=False): None
                for v in items}
    keys = _keys_of(path, field, items[0] if items else None)
    if keys is None:
        return None
    elements: dict[str, Any] = {}
    for item in items:
        element = _item_element(keys, item)
        if element is None:
            return None  # an item without its keys: the list counts as one value
        elements[element] = item
    return elements


def _atomic(field: str, value: Any) -> bool:
    return field in _ATOMIC_SELECTORS and isinstance(value, dict) and (
        "matchLabels" in value or "matchExpressions" in value)


def _own(value: Any, path: Path, out: set[Path], typed: bool) -> None:
    """Own ``path`` (set to ``value``) and everything inside it."""
    out.add(path)
    if value is None:
        return
    field = path[-1][2:] if path else ""
    if isinstance(value, dict) and not (typed and _atomic(field, value)):
        for key, child in value.items():
            _own(child, (*path, f"f:{key}"), out, typed)
    elif isinstance(value, list) and typed:
        elements = _list_elements(path, field, value)
        for element, item in (elements or {}).items():
            _own(item, (*path, element), out, typed)


def _diff(old: Any, new: Any, path: Path, typed: bool, empty: bool,
          changed: set[Path], removed: set[Path]) -> None:
    """Collect what going from ``old`` to ``new`` at ``path`` added or changed, and removed.

    ``empty``: ``old`` is an empty object of the type, in which struct fields are present.
    """
    field = path[-1][2:] if path else ""
    if new is _MISSING or (new is None and empty):
        if old is not _MISSING:
            _own(old, path, removed, typed)
        return
    if old is _MISSING and empty and typed and isinstance(new, dict) and field in _STRUCTS:
        old = {}
    elif old is _MISSING and empty and typed and isinstance(new, list) \
            and field in _ALWAYS_PRESENT_LISTS:
        old = []
    if old is _MISSING:
        _own(new, path, changed, typed)
        return
    if isinstance(new, dict) and isinstance(old, dict) and not (typed and _atomic(field, new)):
        for key, child in new.items():
            _diff(old.get(key, _MISSING), child, (*path, f"f:{key}"), typed, empty,
                  changed, removed)
        for key, child in old.items():
            if key not in new:
                _own(child, (*path, f"f:{key}"), removed, typed)
        return
    if isinstance(new, list) and isinstance(old, list) and typed:
        new_items = _list_elements(path, field, new)
        old_items = _list_elements(path, field, old) if new_items is not None else None
        if new_items is not None and old_items is not None:
            for element, item in new_items.items():
                before = old_items.get(element, _MISSING)
                if item is None:
                    if before is _MISSING:
                        changed.add((*path, element))
                else:
                    _diff(before, item, (*path, element), typed, empty, changed, removed)
            for element, item in old_items.items():
                if element not in new_items:
                    _own(item, (*path, element), removed, typed)
            return
    if new != old:
        _own(new, path, changed, typed)


def _applied(value: Any, path: Path, out: set[Path], typed: bool) -> None:
    """The fields of an applied configuration: leaves, empty objects and list items."""
    field = path[-1][2:] if path else ""
    if isinstance(value, dict) and value and not (typed and _atomic(field, value)):
        for key, child in value.items():
            _applied(child, (*path, f"f:{key}"), out, typed)
        return
    if isinstance(value, list) and value and typed:
        elements = _list_elements(path, field, value)
        if elements is not None:
            for element, item in elements.items():
                out.add((*path, element))
                if isinstance(item, dict):
                    for key, child in item.items():
                        _applied(child, (*path, element, f"f:{key}"), out, typed)
            return
    out.add(path)


def _strip(paths: set[Path], rt: ResourceType, subresource: str) -> set[Path]:
    """Without the server-owned fields, and limited to what the (sub)resource may change."""
    kept = {p for p in paths if p and p not in _STRIPPED}
    if subresource == "status":
        return {p for p in kept if p[0] == "f:status"}
    if rt.status:  # the main resource resets status: nobody owns it through it
        return {p for p in kept if p[0] != "f:status"}
    return kept


# ---- FieldsV1 --------------------------------------------------------------------------------


def _element_order(element: str) -> tuple[int, str]:
    return ({".": 0, "f": 1, "k": 2, "v": 3}.get(element[0], 4), element)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The FieldsV1 object of a set of paths (keys sorted as the real server writes them)."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}

    def emit(node: dict[str, Any]) -> dict[str, Any]:
        children = {k: v for k, v in node.items() if k != "."}
        if not children:
            return {}
        out: dict[str, Any] = {".": {}} if "." in node else {}
        for key in sorted(children, key=_element_order):
            out[key] = emit(children[key])
        return out

    return {key: emit(tree[key]) for key in sorted(tree, key=_element_order)}


def from_fields_v1(fields: Any, path: Path = ()) -> set[Path]:
    """The paths of a FieldsV1 object (an unreadable one holds none)."""
    paths: set[Path] = set()
    if not isinstance(fields, dict):
        return paths
    if path and (not fields or "." in fields):
        paths.add(path)
    for key, child in fields.items():
        if key != ".":
            paths |= from_fields_v1(child, (*path, str(key)))
    return paths


# ---- entries ---------------------------------------------------------------------------------


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    subresource: str
    paths: set[Path]

    def identity(self) -> tuple[str, str, str, str]:
        # an Apply is the same manager whatever version it applied (as the real server keys it)
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.manager:
            out["manager"] = self.manager
        out["operation"] = self.operation
        out["apiVersion"] = self.api_version
        out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = to_fields_v1(self.paths)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _time(value: Any) -> str:
    """A managedFields time as the server writes it (clients may send ``+00:00`` offsets)."""
    text = str(value or "")
    if text.endswith("Z"):
        text = text[:19] + "+00:00"  # Python 3.10 reads neither Z nor every fraction
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _decode(entries: Any) -> list[_Entry]:
    decoded = []
    for raw in entries if isinstance(entries, list) else ():
        if not isinstance(raw, dict):
            continue
        decoded.append(_Entry(str(raw.get("manager") or ""), str(raw.get("operation") or UPDATE),
                              str(raw.get("apiVersion") or ""), _time(raw.get("time")),
                              str(raw.get("subresource") or ""),
                              from_fields_v1(raw.get("fieldsV1"))))
    return decoded


def _sort_key(entry: _Entry) -> tuple[str, str, str, str, str]:
    # the real server's order: Apply before Update, then oldest first, then by name
    return (entry.operation, entry.time, entry.manager, entry.api_version, entry.subresource)


def record(
    rt: ResourceType, writer: Writer | None, old: dict[str, Any] | None, new: dict[str, Any],
    subresource: str, now: str,
) -> None:
    """Set ``new``'s ``metadata.managedFields`` for a write of ``old`` (None: a create) by
    ``writer`` (None: the server itself, which records nothing and keeps what was there).

    The base is the managedFields ``new`` carries when it holds entries (clients may rewrite
    them), else ``old``'s; an explicit empty list starts afresh.
    """
    meta = new["metadata"]
    given = meta.get("managedFields")
    before = (old or {}).get("metadata", {}).get("managedFields")
    if writer is None:
        if old is not None and not given and given != [] and before:
            meta["managedFields"] = before
        return
    entries = _decode(given if given or given == [] else before)
    typed = not rt.custom
    if writer.operation == APPLY and writer.applied is not None:
        owned: set[Path] = set()
        _applied(writer.applied, (), owned, typed)
        owned = _strip(owned, rt, subresource)
        changed: set[Path] = set()
        removed: set[Path] = set()
        if old is not None:
            _diff(old, new, (), typed, False, changed, removed)
        taken = _strip(changed | removed, rt, subresource)
    else:
        changed = set()
        removed = set()
        if old is None:
            _diff(_MISSING if rt.custom else {}, new, (), typed, True, changed, removed)
        else:
            _diff(old, new, (), typed, False, changed, removed)
        owned = _strip(changed, rt, subresource)
        taken = owned | _strip(removed, rt, subresource)
    mine = _Entry(writer.manager, writer.operation, rt.api_version, now, subresource, owned)
    kept: list[_Entry] = []
    for entry in entries:
        if entry.identity() == mine.identity():
            if writer.operation == APPLY:
                continue  # an Apply owns exactly its configuration
            mine.paths = (entry.paths - taken) | owned
            if not owned:
                mine.time = entry.time  # nothing changed hands: the entry stays as it was
            continue
        entry.paths -= taken
        if entry.paths:
            kept.append(entry)
    if mine.paths:
        kept.append(mine)
    if kept:
        meta["managedFields"] = [e.encode() for e in sorted(kept, key=_sort_key)]
    else:
        meta.pop("managedFields", None)
