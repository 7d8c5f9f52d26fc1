"""The experiment file: what ``req2test run EXPERIMENT.yaml`` reads, validated with every mistake located.

An experiment names a dataset, the instances, the views and the arms; an arm is an agent + model + reasoning
setting + prompt paragraphs + strategies + n candidates. Validation reports *every* mistake, one line each,
as ``FILE:LINE: arms[1].n: must be at least 1`` so a user fixes the file in one pass.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from bench.errors import UserError
from bench.registry import Registry

ARM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ExperimentError(UserError):
    """An experiment file or run directory a user must fix; every line is one mistake."""


# Agents and selectors are whatever their registries resolve (built in, registered in code or installed
# through an entry point); imported when an arm is validated, not with this module.
def _agents() -> tuple[Registry[Any], list[str]]:
    from harness.agents.registry import BUILTIN, REGISTRY

    return REGISTRY, _listed(BUILTIN, REGISTRY)


def _model_agents() -> tuple[str, ...]:
    from harness.agents.registry import MODEL_AGENTS

    return MODEL_AGENTS


def _selectors() -> tuple[Registry[Any], list[str]]:
    from harness.strategies.selectors import REGISTRY, SELECTORS

    return REGISTRY, _listed(SELECTORS, REGISTRY)


def _listed(builtin: Iterable[str], registry: Registry[Any]) -> list[str]:
    """The built-ins in the order messages have always listed them, then any other name, sorted."""
    names = list(builtin)
    return names + [name for name in registry.available() if name not in names]


class _Strict(BaseModel):
    # a typo ("paragraph:" for "paragraphs:") must be an error, not a silently ignored key
    model_config = ConfigDict(extra="forbid")


class InstanceSelection(_Strict):
    """Which instances: all of them, one project's, a seeded sample, or an explicit list (inline or a file)."""

    project: str | None = None
    sample: int | None = Field(None, ge=1)
    seed: int = 0
    ids: list[str] | None = None
    file: str | None = Field(None, description="a text file of instance ids, one per line (relative to the "
                                                 "experiment file)")

    @model_validator(mode="after")
    def _one_kind(self) -> InstanceSelection:
        if self.ids is not None and self.file is not None:
            raise ValueError("give either ids or file, not both")
        return self


class Limits(_Strict):
    max_calls: int = Field(200, ge=1, description="model calls per generation")
    max_seconds: float = Field(3600.0, gt=0, description="wall clock per generation")
    max_cost: float | None = Field(None, gt=0, description="USD per generation")
    max_run_cost: float | None = Field(None, gt=0, description="USD for the whole run: no generation starts once "
                                       "it is spent (a rerun with a higher cap continues)")


class Evaluation(_Strict):
    workers: int = Field(0, ge=0, description="evaluator workers; 0 = one per core")
    mutants: bool = True
    timeout: float = Field(600.0, gt=0)


class ProviderScript(_Strict):
    """A scripted provider the run starts on loopback (offline demos and tests)."""

    script: str


