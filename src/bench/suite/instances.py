"""Suite instances (TestSuiteBench): one per feature file of a built dataset.

A suite instance asks for the step definitions of *every* scenario of a feature at once, in
the all-hidden view. Everything it needs is already in the dataset: the feature's scenarios
are instances (their ids, in file order), the reference suite is the union of their
ground-truth step definitions, and the requirement-targeted mutants come from the kill
matrix of the whole project (``targets.select_targets``), so a feature's targets are chosen
knowing what the other features' scenarios kill.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from bench.dataset import Dataset
from bench.model import Frozen, StepDefRef
from bench.suite.metrics import word_count
from bench.suite.targets import TargetPair, select_targets


class SuiteInstance(Frozen):
    id: str = Field(description="PROJECT/FEATURE_PATH")
    project: str
    feature_file: str
    scenarios: list[str] = Field(description="the feature's scenario instances, in file order")
    specification_words: int = Field(description="words of the feature file: the specification's length")
    reference_step_definitions: list[StepDefRef] = Field(description="the union of the scenarios' ground truth")
    targets: list[TargetPair] = Field(description="requirement-targeted mutants: the mutation score's denominator")
    candidates: int
    dropped: int


def suite_instances(dataset: Dataset, *, max_unrelated_share: float = 0.2,
                    max_targets_per_feature: int = 6) -> list[SuiteInstance]:
    """Every feature file of every project with at least one scenario instance."""
    gold = dataset.load_gold()
    suites: list[SuiteInstance] = []
    for project in dataset.card.projects:
        instances = [i for i in dataset.instances if i.project == project.name]
        selection = select_targets({i.id: i.requirement.feature_file for i in instances},
                                   {i.id: gold[i.id].kills for i in instances if i.id in gold},
                                   max_unrelated_share=max_unrelated_share,
                                   max_targets_per_feature=max_targets_per_feature)
        by_feature = {f.feature_file: f for f in selection.features}
        snapshot = Path(dataset.root) / project.snapshot
        for feature_file, chosen in sorted(by_feature.items()):
            members = sorted((i for i in instances if i.requirement.feature_file == feature_file),
                             key=lambda i: i.requirement.scenario_line)
            definitions = {(d.file, d.line): d for i in members if i.id in gold for d in gold[i.id].step_definitions}
            path = snapshot / feature_file
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            suites.append(SuiteInstance(
                id=f"{project.name}/{feature_file}", project=project.name, feature_file=feature_file,
                scenarios=[i.id for i in members], specification_words=word_count(text),
                reference_step_definitions=[definitions[k] for k in sorted(definitions)],
                targets=chosen.targets, candidates=chosen.candidates, dropped=chosen.dropped))
    return suites
