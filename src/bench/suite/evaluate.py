"""Scoring generated suites, one prediction per feature file (``req2test run`` with ``mode: suite``).

A suite prediction holds step definitions for every scenario of one feature. Each of the
feature's scenarios is judged by the same verdict process as a single-scenario prediction
(``bench.frameworks.behave.verdict``: sandboxed, screened, clean runs cross-checked, kills reproduced and
replayed in fresh processes), with two differences:

- the mutants that count are the suite's requirement-targeted mutants
  (``bench.suite.targets``), for every scenario of the suite: a valid scenario may kill any
  target of its feature. A random handful of the scenarios' other reached mutants is mixed
  in, so the runs that count are not the only mutant runs;
- validity replaces the stage ladder: a scenario is *valid* when the judge passes it (the
  traced run and at least four null-variant runs, all on the real code, agreed), *flaky* when
  its clean runs disagreed (``unstable``), otherwise *failing*.

**Unimplemented scenarios** (a step without a definition, or no prediction at all) count as
generated and failing: validity is over all of the feature's scenarios, so a suite cannot
raise its validity by leaving the hard scenarios out. They are listed apart.

``suite_results.jsonl`` is a journal (one finished suite a line): an interrupted run resumes.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from bench import journal, stopping
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.evaluate import (
    EvaluateOptions,
    EvaluationError,
    ProjectJudging,
    check_run_config,
    ground_truth_files,
    load_predictions,
    prepare_run,
)
from bench.model import NO_PREDICTION, Frozen, GenerationMetadata, GoldTest, Outcome, Prediction
from bench.progress import Progress
from bench.suite.instances import SuiteInstance, suite_instances
from bench.suite.metrics import (
    Correlation,
    MutationScore,
    Stability,
    SuiteSize,
    Validity,
    mutation_score,
    spec_length_correlation,
    suite_size,
    validity_of,
)

CAMOUFLAGE = 20  # other reached mutants mixed into each scenario's pool
JUDGE_CLEAN_RUNS = 3  # a pass needs the traced run + >= 2 null variants per batch to agree: >= 3 (k)


class ScenarioVerdict(Frozen):
    instance_id: str
    outcome: Outcome
    detail: str = ""
    stability: Stability
    unimplemented: bool = Field(False, description="a step had no definition (or the suite was not delivered)")
    kills: list[str] = Field(default_factory=list, description="targets this scenario killed (reproduced)")
    clean_runs: int = Field(0, description="null-variant runs on the real code besides the traced run")


class SuiteResult(Frozen):
    suite_id: str
    project: str
    feature_file: str
    detail: str = Field("", description="why the suite was not run (generation failure), else empty")
    scenarios: list[ScenarioVerdict]
    unimplemented: list[str]
    validity: Validity
    mutation: MutationScore
    size: SuiteSize
    specification_words: int
    evaluation_seconds: float
    metadata: GenerationMetadata | None = None


def evaluate_suites(dataset_dir: Path, predictions_path: Path, run_dir: Path,
                    options: EvaluateOptions | None = None, suites: list[str] | None = None,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Judge every suite (or those in ``suites``) and write ``suite_results.jsonl`` and
    ``suite_summary.json`` to ``run_dir``; returns the summary."""
    def judge(dataset: Dataset, todo: list[SuiteInstance], predictions: dict[str, Prediction],
              problems: dict[str, str], options: EvaluateOptions, append: Any) -> None:
        judge_suites(dataset, todo, predictions, problems, options, append, progress)

    return journaled_suite_run("suite", SuiteResult, judge, summarize_suites, dataset_dir, predictions_path,
                               run_dir, options or EvaluateOptions(), suites, progress)


