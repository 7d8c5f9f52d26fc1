"""What judging one prediction costs now against an earlier revision of req2test, in the same run,
and whether both give the same verdict (issue 31: every speed-up keeps every verdict).

For each sampled instance and each calibration arm (``oracle``: the developers' own test, a
kill-complete pass; ``empty``: steps that do nothing, a pass with no kill), the prediction is
judged twice, interleaved instance by instance so machine load falls on both alike:

- **baseline**: the source tree of ``--baseline-rev`` (a ``git worktree`` of this repository),
  in a fresh Python process;
- **current**: this checkout's source, in a fresh Python process, with ``--run-slots``.

Printed: each judgement's seconds (``evaluation_seconds``) on both sides as it finishes, per arm the
median seconds and their ratio (baseline / current), and every verdict difference (outcome, kills, surviving kills,
kill-complete): there must be none.

Usage:
    python benchmarks/evaluation_speed.py DATASET --baseline-rev f78d232 --sample 6
    python benchmarks/evaluation_speed.py DATASET --baseline-rev HEAD~3 --instances ID ID --arm empty
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset

COMPARED = ("outcome", "generated_kills", "surviving_kills", "kill_complete")

# run in a fresh interpreter against one source tree: the options both revisions know, plus the
# current one's run_slots when given
JUDGE = """
import json, sys
from bench.evaluate import EvaluateOptions, evaluate
args = json.loads(sys.argv[1])
extra = {"run_slots": args["run_slots"]} if args["run_slots"] is not None else {}
evaluate(args["dataset"], args["predictions"], args["out"],
         EvaluateOptions(workers=1, resamples=10, seed=args["seed"], instances=[args["instance"]], **extra))
"""


def judge(source: Path, dataset: Path, predictions: Path, out: Path, instance: str, seed: int,
          run_slots: int | None) -> tuple[float, dict]:
    """Seconds to judge one prediction in a fresh interpreter on ``source`` (the judgement's own
    ``evaluation_seconds``: without the judge's per-evaluation set-up, paid once per evaluation
    however many predictions it judges), and its result row."""
    payload = json.dumps({"dataset": str(dataset), "predictions": str(predictions), "out": str(out),
                          "instance": instance, "seed": seed, "run_slots": run_slots})
    subprocess.run([sys.executable, "-c", JUDGE, payload], check=True, cwd=source,
                   env={"PYTHONPATH": str(source / "src"), "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "HOME": str(Path.home())})
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["instance_id"] == instance)
    return float(row["evaluation_seconds"]), row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--baseline-rev", required=True, help="the git revision judged as the baseline")
    parser.add_argument("--sample", type=int, default=6, help="instances with kills drawn at random")
    parser.add_argument("--instances", nargs="*", default=None, help="these instances instead of a sample")
    parser.add_argument("--largest", action="store_true", help="add the instance with the most kills")
    parser.add_argument("--arm", action="append", choices=("oracle", "empty"), default=None)
    parser.add_argument("--run-slots", type=int, default=None, help="the current side's run_slots (default: its own)")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    arms = args.arm or ["oracle", "empty"]
    dataset = load_dataset(args.dataset)
    gold = dataset.load_gold()
    with_kills = sorted(i for i, g in gold.items() if g.kills)
    chosen = list(args.instances or random.Random(args.seed).sample(with_kills, min(args.sample, len(with_kills))))
    if args.largest:
        largest = max(with_kills, key=lambda i: (len(gold[i].kills), i))
        if largest not in chosen:
            chosen.append(largest)
    sets = calibration_predictions(args.dataset)
    with tempfile.TemporaryDirectory(prefix="req2test-speed-") as tmp_name:
        tmp = Path(tmp_name)
        baseline = tmp / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(baseline), args.baseline_rev],
                       check=True, capture_output=True)
        try:
            seconds: dict[tuple[str, str], list[float]] = {}
            differences: list[str] = []
            for arm in arms:
                by_id = {p.instance_id: p for p in sets[arm]}
                for n, instance in enumerate(chosen):
                    predictions = tmp / f"{arm}-{n}.jsonl"
                    predictions.write_text(by_id[instance].model_dump_json() + "\n")
                    sides = [("baseline", baseline, None), ("current", ROOT, args.run_slots)]
                    if n % 2:  # alternate which side goes first
                        sides.reverse()
                    rows = {}
                    for side, source, slots in sides:
                        took, row = judge(source, args.dataset, predictions, tmp / f"out-{arm}-{n}-{side}",
                                          instance, args.seed, slots)
                        seconds.setdefault((arm, side), []).append(took)
                        rows[side] = (took, row)
                    for key in COMPARED:
                        if rows["baseline"][1].get(key) != rows["current"][1].get(key):
                            differences.append(f"{arm} {instance} {key}: baseline {rows['baseline'][1].get(key)!r}, "
                                               f"current {rows['current'][1].get(key)!r}")
                    print(f"{arm:6} {instance}  kills {len(gold[instance].kills):4}  baseline {rows['baseline'][0]:7.1f} s"
                          f"  current {rows['current'][0]:7.1f} s  {rows['current'][1]['outcome']}"
                          f" {'KC' if rows['current'][1]['kill_complete'] else ''}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
                           check=False, capture_output=True)
    print()
    print(f"{'arm':8} {'n':>3} {'baseline median':>16} {'current median':>15} {'ratio':>6}")
    for arm in arms:
        base, cur = statistics.median(seconds[arm, "baseline"]), statistics.median(seconds[arm, "current"])
        print(f"{arm:8} {len(seconds[arm, 'current']):3} {base:15.1f}s {cur:14.1f}s {base / cur:5.2f}x")
    print(f"verdict differences: {len(differences)}")
    for line in differences:
        print("  " + line)


if __name__ == "__main__":
    main()
