"""Objects packed for a compact cache as they arrive, while their decoded form is fresh in memory.

A compact cache (:mod:`kinformer.cache.compact_store`) keeps each object as bytes (see "The bytes
kept" below). Encoded
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

The bytes kept: with orjson, an object's compact JSON, which a listed object's is as the server
sent it (nothing to encode) and which orjson decodes fastest. With the standard library alone,
:mod:`marshal`'s form of the object: it decodes in about 0.55x the time of ``json.loads`` (14
against 26 µs for a 5 KB Pod), encodes in a seventh of the time of ``json.dumps`` (6 against 41
µs), and is 6-15% smaller than the JSON. Which one is chosen once, as this module is imported, so
that bytes are always read as they were written. A marshalled object is decoded as it was: a tuple
stays a tuple and a key that is not a string stays as it is, as a dict cache would keep them; an
object holding a type marshal does not take (a subclass of ``dict`` or ``str``, say) is kept as
its JSON decodes, and one JSON cannot encode either is refused with ``TypeError``, in both forms.

The type kept once, in JSON: every object of a type carries the same ``kind`` and ``apiVersion``, first
as the server sends it (``{"kind":"ConfigMap","apiVersion":"v1",``: 38 bytes of a 900-byte
ConfigMap, 4% of what a compact cache holds) or last as a lister completes a listed item. An
object whose two fields stand together at either end is kept without them, behind one byte
that names its type and where they stood; :func:`load` puts them back where they were, as the
same two strings for every object of the type. The byte is below ``0x20`` and never a tab or a
line break: a byte neither form can begin with (JSON begins with ``{``, ``[``, ``"``, a digit,
``-`` or a letter, marshal with a type code from ``(``). A process names at most 29 types so;
the objects of any type after those are kept whole. In marshal's form only a packing
transform's object is kept without them (``pack(..., consume=True)``): the two fields are taken
out of the object itself, which nothing reads once it is packed. A copy without them, made
among a list's decoded objects, cost Python's allocator more empty pools than the bytes it
saved; taken out in place they save 5% of a compact cache of 1 KB ConfigMaps.
"""

from __future__ import annotations

import json
import marshal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kinformer import _json
from kinformer.cache import _indexing

__all__ = ["Packed", "decoded", "keep", "load", "pack", "stub_of"]

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


def pack(obj: Any, fns: tuple[_indexing.IndexFunc, ...], data: bytes | None = None,
         consume: bool = False) -> Any:
    """``obj`` as a :class:`Packed` stub, indexed under ``fns``; anything but a decoded JSON
    object (a dict with a dict ``metadata``) comes back as it is, for the cache to encode.

    ``data``, when given, is what :func:`keep` would give for ``obj``, kept as it is (where the
    cache keeps JSON, the object's JSON as the server sent it); else ``obj`` is encoded. Raises
    what the encoder or an index function raises.

    ``consume=True`` says nothing reads ``obj`` once it is packed (a packing transform's
    decoded object): it is encoded without its type (see "The type kept once") by taking the
    two fields out of it in place rather than out of a copy, which in either form saves the
    bytes of the type at no cost in memory. When packing fails, they are back in ``obj``
    (after its other fields).
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
    stub = Packed()  # filled by subscript: a third faster than keyword arguments
    stub["apiVersion"] = obj.get("apiVersion", _ABSENT)
    stub["kind"] = obj.get("kind", _ABSENT)
    stub["metadata"] = kept
    if _ABSENT in (stub["apiVersion"], stub["kind"]):
        for field in _STUB_FIELDS:
            if stub[field] is _ABSENT:
                del stub[field]
    stub.index_values = _indexing.index_values(fns, obj) if fns else ()
    stub.fns = fns
    if data is not None:
        stub.data = _shortened(data, stub)
    else:
        stub.data = _keep_consuming(obj) if consume else keep(obj)
    return stub


def stub_of(data: bytes) -> Any:
    """The :class:`Packed` stub of the object a cache keeps as ``data`` (:func:`keep`), with no
    index values; anything but a JSON object with a metadata object comes back decoded whole.
    """
    return pack(load(data), (), data)


def decoded(obj: Any) -> Any:
    """The whole object: a new decode of a stub's bytes, anything else as it is."""
    return load(obj.data) if type(obj) is Packed else obj


# -- the type kept once ------------------------------------------------------------------------

_Type = tuple[str, str, bool]  # kind, apiVersion, and whether the two come first (else last)

_FREE_TAGS = [bytes((b,)) for b in range(0x20) if b not in b"\t\n\r"]
_tags: dict[_Type, bytes] = {}  # each type named so -> its byte
_types: dict[int, _Type] = {}  # the byte's value -> its type
# each type named first -> its JSON opening as a server sends it, and the byte naming it with the
# "{" that takes the opening's place (_shortened)
_shortening: dict[tuple[str, str], tuple[bytes, bytes]] = {}
_naming = threading.Lock()


