"""Checks the fake API server makes on request bodies: shapes (400) and names (422)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.resources import ResourceType

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


# The fields a typed decoder checks, per kind: (JSON path, the Go struct holding the last
# field, its Go type). A value of another JSON type is refused with 400, naming the struct and
# the path as Go's JSON decoder does; parents come before their fields. Walked as a tree
# (:func:`_tree`) over the fields a body holds.
_META_FIELDS = tuple((f"metadata.{field}", "ObjectMeta", go_type) for field, go_type in (
    ("name", "string"), ("generateName", "string"), ("namespace", "string"),
    ("uid", "types.UID"), ("resourceVersion", "string"), ("generation", "int64"),
    ("labels", "map[string]string"), ("annotations", "map[string]string"),
    ("finalizers", "[]string"), ("ownerReferences", "[]v1.OwnerReference"),
))
_POD_SPEC = (("containers", "[]v1.Container"), ("initContainers", "[]v1.Container"),
             ("nodeSelector", "map[string]string"), ("restartPolicy", "v1.RestartPolicy"),
             ("serviceAccountName", "string"), ("nodeName", "string"))


def _spec(kind: str, struct: str, fields: tuple[tuple[str, str], ...],
          prefix: str = "spec") -> tuple[tuple[str, str, str], ...]:
    return ((prefix, kind, f"v1.{struct}"),
            *((f"{prefix}.{field}", struct, go_type) for field, go_type in fields))


def _template(struct: str) -> tuple[tuple[str, str, str], ...]:
    """A pod template at ``spec.template`` of a workload whose spec is Go struct ``struct``."""
    return (("spec.template", struct, "v1.PodTemplateSpec"),
            *_spec("PodTemplateSpec", "PodSpec", _POD_SPEC, "spec.template.spec"))


_KIND_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "ConfigMap": (("data", "ConfigMap", "map[string]string"),
                  ("binaryData", "ConfigMap", "map[string][]uint8"),
                  ("immutable", "ConfigMap", "bool")),
    "Secret": (("data", "Secret", "map[string][]uint8"),
               ("stringData", "Secret", "map[string]string"),
               ("type", "Secret", "v1.SecretType"), ("immutable", "Secret", "bool")),
    "Namespace": _spec("Namespace", "NamespaceSpec", (("finalizers", "[]v1.FinalizerName"),)),
    "Service": _spec("Service", "ServiceSpec", (
        ("ports", "[]v1.ServicePort"), ("selector", "map[string]string"),
        ("clusterIP", "string"), ("type", "v1.ServiceType"))),
    "Pod": _spec("Pod", "PodSpec", _POD_SPEC),
    "Deployment": (*_spec("Deployment", "DeploymentSpec", (
        ("replicas", "int32"), ("selector", "v1.LabelSelector"))),
                   *_template("DeploymentSpec")),
    "ReplicaSet": (*_spec("ReplicaSet", "ReplicaSetSpec", (
        ("replicas", "int32"), ("selector", "v1.LabelSelector"))),
                   *_template("ReplicaSetSpec")),
    "ReplicationController": (*_spec("ReplicationController", "ReplicationControllerSpec", (
        ("replicas", "int32"), ("selector", "map[string]string"))),
                              *_template("ReplicationControllerSpec")),
}
_STRINGS = ("string", "types.UID", "v1.SecretType", "[]uint8", "v1.FinalizerName",
            "v1.ServiceType", "v1.RestartPolicy")
_INTEGERS = ("int32", "int64")


def json_type(value: Any) -> str:
    """How Go's JSON decoder names the kind of ``value`` in its type errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return f"number {value}"  # a fraction where an integer belongs: Go names the number
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _mismatch(value: Any, go_type: str) -> str | None:
    """The Go type a decoder fails to put ``value`` into, or None when it fits."""
    if value is None:
        return None
    if go_type.startswith("map[string]"):
        if not isinstance(value, dict):
            return go_type
        inner = go_type[len("map[string]"):]
        return next((t for t in (_mismatch(v, inner) for v in value.values()) if t), None)
    if go_type.startswith("[]") and go_type != "[]uint8":
        if not isinstance(value, list):
            return go_type
        return next((t for t in (_mismatch(v, go_type[2:]) for v in value) if t), None)
    if go_type in _STRINGS:
        return None if isinstance(value, str) else go_type
    if go_type == "bool":
        return None if isinstance(value, bool) else go_type
    if go_type in _INTEGERS:
        return None if isinstance(value, int) and not isinstance(value, bool) else go_type
    return None if isinstance(value, dict) else go_type  # a struct


def _offending(value: Any, go_type: str) -> Any:
    """The innermost value that does not fit (what the decoder names in its message)."""
    if isinstance(value, dict) and go_type.startswith("map[string]"):
        inner = go_type[len("map[string]"):]
        return next((v for v in value.values() if _mismatch(v, inner)), value)
    if isinstance(value, list) and go_type.startswith("[]") and go_type != "[]uint8":
        return next((v for v in value if _mismatch(v, go_type[2:])), value)
    return value


