"""Paged lists of the fake API server: the snapshot a first page takes and its continue token.

Like kube-apiserver over etcd, a limited list answers with an opaque token naming the snapshot
(and the position in it) the following pages are served from, so every page of one list shows
the same resourceVersion. A snapshot holds every object the list covered, before any selector:
each page applies the selectors of its own request, as the real server filters each page of
keys it reads, and the token goes on after the last object the page holds. :class:`Snapshots`
keeps the last ``MAX_SNAPSHOTS`` of them (under the lock of
:class:`~kinformer.testing._apiserver.storage.storage.Storage`); a token that does not decode,
or continues a list of another resource, namespace or logical cluster, answers 400.

A token for a dropped or compacted snapshot answers 410 ``Expired`` as etcd's storage does: the
``Status`` carries in its ``metadata.continue`` an *inconsistent* token, which lists the rest,
after the key the expired token stopped at, from the current state (kube-apiserver's token at
resourceVersion -1); the pages it starts are one snapshot again, at the current version.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import collections
import itertools
import json
from collections.abc import Callable
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.clusters import ANNOTATION, ROOT
from kinformer.testing._apiserver.records import Entry

MAX_SNAPSHOTS = 64  # continue tokens kept alive; older ones answer 410 like a compacted etcd
INCONSISTENT = 0  # the snapshot id of an inconsistent token: the rest of a list, at the current state

# etcd storage's words for an expired continue token when it hands back an inconsistent one
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.")

Key = tuple[str, str, str]  # (logical cluster, namespace, name): the order a list is read in


class Snapshot:
    """Every item of one list at its resourceVersion, unfiltered; never changed after the
    first page.

    ``resource`` (the group resource), ``namespace`` ("" for every namespace) and ``cluster``
    (the wildcard across them) say what was listed: only a list of the same may continue it."""

    __slots__ = ("cluster", "items", "namespace", "resource", "rv")

    def __init__(self, rv: int, items: list[Entry], resource: str = "", namespace: str = "",
                 cluster: str = ROOT) -> None:
        self.rv = rv
        self.items = items
        self.resource = resource
        self.namespace = namespace
        self.cluster = cluster


def entry_key(entry: Entry) -> Key:
    """The key ``entry`` is listed under; lists read entries in this order (the cluster counts
    only across logical clusters, where every object names its own)."""
    metadata = entry.obj["metadata"]
    cluster = (metadata.get("annotations") or {}).get(ANNOTATION, "")
    return (str(cluster), str(metadata.get("namespace") or ""), str(metadata["name"]))


def invalid_token(reason: str) -> status.StatusError:
    """The 400 for a continue token that cannot continue this list, in the real server's words."""
    return status.bad_request(f"invalid continue token: continue key is not valid: {reason}")