def _tag_for(kind: Any, api_version: Any, first: bool) -> bytes | None:
    """The byte naming ``kind``, ``api_version`` and where they stand; None when they are not
    both strings or every byte names another type already."""
    if type(kind) is not str or type(api_version) is not str:
        return None
    tag = _tags.get((kind, api_version, first))
    if tag is not None:
        return tag
    with _naming:
        tag = _tags.get((kind, api_version, first))
        if tag is None and _FREE_TAGS:
            tag = _FREE_TAGS.pop(0)
            _types[tag[0]] = (kind, api_version, first)
            if first:
                opening = (b'{"kind":' + _json.dumps(kind) + b',"apiVersion":'
                           + _json.dumps(api_version) + b",")
                _shortening[kind, api_version] = (opening, tag + b"{")
            _tags[kind, api_version, first] = tag  # published last: whoever reads it finds the rest
        return tag


def _typed(obj: Any, copy: bool = True) -> tuple[bytes | None, Any]:
    """``(tag, rest)``: ``obj`` without its kind and apiVersion and the byte naming them, when
    ``obj`` is a dict holding them together first or last; else ``(None, obj)``. With
    ``copy=False`` only the tag is found, and ``rest`` is ``obj`` itself."""
    if type(obj) is not dict:
        return None, obj
    keys = iter(obj)
    if next(keys, None) == "kind" and next(keys, None) == "apiVersion":
        first = True
    else:
        keys = reversed(obj)
        if next(keys, None) != "apiVersion" or next(keys, None) != "kind":
            return None, obj
        first = False
    kind, api_version = obj["kind"], obj["apiVersion"]
    try:
        tag = _tags.get((kind, api_version, first))
    except TypeError:  # a field that is no string (nor hashable)
        return None, obj
    if tag is None and (tag := _tag_for(kind, api_version, first)) is None:
        return None, obj
    if not copy:
        return tag, obj
    rest = obj.copy()
    del rest["kind"], rest["apiVersion"]
    return tag, rest


def _keep_consuming(obj: dict[str, Any]) -> bytes:
    """:func:`keep` of ``obj`` without its type, taken out of ``obj`` itself (see :func:`pack`)."""
    tag, _ = _typed(obj, copy=False)
    if tag is None:
        return keep(obj)
    kind, api_version = obj.pop("kind"), obj.pop("apiVersion")
    try:
        return _json.dumps_to_keep(obj, tag) if kept_as_json else tag + _marshalled_whole(obj)
    except BaseException:
        obj["kind"], obj["apiVersion"] = kind, api_version
        raise


def _with_type(tag: int, rest: Any) -> Any:
    """The object kept as ``rest`` behind the byte ``tag``: its kind and apiVersion put back."""
    kind, api_version, first = _types[tag]
    if first:
        return {"kind": kind, "apiVersion": api_version, **rest}
    rest["kind"] = kind
    rest["apiVersion"] = api_version
    return rest


def _shortened(data: bytes, stub: Packed) -> bytes:
    """``data``, the JSON of the object of ``stub`` as the server sent it, kept without the
    opening its type names, when the cache keeps JSON and it begins so; else as it is.

    Once per listed object: one lookup of the type, then one slice and one join (a memoryview
    of ``data`` costs more to make than the copy it saves).
    """
    if not kept_as_json:
        return data
    kind: Any = stub.get("kind")
    api_version: Any = stub.get("apiVersion")
    try:
        found = _shortening.get((kind, api_version))
    except TypeError:  # a field that is no string (nor hashable)
        return data
    if found is None:
        if _tag_for(kind, api_version, True) is None:
            return data
        found = _shortening[kind, api_version]
    opening, head = found
    if not data.startswith(opening):
        return data
    return head + data[len(opening):]


# -- the bytes kept ----------------------------------------------------------------------------

def _json_kept(obj: Any) -> bytes:
    tag, rest = _typed(obj)
    # looked up per call: a test may count the encodings
    return _json.dumps_to_keep(rest) if tag is None else _json.dumps_to_keep(rest, tag)


def _json_loaded(data: bytes) -> Any:
    if data[0] >= 0x20:
        return _json.loads(data)
    return _with_type(data[0], _json.loads(memoryview(data)[1:]))


def _marshalled(obj: Any) -> bytes:
    # kept whole: the copy of each object without its type, made among a list's decoded objects,
    # left Python's allocator 2-5 MiB more empty pools per 30,000 ConfigMaps than it saved (a
    # consuming pack takes the type out of the object itself instead: _keep_consuming)
    return _marshalled_whole(obj)


def _marshalled_whole(obj: Any) -> bytes:
    try:
        return marshal.dumps(obj)
    except ValueError:  # a type marshal does not take: what its JSON decodes to, else TypeError
        return marshal.dumps(json.loads(_json.dumps(obj)))


def _unmarshalled(data: bytes) -> Any:
    if data[0] >= 0x20:
        return marshal.loads(data)
    return _with_type(data[0], marshal.loads(memoryview(data)[1:]))


kept_as_json: bool
"""Whether :func:`keep` writes JSON (orjson at import) or :mod:`marshal`'s form."""
keep: Callable[[Any], bytes]
"""``keep(obj)``: the bytes a compact cache keeps for ``obj``, exactly as long as they are;
raises ``TypeError`` for an object JSON cannot encode."""
load: Callable[[bytes], Any]
"""``load(data)``: a new object decoded from bytes :func:`keep` made."""


def _keep_as_json(as_json: bool) -> None:
    """Choose the bytes kept; for tests only, with no cache alive that holds the other form."""
    global kept_as_json, keep, load
    kept_as_json = as_json
    keep, load = (_json_kept, _json_loaded) if as_json else (_marshalled, _unmarshalled)


_keep_as_json(_json.backend() == "orjson")
