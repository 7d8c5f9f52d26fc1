"""``req2test run EXPERIMENT.yaml``: arms × views × instances × n candidates → generation → evaluation →
selection → one directory per reported configuration → report.

Resumable by construction: every generated candidate is an fsynced line of its candidate journal
(``generations/<arm>@<view>/c<k>/predictions.jsonl``) written as the unit finishes; evaluations resume from
the evaluator's own journal and land in a content-addressed cache; selections are journaled per instance.
A rerun after a kill -9 redoes only the units that were in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

import harness
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.journal import Journal, append_line, drop_torn_tail, read_dicts
from bench.model import GenerationMetadata, InstanceResult, Outcome, Prediction
from bench.runs import ConfigRecord, config_dir_name  # one record: written here, read by compare/report
from bench.summary import summarize_run
from harness.experiment.config import (
    Arm,
    Experiment,
    ExperimentError,
    content_hash,
    load_experiment,
    locate,
    select_instances,
)
from harness.experiment.units import (
    EnrichmentOutcome,
    EnrichmentUnit,
    EvaluationUnit,
    GenerationUnit,
    PrerequisiteTest,
    cache_root,
    run_enrichment,
    run_evaluation,
    run_generation,
    write_atomic,
)
from harness.generate import GenerateOptions, append_prediction, load_agent, set_aside_interrupted
from harness.llm import Limits, ModelConfig
from harness.prompts import available_paragraphs, prompt_dir
from harness.submission_rules import ConfigFacts, refusals

OFFLINE_KEY = "scripted-offline"  # the run's own scripted provider accepts any key


class BudgetReached(ExperimentError):
    """limits.max_run_cost is spent: no further generation starts; one line."""


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


# ----------------------------------------------------------------------------- planning
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
    paragraphs = set(available_paragraphs())
    from harness.sandbox.policy import load_policy

    for where, name in [(("sandbox",), experiment.sandbox)] + [
            (("arms", i, "sandbox"), arm.sandbox) for i, arm in enumerate(experiment.arms) if arm.sandbox]:
        try:
            load_policy(name)
        except Exception as exc:  # noqa: BLE001 - any policy problem is the user's line to fix
            errors.append(f"{locate(path, text, where)}: {exc}")
    for i, arm in enumerate(experiment.arms):
        for j, paragraph in enumerate(arm.paragraphs):
            if paragraph not in paragraphs:
                errors.append(f"{locate(path, text, ('arms', i, 'paragraphs', j))}: no paragraph {paragraph!r} in "
                              f"{prompt_dir() / 'paragraphs'} (available: {', '.join(sorted(paragraphs)) or 'none'})")
    script_sha = None
    if experiment.provider is not None:
        from harness.provider.script import ScriptLoadError, load_script

        script_path = base / experiment.provider.script
        try:
            load_script(script_path)
            script_sha = hashlib.sha256(script_path.read_bytes()).hexdigest()
        except ScriptLoadError as exc:
            errors.append(f"{locate(path, text, ('provider', 'script'))}: {exc}")
    if not (experiment.executor == "local" or experiment.executor.startswith(("local:", "ray"))):
        errors.append(f"{locate(path, text, ('executor',))}: executor {experiment.executor!r}: "
                      "use local, local:N, ray, ray:auto or ray:HOST:PORT")
    if errors:
        raise ExperimentError("\n".join(errors))
    assert dataset is not None
    plan = ExperimentPlan(name=experiment.name, file=str(path.resolve()),
                          experiment=experiment.model_dump(mode="json"), dataset_dir=str(dataset_dir),
                          dataset_card_sha256=hashlib.sha256(card_file.read_bytes()).hexdigest(),
                          instances=instances, provider_script_sha256=script_sha)
    return experiment, plan, dataset


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


def _tree_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for root in paths:
        for file in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if file.is_file() and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(root.parent)).encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- progress
class Progress:
    """Instances done, passes, money spent and ETA, on one rich progress bar per stage."""

    def __init__(self, enabled: bool, lines: bool = False) -> None:
        """``lines``: log lines instead of bars (output is not a terminal)."""
        self.enabled = enabled
        self.bar = None
        self.task = None
        self.money = 0.0
        self.passes = 0
        self.evaluated = 0
        self.lines = None
        if enabled and lines:
            from bench.cli import LineProgress

            self.lines = LineProgress(status=lambda: self.status)

    def stage(self, name: str, total: int) -> None:
        if not self.enabled:
            return
        if self.lines is not None:
            self.lines.stage(name, total)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        from bench.cli import console

        if self.bar is None:
            self.bar = Bar(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                           console=console, transient=False)
            self.bar.start()
        self.task = self.bar.add_task(name, total=total, status=self.status)

    @property
    def status(self) -> str:
        passes = f"passes {self.passes}/{self.evaluated}" if self.evaluated else "passes -"
        return f"{passes} · ${self.money:.4f}"

    def advance(self) -> None:
        if self.lines is not None:
            self.lines.advance()
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=1, status=self.status)

    def close(self) -> None:
        if self.lines is not None:
            self.lines.close()
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


# ----------------------------------------------------------------------------- the run
class RunOutcome(BaseModel):
    run_dir: str
    configs: list[dict[str, Any]]
    generated: int
    cached: int
    seconds: float
    report: list[str] = Field(default_factory=list)
    suites: list[dict[str, Any]] = Field(default_factory=list, description="suite mode: each configuration's "
                                         "suite_summary.json")


class ExperimentRunner:
    def __init__(self, experiment: Experiment, plan: ExperimentPlan, dataset: Dataset, run_dir: Path,
                 executor_spec: str | None = None, progress: Progress | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.experiment = experiment
        self.plan = plan
        self.dataset = dataset
        self.run_dir = run_dir.resolve()
        self.executor_spec = executor_spec or experiment.executor
        self.progress = progress or Progress(False)
        self.log = log or (lambda message: None)
        self.depends_on = {inst.id: list(inst.depends_on) for inst in dataset.instances}
        self.generated = 0
        self.cached = 0
        self.enrichment_costs: dict[tuple[str, str], tuple[float, int]] = {}
        self.provider = None
        self.api_base: str | None = None
        self._prompt_hash = _tree_hash([prompt_dir()])
        self._bench_hash = _tree_hash([Path(__file__).resolve().parents[2] / "bench"])

    # -- setup
    def _claim_run_dir(self, text: str) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        plan_path = self.run_dir / "plan.json"
        mine = self.plan.model_dump(mode="json")
        if plan_path.is_file():
            previous = json.loads(plan_path.read_text(encoding="utf-8"))
            keys = ("experiment", "dataset_card_sha256", "instances", "provider_script_sha256")
            if any(_resumable(previous).get(k) != _resumable(mine).get(k) for k in keys):
                raise ExperimentError(f"{self.run_dir} holds a run of another experiment (or the file changed); "
                                      "use a new output directory")
        else:
            plan_path.write_text(json.dumps(mine, indent=2) + "\n", encoding="utf-8")
        (self.run_dir / "experiment.yaml").write_text(text, encoding="utf-8")

    def run(self, text: str) -> RunOutcome:
        from harness.experiment.executors import make_executor

        started = time.monotonic()
        self._claim_run_dir(text)
        if self.experiment.provider is not None:
            from harness.provider.server import ScriptedProvider

            script = Path(self.plan.file).parent / self.experiment.provider.script
            self.provider = ScriptedProvider(script, log_path=self.run_dir / "provider-requests.jsonl").start()
            self.api_base = self.provider.openai_base_url
        executor = make_executor(self.executor_spec)
        records: list[ConfigRecord] = []
        suite_summaries: list[dict[str, Any]] = []
        try:
            for arm in self.experiment.arms:
                for view in self.experiment.views:
                    epochs = self.experiment.epochs
                    for epoch in range(epochs):
                        av = ArmView(arm=arm, view=view, epoch=epoch if epochs > 1 else None)
                        if self.experiment.mode == "takeover":
                            from harness.experiment.takeover import run_takeover_arm

                            suite_summaries.append(run_takeover_arm(self, av, executor))
                        elif self.experiment.mode != "scenario":
                            suite_summaries.append(self._run_suite_arm(av, executor))
                        else:
                            records += self._run_arm(av, executor)
        finally:
            executor.close()
            if self.provider is not None:
                self.provider.stop()
            self.progress.close()
        if self.experiment.mode == "takeover":
            from harness.experiment.takeover import takeover_report

            report = takeover_report(self)
        else:
            report = self._suite_report() if self.experiment.mode != "scenario" else self._report()
        return RunOutcome(run_dir=str(self.run_dir), configs=[_headline(self.run_dir, r) for r in records],
                          generated=self.generated, cached=self.cached, seconds=round(time.monotonic() - started, 1),
                          report=report, suites=suite_summaries)

    # -- one arm in one view
    def _options(self, arm: Arm, view: str) -> GenerateOptions:
        model = None
        if arm.model is not None:
            own_provider = arm.api_base is None and self.api_base is not None
            model = ModelConfig(model=arm.model, api_base=arm.api_base or self.api_base or
                                os.environ.get("REQ2TEST_API_BASE"),
                                api_key=OFFLINE_KEY if own_provider else None, reasoning_effort=arm.reasoning,
                                temperature=arm.temperature, seed=arm.seed, max_tokens=arm.max_tokens)
        limits = self.experiment.limits
        return GenerateOptions(agent=arm.agent, model=model, view=view,  # type: ignore[arg-type]
                               sandbox=arm.sandbox or self.experiment.sandbox,
                               limits=Limits(max_calls=limits.max_calls, max_seconds=limits.max_seconds,
                                             max_cost_usd=limits.max_cost),
                               paragraphs=list(arm.paragraphs), black_box_oracle=arm.black_box_oracle)

    def _key(self, kind: str, options: GenerateOptions, **parts: Any) -> str:
        model = options.model.model_dump(exclude={"api_key", "api_base"}) if options.model else None
        return content_hash({"kind": kind, "dataset": self.plan.dataset_card_sha256, "agent": options.agent,
                             "model": model, "view": options.view, "sandbox": options.sandbox,
                             "limits": options.limits.model_dump(), "paragraphs": options.paragraphs,
                             "prompts": self._prompt_hash, "script": self.plan.provider_script_sha256,
                             "replicate": self.experiment.replicate, "version": harness.__version__,
                             # only when on: every other arm keeps the keys its cache was written under
                             **({"black_box_oracle": True} if options.black_box_oracle else {}), **parts})

    def _run_arm(self, av: ArmView, executor) -> list[ConfigRecord]:
        arm = av.arm
        gen_dir = self.run_dir / "generations" / av.name
        options = self._options(arm, av.view)
        targets = self.plan.instances
        needed = targets if arm.decompose == "off" else prerequisite_closure(targets, self.depends_on)
        order = {i.id: n for n, i in enumerate(self.dataset.instances)}
        needed = sorted(needed, key=order.__getitem__)
        levels = topological_levels(needed, self.depends_on) if arm.decompose != "off" else [needed]
        enriched = self._enrich(av, needed, options, executor) if arm.enrich else {}
        journals = {k: gen_dir / f"c{k}" / "predictions.jsonl" for k in range(1, arm.n + 1)}
        for path in journals.values():
            drop_torn_tail(path)
            set_aside_interrupted(path)  # a rerun generates them again
        chosen: dict[str, Prediction] = {}
        passed: dict[str, bool] = {}
        self.progress.stage(f"generate {av.name}", len(needed) * arm.n)
        candidates: dict[str, dict[int, Prediction]] = {}
        for level in levels:
            units: list[GenerationUnit] = []
            done = {k: _journal(path) for k, path in journals.items()}
            for instance_id in level:
                prereqs = [PrerequisiteTest(instance_id=p, files=chosen[p].files if p in chosen else {},
                                            evaluator_passed=passed.get(p) if arm.decompose == "evaluator" else None)
                           for p in _ordered(self.depends_on.get(instance_id, []), order)] \
                    if arm.decompose != "off" else []
                for k in range(1, arm.n + 1):
                    if instance_id in done[k]:
                        self._count_done(done[k][instance_id])
                        continue
                    key = self._key("generation", options, arm=arm.name, instance=instance_id, candidate=k,
                                    **av.key_parts(),
                                    enriched=enriched.get(instance_id), decompose=arm.decompose,
                                    prerequisites=[p.model_dump() for p in prereqs])
                    units.append(GenerationUnit(dataset_dir=self.plan.dataset_dir, out_dir=str(gen_dir / f"c{k}"),
                                                instance_id=instance_id, candidate=k, options=options,
                                                enriched=enriched.get(instance_id), prerequisites=prereqs,
                                                decompose=arm.decompose, key=key, use_cache=self.experiment.cache))

            # with a run budget, generations start in batches and none starts once it is spent
            batch = max(1, getattr(executor, "workers", 4)) if self.experiment.limits.max_run_cost else len(units)
            for start in range(0, len(units), max(1, batch)):
                self._check_budget()
                chunk = units[start:start + batch]

                def journal(index: int, prediction: Prediction, chunk: list[GenerationUnit] = chunk) -> None:
                    append_prediction(journals[chunk[index].candidate], prediction)
                    self._count_done(prediction, fresh=True)

                executor.map(run_generation, chunk, on_result=journal)
            for k, path in journals.items():
                for instance_id, prediction in _journal(path).items():
                    candidates.setdefault(instance_id, {})[k] = prediction
            if arm.decompose != "off":
                level_results = self._evaluate_candidates(av, level, candidates, executor) \
                    if arm.decompose == "evaluator" or (arm.n > 1 and arm.selectors[0] == "oracle") else {}
                for instance_id in level:
                    pick = self._select(av, arm.selectors[0], instance_id, candidates.get(instance_id, {}),
                                        level_results) if arm.n > 1 else 1
                    if pick in candidates.get(instance_id, {}):
                        chosen[instance_id] = candidates[instance_id][pick]
                    if arm.decompose == "evaluator":
                        result = level_results.get(pick, {}).get(instance_id)
                        passed[instance_id] = result is not None and result.outcome == Outcome.passed
        results = self._evaluate_candidates(av, targets, candidates, executor)
        return self._write_configs(av, options, candidates, results)

    def _check_budget(self) -> None:
        cap = self.experiment.limits.max_run_cost
        if cap is not None and self.progress.money >= cap:
            raise BudgetReached(f"the run's budget is spent: ${self.progress.money:.4f} of ${cap:g} "
                                f"(limits.max_run_cost); {self.generated} generation(s) of this run are journaled. "
                                "Raise the cap and rerun to continue")

    def _count_done(self, prediction: Prediction, fresh: bool = False) -> None:
        meta = prediction.metadata
        if meta is not None and meta.cost_usd:
            self.progress.money += meta.cost_usd
        if fresh:
            if meta is not None and meta.extra.get("cached"):
                self.cached += 1
            else:
                self.generated += 1
        self.progress.advance()

    # -- enrichment
    def _enrich(self, av: ArmView, ids: list[str], options: GenerateOptions, executor) -> dict[str, str]:
        path = self.run_dir / "generations" / av.name / "enrichment.jsonl"
        done = dict(Journal(path, EnrichmentOutcome, key=lambda outcome: outcome.instance_id).done)
        units = [EnrichmentUnit(dataset_dir=self.plan.dataset_dir, instance_id=i, view=av.view, options=options,
                                ledger_path=str(path.with_name("enrichment-ledger.jsonl")),
                                key=self._key("enrichment", options, arm=av.arm.name, instance=i, **av.key_parts()),
                                use_cache=self.experiment.cache)
                 for i in ids if i not in done]
        self.progress.stage(f"enrich {av.name}", len(ids))
        for _ in done:
            self.progress.advance()

        def journal(index: int, outcome: EnrichmentOutcome) -> None:
            done[outcome.instance_id] = outcome
            append_line(path, outcome.model_dump_json())
            self.progress.money += outcome.cost_usd or 0.0
            self.progress.advance()

        path.parent.mkdir(parents=True, exist_ok=True)
        executor.map(run_enrichment, units, on_result=journal)
        for i, outcome in done.items():
            self.enrichment_costs[(av.name, i)] = (outcome.cost_usd or 0.0, outcome.calls)
        return {i: done[i].text for i in ids if i in done and done[i].text.strip()}

    # -- evaluation (content-addressed cache, batches through the executor)
    def _eval_key(self, instance_id: str, prediction: Prediction | None) -> str:
        evaluation = self.experiment.evaluation
        return content_hash({"dataset": self.plan.dataset_card_sha256, "instance": instance_id,
                             "files": prediction.files if prediction else None, "mutants": evaluation.mutants,
                             "timeout": evaluation.timeout, "bench": self._bench_hash})

    def _evaluate_candidates(self, av: ArmView, ids: list[str], candidates: dict[str, dict[int, Prediction]],
                             executor) -> dict[int, dict[str, InstanceResult]]:
        cache = cache_root() / "evaluations"
        results: dict[int, dict[str, InstanceResult]] = {k: {} for k in range(1, av.arm.n + 1)}
        units: list[tuple[int, EvaluationUnit, dict[str, str]]] = []
        for k in range(1, av.arm.n + 1):
            misses: dict[str, str] = {}
            for instance_id in ids:
                prediction = candidates.get(instance_id, {}).get(k)
                key = self._eval_key(instance_id, prediction)
                hit = cache / f"{key}.json"
                if self.experiment.cache and hit.is_file():
                    results[k][instance_id] = InstanceResult.model_validate_json(hit.read_text(encoding="utf-8"))
                else:
                    misses[instance_id] = key
            if misses:
                preds = [candidates[i][k] for i in misses if k in candidates.get(i, {})]
                digest = content_hash(sorted(misses.values()))[:16]
                evaluation = self.experiment.evaluation
                # on Ray a unit reserves one CPU: its evaluator must not fork one worker per core of the node
                workers = evaluation.workers or (1 if self.executor_spec.startswith("ray") else 0)
                units.append((k, EvaluationUnit(dataset_dir=self.plan.dataset_dir, predictions=preds,
                                                instance_ids=list(misses), workers=workers,
                                                work_dir=str(self.run_dir / "evaluations" / av.name / f"c{k}-{digest}"),
                                                mutants=evaluation.mutants, timeout=evaluation.timeout), misses))
        total = sum(len(u[2]) for u in units)
        if total:
            self.progress.stage(f"evaluate {av.name}", total)

        def store(index: int, batch: list[InstanceResult]) -> None:
            k, _, misses = units[index]
            for result in batch:
                results[k][result.instance_id] = result
                if result.outcome != Outcome.infrastructure_failure and self.experiment.cache:
                    write_atomic(cache / f"{misses[result.instance_id]}.json", result.model_dump_json())
                self.progress.evaluated += 1
                self.progress.passes += result.outcome == Outcome.passed
                self.progress.advance()

        executor.map(run_evaluation, [u[1] for u in units], on_result=store)
        return results

    # -- selection
    def _select(self, av: ArmView, selector: str, instance_id: str, cands: dict[int, Prediction],
                results: dict[int, dict[str, InstanceResult]]) -> int:
        """The candidate a selector picks for one instance (journaled: a judge is never asked twice)."""
        if not cands:
            return 1
        path = self.run_dir / "generations" / av.name / f"selection-{selector}.jsonl"
        journal = _selection_journal(path)
        if instance_id in journal:
            return int(journal[instance_id]["chosen"])
        from harness.llm import Ledger, Model
        from harness.strategies.selectors import Candidate, SelectionContext, select
        from harness.views import materialize

        instance = self.dataset.instance(instance_id)
        project = self.dataset.project(instance.project)
        model = None
        ledger = Ledger(path.with_name("selection-ledger.jsonl"), {"instance_id": instance_id, "selector": selector})
        options = self._options(av.arm, av.view)
        if selector == "judge" and options.model is not None:
            model = Model(options.model, options.limits, ledger)
        view_root = materialize(self.dataset, instance_id, av.view).root if selector != "oracle" else None
        context = SelectionContext(instance=instance, features_dir=project.features_dir, view_root=view_root,
                                   model=model, framework=project.framework,
                                   results={k: r[instance_id] for k, r in results.items() if instance_id in r}
                                   if selector == "oracle" else None)
        selection = select(selector, [Candidate(index=k, prediction=p) for k, p in sorted(cands.items())], context)
        totals = ledger.totals()
        record = {"instance_id": instance_id, **selection.model_dump(mode="json"),
                  "cost_usd": totals["cost_usd"], "calls": totals["calls"]}
        if selector == "judge" and "provider interrupted" in selection.reason:
            return selection.chosen  # not journaled: a rerun asks the judge again instead of keeping the fallback
        append_line(path, json.dumps(record))
        return selection.chosen

    # -- configurations
    def _write_configs(self, av: ArmView, options: GenerateOptions, candidates: dict[str, dict[int, Prediction]],
                       results: dict[int, dict[str, InstanceResult]]) -> list[ConfigRecord]:
        arm = av.arm
        from harness.sandbox.policy import load_policy

        policy = load_policy(options.sandbox)
        isolated = policy.backend != "local"
        base: dict[str, Any] = {
            "arm": arm.name, "view": av.view, "epoch": None if av.epoch is None else av.epoch + 1,
            "n": arm.n, "agent": arm.agent, "model": arm.model,
            "reasoning": arm.reasoning, "paragraphs": arm.paragraphs, "sandbox": options.sandbox, "isolated": isolated,
            "sampling": {k: v for k, v in (("temperature", arm.temperature), ("seed", arm.seed),
                                          ("max_tokens", arm.max_tokens)) if v is not None},
            "strategies": {"enrich": arm.enrich, "decompose": arm.decompose, "selectors": arm.selectors}}
        facts = ConfigFacts(agent=arm.agent, reads_ground_truth=bool(getattr(self._agent(arm), "uses_ground_truth",
                                                                                False)),
                            decompose=arm.decompose, sandbox=options.sandbox, sandbox_isolates=isolated,
                            black_box_oracle=arm.black_box_oracle,
                            scripted_provider=options.model is not None and options.model.api_key == OFFLINE_KEY)
        written = []
        ids = self.plan.instances
        if arm.n == 1:
            picks = {i: 1 for i in ids}
            written.append(self._write_config(ConfigRecord(name=av.name, role="arm", submission_refusals=refusals(facts),
                                                           **base), ids, candidates, results, picks, None))
            return written
        for position, selector in enumerate(arm.selectors):
            picks = {i: self._select(av, selector, i, candidates.get(i, {}), results) for i in ids}
            name = av.name if position == 0 else f"{av.name}/{selector}"
            role = "arm" if position == 0 else "selector"
            own = refusals(facts.model_copy(update={"role": role, "selector": selector}))
            written.append(self._write_config(
                ConfigRecord(name=name, role=role, selector=selector, submission_refusals=own, **base),
                ids, candidates, results, picks, selector))
        single = ConfigRecord(name=f"{av.name}/single", role="single",
                              submission_refusals=refusals(facts.model_copy(update={"role": "single"})),
                              **{**base, "n": 1})
        written.append(self._write_config(single, ids, candidates, results, {i: 1 for i in ids}, None))
        return written

    def _agent(self, arm: Arm) -> object:
        return load_agent(arm.agent, self.dataset.root)

    def _write_config(self, record: ConfigRecord, ids: list[str], candidates: dict[str, dict[int, Prediction]],
                      results: dict[int, dict[str, InstanceResult]], picks: dict[str, int],
                      selector: str | None) -> ConfigRecord:
        out = self.run_dir / "configs" / config_dir_name(record.name)
        out.mkdir(parents=True, exist_ok=True)
        selection_costs = _selection_costs(self.run_dir / "generations" / f"{record.arm}@{record.view}", selector)
        lines, rows = [], []
        for instance_id in ids:
            cands = candidates.get(instance_id, {})
            k = picks[instance_id]
            if k in cands:
                prediction = cands[k]
                if selector is not None:
                    prediction = _summed(prediction, list(cands.values()), selector, k,
                                         selection_costs.get(instance_id, (0.0, 0)))
                enrichment = self.enrichment_costs.get((f"{record.arm}@{record.view}", instance_id))
                if enrichment is not None:  # the clarified requirement was paid for once per instance
                    prediction = _with_extra_cost(prediction, *enrichment, label="enrichment_cost_usd")
                lines.append(prediction.model_dump_json() + "\n")
                # the row carries what this configuration paid (all n candidates + selection), not one candidate
                rows.append(results[k][instance_id].model_copy(update={"metadata": prediction.metadata}))
            else:
                rows.append(results[k][instance_id])
        (out / "config.json").write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        write_atomic(out / "predictions.jsonl", "".join(lines))
        write_atomic(out / "results.jsonl", "".join(r.model_dump_json() + "\n" for r in rows))
        digest = hashlib.sha256("".join(lines).encode()).hexdigest()
        summary = summarize_run(rows, dataset_name=self.dataset.card.name, predictions_sha256=digest)
        summary["config"] = record.name
        write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
        return record

    # -- suite mode: one generation per feature file, scored by bench.suite.evaluate
    def _run_suite_arm(self, av: ArmView, executor) -> dict[str, Any]:
        from bench.suite.authored import authored_dir, suite_documentation
        from bench.suite.calibration import reference_suite_files
        from bench.suite.instances import suite_instances
        from harness.agents.base import SuiteScenario, SuiteTask
        from harness.experiment.units import SuiteEvaluationUnit, run_suite_evaluation

        reverse = self.experiment.mode == "reverse"
        documented = av.arm.specification == "documentation"
        gold = self.dataset.load_gold() if reverse else {}
        suites = {u.id: u for u in suite_instances(self.dataset)}
        by_id = {i.id: i for i in self.dataset.instances}
        options = self._options(av.arm, av.view)
        gen_dir = self.run_dir / "generations" / av.name / "c1"
        path = gen_dir / "predictions.jsonl"
        drop_torn_tail(path)
        set_aside_interrupted(path)
        done = _journal(path)
        ids = self.plan.instances
        self.progress.stage(f"generate {av.name}", len(ids))
        units = []
        for suite_id in ids:
            if suite_id in done:
                self._count_done(done[suite_id])
                continue
            suite = suites[suite_id]
            snapshot = self.dataset.root / self.dataset.project(suite.project).snapshot
            given = reference_suite_files(self.dataset, suite, gold) if reverse else {}
            if documented:  # the ablation: the documentation page instead of the feature, no scenario named
                features_dir = self.dataset.project(suite.project).features_dir
                task = SuiteTask(suite_id=suite_id, feature_file=suite.feature_file, gherkin="", scenarios=[],
                                 specification="documentation",
                                 documentation=suite_documentation(self.dataset, suite).text,
                                 authored_dir=authored_dir(features_dir), view_instance=suite.scenarios[0])
            else:
                task = SuiteTask(suite_id=suite_id, feature_file=suite.feature_file,
                                 kind="implementation" if reverse else "tests", given_tests=sorted(given),
                                 gherkin=(snapshot / suite.feature_file).read_text(encoding="utf-8"),
                                 scenarios=[SuiteScenario(instance_id=s, name=by_id[s].requirement.scenario_name,
                                                          line=by_id[s].requirement.scenario_line)
                                            for s in suite.scenarios])
            key = self._key(f"{self.experiment.mode}-generation", options, arm=av.arm.name, suite=suite_id,
                            **({"specification": "documentation"} if documented else {}), **av.key_parts())
            units.append(GenerationUnit(dataset_dir=self.plan.dataset_dir, out_dir=str(gen_dir), instance_id=suite_id,
                                        candidate=1, options=options, key=key, use_cache=self.experiment.cache,
                                        suite=task, given_tests=given))
        batch = max(1, getattr(executor, "workers", 4)) if self.experiment.limits.max_run_cost else len(units)
        for start in range(0, len(units), max(1, batch)):
            self._check_budget()

            def journal(index: int, prediction: Prediction) -> None:
                append_prediction(path, prediction)
                self._count_done(prediction, fresh=True)

            executor.map(run_generation, units[start:start + batch], on_result=journal)
        predictions = _journal(path)
        # evaluation: content-addressed per suite, like single-scenario evaluations
        cache = cache_root() / f"{self.experiment.mode}-evaluations"
        from bench.suite.evaluate import SuiteResult
        from bench.suite.reverse import ReverseResult

        model = ReverseResult if reverse else SuiteResult
        evaluation = self.experiment.evaluation
        results: dict[str, Any] = {}
        misses: dict[str, str] = {}
        for suite_id in ids:
            prediction = predictions.get(suite_id)
            key = content_hash({"dataset": self.plan.dataset_card_sha256, "suite": suite_id,
                                "files": prediction.files if prediction else None, "mutants": evaluation.mutants,
                                "timeout": evaluation.timeout, "bench": self._bench_hash,
                                **({"kind": "authored"} if documented else {})})
            hit = cache / f"{key}.json"
            if self.experiment.cache and hit.is_file():
                results[suite_id] = model.model_validate_json(hit.read_text(encoding="utf-8"))
            else:
                misses[suite_id] = key
        if misses:
            digest = content_hash(sorted(misses.values()))[:16]
            unit = SuiteEvaluationUnit(dataset_dir=self.plan.dataset_dir,
                                       kind="reverse" if reverse else "authored" if documented else "suite",
                                       predictions=[predictions[s] for s in misses if s in predictions],
                                       suite_ids=list(misses), workers=evaluation.workers,
                                       work_dir=str(self.run_dir / "evaluations" / av.name / f"suites-{digest}"),
                                       mutants=evaluation.mutants, timeout=evaluation.timeout)
            self.progress.stage(f"evaluate {av.name}", len(misses))

            def store(index: int, batch: list) -> None:
                for result in batch:
                    results[result.suite_id] = result
                    broken = any(v.outcome == Outcome.infrastructure_failure for v in result.scenarios)
                    if self.experiment.cache and not broken:
                        write_atomic(cache / f"{misses[result.suite_id]}.json", result.model_dump_json())
                    self.progress.advance()

            executor.map(run_suite_evaluation, [unit], on_result=store)
        # a cached evaluation may be another arm's of the same files: the row carries this arm's costs
        rows = [results[s].model_copy(update={"metadata": predictions[s].metadata if s in predictions else None})
                for s in ids]
        return self._write_suite_config(av, options, predictions, rows)

    def _write_suite_config(self, av: ArmView, options: GenerateOptions, predictions: dict[str, Prediction],
                            rows: list) -> dict[str, Any]:
        from bench.suite.authored import summarize_authored
        from bench.suite.evaluate import summarize_suites
        from bench.suite.reverse import summarize_reverse

        reverse = self.experiment.mode == "reverse"
        out = self.run_dir / "suites" / config_dir_name(av.name)
        out.mkdir(parents=True, exist_ok=True)
        arm = av.arm
        reads_truth = bool(getattr(self._agent(arm), "uses_ground_truth", False))
        record = {"name": av.name, "mode": self.experiment.mode, "arm": arm.name, "view": av.view, "agent": arm.agent,
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
        summary = summarize(rows, self.dataset.card.name, hashlib.sha256(lines.encode()).hexdigest())
        summary["config"] = av.name
        write_atomic(out / f"{prefix}_summary.json", json.dumps(summary, indent=2) + "\n")
        return summary

    def _suite_report(self) -> list[str]:
        from bench.suite.report import render_suite_report

        text = render_suite_report(self.run_dir / "suites",
                                   title=f"req2test run: {self.plan.name} ({self.experiment.mode} mode)")
        path = self.run_dir / "report.md"
        path.write_text(text, encoding="utf-8")
        return [str(path)]

    # -- report
    def _report(self) -> list[str]:
        try:
            from bench.report import build_report, render_html, render_markdown
            from bench.runs import load_configs
        except ImportError:
            return []
        from bench.explorer import write_instance_pages

        configs = load_configs(self.run_dir)
        report = build_report(configs, title=f"req2test run: {self.plan.name}")
        links = write_instance_pages(configs, self.run_dir)
        (self.run_dir / "report.md").write_text(render_markdown(report), encoding="utf-8")
        (self.run_dir / "report.html").write_text(render_html(report, links), encoding="utf-8")
        return [str(self.run_dir / "report.md"), str(self.run_dir / "report.html")]


# ----------------------------------------------------------------------------- helpers
def _ordered(ids: list[str], order: dict[str, int]) -> list[str]:
    return sorted(ids, key=lambda i: order.get(i, 0))


def _journal(path: Path) -> dict[str, Prediction]:
    """A candidate journal's predictions (a torn tail of a kill: that unit runs again)."""
    return Journal(path, Prediction, key=lambda prediction: prediction.instance_id, strict=False, repair=False).done


