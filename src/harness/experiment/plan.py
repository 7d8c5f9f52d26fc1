"""What a run is made of before anything runs: the resolved experiment and the keys of its units.

Owns turning an experiment file into its ``ExperimentPlan`` (``prepare``: every mistake one located line), the
arm × view × epoch a unit belongs to (``ArmView``), the order an arm that decomposes generates instances in
(``prerequisite_closure``, ``topological_levels``), the options an arm's units run with (``arm_options``) and the
content-addressed cache keys of its generations and evaluations (``CacheKeys``).

Nothing here writes a file, starts a provider or runs a unit: what is computed here depends only on the
experiment, the dataset and the code, never on the run directory or the executor, which is what lets the
caches be shared between run directories and a rerun find its own units again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

import harness
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.model import Prediction
from harness.experiment.concurrency import Concurrency
from harness.experiment.config import (
    Arm,
    Experiment,
    ExperimentError,
    content_hash,
    load_experiment,
    locate,
    select_instances,
)
from harness.experiment.prompt_files import own_files_sha256, prompt_key, prompt_texts, resolve_prompts
from harness.experiment.providers import model_config
from harness.generate import GenerateOptions
from harness.llm import Limits
from harness.prompts import PromptFile, prompt_dir


class ArmView(BaseModel):
    arm: Arm
    view: Literal["th", "ah"]
    epoch: int | None = Field(None, description="0-based replicate of the arm when the experiment has epochs > 1")

    @property
    def name(self) -> str:
        return f"{self.arm.name}@{self.view}" + (f"#e{self.epoch + 1}" if self.epoch is not None else "")

    def key_parts(self) -> dict[str, Any]:
        """What tells this replicate's generations apart in the cache (nothing for a single epoch)."""
        return {"epoch": self.epoch} if self.epoch is not None else {}


class ExperimentPlan(BaseModel):
    """The resolved experiment; a run directory holds exactly one."""

    name: str
    file: str
    experiment: dict[str, Any]
    dataset_dir: str
    dataset_card_sha256: str
    instances: list[str]
    provider_script_sha256: str | None = None
    prompt_files: list[PromptFile] = Field(default_factory=list, description="every paragraph and template the "
                                           "arms use: the file read and the sha256 of its text")
    prompt_files_sha256: str | None = Field(None, description="over the arms' own prompt files (None: shipped "
                                            "ones only), so a rerun in the run directory notices an edited one")
    # what bench (which cannot import harness) reads to pair the arms in the report: bench.runlog.arm_order
    arms: list[str] = Field(default_factory=list, description="the arms in the experiment's order")
    baseline: str | None = Field(None, description="the arm the report compares the others against: the "
                                 "experiment's baseline, else its first arm")
    concurrency: Concurrency | None = Field(None, description="what ran side by side and what set it (the file, "
                                            "--executor or --workers); set by the runner, never compared on a rerun")

    @model_validator(mode="after")
    def _arm_order(self) -> ExperimentPlan:
        # derived from the experiment wherever a plan is built, so plan.json always records them
        if not self.arms:
            self.arms = [str(arm["name"]) for arm in self.experiment.get("arms", [])]
        if self.baseline is None and self.arms:
            self.baseline = self.experiment.get("baseline") or self.arms[0]
        return self


