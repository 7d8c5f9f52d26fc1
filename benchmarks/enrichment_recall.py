"""Offline measure of requirement enrichment's file surfacing: recall@k of the gold test's data files.

For every instance: materialize its target-hidden view, run ``gather_context`` on it (the
view only; no gold goes in), and compare the surfaced data/fixture/helper files (hooks left
out: they are always surfaced) with the answer key — the ground-truth test's data files and
shared helpers that exist in the view. Instances whose key is empty are excluded and counted.

Beside it, measured in the same run over the same candidate pool (every non-hook file
``rank_files`` considers in the view):
  random     k files drawn at random (expected value, exact hypergeometric mean)
  popular    the k files most often named across ALL feature files of the view (ties: path)
  alpha      the first k paths in alphabetical order

CIs: 95 % cluster bootstrap over feature files (bench.stats), the paired difference too.
``--split dev|test`` keeps the instances whose feature file hashes even/odd (weights were
tuned on dev only; test is the held-out half).

Usage:
    python benchmarks/enrichment_recall.py DATASET [--sample N] [--k 5] [--split all|dev|test] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.dataset import DatasetError, load_dataset
from bench.stats import cluster_bootstrap
from harness.strategies.enrichment import gather_context, rank_files
from harness.views import ViewError, materialize

METHODS = ("enrichment", "random", "popular", "alpha")


def split_of(feature_file: str) -> str:
    return "dev" if int(hashlib.sha256(feature_file.encode()).hexdigest(), 16) % 2 == 0 else "test"


def recall(ranked: list[str], key: set[str], k: int) -> float:
    return len(set(ranked[:k]) & key) / len(key)


def expected_random_recall(pool: list[str], key: set[str], k: int) -> float:
    """Mean of |random k-subset ∩ key| / |key|: k·|key∩pool|/|pool| (hypergeometric mean)."""
    if not pool:
        return 0.0
    return min(k, len(pool)) * len(key & set(pool)) / len(pool) / len(key)


def popular_order(view_root: Path, features_dir: str, pool: list[str]) -> list[str]:
    """Pool files by how many feature files of the view name them (file name, whole word), then path."""
    texts = [p.read_text(encoding="utf-8", errors="replace").lower()
             for p in sorted((view_root / features_dir).rglob("*.feature"))]

    def uses(rel: str) -> int:
        name = re.escape(Path(rel).name.lower())
        return sum(1 for t in texts if re.search(rf"(?<![\w.-]){name}(?![\w-])", t))

    counts = {rel: uses(rel) for rel in pool}
    return sorted(pool, key=lambda rel: (-counts[rel], rel))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="N instances drawn at random (seeded; 0: all)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--split", choices=("all", "dev", "test"), default="all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    try:
        ds = load_dataset(args.dataset)
    except DatasetError as exc:
        sys.exit(f"error: {exc}")
    started = time.perf_counter()
    gold = ds.load_gold()  # the answer key only: never passed to gather_context
    features_dirs = {p.name: p.features_dir.rstrip("/") for p in ds.card.projects}
    instances = [i for i in ds.instances if args.split == "all" or split_of(i.requirement.feature_file) == args.split]
    if args.sample and args.sample < len(instances):
        instances = sorted(random.Random(args.seed).sample(instances, args.sample), key=lambda i: i.id)
    ks = sorted({1, args.k, 10})
    rows: list[dict] = []
    empty_key = outside_pool = 0
    view_seconds = context_seconds = 0.0
    popular_cache: dict[str, list[str]] = {}
    for number, instance in enumerate(instances, 1):
        features_dir = features_dirs[instance.project]
        t0 = time.perf_counter()
        try:
            view = materialize(ds, instance.id, "th")
        except ViewError as exc:
            sys.exit(f"error: {instance.id}: {exc}")
        t1 = time.perf_counter()
        context = gather_context(instance, view.root, features_dir, limit=max(ks))
        t2 = time.perf_counter()
        view_seconds += t1 - t0
        context_seconds += t2 - t1
        record = gold[instance.id]
        key = {c.path for c in record.closure if c.role in ("data", "helper")} | set(record.data_files)
        key = {rel for rel in key if (view.root / rel).is_file()}  # the view is all enrichment may use
        if not key:
            empty_key += 1
            continue
        pool = sorted(f.path for f in rank_files(instance, view.root, features_dir) if f.kind != "hook")
        outside_pool += len(key - set(pool))
        surfaced = [f.path for f in context.surfaced if f.kind != "hook"]
        # th views of one project differ only in hidden production bodies: same pool, same feature files
        tree = hashlib.sha256("\0".join([instance.project, *pool]).encode()).hexdigest()
        if tree not in popular_cache:
            popular_cache[tree] = popular_order(view.root, features_dir, pool)
        row = {"instance_id": instance.id, "project": instance.project,
               "feature_file": instance.requirement.feature_file, "key": sorted(key), "pool": len(pool),
               "surfaced": surfaced[: max(ks)]}
        for k in ks:
            row[f"enrichment@{k}"] = recall(surfaced, key, k)
            row[f"random@{k}"] = expected_random_recall(pool, key, k)
            row[f"popular@{k}"] = recall(popular_cache[tree], key, k)
            row[f"alpha@{k}"] = recall(pool, key, k)
        rows.append(row)
        if number % 25 == 0:
            print(f"  {number}/{len(instances)} instances ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    elapsed = time.perf_counter() - started
    if not rows:
        sys.exit("error: no instance has a non-empty answer key in its view")

    def mean_of(field: str):
        return lambda rs: sum(r[field] for r in rs) / len(rs) if rs else None

    table: dict[str, dict] = {}
    for k in ks:
        for method in METHODS:
            field = f"{method}@{k}"
            value = mean_of(field)(rows)
            low, high = cluster_bootstrap(rows, mean_of(field), seed=args.seed)
            entry = {"mean": value, "ci": [low, high], "n": len(rows)}
            if method != "enrichment":
                for r in rows:
                    r[f"_d_{field}"] = r[f"enrichment@{k}"] - r[field]
                d_low, d_high = cluster_bootstrap(rows, mean_of(f"_d_{field}"), seed=args.seed)
                entry["enrichment_minus"] = {"mean": mean_of(f"_d_{field}")(rows), "ci": [d_low, d_high]}
                for r in rows:
                    del r[f"_d_{field}"]
            table[field] = entry
    n_instances = len(instances)
    print(f"\nrecall of the gold test's data files/helpers present in the th view — {args.dataset}")
    print(f"instances: {n_instances} ({args.split}{', sample' if args.sample else ''}); counted {len(rows)}; "
          f"excluded (empty key in view) {empty_key}; key files outside the candidate pool {outside_pool}")
    print(f"mean candidate pool {sum(r['pool'] for r in rows) / len(rows):.1f} files; "
          f"wall {elapsed:.1f} s (views {view_seconds:.1f} s, gather_context {context_seconds:.1f} s = "
          f"{context_seconds / n_instances:.3f} s/instance)\n")
    header = f"{'method':<12}" + "".join(f"{'recall@' + str(k):>26}" for k in ks)
    print(header)
    print("-" * len(header))
    for method in METHODS:
        cells = []
        for k in ks:
            e = table[f"{method}@{k}"]
            cells.append(f"{e['mean']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]")
        print(f"{method:<12}" + "".join(f"{c:>26}" for c in cells))
    print("\npaired difference enrichment − baseline (95 % CI):")
    for method in METHODS[1:]:
        cells = []
        for k in ks:
            d = table[f"{method}@{k}"]["enrichment_minus"]
            cells.append(f"{d['mean']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]")
        print(f"{method:<12}" + "".join(f"{c:>26}" for c in cells))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "dataset": str(args.dataset), "split": args.split, "sample": args.sample, "seed": args.seed,
            "k": ks, "instances": n_instances, "counted": len(rows), "excluded_empty_key": empty_key,
            "key_files_outside_pool": outside_pool, "wall_seconds": round(elapsed, 2),
            "view_seconds": round(view_seconds, 2), "gather_context_seconds": round(context_seconds, 2),
            "bootstrap": "cluster (feature file), 2000 resamples, 95 % percentile", "table": table, "rows": rows,
        }, indent=2), encoding="utf-8")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
