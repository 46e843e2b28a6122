"""Index bookkeeping shared by the caches: index values, buckets, and the values each key holds.

An index maps each index value to a bucket, ``{key: stored}``, where *stored* is what a cache
keeps for the key: the object itself in the dict store (:mod:`~kinformer.cache.thread_safe_store`,
under :class:`~kinformer.Indexer`), its JSON bytes in the compact store
(:mod:`~kinformer.cache.compact_store`). Beside each index a :data:`KeyValues` map remembers the
values each key is indexed under, so a write or a delete never calls an index function on the old
object. A bucket emptied by a write or a delete is dropped, so an index holds only values some
key has. The packer (:mod:`~kinformer.cache.packed`) computes index values with
:func:`index_values`, as the caches do. Nothing here locks: the caches call these functions under
their own lock, and only with index values computed from the object being stored.

A key is put in its buckets by :func:`insert` (or, many keys at once, :func:`index_into` and
:func:`index_runs`), moved by :func:`reindex` and taken out of them by :func:`drop`: each is
written once. A hot loop may copy :func:`insert`'s one-value case inline, saying why.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

IndexFunc = Callable[[Any], Sequence[str]]
"""Computes the index values of an object (client-go ``IndexFunc``)."""

Indexers = Mapping[str, IndexFunc]
"""Index name -> index function."""

Index = dict[str, dict[str, Any]]
"""One index: index value -> its bucket, ``{key: what the cache stores for the key}``."""

KeyValues = dict[str, Any]
"""Key -> the values it is indexed under in one index: the one value itself (the usual case), or
a tuple of several; a key with no value has no entry. Neither is a container the cyclic collector
has to keep tracking, unlike the lists index functions return; that keeps a large cache cheap for
the collector to walk."""

Slots = tuple[tuple[Index, KeyValues, int], ...]
"""Per index, in indexer order: the index, its :data:`KeyValues`, and its position in the
sequence of index values a write carries (as :func:`index_values` orders them)."""

Own = Callable[[str], str]
"""Gives the string a cache keeps for an index value it is about to store (the compact store
makes a copy of its own); None keeps the value as given."""


def index_values(fns: Sequence[IndexFunc], obj: Any) -> Sequence[Sequence[str]]:
    """Every index function's values for ``obj``, in order; unrolled for one to three indexes.

    Raises what an index function raises, and ``TypeError`` for values that are not a list (or
    tuple) of strings (:func:`check`).
    """
    n = len(fns)
    if n == 1:
        return (check(fns[0](obj)),)
    if n == 2:
        return (check(fns[0](obj)), check(fns[1](obj)))
    if n == 3:
        return (check(fns[0](obj)), check(fns[1](obj)), check(fns[2](obj)))
    return [check(fn(obj)) for fn in fns]


def check(vals: Any) -> Sequence[str]:
    """``vals``, one index function's values, when they are a list or tuple of strings (client-go's
    ``[]string``); else ``TypeError``. Checked where the values are computed, outside a store's
    lock: a value that could not be indexed (None, a dict) must fail its write alone, not half
    of a batch under the lock."""
    cls = type(vals)
    if cls is list or cls is tuple:
        if len(vals) == 1 and type(vals[0]) is str:  # the usual case, at once
            return vals  # type: ignore[no-any-return]
        for v in vals:
            if not isinstance(v, str):
                raise TypeError(f"an index function gave {v!r} among its values; they must be strings")
        return vals  # type: ignore[no-any-return]
    raise TypeError(f"an index function gave {vals!r}; it must give a list of strings")


def slots(names: Iterable[str], indices: Mapping[str, Index],
          key_values: Mapping[str, KeyValues]) -> Slots:
    """The :data:`Slots` of the indexes ``names``, in that order."""
    return tuple((indices[name], key_values[name], i) for i, name in enumerate(names))


def insert(index: Index, key_values: KeyValues, key: str, stored: Any, vals: Sequence[str],
           own: Own | None = None) -> None:
    """Put ``key``, not in ``index`` yet, in the bucket of each of ``vals``, holding ``stored``."""
    if len(vals) == 1:  # the usual case: one value, kept as itself, and no loop
        key_values[key] = v = vals[0] if own is None else own(vals[0])
        bucket = index.get(v)
        if bucket is None:
            index[v] = {key: stored}
        else:
            bucket[key] = stored
        return
    if not vals:
        return
    key_values[key] = several = tuple(vals) if own is None else tuple(map(own, vals))
    for v in several:
        bucket = index.get(v)
        if bucket is None:
            index[v] = {key: stored}
        else:
            bucket[key] = stored


def drop(index: Index, key: str, values: Any) -> None:
    """Take ``key`` out of the buckets of ``values`` in ``index``, dropping each bucket it empties.

    ``values`` are the key's entry in the index's :data:`KeyValues` (one value or a tuple), which
    the caller pops (a delete) or overwrites (:func:`insert`, after a move).
    """
    for v in values if type(values) is tuple else (values,):
        bucket = index.get(v)
        if bucket is not None:
            bucket.pop(key, None)
            if not bucket:
                del index[v]


def reindex(slots: Slots, key: str, stored: Any, values: Sequence[Sequence[str]],
            own: Own | None) -> None:
    """Index ``key`` in every index of ``slots`` under ``values`` (per index, as :func:`index_values`
    orders them), holding ``stored``, whether the key was indexed before or not.

    A key whose values in an index are unchanged keeps its place there, only what its buckets
    hold changes (and no value is owned anew); otherwise it is removed and inserted.
    """
    for index, key_values, i in slots:  # no zip(): it costs more than the work
        vals = values[i]
        old = key_values.get(key)
        if len(vals) != 1:  # several values or none: the rare case
            if old is not None:
                if type(old) is tuple and old == (several := tuple(vals)):
                    for v in several:
                        index[v][key] = stored
                    if own is None:
                        key_values[key] = several
                    continue
                drop(index, key, old)
                if not vals:  # no value left: no entry
                    del key_values[key]
                    continue
            insert(index, key_values, key, stored, vals, own)  # overwrites the key's entry
            continue
        v = vals[0]
        if old is not None:
            if old == v:  # the usual update: the same one value, only what the bucket holds changes
                index[v][key] = stored
                if own is None:  # the new object's string: the old one's would outlive it
                    key_values[key] = v
                continue
            drop(index, key, old)  # insert overwrites its entry: a pop would cost more
        insert(index, key_values, key, stored, vals, own)


def index_into(index: Index, key_values: KeyValues,
               entries: Iterable[tuple[tuple[str, Any], Sequence[str]]]) -> None:
    """Put ``((key, stored), values)`` entries, keys not in ``index`` yet, in ``index``."""
    for (key, stored), vals in entries:
        if len(vals) == 1:
            # insert's one-value case, inline: this loop runs once per object of a first list or
            # a replace, and a call per object would cost a tenth of it
            key_values[key] = v = vals[0]
            bucket = index.get(v)
            if bucket is None:
                index[v] = {key: stored}
            else:
                bucket[key] = stored
        else:
            insert(index, key_values, key, stored, vals)


def index_all(fn: IndexFunc, items: Mapping[str, Any]) -> tuple[Index, KeyValues]:
    """A new index of ``items`` (key -> stored object) under one index function."""
    index: Index = {}
    key_values: KeyValues = {}
    index_into(index, key_values, ((item, check(fn(item[1]))) for item in items.items()))
    return index, key_values


def index_runs(index: Index, key_values: KeyValues, items: Mapping[str, Any],
               runs: Sequence[tuple[str, int]]) -> None:
    """Put ``items`` (key -> stored, keys not in ``index`` yet) in ``index``, each under one value:
    ``runs`` give them in item order, as ``(value, how many in a row)``.

    Raises ``ValueError``, changing nothing, when the runs do not cover the items one to one.
    """
    covered = sum(count for _, count in runs)
    if covered != len(items):
        raise ValueError(f"index value runs for {covered} items, not {len(items)}")
    if len(runs) > len(items) // 64 + 1:  # values scattered over many runs: one object at a time
        ones = itertools.chain.from_iterable(itertools.repeat((v,), count) for v, count in runs)
        index_into(index, key_values, zip(items.items(), ones, strict=True))
        return
    # A list comes from the API server in key order, so its objects of one namespace come
    # together: each run of one value is indexed by C-level copies, not a Python step per object
    # (add_new of 100,000 objects of one namespace: 23-25 ms one at a time, 13 ms so). The same
    # end state as one at a time, insertion order included.
    if len(runs) == 1 and not index:  # one value for all (a namespaced informer's list)
        value = runs[0][0]
        index[value] = bucket = dict(items)
        key_values.update(dict.fromkeys(bucket, value))  # from a plain dict: presized
        return
    keys, objs = builtins.list(items), builtins.list(items.values())
    start = 0
    for value, count in runs:
        end = start + count
        run_keys = keys[start:end]
        key_values.update(dict.fromkeys(run_keys, value))
        found = index.get(value)
        if found is None:
            index[value] = dict(zip(run_keys, objs[start:end], strict=True))
        else:
            found.update(zip(run_keys, objs[start:end], strict=True))
        start = end
