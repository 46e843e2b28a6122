"""JSON decoding and encoding for the HTTP path: orjson when it is installed, stdlib otherwise.

``KINFORMER_JSON=stdlib`` in the environment (read at import) or :func:`use_stdlib` forces the
standard library, so both paths stay tested. What the cyclic collector does around a big decode
is :mod:`kinformer._gc`'s business, not this module's.
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:  # pragma: no cover - depends on the installation
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_use_orjson = _orjson is not None and os.environ.get("KINFORMER_JSON", "").lower() != "stdlib"

def use_stdlib(force: bool = True) -> None:
    """Decode and encode with the standard library (``force=False``: orjson again if available)."""
    global _use_orjson
    _use_orjson = (not force) and _orjson is not None


def backend() -> str:
    """``"orjson"`` or ``"stdlib"``: which decoder :func:`loads` uses now."""
    return "orjson" if _use_orjson else "stdlib"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document; raises ``ValueError`` for malformed input (both backends)."""
    if _use_orjson and _orjson is not None:
        return _orjson.loads(data)
    if isinstance(data, memoryview):
        data = data.tobytes()
    return json.loads(data)


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON bytes."""
    if _use_orjson and _orjson is not None:
        result: bytes = _orjson.dumps(obj)
        return result
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
