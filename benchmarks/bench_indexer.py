"""Indexer throughput: add, update, delete and by_index over ConfigMap-like dicts.

N_OBJECTS dicts spread over N_NAMESPACES namespaces, each with a few labels, go through an
``Indexer`` with 0, 1 (namespace), 2 (namespace + ``app`` label: the shape client-go benchmarks)
and 3 (+ ``tier``) indexes. Each figure is compared with a floor doing the same work inline on
bare dicts (the same key, the same per-value ``{key: object}`` indexes; for by_index without an
index, a prebuilt dict of key lists), and the two-index figures with client-go's numbers on this
machine class. Run ``python benchmarks/bench_indexer.py [--json] [--n N] [--quick]``.
"""

from __future__ import annotations

import functools
from typing import Any

from _common import Result, measure, measure_pair, parse_args, report

from kinformer.cache.store import NAMESPACE_INDEX, Indexer, meta_namespace_index_func

N_OBJECTS = 100_000
N_NAMESPACES = 100  # 1,000 objects per namespace at the default size, as in client-go's run
BY_INDEX_ROUNDS = 20  # by_index calls per namespace per run
GO_ADD_NS = 1474.0  # client-go, two indexes, ns per object
GO_UPDATE_NS = 1491.0
GO_BY_INDEX_NS = 127_500.0  # ByIndex(namespace) returning 1,000 objects

TIERS = ("web", "db", "cache")


def make_objects(n: int, rv: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{i}",
                "namespace": f"ns-{i % N_NAMESPACES}",
                "resourceVersion": rv,
                "labels": {"app": f"app-{i % 50}", "tier": TIERS[i % 3], "release": "stable"},
            },
            "data": {"key": "value"},
        }
        for i in range(n)
    ]


def by_app(obj: Any) -> list[str]:
    app = obj["metadata"]["labels"].get("app")
    return [app] if app else []


def by_tier(obj: Any) -> list[str]:
    tier = obj["metadata"]["labels"].get("tier")
    return [tier] if tier else []


SHAPES: dict[str, list[str]] = {
    "0 indexes": [],
    "1 index (namespace)": [NAMESPACE_INDEX],
    "2 indexes (namespace+app)": [NAMESPACE_INDEX, "app"],
    "3 indexes (namespace+app+tier)": [NAMESPACE_INDEX, "app", "tier"],
}
FUNCS = {NAMESPACE_INDEX: meta_namespace_index_func, "app": by_app, "tier": by_tier}


# -- the floor: the same work, inline, on bare dicts ------------------------------------------


class Floor:
    def __init__(self, fields: list[str]) -> None:
        self.items: dict[str, Any] = {}
        self.indices: list[tuple[dict[str, dict[str, Any]], dict[str, str], str]] = [
            ({}, {}, f) for f in fields
        ]

    def add_all(self, objs: list[dict[str, Any]]) -> None:
        items, indices = self.items, self.indices
        for o in objs:
            meta = o["metadata"]
            ns = meta.get("namespace")
            key = f"{ns}/{meta['name']}" if ns else meta["name"]
            old = items.get(key)
            items[key] = o
            if not indices:
                continue
            labels = meta["labels"]
            for index, key_values, field in indices:
                v = ns if field == NAMESPACE_INDEX else labels.get(field)
                if old is not None:
                    ov = key_values[key]
                    if ov == v:
                        index[v][key] = o
                        continue
                    bucket = index[ov]
                    del bucket[key]
                    if not bucket:
                        del index[ov]
                key_values[key] = v
                new_bucket = index.get(v)
                if new_bucket is None:
                    index[v] = {key: o}
                else:
                    new_bucket[key] = o

    def delete_all(self, objs: list[dict[str, Any]]) -> None:
        items, indices = self.items, self.indices
        for o in objs:
            meta = o["metadata"]
            ns = meta.get("namespace")
            key = f"{ns}/{meta['name']}" if ns else meta["name"]
            if items.pop(key, None) is None:
                continue
            for index, key_values, _ in indices:
                v = key_values.pop(key)
                bucket = index[v]
                del bucket[key]
                if not bucket:
                    del index[v]


def _same(x: Indexer) -> Indexer:
    return x


