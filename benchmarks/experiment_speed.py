"""How much the experiment runner's journals and content-addressed caches save, measured in one run.

Runs the demo's paragraph A/B (examples/demo/ab.yaml: 12 instances, 3 arms, 60 generations in bwrap
sandboxes, 5 candidate sets evaluated with mutants) three times against one private cache:

  fresh    empty cache, new run directory           (the baseline)
  cached   warm cache, new run directory            (every generation and evaluation served by hash)
  resumed  the fresh run's directory again          (everything journaled: nothing to do)

and prints each time and its ratio to the fresh run. Verdicts must be identical in all three.

    python benchmarks/experiment_speed.py DATASET      # DATASET: the tinyshop example, built with mutants
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def verdicts(run_dir: Path) -> dict[str, list[tuple]]:
    out = {}
    for results in sorted(run_dir.glob("configs/*/results.jsonl")):
        rows = [json.loads(line) for line in results.read_text().splitlines()]
        out[results.parent.name] = [(r["instance_id"], r["outcome"], r["kill_complete"], r["generated_kills"])
                                    for r in rows]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="req2test-expspeed-"))
    os.environ["REQ2TEST_CACHE"] = str(work / "cache")
    from harness.demo import DEMO, _experiment_file
    from harness.experiment.runner import ExperimentRunner, prepare

    path = _experiment_file(DEMO / "ab.yaml", work, args.dataset.resolve())
    timings: dict[str, float] = {}
    runs: dict[str, dict] = {}
    try:
        for label, run_dir in (("fresh", work / "fresh"), ("cached", work / "cached"), ("resumed", work / "fresh")):
            experiment, plan, dataset = prepare(path)
            started = time.perf_counter()
            outcome = ExperimentRunner(experiment, plan, dataset, run_dir).run(path.read_text())
            timings[label] = time.perf_counter() - started
            runs[label] = verdicts(run_dir)
            print(f"{label:8s} {timings[label]:7.1f} s   generated {outcome.generated:3d}, from cache {outcome.cached:3d}")
        same = runs["fresh"] == runs["cached"] == runs["resumed"]
        print()
        print(f"{'run':8s} {'seconds':>8s} {'vs fresh':>9s}")
        for label, seconds in timings.items():
            print(f"{label:8s} {seconds:8.1f} {timings['fresh'] / seconds:8.1f}x")
        print(f"verdicts identical across the three: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
