"""The experiment's units of work: module-level functions over pydantic records, so an executor can run
them in-process or ship them to a Ray worker unchanged.

Every unit is content-addressed: its key hashes everything that determines its output (dataset card,
instance, agent settings, prompt paragraphs, enriched requirement, prerequisite tests, candidate number,
the scripted provider's script, the experiment's ``replicate``). A unit whose key is in the cache is not
run again — in this run or any later one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.cores import per_core
from bench.dataset import Dataset, load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import InstanceResult, Prediction
from bench.suite.evaluate import SuiteResult
from harness.agents.base import SuiteTask
from harness.generate import GenerateOptions, generate_instance, load_agent, safe_name
from harness.sandbox.instance import InstanceSandbox
from harness.sandbox.policy import load_policy


def cache_root() -> Path:
    return Path(os.environ.get("REQ2TEST_CACHE", Path.home() / ".cache" / "req2test"))


@lru_cache(maxsize=4)
def _dataset(path: str) -> Dataset:
    return load_dataset(Path(path))


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never a torn write (a kill -9 mid-write included)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- enrichment
class EnrichmentUnit(BaseModel):
    dataset_dir: str
    instance_id: str
    view: Literal["th", "ah"]
    options: GenerateOptions
    ledger_path: str
    key: str
    use_cache: bool = True


class EnrichmentOutcome(BaseModel):
    instance_id: str
    text: str
    surfaced: list[str]
    cost_usd: float | None = None
    calls: int = 0
    cached: bool = False


def run_enrichment(unit: EnrichmentUnit) -> EnrichmentOutcome:
    """A clarified requirement from the view only (never the dataset's gold files)."""
    cached = cache_root() / "enrichments" / f"{unit.key}.json"
    if unit.use_cache and cached.is_file():
        return EnrichmentOutcome.model_validate_json(cached.read_text(encoding="utf-8")).model_copy(
            update={"cached": True})
    from harness.llm import Ledger, Model
    from harness.strategies.enrichment import enrich, gather_context
    from harness.views import materialize

    ds = _dataset(unit.dataset_dir)
    instance = ds.instance(unit.instance_id)
    project = ds.project(instance.project)
    view = materialize(ds, unit.instance_id, unit.view)
    context = gather_context(instance, view.root, project.features_dir)
    assert unit.options.model is not None
    ledger = Ledger(Path(unit.ledger_path), {"instance_id": unit.instance_id, "step": "enrichment"})
    from bench.frameworks.registry import get_framework

    enriched = enrich(instance, context, Model(unit.options.model, unit.options.limits, ledger),
                      get_framework(project.framework).prompt_terms())
    totals = ledger.totals()
    outcome = EnrichmentOutcome(instance_id=unit.instance_id, text=enriched.text,
                                surfaced=[f.path for f in context.surfaced[:10]],
                                cost_usd=totals["cost_usd"], calls=totals["calls"])
    if unit.use_cache:
        write_atomic(cached, outcome.model_dump_json())
    return outcome


# ----------------------------------------------------------------------------- generation
class PrerequisiteTest(BaseModel):
    instance_id: str
    files: dict[str, str]
    evaluator_passed: bool | None = Field(None, description="set only in arms that use evaluator feedback")


class GenerationUnit(BaseModel):
    dataset_dir: str
    out_dir: str = Field(description="the candidate's directory: trajectories/ and ledger.jsonl go there")
    instance_id: str
    candidate: int
    options: GenerateOptions
    enriched: str | None = None
    prerequisites: list[PrerequisiteTest] = Field(default_factory=list)
    decompose: Literal["off", "sandbox", "evaluator"] = "off"
    key: str
    use_cache: bool = True
    suite: SuiteTask | None = Field(None, description="suite mode: instance_id is this suite's id")
    given_tests: dict[str, str] = Field(default_factory=dict, description="the reverse task: the developer step "
                                        "files written into the workspace before the agent starts")


def run_generation(unit: GenerationUnit) -> Prediction:
    """One candidate: from the cache when its key is known, else a fresh sandboxed generation."""
    out_dir = Path(unit.out_dir)
    cached = cache_root() / "generations" / unit.key
    trajectory_dir = out_dir / "trajectories" / safe_name(unit.instance_id)
    if unit.use_cache and (cached / "prediction.json").is_file():
        prediction = Prediction.model_validate_json((cached / "prediction.json").read_text(encoding="utf-8"))
        if (cached / "trajectories").is_dir():
            shutil.copytree(cached / "trajectories", trajectory_dir, dirs_exist_ok=True)
        if prediction.metadata is not None:
            prediction.metadata.extra["cached"] = unit.key
        return prediction
    ds = _dataset(unit.dataset_dir)
    agent = load_agent(unit.options.agent, ds.root)
    policy = load_policy(unit.options.sandbox)
    if hasattr(agent, "readonly_binds"):
        from harness.agents.external import sandbox_policy_for

        policy = sandbox_policy_for(agent, policy)
    before = None
    if unit.prerequisites and unit.decompose != "off":
        def before(opened: InstanceSandbox) -> dict[str, Any]:
            return give_prerequisites(ds, opened, unit, policy)
    # a private directory per unit: concurrent candidates never share a ledger or trajectory file
    scratch = Path(tempfile.mkdtemp(prefix="gen-", dir=_ensure(out_dir / "work")))
    try:
        prediction = generate_instance(ds, unit.instance_id, agent, unit.options, policy, scratch,
                                       enriched_requirement=unit.enriched, before_agent=before,
                                       extra={"candidate": unit.candidate, "unit_key": unit.key},
                                       suite=unit.suite, given_tests=unit.given_tests)
        produced = scratch / "trajectories" / safe_name(unit.instance_id)
        if produced.is_dir():
            shutil.copytree(produced, trajectory_dir, dirs_exist_ok=True)
        ledger = scratch / "ledger.jsonl"
        if ledger.is_file():
            with open(out_dir / "ledger.jsonl", "a", encoding="utf-8") as fh:
                fh.write(ledger.read_text(encoding="utf-8"))
        interrupted = prediction.metadata is not None and prediction.metadata.extra.get("end_reason") == \
            "provider_interrupted"
        if unit.use_cache and not interrupted:
            staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=_ensure(cached.parent)))
            (staging / "prediction.json").write_text(prediction.model_dump_json(), encoding="utf-8")
            if trajectory_dir.is_dir():
                shutil.copytree(trajectory_dir, staging / "trajectories")
            if ledger.is_file():
                shutil.copy2(ledger, staging / "ledger.jsonl")
            try:
                os.rename(staging, cached)
            except OSError:  # another worker cached the same key first
                shutil.rmtree(staging, ignore_errors=True)
        return prediction
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def give_prerequisites(ds: Dataset, opened: InstanceSandbox, unit: GenerationUnit, policy) -> dict[str, Any]:
    """Which prerequisite tests pass, decided without the evaluator unless the arm opted into its feedback.

    ``sandbox``: each prerequisite's test runs alone in a separate sandbox on the view where the
    prerequisite's behavior is not hidden — this instance's view with the prerequisite's target bodies
    restored — and counts when behave exits 0; only the verdict crosses back, the agent never sees that
    view. ``evaluator``: the evaluator's verdict decides (such arms are excluded from submission).
    Passing tests are written into the agent's workspace (it builds on their step definitions) and listed
    in the prompt.
    """
    from harness.sandbox.instance import open_instance_sandbox

    given: dict[str, str] = {}
    verdicts: dict[str, str] = {}
    for prereq in unit.prerequisites:
        if not prereq.files:
            verdicts[prereq.instance_id] = "no test"
            continue
        if unit.decompose == "evaluator":
            passed = bool(prereq.evaluator_passed)
            verdicts[prereq.instance_id] = "evaluator: pass" if passed else "evaluator: not pass"
        else:
            work = Path(tempfile.mkdtemp(prefix="prereq-", dir=_ensure(Path(unit.out_dir) / "work")))
            check = open_instance_sandbox(ds, unit.instance_id, unit.options.view, policy, work,
                                          reveal=prereq.instance_id)
            try:
                for path, text in prereq.files.items():
                    check.sandbox.write_file(path, text)
                requirement = ds.instance(prereq.instance_id).requirement
                result = check.sandbox.exec(check.run_command(requirement.feature_file, requirement.run_lines),
                                            env=check.env, timeout=300)
            finally:
                check.sandbox.close()
                shutil.rmtree(work, ignore_errors=True)
            passed = result.exit_code == 0
            verdicts[prereq.instance_id] = f"sandbox: exit {result.exit_code}"
        if passed:
            given.update(prereq.files)  # later prerequisites build on earlier ones: their version wins
    for path, text in given.items():
        opened.sandbox.write_file(path, text)
    return {"prerequisite_tests": given, "detail": json.dumps(verdicts, sort_keys=True)}


