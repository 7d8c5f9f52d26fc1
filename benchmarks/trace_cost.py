"""What tracing costs: a traced behave run vs. the same run untraced, on a real dataset.

N scenarios of the dataset (each with all its outline rows, as the builder runs them) are each
run three ways, all measured in this run, one after the other:

- **plain**: untraced (``trace: false``), the baseline;
- **old**: traced the way it was before issue 26 item 7 (``bench.frameworks.behave.trace_reference``:
  the worker's environment holds ``REQ2TEST_REFERENCE_TRACE=1``);
- **new**: traced by the current ``RunRecorder``.

Each run is the warm worker's own ``run`` request (``Worker._child_run``, what the pool's
worker does in its forked child), in a child forked from a worker initialised in this
process, so that each run's CPU time comes back exactly (``os.wait4``): on a loaded machine
the wall clock says more about the neighbours than about the run. The script prints each
run's CPU seconds, the ratios traced/plain (old, new) and old/new on CPU time, the same totals
on the wall clock, and whether the two traced results are identical (the whole result: JSON
with sorted keys). Exits 1 when any differs.

Usage:
    python benchmarks/trace_cost.py [DATASET_DIR] [--scenarios 8] [--seed 7] [--repeat 1]
                                    [--instance ID ...] [--largest]

``--largest``: the scenarios with the most outline rows instead of a random sample;
``--repeat``: runs per mode and scenario, the one with the least CPU time kept.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.dataset import load_dataset
from bench.frameworks.behave import worker as behave_worker
from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
from bench.frameworks.behave.trace_reference import ENV_FLAG
from bench.frameworks.worker_pool import WorkerSpec

MODES = ("plain", "old", "new")


def run_forked(worker: behave_worker.Worker, request: dict[str, Any], mode: str) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, result JSON) of one run in a forked child."""
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 0
        try:
            if mode == "old":
                os.environ[ENV_FLAG] = "1"
            else:
                os.environ.pop(ENV_FLAG, None)
            result = worker._child_run({**request, "trace": mode != "plain"})
            payload = json.dumps(result, sort_keys=True).encode()
        except BaseException as exc:  # noqa: BLE001 - reported, never returned into the loop
            payload, code = json.dumps({"benchmark_error": f"{type(exc).__name__}: {exc}"}).encode(), 1
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view):]
        os._exit(code)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 20):
        chunks.append(chunk)
    os.close(read_fd)
    _, _, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    return usage.ru_utime + usage.ru_stime, wall, b"".join(chunks).decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path, nargs="?", default=Path("/work/datasets/python-pptx"))
    parser.add_argument("--scenarios", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--instance", action="append", default=[], help="an instance id (repeatable)")
    parser.add_argument("--largest", action="store_true", help="the scenarios with the most outline rows")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    project = dataset.card.projects[0]
    instances = [i for i in dataset.instances if i.project == project.name]
    if args.instance:
        by_id = {i.id: i for i in instances}
        chosen = [by_id[i] for i in args.instance]
    elif args.largest:
        chosen = sorted(instances, key=lambda i: (-len(i.requirement.run_lines), i.id))[:args.scenarios]
    else:
        chosen = random.Random(args.seed).sample(instances, min(args.scenarios, len(instances)))

    tmp = tempfile.mkdtemp(prefix="trace-cost-")
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    differ = []
    try:
        root = Path(tmp) / "slot0"
        shutil.copytree(args.dataset / project.snapshot, root)
        spec = WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir=project.features_dir, python_path=project.python_path,
                          production=project.production,
                          import_packages=[Path(p).name.removesuffix(".py") for p in project.production],
                          preload=True)
        worker = behave_worker.Worker(sys.stdout)
        reply = worker.init(spec.init_request())  # the worker's init, in this process (it chdirs to root)
        if reply.get("import_errors") or reply.get("load_error"):
            sys.exit(f"the worker did not initialise: {reply}")
        print(f"{project.name} {project.version}: {len(chosen)} scenarios, CPU seconds per run "
              f"(least of {args.repeat})")
        print(f"{'scenario':52} {'rows':>4} {'plain':>6} {'old':>6} {'new':>6} "
              f"{'old/pl':>6} {'new/pl':>6} {'old/new':>7}  same")
        for inst in chosen:
            request = {"feature": inst.requirement.feature_file, "lines": inst.requirement.run_lines}
            results = {}
            for mode in MODES:
                runs = [run_forked(worker, request, mode) for _ in range(args.repeat)]
                best = min(runs)
                cpu[mode].append(best[0])
                wall[mode].append(best[1])
                results[mode] = best[2]
            same = results["old"] == results["new"] and '"trace"' in results["new"]
            if not same:
                differ.append(inst.id)
            plain, old, new = (cpu[mode][-1] for mode in MODES)
            print(f"{inst.id[-52:]:52} {len(inst.requirement.run_lines):4d} {plain:6.2f} {old:6.2f} {new:6.2f} "
                  f"{old / plain:6.1f} {new / plain:6.1f} {old / new:7.2f}  {'yes' if same else 'NO'}", flush=True)
    finally:
        os.chdir("/")
        shutil.rmtree(tmp, ignore_errors=True)

    for label, times in (("CPU", cpu), ("wall", wall)):
        plain, old, new = (sum(times[mode]) for mode in MODES)
        print(f"{label:4} total: plain {plain:7.2f} s, traced old {old:7.2f} s, traced new {new:7.2f} s;  "
              f"traced/plain old {old / plain:4.1f}x, new {new / plain:4.1f}x;  old/new {old / new:4.2f}x")
    old_plain = statistics.median(o / p for p, o in zip(cpu["plain"], cpu["old"]))
    new_plain = statistics.median(n / p for p, n in zip(cpu["plain"], cpu["new"]))
    old_new = statistics.median(o / n for o, n in zip(cpu["old"], cpu["new"]))
    print(f"per scenario (CPU): median traced/plain old {old_plain:.1f}x, new {new_plain:.1f}x; "
          f"median old/new {old_new:.2f}x")
    print(f"identical traced results: {len(chosen) - len(differ)}/{len(chosen)}")
    for instance_id in differ:
        print("DIFFERS", instance_id)
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
