"""Dataset-card statistics in the shape of the paper's Table 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from bench.model import GoldTest, Instance, Mutant, SummaryStat
from bench.suite.metrics import word_count


def summary(values: Iterable[float]) -> SummaryStat:
    items = list(values)
    if not items:
        return SummaryStat(min=0, max=0, mean=0, total=0)
    return SummaryStat(min=min(items), max=max(items), mean=round(sum(items) / len(items), 2), total=sum(items))


def table2(instances: list[Instance], gold: dict[str, GoldTest]) -> dict[str, SummaryStat]:
    per_feature = Counter(i.requirement.feature_file for i in instances)
    feature_words: dict[str, int] = {}
    for inst in instances:
        req = inst.requirement
        feature_words[req.feature_file] = word_count(req.feature_name) + word_count(req.feature_description)

    def scenario_words(inst: Instance) -> int:
        req = inst.requirement
        count = word_count(req.scenario_name) + word_count(req.scenario_description)
        for step in req.effective_steps:
            count += word_count(step.text) + word_count(step.docstring or "")
            count += sum(word_count(cell) for row in (step.table or []) for cell in row)
        for table in req.examples:
            count += sum(word_count(cell) for row in [table.header, *table.rows] for cell in row)
        return count

    def code_files(inst: Instance) -> list:
        return [f for f in gold[inst.id].closure if f.role != "data"]

    return {
        "scenarios_per_feature": summary(per_feature.values()),
        "words_per_feature": summary(feature_words.values()),
        "steps_per_scenario": summary(len(i.requirement.effective_steps) for i in instances),
        "words_per_scenario": summary(scenario_words(i) for i in instances),
        "examples_rows_per_outline": summary(len(i.requirement.run_lines) for i in instances
                                             if i.requirement.is_outline),
        "files_per_test_impl": summary(len(code_files(i)) for i in instances),
        "data_files_per_test_impl": summary(len(gold[i.id].data_files) for i in instances),
        "step_defs_per_test_impl": summary(len(gold[i.id].step_definitions) for i in instances),
        "lines_per_test_impl": summary(sum(f.lines for f in code_files(i)) for i in instances),
        "target_interfaces_per_instance": summary(
            sum(len(g.declarations) for g in i.target_interfaces) for i in instances),
        "api_calls_per_instance": summary(len(gold[i.id].api_calls) for i in instances),
        "covered_lines_per_instance": summary(
            sum(len(v) for v in gold[i.id].covered_lines.values()) for i in instances),
        "hidden_bodies_per_instance": summary(len(i.view.target_hidden) for i in instances),
    }


def mutation_statistics(mutants: list[Mutant], instances: list[Instance], gold: dict[str, GoldTest]) -> dict[str, Any]:
    """The mutant stage's summary figures every framework's builder reports alike."""
    pool_sizes = [len(gold[i.id].pool) for i in instances]
    kill_counts = [len(gold[i.id].kills) for i in instances]
    return {
        "mutants": len(mutants),
        "mutants_per_operator": dict(sorted(Counter(m.operator for m in mutants).items())),
        "mean_pool_size": round(sum(pool_sizes) / max(1, len(pool_sizes)), 2),
        "mean_ground_truth_kills": round(sum(kill_counts) / max(1, len(kill_counts)), 2),
        "mean_assertion_dependent_kills": round(
            sum(len(gold[i.id].assertion_dependent) for i in instances) / max(1, len(instances)), 2),
        "scorable_instances": sum(1 for k in kill_counts if k),
    }
