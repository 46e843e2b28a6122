"""kinformer: client-go's informer machinery for Python, on threads.

Reflector, DeltaFIFO, Indexer and SharedIndexInformer keep a local, indexed cache equal to the
API server through disconnects, expired resource versions and restarts; work queues,
InformerManager and ControllerManager build controllers on top. See README.md and docs/.

Everything a user needs imports from here, grouped as the API reference is. A few names that
were exported once and are internals (``ExplicitKey``, the RealFIFO's ``*Info`` values, ...) or
test fakes (``ChannelWatch``) still resolve here with a :class:`DeprecationWarning` that names
the module to import them from. Inside, the package
is layered: the base modules (errors, context, clock, gvr, meta), then ``cache/``, ``client/``,
``reflector/``, the informers and factories, ``leaderelection/`` beside ``clusters/``, then
``controllers/`` (the controller loop, builder, predicates and cached client) and ``managers/`` on
top; ``cli/`` and ``testing/`` are side wings that ``import kinformer`` never loads.
"""

# ruff: noqa: I001 (imports are grouped as the API reference's sections are, not sorted)

import importlib
import logging
import warnings
from typing import Any

# identity and cancellation
from kinformer.context import Context, context_for_channel
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource, KubeObject

# keys, stores, indexers
from kinformer.cache.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexedStore,
    Indexer,
    ObjectName,
    Store,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from kinformer.cache.thread_safe_store import ThreadSafeStore
from kinformer.cache.compact_store import CompactIndexer

# DeltaFIFO and RealFIFO
from kinformer.cache.delta_fifo import Delta, DeltaFIFO, Deltas, DeltaType
from kinformer.cache.real_fifo import RealFIFO

# list and watch
from kinformer.backoff import Backoff, BackoffManager
from kinformer.client.discovery import CachedDiscoveryClient, DiscoveryResult
from kinformer.client.listerwatcher import ListerWatcher, ListOptions, ListResult, Watch, WatchEvent
from kinformer.client.listwatch import ListWatch
from kinformer.reflector import Reflector

# informers, listers, label selectors
from kinformer.appliers import InformerProfile
from kinformer.cache.labels import Selector, everything, parse_selector, selector_from_dict
from kinformer.cache.lister import GenericLister, GenericNamespaceLister
from kinformer.factory import DynamicSharedInformerFactory, GenericInformer
from kinformer.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    deleted_object,
    wait_for_cache_sync,
)
from kinformer.informer import SharedIndexInformer
from kinformer.processor import ResourceEventHandlerRegistration
from kinformer.transforms import chain, strip_managed_fields

# work queues
from kinformer.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    PriorityQueue,
    RateLimiter,
    RateLimitingQueue,
    WithMaxWaitRateLimiter,
    WorkQueue,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)

# managers
from kinformer.managers.controller_manager import CONTROLLER_NAME_PREFIX, ControllerManager, ManagedController
from kinformer.managers.discovering_factory import (
    DiscoveringDynamicSharedInformerFactory,
    GVREventHandler,
    GVREventHandlerFuncs,
)
from kinformer.managers.informer_manager import InformerManager
from kinformer.managers.source import InformerSource

# controllers
from kinformer.controllers import (
    AnnotationChangedPredicate,
    BuiltController,
    CachedClient,
    Controller,
    ControllerBuilder,
    EnqueueRequestForObject,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    PredicateFuncs,
    Reconciler,
    Request,
    RequestReconciler,
    ResourceVersionChangedPredicate,
    Result,
    and_,
    compare_resource_version,
    not_,
    or_,
)

# leader election
from kinformer.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    ResourceLock,
    ShardCoordinator,
)

# sharding across replicas
from kinformer.sharding import ShardSelector, cluster_shard_hash, fnv1a_64

# many clusters: cluster-aware keys, indexes, listers and handlers
from kinformer.cache.cluster import (
    ALL_LOGICAL_CLUSTERS,
    CLUSTER_AND_NAMESPACE_INDEX,
    CLUSTER_INDEX,
    LOGICAL_CLUSTER_ANNOTATION,
    check_logical_cluster,
    cluster_and_namespace_index_func,
    cluster_aware_key_func,
    cluster_index_func,
    split_cluster_aware_key,
    to_cluster_aware_key,
    with_cluster_indexes,
)
from kinformer.cache.cluster_lister import GenericClusterLister
from kinformer.cluster_handlers import ClusterEventHandler, ClusterEventHandlerFuncs

# many clusters: member clusters that come and go
from kinformer.clusters import (
    ClusterHandlerRegistration,
    ClusterProfileProvider,
    ClusterProvider,
    ClusterStatus,
    KubeconfigContextsProvider,
    KubeconfigSecretProvider,
    MultiClusterInformer,
    MultiClusterInformerFactory,
    StaticClusterProvider,
    SyncingClusterProvider,
)

# metrics and probes
from kinformer.metrics import (
    MetricsProvider,
    NoopMetricsProvider,
    ProbeServer,
    informers_synced_check,
    leader_election_check,
)

