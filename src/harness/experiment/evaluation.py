"""Scoring a scenario-mode arm's candidates: the evaluator behind a content-addressed cache.

Owns ``evaluate_candidates``: every candidate of every instance looked up in the evaluation cache by its
content key (``plan.CacheKeys.evaluation``: dataset, instance, files, mutants, timeout, evaluator code), the
misses batched into one ``EvaluationUnit`` per candidate index and run through the executor, each result
stored in the cache as it lands (an infrastructure failure never is) and counted on the progress display.

Separate from the generation stage because it runs twice per decomposing arm (per level, for the
evaluator-guided strategies and the oracle selector, then on the targets) and from selection, which only
reads its results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.model import InstanceResult, Outcome, Prediction
from harness.experiment.config import content_hash
from harness.experiment.plan import ArmView
from harness.experiment.units import EvaluationUnit, cache_root, run_evaluation, write_atomic

if TYPE_CHECKING:
    from harness.experiment.executors import Executor
    from harness.experiment.runner import ExperimentRunner


def evaluate_candidates(runner: ExperimentRunner, av: ArmView, ids: list[str],
                        candidates: dict[str, dict[int, Prediction]],
                        executor: Executor) -> dict[int, dict[str, InstanceResult]]:
    """Candidate k's result per instance of ``ids``, for every k of the arm."""
    cache = cache_root() / "evaluations"
    results: dict[int, dict[str, InstanceResult]] = {k: {} for k in range(1, av.arm.n + 1)}
    units: list[tuple[int, EvaluationUnit, dict[str, str]]] = []
    for k in range(1, av.arm.n + 1):
        misses: dict[str, str] = {}
        for instance_id in ids:
            prediction = candidates.get(instance_id, {}).get(k)
            key = runner.keys.evaluation(instance_id, prediction)
            hit = cache / f"{key}.json"
            if runner.experiment.cache and hit.is_file():
                results[k][instance_id] = InstanceResult.model_validate_json(hit.read_text(encoding="utf-8"))
            else:
                misses[instance_id] = key
        if misses:
            preds = [candidates[i][k] for i in misses if k in candidates.get(i, {})]
            digest = content_hash(sorted(misses.values()))[:16]
            evaluation = runner.experiment.evaluation
            # on Ray a unit reserves one CPU: its evaluator must not fork one worker per core of the node
            workers = evaluation.workers or (1 if runner.executor_spec.startswith("ray") else 0)
            units.append((k, EvaluationUnit(dataset_dir=runner.plan.dataset_dir, predictions=preds,
                                            instance_ids=list(misses), workers=workers,
                                            work_dir=str(runner.run_dir / "evaluations" / av.name / f"c{k}-{digest}"),
                                            mutants=evaluation.mutants, timeout=evaluation.timeout), misses))
    total = sum(len(u[2]) for u in units)
    if total:
        runner.progress.stage(f"evaluate {av.name}", total)

    # the status counts each arm's passes apart; view and epoch only name it when the run has several
    label = av.arm.name if len(runner.experiment.views) == 1 and av.epoch is None else av.name

    def store(index: int, batch: list[InstanceResult]) -> None:
        k, _, misses = units[index]
        for result in batch:
            results[k][result.instance_id] = result
            if result.outcome != Outcome.infrastructure_failure and runner.experiment.cache:
                write_atomic(cache / f"{misses[result.instance_id]}.json", result.model_dump_json())
            runner.progress.count_pass(label, result.outcome == Outcome.passed)
            runner.progress.advance()

    executor.map(run_evaluation, [u[1] for u in units], on_result=store)
    return results
