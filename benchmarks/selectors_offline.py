"""How often each best-of-n selector picks a kill-complete candidate, measured offline.

Per instance the candidate set is the ground-truth test plus each degraded variant that can
be derived from it (harness.strategies.variants: then_stripped, weakened_checks,
constructed_state, broad_except). Every candidate is run through the real evaluator — one
predictions file and one evaluate run directory per kind — so which candidates are
kill-complete comes from evaluation, not from assumption (the ground truth included). The
candidates are shuffled per instance with a fixed seed, so "pick candidate 1" is not "pick
the ground truth". Then ``static`` and ``consensus`` choose among them; reported: how often
the choice is kill-complete, against random choice (mean over instances of #KC/#candidates)
and the oracle (any KC), with 95% percentile-bootstrap CIs over instances, and how often
each kind was chosen. ``judge`` needs a model and is reported as not measurable offline.

Evaluate run directories resume: rerunning with any --sample/--seed reuses every instance
already evaluated (the predictions files hold all scorable instances, whatever the sample).

Usage:
    python benchmarks/selectors_offline.py DATASET [--sample N] [--seed S] [--workers 1] -o OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import GenerationMetadata, InstanceResult, Outcome, Prediction
from harness.strategies.selectors import Candidate, SelectionContext, select
from harness.strategies.variants import VARIANTS
from harness.views import materialize

KINDS = ("ground_truth", *VARIANTS)
Files = dict[str, str]
MEASURED = ("static", "consensus")
RESAMPLES = 2000


def build_candidates(dataset_dir: Path, ids: list[str]) -> dict[str, dict[str, dict[str, str]]]:
    """kind -> instance id -> files; a variant kind lacks the instances it cannot be derived for."""
    ds = load_dataset(dataset_dir)
    oracle = {p.instance_id: p.files for p in calibration_predictions(dataset_dir)["oracle"]}
    out: dict[str, dict[str, dict[str, str]]] = {kind: {} for kind in KINDS}
    for iid in ids:
        inst = ds.instance(iid)
        features_dir = next(p.features_dir for p in ds.card.projects if p.name == inst.project)
        out["ground_truth"][iid] = oracle[iid]
        for kind, make in VARIANTS.items():
            files = make(oracle[iid], inst, features_dir)
            if files is not None:
                out[kind][iid] = files
    return out


def write_predictions(path: Path, kind: str, by_instance: dict[str, dict[str, str]]) -> None:
    text = "".join(Prediction(instance_id=iid, files=files,
                              metadata=GenerationMetadata(agent=f"variant:{kind}")).model_dump_json() + "\n"
                   for iid, files in sorted(by_instance.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def load_results(run_dir: Path) -> dict[str, InstanceResult]:
    path = run_dir / "results.jsonl"
    if not path.is_file():
        return {}
    results = [InstanceResult.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    return {r.instance_id: r for r in results}


def bootstrap(values: list[float], seed: int, resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """Mean and 95% percentile-bootstrap interval over instances."""
    if not values:
        return (float("nan"),) * 3  # type: ignore[return-value]
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return (sum(values) / n, means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="N scorable instances, seeded (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    ds = load_dataset(args.dataset)
    gold = ds.load_gold()
    scorable = sorted(i for i in ds.card.scored_instances if gold[i].kills)
    ids = sorted(random.Random(args.seed).sample(scorable, args.sample)) if 0 < args.sample < len(scorable) \
        else scorable
    print(f"{len(ids)} of {len(scorable)} scorable instances (seed {args.seed})", flush=True)

    # Predictions hold every scorable instance (not just the sample), so a run directory
    # stays valid for any later sample and resumes what it already evaluated.
    t0 = time.perf_counter()
    candidates = build_candidates(args.dataset, scorable)
    build_seconds = time.perf_counter() - t0
    print(f"candidates built in {build_seconds:.1f} s: "
          + ", ".join(f"{k} {sum(1 for i in ids if i in candidates[k])}" for k in KINDS), flush=True)

    results: dict[str, dict[str, InstanceResult]] = {}
    eval_seconds: dict[str, float] = {}
    for kind in KINDS:
        run_dir = args.out / "runs" / kind
        predictions = run_dir / "predictions.jsonl"
        write_predictions(predictions, kind, candidates[kind])
        wanted = [i for i in ids if i in candidates[kind]]
        t0 = time.perf_counter()
        evaluate(args.dataset, predictions, run_dir,
                 EvaluateOptions(workers=args.workers, instances=wanted, resamples=200))
        eval_seconds[kind] = round(time.perf_counter() - t0, 1)
        results[kind] = load_results(run_dir)
        kc = sum(results[kind][i].kill_complete for i in wanted)
        print(f"  evaluated {kind}: {len(wanted)} instances in {eval_seconds[kind]:.0f} s, kill-complete {kc}",
              flush=True)

    # The static selector reads fixtures and shared helpers from the view; the all-hidden
    # view of a project is one tree for all its instances (test side identical in both views).
    views: dict[str, Path] = {}
    for iid in ids:
        project = ds.instance(iid).project
        if project not in views:
            views[project] = materialize(ds, iid, "ah").root
    t0 = time.perf_counter()
    with_gt = [selection_record(ds, iid, KINDS, candidates, results, views, args.seed) for iid in ids]
    # Without the ground truth: can a selector tell the kill-complete variants from the rest?
    # Only instances where the answer matters (some variant KC, some not) are measured.
    variants_only = [r for iid in ids
                     if (r := selection_record(ds, iid, KINDS[1:], candidates, results, views, args.seed))
                     and 0 < sum(r["kill_complete"]) < len(r["kill_complete"])]
    select_seconds = time.perf_counter() - t0
    report: dict[str, Any] = {
        "dataset": str(args.dataset), "scorable": len(scorable), "seed": args.seed, "sample": args.sample,
        "kinds": list(KINDS),
        "with_ground_truth": summarize(with_gt, KINDS, args.seed),
        "variants_only": summarize(variants_only, KINDS[1:], args.seed),
        "judge": "not measurable offline (needs a model); exercised with a fake model in tests/unit/test_selectors.py",
        "seconds": {"build_candidates": round(build_seconds, 1), "evaluate": eval_seconds,
                    "select": round(select_seconds, 1), "total": round(time.perf_counter() - started, 1)},
        "records": {"with_ground_truth": with_gt, "variants_only": variants_only},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "selectors.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_table("ground truth + variants", report["with_ground_truth"])
    print_table("variants only, instances where some but not all are kill-complete", report["variants_only"])
    print(f"\n{'judge':<12}  {report['judge']}")
    seconds = report["seconds"]
    print(f"time: build {seconds['build_candidates']} s, evaluate {sum(seconds['evaluate'].values()):.0f} s, "
          f"select {seconds['select']} s, total {seconds['total']} s")


def selection_record(ds: Any, iid: str, kinds_wanted: tuple[str, ...], candidates: dict[str, dict[str, Files]],
                     results: dict[str, dict[str, InstanceResult]], views: dict[str, Path],
                     seed: int) -> dict[str, Any]:
    inst = ds.instance(iid)
    project = next(p for p in ds.card.projects if p.name == inst.project)
    kinds = [k for k in kinds_wanted if iid in candidates[k]]
    random.Random(f"{seed}:{iid}").shuffle(kinds)
    cands = [Candidate(index=n, prediction=Prediction(instance_id=iid, files=candidates[k][iid]))
             for n, k in enumerate(kinds, 1)]
    verdicts = {n: results[k][iid] for n, k in enumerate(kinds, 1)}
    context = SelectionContext(instance=inst, features_dir=project.features_dir, view_root=views[inst.project],
                               results=verdicts)
    record: dict[str, Any] = {"instance_id": iid, "candidates": kinds,
                              "kill_complete": [verdicts[n].kill_complete for n in range(1, len(kinds) + 1)],
                              "outcomes": [verdicts[n].outcome.value for n in range(1, len(kinds) + 1)],
                              "infrastructure": sum(v.outcome == Outcome.infrastructure_failure
                                                    for v in verdicts.values())}
    for name in (*MEASURED, "oracle"):
        selection = select(name, cands, context)
        record[name] = {"chosen": selection.chosen, "kind": kinds[selection.chosen - 1],
                        "kill_complete": verdicts[selection.chosen].kill_complete,
                        "scores": selection.scores, "reason": selection.reason}
    return record


def summarize(records: list[dict[str, Any]], kinds: tuple[str, ...], seed: int) -> dict[str, Any]:
    if not records:
        return {"instances": 0}
    random_values = [sum(r["kill_complete"]) / len(r["kill_complete"]) for r in records]
    rand = bootstrap(random_values, seed)
    out: dict[str, Any] = {
        "instances": len(records),
        "candidates_per_instance": statistics.mean(len(r["candidates"]) for r in records),
        "per_kind": {k: {"instances": sum(1 for r in records if k in r["candidates"]),
                         "kill_complete": sum(r["kill_complete"][r["candidates"].index(k)]
                                              for r in records if k in r["candidates"]),
                         "pass": sum(r["outcomes"][r["candidates"].index(k)] == "pass"
                                     for r in records if k in r["candidates"])} for k in kinds},
        "infrastructure_outcomes": sum(r["infrastructure"] for r in records),
        "random": {"kc_rate": rand[0], "ci": [rand[1], rand[2]]},
        "selectors": {},
    }
    for name in (*MEASURED, "oracle"):
        values = [float(r[name]["kill_complete"]) for r in records]
        rate = bootstrap(values, seed)
        diff = bootstrap([v - rv for v, rv in zip(values, random_values, strict=True)], seed)
        out["selectors"][name] = {
            "kc_rate": rate[0], "ci": [rate[1], rate[2]],
            "minus_random": diff[0], "minus_random_ci": [diff[1], diff[2]],
            "chosen_by_kind": {k: sum(1 for r in records if r[name]["kind"] == k) for k in kinds},
        }
    return out


def print_table(title: str, report: dict[str, Any]) -> None:
    n = report["instances"]
    print(f"\n== {title}: {n} instances")
    if not n:
        return
    print(f"{report['candidates_per_instance']:.2f} candidates per instance; "
          f"{report['infrastructure_outcomes']} infrastructure outcomes")
    print(f"{'kind':<20}{'instances':>10}{'pass':>8}{'KC':>8}")
    for kind, row in report["per_kind"].items():
        print(f"{kind:<20}{row['instances']:>10}{row['pass']:>8}{row['kill_complete']:>8}")
    print(f"{'selector':<12}{'KC pick rate':>14}{'95% CI':>18}{'minus random':>14}{'95% CI':>18}   chosen by kind")
    rand = report["random"]
    print(f"{'random':<12}{rand['kc_rate']:>14.3f}{_ci(rand['ci']):>18}")
    for name, row in report["selectors"].items():
        kinds = ", ".join(f"{k} {c}" for k, c in row["chosen_by_kind"].items() if c)
        print(f"{name:<12}{row['kc_rate']:>14.3f}{_ci(row['ci']):>18}{row['minus_random']:>+14.3f}"
              f"{_ci(row['minus_random_ci']):>18}   {kinds}")


def _ci(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


if __name__ == "__main__":
    main()
