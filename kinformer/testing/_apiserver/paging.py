"""Paged lists of the fake API server: the snapshot a first page takes and its continue token.

Like kube-apiserver over etcd, a limited list answers with an opaque token naming the snapshot
(and the position in it) the following pages are served from, so every page of one list shows
the same resourceVersion. :class:`~kinformer.testing._apiserver.storage.Storage` keeps the last
``MAX_SNAPSHOTS`` snapshots under its lock; a token for a dropped one answers 410, a token that
does not decode answers 400.
"""

from __future__ import annotations

import base64
import binascii
import json

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.records import Entry

MAX_SNAPSHOTS = 64  # continue tokens kept alive; older ones answer 410 like a compacted etcd


class Snapshot:
    """The items of one list at its resourceVersion; never changed after the first page."""

    __slots__ = ("items", "rv")

    def __init__(self, rv: int, items: list[Entry]) -> None:
        self.rv = rv
        self.items = items


def encode_token(snap_id: int, index: int, rv: int) -> str:
    """The continue token for the page starting at ``index`` of snapshot ``snap_id``."""
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "snap": snap_id, "i": index},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str) -> tuple[int, int, int]:
    """``(snapshot id, index, resourceVersion)`` of a continue token; 400 when malformed."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        snap_id, index, rv = data["snap"], data["i"], data["rv"]
        if not all(isinstance(x, int) and x >= 0 for x in (snap_id, index, rv)):
            raise ValueError("bad field")
    except (ValueError, TypeError, KeyError, binascii.Error) as err:
        raise status.bad_request(f"continue key is not valid: {err}") from None
    return snap_id, index, rv
