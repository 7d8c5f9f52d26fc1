"""What a dataset cost to build, by stage, and what judging a kill-complete oracle prediction
costs, for datasets of different frameworks side by side in one run on this machine.

For each ``NAME=DATASET`` (built by ``req2test build``):
1. the build's seconds per stage (the card's ``stage_seconds``, and the mutant stage's phases),
   measured when it was built;
2. the oracle prediction of a sample of instances with kills, judged now, one after another,
   the datasets interleaved instance by instance (so machine load falls on all of them alike):
   the median seconds per kill-complete prediction, and each dataset's median over the first's.

With ``--shared`` the sample is drawn from the requirements every dataset has (the same
algorand-sdk-testing scenario in py-algorand-sdk, js-algorand-sdk, go-algorand-sdk,
java-algorand-sdk: its requirement family, ``bench.families.family_key``: Feature title, scenario
name and number of runnable rows, whatever the path), so the ratios compare one requirement judged
in each language.

Usage:
    python benchmarks/framework_costs.py behave=runs/py-algo go=runs/go-algo --sample 12 --shared
    python benchmarks/framework_costs.py tinyshop=/tmp/tinyshop-ds godogshop=/tmp/godogshop-ds
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

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.families import unique_families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="+", help="NAME=DATASET_DIR (the first is the baseline)")
    parser.add_argument("--sample", type=int, default=8, help="oracle predictions judged per dataset")
    parser.add_argument("--shared", action="store_true", help="sample requirements every dataset has")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="judging workers per evaluation")
    args = parser.parse_args()

    named: dict[str, Path] = {}
    for item in args.datasets:
        name, _, path = item.partition("=")
        if not path:
            sys.exit(f"{item}: expected NAME=DATASET_DIR")
        named[name] = Path(path)

    print("== build seconds by stage (measured when each dataset was built)")
    candidates: dict[str, dict[str, str]] = {}  # name -> requirement family -> instance id
    for name, root in named.items():
        dataset = load_dataset(root)
        card = dataset.card
        stages = ", ".join(f"{k} {v:.0f}" for k, v in card.stage_seconds.items())
        print(f"{name:>10}: {len(dataset.instances)} instances; {stages}; total {sum(card.stage_seconds.values()):.0f} s")
        phases = card.mutation.get("phase_seconds") or {}
        if phases:
            print(f"{'':>10}  mutant stage: " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))
        gold = dataset.load_gold()
        # family key -> instance id (a scenario a dataset holds twice matches nothing)
        candidates[name] = unique_families(i for i in dataset.instances if gold[i.id].kills)

    rng = random.Random(args.seed)
    samples: dict[str, list[str]] = {}
    if args.shared:
        shared = sorted(set.intersection(*(set(c) for c in candidates.values())))
        if not shared:
            sys.exit("the datasets share no requirement with kills")
        keys = rng.sample(shared, min(args.sample, len(shared)))
        samples = {name: [candidates[name][k] for k in keys] for name in named}
        print(f"\n{len(shared)} shared requirements with kills; judging {len(keys)} of them in each dataset")
    else:
        samples = {name: rng.sample(sorted(c.values()), min(args.sample, len(c))) for name, c in candidates.items()}

    oracle = {name: {p.instance_id: p for p in calibration_predictions(root, ("oracle",))["oracle"]}
              for name, root in named.items()}
    seconds: dict[str, list[float]] = {name: [] for name in named}
    kill_complete: dict[str, int] = {name: 0 for name in named}
    with tempfile.TemporaryDirectory(prefix="req2test-costs-") as tmp:
        for index in range(max(len(s) for s in samples.values())):
            for name, root in named.items():
                if index >= len(samples[name]):
                    continue
                instance = samples[name][index]
                path = Path(tmp) / f"{name}-{index}.jsonl"
                path.write_text(oracle[name][instance].model_dump_json() + "\n")
                run = Path(tmp) / f"{name}-{index}"
                evaluate(root, path, run, EvaluateOptions(instances=[instance], workers=args.workers, resamples=10))
                row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
                if row["outcome"] == "pass" and row["kill_complete"]:
                    kill_complete[name] += 1
                    seconds[name].append(float(row["evaluation_seconds"]))
                print(f"  {name:>10} {instance}: {row['outcome']}, KC {row['kill_complete']}, "
                      f"{row['ground_truth_kills']} kills, {row['evaluation_seconds']:.1f} s", flush=True)

    print("\n== median seconds to judge a kill-complete oracle prediction (this run)")
    baseline_name = next(iter(named))
    baseline = statistics.median(seconds[baseline_name]) if seconds[baseline_name] else None
    for name in named:
        if not seconds[name]:
            print(f"{name:>10}: no kill-complete prediction ({kill_complete[name]}/{len(samples[name])})")
            continue
        median = statistics.median(seconds[name])
        ratio = f"{median / baseline:5.2f}x {baseline_name}" if baseline else ""
        print(f"{name:>10}: {median:7.2f} s median over {len(seconds[name])} "
              f"(kill-complete {kill_complete[name]}/{len(samples[name])})  {ratio}")


if __name__ == "__main__":
    main()
