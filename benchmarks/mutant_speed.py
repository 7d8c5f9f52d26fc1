"""Warm mutant executor vs. a fresh behave process per mutant, on the same tests and mutants.

For each sampled instance of a dataset: the ground-truth test's pool (mutants on lines it
covers) is run (a) through the warm executor — one clean traced run, then a fork per
mutant with the function's code swapped — and (b) as a fresh `python -m behave` process
with the mutant written to disk. Every verdict must agree; the script prints the time of
both and their ratio, measured in the same run.

Usage:
    python benchmarks/mutant_speed.py DATASET_DIR [--instances 6] [--max-mutants 0]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.dataset import load_dataset  # noqa: E402
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec  # noqa: E402
from bench.mutation.executor import (  # noqa: E402
    collect_session,
    fallback_jobs,
    load_manifest,
    pool_for,
    resolve_fallbacks,
)
from bench.mutation.fresh import run_fresh  # noqa: E402
from bench.mutation.generate import generate_mutants  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--max-mutants", type=int, default=0, help="per instance, sampled from its pool (0: all)")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    project = dataset.card.projects[0]
    gold = dataset.load_gold()
    manifest = load_manifest(args.dataset, project.name) or {
        m.id: m for m in generate_mutants(args.dataset / project.snapshot, project.production)}
    rng = random.Random(args.seed)
    chosen = rng.sample(dataset.instances, min(args.instances, len(dataset.instances)))
    warm_total = fresh_total = 0.0
    compared = agree = 0
    disagreements = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "slot0"
        shutil.copytree(args.dataset / project.snapshot, root)
        spec = WorkerSpec(root=root, features_dir=project.features_dir, python_path=project.python_path,
                          production=project.production,
                          import_packages=[Path(p).name.removesuffix(".py") for p in project.production],
                          preload=True)
        import_packages = list(spec.import_packages)
        plan = []
        for inst in chosen:
            mutants = pool_for(manifest, gold[inst.id].covered_lines)
            if args.max_mutants:
                mutants = rng.sample(mutants, min(args.max_mutants, len(mutants)))
            plan.append((inst, mutants))
        # the executor, as the build and the evaluator use it: a session per test, then the
        # import-time mutants grouped by mutant across all tests
        start = time.perf_counter()
        outcomes = {}
        jobs = []
        with WorkerPool(spec, [root]) as pool:
            for inst, mutants in plan:
                reply = pool.call_one({"op": "session", "feature": inst.requirement.feature_file,
                                       "lines": inst.requirement.run_lines,
                                       "mutants": [m.model_dump() for m in mutants], "timeout": 120})
                outcomes[inst.id] = collect_session(reply)
                jobs += fallback_jobs(inst.id, outcomes[inst.id], manifest, inst.requirement.feature_file,
                                      inst.requirement.run_lines)
        session_time = time.perf_counter() - start
        with WorkerPool(replace(spec, preload=False, import_packages=[]), [root]) as import_pool:
            if jobs:
                resolve_fallbacks(import_pool, jobs, import_packages)
        warm_total = time.perf_counter() - start
        print(f"warm: sessions {session_time:.2f} s, import-time mutants {warm_total - session_time:.2f} s", flush=True)
        # the reference: a fresh process per (test, mutant) with the mutant on disk
        for inst, mutants in plan:
            fresh = 0.0
            for mutant in mutants:
                warm_verdict = outcomes[inst.id].verdicts[mutant.id]
                verdict = run_fresh(root, project.python_path, inst.requirement.feature_file,
                                    inst.requirement.run_lines, mutant, timeout=120)
                fresh += verdict.elapsed
                compared += 1
                if verdict.verdict == warm_verdict:
                    agree += 1
                else:
                    disagreements.append((inst.id, mutant.id, mutant.file, mutant.line, mutant.operator,
                                          warm_verdict, verdict.verdict))
            fresh_total += fresh
            print(f"{inst.id}: {len(mutants)} mutants, fresh {fresh:7.2f} s", flush=True)
        print(f"import-time mutants (one warm import each, shared by all tests): "
              f"{len({j.mutant.id for j in jobs})} mutants, {len(jobs)} test runs")
    print(f"\nverdicts agree: {agree}/{compared}")
    print(f"warm executor total {warm_total:7.2f} s   fresh process per mutant total {fresh_total:7.2f} s   "
          f"speed-up {fresh_total / warm_total:5.1f}x")
    for row in disagreements:
        print("DISAGREE", *row)
    if disagreements:
        sys.exit(1)


if __name__ == "__main__":
    main()
