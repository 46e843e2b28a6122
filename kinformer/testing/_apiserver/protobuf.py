"""Just enough of Kubernetes' protobuf encoding to read what kubectl's generators send.

kubectl sends ``application/vnd.kubernetes.protobuf`` bodies for ``kubectl create configmap``,
``secret``, ``namespace`` and ``serviceaccount``. This decodes the ``k8s\\0`` + ``runtime.Unknown``
envelope and those four types' fields (the common ObjectMeta fields included) into the JSON
shape; anything else raises :class:`ValueError` (answered 415). Responses stay JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

MAGIC = b"k8s\x00"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            yield number, data[pos:pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ValueError("expected a string")
    return value.decode()


def _entry(value: int | bytes) -> tuple[str, bytes]:
    if not isinstance(value, bytes):
        raise ValueError("expected a map entry")
    key, val = "", b""
    for number, part in _fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2 and isinstance(part, bytes):
            val = part
    return key, val


def _meta(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, value in _fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, val = _entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = val.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _decode_object(
    data: bytes, maps: dict[int, tuple[str, bool]], strings: dict[int, str],
    bools: dict[int, str], extra: Callable[[int, int | bytes, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = _meta(value)
        elif number in maps:
            name, binary = maps[number]
            key, val = _entry(value)
            obj.setdefault(name, {})[key] = (base64.b64encode(val).decode() if binary
                                             else val.decode())
        elif number in strings:
            obj[strings[number]] = _text(value)
        elif number in bools and isinstance(value, int):
            obj[bools[number]] = bool(value)
        elif extra is not None:
            extra(number, value, obj)
    return obj


def _namespace_extra(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number == 2 and isinstance(value, bytes):
        finalizers = [_text(v) for n, v in _fields(value) if n == 1]
        obj["spec"] = {"finalizers": finalizers} if finalizers else {}


def _service_account_extra(number: int, value: int | bytes, obj: dict[str, Any]) -> None:
    if number in (2, 3) and isinstance(value, bytes):
        name = next((_text(v) for n, v in _fields(value) if n == 1), "")
        key = "secrets" if number == 2 else "imagePullSecrets"
        obj.setdefault(key, []).append({"name": name})
    elif number == 4 and isinstance(value, int):
        obj["automountServiceAccountToken"] = bool(value)


_DECODERS: dict[tuple[str, str], Callable[[bytes], dict[str, Any]]] = {
    ("v1", "ConfigMap"): lambda raw: _decode_object(
        raw, {2: ("data", False), 3: ("binaryData", True)}, {}, {4: "immutable"}),
    ("v1", "Secret"): lambda raw: _decode_object(
        raw, {2: ("data", True), 4: ("stringData", False)}, {3: "type"}, {5: "immutable"}),
    ("v1", "Namespace"): lambda raw: _decode_object(raw, {}, {}, {}, _namespace_extra),
    ("v1", "ServiceAccount"): lambda raw: _decode_object(raw, {}, {}, {}, _service_account_extra),
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object kubectl's generators send; ValueError else."""
    if not body.startswith(MAGIC):
        raise ValueError("missing the k8s protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC):]):
        if number == 1 and isinstance(value, bytes):
            for n, v in _fields(value):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    decoder = _DECODERS.get((api_version, kind))
    if decoder is None:
        raise ValueError(f"protobuf bodies of {api_version}/{kind} are not supported")
    obj = decoder(raw)
    obj["apiVersion"], obj["kind"] = api_version, kind
    return obj
