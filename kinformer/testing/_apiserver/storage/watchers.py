"""Watchers of the fake API server: selectors and the queue each open watch reads from.

Writers put ``(tag, payload)`` items into a watcher's queue under the storage lock (a put never
waits); the connection serving the watch takes them off and writes them out.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable
from typing import Any

from kinformer.cache import labels as labelsel
from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.clusters import ROOT
from kinformer.testing._apiserver.resources import ResourceType

# Watch queue item tags (besides events).
EVENT = "event"
INITIAL = "initial"
INITIAL_END = "initial-end"
STOP = "stop"  # end the stream cleanly
DROP = "drop"  # close the connection abruptly
GARBAGE = "garbage"  # write a malformed line
CUT = "cut"  # write half a line, then close abruptly
FREEZE = "freeze"  # write nothing more, keep the connection open until the client closes it


class FieldSelector:
    """A parsed field selector: (path, negated, value) terms over dotted paths, all must hold."""

    def __init__(self, terms: Iterable[tuple[tuple[str, ...], bool, str]] = ()) -> None:
        self.terms = tuple(terms)

    @classmethod
    def parse(cls, text: str, rt: ResourceType) -> FieldSelector:
        """Parse ``metadata.name=x,metadata.namespace!=y``; unknown fields raise 400."""
        allowed = {"metadata.name", "metadata.namespace", *rt.extra_fields}
        terms = []
        for raw in text.split(","):
            part = raw.strip()
            if not part:
                continue
            for op in ("!=", "==", "="):
                field, sep, value = part.partition(op)
                if sep:
                    break
            else:
                raise status.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            field = field.strip()
            if field not in allowed:
                raise status.bad_request(f'field label not supported: {field}')
            terms.append((tuple(field.split(".")), op == "!=", value.strip()))
        return cls(terms)

    def matches(self, obj: dict[str, Any]) -> bool:
        for path, negated, value in self.terms:
            node: Any = obj
            for step in path:
                node = node.get(step) if isinstance(node, dict) else None
            actual = "" if node is None else str(node)
            if (actual == value) == negated:
                return False
        return True


class Watcher:
    """One open watch: its filter, its queue of pending items, and where it has got to.

    ``cluster`` is the logical cluster it watches, or the wildcard for all of them.

    Writers put ``(tag, payload)`` items under the storage lock; the serving thread takes them
    off without it. ``overflowed`` is set by a writer when the queue grows past the backlog.
    """

    def __init__(
        self,
        rt: ResourceType,
        namespace: str,
        selector: labelsel.Selector,
        fields: FieldSelector,
        shard: Callable[[dict[str, Any]], bool] | None = None,
        cluster: str = ROOT,
    ) -> None:
        self.rt = rt
        self.cluster = cluster
        self.shard = shard
        self.namespace = namespace
        self.selector = selector
        self.fields = fields
        self.queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.last_rv = 0
        self.initial_left = 0  # synthetic ADDED items still queued; no bookmark before they are out
        self.overflowed = False
        self.filtering = not selector.empty() or bool(fields.terms) or shard is not None

    def matches(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` passes the label, field and shard selectors."""
        if not self.filtering:
            return True
        meta = obj.get("metadata") or {}
        return (self.selector.matches(meta.get("labels")) and self.fields.matches(obj)
                and (self.shard is None or self.shard(obj)))