def _selection_journal(path: Path) -> dict[str, dict[str, Any]]:
    return {str(record["instance_id"]): record for record in read_dicts(path) if "instance_id" in record}


def _selection_costs(gen_dir: Path, selector: str | None) -> dict[str, tuple[float, int]]:
    if selector is None:
        return {}
    return {i: (r.get("cost_usd") or 0.0, r.get("calls") or 0)
            for i, r in _selection_journal(gen_dir / f"selection-{selector}.jsonl").items()}


def _summed(chosen: Prediction, everything: list[Prediction], selector: str, k: int,
            selection: tuple[float, int]) -> Prediction:
    """A best-of-n pick costs all n generations plus the selection: its metadata says so."""
    metas = [p.metadata or GenerationMetadata() for p in everything]
    base = chosen.metadata or GenerationMetadata()
    costs = [m.cost_usd for m in metas]
    total_cost = None if all(c is None for c in costs) else round(sum(c or 0.0 for c in costs) + selection[0], 8)
    meta = base.model_copy(update={
        "wall_seconds": round(sum(m.wall_seconds or 0.0 for m in metas), 3),
        "llm_calls": sum(m.llm_calls or 0 for m in metas) + selection[1],
        "input_tokens": sum(m.input_tokens or 0 for m in metas),
        "output_tokens": sum(m.output_tokens or 0 for m in metas),
        "cached_tokens": sum(m.cached_tokens or 0 for m in metas),
        "cost_usd": total_cost,
        "extra": {**base.extra, "candidate": k, "selector": selector, "candidates": len(everything),
                  "selection_cost_usd": selection[0]}})
    return chosen.model_copy(update={"metadata": meta})


