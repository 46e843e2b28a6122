"""How the fake API server shapes an object on each write, as kube-apiserver's REST strategies do.

Pure functions that :class:`~kinformer.testing._apiserver.storage.storage.Storage` calls under
its lock: check a body and settle its name and namespace (a Lease's spec decoded by
:mod:`.leases`), stamp what the server owns (uid, timestamps, generation, the served apiVersion
and kind), carry status and server-owned metadata across an update, check delete preconditions,
and admit a CustomResourceDefinition. Each rejects with the
:class:`~kinformer.testing._apiserver.status.StatusError` the server answers with (400, 409,
422); none looks at other stored objects.
"""

from __future__ import annotations

import random
import re
from typing import Any

from kinformer.testing._apiserver import resources, status
from kinformer.testing._apiserver.records import Entry, loads, new_uid, now_timestamp
from kinformer.testing._apiserver.registry import defaults, fieldmanager, leases, validation
from kinformer.testing._apiserver.resources import ResourceType

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_DIGITS = re.compile(r"[0-9]+")


def settle_create(rt: ResourceType, namespace: str, obj: Any) -> tuple[dict[str, Any], str, str]:
    """Check a create body and settle its name and namespace: ``(metadata, namespace, name)``.

    A ``generateName`` gets five random characters; a namespaced object takes the request's
    namespace (400 when the body names another, or neither names one); a cluster-scoped one
    loses any namespace. 400 for a malformed body, 422 for an invalid name.
    """
    meta = validation.check_body(rt, obj)
    if leases.is_lease(rt):
        leases.decode(rt, obj)
    name = meta.get("name") or ""
    if not name and meta.get("generateName"):
        name = str(meta["generateName"]) + "".join(
            random.choice(_GENERATE_ALPHABET) for _ in range(5))
        meta["name"] = name
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and namespace and body_ns != namespace:
            raise status.bad_request("the namespace of the provided object does not match "
                                     "the namespace sent on the request")
        namespace = namespace or str(body_ns or "")
        if not namespace:
            raise status.bad_request("the server could not find the requested resource")
        meta["namespace"] = namespace
    else:
        namespace = ""
        meta.pop("namespace", None)
    validation.validate_name(rt, name)
    validation.check_labels_and_annotations(rt, name, meta)
    validation.check_custom_kind(rt, name, obj)
    return meta, namespace, name


def check_no_resource_version(meta: dict[str, Any]) -> None:
    """500 when a body to create carries a resourceVersion, as etcd's storage refuses it: a
    number other than 0 (what does not parse as one passes, as on the real server). A client
    that copies an object read from a server must drop it."""
    rv = meta.get("resourceVersion")
    if isinstance(rv, str) and _DIGITS.fullmatch(rv) and 0 < int(rv) < 2**64:
        raise status.StatusError(
            500, "", "resourceVersion should not be set on objects to be created")


def stamp_create(
    rt: ResourceType, name: str, obj: dict[str, Any], meta: dict[str, Any],
    allocate: defaults.Allocator, writer: fieldmanager.Writer | None,
) -> None:
    """Stamp what the server owns on a new object, fill its type's defaults and status, and
    record ``writer``'s fields (None: a server-side helper, which records none and may seed a
    status); admit it if it is a CRD (422 if invalid)."""
    defaults.apply(rt, obj)
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    now = now_timestamp()
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = now
    meta.pop("deletionTimestamp", None)
    meta.pop("deletionGracePeriodSeconds", None)
    if rt.generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    fieldmanager.record(rt, writer, None, obj, "", now)
    defaults.on_create(rt, obj, allocate, keep_status=writer is None)
    if is_crd(rt):
        admit_crd(rt, name, obj)


