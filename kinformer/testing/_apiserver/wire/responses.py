"""The bodies of the fake API server's answers, written as kube-apiserver writes them.

Every body ends with a newline. An object is its stored JSON (``kind``, ``apiVersion``,
``metadata``, then the rest); a list is ``kind``, ``apiVersion``, ``metadata``, ``items``, its
items without ``kind`` and ``apiVersion``, joined from the bytes each stored version was
encoded into once. A custom resource's list is written as the real server writes unstructured
lists: keys sorted, items keeping their kind, ``metadata.continue`` present even when empty. The
negotiated :class:`~kinformer.testing._apiserver.wire.mediatypes.Target` may ask for a Table or
PartialObjectMetadata instead (:mod:`.tables`); 406 where that form does not fit the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.records import Entry, dumps, served
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.wire import tables
from kinformer.testing._apiserver.wire.mediatypes import Target


def _not_acceptable(message: str) -> status.StatusError:
    return status.StatusError(406, "NotAcceptable", message)


def obj(rt: ResourceType, entry: Entry, target: Target, include: str = "Metadata") -> bytes:
    """One object (GET, and the answers of writes)."""
    if target.kind == "Table":
        body = tables.table(rt, [entry], {"resourceVersion": str(entry.rv)}, target.version,
                            include)
    elif target.kind == "PartialObjectMetadata":
        body = tables.partial_object(target.version, entry)
    elif target.kind:
        raise _not_acceptable(f"you requested {target.kind}, but the requested object is not a "
                              f"list (*v1.{rt.kind})")
    else:
        view = served(rt, entry)
        return view.head + view.tail + b"\n"
    return body + b"\n"


def list_meta(rv: int, token: str = "", remaining: int | None = None,
              shard_info: str | None = None) -> dict[str, Any]:
    """A list's metadata: resourceVersion, then continue and remainingItemCount on a page."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if token:
        meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
    if shard_info is not None:
        meta["shardInfo"] = {"selector": shard_info}
    return meta


def items(rt: ResourceType, entries: Sequence[Entry], meta: dict[str, Any], target: Target,
          include: str = "Metadata") -> bytes:
    """A list of ``entries`` with metadata ``meta``."""
    if target.kind == "Table":
        return tables.table(rt, entries, meta, target.version, include) + b"\n"
    if target.kind == "PartialObjectMetadataList":
        return tables.partial_list(target.version, entries, meta) + b"\n"
    if target.kind:
        raise _not_acceptable(f"you requested {target.kind}, but the requested object is a list "
                              f"(*v1.{rt.list_kind})")
    if rt.custom:
        # an unstructured list, as Go writes a map: keys sorted, an empty continue kept
        body = b",".join([b"{" + served(rt, e).tail for e in entries])
        return (b'{"apiVersion":"' + rt.api_version.encode() + b'","items":[' + body
                + b'],"kind":"' + rt.list_kind.encode() + b'","metadata":'
                + dumps({"continue": "", **meta}, sort_keys=True) + b"}\n")
    head = (b'{"kind":"' + rt.list_kind.encode() + b'","apiVersion":"' + rt.api_version.encode()
            + b'","metadata":' + dumps(meta) + b',"items":[')
    if not entries:
        return head + b"]}\n"
    return head + b"{" + b",{".join([e.tail for e in entries]) + b"]}\n"


def watch_renderer(rt: ResourceType, target: Target,
                   include: str) -> Callable[[Entry], bytes] | None:
    """How a watch writes each event's object in ``target``'s form (None: as the type's JSON)."""
    if target.kind == "Table":
        version = target.version

        def table(entry: Entry) -> bytes:
            return tables.table(rt, [entry], {"resourceVersion": str(entry.rv)}, version, include)

        return table
    if target.kind == "PartialObjectMetadata":
        version = target.version

        def partial(entry: Entry) -> bytes:
            return tables.partial_object(version, entry)

        return partial
    if target.kind:
        raise _not_acceptable(f"you requested {target.kind}, but the requested object is not a "
                              f"list (*v1.{rt.kind})")
    return None