def _with_extra_cost(prediction: Prediction, cost: float, calls: int, label: str) -> Prediction:
    meta = prediction.metadata or GenerationMetadata()
    meta = meta.model_copy(update={
        "cost_usd": None if meta.cost_usd is None and not cost else round((meta.cost_usd or 0.0) + cost, 8),
        "llm_calls": (meta.llm_calls or 0) + calls, "extra": {**meta.extra, label: cost}})
    return prediction.model_copy(update={"metadata": meta})


def _headline(run_dir: Path, record: ConfigRecord) -> dict[str, Any]:
    summary = json.loads((run_dir / "configs" / config_dir_name(record.name) / "summary.json").read_text())
    return {"config": record.name, "summary": summary}


def _resumable(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without what a rerun may change: the run's budget (raised to continue a run)."""
    copy = json.loads(json.dumps(plan))
    copy.get("experiment", {}).get("limits", {}).pop("max_run_cost", None)
    return copy


def run_experiment(path: Path, run_dir: Path | None = None, executor: str | None = None,
                   progress: Progress | None = None, instances: list[str] | None = None,
                   limit: int | None = None) -> RunOutcome:
    """``instances``/``limit``: run only these of the file's selection, or its first ``limit``."""
    experiment, plan, dataset = prepare(path)
    if instances:
        unknown = [i for i in instances if i not in plan.instances]
        if unknown:
            raise ExperimentError(f"--instance {unknown[0]!r} is not among the experiment's "
                                  f"{len(plan.instances)} selected instances")
        plan = plan.model_copy(update={"instances": [i for i in plan.instances if i in set(instances)]})
    if limit is not None:
        plan = plan.model_copy(update={"instances": plan.instances[:limit]})
    text = path.read_text(encoding="utf-8")  # prepare() validated it; the run keeps a verbatim copy
    run_dir = run_dir or Path("runs") / experiment.name
    return ExperimentRunner(experiment, plan, dataset, run_dir, executor, progress).run(text)
