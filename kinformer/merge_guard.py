"""The merge guard: an informer that finds two logical clusters' objects under one key fails.

An informer knows it spans kcp logical clusters only when its ListerWatcher says so (``cluster``
of :func:`~kinformer.client.listerwatcher.describe`); then it keys by cluster
(:mod:`kinformer.informer_cache`). Over one that does not say (a wrapper around a
``/clusters/*`` ListWatch, a ListerWatcher of one's own) it keys ``namespace/name``, and
``default/app`` of ``root:a`` and of ``root:b`` would silently be one object. It is found where a
key collision is visible already, at no cost to the usual list or event: a FIFO's ``replace``
given one key twice for objects of two clusters raises
:class:`~kinformer.ClustersMergedError` (:func:`kinformer.cache.cluster.check_one_cluster_per_key`),
and the applier (:mod:`kinformer.appliers`) finds a change that would replace a cached object
of another cluster. :class:`MergeGuard` is what the informer (:mod:`kinformer.informer`) does
then: log it once, at ERROR, report the informer unsynced, and end the reflector's round with
the error, so the reflector relists after a backoff step, the list fails again while both
objects exist, and :meth:`~kinformer.SharedIndexInformer.last_error` and the watch error
handler say why.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from kinformer import errors, meta
from kinformer.cache import cluster as _cluster
from kinformer.reflector import reflector, sink

log = logging.getLogger(__name__)


class MergeGuard:
    """One informer's answer to two logical clusters' objects under one key of its cache.

    :attr:`merged` is the error found, None while none is; the informer counts as unsynced
    while it is set. It is set by :meth:`found`, by a ``ClustersMergedError`` reaching the watch
    error handler (:meth:`watch_error_handler`) and by a change the applier reports
    (:meth:`changed`), and cleared by a list the FIFO takes whole (:meth:`sink`): the cache then
    holds the server's objects again, one per key. The first error is logged at ERROR, once
    per informer; later ones at DEBUG. Thread-safe.
    """

    __slots__ = ("_lock", "_logged", "merged", "name", "reflector")

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()  # guards _logged: the ERROR line is written once
        self._logged = False
        self.merged: errors.ClustersMergedError | None = None  # read without the lock
        self.reflector: reflector.Reflector | None = None  # the informer's, once it runs

    def found(self, error: errors.ClustersMergedError) -> None:
        """``error`` was found: the informer is unsynced until a list is taken whole."""
        self.merged = error
        with self._lock:
            first, self._logged = not self._logged, True
        log.log(logging.ERROR if first else logging.DEBUG,
                "informer %s: objects of logical clusters %s share the key %s, and this informer "
                "keys without the cluster (its ListerWatcher does not say it lists /clusters/*): "
                "it will not sync while both exist; list through ListWatch.for_resource("
                "cluster=\"*\") or give key_func=cluster_aware_key_func",
                self.name, " and ".join(repr(c) for c in error.clusters), error.key)

    def changed(self, key: str, old: Any, new: Any) -> None:
        """The applier's ``merged``: ``new`` replaced ``old`` of another cluster under ``key``.
        Found, and the reflector's round ends with the error (a relist after a backoff step)."""
        error = errors.ClustersMergedError(
            key, [_cluster.cluster_of(old), _cluster.cluster_of(new)], self.name)
        self.found(error)
        refl = self.reflector
        if refl is not None:
            refl.fail_round(error)

    def watch_error_handler(self, then: reflector.WatchErrorHandler) -> reflector.WatchErrorHandler:
        """``then``, after finding a ``ClustersMergedError`` among the reflector's errors."""

        def on_error(failed: reflector.Reflector, error: BaseException) -> None:
            if isinstance(error, errors.ClustersMergedError):
                self.found(error)
            then(failed, error)

        return on_error

    def sink(self, inner: sink.Sink) -> sink.Sink:
        """``inner``, a list it takes whole clearing :attr:`merged`; every other method its own."""
        replace, replace_listed = inner.replace, inner.replace_listed

        def replaced(objs: list[Any], resource_version: str) -> None:
            replace(objs, resource_version)
            self.merged = None

        def replaced_listed(objs: list[Any], keys: list[str],
                            namespace_runs: meta.NamespaceRuns | None, resource_version: str) -> None:
            assert replace_listed is not None
            replace_listed(objs, keys, namespace_runs, resource_version)
            self.merged = None

        return dataclasses.replace(
            inner, replace=replaced,
            replace_listed=None if replace_listed is None else replaced_listed)
