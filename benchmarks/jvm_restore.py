"""What restoring verdict JVMs from a checkpoint (``cucumber_jvm.restored``) saves when judging a
Cucumber-JVM dataset, against a fresh JVM per verdict run (``REQ2TEST_JVM_RESTORE=0``, the
judge before December 6), measured in the same run.

The arm's predictions for a sample of instances are judged by whole evaluations, alternating
fresh / restored ``--rounds`` times so machine load falls on both alike. Printed per mode: the
evaluation's wall seconds (the judge session's set-up included: the restored mode's zygote is
made there), the CPU seconds of every child process (JVMs, javac, criu, bwrap), the median
seconds per prediction (``evaluation_seconds``, set-up excluded) and the JVMs; then the ratios,
and whether the verdicts (outcome, the set of kills) are the same instance by instance.

Needs root, bubblewrap and criu 4.x (``scripts/install-criu.sh``).

Usage:
    python benchmarks/jvm_restore.py DATASET --arm oracle --sample 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.frameworks.cucumber_jvm.restored import ENABLE_ENV, criu_binary

CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where the machine has it


class CpuMeter:
    """CPU seconds of this process and every descendant: a cpuacct cgroup of our own (children
    join it at fork, criu's restored JVMs included); else this process's reaped children, which
    undercounts (bubblewrap does not pass its descendants' usage up)."""

    def __init__(self) -> None:
        self.group: Path | None = None
        if CPUACCT.is_dir():
            group = CPUACCT / f"req2test-jvm-restore-{os.getpid()}"
            try:
                group.mkdir(exist_ok=True)
                (group / "cgroup.procs").write_text(str(os.getpid()))
                self.group = group
            except OSError:
                self.group = None
        self.kind = "cpuacct cgroup" if self.group else "reaped children only (undercounts)"

    def close(self) -> None:
        """Leave the cgroup (back to the root one) and remove it."""
        if self.group is not None:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()
            self.group = None

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime


def judged(dataset: Path, predictions: Path, instances: list[str], out: Path, restore: bool,
           workers: int, meter: CpuMeter) -> tuple[float, float, list[dict]]:
    os.environ[ENABLE_ENV] = "1" if restore else "0"
    cpu, started = meter.seconds(), time.perf_counter()
    evaluate(dataset, predictions, out, EvaluateOptions(instances=instances, workers=workers, resamples=10,
                                                        isolation="bwrap"))
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return wall, meter.seconds() - cpu, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--arm", default="oracle", choices=["oracle", "empty", "then-stripped"])
    parser.add_argument("--sample", type=int, default=4, help="instances (with kills) judged in each evaluation")
    parser.add_argument("--rounds", type=int, default=1, help="fresh/restored pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if criu_binary() is None:
        sys.exit("no working criu 4.x: run scripts/install-criu.sh (as root)")
    meter = CpuMeter()
    print(f"CPU measured by: {meter.kind}")

    dataset = load_dataset(args.dataset)
    gold = dataset.load_gold()
    eligible = sorted(i for i, g in gold.items() if g.kills)
    chosen = sorted(random.Random(args.seed).sample(eligible, min(args.sample, len(eligible))))
    with tempfile.TemporaryDirectory(prefix="req2test-jvm-restore-") as tmp_name:
        tmp = Path(tmp_name)
        predictions = tmp / "predictions.jsonl"
        predictions.write_text("".join(p.model_dump_json() + "\n" for p in
                                       calibration_predictions(args.dataset, (args.arm,))[args.arm]
                                       if p.instance_id in chosen))
        totals: dict[str, list[float]] = {"fresh": [0.0, 0.0], "restored": [0.0, 0.0]}
        seconds: dict[str, list[float]] = {"fresh": [], "restored": []}
        jvms: dict[str, list[int]] = {"fresh": [], "restored": []}
        verdicts: dict[str, dict[str, tuple]] = {"fresh": {}, "restored": {}}
        same = True
        for round_number in range(args.rounds):
            for mode in ("fresh", "restored"):
                wall, cpu, rows = judged(args.dataset, predictions, chosen, tmp / f"{mode}-{round_number}",
                                         mode == "restored", args.workers, meter)
                totals[mode][0] += wall
                totals[mode][1] += cpu
                for row in rows:
                    seconds[mode].append(row["evaluation_seconds"])
                    confirmation = row.get("confirmation") or {}
                    jvms[mode].append(confirmation.get("jvms", 0))
                    verdict = (row["outcome"], row["generated_kills"], row["kill_complete"])
                    if verdicts[mode].setdefault(row["instance_id"], verdict) != verdict:
                        same = False
                    if mode == "restored" and confirmation.get("restored_jvms", 0) == 0:
                        print(f"  {row['instance_id']}: no restored JVM ({confirmation.get('zygote')})")
                print(f"round {round_number + 1} {mode:8}: {wall:7.1f} s wall, {cpu:7.1f} s CPU")
            same = same and verdicts["fresh"] == verdicts["restored"]
    print(f"\n{len(chosen)} {args.arm} predictions of {args.dataset.name}, {args.rounds} round(s), "
          f"{args.workers} worker(s)")
    for mode in ("fresh", "restored"):
        print(f"  {mode:8}: {totals[mode][0]:7.1f} s wall, {totals[mode][1]:7.1f} s CPU, median "
              f"{statistics.median(seconds[mode]):.1f} s per prediction, {sum(jvms[mode])} JVMs")
    print(f"  ratio (fresh / restored): wall {totals['fresh'][0] / totals['restored'][0]:.2f}x, "
          f"CPU {totals['fresh'][1] / totals['restored'][1]:.2f}x, per prediction "
          f"{statistics.median(seconds['fresh']) / statistics.median(seconds['restored']):.2f}x")
    print(f"  verdicts (outcome, kills, kill-complete) equal on every instance: {same}")
    meter.close()


if __name__ == "__main__":
    main()