def encode_token(snap_id: int, index: int, rv: int, key: Key, prefix: str) -> str:
    """The continue token for the page starting at ``index`` of snapshot ``snap_id``, after the
    entry listed under ``key``, in the list ``prefix`` names (:func:`list_prefix`)."""
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "snap": snap_id, "i": index,
                      "k": list(key), "p": prefix}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str) -> tuple[int, int, int, Key, str]:
    """``(snapshot id, index, resourceVersion, key, prefix)`` of a continue token; 400 when
    malformed."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        snap_id, index, rv, key, prefix = data["snap"], data["i"], data["rv"], data["k"], data["p"]
        if not all(isinstance(x, int) and x >= 0 for x in (snap_id, index, rv)):
            raise ValueError("bad field")
        if (not isinstance(key, list) or len(key) != 3
                or not all(isinstance(part, str) for part in key) or not isinstance(prefix, str)):
            raise ValueError("bad key")
    except (ValueError, TypeError, KeyError, binascii.Error) as err:
        raise invalid_token(str(err)) from None
    return snap_id, index, rv, (key[0], key[1], key[2]), prefix


def list_prefix(resource: str, namespace: str, cluster: str) -> str:
    """What one list covers, as a token records it: only a list of the same continues it."""
    return f"{cluster}/{resource}/{namespace}"


def start_after(items: list[Entry], key: Key) -> int:
    """The index of the first of ``items`` (in list order) listed after ``key``."""
    return bisect.bisect_right(list(map(entry_key, items)), key)


class Snapshots:
    """The snapshots of the last ``MAX_SNAPSHOTS`` paged lists, by id.

    Not thread-safe: the storage lock guards it. A snapshot's items never change.
    """

    def __init__(self) -> None:
        self._snapshots: collections.OrderedDict[int, Snapshot] = collections.OrderedDict()
        self._ids = itertools.count(1)

    def resume(self, token: str, resource: str, namespace: str, cluster: str, compacted: int,
               current: Callable[[], tuple[list[Entry], int]]) -> tuple[Snapshot, int, int | None]:
        """``(snapshot, start index, snapshot id)`` a continue token of a list of ``resource``
        in ``namespace`` of ``cluster`` names. 400 when it does not decode or continues a list
        of something else; 410, with an inconsistent token, when its snapshot was dropped or its
        version is older than ``compacted``. An inconsistent token continues after its key in
        ``current()`` (the entries and resourceVersion as they are now), a snapshot not kept
        yet (id None)."""
        snap_id, start, rv, key, prefix = decode_token(token)
        snap = self._snapshots.get(snap_id)
        if snap is not None:
            if snap.resource != resource:
                raise invalid_token(f"it continues a list of {snap.resource}, not of {resource}")
            if snap.namespace != namespace:
                raise invalid_token("it continues a list of " + (
                    f'namespace "{snap.namespace}"' if snap.namespace else "every namespace"))
            if snap.cluster != cluster:
                raise invalid_token("it continues a list of another logical cluster")
            if start > len(snap.items):
                raise invalid_token("it points past the end of its list")
        elif prefix != list_prefix(resource, namespace, cluster):
            raise invalid_token(
                "it continues a list of another resource, namespace or logical cluster")
        if snap_id == INCONSISTENT:
            items, now = current()
            return Snapshot(now, items, resource, namespace, cluster), start_after(items, key), None
        if snap is None or snap.rv != rv or rv < compacted:
            rest = encode_token(INCONSISTENT, 0, 0, key, prefix)
            raise status.StatusError(410, "Expired", INCONSISTENT_CONTINUE,
                                     metadata={"continue": rest})
        self._snapshots.move_to_end(snap_id)
        return snap, start, snap_id

    def page(
        self, items: list[Entry], rv: int, start: int, limit: int,
        match: Callable[[dict[str, Any]], bool] | None, resource: str, namespace: str,
        cluster: str, snap_id: int | None = None,
    ) -> tuple[list[Entry], str, int | None]:
        """``(entries, continue token, remaining count)`` of the page of ``items`` (every item
        listed at ``rv``, unfiltered) from ``start``: the first ``limit`` that ``match`` (all
        when None), every match when ``limit`` is 0.

        Like the real server reading keys in order until the page is full, the token goes on
        after the page's last item and is given whenever an item (matching or not) follows it;
        the remaining count is of the items after it, and given only without ``match``. A first
        page (``snap_id`` None) that leaves items out keeps them as a new snapshot.
        """
        if match is None:
            end = start + limit if limit > 0 else len(items)
            page = items[start:end]
        else:
            page = []
            end = start
            while end < len(items) and (limit <= 0 or len(page) < limit):
                entry = items[end]
                end += 1
                if match(entry.obj):
                    page.append(entry)
        if end >= len(items):
            return page, "", None
        if snap_id is None:
            snap_id = next(self._ids)
            self._snapshots[snap_id] = Snapshot(rv, items, resource, namespace, cluster)
            while len(self._snapshots) > MAX_SNAPSHOTS:
                self._snapshots.popitem(last=False)
        token = encode_token(snap_id, end, rv, entry_key(items[end - 1]),
                             list_prefix(resource, namespace, cluster))
        return page, token, (len(items) - end if match is None else None)

    def clear(self) -> None:
        """Forget every snapshot: their tokens now answer 410."""
        self._snapshots.clear()
