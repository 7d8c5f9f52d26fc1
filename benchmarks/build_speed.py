"""How fast is `req2test build`, and what does the warm runner buy?

Prints, in one run on this machine:
1. the same sample of scenarios run (a) as a fresh `python -m behave FILE:LINE` process
   each — the naive baseline — and (b) through the warm fork-per-run worker, with the
   per-run medians and their ratio; verdicts must agree;
2. a full build of SOURCE with its per-stage times.

Usage:
    python benchmarks/build_speed.py                       # python-docx==1.2.0
    python benchmarks/build_speed.py examples/tinyshop --sample 10
    python benchmarks/build_speed.py python-docx==1.2.0 --skip-build
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
from bench.frameworks.outcomes import classify_run
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
from bench.gherkin_reader import read_feature_file
from bench.project import resolve_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", default="python-docx==1.2.0")
    parser.add_argument("--sample", type=int, default=30, help="scenarios in the warm-vs-fresh comparison")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("-o", "--out", type=Path, default=None, help="keep the built dataset here")
    parser.add_argument("--no-infer-stripped", action="store_true",
                        help="run the then-stripped test against every kill (the cross-check of the inference)")
    args = parser.parse_args()

    source = resolve_source(args.source)
    requirements = []
    for path in sorted((source.root / source.features_dir).rglob("*.feature")):
        requirements += read_feature_file(source.root, path).requirements
    random.Random(args.seed).shuffle(requirements)
    sample = requirements[: args.sample]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        shutil.copytree(source.root, root, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(root / p) for p in source.python_path),
                   PYTHONDONTWRITEBYTECODE="1")
        fresh_times, fresh_ok = [], []
        for req in sample:
            locations = [f"{req.feature_file}:{line}" for line in req.run_lines]
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "behave", "--no-summary", "-f", "null", *locations],
                                  cwd=root, env=env, capture_output=True, check=False)
            fresh_times.append(time.perf_counter() - start)
            fresh_ok.append(proc.returncode == 0)

        spec = WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir=source.features_dir, python_path=source.python_path,
                          production=source.production,
                          import_packages=[Path(p).name for p in source.production], preload=True)
        warm_times, warm_ok = [], []
        start_pool = time.perf_counter()
        with WorkerPool(spec) as pool:
            startup = time.perf_counter() - start_pool
            for req in sample:
                start = time.perf_counter()
                result = pool.call_one({"op": "run", "feature": req.feature_file, "lines": req.run_lines,
                                        "timeout": 120})
                warm_times.append(time.perf_counter() - start)
                warm_ok.append(classify_run(result, len(req.run_lines)).passed)

    agree = sum(a == b for a, b in zip(fresh_ok, warm_ok))
    fresh_median = statistics.median(fresh_times)
    warm_median = statistics.median(warm_times)
    print(f"== warm runner vs fresh behave process ({len(sample)} scenarios of {source.name} {source.version})")
    print(f"fresh process per run : median {fresh_median * 1000:8.1f} ms   total {sum(fresh_times):6.2f} s")
    print(f"warm fork per run     : median {warm_median * 1000:8.1f} ms   total {sum(warm_times):6.2f} s"
          f"   (+{startup:.2f} s one-off start-up)")
    print(f"speed-up (median)     : {fresh_median / warm_median:6.1f}x")
    print(f"verdicts agree        : {agree}/{len(sample)}")
    if agree != len(sample):
        sys.exit("verdicts differ between the fresh and the warm runner")

    if args.skip_build:
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "ds"
        start = time.perf_counter()
        card = build_dataset(args.source, out, BuildOptions(infer_stripped=not args.no_infer_stripped, force=True))
        total = time.perf_counter() - start
    print(f"\n== full build of {args.source} ({os.cpu_count()} cores): {card.projects[0].instances} instances")
    for stage, seconds in card.stage_seconds.items():
        print(f"  {stage:<18} {seconds:7.2f} s")
    mutation = card.mutation or {}
    for phase, seconds in (mutation.get("phase_seconds") or {}).items():
        print(f"    mutants: {phase:<26} {seconds:7.2f} s")
    if mutation:
        print(f"    ground-truth verdicts {sum(mutation.get('ground_truth_verdicts', {}).values())}, "
              f"then-stripped runs {mutation.get('then_stripped_runs')}, "
              f"inferred without running {mutation.get('then_stripped_inferred')}")
    budget = 600 if mutation else 300
    print(f"  {'total':<18} {total:7.2f} s   (budget {budget} s: {'OK' if total <= budget else 'OVER'})")


if __name__ == "__main__":
    main()
