"""What holding back unreached kills (``schemata_stage.kill_plan``) saves when judging a
calibration prediction on a godog or Cucumber-JVM dataset, against the judge running every
unreached kill (the rule before December 6), measured in the same run.

For a sample of instances with more than ``UNREACHED_SAMPLE`` kills, the arm's prediction (``empty``
by default: a test that reaches nothing, the case the rule is for) is judged twice, interleaved
instance by instance so machine load falls on both alike: once with the rule (baseline: the
sample size set beyond any instance's kills, so every kill runs), once as shipped. It prints the
fresh processes and seconds of each, their ratio, and whether the verdicts (outcome, kills)
are the same.

Usage:
    python benchmarks/unreached_sample.py DATASET --arm empty --sample 6
    python benchmarks/unreached_sample.py DATASET --arm oracle --sample 4   # must change nothing
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.builder import schemata_stage
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate

SHIPPED = schemata_stage.UNREACHED_SAMPLE


def judge(dataset: Path, prediction: str, instance: str, run: Path, sample: int, workers: int) -> dict:
    schemata_stage.UNREACHED_SAMPLE = sample  # kill_plan reads it at every call
    path = run.parent / f"{run.name}.jsonl"
    path.write_text(prediction + "\n")
    evaluate(dataset, path, run, EvaluateOptions(instances=[instance], workers=workers, resamples=10))
    return json.loads((run / "results.jsonl").read_text().splitlines()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--arm", default="empty", choices=["empty", "oracle", "then-stripped"])
    parser.add_argument("--sample", type=int, default=6, help="instances judged (each twice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    gold = dataset.load_gold()
    eligible = sorted(i for i, g in gold.items() if len(g.kills) > SHIPPED)
    if not eligible:
        sys.exit(f"no instance has more than {SHIPPED} kills")
    chosen = random.Random(args.seed).sample(eligible, min(args.sample, len(eligible)))
    predictions = {p.instance_id: p.model_dump_json()
                   for p in calibration_predictions(args.dataset, (args.arm,))[args.arm] if p.instance_id in chosen}
    every = 10**9  # no kill held back
    runs: dict[str, list[float]] = {"all": [], "plan": []}
    seconds: dict[str, list[float]] = {"all": [], "plan": []}
    same = 0
    with tempfile.TemporaryDirectory(prefix="req2test-unreached-") as tmp:
        for n, instance in enumerate(chosen):
            rows = {}
            for label, sample in (("all", every), ("plan", SHIPPED)):
                row = judge(args.dataset, predictions[instance], instance, Path(tmp) / f"{label}-{n}", sample,
                            args.workers)
                rows[label] = row
                runs[label].append(float(row["fresh_fallbacks"]))  # the judgement's fresh processes
                seconds[label].append(float(row["evaluation_seconds"]))
            a, b = rows["all"], rows["plan"]
            equal = (a["outcome"], a["generated_kills"], a["kill_complete"]) == \
                    (b["outcome"], b["generated_kills"], b["kill_complete"])
            same += equal
            held = b["confirmation"].get("unreached_not_run", 0)
            print(f"  {instance}: {len(gold[instance].kills)} kills; every kill {a['outcome']} "
                  f"{a['generated_kills']} kills {a['fresh_fallbacks']} processes {a['evaluation_seconds']:.1f} s; kill_plan "
                  f"{b['outcome']} {b['generated_kills']} kills {b['fresh_fallbacks']} processes "
                  f"{b['evaluation_seconds']:.1f} s, {held} held back; "
                  f"{'same verdict' if equal else 'DIFFERENT verdict'}", flush=True)
    schemata_stage.UNREACHED_SAMPLE = SHIPPED
    total_all, total_plan = sum(seconds["all"]), sum(seconds["plan"])
    print(f"\n{args.arm} arm, {len(chosen)} instances: every unreached kill {total_all:.0f} s "
          f"(median {statistics.median(seconds['all']):.1f} s), kill_plan {total_plan:.0f} s "
          f"(median {statistics.median(seconds['plan']):.1f} s): {total_all / max(total_plan, 1e-9):.1f}x; processes "
          f"{sum(runs['all']):.0f} vs {sum(runs['plan']):.0f}; "
          f"verdicts the same on {same}/{len(chosen)}")


if __name__ == "__main__":
    main()
