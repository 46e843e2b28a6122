"""InformerSource: the seam between something that runs informers and something that follows them.

kcp's syncer hands its controller manager a source of informers (the ddsif's ``Subscribe`` and
``Informers``); this module is that agreement and nothing else. The producer,
:class:`~kinformer.DiscoveringDynamicSharedInformerFactory`
(``managers/discovering_factory.py``), builds one with
:meth:`~kinformer.DiscoveringDynamicSharedInformerFactory.informer_source`; the consumer,
:class:`~kinformer.ControllerManager` (``managers/controller_manager.py``), reads it. Both
import this module and neither imports the other, so a test (or another producer) can drive a
manager with plain functions.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from kinformer.gvr import GroupVersionResource

Informers: TypeAlias = tuple[Mapping[GroupVersionResource, Any], Sequence[GroupVersionResource]]
"""``(synced, not_synced)``: the synced informers by resource, and the resources still syncing."""


@dataclass(frozen=True, slots=True)
class InformerSource:
    """Where a :class:`~kinformer.ControllerManager` learns which resources have (synced) informers.

    ``subscribe(id)`` returns a ``queue.Queue`` of capacity 1 that receives a notification
    (any value, put without blocking, dropped while one is pending) whenever the set of
    informers changes. ``informers()`` returns ``(synced, not_synced)``: the informers that
    have synced by resource, and the resources whose informer has not synced yet. The optional
    ``unsubscribe(id)`` is called when the subscriber stops. All three may be called from any
    thread and must not block for long.
    """

    subscribe: Callable[[str], queue.Queue[Any]]
    informers: Callable[[], Informers]
    unsubscribe: Callable[[str], object] | None = None
