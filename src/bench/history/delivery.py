"""Judging a takeover delivery (ReqMemBench §3.1's three checks, on a BDD commit).

A prediction for a takeover target is the **whole production tree** the agent left in its
workspace (as in the reverse task: production is replaced wholesale, so a file it deleted is
gone and a file it left alone is the parent's). Three checks, each on C's feature files with
C's ground-truth step definitions:

- **build**: every delivered production source compiles (``compile``, never run here);
- **target**: every target scenario passes (judged like any scenario: sandboxed, screened,
  the traced run and the clean runs agree);
- **regression**: the regression scenarios still pass. All those in the feature files the
  commit touched are judged, plus a sample of the others (``regression_sample``; 0 = all)
  drawn with a seed from the prediction's content, so an agent cannot know in advance which
  of the earlier scenarios are checked.

**Complete delivery** = build ∧ target ∧ regression. ``takeover_results.jsonl`` is a journal: an
interrupted evaluation resumes.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from bench import journal
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, EvaluationError, load_predictions, prepare_run
from bench.history.takeover import TakeoverError, TakeoverSet, TakeoverTarget
from bench.model import NO_PREDICTION, Frozen, GenerationMetadata, Outcome, Prediction
from bench.progress import Progress
from bench.suite.evaluate import ScenarioVerdict
from bench.suite.reverse import judge_on_production, reverse_rejections

REGRESSION_SAMPLE = 20


class TakeoverResult(Frozen):
    target_id: str
    detail: str = Field("", description="why nothing ran (a generation failure or a rejected submission)")
    build: bool
    build_detail: str = ""
    target: list[ScenarioVerdict]
    regression: list[ScenarioVerdict]
    regression_pool: int = Field(description="regression scenarios the target has (judged: len(regression))")
    target_passed: int
    regression_passed: int
    target_ok: bool
    regression_ok: bool
    complete: bool
    evaluation_seconds: float
    metadata: GenerationMetadata | None = None


def compile_errors(files: dict[str, str]) -> list[str]:
    """Sources that do not byte-compile (compiling runs none of the code)."""
    errors = []
    for path, text in sorted(files.items()):
        try:
            compile(text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            errors.append(f"{path}: {type(exc).__name__}: {exc}"[:200])
    return errors


def regression_selection(target: TakeoverTarget, regression: list[str], files: dict[str, str],
                         target_features: set[str], sample: int) -> list[str]:
    """Every regression scenario of the features the commit touched, plus ``sample`` others drawn
    with a seed from the delivered files (0: all of them)."""
    same = [s for s in regression if s.rsplit(":", 1)[0].split("/", 1)[-1] in target_features]
    rest = [s for s in regression if s not in set(same)]
    if sample <= 0 or len(rest) <= sample:
        return regression
    seed = hashlib.sha256(json.dumps([target.id, sorted(files.items())]).encode()).hexdigest()
    return sorted(same + random.Random(seed).sample(rest, sample))


def judge_delivery(takeover: TakeoverSet, target: TakeoverTarget, prediction: Prediction | None,
                   problem: str | None, options: EvaluateOptions, regression_sample: int = REGRESSION_SAMPLE,
                   progress: Progress | None = None) -> TakeoverResult:
    started = time.monotonic()
    gold = takeover.gold(target.id)
    if problem is None and prediction is None:
        problem = NO_PREDICTION
    if problem is None and prediction is not None and (rejected := reverse_rejections(prediction.files,
                                                                                      target.production)):
        problem = "invalid submission: " + rejected[0]
    if problem is not None or prediction is None:
        failed = [ScenarioVerdict(instance_id=s, outcome=Outcome.generation_failure, detail=problem or "",
                                  stability="failing") for s in gold.target_scenarios]
        return TakeoverResult(target_id=target.id, detail=problem or "", build=False, target=failed, regression=[],
                              regression_pool=len(gold.regression_scenarios), target_passed=0, regression_passed=0,
                              target_ok=False, regression_ok=False, complete=False,
                              evaluation_seconds=round(time.monotonic() - started, 3),
                              metadata=prediction.metadata if prediction is not None else None)
    errors = compile_errors(prediction.files)
    features = {s.rsplit(":", 1)[0].split("/", 1)[-1] for s in gold.target_scenarios}
    regression = regression_selection(target, gold.regression_scenarios, prediction.files, features,
                                      regression_sample)
    dataset = load_dataset(takeover.dataset_dir(target))
    scenarios = [*gold.target_scenarios, *regression]
    verdicts = judge_on_production(dataset, target.project, prediction.files, scenarios, dataset.load_gold(),
                                   options, progress)
    by_id = {v.instance_id: v for v in verdicts}
    on_target = [by_id[s] for s in gold.target_scenarios]
    on_regression = [by_id[s] for s in regression]
    target_passed = sum(1 for v in on_target if v.stability == "valid")
    regression_passed = sum(1 for v in on_regression if v.stability == "valid")
    target_ok = target_passed == len(on_target)
    regression_ok = regression_passed == len(on_regression)
    return TakeoverResult(target_id=target.id, build=not errors, build_detail="; ".join(errors[:5]),
                          target=on_target, regression=on_regression, regression_pool=len(gold.regression_scenarios),
                          target_passed=target_passed, regression_passed=regression_passed, target_ok=target_ok,
                          regression_ok=regression_ok, complete=not errors and target_ok and regression_ok,
                          evaluation_seconds=round(time.monotonic() - started, 3), metadata=prediction.metadata)


def evaluate_takeover(takeover_dir: Path, predictions_path: Path, run_dir: Path,
                      options: EvaluateOptions | None = None, targets: list[str] | None = None,
                      regression_sample: int = REGRESSION_SAMPLE, progress: Progress | None = None) -> dict[str, Any]:
    """Judge every delivery (or those of ``targets``); writes ``takeover_results.jsonl`` and
    ``takeover_summary.json``."""
    options = options or EvaluateOptions()
    options.mutants = False
    try:
        takeover = TakeoverSet(takeover_dir)
    except TakeoverError as exc:
        raise EvaluationError(str(exc)) from exc
    predictions, problems, digest = load_predictions(predictions_path)
    planned = [takeover.target(t) for t in targets] if targets else takeover.targets
    run_dir = prepare_run(options, run_dir)
    config = {"takeover": str(takeover.root.resolve()), "predictions_sha256": digest,
              "regression_sample": regression_sample, "isolation": options.isolation}
    config_path = run_dir / "takeover_run.json"
    if config_path.is_file() and json.loads(config_path.read_text(encoding="utf-8")) != config:
        raise EvaluationError(f"{run_dir} holds a takeover evaluation of other predictions; use a new directory")
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    results = journal.Journal(run_dir / "takeover_results.jsonl", TakeoverResult, key=lambda r: r.target_id)
    for target in planned:
        if target.id in results.done:
            continue
        results.append(judge_delivery(takeover, target, predictions.get(target.id), problems.get(target.id),
                                      options, regression_sample, progress))
    finished = [results.done[t.id] for t in planned]
    summary = summarize_takeover(finished, takeover.card.name, digest)
    (run_dir / "takeover_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def summarize_takeover(results: list[TakeoverResult], name: str, predictions_sha256: str) -> dict[str, Any]:
    n = len(results)

    def rate(flag: str) -> float | None:
        return round(sum(1 for r in results if getattr(r, flag)) / n, 4) if n else None

    targets = sum(len(r.target) for r in results)
    regressions = sum(len(r.regression) for r in results)
    return {"takeover": name, "mode": "takeover", "predictions_sha256": predictions_sha256, "targets": n,
            "build_rate": rate("build"), "target_rate": rate("target_ok"), "regression_rate": rate("regression_ok"),
            "complete_rate": rate("complete"),
            "target_scenarios_passed": round(sum(r.target_passed for r in results) / targets, 4) if targets else None,
            "regression_scenarios_passed": (round(sum(r.regression_passed for r in results) / regressions, 4)
                                            if regressions else None),
            "flaky": sum(1 for r in results for v in [*r.target, *r.regression] if v.stability == "flaky"),
            "infrastructure_failures": sum(1 for r in results for v in [*r.target, *r.regression]
                                           if v.outcome is Outcome.infrastructure_failure),
            "cost_usd": round(sum((r.metadata.cost_usd or 0.0) for r in results if r.metadata), 6),
            "evaluation_seconds": round(sum(r.evaluation_seconds for r in results), 1)}
