"""``req2test generate``: run an agent on instances and collect its tests as predictions.

For each instance: the view in a fresh sandbox, the agent's run (its trajectory and every
model call in the ledger), the test collected from the workspace diff, one line appended
to ``RUN_DIR/predictions.jsonl`` — which ``req2test evaluate`` scores. Finished instances
are never redone: rerunning the command resumes. A generation interrupted by provider
limits is re-run (up to ``provider_reruns`` times); one that merely failed is not.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench import stopping
from bench.dataset import load_dataset
from bench.errors import UserError
from bench.explorer import instance_file_name
from bench.journal import append_line, drop_torn_tail, read_dicts
from bench.model import GenerationMetadata, Instance, Prediction, Requirement
from bench.progress import Progress
from bench.registry import UnknownName
from harness.agents.base import Agent, AgentEnv, AgentResult, AgentTask, SuiteTask, Trajectory
from harness.agents.registry import BUILTIN, MODEL_AGENTS, make_agent
from harness.llm import Ledger, Limits, Model, ModelConfig, ProviderRefused
from harness.sandbox.instance import InstanceSandbox, open_instance_sandbox
from harness.sandbox.policy import load_policy
from harness.submission_rules import ConfigFacts, refusals

BUILTIN_AGENTS = tuple(BUILTIN)


class GenerateError(UserError):
    """A user mistake in a generate request; one line."""


class GenerateOptions(BaseModel):
    agent: str = "builtin"
    model: ModelConfig | None = None
    view: Literal["th", "ah"] = "th"
    sandbox: str = "default"
    limits: Limits = Field(default_factory=Limits)
    paragraphs: list[str] = Field(default_factory=list, description="shipped paragraph names or paths of files")
    # kept out of generate.json (exclude): a run directory written before they existed still resumes, and
    # an experiment's cache key hashes them itself (harness.experiment.prompt_files.prompt_key)
    template: str | None = Field(None, exclude=True, description="a task prompt template file of the user's")
    prompt_texts: dict[str, str] = Field(default_factory=dict, exclude=True,
                                         description="the text of each paragraph or template given by path")
    instances: list[str] | None = None
    for_submission: bool = False
    provider_reruns: int = Field(2, ge=0)
    workers: int = Field(1, ge=1, description="generations at a time (each in its own sandbox)")
    retry: list[str] = Field(default_factory=list, description="end reasons to generate again on this run "
                             "(e.g. agent_error, max_calls); provider_interrupted always is")
    black_box_oracle: bool = Field(False, description="ablation (suite mode): a check_on_real_code tool runs the "
                                   "agent's steps for one scenario on the real code; only pass/fail crosses back")


class GenerationRecord(BaseModel):
    instance_id: str
    end_reason: str
    files: int
    seconds: float


safe_name = instance_file_name  # where trajectories go is the explorer's to find: one spelling


def load_agent(name: str, dataset_dir: Path) -> Agent:
    """The agent ``name`` resolves to in ``harness.agents.registry`` (or a user's module:Class)."""
    try:
        return make_agent(name, dataset_dir)
    except UnknownName as exc:
        raise GenerateError(str(exc)) from None


def finished_instances(path: Path) -> set[str]:
    """Instances with a journaled prediction (a torn last line from a kill is redone)."""
    return {str(record["instance_id"]) for record in read_dicts(path) if "instance_id" in record}


def generate(dataset_dir: Path, run_dir: Path, options: GenerateOptions,
             progress: Progress | None = None) -> list[GenerationRecord]:
    stopping.begin_run()
    ds = load_dataset(dataset_dir)
    run_dir = run_dir.resolve()  # the workspace's git history is addressed by absolute path
    agent = load_agent(options.agent, ds.root)
    if options.agent in MODEL_AGENTS and options.model is None:
        raise GenerateError(f"the {options.agent} agent needs --model (e.g. openai/gpt-5-mini)")
    policy = load_policy(options.sandbox)
    if options.for_submission:
        refused = refusals(ConfigFacts(agent=options.agent, reads_ground_truth=getattr(agent, "uses_ground_truth", False),
                                       sandbox=options.sandbox, sandbox_isolates=policy.backend != "local"))
        if refused:
            raise GenerateError("not for submission: " + "; ".join(refused))
    if hasattr(agent, "readonly_binds"):
        from harness.agents.external import sandbox_policy_for

        # the agent's install must be visible (read-only) inside; a missing or untested
        # install is reported here, before any instance runs
        policy = sandbox_policy_for(agent, policy)
    ids = options.instances or [inst.id for inst in ds.instances]
    known = {inst.id for inst in ds.instances}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise GenerateError(f"no instance {unknown[0]!r} in {ds.root}")
    run_dir.mkdir(parents=True, exist_ok=True)
    config_path = run_dir / "generate.json"
    config = options.model_dump(mode="json", exclude={"instances", "workers", "retry"})
    if config.get("model") and config["model"].get("api_key"):
        config["model"]["api_key"] = "(set)"
    if config_path.is_file() and json.loads(config_path.read_text(encoding="utf-8")) != config:
        raise GenerateError(f"{run_dir} holds a generation with other settings; use a new run directory")
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    predictions = run_dir / "predictions.jsonl"
    drop_torn_tail(predictions)
    set_aside_interrupted(predictions, {"provider_interrupted", *options.retry})
    done = finished_instances(predictions)
    records: list[GenerationRecord] = []
    todo = [i for i in ids if i not in done]
    if progress is not None:
        progress.stage(f"generate ({options.agent})", len(todo))
    journal_lock = threading.Lock()
    stop = threading.Event()  # a refused provider refuses every later generation: none may start

    def one(instance_id: str) -> GenerationRecord | None:
        if stop.is_set():
            return None
        try:
            record = _generate_one(ds, instance_id, agent, options, policy, run_dir, journal_lock)
        except BaseException:
            stop.set()
            raise
        if progress is not None:
            with journal_lock:
                progress.advance()
        return record

    # after Ctrl-C the pool's exit ends the generations in flight instead (bench.stopping): none is journaled
    with stopping.StoppablePool(max_workers=options.workers, thread_name_prefix="req2test-gen") as pool:
        futures = [pool.submit(one, instance_id) for instance_id in todo]
        try:
            for future in futures:  # in submission order: the first failure is the earliest instance's
                if (record := stopping.result(future)) is not None:
                    records.append(record)
        except BaseException:
            for future in futures:
                future.cancel()  # nothing new starts; running generations finish and are journaled
            raise
    shutil.rmtree(run_dir / "work", ignore_errors=True)  # per-generation workspaces, already collected
    return records


def _generate_one(ds, instance_id: str, agent: Agent, options: GenerateOptions, policy, run_dir: Path,
                  journal_lock: threading.Lock):
    prediction = generate_instance(ds, instance_id, agent, options, policy, run_dir)
    with journal_lock:
        append_prediction(run_dir / "predictions.jsonl", prediction)
    extra = prediction.metadata.extra if prediction.metadata else {}
    return GenerationRecord(instance_id=instance_id, end_reason=extra.get("end_reason", "finished"),
                            files=len(prediction.files),
                            seconds=(prediction.metadata.wall_seconds if prediction.metadata else 0.0) or 0.0)


BeforeAgent = Callable[[InstanceSandbox], dict[str, Any]]


def generate_instance(ds, instance_id: str, agent: Agent, options: GenerateOptions, policy, out_dir: Path,
                      attempt_prefix: str = "", enriched_requirement: str | None = None,
                      prerequisite_tests: dict[str, str] | None = None,
                      before_agent: BeforeAgent | None = None, extra: dict[str, Any] | None = None,
                      suite: SuiteTask | None = None, given_tests: dict[str, str] | None = None) -> Prediction:
    """One generation in a fresh sandbox: the agent's test as a Prediction (not yet journaled).

    ``before_agent`` runs in the opened sandbox before the agent starts and may return task fields
    (``prerequisite_tests``) — the decomposition strategy decides there which prerequisite tests pass.
    Trajectories go to ``out_dir/trajectories/<instance>/<attempt_prefix><attempt>.jsonl``, model calls
    to ``out_dir/ledger.jsonl``.
    """
    # suite mode: ``instance_id`` is the suite's; the sandbox is its first scenario's view (every
    # view removes every scenario's step definitions, and the all-hidden view hides every body)
    sandbox_instance = (suite.view_instance or suite.scenarios[0].instance_id) if suite is not None else instance_id
    instance = ds.instance(sandbox_instance)
    project = ds.project(instance.project)
    implementing = suite is not None and suite.kind == "implementation"
    documented = suite is not None and suite.specification == "documentation"
    if documented:  # the agent may not read a scenario: its instance carries only the suite's name
        assert suite is not None
        instance = documentation_instance(instance, suite)
    given_tests = given_tests or {}
    started = time.monotonic()
    attempts = 0
    ledger_totals: dict[str, Any] = {}
    task_extra: dict[str, Any] = {}
    while True:
        attempts += 1
        work = out_dir / "work" / safe_name(instance_id)
        shutil.rmtree(work, ignore_errors=True)
        opened = open_instance_sandbox(ds, sandbox_instance, options.view, policy, work,
                                       withheld=(suite.feature_file,) if documented and suite else (),
                                       authored_dir=suite.authored_dir if documented and suite else None)
        ledger = Ledger(out_dir / "ledger.jsonl", {"instance_id": instance_id, "attempt": attempts,
                                                   **({"candidate": attempt_prefix} if attempt_prefix else {})})
        model = Model(options.model, options.limits, ledger) if options.model is not None else None
        trajectory = Trajectory(out_dir / "trajectories" / safe_name(instance_id) / f"{attempt_prefix}{attempts}.jsonl")
        if enriched_requirement:
            trajectory.add("enrichment", text=enriched_requirement)
        try:
            task_extra = before_agent(opened) if before_agent is not None else {}
            if implementing:  # the reverse task: the feature's tests are the input, in place
                for path, text in sorted(given_tests.items()):
                    opened.sandbox.write_file(path, text)
                trajectory.add("given_tests", paths=sorted(given_tests))
        except Exception:
            opened.sandbox.close()
            raise
        prerequisites = {**(prerequisite_tests or {}), **task_extra.get("prerequisite_tests", {})}
        if prerequisites:
            trajectory.add("prerequisites", given=sorted(prerequisites), detail=task_extra.get("detail", ""))
        task = AgentTask(instance=instance, suite=suite, view=options.view, features_dir=project.features_dir,
                         python_path=opened.env["PYTHONPATH"], paragraphs=options.paragraphs,
                         template=options.template, prompt_texts=options.prompt_texts,
                         enriched_requirement=enriched_requirement, prerequisite_tests=prerequisites,
                         framework=project.framework,
                         # named only where test code does not go under the features dir
                         test_dirs=[] if opened.workspace.area.dirs == (project.features_dir.rstrip("/"),)
                         else list(opened.workspace.area.dirs))
        oracle = BlackBoxOracle(ds, task, opened) if options.black_box_oracle else None
        try:
            result = agent.run(task, AgentEnv(opened, model, trajectory, oracle=oracle))
        except Exception as exc:  # noqa: BLE001 - an agent crash is this generation's outcome, not the run's
            result = AgentResult(reason="agent_error", detail=f"{type(exc).__name__}: {exc}")
            trajectory.add("end", reason="agent_error", detail=result.detail)
        except KeyboardInterrupt:
            opened.sandbox.close()
            raise
        if oracle is not None:
            oracle.close()
        diff = opened.sandbox.diff()
        if implementing:  # the prediction is the whole production tree (bench.suite.reverse)
            produced, unreadable = opened.workspace.production_sources(project.production)
            diff = diff.model_copy(update={"test_files": produced,
                                           "discarded": {**{p: r for p, r in diff.discarded.items()
                                                            if p not in produced}, **unreadable}})
        report = opened.sandbox.close()
        stopping.check()  # an interrupted run's agent ended by the stop, not by itself: the rerun generates it
        ledger_totals = ledger.totals()
        shutil.rmtree(work, ignore_errors=True)
        if result.reason == "provider_refused":  # every later call would be refused too: stop the run
            raise ProviderRefused(result.detail if result.detail.startswith("the provider refused")
                                  else f"the provider refused {options.model.model if options.model else 'the agent'}"
                                       f": {result.detail}")
        if result.reason == "provider_interrupted" and attempts <= options.provider_reruns:
            continue  # interrupted by the provider, not by its own failure: run it again
        break
    metadata = GenerationMetadata(
        agent=getattr(agent, "name", options.agent), model=options.model.model if options.model else None,
        reasoning=options.model.reasoning_effort if options.model else None, view=options.view,
        wall_seconds=round(time.monotonic() - started, 3), llm_calls=ledger_totals.get("calls", 0),
        input_tokens=ledger_totals.get("input_tokens", 0), output_tokens=ledger_totals.get("output_tokens", 0),
        cached_tokens=ledger_totals.get("cached_tokens", 0), cost_usd=ledger_totals.get("cost_usd"),
        extra={"end_reason": result.reason, "end_detail": result.detail, "attempts": attempts,
               "cost_source": ledger_totals.get("cost_source"), "retries": ledger_totals.get("retries", 0),
               "paragraphs": options.paragraphs, "discarded": diff.discarded,
               **({"template": options.template} if options.template else {}),
               "sandbox": report.model_dump(mode="json"), **(extra or {}),
               **({"prerequisites_given": sorted(prerequisites)} if prerequisites else {}),
               **({"prerequisite_verdicts": json.loads(task_extra["detail"])} if task_extra.get("detail") else {}),
               **({"enriched": True} if enriched_requirement else {}),
               **({"oracle_checks": oracle.checks} if oracle is not None else {})})
    return Prediction(instance_id=instance_id, files=diff.test_files, metadata=metadata)


def documentation_instance(instance: Instance, suite: SuiteTask) -> Instance:
    """AgentTask needs an Instance; in the documentation ablation it names the suite and carries no
    scenario, step or target interface (the documentation in ``task.suite`` is the whole input)."""
    requirement = Requirement(feature_file="", feature_name=suite.suite_id, feature_description="",
                              scenario_name="the documented behaviour", scenario_keyword="Documentation",
                              scenario_line=0, steps=[], gherkin=suite.documentation)
    return instance.model_copy(update={"id": suite.suite_id, "requirement": requirement, "target_interfaces": [],
                                       "depends_on": [], "variant_of": [], "group": suite.suite_id})


class BlackBoxOracle:
    """The black-box oracle ablation (TestSuiteBench): "does this scenario pass on the real code
    with the steps I wrote?". The agent's current test files are judged by the evaluator (its
    sandbox, its screens, no mutants) on the complete production code, outside the agent's sandbox;
    the agent gets back one word. A run that uses it is an upper bound, never a submission."""

    def __init__(self, ds, task: AgentTask, opened: InstanceSandbox) -> None:
        self.ds, self.task, self.opened = ds, task, opened
        self.checks = 0
        self._judging: Any = None
        self._gold: dict[str, Any] = {}
        self._tmp: str | None = None

    def scenarios(self) -> dict[int, str]:
        if self.task.suite is not None:
            return {s.line: s.instance_id for s in self.task.suite.scenarios}
        return {self.task.instance.requirement.scenario_line: self.task.instance.id}

    def check(self, line: int) -> str:
        import tempfile

        from bench.evaluate import EvaluateOptions, ProjectJudging, ground_truth_files
        from bench.model import Outcome

        instance_id = self.scenarios().get(int(line))
        if instance_id is None:
            return f"error: no scenario to check at line {line} (lines: {sorted(self.scenarios())})"
        self.checks += 1
        files = self.opened.sandbox.diff().test_files
        instance = self.ds.instance(instance_id)
        if self._judging is None:  # one judge (and one sandbox base) for all of a generation's checks
            self._gold = self.ds.load_gold()
            self._tmp = tempfile.mkdtemp(prefix="req2test-oracle-")
            self._judging = ProjectJudging(self.ds, instance.project, self._gold,
                                           EvaluateOptions(workers=1, mutants=False, replays=0), Path(self._tmp),
                                           ground_truth_files(self._gold))
        judging, gold = self._judging, self._gold
        problem, _ = judging.rejections(Prediction(instance_id=instance_id, files=files))
        if problem is not None:
            return "fails on the real code"
        judgement = judging.judge(instance, Prediction(instance_id=instance_id, files=files),
                                  gold[instance_id].model_copy(update={"pool": [], "kills": []}))
        return "passes on the real code" if judgement.outcome is Outcome.passed else "fails on the real code"

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp, self._judging = None, None


def append_prediction(path: Path, prediction: Prediction) -> None:
    """One fsynced line: a kill -9 right after loses nothing that was journaled."""
    append_line(path, prediction.model_dump_json())


def set_aside_interrupted(path: Path, reasons: set[str] | frozenset[str] = frozenset({"provider_interrupted"})
                          ) -> list[str]:
    """Move the generations that ended for one of ``reasons`` (by default: the provider
    interrupted them) to ``predictions.interrupted.jsonl`` so this run generates them again
    (one line per instance stays the rule); their ids."""
    if not path.is_file():
        return []
    keep: list[str] = []
    interrupted: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            reason = json.loads(line).get("metadata", {}).get("extra", {}).get("end_reason")
        except (ValueError, AttributeError):
            reason = None
        (interrupted if reason in reasons else keep).append(line)
    if interrupted:
        for line in interrupted:
            append_line(path.with_name("predictions.interrupted.jsonl"), line)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text("".join(keep), encoding="utf-8")
        os.replace(temporary, path)  # atomic: the journal is the old one or the new one, never half
    return [json.loads(line)["instance_id"] for line in interrupted]