# A field of the tree a body is checked against: (Go struct, Go type, the fields inside it).
_Node = tuple[str, str, dict[str, Any]]


def _tree(fields: tuple[tuple[str, str, str], ...]) -> dict[str, _Node]:
    """The flat (path, struct, type) list as a tree of fields, to walk what a body holds."""
    root: dict[str, _Node] = {}
    for path, struct, go_type in fields:
        node = root
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, ("", "", {}))[2]
        children = node[last][2] if last in node else {}
        node[last] = (struct, go_type, children)
    return root


_META_TREE = _tree(_META_FIELDS)["metadata"][2]
_KIND_TREES = {kind: _tree(fields) for kind, fields in _KIND_FIELDS.items()}


def _walk(rt: ResourceType, obj: dict[str, Any], tree: dict[str, _Node], prefix: str) -> None:
    """Check each field ``obj`` holds that ``tree`` knows (only what is there is looked at)."""
    for key, value in obj.items():
        node = tree.get(key)
        if node is None or value is None:
            continue
        struct, go_type, children = node
        if go_type:
            wrong = _mismatch(value, go_type)
            if wrong is not None:
                raise status.cannot_decode(
                    rt, f"json: cannot unmarshal {json_type(_offending(value, go_type))} into "
                        f"Go struct field {struct}.{prefix}{key} of type {wrong}")
        if children and value.__class__ is dict:
            _walk(rt, value, children, f"{prefix}{key}.")


