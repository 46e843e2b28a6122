"""Placing clusters on shards: how evenly a fleet's names split, by cluster_shard_hash and FNV-1a.

For N_NAMES names of each family in FAMILIES and SHARD_COUNTS equal shards (the ranges
``ShardSelector.for_shard`` gives, as a ``ShardCoordinator`` hands them out), each shard's
count of names over its fair share, the lowest and highest of those, for ``cluster_shard_hash``
(what ``set_cluster_shard`` places clusters by) and ``fnv1a_64`` (the objects' hash) side by side;
and how far apart consecutive names land: the mean number of the 64 bits that differ, and how
many consecutive pairs share the top byte. Pure computation, no server; nothing is timed.

Run ``python benchmarks/bench_cluster_shards.py [--json] [--n N]``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from _common import parse_args

from kinformer import ShardSelector, cluster_shard_hash, fnv1a_64

N_NAMES = 200  # names per family
FAMILIES = {"member-N": "member-{}", "cluster-NN": "cluster-{:02d}", "prod-eu-N": "prod-eu-{}"}
SHARD_COUNTS = (2, 3, 4)
HASHES: dict[str, Callable[[str], int]] = {"cluster_shard_hash": cluster_shard_hash,
                                           "fnv1a_64": fnv1a_64}


def split(hash_name: Callable[[str], int], names: list[str], count: int) -> dict[str, Any]:
    """Each of ``count`` equal shards' number of ``names``, and those over the fair share."""
    shards = [ShardSelector.for_shard(index, count) for index in range(count)]
    counts = [sum(shard.matches_hash(hash_name(name)) for name in names) for shard in shards]
    ratios = [c * count / len(names) for c in counts]
    return {"counts": counts, "fair": len(names) / count, "min_ratio": min(ratios),
            "max_ratio": max(ratios)}


def spread(hash_name: Callable[[str], int], names: list[str]) -> dict[str, Any]:
    """How far apart consecutive names land: mean differing bits, pairs sharing the top byte."""
    pairs = list(itertools.pairwise(hash_name(name) for name in names))
    return {"mean_bits_differing": sum(bin(a ^ b).count("1") for a, b in pairs) / len(pairs),
            "same_top_byte": sum(a >> 56 == b >> 56 for a, b in pairs), "pairs": len(pairs)}


def measure(n: int) -> dict[str, Any]:
    rows = []
    for family, pattern in FAMILIES.items():
        names = [pattern.format(i) for i in range(1, n + 1)]
        for count in SHARD_COUNTS:
            rows.append({"family": family, "shards": count,
                         **{h: split(f, names, count) for h, f in HASHES.items()}})
    spreads = {family: {h: spread(f, [pattern.format(i) for i in range(1, n + 1)])
                        for h, f in HASHES.items()}
               for family, pattern in FAMILIES.items()}
    worst = {h: [min(r[h]["min_ratio"] for r in rows), max(r[h]["max_ratio"] for r in rows)]
             for h in HASHES}
    return {"names_per_family": n, "results": rows, "spread": spreads, "worst": worst}


def _counts(cell: dict[str, Any]) -> str:
    return (f"{'/'.join(str(c) for c in cell['counts'])} of {cell['fair']:.1f}  "
            f"{cell['min_ratio']:.2f}-{cell['max_ratio']:.2f}x")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], N_NAMES)
    n = N_NAMES if args.quick else args.n  # cheap either way: --quick changes nothing
    result = measure(n)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{n} names per family; per shard: names / fair share, lowest-highest ratio")
    print(f"{'family':<11} {'shards':>6}  {'cluster_shard_hash':<33} fnv1a_64")
    for row in result["results"]:
        print(f"{row['family']:<11} {row['shards']:>6}  {_counts(row['cluster_shard_hash']):<33} "
              f"{_counts(row['fnv1a_64'])}")
    for h, (low, high) in result["worst"].items():
        print(f"{h}: every shard within {low:.2f}-{high:.2f}x its fair share")
    print("consecutive names: mean bits differing (of 64), pairs sharing the top byte")
    for family, by_hash in result["spread"].items():
        cells = ", ".join(f"{h} {s['mean_bits_differing']:.1f} bits, {s['same_top_byte']}/{s['pairs']}"
                          for h, s in by_hash.items())
        print(f"  {family:<11} {cells}")


if __name__ == "__main__":
    main()
