"""What a cucumber-js verdict run costs, and what the shared compile cache saves.

Every cucumber-js verdict run is a new ``node`` process in its own bubblewrap sandbox (Node
has no fork). TypeScript production is compiled by tsx on load; its cache is keyed by absolute
path, so the runs mount their tree at ``/project`` and share one cache that a trusted
``precompile`` fills with the step files and production (as the judge does), read-only.
Baseline in the same run: the same scenario without the cache.

Usage: python benchmarks/cucumber_js_speed.py DATASET [--instances 6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.dataset import load_dataset
from bench.frameworks.cucumber_js.judge import ensure_node_modules
from bench.frameworks.cucumber_js.language import production_files
from bench.frameworks.cucumber_js.runner import (
    compile_cache_for,
    link_tree,
    precompile,
    run_cucumber,
    step_files,
    transpiler_modules,
)
from bench.isolation import resolve_mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    dataset = load_dataset(args.dataset)
    project = dataset.card.projects[0]
    snapshot = args.dataset / project.snapshot
    isolation = resolve_mode("auto")
    modules = ensure_node_modules(snapshot)
    instances = dataset.instances[:: max(1, len(dataset.instances) // args.instances)][: args.instances]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        link_tree(snapshot, tree, None, modules)
        started = time.perf_counter()
        cache = compile_cache_for(Path(tmp) / "cache", isolation)
        loaded = [*step_files(snapshot), *production_files(snapshot, list(project.production))]
        precompile(tree, [(rel, (snapshot / rel).read_text(encoding="utf-8")) for rel in loaded],
                   transpiler_modules(snapshot), Path(tmp) / "warm", isolation=isolation, compile_cache=cache)
        warm_seconds = time.perf_counter() - started
        times: dict[str, list[float]] = {"no cache": [], "shared cache": []}
        for n in range(args.repeat):
            for inst in instances:
                selection = [f"{inst.requirement.feature_file}:{line}" for line in inst.requirement.run_lines]
                for label, use in (("no cache", None), ("shared cache", cache)):
                    run = run_cucumber(tree, selection, Path(tmp) / f"out-{label}-{n}", isolation=isolation,
                                       compile_cache=use)
                    assert run.passed, (inst.id, run.stderr[-300:])
                    times[label].append(run.elapsed)
    base, fast = statistics.median(times["no cache"]), statistics.median(times["shared cache"])
    print(f"{project.name} ({project.runner}), isolation {isolation}, {len(instances)} instances x {args.repeat}")
    print(f"  filling the cache (precompile): {warm_seconds:.2f} s")
    print(f"  median run, no cache:     {base:.3f} s")
    print(f"  median run, shared cache: {fast:.3f} s   ({base / fast:.2f}x)")


if __name__ == "__main__":
    main()