def prepare(path: Path) -> tuple[Experiment, ExperimentPlan, Dataset]:
    """Validate the file and everything it names; every mistake is one located line of the error."""
    experiment, text = load_experiment(path)
    base = path.parent
    errors: list[str] = []
    dataset_dir = (base / experiment.dataset).resolve()
    dataset: Dataset | None = None
    instances: list[str] = []
    card_file = dataset_dir / "dataset.json"
    if experiment.mode == "takeover":
        from bench.history.takeover import TakeoverError, TakeoverSet

        try:
            takeover = TakeoverSet(dataset_dir)
            card_file = dataset_dir / "takeover.json"
            instances = select_instances(experiment.instances, [t.id for t in takeover.targets],
                                         {t.id: t.project for t in takeover.targets}, base)
            if not instances:
                errors.append(f"{locate(path, text, ('instances',))}: selects no target")
            else:  # the runner's dataset: the first target's (a real one; takeover arms read the set)
                dataset = load_dataset(takeover.dataset_dir(takeover.target(instances[0])))
        except (TakeoverError, DatasetError) as exc:
            errors.append(f"{locate(path, text, ('dataset',))}: {exc}")
        except ValueError as exc:
            errors.append(f"{locate(path, text, ('instances',))}: {exc}")
    else:
        try:
            dataset = load_dataset(dataset_dir)
        except DatasetError as exc:
            errors.append(f"{locate(path, text, ('dataset',))}: {exc}")
    if dataset is not None and experiment.mode != "takeover":
        try:
            if experiment.mode != "scenario":
                from bench.suite.instances import suite_instances

                suites = suite_instances(dataset)
                instances = select_instances(experiment.instances, [u.id for u in suites],
                                             {u.id: u.project for u in suites}, base)
            else:
                instances = select_instances(experiment.instances, [i.id for i in dataset.instances],
                                             {i.id: i.project for i in dataset.instances}, base)
        except ValueError as exc:
            errors.append(f"{locate(path, text, ('instances',))}: {exc}")
        if not instances and not errors:
            errors.append(f"{locate(path, text, ('instances',))}: selects no instance")
    written = experiment  # plan.json keeps the file's entries (./my.md), as it keeps dataset: beside dataset_dir
    experiment, prompt_files, prompt_errors = resolve_prompts(experiment, path, text)
    errors += prompt_errors
    from harness.sandbox.policy import load_policy

    for where, name in [(("sandbox",), experiment.sandbox)] + [
            (("arms", i, "sandbox"), arm.sandbox) for i, arm in enumerate(experiment.arms) if arm.sandbox]:
        try:
            load_policy(name)
        except Exception as exc:  # noqa: BLE001 - any policy problem is the user's line to fix
            errors.append(f"{locate(path, text, where)}: {exc}")
    script_sha = None
    if experiment.provider is not None:
        from harness.provider.script import ScriptLoadError, load_script

        script_path = base / experiment.provider.script
        try:
            load_script(script_path)
            script_sha = hashlib.sha256(script_path.read_bytes()).hexdigest()
        except ScriptLoadError as exc:
            errors.append(f"{locate(path, text, ('provider', 'script'))}: {exc}")
    from harness.experiment import executors  # the kinds are what its registry resolves, a third party's too

    kind = experiment.executor.strip().partition(":")[0]
    if kind not in executors.REGISTRY:
        errors.append(f"{locate(path, text, ('executor',))}: executor {experiment.executor!r}: no executor named "
                      f"{kind!r}; available: {', '.join(executors.REGISTRY.available())}; {executors.SPEC_HELP}")
    if errors:
        raise ExperimentError("\n".join(errors))
    assert dataset is not None
    plan = ExperimentPlan(name=experiment.name, file=str(path.resolve()),
                          experiment=_dump(written), dataset_dir=str(dataset_dir),
                          dataset_card_sha256=hashlib.sha256(card_file.read_bytes()).hexdigest(),
                          instances=instances, provider_script_sha256=script_sha,
                          prompt_files=prompt_files, prompt_files_sha256=own_files_sha256(prompt_files))
    return experiment, plan, dataset


def _dump(experiment: Experiment) -> dict[str, Any]:
    dumped = experiment.model_dump(mode="json")
    for arm in dumped["arms"]:
        if arm.get("template") is None:  # as runs before templates existed wrote it: they still resume
            arm.pop("template", None)
    return dumped


