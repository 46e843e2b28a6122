"""kinformer: client-go's informer machinery for Python, on threads.

Reflector, DeltaFIFO, Indexer and SharedIndexInformer keep a local, indexed cache equal to the
API server through disconnects, expired resource versions and restarts; work queues,
InformerManager and ControllerManager build controllers on top. See README.md and docs/.
"""

import logging

from kinformer.context import Context, as_context, context_for_channel
from kinformer.errors import (
    AlreadyStartedError,
    APIError,
    ConfigurationError,
    ConflictError,
    FIFOClosedError,
    ForbiddenError,
    GoneError,
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
from kinformer.gvr import APIResourceMeta, GroupVersionKind, GroupVersionResource, KubeObject

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "APIError",
    "APIResourceMeta",
    "AlreadyStartedError",
    "ConfigurationError",
    "ConflictError",
    "Context",
    "FIFOClosedError",
    "ForbiddenError",
    "GoneError",
    "GroupVersionKind",
    "GroupVersionResource",
    "KinformerError",
    "KubeObject",
    "NotFoundError",
    "ServerError",
    "ShutDown",
    "StoppedError",
    "SyncTimeoutError",
    "TerminalError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "as_context",
    "context_for_channel",
]
