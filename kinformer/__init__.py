"""kinformer: client-go's informer machinery for Python, on threads.

Reflector, DeltaFIFO, Indexer and SharedIndexInformer keep a local, indexed cache equal to the
API server through disconnects, expired resource versions and restarts; work queues,
InformerManager and ControllerManager build controllers on top. See README.md and docs/.

Everything a user needs imports from here, grouped as the API reference is. Inside, the package
is layered: the base modules (errors, context, clock, gvr, meta), then ``cache/``, ``client/``,
``reflector/``, the informers and factories, ``leaderelection/`` beside ``clusters/``, then
``controllers/`` (the controller loop, builder, predicates and cached client) and ``managers/`` on
top; ``cli/`` and ``testing/`` are side wings that ``import kinformer`` never loads.
"""

import logging

from kinformer.appliers import InformerProfile
from kinformer.backoff import Backoff, BackoffManager
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
from kinformer.cache.delta_fifo import Delta, DeltaFIFO, Deltas, DeltaType
from kinformer.cache.labels import Selector, everything, parse_selector, selector_from_dict
from kinformer.cache.lister import GenericLister, GenericNamespaceLister
from kinformer.cache.real_fifo import SYNC_ALL_INFO, BookmarkInfo, RealFIFO, ReplacedAllInfo, SyncAllInfo
from kinformer.cache.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ExplicitKey,
    IndexedStore,
    Indexer,
    InformerIndexer,
    KeyListerGetter,
    ObjectName,
    Store,
    deletion_handling_meta_namespace_key_func,
    index_func_to_key_func_adapter,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from kinformer.cache.thread_safe_store import ThreadSafeStore
from kinformer.client.channel_watch import ChannelWatch
from kinformer.client.discovery import CachedDiscoveryClient, DiscoveryResult
from kinformer.client.listerwatcher import ListerWatcher, ListOptions, ListResult, Watch, WatchEvent
from kinformer.client.listwatch import ListWatch
from kinformer.cluster_handlers import ClusterEventHandler, ClusterEventHandlerFuncs
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
)
from kinformer.context import Context, as_context, context_for_channel
from kinformer.controllers import (
    AnnotationChangedPredicate,
    BuiltController,
    CachedClient,
    ControllerBuilder,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    PredicateFuncs,
    Request,
    RequestReconciler,
    ResourceVersionChangedPredicate,
    and_,
    compare_resource_version,
    not_,
    or_,
)
from kinformer.controllers.controller import Controller, EnqueueRequestForObject, Reconciler, Result
from kinformer.errors import (
    AlreadyStartedError,
    AmbiguousNameError,
    APIError,
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
    InvalidKeyError,
    InvalidResourceVersionError,
    KeyFuncError,
    KinformerError,
    LabelSelectorError,
    LeaderElectionError,
    NotFoundError,
    ServerError,
    ShardSelectorError,
    StoppedError,
    SyncTimeoutError,
    TerminalError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    VeryShortWatchError,
)
from kinformer.factory import DynamicSharedInformerFactory, GenericInformer
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource, KubeObject
from kinformer.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    deleted_object,
    wait_for_cache_sync,
)
from kinformer.informer import SharedIndexInformer
from kinformer.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    ResourceLock,
    ShardCoordinator,
)
from kinformer.managers.controller_manager import CONTROLLER_NAME_PREFIX, ControllerManager, ManagedController
from kinformer.managers.discovering_factory import (
    DiscoveringDynamicSharedInformerFactory,
    GVREventHandler,
    GVREventHandlerFuncs,
)
from kinformer.managers.informer_manager import InformerManager
from kinformer.managers.source import InformerSource
from kinformer.metrics import (
    MetricsProvider,
    NoopMetricsProvider,
    ProbeServer,
    informers_synced_check,
    leader_election_check,
)
from kinformer.processor import ResourceEventHandlerRegistration
from kinformer.reflector import Reflector
from kinformer.sharding import ShardSelector, cluster_shard_hash, fnv1a_64
from kinformer.transforms import chain, strip_managed_fields
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

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 (grouped by area, as the API reference is)
    # identity and cancellation
    "APIResourceMeta",
    "Context",
    "GroupVersionKind",
    "GroupVersionResource",
    "KubeObject",
    "as_context",
    "context_for_channel",
    # keys, stores, indexers
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "IndexedStore",
    "Indexer",
    "InformerIndexer",
    "KeyListerGetter",
    "ObjectName",
    "Store",
    "ThreadSafeStore",
    "deletion_handling_meta_namespace_key_func",
    "index_func_to_key_func_adapter",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
    # DeltaFIFO and RealFIFO
    "SYNC_ALL_INFO",
    "BookmarkInfo",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "RealFIFO",
    "ReplacedAllInfo",
    "SyncAllInfo",
    # list and watch
    "Backoff",
    "BackoffManager",
    "CachedDiscoveryClient",
    "ChannelWatch",
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
    # managers and controllers
    "CONTROLLER_NAME_PREFIX",
    "Controller",
    "ControllerManager",
    "DiscoveringDynamicSharedInformerFactory",
    "EnqueueRequestForObject",
    "GVREventHandler",
    "GVREventHandlerFuncs",
    "InformerManager",
    "InformerSource",
    "ManagedController",
    "Reconciler",
    "Result",
    # controllers (fourth wave)
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
    "InvalidKeyError",
    "InvalidResourceVersionError",
    "KeyFuncError",
    "KinformerError",
    "LabelSelectorError",
    "LeaderElectionError",
    "NotFoundError",
    "ServerError",
    "ShardSelectorError",
    "StoppedError",
    "SyncTimeoutError",
    "TerminalError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "VeryShortWatchError",
]
