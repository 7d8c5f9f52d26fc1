"""The benchmark's data model: every boundary of ``bench`` speaks these pydantic types.

Agent-visible records (``Instance`` and what it holds) are kept strictly apart from
evaluator-only records (``GoldTest``): a dataset writes them to different files and
``Instance`` never references gold content.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"

StepType = Literal["given", "when", "then"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- requirement
class Step(Frozen):
    """One effective step as written (keyword kept, type resolved for And/But)."""

    keyword: str
    type: StepType
    text: str
    line: int
    background: bool = False
    docstring: str | None = None
    table: list[list[str]] | None = None


class ExamplesTable(Frozen):
    name: str
    line: int
    tags: list[str] = Field(default_factory=list)
    header: list[str]
    rows: list[list[str]]
    row_lines: list[int]


class Requirement(Frozen):
    """Feature F + target Scenario S, exactly as the developers wrote them."""

    feature_file: str
    feature_name: str
    feature_description: str
    feature_tags: list[str] = Field(default_factory=list)
    background_steps: list[Step] = Field(default_factory=list)
    scenario_name: str
    scenario_keyword: str
    scenario_line: int
    scenario_tags: list[str] = Field(default_factory=list)
    scenario_description: str = ""
    steps: list[Step] = Field(description="the scenario's own steps (template steps for an outline)")
    examples: list[ExamplesTable] = Field(default_factory=list)
    gherkin: str = Field(description="feature header, background and the scenario, verbatim")

    @property
    def is_outline(self) -> bool:
        return bool(self.examples)

    @property
    def effective_steps(self) -> list[Step]:
        return [*self.background_steps, *self.steps]

    @property
    def run_lines(self) -> list[int]:
        """Lines that select this instance's runnable units (outline rows, or the scenario)."""
        if self.examples:
            return [line for table in self.examples for line in table.row_lines]
        return [self.scenario_line]


# --------------------------------------------------------------------------- code refs
class Declaration(Frozen):
    """A production function or method, as declared (never its body)."""

    file: str
    qualname: str
    line: int = Field(description="line of the def (first decorator excluded)")
    signature: str = Field(description="decorators + def line, as in the source")
    kind: Literal["function", "method", "property", "classmethod", "staticmethod", "constructor"]

    @property
    def key(self) -> str:
        return f"{self.file}:{self.qualname}"


class InterfaceGroup(Frozen):
    """Target interfaces grouped by declaring type (module for free functions)."""

    declaring_type: str
    file: str
    declarations: list[Declaration]


class BodySpan(Frozen):
    """A function body a view may replace: the statements after the signature."""

    file: str
    qualname: str
    def_line: int
    body_start: int
    body_end: int


class ViewSpec(Frozen):
    """What the harness needs to materialise the two views of one instance."""

    target_hidden: list[BodySpan]
    hidden_rule: str
    all_hidden_scope: list[str] = Field(
        description="production paths whose every body the all-hidden view replaces, except the "
        "project's import_time_bodies (kept so the package still imports)")


class StepDefRef(Frozen):
    file: str
    line: int
    qualname: str

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}:{self.qualname}"


class TestLevel(str, Enum):
    component = "component"
    integration = "integration"
    system = "system"


# --------------------------------------------------------------------------- instance
class Instance(Frozen):
    """Everything an agent may see about one requirement (plus labels and view spec)."""

    id: str = Field(description="PROJECT/FEATURE_PATH:LINE")
    project: str
    requirement: Requirement
    target_interfaces: list[InterfaceGroup]
    test_level: TestLevel
    depends_on: list[str] = Field(default_factory=list, description="ids of prerequisite instances")
    variant_of: list[str] = Field(default_factory=list)
    group: str = Field(description="id of the representative of its identical-step-definition group")
    view: ViewSpec


# --------------------------------------------------------------------------- gold
class ClosureFile(Frozen):
    path: str
    role: Literal["step_definitions", "helper", "data"]
    sha256: str
    lines: int


class StepBinding(Frozen):
    step_line: int
    step_text: str
    step_type: StepType
    role: StepType = Field(description="type of the effective step this one runs under")
    background: bool
    depth: int = Field(description="0 for effective steps, >0 for execute_steps() nesting")
    binding: StepDefRef
    scenario_line: int = Field(description="runnable unit (outline row line) the step ran in")


class ValidationRecord(Frozen):
    isolation_runs: list[bool]
    positive_runs: list[bool]
    negative_runs: list[bool]
    negative_initialized: bool


