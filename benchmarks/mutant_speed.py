"""Warm mutant executor vs. a fresh behave process per mutant, on the same tests and mutants.

For each sampled instance of a dataset: the ground-truth test's pool (mutants on lines it
covers) is run (a) through the warm executor — one clean traced run, then a fork per
mutant with the function's code swapped — and (b) as a fresh `python -m behave` process
with the mutant written to disk. Every verdict must agree; the script prints the time of
both and their ratio, measured in the same run.

Usage:
    python benchmarks/mutant_speed.py DATASET_DIR [--instances 3] [--max-mutants 60]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.dataset import load_dataset  # noqa: E402
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec  # noqa: E402
from bench.mutation.executor import load_manifest, pool_for  # noqa: E402
from bench.mutation.fresh import run_fresh  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--max-mutants", type=int, default=60, help="per instance, sampled from its pool")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    project = dataset.card.projects[0]
    gold = dataset.load_gold()
    manifest = load_manifest(args.dataset, project.name)
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
        with WorkerPool(spec, [root]) as pool:
            for inst in chosen:
                mutants = pool_for(manifest, gold[inst.id].covered_lines)
                mutants = rng.sample(mutants, min(args.max_mutants, len(mutants)))
                lines = inst.requirement.run_lines
                start = time.perf_counter()
                reply = pool.call_one({"op": "session", "feature": inst.requirement.feature_file, "lines": lines,
                                       "mutants": [m.model_dump() for m in mutants], "timeout": 120})
                warm = time.perf_counter() - start
                fresh = 0.0
                for mutant in mutants:
                    warm_verdict = reply["mutants"][mutant.id]["verdict"]
                    verdict = run_fresh(root, project.python_path, inst.requirement.feature_file, lines, mutant,
                                        timeout=120)
                    fresh += verdict.elapsed
                    if warm_verdict == "fallback":
                        continue  # the executor itself would ask the fresh runner
                    compared += 1
                    if verdict.verdict == warm_verdict or (warm_verdict == "unreached" and verdict.verdict == "survived"):
                        agree += 1
                    else:
                        disagreements.append((inst.id, mutant.id, mutant.file, mutant.line, mutant.operator,
                                              warm_verdict, verdict.verdict))
                warm_total += warm
                fresh_total += fresh
                print(f"{inst.id}: {len(mutants)} mutants  warm {warm:6.2f} s  fresh {fresh:7.2f} s  "
                      f"ratio {fresh / warm:5.1f}x", flush=True)
    print(f"\nverdicts agree: {agree}/{compared} (fallback mutants are run fresh by the executor itself)")
    print(f"warm executor total {warm_total:7.2f} s   fresh process per mutant total {fresh_total:7.2f} s   "
          f"speed-up {fresh_total / warm_total:5.1f}x")
    for row in disagreements:
        print("DISAGREE", *row)
    if disagreements:
        sys.exit(1)


if __name__ == "__main__":
    main()
