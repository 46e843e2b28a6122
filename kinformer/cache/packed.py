"""Objects packed for a compact cache as they arrive, while their decoded form is fresh in memory.

A compact cache (:mod:`kinformer.cache.compact_store`) keeps each object as its JSON bytes. Encoded
when it is stored, an object of a large first list is encoded long after it was decoded: the list
is held decoded, every object of it at once (for 150,000 Pods, about as much memory as a dict
cache), and the encoder then walks objects long gone from the CPU's caches. A compact informer
packs instead: its reflector hands each object, a list page by page and each watch event, to
:func:`pack`, which encodes it and computes its index values at once and returns a
:class:`Packed` stub. The decoded object is then freed with its page, and the cache stores the
stub's bytes and values as they are.

A stub is a ``dict`` holding ``apiVersion``, ``kind`` and of ``metadata`` only ``name``,
``namespace``, ``uid``, ``resourceVersion`` and a logical cluster's annotation: what reads an object
on its way to the cache (the key function, the resourceVersion, a shard's hash) and no more. The
stubs of a whole first list live until it is stored; every small object one holds would be one
more left among the freed remains of the decoded list. Nothing else ever sees a stub: the cache
keeps its bytes and every handler of a compact informer is handed a copy decoded from them
(``compact_store.fresh``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kinformer import _json
from kinformer.cache import _indexing

__all__ = ["Packed", "decoded", "pack", "stub_of"]

_STUB_FIELDS = ("apiVersion", "kind")
_ABSENT: Any = object()  # a field the object does not have
_CLUSTER = "kcp.io/cluster"  # the annotation a cluster-aware key reads (kinformer.cache.cluster)


class Packed(dict):  # type: ignore[type-arg]
    """A stub of an object (apiVersion, kind, some of its metadata) with its bytes and index values.

    ``data`` is the object's compact JSON, exactly as long as it is; ``index_values`` its values
    under the index functions ``fns`` (in order), computed from the whole object.
    """

    __slots__ = ("data", "fns", "index_values")

    data: bytes
    fns: tuple[_indexing.IndexFunc, ...]
    index_values: Sequence[Sequence[str]]


def pack(obj: Any, fns: tuple[_indexing.IndexFunc, ...], data: bytes | None = None) -> Any:
    """``obj`` as a :class:`Packed` stub, indexed under ``fns``; anything but a decoded JSON
    object (a dict with a dict ``metadata``) comes back as it is, for the cache to encode.

    ``data``, when given, is ``obj``'s compact JSON exactly as the server sent it, kept as it is;
    else ``obj`` is encoded. Raises what the encoder or an index function raises.
    """
    if type(obj) is not dict or type(metadata := obj.get("metadata")) is not dict:
        return obj
    # what keys, versions and shard hashes read: one dict display, then what was absent taken
    # out, a third of the time of a loop over the fields (which cost as much as the encoding)
    get = metadata.get
    kept = {"name": get("name", _ABSENT), "namespace": get("namespace", _ABSENT),
            "uid": get("uid", _ABSENT), "resourceVersion": get("resourceVersion", _ABSENT)}
    if _ABSENT in kept.values():
        kept = {k: v for k, v in kept.items() if v is not _ABSENT}
    annotations = get("annotations")
    if annotations and type(annotations) is dict and _CLUSTER in annotations:
        kept["annotations"] = {_CLUSTER: annotations[_CLUSTER]}
    stub = Packed(apiVersion=obj.get("apiVersion", _ABSENT), kind=obj.get("kind", _ABSENT),
                  metadata=kept)
    if _ABSENT in (stub["apiVersion"], stub["kind"]):
        for field in _STUB_FIELDS:
            if stub[field] is _ABSENT:
                del stub[field]
    stub.index_values = _indexing.index_values(fns, obj) if fns else ()
    stub.fns = fns
    stub.data = _json.dumps_to_keep(obj) if data is None else data
    return stub


def stub_of(data: bytes) -> Any:
    """The :class:`Packed` stub of the object a cache keeps as ``data`` (its compact JSON), with
    no index values; anything but a JSON object with a metadata object comes back decoded whole.
    """
    return pack(_json.loads(data), (), data)


def decoded(obj: Any) -> Any:
    """The whole object: a new decode of a stub's bytes, anything else as it is."""
    return _json.loads(obj.data) if type(obj) is Packed else obj