def topological_levels(ids: list[str], depends_on: dict[str, list[str]]) -> list[list[str]]:
    """Instances in levels: every prerequisite in an earlier level than what depends on it."""
    level: dict[str, int] = {}

    def depth(node: str, path: tuple[str, ...]) -> int:
        if node in level:
            return level[node]
        if node in path:
            raise ExperimentError(f"depends_on has a cycle through {node}")
        value = 1 + max((depth(p, (*path, node)) for p in depends_on.get(node, [])), default=-1)
        level[node] = value
        return value

    for node in ids:
        depth(node, ())
    levels: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for node in ids:
        levels[level[node]].append(node)
    return [lv for lv in levels if lv]


def prerequisite_closure(targets: list[str], depends_on: dict[str, list[str]]) -> list[str]:
    seen: list[str] = []
    stack = list(targets)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.append(node)
        stack.extend(depends_on.get(node, []))
    return seen


def tree_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for root in paths:
        for file in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if file.is_file() and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(root.parent)).encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()


def arm_options(experiment: Experiment, arm: Arm, view: str, api_base: str | None) -> GenerateOptions:
    """What every unit of ``arm`` in ``view`` runs with; ``api_base``: the run's own provider, if any."""
    model = model_config(arm, api_base)
    limits = experiment.limits
    return GenerateOptions(agent=arm.agent, model=model, view=view,  # type: ignore[arg-type]
                           sandbox=arm.sandbox or experiment.sandbox,
                           limits=Limits(max_calls=limits.max_calls, max_seconds=limits.max_seconds,
                                         max_cost_usd=limits.max_cost),
                           paragraphs=list(arm.paragraphs), template=arm.template, prompt_texts=prompt_texts(arm),
                           black_box_oracle=arm.black_box_oracle)


class CacheKeys:
    """The content hashes generations and evaluations are cached and journaled under.

    A key covers everything that can change a unit's result (dataset card, agent, model without its address
    or key, view, sandbox, limits, paragraphs, the prompts' and the evaluator's code, the provider script;
    a paragraph or template file of the user's by the digest of its text)
    and nothing that cannot (run directory, executor)."""

    def __init__(self, experiment: Experiment, plan: ExperimentPlan) -> None:
        self.experiment = experiment
        self.plan = plan
        self.prompt_hash = tree_hash([prompt_dir()])
        self.bench_hash = tree_hash([Path(__file__).resolve().parents[2] / "bench"])

    def generation(self, kind: str, options: GenerateOptions, **parts: Any) -> str:
        model = options.model.model_dump(exclude={"api_key", "api_base"}) if options.model else None
        return content_hash({"kind": kind, "dataset": self.plan.dataset_card_sha256, "agent": options.agent,
                             "model": model, "view": options.view, "sandbox": options.sandbox,
                             "limits": options.limits.model_dump(),
                             **prompt_key(options.paragraphs, options.template, options.prompt_texts),
                             "prompts": self.prompt_hash, "script": self.plan.provider_script_sha256,
                             "replicate": self.experiment.replicate, "version": harness.__version__,
                             # only when on: every other arm keeps the keys its cache was written under
                             **({"black_box_oracle": True} if options.black_box_oracle else {}), **parts})

    def evaluation(self, instance_id: str, prediction: Prediction | None) -> str:
        evaluation = self.experiment.evaluation
        return content_hash({"dataset": self.plan.dataset_card_sha256, "instance": instance_id,
                             "files": prediction.files if prediction else None, "mutants": evaluation.mutants,
                             "timeout": evaluation.timeout, "bench": self.bench_hash})

    def suite_evaluation(self, suite_id: str, prediction: Prediction | None, documented: bool) -> str:
        evaluation = self.experiment.evaluation
        return content_hash({"dataset": self.plan.dataset_card_sha256, "suite": suite_id,
                             "files": prediction.files if prediction else None, "mutants": evaluation.mutants,
                             "timeout": evaluation.timeout, "bench": self.bench_hash,
                             **({"kind": "authored"} if documented else {})})