def journaled_suite_run(prefix: str, model: Any, judge: Any, summarize: Any, dataset_dir: Path,
                        predictions_path: Path, run_dir: Path, options: EvaluateOptions, suites: list[str] | None,
                        progress: Progress | None) -> dict[str, Any]:
    """The run flow suite mode and the reverse task share: open the run, check the run directory
    holds this run, judge what its journal (``<prefix>_results.jsonl``) lacks, summarize all of it
    into ``<prefix>_summary.json``. ``judge(dataset, todo, predictions, problems, options, append)``
    appends one result per suite."""
    stopping.begin_run()
    dataset, predictions, problems, digest, planned = open_suite_run(dataset_dir, predictions_path, suites)
    run_dir = prepare_run(options, run_dir)
    check_run_config(run_dir, dataset, digest, options, file=f"{prefix}_run.json", kind=f"{prefix} run",
                     results=f"{prefix}_results.jsonl")
    results = journal.Journal(run_dir / f"{prefix}_results.jsonl", model, key=lambda r: r.suite_id)
    todo = [s for s in planned if s.id not in results.done]
    if progress is not None:
        progress.stage(f"evaluating {'implementations' if prefix == 'reverse' else 'suites'}",
                       sum(len(s.scenarios) for s in todo))
    def append(result: Any) -> None:
        stopping.check()  # a suite cut short by an interrupt is not judged: the rerun judges it
        results.append(result)

    if todo:
        judge(dataset, todo, predictions, problems, options, append)
    finished = [results.done[s.id] for s in planned]
    summary = summarize(finished, dataset.card.name, digest)
    summary["isolation"] = options.isolation
    (run_dir / f"{prefix}_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def open_suite_run(dataset_dir: Path, predictions_path: Path, suites: list[str] | None
                   ) -> tuple[Dataset, dict[str, Prediction], dict[str, str], str, list[SuiteInstance]]:
    """The dataset, the suite predictions (checked against its suites), format problems, the
    predictions file's digest and the suites to judge, for a suite or reverse evaluation."""
    try:
        dataset = load_dataset(dataset_dir)
    except DatasetError as exc:
        raise EvaluationError(str(exc)) from exc
    predictions, problems, digest = load_predictions(predictions_path)
    everything = {s.id: s for s in suite_instances(dataset)}
    unknown = sorted((set(predictions) | set(problems)) - set(everything))
    if unknown:
        raise EvaluationError(f"{len(unknown)} prediction(s) name suites the dataset does not have, e.g. "
                              f"{unknown[0]} (a suite id is PROJECT/FEATURE_FILE; `req2test suites` lists them)")
    missing = [s for s in suites or [] if s not in everything]
    if missing:
        raise EvaluationError(f"no suite {missing[0]!r} in {dataset.root}")
    planned = [everything[s] for s in suites] if suites else list(everything.values())
    return dataset, predictions, problems, digest, planned


class SuiteJudges:
    """What judging a run's suites shares: the gold, the random source of the camouflage, a
    scratch directory, the thread pool (``options.workers`` scenario judgements at a time) and one
    ProjectJudging per project, built on first need. ``authored``: the judges admit feature files
    under each project's authored directory (the documentation ablation)."""

    def __init__(self, dataset: Dataset, options: EvaluateOptions, tmp: Path, pool: ThreadPoolExecutor,
                 authored: Callable[[str], str] | None = None) -> None:
        self.dataset, self.options, self.tmp, self.pool = dataset, options, tmp, pool
        self.gold = dataset.load_gold()
        self.rng = random.Random(options.seed) if options.seed is not None else random.SystemRandom()
        self.authored = authored  # features_dir -> the authored directory, or None
        self._judgings: dict[str, ProjectJudging] = {}

    def judging(self, project: str) -> ProjectJudging:
        if project not in self._judgings:
            features_dir = self.dataset.project(project).features_dir
            self._judgings[project] = ProjectJudging(
                self.dataset, project, self.gold, self.options, self.tmp, ground_truth_files(self.gold),
                authored_dir=self.authored(features_dir) if self.authored is not None else None)
        return self._judgings[project]

    def admit(self, suite: SuiteInstance, predictions: dict[str, Prediction],
              problems: dict[str, str]) -> tuple[Prediction | None, str | None]:
        """The suite's prediction and why it cannot be run (None: it can)."""
        prediction = predictions.get(suite.id)
        problem = problems.get(suite.id) or (None if prediction is not None else NO_PREDICTION)
        if problem is None and prediction is not None:
            problem, _ = self.judging(suite.project).rejections(prediction)
        return prediction, problem


@contextmanager
def suite_judges(dataset: Dataset, options: EvaluateOptions, prefix: str,
                 authored: Callable[[str], str] | None = None) -> Iterator[SuiteJudges]:
    with tempfile.TemporaryDirectory(prefix=f"req2test-{prefix}-") as tmp, \
            stopping.StoppablePool(max_workers=max(1, options.workers)) as pool:
        yield SuiteJudges(dataset, options, Path(tmp), pool, authored)


def judge_suites(dataset: Dataset, todo: list[SuiteInstance], predictions: dict[str, Prediction],
                 problems: dict[str, str], options: EvaluateOptions, done: Any, progress: Progress | None = None) -> None:
    """Judge each suite's scenarios (``options.workers`` scenario judgements at a time); ``done``
    receives each finished SuiteResult."""
    by_id = {i.id: i for i in dataset.instances}
    with suite_judges(dataset, options, "suite") as judges:
        for suite in todo:
            started = time.monotonic()
            prediction, problem = judges.admit(suite, predictions, problems)
            if problem is not None:
                verdicts = [ScenarioVerdict(instance_id=s, outcome=Outcome.generation_failure, detail=problem,
                                            stability="failing", unimplemented=True) for s in suite.scenarios]
                if progress is not None:
                    for _ in suite.scenarios:
                        progress.advance()
            else:
                assert prediction is not None
                targets = [t.mutant for t in suite.targets] if options.mutants else []
                futures = [judges.pool.submit(_judge_scenario, judges.judging(suite.project), by_id[s], prediction,
                                              judges.gold[s], targets, judges.rng) for s in suite.scenarios]
                verdicts = []
                for future in futures:
                    verdicts.append(stopping.result(future))
                    if progress is not None:
                        progress.advance()
            done(score_suite_result(suite, verdicts, problem or "", time.monotonic() - started,
                                    prediction.metadata if prediction is not None else None,
                                    mutants=options.mutants))


