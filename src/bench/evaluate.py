"""``req2test evaluate``: score generated test implementations against the ground truth.

Each prediction runs with the project's native runner against the complete production
code in a workspace that holds only the shared test infrastructure plus the predicted
files, judged by the project's framework (``Framework.judge``): the first failing stage, then
for a passing test the ground truth's kills it reproduces (MutRecall, KillComplete), its API
calls and coverage. Metrics are computed here, the same way for every framework.

The run directory is a journal: ``results.jsonl`` is appended one finished instance at a
time (flushed and fsynced), so an interrupted run resumes where it stopped and never
recomputes a finished instance.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench import journal, stopping
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.errors import UserError
from bench.frameworks.registry import get_framework
from bench.isolation import IsolationError, resolve_mode
from bench.judging import EvaluateOptions, Judge, JudgeContext, Judgement, RunTrace, UnsupportedByFramework
from bench.model import INVALID_SUBMISSION, NO_PREDICTION, GoldTest, Instance, InstanceResult, Outcome, Prediction
from bench.progress import Progress
from bench.summary import summarize_run

__all__ = ["EvaluateOptions", "EvaluationError", "ProjectJudging", "UnsupportedByFramework", "evaluate",
           "ground_truth_files", "load_predictions", "prepare_run"]


class EvaluationError(UserError):
    """A user-facing problem (bad predictions file, run dir of another run); one line."""




# ----------------------------------------------------------------------------- predictions
def load_predictions(path: Path) -> tuple[dict[str, Prediction], dict[str, str], str]:
    """Predictions by instance id, format problems by instance id, and the file's sha256."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"{path}: no such predictions file")
    raw = path.read_bytes()
    predictions: dict[str, Prediction] = {}
    problems: dict[str, str] = {}
    if raw.lstrip().startswith(b"["):
        raise EvaluationError(f"{path}: a JSON array; predictions are JSONL, one JSON object per line "
                              f"(convert with: jq -c '.[]' {path} > predictions.jsonl)")
    for number, encoded in enumerate(raw.splitlines(), 1):
        try:
            line = encoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            # Replacing the bytes would score a file the author never wrote; say where it broke.
            raise EvaluationError(f"{path}:{number}: not UTF-8 (byte {exc.start + 1} of the line: "
                                  f"{encoded[exc.start:exc.start + 1]!r})") from None
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or a plain ValueError (an integer beyond int's digit limit)
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise EvaluationError(f"{path}:{number}: not JSON ({why})") from None
        if isinstance(data, list):
            raise EvaluationError(f"{path}:{number}: a JSON array; predictions are JSONL, one JSON object per line")
        if not isinstance(data, dict) or not isinstance(data.get("instance_id"), str):
            raise EvaluationError(f"{path}:{number}: a prediction needs a string instance_id")
        instance_id = data["instance_id"]
        if instance_id in predictions or instance_id in problems:
            raise EvaluationError(f"{path}:{number}: second prediction for {instance_id} (one per instance)")
        try:
            predictions[instance_id] = Prediction.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            problems[instance_id] = INVALID_SUBMISSION + (
                "a SWE-bench-style line (model_patch); a req2test prediction is "
                '{"instance_id": ..., "files": {"path": "content"}} (req2test schema prediction)'
                if "model_patch" in data else f"{'.'.join(map(str, err['loc']))}: {err['msg']}")
    return predictions, problems, hashlib.sha256(raw).hexdigest()


# ----------------------------------------------------------------------------- metrics
def f1(generated: set[str], truth: set[str]) -> float:
    if not generated and not truth:
        return 1.0
    return 2 * len(generated & truth) / (len(generated) + len(truth))


def jaccard(a: set[tuple[str, int]], b: set[tuple[str, int]]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def recall(found: set[str], truth: set[str]) -> float | None:
    return len(found & truth) / len(truth) if truth else None


def line_set(coverage: dict[str, list[int]]) -> set[tuple[str, int]]:
    return {(f, n) for f, lines in coverage.items() for n in lines}


# ----------------------------------------------------------------------------- the run
class Journal(journal.Journal[InstanceResult]):
    """Append-only results.jsonl (bench.journal): one fsynced line per finished instance."""

    def __init__(self, path: Path) -> None:
        try:
            super().__init__(path, InstanceResult, key=lambda result: result.instance_id)
        except journal.JournalError as exc:
            raise EvaluationError(str(exc)) from None

    def append(self, result: InstanceResult, line: str | None = None) -> None:
        try:
            line = result.model_dump_json()
        except ValueError:  # text a test produced (lone surrogates) must not stop the journal
            result = InstanceResult.model_validate(_clean_text(result.model_dump(mode="python")))
            line = result.model_dump_json()
        super().append(result, line)


def _clean_text(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean_text(k): _clean_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_text(v) for v in value]
    return value


def evaluate(dataset_dir: Path, predictions_path: Path, run_dir: Path, options: EvaluateOptions | None = None,
             progress: Progress | None = None) -> dict[str, Any]:
    options = options or EvaluateOptions()
    stopping.begin_run()
    try:
        dataset = load_dataset(dataset_dir)
    except DatasetError as exc:
        raise EvaluationError(str(exc)) from exc
    predictions, problems, digest = load_predictions(predictions_path)
    planned = _planned(dataset, options.instances)
    unknown = sorted((set(predictions) | set(problems)) - {i.id for i in dataset.instances})
    if unknown:
        raise EvaluationError(f"{len(unknown)} prediction(s) name instances the dataset does not have, "
                              f"e.g. {unknown[0]}")
    run_dir = prepare_run(options, run_dir)
    check_run_config(run_dir, dataset, digest, options)
    keep_predictions(predictions_path, run_dir)
    journal = Journal(run_dir / "results.jsonl")
    gold = dataset.load_gold()
    todo = [inst for inst in planned if inst.id not in journal.done]
    if todo:
        try:
            _evaluate_instances(dataset, gold, predictions, problems, todo, journal, options, progress)
        except KeyboardInterrupt:
            stopping.stop()  # interrupted outside the pool too (an environment, a base): nothing left running
            raise stopping.Interrupted(sum(i.id in journal.done for i in planned), len(planned)) from None
    results = [journal.done[i.id] for i in planned]
    summary = summarize_run(results, dataset_name=dataset.card.name, predictions_sha256=digest,
                            resamples=options.resamples)
    summary["isolation"] = options.isolation
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def keep_predictions(predictions_path: Path, run_dir: Path) -> None:
    """A copy of the scored predictions beside results.jsonl, as an experiment's configuration
    keeps them: the explorer shows each instance's submitted files from it (run.json records
    only their hash)."""
    kept = run_dir / "predictions.jsonl"
    if kept.exists() and (kept.resolve() == Path(predictions_path).resolve()
                          or kept.read_bytes() == Path(predictions_path).read_bytes()):
        return
    staged = kept.with_name(".predictions.jsonl.part")
    shutil.copyfile(predictions_path, staged)
    staged.replace(kept)


def prepare_run(options: EvaluateOptions, run_dir: Path) -> Path:
    """Resolve the isolation mode (a one-line error when it is unavailable) and create ``run_dir``."""
    try:
        options.isolation = resolve_mode(options.isolation)
    except IsolationError as exc:
        raise EvaluationError(str(exc)) from exc
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def _planned(dataset: Dataset, wanted: list[str] | None) -> list[Instance]:
    if not wanted:
        return list(dataset.instances)
    by_id = {i.id: i for i in dataset.instances}
    missing = [w for w in wanted if w not in by_id]
    if missing:
        raise EvaluationError(f"no instance {missing[0]!r} in {dataset.root}")
    return [by_id[w] for w in wanted]


def check_run_config(run_dir: Path, dataset: Dataset, digest: str, options: EvaluateOptions,
                     file: str = "run.json", kind: str = "run", results: str = "results.jsonl") -> None:
    """A run directory holds one run: of this dataset, these predictions, mutants on or off."""
    config = {"dataset": str(dataset.root.resolve()), "dataset_card_sha256": _card_sha(dataset.root),
              "predictions_sha256": digest, "timeout": options.timeout, "mutants": options.mutants,
              "isolation": options.isolation}
    path = run_dir / file
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        for key in ("dataset_card_sha256", "predictions_sha256", "mutants"):
            if previous.get(key) != config[key]:
                raise EvaluationError(f"{run_dir} holds a {kind} of other {key.split('_')[0]}; "
                                      f"use a new run directory")
        return
    if (run_dir / results).exists():
        raise EvaluationError(f"{run_dir} holds results without a {file}; use a new run directory")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _card_sha(root: Path) -> str:
    return hashlib.sha256((root / "dataset.json").read_bytes()).hexdigest()


class ProjectJudging:
    """Judging one project's predictions through its framework's ``Judge``: the submission
    check, the verdict, and an evaluator bug turned into an infrastructure failure. Used by
    ``evaluate`` (one scenario per prediction), the suite evaluator (one suite prediction judged on
    each of its scenarios), the reverse task and the harness's own checks."""

    def __init__(self, dataset: Dataset, project_name: str, gold: dict[str, GoldTest], options: EvaluateOptions,
                 tmp: Path, gold_files: set[str], snapshot: Path | None = None,
                 authored_dir: str | None = None) -> None:
        """``snapshot``: judge against this tree instead of the dataset's (the reverse task's predicted
        production). ``authored_dir``: the documentation ablation's directory of agent-written feature
        files, admitted by the submission check. Raises ``UnsupportedByFramework`` for a task the
        project's framework does not implement."""
        self.project = dataset.project(project_name)
        context = JudgeContext(dataset_root=dataset.root, project=self.project, gold=gold, options=options, tmp=tmp,
                               gold_files=frozenset(gold_files), snapshot=snapshot, authored_dir=authored_dir)
        self.own: Judge = get_framework(self.project.framework).judge(context)
        self.traced = self.own.traces

    def prepare(self) -> None:
        """What judging needs before the first verdict (the project's environment); one line."""
        try:
            self.own.prepare()
        except Exception as exc:  # whatever the framework raises, the run stops with one line
            raise EvaluationError(str(exc)) from exc

    def result_gold(self, gold: GoldTest | None) -> GoldTest | None:
        """The gold a generation failure's result is scored against (None: 0 on every metric)."""
        return gold if self.own.failures_scored_by_gold else None

    def rejections(self, prediction: Prediction) -> tuple[str | None, list[str]]:
        """Why the prediction is a generation failure without running it (None: it can run), and
        the reasons of the paths the submission check rejected (at most 50)."""
        rejected = self.own.rejections(prediction.files)
        if rejected:
            return INVALID_SUBMISSION + rejected[0], rejected[:50]
        return self.own.unusable(prediction.files), []

    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        """The verdict; an evaluator bug becomes an infrastructure failure, never an exception."""
        try:
            return self.own.judge(inst, prediction, gold)
        except Exception as exc:  # noqa: BLE001 - an evaluator bug must not abort the run
            return Judgement(Outcome.infrastructure_failure, f"evaluator error: {type(exc).__name__}: {exc}"[:300])


def ground_truth_files(gold: dict[str, GoldTest]) -> set[str]:
    """Every ground-truth test file of the dataset: kept off every sandbox's disk."""
    return {f.path for g in gold.values() for f in g.closure if f.role != "data"}


def _evaluate_instances(dataset: Dataset, gold: dict[str, GoldTest], predictions: dict[str, Prediction],
                        problems: dict[str, str], todo: list[Instance], journal: Journal,
                        options: EvaluateOptions, progress: Progress | None) -> None:
    """Judge every instance in its own sandboxes; ``options.workers`` instances at a time.

    One prediction never aborts the run: whatever goes wrong while judging it becomes
    that instance's result (bench.frameworks.behave.verdict attributes lost workers), and a bug of the
    evaluator itself is recorded as an infrastructure failure with its reason."""
    by_project: dict[str, list[Instance]] = {}
    for inst in todo:
        by_project.setdefault(inst.project, []).append(inst)
    if progress is not None:
        progress.stage("evaluating", len(todo))
    gold_files = ground_truth_files(gold)
    with tempfile.TemporaryDirectory(prefix="req2test-eval-") as tmp:
        for project_name, instances in by_project.items():
            try:
                judging = ProjectJudging(dataset, project_name, gold, options, Path(tmp), gold_files)
            except UnsupportedByFramework as exc:  # e.g. a framework whose judge does not exist yet: one line
                raise EvaluationError(str(exc)) from exc
            judging.prepare()
            measured = 0.0 if judging.traced else None

            def one(inst: Instance, judging: ProjectJudging = judging, measured: float | None = measured) -> None:
                stopping.check()  # taken from the queue as the run stopped
                prediction = predictions.get(inst.id)
                problem = problems.get(inst.id)
                if problem is not None or prediction is None:
                    result = _empty_result(inst, Outcome.generation_failure, problem or NO_PREDICTION,
                                           judging.result_gold(gold.get(inst.id)), coverage=measured)
                elif (rejection := judging.rejections(prediction))[0] is not None:
                    reason, paths = rejection
                    assert reason is not None  # rejection[0], just tested
                    result = _empty_result(inst, Outcome.generation_failure, reason,
                                           judging.result_gold(gold[inst.id]),
                                           coverage=measured, metadata=prediction.metadata,
                                           **({"rejected_paths": paths} if paths else {}))
                else:
                    started = time.monotonic()
                    judgement = judging.judge(inst, prediction, gold[inst.id])
                    result = _score(inst, prediction, judgement, gold[inst.id], time.monotonic() - started,
                                    traced=judging.traced)
                if stopping.requested():
                    return  # cut short by an interrupt, not judged: the rerun judges it
                journal.append(result)
                if progress is not None:
                    progress.advance()

            # an interrupt cancels the queued instances and ends the judging in flight (bench.stopping)
            with stopping.StoppablePool(max_workers=max(1, options.workers)) as pool:
                for future in [pool.submit(one, inst) for inst in instances]:
                    stopping.result(future)


def _empty_result(inst: Instance, outcome: Outcome, detail: str, gold: GoldTest | None = None,
                  coverage: float | None = 0.0, **extra: Any) -> InstanceResult:
    """A result that scores nothing; ``coverage`` None where the framework measures none."""
    return InstanceResult(instance_id=inst.id, project=inst.project, feature_file=inst.requirement.feature_file,
                          outcome=outcome, detail=detail, api_f1=0.0 if gold is None or gold.api_calls else None,
                          coverage_jaccard=coverage, mutant_recall=0.0 if gold is None or gold.kills else None,
                          kill_complete=False, kill_complete_relaxed=False,
                          assertion_dependent_recall=0.0 if gold is not None and gold.assertion_dependent else None,
                          hidden_recall=0.0 if gold is not None and gold.hidden_kills else None,
                          ground_truth_kills=len(gold.kills) if gold else 0, generated_kills=0,
                          evaluation_seconds=0.0, **extra)


def _score(inst: Instance, prediction: Prediction, judgement: Judgement, gold: GoldTest, seconds: float,
           traced: bool) -> InstanceResult:
    """Calls and coverage as the framework's judge measured them (``Judgement.trace``), or, when
    the judge measures no trace, both None."""
    extra = {"evidence": judgement.evidence, "confirmation": judgement.confirmation, "failure": judgement.failure}
    if judgement.outcome is not Outcome.passed:
        result = _empty_result(inst, judgement.outcome, judgement.detail, gold, metadata=prediction.metadata,
                               coverage=0.0 if traced else None, **extra)
        return result.model_copy(update={"evaluation_seconds": round(seconds, 3)})
    trace = judgement.trace or RunTrace()
    truth_kills = set(gold.kills)
    api = set(trace.api)
    # A generated test that fails under a mutant in any way (assertion, error, timeout) detects it;
    # the verdict process counted only detections that reproduced.
    found = judgement.kills
    mut_recall = recall(found, truth_kills)
    return InstanceResult(
        instance_id=inst.id, project=inst.project, feature_file=inst.requirement.feature_file,
        outcome=judgement.outcome, detail=judgement.detail, ground_truth_kills=len(truth_kills),
        metadata=prediction.metadata,
        api_f1=f1(api, set(gold.api_calls)) if gold.api_calls else None,
        coverage_jaccard=jaccard(line_set(trace.coverage), line_set(gold.covered_lines))
        if traced else None,
        mutant_recall=mut_recall,
        kill_complete=bool(truth_kills) and mut_recall == 1.0,
        kill_complete_relaxed=bool(truth_kills) and (mut_recall or 0.0) >= 0.95,
        assertion_dependent_recall=recall(found, set(gold.assertion_dependent)),
        hidden_recall=recall(found, set(gold.hidden_kills)),
        generated_kills=len(found & truth_kills),
        mutant_timeouts=judgement.timeouts,
        fresh_fallbacks=judgement.fresh_runs,
        generated_api_calls=sorted(api),
        surviving_kills=sorted(truth_kills - found),
        evaluation_seconds=round(seconds, 3),
        **extra,
    )