# ----------------------------------------------------------------------------- evaluation
def _batch_dir(work_dir: str, predictions: list[Prediction]) -> tuple[Path, Path]:
    """An evaluation batch's directory and its predictions file (written once: a rerun resumes)."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    predictions_path = work / "predictions.jsonl"
    if not predictions_path.is_file():
        write_atomic(predictions_path, "".join(p.model_dump_json() + "\n" for p in predictions))
    return work, predictions_path


class EvaluationUnit(BaseModel):
    dataset_dir: str
    predictions: list[Prediction]
    instance_ids: list[str]
    work_dir: str
    workers: int = 0
    mutants: bool = True
    timeout: float = 600.0


def run_evaluation(unit: EvaluationUnit) -> list[InstanceResult]:
    """Score one batch with the real evaluator; its journal makes a killed batch resume where it stopped."""
    work, predictions_path = _batch_dir(unit.work_dir, unit.predictions)
    options = EvaluateOptions(workers=per_core(unit.workers), timeout=unit.timeout,
                              instances=unit.instance_ids, mutants=unit.mutants)
    evaluate(Path(unit.dataset_dir), predictions_path, work / "run", options)
    results = {}
    for line in (work / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            result = InstanceResult.model_validate_json(line)
            results[result.instance_id] = result
    return [results[i] for i in unit.instance_ids]


# ----------------------------------------------------------------------------- suite evaluation
class SuiteEvaluationUnit(BaseModel):
    dataset_dir: str
    kind: Literal["suite", "reverse", "authored"] = Field(
        "suite", description="suite: the reference scenarios; authored: the agent's own (documentation ablation); "
                             "reverse: implementations")
    predictions: list[Prediction] = Field(description="one per suite; instance_id is the suite id")
    suite_ids: list[str]
    work_dir: str
    workers: int = 0
    mutants: bool = True
    timeout: float = 600.0


def run_suite_evaluation(unit: SuiteEvaluationUnit) -> list[Any]:
    """Score one batch of suites (bench.suite.evaluate, or bench.suite.reverse for implementations);
    its journal resumes a killed batch."""
    from bench.suite.authored import evaluate_authored
    from bench.suite.evaluate import evaluate_suites
    from bench.suite.reverse import ReverseResult, evaluate_reverse

    work, predictions_path = _batch_dir(unit.work_dir, unit.predictions)
    options = EvaluateOptions(workers=per_core(unit.workers), timeout=unit.timeout,
                              mutants=unit.mutants)
    evaluator = {"reverse": evaluate_reverse, "authored": evaluate_authored}.get(unit.kind, evaluate_suites)
    evaluator(Path(unit.dataset_dir), predictions_path, work / "run", options, suites=unit.suite_ids)
    model = ReverseResult if unit.kind == "reverse" else SuiteResult
    journal = f"{unit.kind}_results.jsonl"
    results = {}
    for line in (work / "run" / journal).read_text(encoding="utf-8").splitlines():
        if line.strip():
            result = model.model_validate_json(line)
            results[result.suite_id] = result
    return [results[s] for s in unit.suite_ids]
