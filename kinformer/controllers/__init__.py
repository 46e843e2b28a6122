"""Controllers: what users build on informers (controller-runtime's layer, with clusters).

:class:`Controller` drains a rate-limited work queue into a :class:`Reconciler` on worker threads
(``controller.py``); :class:`Request` names one object and its cluster (``request.py``);
predicates filter events (``predicates.py``); :class:`ControllerBuilder` wires a source's
informers to a controller that queues requests on the priority queue of
:mod:`kinformer.workqueue.priority` (``builder.py``); :class:`CachedClient` reads from the caches
and writes to the servers (``cached_client.py``), and :mod:`~kinformer.controllers.staleness`
keeps a reconcile off a cache that has not seen its own last write.

The layer sits above the factories and ``clusters/`` and below ``managers/``: the discovering
factory is known here only through the :class:`~kinformer.controllers.builder.DiscoveringSource`
protocol, so ``managers/`` may build on controllers and never the other way round.
"""

from kinformer.controllers.builder import BuiltController, ControllerBuilder, RequestReconciler
from kinformer.controllers.cached_client import CachedClient
from kinformer.controllers.controller import Controller, EnqueueRequestForObject, Reconciler, Result
from kinformer.controllers.predicates import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    PredicateFuncs,
    ResourceVersionChangedPredicate,
    and_,
    not_,
    or_,
)
from kinformer.controllers.request import Request
from kinformer.controllers.staleness import StalenessTracker, compare_resource_version

__all__ = [
    "AnnotationChangedPredicate",
    "BuiltController",
    "CachedClient",
    "Controller",
    "ControllerBuilder",
    "EnqueueRequestForObject",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "PredicateFuncs",
    "Reconciler",
    "Request",
    "RequestReconciler",
    "ResourceVersionChangedPredicate",
    "Result",
    "StalenessTracker",
    "and_",
    "compare_resource_version",
    "not_",
    "or_",
]
