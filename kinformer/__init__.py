"""kinformer: client-go's informer machinery for Python, on threads.

Reflector, DeltaFIFO, Indexer and SharedIndexInformer keep a local, indexed cache equal to the
API server through disconnects, expired resource versions and restarts; work queues,
InformerManager and ControllerManager build controllers on top. See README.md and docs/.
"""

import logging

from kinformer.context import Context, as_context, context_for_channel
from kinformer.delta_fifo import Delta, DeltaFIFO, Deltas, DeltaType
from kinformer.errors import (
    AlreadyStartedError,
    APIError,
    ConfigurationError,
    ConflictError,
    FIFOClosedError,
    ForbiddenError,
    GoneError,
    IndexerConflictError,
    IndexerError,
    KeyFuncError,
    KinformerError,
    NotFoundError,
    ServerError,
    ShutDown,
    StoppedError,
    SyncTimeoutError,
    TerminalError,
    TooManyRequestsError,
    UnauthorizedError,
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
from kinformer.informer import ResourceEventHandlerRegistration, SharedIndexInformer
from kinformer.labels import (
    LabelSelectorError,
    Selector,
    everything,
    parse_selector,
    selector_from_dict,
)
from kinformer.lister import GenericLister, GenericNamespaceLister
from kinformer.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ExplicitKey,
    IndexedStore,
    Indexer,
    InvalidKeyError,
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
from kinformer.thread_safe_store import ThreadSafeStore

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "NAMESPACE_INDEX",
    "APIError",
    "APIResourceMeta",
    "AlreadyStartedError",
    "ConfigurationError",
    "ConflictError",
    "Context",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "DynamicSharedInformerFactory",
    "ExplicitKey",
    "FIFOClosedError",
    "FilteringResourceEventHandler",
    "ForbiddenError",
    "GenericInformer",
    "GenericLister",
    "GenericNamespaceLister",
    "GoneError",
    "GroupVersionKind",
    "GroupVersionResource",
    "IndexedStore",
    "Indexer",
    "IndexerConflictError",
    "IndexerError",
    "InvalidKeyError",
    "KeyFuncError",
    "KeyListerGetter",
    "KinformerError",
    "KubeObject",
    "LabelSelectorError",
    "NotFoundError",
    "ObjectName",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Selector",
    "ServerError",
    "SharedIndexInformer",
    "ShutDown",
    "StoppedError",
    "Store",
    "SyncTimeoutError",
    "TerminalError",
    "ThreadSafeStore",
    "TooManyRequestsError",
    "UnauthorizedError",
    "as_context",
    "context_for_channel",
    "deleted_object",
    "deletion_handling_meta_namespace_key_func",
    "everything",
    "index_func_to_key_func_adapter",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "new_indexer",
    "new_store",
    "parse_selector",
    "selector_from_dict",
    "split_meta_namespace_key",
    "wait_for_cache_sync",
]
