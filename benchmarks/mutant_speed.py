"""Mutant execution vs. a fresh behave process per mutant, on the same tests and mutants.

For each sampled instance of a dataset, the ground-truth test's pool (mutants on lines it
covers) is run three ways, all measured in this run:

- **hardened evaluator** (what ``req2test evaluate`` does, every safeguard on): the static
  scan, a sandbox per instance holding only its pristine workspace, production in a
  behaviour-preserving rewrite of its own (``--no-diversify`` shows it as shipped), a traced
  run, the pool shuffled with equivalent variants, every ground-truth kill reproduced in a second
  batch, import-time mutants in fresh sandbox processes, and the KillComplete claim
  confirmed by fresh-process replays (≥ 5 kills + 1 clean run);
- **build executor** (trusted ground-truth tests only: split-stream forks, no sandbox
  per instance; ``--no-build-executor`` skips it);
- **fresh reference**: a new ``python -m behave`` process per (test, mutant) with the
  mutant written to disk.

Every hardened and build verdict must agree with the reference (killed vs. survived);
the script prints each mode's time and its ratio to the reference.

Usage:
    python benchmarks/mutant_speed.py DATASET_DIR [--instances 6] [--max-mutants 0] [--seed 11]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.frameworks.behave.evalspace import build_base
from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
from bench.frameworks.behave.fresh import run_fresh
from bench.frameworks.behave.verdict import VerdictOptions, judge
from bench.frameworks.registry import get_framework
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
from bench.isolation import resolve_mode
from bench.model import Outcome
from bench.mutation.executor import collect_session, fallback_jobs, load_manifest, pool_for, resolve_fallbacks
from bench.production_index import ProductionIndex


def detected(verdict: str) -> str:
    return "survived" if verdict == "survived" else "killed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--max-mutants", type=int, default=0,
                        help="per instance, for the build executor and the reference (0: the whole pool)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-build-executor", action="store_true")
    parser.add_argument("--no-diversify", action="store_true",
                        help="judge on production as shipped (the rewrite off; equivalent variants stay)")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    project = dataset.card.projects[0]
    gold = dataset.load_gold()
    manifest = load_manifest(args.dataset, project.name)
    oracle = {p.instance_id: p for p in calibration_predictions(args.dataset)["oracle"]}
    rng = random.Random(args.seed)
    candidates = [i for i in dataset.instances if gold[i.id].kills and i.project == project.name]
    chosen = rng.sample(candidates, min(args.instances, len(candidates)))
    snapshot = args.dataset / project.snapshot
    isolation = resolve_mode("auto")
    plan = []
    for inst in chosen:
        mutants = pool_for(manifest, gold[inst.id].covered_lines)
        if args.max_mutants:
            mutants = rng.sample(mutants, min(args.max_mutants, len(mutants)))
        plan.append((inst, mutants))

    with tempfile.TemporaryDirectory() as tmp:
        # ---------------------------------------------------------------- hardened evaluator
        area = get_framework(project.framework).test_area(snapshot, project.features_dir)
        gold_files = {f.path for g in gold.values() for f in g.closure if f.role != "data"}
        start = time.perf_counter()
        base = build_base(snapshot, Path(tmp) / "base", project.features_dir, project.python_path,
                          project.production, area.fixed_paths, gold_files,
                          diversify_seed=None if args.no_diversify else args.seed)
        index = ProductionIndex(snapshot, project.production)  # built once per project, as the judge does
        hardened: dict[str, dict[str, str]] = {}
        per_prediction: list[float] = []  # seconds to judge one kill-complete oracle prediction
        runs = {"fresh": 0, "clean": 0, "kills": 0}
        phases: dict[str, float] = {}  # seconds per verdict phase, summed over instances
        for inst, _ in plan:
            started = time.perf_counter()
            judgement = judge(inst, oracle[inst.id], gold[inst.id], manifest, base, Path(tmp),
                              VerdictOptions(isolation=isolation, seed=args.seed), index)
            if judgement.outcome is not Outcome.passed or not set(gold[inst.id].kills) <= judgement.kills:
                print(f"FAIL {inst.id}: the ground truth is not kill-complete: {judgement.outcome.value} "
                      f"{judgement.detail} {judgement.evidence[:2]}")
                sys.exit(1)
            hardened[inst.id] = judgement.verdicts
            runs["fresh"] += judgement.fresh_runs
            runs["clean"] += judgement.confirmation.get("clean_runs", 0)
            runs["kills"] += len(judgement.kills)
            per_prediction.append(time.perf_counter() - started)
            for phase, seconds in judgement.confirmation.get("seconds", {}).items():
                phases[phase] = phases.get(phase, 0.0) + seconds
            print(f"hardened {inst.id}: {len(judgement.verdicts)} pool mutants, {len(judgement.kills)} kills "
                  f"(each reproduced), {judgement.fresh_runs} fresh-process runs, "
                  f"{per_prediction[-1]:6.2f} s", flush=True)
        hardened_total = time.perf_counter() - start

        # ---------------------------------------------------------------- build executor
        build_total = 0.0
        build: dict[str, dict[str, str]] = {}
        root = Path(tmp) / "slot0"
        shutil.copytree(snapshot, root)
        if not args.no_build_executor:
            spec = WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir=project.features_dir, python_path=project.python_path,
                              production=project.production,
                              import_packages=[Path(p).name.removesuffix(".py") for p in project.production],
                              preload=True)
            start = time.perf_counter()
            jobs = []
            outcomes = {}
            with WorkerPool(spec, [root]) as pool:
                for inst, mutants in plan:
                    reply = pool.call_one({"op": "session", "feature": inst.requirement.feature_file,
                                           "lines": inst.requirement.run_lines,
                                           "mutants": [m.model_dump() for m in mutants], "timeout": 120})
                    outcomes[inst.id] = collect_session(reply)
                    jobs += fallback_jobs(inst.id, outcomes[inst.id], manifest, inst.requirement.feature_file,
                                          inst.requirement.run_lines)
            with WorkerPool(replace(spec, preload=False, import_packages=[]), [root]) as import_pool:
                if jobs:
                    resolve_fallbacks(import_pool, jobs, list(spec.import_packages))
            build_total = time.perf_counter() - start
            build = {k: v.verdicts for k, v in outcomes.items()}
            print(f"build executor: {build_total:.2f} s", flush=True)

        # ---------------------------------------------------------------- fresh reference
        fresh_total = 0.0
        compared = agree_hardened = agree_build = 0
        disagreements = []
        for inst, mutants in plan:
            fresh = 0.0
            for mutant in mutants:
                verdict = run_fresh(root, project.python_path, inst.requirement.feature_file,
                                    inst.requirement.run_lines, mutant, timeout=120)
                fresh += verdict.elapsed
                compared += 1
                reference = detected(verdict.verdict)
                mine = detected(hardened[inst.id].get(mutant.id, "survived"))
                agree_hardened += mine == reference
                if mine != reference:
                    disagreements.append(("hardened", inst.id, mutant.id, mutant.file, mutant.line, mine, reference))
                if build:
                    theirs = detected(build[inst.id].get(mutant.id, "survived"))
                    agree_build += theirs == reference
                    if theirs != reference:
                        disagreements.append(("build", inst.id, mutant.id, mutant.file, mutant.line, theirs,
                                              reference))
            fresh_total += fresh
            print(f"fresh {inst.id}: {len(mutants)} mutants, {fresh:7.2f} s", flush=True)

    print(f"\nmutants compared: {compared} over {len(plan)} instances")
    print(f"hardened verdicts agree with fresh processes: {agree_hardened}/{compared}")
    if build:
        print(f"build executor verdicts agree with fresh processes: {agree_build}/{compared}")
    print(f"hardened evaluator {hardened_total:8.2f} s  (incl. {runs['kills']} reproduced kills, "
          f"{runs['clean']} clean runs, {runs['fresh']} fresh-process runs)  "
          f"speed-up {fresh_total / hardened_total:5.1f}x")
    if build:
        print(f"build executor     {build_total:8.2f} s  speed-up {fresh_total / build_total:5.1f}x")
    print(f"fresh reference    {fresh_total:8.2f} s")
    print("hardened phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
    ordered = sorted(per_prediction)
    print(f"evaluation cost per kill-complete oracle prediction (all safeguards): median "
          f"{statistics.median(ordered):.2f} s, {ordered[0]:.2f}-{ordered[-1]:.2f} s over {len(ordered)}")
    for row in disagreements:
        print("DISAGREE", *row)
    if disagreements:
        sys.exit(1)


if __name__ == "__main__":
    main()
