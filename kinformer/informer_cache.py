"""What cache an informer keeps: its kind, its keys, and how objects are made ready for it.

Three choices, each made once, here, when a :class:`~kinformer.SharedIndexInformer` is made:

- **Cluster-awareness** comes from the ListerWatcher's own word
  (:class:`~kinformer.client.listerwatcher.DescribedListerWatcher`): over every kcp logical
  cluster at once (``cluster="*"``) the cache is keyed
  :func:`~kinformer.cluster_aware_key_func` (unless the caller gave a key function; one of
  ``namespace/name`` alone is refused) with both cluster indexes, so ``default/app`` of two
  clusters are two objects.
- **The store kind**: a dict cache (:class:`~kinformer.Indexer`, or the mutation detector's
  :class:`~kinformer.cache.mutation_detector.CheckedIndexer` when it is on) or, with
  ``compact=True``, a :class:`~kinformer.cache.compact_store.CompactIndexer` keeping each
  object as compact JSON bytes (no detector: nothing it hands out is shared).
- **Packing**: a compact cache whose key reads only metadata takes objects packed as they
  arrive (:mod:`kinformer.cache.packed`), the reflector packing each after the transform.

The informer (:mod:`kinformer.informer`) holds the result and never asks again.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

from kinformer import errors
from kinformer.cache import cluster as _cluster
from kinformer.cache import compact_store, mutation_detector, store
from kinformer.client import listerwatcher
from kinformer.gvr import GroupVersionResource

_ids = itertools.count(1)
# the key functions that read no cluster: refused for a cache of many logical clusters
_NAMESPACE_NAME_KEYS = (store.meta_namespace_key_func, store.deletion_handling_meta_namespace_key_func)


@dataclasses.dataclass(frozen=True, slots=True)
class InformerCache:
    """An informer's cache as chosen for it: the cache itself, the mutation detector watching
    it (None when off), and ``pack``, what a compact cache takes objects through as they
    arrive (None for a dict cache, or a compact one keyed by another function)."""

    indexer: store.InformerIndexer
    detector: mutation_detector.MutationDetector | None
    pack: Callable[[Any], Any] | None


def new_cache(
    lister_watcher: listerwatcher.ListerWatcher,
    name: str,
    indexers: store.Indexers | None,
    key_func: store.KeyFunc | None,
    *,
    compact: bool,
    detect_mutations: bool | None,
) -> InformerCache:
    """The cache of an informer named ``name`` over ``lister_watcher`` (see the module docstring)."""
    if listerwatcher.describe(lister_watcher).cluster == _cluster.ALL_LOGICAL_CLUSTERS:
        if key_func in _NAMESPACE_NAME_KEYS:
            raise errors.ConfigurationError(
                f"informer {name}: {key_func.__name__} keys by namespace/name alone, so across "
                "logical clusters (cluster=\"*\") it would keep one of each cluster's default/app; "
                "leave key_func out for cluster_aware_key_func")
        key_func = key_func or _cluster.cluster_aware_key_func  # one cache of many clusters
        indexers = _cluster.with_cluster_indexes(indexers)
    keys = (store.deletion_handling_meta_namespace_key_func if key_func is None
            else _deletion_handling(key_func))
    indexes = dict(indexers or {})
    if compact:
        compact_indexer = compact_store.CompactIndexer(keys, indexes)
        # a stub keeps metadata, not what another key function might read
        packs = key_func in (None, _cluster.cluster_aware_key_func)
        return InformerCache(compact_indexer, None, compact_indexer.packer() if packs else None)
    if mutation_detector.enabled(detect_mutations):
        detector = mutation_detector.MutationDetector(name)
        return InformerCache(mutation_detector.CheckedIndexer(keys, indexes, detector), detector, None)
    return InformerCache(store.Indexer(keys, indexes), None, None)


def default_name(lister_watcher: listerwatcher.ListerWatcher) -> str:
    """``v1/configmaps`` for a lister-watcher that says what it lists (``v1/configmaps@root:org``
    when it lists a logical cluster, ``@*`` every one), else ``#<n>``."""
    described = listerwatcher.describe(lister_watcher)
    resource = described.resource
    if isinstance(resource, GroupVersionResource):
        name = "/".join(part for part in (resource.group, resource.version, resource.resource) if part)
        return name if described.cluster is None else f"{name}@{described.cluster}"
    return f"#{next(_ids)}"


def _deletion_handling(key_func: store.KeyFunc) -> store.KeyFunc:
    """``key_func``, giving a :class:`~kinformer.DeletedFinalStateUnknown` its ``key`` (a relist's
    deletions reach the cache as tombstones) when it does not do so itself."""
    if key_func in (_cluster.cluster_aware_key_func, store.deletion_handling_meta_namespace_key_func):
        return key_func
    tombstone = store.DeletedFinalStateUnknown

    def key(obj: Any) -> str:
        return obj.key if type(obj) is tombstone else key_func(obj)

    return key