def floor_by_key_lists(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    items: dict[str, Any] = {}
    lists: dict[str, list[str]] = {}
    for o in objs:
        meta = o["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        items[key] = o
        lists.setdefault(meta["namespace"], []).append(key)
    return items, lists


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_OBJECTS)
    n, repeat = args.n, args.repeat
    objs = make_objects(n, "1")
    updated = make_objects(n, "2")
    namespaces = [f"ns-{i}" for i in range(N_NAMESPACES)]
    by_index_ops = BY_INDEX_ROUNDS * len(namespaces)
    results: list[Result] = []

    def empty(fields: list[str]) -> Indexer:
        return Indexer(indexers={f: FUNCS[f] for f in fields})

    def filled(fields: list[str]) -> Indexer:
        ix = Indexer(indexers={f: FUNCS[f] for f in fields})
        ix.replace(objs)
        return ix

    def filled_floor(fields: list[str]) -> Floor:
        floor = Floor(fields)
        floor.add_all(objs)
        return floor

    def run_add(ix: Indexer) -> None:
        add = ix.add
        for o in objs:
            add(o)

    def run_update(ix: Indexer) -> None:
        update = ix.update
        for o in updated:
            update(o)

    def run_delete(ix: Indexer) -> None:
        delete = ix.delete
        for o in objs:
            delete(o)

    def run_by_index(ix: Indexer) -> None:
        by_index = ix.by_index
        for _ in range(BY_INDEX_ROUNDS):
            for ns in namespaces:
                by_index(NAMESPACE_INDEX, ns)

    for shape, fields in SHAPES.items():
        two = len(fields) == 2
        add, floor_add = measure_pair(
            (functools.partial(empty, fields), run_add),
            (functools.partial(Floor, fields), lambda fl: fl.add_all(objs)),
            n,
            repeat,
        )
        results.append(Result(f"add, {shape}", add, floor_add, GO_ADD_NS if two else None))

        upd, floor_upd = measure_pair(
            (functools.partial(filled, fields), run_update),
            (functools.partial(filled_floor, fields), lambda fl: fl.add_all(updated)),
            n,
            repeat,
        )
        results.append(Result(f"update, {shape}", upd, floor_upd, GO_UPDATE_NS if two else None))

        dele, floor_del = measure_pair(
            (functools.partial(filled, fields), run_delete),
            (functools.partial(filled_floor, fields), lambda fl: fl.delete_all(objs)),
            n,
            repeat,
        )
        results.append(Result(f"delete, {shape}", dele, floor_del))

        if fields:
            ix = filled(fields)
            floor = filled_floor(fields)
            ns_index = floor.indices[0][0]

            def run_floor_by_index(_: object, index: dict[str, dict[str, Any]] = ns_index) -> None:
                for _round in range(BY_INDEX_ROUNDS):
                    for ns in namespaces:
                        list(index[ns].values())

            bi, floor_bi = measure_pair(
                (functools.partial(_same, ix), run_by_index),
                (lambda: None, run_floor_by_index),
                by_index_ops,
                repeat,
            )
            note = f"each call returns {n // N_NAMESPACES:,} objects"
            results.append(
                Result(
                    f"by_index(namespace), {shape}",
                    bi,
                    floor_bi,
                    GO_BY_INDEX_NS if two and n == N_OBJECTS else None,
                    note,
                )
            )
            del ix, floor

    # the collector on, as users run it, for the shape client-go benchmarks
    fields = SHAPES["2 indexes (namespace+app)"]
    add, floor_add = measure_pair(
        (functools.partial(empty, fields), run_add),
        (functools.partial(Floor, fields), lambda fl: fl.add_all(objs)),
        n, repeat, collector=True)
    results.append(Result("add, 2 indexes, collector on", add, floor_add, GO_ADD_NS))
    upd, floor_upd = measure_pair(
        (functools.partial(filled, fields), run_update),
        (functools.partial(filled_floor, fields), lambda fl: fl.add_all(updated)),
        n, repeat, collector=True)
    results.append(Result("update, 2 indexes, collector on", upd, floor_upd, GO_UPDATE_NS))

    items, lists = floor_by_key_lists(objs)

    def run_key_lists(_: object) -> None:
        for _round in range(BY_INDEX_ROUNDS):
            for ns in namespaces:
                [items[k] for k in lists[ns]]

    results.append(
        Result(
            "floor: per-namespace key lists + dict",
            measure(lambda: None, run_key_lists, by_index_ops, repeat),
            note="a prebuilt dict of key lists, looked up per key",
        )
    )
    report("bench_indexer", args, results)


if __name__ == "__main__":
    main()
