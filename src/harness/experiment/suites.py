"""One arm in one view of a ``mode: suite`` or ``mode: reverse`` run (and the documentation ablation).

Owns the whole arm in these modes: one generation per feature file (a suite task: the feature's scenarios,
or its documentation page, or in reverse the developers' steps to implement production against), journaled
like scenario candidates; their evaluation by ``bench.suite`` behind a content-addressed cache
(``plan.CacheKeys.suite_evaluation``); the configuration under ``suites/<name>/`` (``run_suite_arm``,
``write_suite_config``) and the run's suite report (``suite_report``).

Its own module because nothing of it is shared with scenario mode beyond the journals, keys and costs:
one candidate per suite, no selection, other result and summary types. ``bench.suite`` is imported only
when a suite-mode run uses it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from bench.model import Outcome, Prediction
from bench.runs import config_dir_name
from harness.experiment.config import content_hash
from harness.experiment.configs import reads_ground_truth
from harness.experiment.journal import candidate_journal, reopen_candidate_journal
from harness.experiment.plan import ArmView
from harness.experiment.units import GenerationUnit, cache_root, run_generation, write_atomic
from harness.generate import GenerateOptions, append_prediction

if TYPE_CHECKING:
    from harness.experiment.executors import Executor
    from harness.experiment.runner import ExperimentRunner


def run_suite_arm(runner: ExperimentRunner, av: ArmView, executor: Executor) -> dict[str, Any]:
    """One generation per feature file, scored by bench.suite.evaluate; the arm's summary."""
    from bench.suite.authored import authored_dir, suite_documentation
    from bench.suite.calibration import reference_suite_files
    from bench.suite.instances import suite_instances
    from harness.agents.base import SuiteScenario, SuiteTask
    from harness.experiment.units import SuiteEvaluationUnit, run_suite_evaluation

    reverse = runner.experiment.mode == "reverse"
    documented = av.arm.specification == "documentation"
    gold = runner.dataset.load_gold() if reverse else {}
    suites = {u.id: u for u in suite_instances(runner.dataset)}
    by_id = {i.id: i for i in runner.dataset.instances}
    options = runner.options(av.arm, av.view)
    gen_dir = runner.run_dir / "generations" / av.name / "c1"
    path = gen_dir / "predictions.jsonl"
    reopen_candidate_journal(path)
    done = candidate_journal(path)
    ids = runner.plan.instances
    runner.progress.stage(f"generate {av.name}", len(ids))
    units = []
    for suite_id in ids:
        if suite_id in done:
            runner.costs.count_done(done[suite_id])
            continue
        suite = suites[suite_id]
        snapshot = runner.dataset.root / runner.dataset.project(suite.project).snapshot
        given = reference_suite_files(runner.dataset, suite, gold) if reverse else {}
        if documented:  # the ablation: the documentation page instead of the feature, no scenario named
            features_dir = runner.dataset.project(suite.project).features_dir
            task = SuiteTask(suite_id=suite_id, feature_file=suite.feature_file, gherkin="", scenarios=[],
                             specification="documentation",
                             documentation=suite_documentation(runner.dataset, suite).text,
                             authored_dir=authored_dir(features_dir), view_instance=suite.scenarios[0])
        else:
            task = SuiteTask(suite_id=suite_id, feature_file=suite.feature_file,
                             kind="implementation" if reverse else "tests", given_tests=sorted(given),
                             gherkin=(snapshot / suite.feature_file).read_text(encoding="utf-8"),
                             scenarios=[SuiteScenario(instance_id=s, name=by_id[s].requirement.scenario_name,
                                                      line=by_id[s].requirement.scenario_line)
                                        for s in suite.scenarios])
        key = runner.keys.generation(f"{runner.experiment.mode}-generation", options, arm=av.arm.name,
                                     suite=suite_id, **({"specification": "documentation"} if documented else {}),
                                     **av.key_parts())
        units.append(GenerationUnit(dataset_dir=runner.plan.dataset_dir, out_dir=str(gen_dir), instance_id=suite_id,
                                    candidate=1, options=options, key=key, use_cache=runner.experiment.cache,
                                    suite=task, given_tests=given))
    batch = max(1, getattr(executor, "workers", 4)) if runner.experiment.limits.max_run_cost else len(units)
    for start in range(0, len(units), max(1, batch)):
        runner.costs.check_budget()

        def journal(index: int, prediction: Prediction) -> None:
            append_prediction(path, prediction)
            runner.costs.count_done(prediction, fresh=True)

        executor.map(run_generation, units[start:start + batch], on_result=journal)
    predictions = candidate_journal(path)
    # evaluation: content-addressed per suite, like single-scenario evaluations
    cache = cache_root() / f"{runner.experiment.mode}-evaluations"
    from bench.suite.evaluate import SuiteResult
    from bench.suite.reverse import ReverseResult

    model = ReverseResult if reverse else SuiteResult
    evaluation = runner.experiment.evaluation
    results: dict[str, Any] = {}
    misses: dict[str, str] = {}
    for suite_id in ids:
        key = runner.keys.suite_evaluation(suite_id, predictions.get(suite_id), documented)
        hit = cache / f"{key}.json"
        if runner.experiment.cache and hit.is_file():
            results[suite_id] = model.model_validate_json(hit.read_text(encoding="utf-8"))
        else:
            misses[suite_id] = key
    if misses:
        digest = content_hash(sorted(misses.values()))[:16]
        unit = SuiteEvaluationUnit(dataset_dir=runner.plan.dataset_dir,
                                   kind="reverse" if reverse else "authored" if documented else "suite",
                                   predictions=[predictions[s] for s in misses if s in predictions],
                                   suite_ids=list(misses), workers=evaluation.workers,
                                   work_dir=str(runner.run_dir / "evaluations" / av.name / f"suites-{digest}"),
                                   mutants=evaluation.mutants, timeout=evaluation.timeout)
        runner.progress.stage(f"evaluate {av.name}", len(misses))

        def store(index: int, batch: list) -> None:
            for result in batch:
                results[result.suite_id] = result
                broken = any(v.outcome == Outcome.infrastructure_failure for v in result.scenarios)
                if runner.experiment.cache and not broken:
                    write_atomic(cache / f"{misses[result.suite_id]}.json", result.model_dump_json())
                runner.progress.advance()

        executor.map(run_suite_evaluation, [unit], on_result=store)
    # a cached evaluation may be another arm's of the same files: the row carries this arm's costs
    rows = [results[s].model_copy(update={"metadata": predictions[s].metadata if s in predictions else None})
            for s in ids]
    return write_suite_config(runner, av, options, predictions, rows)


