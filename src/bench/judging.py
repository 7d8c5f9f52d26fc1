"""What every framework's judge shares: the options of an evaluation, the typed verdict of a
run, the trace a judge measured, the judgement it returns, and the ``Judge`` interface.

Framework-neutral by construction: nothing here knows a runner. ``bench.evaluate`` turns a
``Judgement`` into an ``InstanceResult`` the same way for every framework; each framework's
``Judge`` (``Framework.judge``) decides how a prediction runs and what it killed.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.cores import cores
from bench.model import FailureDetail, GoldTest, Instance, Outcome, Prediction, ProjectRecord


@dataclass
class EvaluateOptions:
    workers: int = field(default_factory=cores)
    timeout: float = 600.0
    instances: list[str] | None = None
    resamples: int = 2000
    mutants: bool = True
    isolation: str = "auto"  # auto | bwrap | none (see bench.isolation)
    replays: int = 5  # fresh-process replays confirming each KillComplete claim (0: none)
    seed: int | None = None  # run order of verdict runs; None: fresh randomness per evaluation
    # production in a behaviour-preserving rewrite of its own per evaluation (bench.mutation.diversify),
    # and equivalent variants where null runs were: change detectors fail their own clean runs
    diversify: bool = True
    # verdict runs of one judgement at once (frameworks whose every run is a fresh process: cucumber-js);
    # 0: the cores the workers leave each judgement (2 cores, 1 worker: 2)
    run_slots: int = 0


class RunVerdict(StrEnum):
    """What one run of a test under one variant (a mutant, an equivalent variant, or none) showed.

    A ``StrEnum``: records and journals keep the plain strings they always held."""

    survived = "survived"  # every selected scenario passed
    killed = "killed"  # a step failed
    timeout = "timeout"  # the run's budget ran out
    infra_no_step = "infra_no_step"  # no step ran (the runner could not load with the variant)
    crashed = "crashed"  # the run's process died without a result
    fallback = "fallback"  # the warm swap could not place the variant: a fresh process decides


# a run that ends any of these ways detects the variant
DETECTED: frozenset[RunVerdict] = frozenset(
    {RunVerdict.killed, RunVerdict.timeout, RunVerdict.infra_no_step, RunVerdict.crashed})
EQUIVALENT_PREFIX = "eq-"  # ids of equivalent variants (every framework's equivalents)


def equivalent_count(mutants: int) -> int:
    """Equivalent variants mixed into a batch of ``mutants`` runs: at least 2, one more per 20."""
    return 2 + mutants // 20


# Failed equivalent variants (runs whose production behaves as the original) are decided before
# anything is concluded, the same way by every judge (``retry_plan``, ``decide_retries``).
RETRIED_VARIANTS = 3  # failed variants run again (more failed than this: unstable whatever happens)
VARIANT_RETRIES = 2  # each of them this many times ...
CONTROL_RUNS = 4  # ... beside this many runs of unchanged production, all shuffled
RETRY_BUDGET = 4.0  # with this many times the run's timeout (a busy machine slows every run alike)
PASSING: frozenset[RunVerdict] = frozenset({RunVerdict.survived, RunVerdict.fallback})


class RetryDecision(StrEnum):
    transient = "transient"  # everything passes now: the machine's doing (a timeout under load)
    tampering = "tampering"  # a variant failed every retry, not by a timeout, while every control passed
    unstable = "unstable"  # anything else: a flaky test


def retry_plan(failed: int, rng: random.Random) -> list[int | None]:
    """The retry runs for ``failed`` failed variants, shuffled: each of the first
    ``RETRIED_VARIANTS`` (by its index) ``VARIANT_RETRIES`` times, and ``CONTROL_RUNS`` runs of
    unchanged production (None).

    Why two retries beside four controls: a test that fails at random with probability p fails
    one retry and passes two controls with probability p(1-p)^2 (up to 15 %, at p = 1/3), the very
    pattern of a test that reads the mutant switch; twice beside four, p^2(1-p)^4 (at most 2.2 %).
    A test that tells variants apart fails every retry whatever their number."""
    plan: list[int | None] = [index for index in range(min(failed, RETRIED_VARIANTS)) for _ in range(VARIANT_RETRIES)]
    plan += [None] * CONTROL_RUNS
    rng.shuffle(plan)
    return plan


def decide_retries(plan: list[int | None], verdicts: Sequence[RunVerdict | str], failed: int,
                   first_real: bool) -> tuple[RetryDecision, list[int]]:
    """What the retry runs of ``retry_plan`` showed (``verdicts`` in the plan's order), and the
    indices of the variants that failed every one of their retries, none by a timeout.
    ``first_real``: some first failure was not a timeout (timeouts alone never make tampering)."""
    verdicts = [RunVerdict(v) for v in verdicts]
    controls_pass = all(v in PASSING for index, v in zip(plan, verdicts, strict=True) if index is None)
    again = sorted(index for index in {i for i in plan if i is not None}
                   if all(v not in PASSING and v is not RunVerdict.timeout
                          for i, v in zip(plan, verdicts, strict=True) if i == index))
    if again and controls_pass and first_real:
        return RetryDecision.tampering, again
    if all(v in PASSING for v in verdicts) and failed <= RETRIED_VARIANTS:
        return RetryDecision.transient, []
    return RetryDecision.unstable, again


def spread_among(runs: list[Any], extra: list[Any], rng: random.Random) -> None:
    """Insert ``extra`` into ``runs`` in place: the first in the first half, the second in the
    second half, the rest anywhere (so a test cannot wait out the clean runs)."""
    half = max(1, (len(runs) + 1) // 2)
    positions = [rng.randrange(0, half), rng.randrange(half, len(runs) + 1) if runs else 0]
    positions += [rng.randrange(0, len(runs) + 1) for _ in range(len(extra) - 2)]
    for offset, position in enumerate(sorted(positions)):
        runs.insert(position + offset, extra[offset])


class RunTrace(BaseModel):
    """What the traced clean run measured, in the dataset's terms: the production API keys the
    test called (``GoldTest.api_calls``' vocabulary) and the production lines it covered."""

    api: list[str] = Field(default_factory=list)
    coverage: dict[str, list[int]] = Field(default_factory=dict)


@dataclass
class Judgement:
    """What a judge concluded, before metrics are attached (``bench.evaluate``)."""

    outcome: Outcome
    detail: str = ""
    trace: RunTrace | None = None  # None: no traced run got that far
    kills: set[str] = field(default_factory=set)  # confirmed detections, mutant ids
    timeouts: int = 0
    evidence: list[str] = field(default_factory=list)
    confirmation: dict[str, Any] = field(default_factory=dict)
    fresh_runs: int = 0
    verdicts: dict[str, RunVerdict] = field(default_factory=dict)  # first-batch verdict of every pool mutant
    # why the clean run failed (its step, error, output): the clean run's only, never a mutant run's
    failure: FailureDetail | None = None


@dataclass(frozen=True)
class JudgeContext:
    """Everything a framework's judge of one project is made from."""

    dataset_root: Path
    project: ProjectRecord
    gold: dict[str, GoldTest]
    options: EvaluateOptions
    tmp: Path  # scratch that lives as long as the judge
    gold_files: frozenset[str]  # every ground-truth test file of the dataset: kept off every sandbox's disk
    # judge against this tree instead of the dataset's snapshot: the reverse task's predicted
    # production (untrusted: screened like a test)
    snapshot: Path | None = None
    authored_dir: str | None = None  # the documentation ablation's directory of agent-written features

    @property
    def project_snapshot(self) -> Path:
        return self.snapshot or self.dataset_root / self.project.snapshot


class UnsupportedByFramework(Exception):
    """A task the framework's judge does not implement (one line naming both)."""


class Judge(ABC):
    """Judges one project's predictions (``Framework.judge``); used from several threads."""

    #: the judge measures a traced run: coverage and API calls are scored (else both are None)
    traces: bool = True
    #: a generation failure (no prediction, rejected files) is scored against the instance's
    #: gold (0 where gold has something to find, None where it has nothing); False: 0 everywhere
    failures_scored_by_gold: bool = True

    @abstractmethod
    def rejections(self, files: dict[str, str]) -> list[str]:
        """Why the submission's files cannot be laid out as a test (empty: they can):
        ``Framework.test_area(...).rejections`` plus what only this judge knows."""

    @abstractmethod
    def unusable(self, files: dict[str, str]) -> str | None:
        """Why the (admitted) files hold no test code at all (a generation failure), else None."""

    @abstractmethod
    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        """Run the prediction and decide; may raise (``bench.evaluate`` records an evaluator
        error as an infrastructure failure, never aborts the run)."""

    def prepare(self) -> None:
        """Make what judging needs before any judging thread starts (an environment, a base);
        raises a one-line exception when it cannot. Default: nothing."""