class Arm(_Strict):
    name: str
    agent: str = "builtin"
    model: str | None = None
    api_base: str | None = None
    reasoning: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    seed: int | None = Field(None, description="the provider's sampling seed, where it honours one")
    max_tokens: int | None = Field(None, ge=1, description="output tokens per model call")
    paragraphs: list[str] = Field(default_factory=list, description="shipped paragraph names (grounding) or "
                                  "files of your own (./my.md: relative to the experiment file)")
    template: str | None = Field(None, description="a task prompt template of your own (a file, relative to the "
                                 "experiment file) in place of task.md.j2 (implement.md.j2 in reverse mode); "
                                 "start from `req2test prompts task`")
    enrich: bool = False
    decompose: Literal["off", "sandbox", "evaluator"] = "off"
    n: int = Field(1, ge=1, le=20)
    selectors: list[str] = Field(default_factory=list, description="the first one picks the arm's candidate")
    sandbox: str | None = None
    black_box_oracle: bool = Field(False, description="ablation: a tool that says whether the agent's steps for "
                                   "one scenario pass on the real code (only the verdict crosses back)")
    specification: Literal["feature", "documentation"] = Field(
        "feature", description="suite mode: the feature file (feature) or, the documentation ablation, the "
                               "docstrings of the feature's target interfaces instead; the agent then writes its own "
                               "scenarios under <features_dir>/authored/ (bench.suite.authored)")
    # takeover mode (ReqMemBench): the arm's condition
    history: Literal["full", "relevant"] = Field("full", description="takeover: every earlier commit (C1) or only "
                                                 "those concerning the request's requirements (C2)")
    oracle_state: Literal["none", "pre", "post"] = Field("none", description="takeover: give the gold requirement "
                                                         "state before (pre) or after (post) the request")
    two_phase: bool = Field(False, description="takeover: a requirement answer first (phase A, frozen and scored), "
                                               "then delivery with it")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not ARM_NAME.match(value):
            raise ValueError("use letters, digits, '.', '_' or '-' (it names a directory)")
        return value

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, value: str) -> str:
        agents, names = _agents()
        if value not in agents and ":" not in value:
            raise ValueError(f"unknown agent {value!r}: {', '.join(names)} or module:Class")
        return value

    @field_validator("selectors")
    @classmethod
    def _known_selectors(cls, value: list[str]) -> list[str]:
        selectors, names = _selectors()
        for name in value:
            if name not in selectors:
                raise ValueError(f"unknown selector {name!r}: {', '.join(names)}")
        if len(set(value)) != len(value):
            raise ValueError("a selector is listed twice")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> Arm:
        if self.n > 1 and not self.selectors:
            raise ValueError(f"n is {self.n}: list the selectors that pick among the candidates "
                             f"({', '.join(_selectors()[1])})")
        if self.n == 1 and self.selectors:
            raise ValueError("selectors need n > 1 candidates")
        if self.agent in _model_agents() and self.model is None:
            raise ValueError(f"the {self.agent} agent needs a model (e.g. openai/gpt-5-mini)")
        if self.enrich and self.model is None:
            raise ValueError("enrich needs a model to write the clarified requirement")
        if "judge" in self.selectors and self.model is None:
            raise ValueError("the judge selector needs a model")
        return self

    @property
    def uses_evaluator(self) -> bool:
        """Evaluator verdicts steer this arm's output: a research upper bound, never a submission."""
        return self.decompose == "evaluator" or (bool(self.selectors) and self.selectors[0] == "oracle") \
            or self.black_box_oracle


def _default_views() -> list[Literal["th", "ah"]]:
    return ["th"]


class Experiment(_Strict):
    name: str = "experiment"
    dataset: str
    mode: Literal["scenario", "suite", "reverse", "takeover"] = Field(
        "scenario", description="scenario: a test per scenario; suite: the step definitions of a whole feature "
                                "file per generation (TestSuiteBench); reverse: the feature's tests are given, the "
                                "agent implements the hidden production code. suite/reverse instances are suite ids "
                                "PROJECT/FEATURE_FILE; takeover: dataset is a takeover directory (req2test takeover "
                                "build), instances are target ids PROJECT@SHA")
    instances: Literal["all"] | InstanceSelection = "all"
    views: list[Literal["th", "ah"]] = Field(default_factory=_default_views, min_length=1)
    sandbox: str = "default"
    executor: str = "local"
    replicate: int = Field(0, ge=0, description="change it to draw fresh generations instead of cached ones")
    epochs: int = Field(1, ge=1, le=50, description="independent replicates of every arm (configs NAME#eK), "
                        "aggregated in the report")
    cache: bool = True
    limits: Limits = Field(default_factory=Limits)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    provider: ProviderScript | None = None
    arms: list[Arm] = Field(min_length=1)
    # after arms: its validator sees the validated arms
    baseline: str | None = Field(None, description="the arm the report compares every other arm against "
                                 "(default: the first arm)")

    @field_validator("baseline")
    @classmethod
    def _baseline_is_an_arm(cls, value: str | None, info: ValidationInfo) -> str | None:
        arms = info.data.get("arms")  # absent when the arms themselves are wrong: those errors say enough
        if value is not None and arms is not None and value not in [arm.name for arm in arms]:
            raise ValueError(f"no arm named {value!r} (arms: {', '.join(arm.name for arm in arms)})")
        return value

    @model_validator(mode="after")
    def _unique_arms(self) -> Experiment:
        names = [arm.name for arm in self.arms]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"arm names must be unique: {', '.join(duplicated)}")
        if len(set(self.views)) != len(self.views):
            raise ValueError("a view is listed twice")
        if self.mode != "suite":
            wrong = [arm.name for arm in self.arms if arm.specification != "feature"]
            if wrong:
                raise ValueError(f"arm {wrong[0]}: specification: documentation is a suite-mode ablation")
        if self.mode == "takeover":
            problems = []
            if self.views != ["th"]:
                problems.append("takeover mode has no views (the workspace is the parent commit's tree): leave "
                                "views out")
            for arm in self.arms:
                if arm.n > 1 or arm.enrich or arm.decompose != "off" or arm.black_box_oracle:
                    problems.append(f"arm {arm.name}: takeover mode has no strategies (n: 1, no enrich, "
                                    "decompose: off, no black_box_oracle)")
                if arm.agent in ("empty", "then-stripped"):
                    problems.append(f"arm {arm.name}: the takeover task's calibrations are oracle and none")
                if arm.template is not None:
                    problems.append(f"arm {arm.name}: takeover mode has its own prompts: leave template out")
            if problems:
                raise ValueError("; ".join(problems))
        elif self.mode != "scenario":
            problems = []
            if self.views != ["ah"]:
                problems.append(f"{self.mode} mode runs in the all-hidden view only: views: [ah]")
            for arm in self.arms:
                if arm.n > 1 or arm.enrich or arm.decompose != "off":
                    problems.append(f"arm {arm.name}: {self.mode} mode has no strategies yet (n: 1, no enrich, "
                                    "decompose: off)")
                if self.mode == "reverse" and arm.agent in ("empty", "then-stripped"):
                    problems.append(f"arm {arm.name}: the reverse task's calibrations are oracle and none")
                if arm.specification == "documentation" and arm.black_box_oracle:
                    problems.append(f"arm {arm.name}: the black-box oracle checks reference scenarios, which a "
                                    "documentation arm never sees: use one ablation at a time")
            if problems:
                raise ValueError("; ".join(problems))
        return self