class GoldTest(Frozen):
    """Evaluator-only ground truth for one instance. Never shown to an agent."""

    instance_id: str
    closure: list[ClosureFile]
    step_definitions: list[StepDefRef]
    bindings: list[StepBinding]
    api_calls: list[str] = Field(description="declaration keys called directly, all steps")
    target_calls: list[str] = Field(description="declaration keys behind the target interfaces")
    executed_when_then: list[str]
    covered_lines: dict[str, list[int]]
    data_files: list[str]
    validation: ValidationRecord
    test_level_evidence: list[str]
    runtime_seconds: float
    pool: list[str] = Field(default_factory=list, description="U_i: mutant ids on lines the test covers")
    kills: list[str] = Field(default_factory=list, description="K_gt: valid ground-truth kills")
    excluded_mutants: dict[str, str] = Field(
        default_factory=dict, description="pool mutants whose pair is excluded (timeout, no step ran)")
    assertion_dependent: list[str] = Field(
        default_factory=list, description="kills the same test with its Then bodies emptied does not make")
    hidden_kills: list[str] = Field(
        default_factory=list, description="kills located inside the target-hidden bodies")
    then_stripped_targets: list[StepDefRef] = Field(
        default_factory=list, description="step definitions emptied for the assertion-dependent subset")
    infrastructure_kills: list[str] = Field(
        default_factory=list, description="mutants the shared infrastructure detects alone (the empty test: every "
                                          "step body emptied, the hooks kept); not in kills, in no recall")


# --------------------------------------------------------------------------- mutants
class Mutant(Frozen):
    """One source transformation in a production function body (manifest record)."""

    id: str = Field(description="sha256(path, span, operator, replacement)[:16]: stable across builds")
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    original: str
    replacement: str
    function: str = Field(description="qualname of the enclosing non-nested function")
    function_line: int = Field(description="co_firstlineno of that function (first decorator line)")
    lines: list[int] = Field(description="source lines the coverage mapping assigns to the mutant")
    scope: tuple[int, int] = Field(description="first/last line of the enclosing module-level statement; "
                                   "compiling just these lines rebuilds the mutated function")
    function_end: int = Field(0, description="last line of the enclosing non-nested function")


# --------------------------------------------------------------------------- dataset card
class Exclusion(Frozen):
    id: str
    reason: str
    detail: str = ""


class SummaryStat(Frozen):
    min: float
    max: float
    mean: float
    total: float


class ProjectRecord(Frozen):
    name: str
    version: str
    source: str = Field(description="what the user asked for: a path or NAME==VERSION")
    source_sha256: str = Field(description="sdist archive hash, or a content hash of the tree")
    snapshot: str = Field(description="path of the pinned source snapshot inside the dataset")
    features_dir: str
    python_path: list[str]
    production: list[str]
    runner: str
    instances: int
    features_total: int
    scenarios_total: int
    exclusions: dict[str, int]
    test_levels: dict[str, int]
    depends_on_pairs: int
    variant_of_pairs: int
    groups: int
    empty_interface_instances: int
    shadowed_step_matches: int = Field(
        description="effective steps that more than one step definition matches; behave binds "
        "the first registered one deterministically, so they are counted, not excluded")
    statistics: dict[str, SummaryStat]
    import_time_bodies: list[str] = Field(
        default_factory=list,
        description="declaration keys whose bodies run while the package imports; views must keep them")
    environment: list[str] = Field(
        default_factory=list,
        description="requirements installed into the project's own environment (build --install-deps); "
        "evaluation makes the same environment on first need")

    @property
    def framework(self) -> str:
        """The registry name of the project's framework (``runner`` is "<name> <version>"; a card
        from before frameworks had names says nothing: those were all behave's)."""
        return self.runner.split()[0] if self.runner.strip() else LEGACY_FRAMEWORK


LEGACY_FRAMEWORK = "behave"  # the framework of every card whose runner is empty


class DatasetCard(Frozen):
    name: str
    schema_version: str = SCHEMA_VERSION
    builder_version: str
    created: str
    projects: list[ProjectRecord]
    scored_instances: list[str] = Field(description="one representative per identical step-definition set")
    exclusions: list[Exclusion]
    hidden_rule: dict[str, float | str]
    mutation: dict[str, Any] = Field(default_factory=dict, description="generator version, counts, timings")
    isolation: str = Field("none", description="bwrap: scenarios ran without network, production read-only")
    stage_seconds: dict[str, float]
    files: dict[str, str] = Field(description="relative path -> sha256 of every dataset artifact")


# --------------------------------------------------------------------------- predictions
class GenerationMetadata(BaseModel):
    """What the generator reports about one generation (all optional)."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = None
    model: str | None = None
    reasoning: str | None = None
    view: Literal["th", "ah"] | None = None
    wall_seconds: float | None = None
    llm_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Prediction(BaseModel):
    """One generated test implementation: test-side files by path (relative to the project root)."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    files: dict[str, str] = Field(description="path -> content, e.g. features/steps/cart_steps.py")
    metadata: GenerationMetadata = Field(default_factory=GenerationMetadata)


# --------------------------------------------------------------------------- results
class Outcome(str, Enum):
    """The stage ladder of docs/evaluation.md#outcomes-the-first-failing-stage: success, or the first failing stage."""

    generation_failure = "generation_failure"
    build_failure = "build_failure"
    binding_failure = "binding_failure"
    execution_failure = "execution_failure"
    assertion_failure = "assertion_failure"
    passed = "pass"
    # The prediction interfered with its own evaluation (runner internals, introspection,
    # signals, writes outside the workspace): not passing, counted in N_exec.
    tampering = "tampering"
    # The prediction's claims disagree with each other (a clean run failed, a kill did not
    # reproduce, a fresh-process replay disagrees with the warm runs): not passing, in N_exec.
    unstable = "unstable"
    infrastructure_failure = "infrastructure_failure"  # recorded apart, excluded from N_exec