def _judge_scenario(judging: ProjectJudging, inst: Any, prediction: Prediction, gold: GoldTest, targets: list[str],
                    rng: random.Random) -> ScenarioVerdict:
    """One scenario of a suite, judged with the suite's targets as the kills that count."""
    others = sorted(set(gold.pool) - set(targets))
    camouflage = rng.sample(others, min(CAMOUFLAGE, len(others)))
    suite_gold = gold.model_copy(update={"kills": sorted(targets), "pool": sorted(set(targets) | set(camouflage)),
                                         "assertion_dependent": [], "hidden_kills": []})
    judgement = judging.judge(inst, Prediction(instance_id=inst.id, files=prediction.files), suite_gold)
    stability = stability_of(judgement.outcome)
    unimplemented = judgement.outcome is Outcome.binding_failure and (
        "undefined" in judgement.detail or "step_pending" in judgement.detail)
    clean = int(judgement.confirmation.get("clean_runs", 0))
    return ScenarioVerdict(instance_id=inst.id, outcome=judgement.outcome, detail=judgement.detail[:300],
                           stability=stability, unimplemented=unimplemented,
                           kills=sorted(set(judgement.kills) & set(targets)) if stability == "valid" else [],
                           clean_runs=clean)


def stability_of(outcome: Outcome) -> Stability:
    """A judged scenario's validity label: the judge passed it (every clean run agreed), its clean
    runs disagreed (unstable), or anything else."""
    return "valid" if outcome is Outcome.passed else "flaky" if outcome is Outcome.unstable else "failing"


def score_suite_result(suite: SuiteInstance, verdicts: list[ScenarioVerdict], detail: str, seconds: float,
                       metadata: GenerationMetadata | None, mutants: bool = True) -> SuiteResult:
    """The suite's metrics from its scenarios' verdicts (pure; unit-tested on hand-made verdicts).
    Without mutant runs the mutation score is undefined (None), not 0."""
    checked = validity_of({v.instance_id: v.stability for v in verdicts}, JUDGE_CLEAN_RUNS)
    kills = {v.instance_id: v.kills for v in verdicts}
    implemented = sum(1 for v in verdicts if not v.unimplemented)
    return SuiteResult(suite_id=suite.id, project=suite.project, feature_file=suite.feature_file, detail=detail,
                       scenarios=verdicts, unimplemented=sorted(v.instance_id for v in verdicts if v.unimplemented),
                       validity=checked,
                       mutation=mutation_score([t.mutant for t in suite.targets] if mutants else [], kills,
                                               checked.valid_ids),
                       size=suite_size(implemented, len(suite.scenarios)),
                       specification_words=suite.specification_words,
                       evaluation_seconds=round(seconds, 3), metadata=metadata)


def summarize_suites(results: list[SuiteResult], dataset_name: str, predictions_sha256: str) -> dict[str, Any]:
    """Means over suites, pooled shares and the specification-length correlations."""
    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(sum(present) / len(present), 4) if present else None

    scenarios = sum(r.validity.generated for r in results)
    targets = sum(r.mutation.targets for r in results)
    lengths = {r.suite_id: float(r.specification_words) for r in results}
    correlation_mutation: Correlation = spec_length_correlation(lengths, {r.suite_id: r.mutation.value
                                                                          for r in results})
    correlation_validity: Correlation = spec_length_correlation(lengths, {r.suite_id: r.validity.value
                                                                          for r in results})
    return {
        "dataset": dataset_name, "predictions_sha256": predictions_sha256, "mode": "suite",
        "suites": len(results), "scenarios": scenarios,
        "validity_mean": mean([r.validity.value for r in results]),
        "validity_pooled": round(sum(r.validity.valid for r in results) / scenarios, 4) if scenarios else None,
        "flaky": sum(r.validity.flaky for r in results),
        "unimplemented": sum(len(r.unimplemented) for r in results),
        "infrastructure_failures": sum(1 for r in results for v in r.scenarios
                                       if v.outcome is Outcome.infrastructure_failure),
        "mutation_score_mean": mean([r.mutation.value for r in results]),
        "mutation_score_pooled": round(sum(r.mutation.killed for r in results) / targets, 4) if targets else None,
        "targets": targets, "suites_with_targets": sum(1 for r in results if r.mutation.targets),
        "killed_only_by_invalid": sum(len(r.mutation.killed_only_by_invalid) for r in results),
        "size_ratio_mean": mean([r.size.ratio for r in results]),
        "spearman_length_mutation": correlation_mutation.model_dump(),
        "spearman_length_validity": correlation_validity.model_dump(),
        "cost_usd": round(sum((r.metadata.cost_usd or 0.0) for r in results if r.metadata), 6),
        "evaluation_seconds": round(sum(r.evaluation_seconds for r in results), 1),
    }