def write_suite_config(runner: ExperimentRunner, av: ArmView, options: GenerateOptions,
                       predictions: dict[str, Prediction], rows: list) -> dict[str, Any]:
    from bench.suite.authored import summarize_authored
    from bench.suite.evaluate import summarize_suites
    from bench.suite.reverse import summarize_reverse

    reverse = runner.experiment.mode == "reverse"
    out = runner.run_dir / "suites" / config_dir_name(av.name)
    out.mkdir(parents=True, exist_ok=True)
    arm = av.arm
    reads_truth = reads_ground_truth(runner.dataset, arm)
    record = {"name": av.name, "mode": runner.experiment.mode, "arm": arm.name, "view": av.view, "agent": arm.agent,
              "model": arm.model, "paragraphs": arm.paragraphs, "sandbox": options.sandbox,
              "epoch": None if av.epoch is None else av.epoch + 1, "reads_ground_truth": reads_truth,
              "black_box_oracle": arm.black_box_oracle, "specification": arm.specification}
    lines = "".join(predictions[r.suite_id].model_dump_json() + "\n" for r in rows if r.suite_id in predictions)
    write_atomic(out / "config.json", json.dumps(record, indent=2) + "\n")
    write_atomic(out / "predictions.jsonl", lines)
    prefix = "reverse" if reverse else "suite"
    write_atomic(out / f"{prefix}_results.jsonl", "".join(r.model_dump_json() + "\n" for r in rows))
    summarize = summarize_reverse if reverse else summarize_authored if arm.specification == "documentation" \
        else summarize_suites
    summary = summarize(rows, runner.dataset.card.name, hashlib.sha256(lines.encode()).hexdigest())
    summary["config"] = av.name
    write_atomic(out / f"{prefix}_summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def suite_report(runner: ExperimentRunner) -> list[str]:
    from bench.suite.report import render_suite_report

    text = render_suite_report(runner.run_dir / "suites",
                               title=f"req2test run: {runner.plan.name} ({runner.experiment.mode} mode)")
    path = runner.run_dir / "report.md"
    path.write_text(text, encoding="utf-8")
    return [str(path)]