MAX_FAILURE_TEXT = 16 * 1024  # characters kept of a failure's traceback and of each captured stream


class FailingStep(BaseModel):
    """The step of the clean run that failed, as the feature file writes it."""

    model_config = ConfigDict(extra="forbid")

    keyword: str = Field(description="Given / When / Then / And / But, as written")
    text: str
    location: str = Field(description="feature file:line, relative to the project root")


class FailureDetail(BaseModel):
    """Why the prediction's clean run did not pass: the failing step, the error with its
    traceback and the output the run printed — of the clean run only (the prediction's own
    test on unchanged production), never of a mutant or equivalent-variant run, so it tells
    nothing about which mutants exist or what the ground truth kills. Paths are relative to
    the run's workspace; each text is cut to ``MAX_FAILURE_TEXT`` characters (``cut`` says
    how many were left out of which)."""

    model_config = ConfigDict(extra="forbid")

    step: FailingStep | None = None
    error: str = Field("", description="the exception's type and message (or the runner's words)")
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    output_note: str = Field("", description="how the streams were captured, e.g. stdout and stderr interleaved")
    cut: dict[str, int] = Field(default_factory=dict, description="field -> characters left out")


class InstanceResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance_id: str
    project: str
    feature_file: str
    outcome: Outcome
    detail: str = ""
    api_f1: float | None = Field(None, description="None where the ground truth calls no production method")
    coverage_jaccard: float | None = Field(None, description="None where the framework measures no coverage")
    mutant_recall: float | None = Field(None, description="None where the ground truth kills nothing")
    kill_complete: bool
    kill_complete_relaxed: bool
    assertion_dependent_recall: float | None = None
    hidden_recall: float | None = None
    ground_truth_kills: int
    generated_kills: int
    mutant_timeouts: int = 0
    fresh_fallbacks: int = 0
    generated_api_calls: list[str] = Field(default_factory=list)
    surviving_kills: list[str] = Field(default_factory=list,
                                       description="ground-truth kills this passing test missed (mutant ids)")
    rejected_paths: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list,
                                description="tamper findings or disagreeing claims behind tampering/unstable")
    confirmation: dict[str, Any] = Field(default_factory=dict,
                                         description="clean runs, reproduced kills, fresh-process replays")
    evaluation_seconds: float
    metadata: GenerationMetadata = Field(default_factory=GenerationMetadata)
    failure: FailureDetail | None = Field(None, description="why the clean run failed (None: it passed, or "
                                                             "the result predates the field)")


class MetricSummary(BaseModel):
    """None where the metric is undefined (no instance contributes: printed as —)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int = Field(description="instances contributing to the mean")


# The details that mark a result as scored without a usable submission (see SubmissionReport).
NO_PREDICTION = "no prediction for this instance"
INVALID_SUBMISSION = "invalid submission: "


class SubmissionReport(BaseModel):
    """What was submitted, as SWE-bench reports it: every planned instance is one of valid,
    invalid (the line or its files cannot be a test) or missing (no line); invalid and
    missing ones score as generation failures."""

    instances: int
    submitted: int
    valid: int
    invalid: int
    missing: int
    invalid_reasons: dict[str, str] = Field(default_factory=dict, description="instance id → why")
    missing_ids: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, results: list[InstanceResult]) -> SubmissionReport:
        missing = [r.instance_id for r in results if r.detail == NO_PREDICTION]
        invalid = {r.instance_id: r.detail.removeprefix(INVALID_SUBMISSION) for r in results
                   if r.detail.startswith(INVALID_SUBMISSION)}
        return cls(instances=len(results), submitted=len(results) - len(missing),
                   valid=len(results) - len(missing) - len(invalid), invalid=len(invalid), missing=len(missing),
                   invalid_reasons=invalid, missing_ids=missing)

    @property
    def complete(self) -> bool:
        return not self.invalid and not self.missing


class RunSummary(BaseModel):
    dataset: str
    predictions_sha256: str
    n: int = Field(description="planned instances")
    n_exec: int = Field(description="instances with one of the six outcomes")
    pass_at_1: MetricSummary
    kill_complete_at_1: MetricSummary
    kill_complete_relaxed_at_1: MetricSummary
    api_f1: MetricSummary
    coverage_jaccard: MetricSummary
    mutant_recall: MetricSummary
    assertion_dependent_recall: MetricSummary
    hidden_recall: MetricSummary
    outcomes: dict[str, int]
    exclusions: dict[str, int] = Field(description="infrastructure failures by reason")
    per_project: dict[str, dict[str, float | None]]
    efficiency: dict[str, float | None]
    bootstrap: dict[str, int | str]
    isolation: str = Field("none", description="bwrap: the tests ran without network, production read-only")
    submission: SubmissionReport | None = Field(None, description="valid / invalid / missing predictions")
    warnings: list[str] = Field(default_factory=list, description="what limits these figures (e.g. few clusters)")
