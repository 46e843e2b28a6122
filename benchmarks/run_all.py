"""Run every benchmark with ``--json``, one after another, and write one report.

Each benchmark runs in its own process (one at a time: the machine is small and shared); its
JSON goes into one report, with the machine it ran on (CPU count and model, Python, JSON
decoder), written to ``--out`` (default ``.benchmarks/report.json``). A summary table is printed;
``--json`` prints the whole report as well. A benchmark that fails or times out is recorded
with its error and the others still run.

Run ``python benchmarks/run_all.py [--quick] [--only informer,watch] [--out PATH] [--json]``
(``tox -e bench`` runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("indexer", "fifo", "workqueue", "apiserver", "informer", "watch", "memory",
              "leaderelection", "scale", "rss", "fleet", "gaps", "cluster_shards", "controller")
TIMEOUT = 3600.0  # seconds per benchmark


def machine() -> dict[str, Any]:
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import orjson  # noqa: F401

        decoder = "orjson"
    except ImportError:
        decoder = "stdlib"
    if os.environ.get("KINFORMER_JSON", "").lower() == "stdlib":
        decoder = "stdlib"
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
        "json_decoder": decoder,
    }


def run(name: str, quick: bool) -> dict[str, Any]:
    command = [sys.executable, str(HERE / f"bench_{name}.py"), "--json"]
    if quick:
        command.append("--quick")
    began = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT, cwd=HERE, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT:.0f} s"}
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {"error": f"not JSON: {done.stdout[-500:]}"}
    result["wall_seconds"] = elapsed
    return result


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def summary(name: str, result: dict[str, Any]) -> list[str]:
    """Human-readable lines for one benchmark's result."""
    if "error" in result:
        return [f"  ERROR {result['error'].splitlines()[-1] if result['error'] else ''}"]
    lines = []
    if name in ("indexer", "fifo", "workqueue"):
        for r in result["results"]:
            lines.append(
                f"  {r['name']:<44} {r['ns_per_op']:>9,.0f} ns/op  x floor {_ratio(r['ratio_to_floor']):>5}"
                f"  x Go {_ratio(r['ratio_to_go']):>5}"
            )
    elif name == "apiserver":
        for r in result["results"]:
            if r["name"] == "list":
                lines.append(f"  list {r['objects']:,} objects: {r['seconds']:.3f} s, "
                             f"{r['mb_per_s']:.0f} MB/s (json.loads {r['json_loads_seconds']:.3f} s)")
            elif r["name"] == "list-across":
                lines.append(f"  list /clusters/* ({r['clusters']} clusters, {r['objects']:,} "
                             f"objects): {r['seconds']:.3f} s, {r['ratio_to_plain']:.2f}x a plain "
                             f"list of as many")
            else:
                lines.append(f"  {r['name']}: {r['events_per_s_per_watcher']:,.0f} events/s per watcher")
    elif name == "informer":
        for r in result["results"]:
            if "seconds" in r:
                cells = ", ".join(
                    f"{k} {v:.3f} s ({r['ratio_to_floor'][k]:.2f}x)" for k, v in r["seconds"].items()
                )
                lines.append(f"  {r['name']}: {cells}")
                if "official_over_kinformer" in r:
                    lines.append(f"    kinformer is {r['official_over_kinformer']:.1f}x faster than the "
                                 f"official informer, {r['watch_dict_over_kinformer']:.1f}x than Watch+dict")
            else:
                lines.append(f"  {r['name']}: server stream {r['server_stream_events_per_s']:,.0f}/s, "
                             f"kinformer handler {r['kinformer_handler_events_per_s']:,.0f}/s")
    elif name == "watch":
        rates = ", ".join(f"{k} {v:,.0f}/s" for k, v in result["events_per_s"].items())
        lines.append(f"  {rates}")
        lines.append(f"  decode floor / kinformer = {result['floor_over_kinformer']:.2f}, decode+keep "
                     f"floor / kinformer = {result.get('keep_floor_over_kinformer', 0):.2f}, "
                     f"kinformer / official = {result['kinformer_over_official']:.1f}x")
        lat = result["latency"]
        lines.append(f"  latency at {lat['offered_per_s']:,.0f}/s: p50 {lat['p50_ms']:.1f} ms, "
                     f"p99 {lat['p99_ms']:.1f} ms")
    elif name == "memory":
        for r in result["results"]:
            lines.append(f"  {r['name']:<24} objects {r['object_bytes']:>8,.0f} B, cache overhead "
                         f"{r['overhead_bytes']:>6,.0f} B ({r['overhead_share']:.1%})")
    elif name == "scale":
        lines.append(f"  {result['objects']:,} Pods, preload {result['preload_seconds']:.1f} s, run "
                     f"peak {result['run_peak_mb'] / 1024:.1f} GiB")
        for r in result["results"]:
            if "error" in r:
                lines.append(f"  {r['name']:<26} ERROR {r['error']}")
                continue
            lines.append(f"  {r['name']:<26} {r['objects']:>8,} in {r['seconds']:>6.2f} s "
                         f"(x floor {_ratio(r.get('seconds_over_floor'))}), "
                         f"{r['settled_bytes_per_object']:>7,.0f} B per object "
                         f"(x floor {_ratio(r.get('memory_over_floor'))})")
    elif name == "rss":
        for r in result["rows"]:
            ratio = r.get("settled_over_dict")
            lines.append(f"  {r['shape']:<10} {r['decoder']:<6} {r['name']:<14} settled "
                         f"+{min(r['settled_mb']):,.0f}-{max(r['settled_mb']):,.0f} MiB"
                         + (f" ({min(ratio):.2f}-{max(ratio):.2f}x the dict cache)" if ratio else ""))
    elif name == "fleet":
        for r in result["results"]:
            if r["name"] == "sync":
                ratio = r["ratio"]
                lines.append(f"  sync {r['clusters']} x {r['objects_per_cluster']:,}: factory / hand-made "
                             f"time {ratio['seconds']:.2f}x, settled RSS {ratio['settled_rss']:.3f}x")
            elif r["name"] == "logical":
                ratio = r["ratio"]
                lines.append(f"  logical: cluster=\"*\" / plain time {ratio['seconds']:.2f}x, "
                             f"settled RSS {ratio['settled_rss']:.3f}x")
            elif r["name"] == "hung":
                ratio = r["ratio"]
                lines.append(f"  hung member: sync {ratio['sync']:.2f}x, p50 {ratio['p50']:.2f}x, "
                             f"p99 {ratio['p99']:.2f}x the run without it")
            else:
                for contender in ("hand-made", "MultiClusterInformerFactory"):
                    found = r[contender]
                    if found["during"].get("count"):
                        lines.append(f"  engage, {contender}: p99 before {found['before']['p99_ms']:.1f} ms, "
                                     f"during {found['during']['p99_ms']:.1f} ms")
    elif name == "gaps":
        for measure, (low, high) in result["ranges"].items():
            lines.append(f"  {measure:<28} {low:.2f}-{high:.2f}x the floor "
                         f"(target {result['targets'][measure]}x)")
    elif name == "cluster_shards":
        for hash_name, (low, high) in result["worst"].items():
            lines.append(f"  {hash_name:<18} every shard {low:.2f}-{high:.2f}x its fair share "
                         f"({result['names_per_family']} names of each family, 2-4 shards)")
    elif name == "leaderelection":
        traffic = result["traffic"]
        lines.append(f"  Lease writes/min: leader {traffic['leader_writes_per_min']:.1f}, per replica "
                     f"{traffic['writes_per_min_per_replica']:.1f}; reads/min per candidate "
                     f"{traffic['candidate_reads_per_min']:.1f}")
        for kind in ("released", "expired"):
            h = result[f"handover_{kind}"]
            lines.append(f"  hand-over ({kind}): median {h['median_s']:.2f} s, "
                         f"{h['min_s']:.2f}-{h['max_s']:.2f} s over {h['count']}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    parser.add_argument("--only", default="", help="comma-separated names, e.g. informer,watch")
    parser.add_argument("--out", default=".benchmarks/report.json", help="report path")
    parser.add_argument("--json", action="store_true", help="also print the whole report")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(unknown)}")
    report: dict[str, Any] = {
        "machine": machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": args.quick,
        "benchmarks": {},
    }
    m = report["machine"]
    print(f"{m['nproc']} CPUs, {m['cpu']}, {m['implementation']} {m['python']}, "
          f"{m['system']}, decoder {m['json_decoder']}", flush=True)
    failed = False
    for name in names:
        print(f"{name}:", flush=True)
        result = run(name, args.quick)
        report["benchmarks"][name] = result
        failed = failed or "error" in result
        for line in summary(name, result):
            print(line, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"report written to {out}")
    if args.json:
        print(json.dumps(report, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
