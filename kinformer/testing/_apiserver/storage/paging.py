"""Paged lists of the fake API server: the snapshot a first page takes and its continue token.

Like kube-apiserver over etcd, a limited list answers with an opaque token naming the snapshot
(and the position in it) the following pages are served from, so every page of one list shows
the same resourceVersion. :class:`Snapshots` keeps the last ``MAX_SNAPSHOTS`` of them (under the
lock of :class:`~kinformer.testing._apiserver.storage.storage.Storage`); a token for a dropped
one answers 410, a token that does not decode, or continues a list of another logical cluster,
answers 400.
"""

from __future__ import annotations

import base64
import binascii
import collections
import itertools
import json

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.clusters import ROOT
from kinformer.testing._apiserver.records import Entry

MAX_SNAPSHOTS = 64  # continue tokens kept alive; older ones answer 410 like a compacted etcd


class Snapshot:
    """The items of one list at its resourceVersion; never changed after the first page.

    ``cluster`` is the logical cluster listed (the wildcard across them): only a list of the
    same one may continue it."""

    __slots__ = ("cluster", "items", "rv")

    def __init__(self, rv: int, items: list[Entry], cluster: str = ROOT) -> None:
        self.rv = rv
        self.items = items
        self.cluster = cluster


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


class Snapshots:
    """The snapshots of the last ``MAX_SNAPSHOTS`` paged lists, by id.

    Not thread-safe: the storage lock guards it. A snapshot's items never change.
    """

    def __init__(self) -> None:
        self._snapshots: collections.OrderedDict[int, Snapshot] = collections.OrderedDict()
        self._ids = itertools.count(1)

    def resume(self, token: str, cluster: str, compacted: int) -> tuple[Snapshot, int, int]:
        """``(snapshot, start index, snapshot id)`` a continue token of a list of ``cluster``
        names; 400 when it does not decode or continues another cluster's list, 410 when its
        snapshot was dropped or its version is older than ``compacted``."""
        snap_id, start, rv = decode_token(token)
        snap = self._snapshots.get(snap_id)
        if snap is not None and snap.cluster != cluster:
            raise status.bad_request("continue key is not valid: it continues a list of "
                                     "another logical cluster")
        if snap is None or snap.rv != rv or rv < compacted:
            raise status.expired(
                "The provided continue parameter is too old to display a consistent "
                "list result. You can start a new list without the continue parameter.")
        self._snapshots.move_to_end(snap_id)
        return snap, start, snap_id

    def page(
        self, items: list[Entry], rv: int, start: int, limit: int, cluster: str,
        snap_id: int | None = None,
    ) -> tuple[list[Entry], str, int | None]:
        """``(entries, continue token, remaining count)`` of the page of ``items`` (listed at
        ``rv``) from ``start``: ``limit`` of them, all when ``limit`` is 0. A first page
        (``snap_id`` None) that leaves items out keeps them as a new snapshot."""
        end = start + limit if limit > 0 else len(items)
        if end >= len(items):
            return items[start:], "", None
        if snap_id is None:
            snap_id = next(self._ids)
            self._snapshots[snap_id] = Snapshot(rv, items, cluster)
            while len(self._snapshots) > MAX_SNAPSHOTS:
                self._snapshots.popitem(last=False)
        return items[start:end], encode_token(snap_id, end, rv), len(items) - end

    def clear(self) -> None:
        """Forget every snapshot: their tokens now answer 410."""
        self._snapshots.clear()
