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

import inspect
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
    ``unsubscribe`` is called when the subscriber stops (see :func:`end_subscription`): as
    ``unsubscribe(id, queue)`` with the queue ``subscribe`` gave it when it takes a second
    argument, so that it ends that one subscription (not one made since under the same id),
    else as ``unsubscribe(id)``. All three may be called from any thread and must not block
    for long.
    """

    subscribe: Callable[[str], queue.Queue[Any]]
    informers: Callable[[], Informers]
    unsubscribe: Callable[..., object] | None = None


def end_subscription(source: InformerSource, id: str, subscription: queue.Queue[Any]) -> None:
    """End the subscription ``source.subscribe(id)`` returned as ``subscription``.

    ``source.unsubscribe(id, subscription)`` when it takes the queue: a subscriber stopping
    late leaves alone a newer one of the same id (a manager restarted while its previous run
    still stops). ``source.unsubscribe(id)`` when it takes the id alone, as sources written
    before it could; nothing without an ``unsubscribe``.
    """
    unsubscribe = source.unsubscribe
    if unsubscribe is None:
        return
    if _takes_subscription(unsubscribe):
        unsubscribe(id, subscription)
    else:
        unsubscribe(id)


def _takes_subscription(unsubscribe: Callable[..., object]) -> bool:
    try:
        inspect.signature(unsubscribe).bind("", None)
    except (TypeError, ValueError):  # takes the id alone, or has no signature to read (a builtin)
        return False
    return True