def prepare_update(
    rt: ResourceType, current: Entry, obj: Any, namespace: str, name: str, subresource: str,
    writer: fieldmanager.Writer | None = None, uid_precondition: bool = True,
) -> dict[str, Any]:
    """The object an update of ``current`` to ``obj`` by ``writer`` stores (its resourceVersion
    still the old one).

    A ``status`` update changes only status; a main-resource update keeps the old status and the
    server-owned metadata, fills the type's defaults, and bumps ``generation`` when anything
    outside metadata and status changed; ``writer``'s changed fields are recorded. 400 for a
    body naming another object, 409 for a stale resourceVersion, 422 for an invalid CRD. With
    ``uid_precondition`` (a PUT) a body's ``metadata.uid`` is a precondition, as the real
    server makes it: 409 when it is not the stored object's, as when the object was deleted
    and created again since the body was read. 422 for a finalizer added to an object being
    deleted.
    """
    meta = validation.check_body(rt, obj)
    validation.check_custom_kind(rt, name, obj)
    if leases.is_lease(rt):
        leases.decode(rt, obj)
    if meta.get("name") not in (None, "", name):
        raise status.bad_request(f"the name of the object ({meta.get('name')}) does not "
                                 f"match the name on the URL ({name})")
    body_ns = meta.get("namespace")
    if rt.namespaced and body_ns and body_ns != namespace:
        raise status.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
    if uid_precondition:
        check_preconditions(rt, name, current, {"uid": meta.get("uid")})
    wanted_rv = meta.get("resourceVersion")
    if wanted_rv not in (None, "") and str(wanted_rv) != str(current.rv):
        raise status.conflict(rt, name)
    old = current.obj
    old_meta = old["metadata"]
    new: dict[str, Any]
    if rt.status and subresource == "status":
        new = loads(current.data)
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
    else:
        new = obj
        if rt.status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        new_meta = new["metadata"]
        new_meta["name"] = name
        if rt.namespaced:
            new_meta["namespace"] = namespace
        else:
            new_meta.pop("namespace", None)
        for kept in ("uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "generation"):
            if kept in old_meta:
                new_meta[kept] = old_meta[kept]
            else:
                new_meta.pop(kept, None)
        defaults.apply(rt, new)
        defaults.keep_allocated(rt, old, new)
        if old_meta.get("deletionTimestamp"):
            validation.check_no_new_finalizers(rt, name, old_meta, new_meta)
        validation.check_labels_and_annotations(rt, name, new_meta)
        validation.check_immutable_data(rt, name, old, new)
    new["apiVersion"] = old.get("apiVersion", rt.api_version)
    new["kind"] = rt.kind
    if is_crd(rt):
        admit_crd(rt, name, new)
    if rt.generation and spec_of(new) != spec_of(old):
        new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
    new["metadata"]["resourceVersion"] = old_meta.get("resourceVersion")
    fieldmanager.record(rt, writer, old, new, subresource, now_timestamp())
    return new


def check_preconditions(
    rt: ResourceType, name: str, current: Entry, preconditions: dict[str, Any] | None,
) -> None:
    """409 Conflict when a delete's uid or resourceVersion precondition does not hold."""
    meta = current.obj["metadata"]
    pre = preconditions or {}
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise status.conflict(rt, name, f"Precondition failed: UID in precondition: "
                              f"{pre['uid']}, UID in object meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(current.rv):
        raise status.conflict(rt, name, f"Precondition failed: ResourceVersion in "
                              f"precondition: {pre['resourceVersion']}, ResourceVersion "
                              f"in object meta: {current.rv}")


def mark_deleting(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (a private copy) marked as being deleted now with a grace period of 0; its
    ``generation``, when it has one, grows once, as the real server bumps it then."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp") and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    meta["deletionTimestamp"] = now_timestamp()
    meta["deletionGracePeriodSeconds"] = 0
    return obj


def is_crd(rt: ResourceType) -> bool:
    """Whether ``rt`` is CustomResourceDefinition, whose writes change what the server serves."""
    return rt.group == resources.CRD_GROUP and rt.resource == resources.CRD_RESOURCE


def admit_crd(rt: ResourceType, name: str, crd: dict[str, Any]) -> None:
    """Reject an invalid CRD with 422, as the server does, else set the status it would get."""
    problems = resources.validate_crd(crd)
    if problems:
        raise status.invalid(rt, name, [("FieldValueInvalid", f, m) for f, m in problems])
    crd["status"] = resources.crd_status(crd)


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata, status, apiVersion and kind: what bumps ``generation``."""
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "status", "apiVersion", "kind")}