# ----------------------------------------------------------------------------- loading with locations
def _line_index(node: yaml.Node, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], int]:
    """Every key path of the YAML document → its 1-based line, so errors can point at the file."""
    lines = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            lines.update(_line_index(value, child))
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.update(_line_index(item, (*path, index)))
    return lines


def _where(loc: tuple[Any, ...]) -> str:
    text = ""
    for item in loc:
        text += f"[{item}]" if isinstance(item, int) else (f".{item}" if text else str(item))
    return text


def _line_of(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return 1


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic puts union member names into locations ("InstanceSelection", "literal['all']"): not the user's keys
    return tuple(item for item in loc if not (isinstance(item, str) and (item[:1].isupper() or "[" in item)))


def load_experiment(path: Path) -> tuple[Experiment, str]:
    """The validated experiment and the file's text; ExperimentError lists every mistake with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExperimentError(f"{path}: no such experiment file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExperimentError(f"{path}: cannot read: {exc}") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ExperimentError(f"{path}{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict) or node is None:
        raise ExperimentError(f"{path}:1: expected a mapping with dataset and arms")
    lines = _line_index(node)
    try:
        experiment = Experiment.model_validate(data)
    except ValidationError as exc:
        messages = []
        seen = set()
        for err in exc.errors():
            loc = _clean_loc(tuple(err["loc"]))
            if err["type"] == "literal_error" and loc == ("instances",):
                continue  # the union's "all" branch: the mapping branch's own error says more
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown field"
            line = f"{path}:{_line_of(loc, lines)}: {_where(loc) or 'experiment'}: {message}"
            if line not in seen:
                seen.add(line)
                messages.append(line)
        raise ExperimentError("\n".join(messages)) from None
    return experiment, text


def locate(path: Path, text: str, loc: tuple[Any, ...]) -> str:
    """``FILE:LINE: where`` for a check made after validation (unknown instance, missing paragraph)."""
    try:
        lines = _line_index(yaml.compose(text))
    except yaml.YAMLError:
        lines = {}
    return f"{path}:{_line_of(loc, lines)}: {_where(loc)}"


# ----------------------------------------------------------------------------- resolution
def select_instances(selection: Literal["all"] | InstanceSelection, ids: list[str], projects: dict[str, str],
                     base: Path) -> list[str]:
    """Instance ids in dataset order; raises ValueError (one line) for names the dataset lacks."""
    if selection == "all":
        return list(ids)
    assert isinstance(selection, InstanceSelection)
    chosen = list(ids)
    if selection.project is not None:
        if selection.project not in set(projects.values()):
            raise ValueError(f"no project {selection.project!r} in the dataset "
                             f"(projects: {', '.join(sorted(set(projects.values())))})")
        chosen = [i for i in chosen if projects[i] == selection.project]
    listed: list[str] | None = selection.ids
    if selection.file is not None:
        file = (base / selection.file)
        if not file.is_file():
            raise ValueError(f"no such instance list file {file}")
        listed = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]
    if listed is not None:
        unknown = [i for i in listed if i not in set(ids)]
        if unknown:
            raise ValueError(f"{len(unknown)} id(s) not in the dataset, e.g. {unknown[0]!r}")
        wanted = set(listed)
        chosen = [i for i in chosen if i in wanted]
    if selection.sample is not None and selection.sample < len(chosen):
        picked = set(random.Random(selection.seed).sample(chosen, selection.sample))
        chosen = [i for i in chosen if i in picked]
    return chosen


def content_hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
