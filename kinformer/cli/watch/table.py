"""What ``kinformer watch`` prints: one line per event, or a kubectl-style table of the cache.

:class:`EventPrinter` is the informer's event handler (``TYPE namespace/name resourceVersion``),
:class:`ClusterEventPrinter` the same with the cluster first; :func:`print_table` and
:func:`print_cluster_table` print ``--once``'s table with kubectl's short ages. All write to a text
stream given to them, never to ``sys.stdout`` directly. An object of a kcp logical cluster (its
``kcp.io/cluster`` annotation) other than the cluster it is printed under shows as
``CLUSTER/LOGICAL`` (a member whose server is kcp's ``/clusters/*``), so two logical clusters'
``default/app`` of one member never print as one.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from kinformer import handlers, meta
from kinformer.cache import cluster as _cluster
from kinformer.cluster_handlers import ClusterEventHandler


class EventPrinter:
    """An informer event handler printing ``TYPE namespace/name resourceVersion``, one line each.

    Runs on the informer's handler thread (one at a time, in event order). Objects of the initial
    list print as ADDED; a resync that changed nothing prints nothing. A write that fails because
    the reader went away (``| head``) calls ``on_broken_pipe`` instead of raising.
    """

    def __init__(self, out: TextIO, on_broken_pipe: Callable[[], None] | None = None) -> None:
        self._out = out
        self._on_broken_pipe = on_broken_pipe
        self._lock = threading.Lock()  # one line at a time, whichever thread prints it

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._print("ADDED", obj)

    def on_update(self, old: Any, new: Any) -> None:
        if meta.resource_version(old) == meta.resource_version(new):
            return
        self._print("MODIFIED", new)

    def on_delete(self, obj: Any) -> None:
        self._print("DELETED", handlers.deleted_object(obj))

    def _print(self, event: str, obj: Any, prefix: str = "") -> None:
        line = f"{prefix}{event:<9} {_key(obj):<48} {meta.resource_version(obj) or ''}\n"
        try:
            with self._lock:
                self._out.write(line)
                self._out.flush()
        except (BrokenPipeError, ValueError):
            if self._on_broken_pipe is not None:
                self._on_broken_pipe()


class ClusterEventPrinter(ClusterEventHandler):
    """:class:`EventPrinter`'s lines with the cluster first, padded to ``cluster_width``, for a
    multi-cluster informer (whose handler runs on one thread, whatever the clusters) or a
    cluster-aware one (each object's logical cluster). A longer cluster name widens the column
    from its line on, so a source whose clusters are not known up front may start at 0."""

    def __init__(self, out: TextIO, cluster_width: int,
                 on_broken_pipe: Callable[[], None] | None = None) -> None:
        self._printer = EventPrinter(out, on_broken_pipe)
        self._width = cluster_width

    def on_add(self, cluster: str, obj: Any) -> None:
        self._printer._print("ADDED", obj, self._prefix(cluster, obj))

    def on_update(self, cluster: str, old: Any, new: Any) -> None:
        if meta.resource_version(old) != meta.resource_version(new):
            self._printer._print("MODIFIED", new, self._prefix(cluster, new))

    def on_delete(self, cluster: str, obj: Any) -> None:
        obj = handlers.deleted_object(obj)
        self._printer._print("DELETED", obj, self._prefix(cluster, obj))

    def _prefix(self, cluster: str, obj: Any) -> str:
        shown = _shown_cluster(cluster, obj)
        self._width = max(self._width, len(shown))  # on the one handler thread
        return f"{shown:<{self._width}}   "


def print_table(out: TextIO, objs: Sequence[Any], show_namespace: bool, now: datetime.datetime) -> None:
    """Print ``objs`` sorted by namespace and name as a kubectl-style table; nothing for none."""
    _print_rows(out, [], {"": objs}, show_namespace, now)


def print_cluster_table(out: TextIO, by_cluster: Mapping[str, Sequence[Any]], show_namespace: bool,
                        now: datetime.datetime) -> None:
    """Print each cluster's objects as one kubectl-style table with a CLUSTER column first,
    sorted by cluster (in the order given), logical cluster, namespace and name; nothing for none."""
    _print_rows(out, ["CLUSTER"], by_cluster, show_namespace, now)


def _print_rows(out: TextIO, first: list[str], by_cluster: Mapping[str, Sequence[Any]],
                show_namespace: bool, now: datetime.datetime) -> None:
    header = first + (["NAMESPACE"] if show_namespace else []) + ["NAME", "RESOURCEVERSION", "AGE"]
    rows = [header]
    for cluster, objs in by_cluster.items():
        shown = {id(obj): _shown_cluster(cluster, obj) if first else "" for obj in objs}
        for obj in sorted(objs, key=lambda o: (shown[id(o)], *meta.namespace_and_name(o))):
            row = [shown[id(obj)]] if first else []
            row += [meta.namespace(obj)] if show_namespace else []
            row += [meta.name(obj), meta.resource_version(obj) or "", _age(_created(obj), now)]
            rows.append(row)
    if len(rows) == 1:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        out.write("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.flush()


def _shown_cluster(cluster: str, obj: Any) -> str:
    """``cluster``, or ``cluster/<logical>`` for an object of another kcp logical cluster."""
    logical = _cluster.cluster_of(obj)
    return f"{cluster}/{logical}" if logical and logical != cluster else cluster


def _key(obj: Any) -> str:
    """The object's store key, "" parts for what it lacks: it never raises, as a key function
    would on a tombstone that holds no object."""
    return meta.object_key(meta.namespace(obj), meta.name(obj))


def _created(obj: Any) -> Any:
    """``metadata.creationTimestamp`` of decoded JSON, or None."""
    metadata = meta.metadata(obj)
    return metadata.get("creationTimestamp") if isinstance(metadata, dict) else None


def _age(timestamp: Any, now: datetime.datetime) -> str:
    """kubectl's short age: ``42s``, ``5m``, ``3h``, ``2d``; ``<unknown>`` without a timestamp."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        created = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        return "<unknown>"
    seconds = max(0, int((now - created).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 2 * 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
