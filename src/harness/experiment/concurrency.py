"""How much of a run runs at a time: the experiment file's ``executor`` and ``evaluation.workers``, unless
``--executor`` or ``--workers`` on the command line override them.

Its own module because the override has rules (``--workers`` drives the local executor only, and must not
contradict ``--executor local:N``) and because the result is recorded in plan.json (``ExperimentPlan.concurrency``):
a reader of the run sees what ran side by side and what set it. Concurrency changes no result, so it is in no
cache key and a rerun may use another.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bench.cores import per_core
from harness.experiment.config import Experiment, ExperimentError


class Concurrency(BaseModel):
    model_config = ConfigDict(frozen=True)

    executor: str = Field(description="the executor the run's units ran on, e.g. local:4")
    evaluation_workers: int = Field(ge=0, description="evaluator workers per evaluation unit; 0 = one per core")
    workers: int | None = Field(None, description="--workers as given; None: the file's (or --executor's) values")


def resolve_concurrency(experiment: Experiment, executor: str | None = None, workers: int | None = None,
                        generations: bool = True) -> Concurrency:
    """``executor``: --executor (else the file's); ``workers``: --workers, N ≥ 1 or 0 = one per core, for the
    evaluator's workers and, with ``generations``, the local executor's units (generations, evaluations) too.

    The demo passes ``generations=False``: its scripted provider answers in request order, so its generations
    stay one at a time whatever --workers says."""
    spec = (executor or experiment.executor).strip()
    if workers is None:
        return Concurrency(executor=spec, evaluation_workers=experiment.evaluation.workers)
    if generations:
        kind, colon, count = spec.partition(":")
        if kind != "local":
            raise ExperimentError(f"--workers sets the local executor's units at a time; executor {spec!r} is not "
                                  "local: leave --workers out (evaluation.workers in the file sets the evaluator's)")
        units = per_core(workers)
        if executor is not None and colon and count.strip() != str(units):
            raise ExperimentError(f"--executor {executor} and --workers {workers} disagree: give one of them")
        spec = "local" if units == 1 else f"local:{units}"
    return Concurrency(executor=spec, evaluation_workers=workers, workers=workers)


def with_evaluation_workers(experiment: Experiment, concurrency: Concurrency) -> Experiment:
    """The experiment as the run's stages read it: its evaluator workers the ones ``concurrency`` settled."""
    if experiment.evaluation.workers == concurrency.evaluation_workers:
        return experiment
    evaluation = experiment.evaluation.model_copy(update={"workers": concurrency.evaluation_workers})
    return experiment.model_copy(update={"evaluation": evaluation})