# errors
from kinformer.errors import (
    AlreadyStartedError,
    AmbiguousNameError,
    APIError,
    BadRequestError,
    ClustersMergedError,
    ConfigurationError,
    ConflictError,
    ConnectionRefusedAPIError,
    DecodeError,
    ExecPluginError,
    FIFOClosedError,
    ForbiddenError,
    GoneError,
    IndexerConflictError,
    IndexerError,
    InvalidError,
    InvalidKeyError,
    InvalidResourceVersionError,
    KeyFuncError,
    KinformerError,
    LabelSelectorError,
    LeaderElectionError,
    LifecycleError,
    MethodNotAllowedError,
    NotFoundError,
    ServerError,
    ServerTimeoutError,
    ShardSelectorError,
    StoppedError,
    SyncTimeoutError,
    TerminalError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    VeryShortWatchError,
)

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 (grouped by area, as the API reference is)
    # identity and cancellation
    "APIResourceMeta",
    "Context",
    "GroupVersionKind",
    "GroupVersionResource",
    "KubeObject",
    "context_for_channel",
    # keys, stores, indexers
    "NAMESPACE_INDEX",
    "CompactIndexer",
    "DeletedFinalStateUnknown",
    "IndexedStore",
    "Indexer",
    "ObjectName",
    "Store",
    "ThreadSafeStore",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
    # DeltaFIFO and RealFIFO
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "RealFIFO",
    # list and watch
    "Backoff",
    "BackoffManager",
    "CachedDiscoveryClient",
    "DiscoveryResult",
    "ListOptions",
    "ListResult",
    "ListWatch",
    "ListerWatcher",
    "Reflector",
    "Watch",
    "WatchEvent",
    # informers, listers, label selectors
    "DynamicSharedInformerFactory",
    "FilteringResourceEventHandler",
    "GenericInformer",
    "GenericLister",
    "GenericNamespaceLister",
    "InformerProfile",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Selector",
    "SharedIndexInformer",
    "chain",
    "deleted_object",
    "everything",
    "parse_selector",
    "selector_from_dict",
    "strip_managed_fields",
    "wait_for_cache_sync",
    # work queues
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    # managers: fleet's InformerManager, kcp's discovering factory and controller manager
    "CONTROLLER_NAME_PREFIX",
    "ControllerManager",
    "DiscoveringDynamicSharedInformerFactory",
    "GVREventHandler",
    "GVREventHandlerFuncs",
    "InformerManager",
    "InformerSource",
    "ManagedController",
    # controllers
    "Controller",
    "EnqueueRequestForObject",
    "Reconciler",
    "Result",
    "Request",
    "ControllerBuilder",
    "BuiltController",
    "RequestReconciler",
    "CachedClient",
    "compare_resource_version",
    "Predicate",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "AnnotationChangedPredicate",
    "ResourceVersionChangedPredicate",
    "PredicateFuncs",
    "and_",
    "or_",
    "not_",
    # leader election
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    # sharding across replicas
    "ShardCoordinator",
    "ShardSelector",
    "cluster_shard_hash",
    "fnv1a_64",
    # many clusters: cluster-aware keys, indexes, listers and handlers
    "ALL_LOGICAL_CLUSTERS",
    "CLUSTER_AND_NAMESPACE_INDEX",
    "CLUSTER_INDEX",
    "LOGICAL_CLUSTER_ANNOTATION",
    "ClusterEventHandler",
    "ClusterEventHandlerFuncs",
    "GenericClusterLister",
    "check_logical_cluster",
    "cluster_and_namespace_index_func",
    "cluster_aware_key_func",
    "cluster_index_func",
    "split_cluster_aware_key",
    "to_cluster_aware_key",
    "with_cluster_indexes",
    # many clusters: member clusters that come and go
    "ClusterHandlerRegistration",
    "ClusterProfileProvider",
    "ClusterProvider",
    "ClusterStatus",
    "KubeconfigContextsProvider",
    "KubeconfigSecretProvider",
    "MultiClusterInformer",
    "MultiClusterInformerFactory",
    "StaticClusterProvider",
    "SyncingClusterProvider",
    # metrics and probes (set_provider and PrometheusMetricsProvider live in kinformer.metrics)
    "MetricsProvider",
    "NoopMetricsProvider",
    "ProbeServer",
    "informers_synced_check",
    "leader_election_check",
    # errors
    "APIError",
    "AlreadyStartedError",
    "AmbiguousNameError",
    "BadRequestError",
    "ClustersMergedError",
    "ConfigurationError",
    "ConflictError",
    "ConnectionRefusedAPIError",
    "DecodeError",
    "ExecPluginError",
    "FIFOClosedError",
    "ForbiddenError",
    "GoneError",
    "IndexerConflictError",
    "IndexerError",
    "InvalidError",
    "InvalidKeyError",
    "InvalidResourceVersionError",
    "KeyFuncError",
    "KinformerError",
    "LabelSelectorError",
    "LeaderElectionError",
    "LifecycleError",
    "MethodNotAllowedError",
    "NotFoundError",
    "ServerError",
    "ServerTimeoutError",
    "ShardSelectorError",
    "StoppedError",
    "SyncTimeoutError",
    "TerminalError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "VeryShortWatchError",
]

# Names exported once that are internals, or test fakes: each still resolves here, with a
# DeprecationWarning naming the module to import it from, where it stays.
MOVED = {
    "ExplicitKey": "kinformer.cache.store",
    "InformerIndexer": "kinformer.cache.store",
    "KeyListerGetter": "kinformer.cache.store",
    "index_func_to_key_func_adapter": "kinformer.cache.store",
    "as_context": "kinformer.context",
    "SYNC_ALL_INFO": "kinformer.cache.real_fifo",
    "BookmarkInfo": "kinformer.cache.real_fifo",
    "ReplacedAllInfo": "kinformer.cache.real_fifo",
    "SyncAllInfo": "kinformer.cache.real_fifo",
    "ChannelWatch": "kinformer.testing",
}


def __getattr__(name: str) -> Any:
    module = MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"kinformer.{name} is not part of the public API; import it from {module}",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), name)
