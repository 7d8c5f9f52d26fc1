"""``req2test run EXPERIMENT.yaml``: arms × views × instances × n candidates → generation → evaluation →
selection → one directory per reported configuration → report.

Resumable by construction: every generated candidate is an fsynced line of its candidate journal
(``generations/<arm>@<view>/c<k>/predictions.jsonl``) written as the unit finishes; evaluations resume from
the evaluator's own journal and land in a content-addressed cache; selections are journaled per instance.
A rerun after a kill -9 redoes only the units that were in flight.

This module is the orchestrator: ``ExperimentRunner`` claims the run directory, starts the run's provider
and executor, hands each arm × view × epoch to its mode's module and writes the report. The work is in
``plan`` (the resolved experiment, its units' options and cache keys), ``providers`` (the run's scripted
provider, the models arms talk to), ``costs`` (budget, counters, what a configuration is charged),
``journal`` (the run directory and what a rerun keeps), ``progress`` (the display), ``scenario``,
``evaluation``, ``selection`` and ``configs`` (scenario mode), ``suites`` (suite and reverse mode) and
``takeover`` (takeover mode). The names callers import from here are re-exported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench import stopping
from bench.dataset import Dataset
from bench.model import Prediction
from bench.runs import ConfigRecord
from harness.experiment.concurrency import Concurrency, resolve_concurrency, with_evaluation_workers
from harness.experiment.config import Arm, Experiment, ExperimentError
from harness.experiment.configs import headline, report
from harness.experiment.costs import BudgetReached, RunCosts
from harness.experiment.journal import claim_run_dir
from harness.experiment.plan import (
    ArmView,
    CacheKeys,
    ExperimentPlan,
    arm_options,
    prepare,
    prerequisite_closure,
    topological_levels,
)
from harness.experiment.progress import RunProgress
from harness.experiment.providers import OFFLINE_KEY, RunProvider
from harness.experiment.scenario import run_scenario_arm
from harness.experiment.suites import run_suite_arm, suite_report
from harness.generate import GenerateOptions

__all__ = ["OFFLINE_KEY", "ArmView", "BudgetReached", "ExperimentPlan", "ExperimentRunner", "RunOutcome",
           "RunProgress", "prepare", "prerequisite_closure", "run_experiment", "topological_levels"]


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
    """One prepared experiment run in one run directory (a rerun in the same directory resumes it).

    What the mode modules share: ``keys`` (cache keys), ``costs`` (budget, counters), ``provider`` (the
    run's own provider while it runs), ``progress`` and ``options(arm, view)``."""

    def __init__(self, experiment: Experiment, plan: ExperimentPlan, dataset: Dataset, run_dir: Path,
                 executor_spec: str | None = None, progress: RunProgress | None = None,
                 log: Callable[[str], None] | None = None, concurrency: Concurrency | None = None) -> None:
        """``concurrency``: what --workers settled (``resolve_concurrency``); else the file's, or ``executor_spec``."""
        self.concurrency = concurrency or resolve_concurrency(experiment, executor_spec)
        self.experiment = with_evaluation_workers(experiment, self.concurrency)
        self.plan = plan.model_copy(update={"concurrency": self.concurrency})  # recorded in plan.json
        self.dataset = dataset
        self.run_dir = run_dir.resolve()
        self.executor_spec = self.concurrency.executor
        self.progress = progress or RunProgress(False)
        self.log = log or (lambda message: None)
        self.depends_on = {inst.id: list(inst.depends_on) for inst in dataset.instances}
        self.costs = RunCosts(experiment.limits.max_run_cost, self.progress)
        script = Path(plan.file).parent / experiment.provider.script if experiment.provider is not None else None
        self.provider = RunProvider(script, log_path=self.run_dir / "provider-requests.jsonl")
        self.keys = CacheKeys(self.experiment, self.plan)

    def run(self, text: str) -> RunOutcome:
        from harness.experiment.executors import make_executor

        started = time.monotonic()
        stopping.begin_run()
        claim_run_dir(self.run_dir, self.plan, text)
        self.provider.start()
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
                            suite_summaries.append(run_suite_arm(self, av, executor))
                        else:
                            records += run_scenario_arm(self, av, executor)
        finally:
            executor.close()
            self.provider.stop()
            self.progress.close()
        if self.experiment.mode == "takeover":
            from harness.experiment.takeover import takeover_report

            reported = takeover_report(self)
        else:
            reported = suite_report(self) if self.experiment.mode != "scenario" else report(self)
        return RunOutcome(run_dir=str(self.run_dir), configs=[headline(self.run_dir, r) for r in records],
                          generated=self.generated, cached=self.cached, seconds=round(time.monotonic() - started, 1),
                          report=reported, suites=suite_summaries)

    def options(self, arm: Arm, view: str) -> GenerateOptions:
        """What the units of ``arm`` in ``view`` run with (the run's provider, once started, included)."""
        return arm_options(self.experiment, arm, view, self.provider.api_base)

    @property
    def generated(self) -> int:
        return self.costs.generated

    @property
    def cached(self) -> int:
        return self.costs.cached

    # -- what takeover.py calls the runner's
    def _options(self, arm: Arm, view: str) -> GenerateOptions:
        return self.options(arm, view)

    def _check_budget(self) -> None:
        self.costs.check_budget()

    def _count_done(self, prediction: Prediction, fresh: bool = False) -> None:
        self.costs.count_done(prediction, fresh)

    @property
    def _bench_hash(self) -> str:
        return self.keys.bench_hash


def run_experiment(path: Path, run_dir: Path | None = None, executor: str | None = None,
                   progress: RunProgress | None = None, instances: list[str] | None = None,
                   limit: int | None = None, workers: int | None = None) -> RunOutcome:
    """``instances``/``limit``: run only these of the file's selection, or its first ``limit``; ``executor`` and
    ``workers`` (N ≥ 1, 0 = one per core): override the file's concurrency (``resolve_concurrency``)."""
    experiment, plan, dataset = prepare(path)
    concurrency = resolve_concurrency(experiment, executor, workers)
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
    return ExperimentRunner(experiment, plan, dataset, run_dir, progress=progress, concurrency=concurrency).run(text)
