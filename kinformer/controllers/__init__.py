"""Controllers: what users build on informers (controller-runtime's layer, with clusters).

:class:`Request` names one object and its cluster (``request.py``); predicates filter events
(``predicates.py``); :class:`ControllerBuilder` wires a source's informers to a controller that
queues requests on the priority queue of :mod:`kinformer.workqueue.priority` (``builder.py``);
:class:`CachedClient` reads from the caches and writes to the servers (``cached_client.py``),
and :mod:`~kinformer.controllers.staleness` keeps a reconcile off a cache that has not seen its
own last write.
"""

from kinformer.controllers.builder import BuiltController, ControllerBuilder, RequestReconciler
from kinformer.controllers.cached_client import CachedClient
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
    "ControllerBuilder",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "PredicateFuncs",
    "Request",
    "RequestReconciler",
    "ResourceVersionChangedPredicate",
    "StalenessTracker",
    "and_",
    "compare_resource_version",
    "not_",
    "or_",
]