_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding.Decode`` (as ``encoding/json`` decodes a ``[]byte``)
    finds ``text`` corrupt: the input byte its error names, or None when it decodes."""
    src = text.encode()
    si, end = 0, len(src)
    while True:
        j = 0
        while j < 4:
            if si == end:
                if j == 0:
                    return None
                return si - j
            c = src[si]
            si += 1
            if c in _BASE64:
                j += 1
                continue
            if c in (0x0A, 0x0D):
                continue
            if c != 0x3D:  # '='
                return si - 1
            if j < 2:
                return si - 1
            if j == 2:
                while si < end and src[si] in (0x0A, 0x0D):
                    si += 1
                if si == end:
                    return end
                if src[si] != 0x3D:
                    return si - 1
                si += 1
            while si < end and src[si] in (0x0A, 0x0D):
                si += 1
            return si if si < end else None


def _decode_secret(rt: ResourceType, obj: dict[str, Any]) -> None:
    """What decoding a Secret does: each ``data`` value must be base64 (400 naming the byte
    Go's decoder stops at), and ``stringData`` is merged into ``data``, base64-encoded,
    overriding the same keys, then dropped."""
    data = obj.get("data")
    for value in (data or {}).values():
        at = base64_error(value) if isinstance(value, str) else None
        if at is not None:
            raise status.cannot_decode(rt, f"illegal base64 data at input byte {at}")
    string_data = obj.pop("stringData", None)
    if string_data:
        merged = dict(data or {})
        for key, value in string_data.items():
            merged[key] = base64.b64encode(str(value or "").encode()).decode()
        obj["data"] = dict(sorted(merged.items()))


def check_body(rt: ResourceType, obj: Any) -> dict[str, Any]:
    """The metadata of a request body, after the checks a typed decoder makes (400).

    Built-in types are decoded strictly: a field of the wrong JSON type (a ConfigMap ``data``
    value that is a number, ``metadata.labels`` that is a list, a Deployment's ``replicas``
    given as text) is refused, naming the field. A Secret's ``data`` must be base64, and its
    ``stringData`` goes into ``data``.
    """
    if not isinstance(obj, dict):
        raise status.bad_request(f"the body of the request could not be decoded into a {rt.kind}")
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.cannot_decode(
            rt, f"json: cannot unmarshal {json_type(meta)} into Go struct field "
                f"{rt.kind}.metadata of type v1.ObjectMeta")
    _walk(rt, meta, _META_TREE, "metadata.")
    tree = None if rt.custom else _KIND_TREES.get(rt.kind)
    if tree:
        _walk(rt, obj, tree, "")
    if rt.kind == "Secret" and not rt.custom:
        _decode_secret(rt, obj)
    return meta


def check_custom_kind(rt: ResourceType, name: str, obj: dict[str, Any]) -> None:
    """422 when a custom object's body names a kind other than its definition's."""
    kind = obj.get("kind")
    if rt.custom and kind not in (None, "", rt.kind):
        raise status.invalid(rt, name, [("FieldValueInvalid", "kind",
                                         f'Invalid value: "{kind}": must be {rt.kind}')])


def validate_name(rt: ResourceType, name: str) -> None:
    if not name:
        raise status.invalid(rt, "", [("FieldValueRequired", "metadata.name",
                                       "Required value: name or generateName is required")])
    if rt.resource == "namespaces":
        ok, limit, msg = bool(_LABEL.match(name)), 63, _LABEL_MSG
    else:
        ok, limit, msg = bool(_SUBDOMAIN.match(name)), 253, _SUBDOMAIN_MSG
    if len(name) > limit:
        ok, msg = False, f"must be no more than {limit} characters"
    if not ok:
        raise status.invalid(rt, name, [("FieldValueInvalid", "metadata.name",
                                         f'Invalid value: "{name}": {msg}')])


def check_no_new_finalizers(rt: ResourceType, name: str, old_meta: dict[str, Any],
                            new_meta: dict[str, Any]) -> None:
    """422 when an update of an object being deleted adds a finalizer: once deleting, its
    finalizers may only go."""
    old = old_meta.get("finalizers") or []
    extra = sorted(set(new_meta.get("finalizers") or []) - set(old))
    if extra:
        found = ", ".join(json.dumps(f) for f in extra)  # Go's %#v of a []string
        raise status.invalid(rt, name, [(
            "FieldValueForbidden", "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted, found "
            f"new finalizers []string{{{found}}}")])


_IMMUTABLE_MSG = "Forbidden: field is immutable when `immutable` is set"


def check_immutable_data(rt: ResourceType, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """422 when an update of a ConfigMap or Secret marked ``immutable: true`` changes its data,
    its binaryData (a ConfigMap's) or unsets ``immutable``, as kube-apiserver's validation
    refuses it; a Secret's ``type`` never changes."""
    if rt.group != "" or rt.resource not in ("configmaps", "secrets"):
        return
    causes: list[tuple[str, str, str]] = []
    if rt.resource == "secrets" and (old.get("type") or "Opaque") != (new.get("type") or "Opaque"):
        causes.append(("FieldValueInvalid", "type",
                       f"Invalid value: {json.dumps(new.get('type') or 'Opaque')}: field is immutable"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            causes.append(("FieldValueForbidden", "immutable", _IMMUTABLE_MSG))
        fields = ("data", "binaryData") if rt.resource == "configmaps" else ("data",)
        for field in fields:
            if (old.get(field) or {}) != (new.get(field) or {}):
                causes.append(("FieldValueForbidden", field, _IMMUTABLE_MSG))
    if causes:
        raise status.invalid(rt, name, causes)


_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_ANNOTATIONS_LIMIT = 256 * 1024  # bytes of keys and values together


def _qualified_name_problems(key: str) -> list[str]:
    """apimachinery's IsQualifiedName: an optional DNS subdomain prefix and ``/``, then a name
    part of at most 63 characters."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _QUALIFIED_NAME_MSG + " with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')"]
    problems = []
    if len(parts) == 2:
        problems += _part_problems("prefix", parts[0], 253, _SUBDOMAIN, _SUBDOMAIN_MSG)
    return problems + _part_problems("name", parts[-1], 63, _QUALIFIED_NAME, _QUALIFIED_NAME_MSG)


def _part_problems(part: str, text: str, limit: int, pattern: re.Pattern[str], message: str) -> list[str]:
    """What is wrong with ``text``, the ``part`` (prefix or name) of a qualified name."""
    if not text:
        return [f"{part} part must be non-empty"]
    problems = []
    if len(text) > limit:
        problems.append(f"{part} part must be no more than {limit} characters")
    if not pattern.match(text):
        problems.append(f"{part} part {message}")
    return problems


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # near enough to Go's %q


def check_labels_and_annotations(rt: ResourceType, name: str, meta: dict[str, Any]) -> None:
    """422 for label keys and values, and annotation keys, the real server's metadata
    validation refuses, and for annotations over 256 KiB together, every problem at once."""
    causes: list[tuple[str, str, str]] = []
    for key, value in (meta.get("labels") or {}).items():
        for problem in _qualified_name_problems(key):
            causes.append(("FieldValueInvalid", "metadata.labels",
                           f"Invalid value: {_quoted(key)}: {problem}"))
        value = value or ""
        if len(value) > 63:
            causes.append(("FieldValueInvalid", "metadata.labels",
                           f"Invalid value: {_quoted(value)}: must be no more than 63 "
                           "characters"))
        if value and not _QUALIFIED_NAME.match(value):
            causes.append(("FieldValueInvalid", "metadata.labels",
                           f"Invalid value: {_quoted(value)}: {_LABEL_VALUE_MSG}"))
    annotations = meta.get("annotations") or {}
    for key in annotations:
        for problem in _qualified_name_problems(key.lower()):
            causes.append(("FieldValueInvalid", "metadata.annotations",
                           f"Invalid value: {_quoted(key)}: {problem}"))
    size = sum(len(k.encode()) + len((v or "").encode()) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        causes.append(("FieldValueTooLong", "metadata.annotations",
                       f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes"))
    if causes:
        raise status.invalid(rt, name, causes)
