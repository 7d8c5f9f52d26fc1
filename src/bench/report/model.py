"""The report as data: one pydantic model per view, computed by ``statistics`` and only formatted
by ``markdown`` / ``html`` (so a report can also be written as JSON)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bench.model import Outcome

INFRA = Outcome.infrastructure_failure.value
STAGES = [o.value for o in Outcome]  # the ladder in order, infrastructure last


class Estimate(BaseModel):
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class ProjectMetrics(BaseModel):
    project: str
    n: int
    n_exec: int
    pass_at_1: float | None
    kill_complete_at_1: float | None
    api_f1: float | None
    coverage_jaccard: float | None
    mutant_recall: float | None


class Efficiency(BaseModel):
    generations: int
    cost_known: int = Field(description="generations whose metadata carries cost_usd")
    source: str = Field(description="where the metadata came from: predictions, results, mixed or none")
    wall_seconds: float | None = Field(description="mean generation wall time")
    llm_calls: float | None
    input_tokens: float | None
    output_tokens: float | None
    cost_per_generation: float | None
    cost_total: float | None
    cost_per_pass: float | None
    cost_per_kill_complete: float | None


class ConfigSummary(BaseModel):
    name: str
    run: str
    arm: str
    base: str
    view: str | None
    role: str
    selector: str | None
    candidates: int
    agent: str | None
    model: str | None
    paragraphs: list[str]
    submission_refusals: list[str]
    n: int
    n_exec: int
    passes: int
    kill_complete_passes: int
    pass_at_1: Estimate
    kc_part_of_pass: float | None = Field(description="kill-complete passes / N_exec, project-averaged")
    kill_complete_at_1: Estimate
    api_f1: float | None
    coverage_jaccard: float | None
    mutant_recall: float | None
    outcomes: dict[str, int]
    projects: list[ProjectMetrics]
    efficiency: Efficiency


class BestOfRow(BaseModel):
    name: str
    kind: str = Field(description="single, or the selector that picked among the n candidates")
    candidates: int
    pass_at_1: float | None
    kill_complete_at_1: float | None
    kc_delta_vs_single: float | None
    pass_delta_vs_single: float | None
    cost_per_generation: float | None


class BestOfGroup(BaseModel):
    base: str
    rows: list[BestOfRow]


class PairedRow(BaseModel):
    """One paired comparison: an arm against its view's baseline arm, or a pick among several candidates
    against its arm's first candidate (single)."""

    a: str
    b: str
    n_paired: int
    pass_difference: Estimate = Field(description="Pass@1 of B - A, 95% cluster-bootstrap CI")
    kc_difference: Estimate
    pass_b_over_a: int
    pass_a_over_b: int
    pass_p: float = Field(description="exact one-sided McNemar, H1: B passes more often")
    kc_b_over_a: int
    kc_a_over_b: int
    kc_p: float
    recall_difference: float | None
    recall_p: float | None = Field(description="paired sign-flip, H1: B's mutant recall is higher")


class EpochRow(BaseModel):
    """One configuration over an experiment's epochs: each replicate's rate, their mean and spread."""

    name: str = Field(description="the configuration without its #eK")
    epochs: int
    pass_at_1: list[float | None]
    kill_complete_at_1: list[float | None]
    pass_mean: float | None
    pass_sd: float | None
    kc_mean: float | None
    kc_sd: float | None


class InstanceRow(BaseModel):
    """One instance across the configurations: its outcome in each (``pass·KC`` when kill-complete)."""

    instance_id: str
    cells: dict[str, str] = Field(default_factory=dict, description="config name → outcome")


class LanguageRow(BaseModel):
    """One configuration on one dataset of a requirement corpus, on the requirements every dataset has."""

    label: str = Field(description="what the tables call it: the language, with the dataset where two share one")
    language: str = Field(description="of the dataset's tests, from its framework (Python, TypeScript, Go, Java)")
    framework: str = Field(description="the card's runner, e.g. godog 0.14.1")
    dataset: str = Field(description="the dataset card's name")
    config: str = Field(description="the configuration as the report names it")
    results: int = Field(description="instances the configuration scored on this dataset")
    n: int = Field(description="shared requirements (the table's rows)")
    n_exec: int
    passes: int
    kill_complete_passes: int
    pass_at_1: Estimate
    kill_complete_at_1: Estimate


class LanguagePair(BaseModel):
    """Two languages paired requirement by requirement (B against A)."""

    a: str
    b: str
    n_paired: int
    pass_difference: Estimate = Field(description="Pass@1 of B - A, 95% cluster-bootstrap CI")
    pass_b_over_a: int
    pass_a_over_b: int
    pass_p: float = Field(description="exact McNemar, two-sided (twice the smaller one-sided p, at most 1)")
    kc_difference: Estimate
    kc_b_over_a: int
    kc_a_over_b: int
    kc_p: float


class LanguageGroup(BaseModel):
    """One configuration (matched by name) scored on several datasets of one requirement corpus,
    restricted to the requirement families (bench.families) every one of them scored."""

    config: str = Field(description="the configuration's name in each run")
    shared: int = Field(description="requirement families every dataset of the group scored")
    rows: list[LanguageRow]
    pairs: list[LanguagePair]


class Report(BaseModel):
    title: str
    runs: list[str]
    configs: list[ConfigSummary]
    frontier: list[str] = Field(description="configs on the cost vs KC@1 Pareto frontier, by cost")
    unknown_cost: list[str] = Field(description="configs left off the frontier: no cost recorded")
    best_of_n: list[BestOfGroup]
    paired: list[PairedRow] = Field(default_factory=list, description="B against A on the instances both scored")
    baselines: list[str] = Field(default_factory=list, description="each group's baseline arm and why it is that "
                                 "one, e.g. 'baseline: plain@th — the experiment's first arm'")
    instances: list[InstanceRow] = Field(default_factory=list)
    epochs: list[EpochRow] = Field(default_factory=list)
    languages: list[LanguageGroup] = Field(default_factory=list, description="the same configuration on several "
                                           "datasets, per language, on the requirements they share")
    bootstrap: dict[str, Any]
    notes: list[str]

