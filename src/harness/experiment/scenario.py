"""One arm in one view of a ``mode: scenario`` run: its generations, level by level.

Owns the arm's generation stage: the instances it needs (its targets, and their prerequisites when it
decomposes), generated in dependency levels with each prerequisite's chosen test handed to what depends on
it, n candidates per instance, each journaled as it finishes (``run_scenario_arm``); and the clarified
requirements of an arm that enriches (``enrich``). Evaluating the candidates, picking among them and writing
the configurations are the stages it hands to ``evaluation``, ``selection`` and ``configs``.

The scenario-mode counterpart of ``suites`` and ``takeover``; ``runner`` only chooses which of the three
runs an arm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.journal import append_line
from bench.model import Outcome, Prediction
from bench.runs import ConfigRecord
from harness.experiment.configs import write_configs
from harness.experiment.evaluation import evaluate_candidates
from harness.experiment.journal import candidate_journal, enrichment_journal, reopen_candidate_journal
from harness.experiment.plan import ArmView, prerequisite_closure, topological_levels
from harness.experiment.selection import select_candidate
from harness.experiment.units import (
    EnrichmentOutcome,
    EnrichmentUnit,
    GenerationUnit,
    PrerequisiteTest,
    run_enrichment,
    run_generation,
)
from harness.generate import GenerateOptions, append_prediction

if TYPE_CHECKING:
    from harness.experiment.executors import Executor
    from harness.experiment.runner import ExperimentRunner


def run_scenario_arm(runner: ExperimentRunner, av: ArmView, executor: Executor) -> list[ConfigRecord]:
    arm = av.arm
    gen_dir = runner.run_dir / "generations" / av.name
    options = runner.options(arm, av.view)
    targets = runner.plan.instances
    needed = targets if arm.decompose == "off" else prerequisite_closure(targets, runner.depends_on)
    order = {i.id: n for n, i in enumerate(runner.dataset.instances)}
    needed = sorted(needed, key=order.__getitem__)
    levels = topological_levels(needed, runner.depends_on) if arm.decompose != "off" else [needed]
    enriched = enrich(runner, av, needed, options, executor) if arm.enrich else {}
    journals = {k: gen_dir / f"c{k}" / "predictions.jsonl" for k in range(1, arm.n + 1)}
    for path in journals.values():
        reopen_candidate_journal(path)  # a rerun generates the interrupted ones again
    chosen: dict[str, Prediction] = {}
    passed: dict[str, bool] = {}
    runner.progress.stage(f"generate {av.name}", len(needed) * arm.n)
    candidates: dict[str, dict[int, Prediction]] = {}
    for level in levels:
        units: list[GenerationUnit] = []
        done = {k: candidate_journal(path) for k, path in journals.items()}
        for instance_id in level:
            prereqs = [PrerequisiteTest(instance_id=p, files=chosen[p].files if p in chosen else {},
                                        evaluator_passed=passed.get(p) if arm.decompose == "evaluator" else None)
                       for p in _ordered(runner.depends_on.get(instance_id, []), order)] \
                if arm.decompose != "off" else []
            for k in range(1, arm.n + 1):
                if instance_id in done[k]:
                    runner.costs.count_done(done[k][instance_id])
                    continue
                key = runner.keys.generation("generation", options, arm=arm.name, instance=instance_id, candidate=k,
                                             **av.key_parts(),
                                             enriched=enriched.get(instance_id), decompose=arm.decompose,
                                             prerequisites=[p.model_dump() for p in prereqs])
                units.append(GenerationUnit(dataset_dir=runner.plan.dataset_dir, out_dir=str(gen_dir / f"c{k}"),
                                            instance_id=instance_id, candidate=k, options=options,
                                            enriched=enriched.get(instance_id), prerequisites=prereqs,
                                            decompose=arm.decompose, key=key, use_cache=runner.experiment.cache))

        # with a run budget, generations start in batches and none starts once it is spent
        batch = max(1, getattr(executor, "workers", 4)) if runner.experiment.limits.max_run_cost else len(units)
        for start in range(0, len(units), max(1, batch)):
            runner.costs.check_budget()
            chunk = units[start:start + batch]

            def journal(index: int, prediction: Prediction, chunk: list[GenerationUnit] = chunk) -> None:
                append_prediction(journals[chunk[index].candidate], prediction)
                runner.costs.count_done(prediction, fresh=True)

            executor.map(run_generation, chunk, on_result=journal)
        for k, path in journals.items():
            for instance_id, prediction in candidate_journal(path).items():
                candidates.setdefault(instance_id, {})[k] = prediction
        if arm.decompose != "off":
            level_results = evaluate_candidates(runner, av, level, candidates, executor) \
                if arm.decompose == "evaluator" or (arm.n > 1 and arm.selectors[0] == "oracle") else {}
            for instance_id in level:
                pick = select_candidate(runner, av, arm.selectors[0], instance_id, candidates.get(instance_id, {}),
                                        level_results) if arm.n > 1 else 1
                if pick in candidates.get(instance_id, {}):
                    chosen[instance_id] = candidates[instance_id][pick]
                if arm.decompose == "evaluator":
                    result = level_results.get(pick, {}).get(instance_id)
                    passed[instance_id] = result is not None and result.outcome == Outcome.passed
    results = evaluate_candidates(runner, av, targets, candidates, executor)
    return write_configs(runner, av, options, candidates, results)


def enrich(runner: ExperimentRunner, av: ArmView, ids: list[str], options: GenerateOptions,
           executor: Executor) -> dict[str, str]:
    """Each instance's clarified requirement (journaled in ``enrichment.jsonl``; its cost is charged to the
    arm's configurations through ``runner.costs.enrichment``)."""
    path = runner.run_dir / "generations" / av.name / "enrichment.jsonl"
    done = enrichment_journal(path)
    units = [EnrichmentUnit(dataset_dir=runner.plan.dataset_dir, instance_id=i, view=av.view, options=options,
                            ledger_path=str(path.with_name("enrichment-ledger.jsonl")),
                            key=runner.keys.generation("enrichment", options, arm=av.arm.name, instance=i,
                                                       **av.key_parts()),
                            use_cache=runner.experiment.cache)
             for i in ids if i not in done]
    runner.progress.stage(f"enrich {av.name}", len(ids))
    for _ in done:
        runner.progress.advance()

    def journal(index: int, outcome: EnrichmentOutcome) -> None:
        done[outcome.instance_id] = outcome
        append_line(path, outcome.model_dump_json())
        runner.progress.money += outcome.cost_usd or 0.0
        runner.progress.advance()

    path.parent.mkdir(parents=True, exist_ok=True)
    executor.map(run_enrichment, units, on_result=journal)
    for i, outcome in done.items():
        runner.costs.enrichment[(av.name, i)] = (outcome.cost_usd or 0.0, outcome.calls)
    return {i: done[i].text for i in ids if i in done and done[i].text.strip()}


def _ordered(ids: list[str], order: dict[str, int]) -> list[str]:
    return sorted(ids, key=lambda i: order.get(i, 0))
