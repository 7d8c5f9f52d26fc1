"""``req2test evaluate``: score generated test implementations against the ground truth.

Each prediction runs with the project's native runner against the complete production
code in a workspace that holds only the shared test infrastructure plus the predicted
files. The first failing stage is read from behave's structured results; a passing test
then runs against the ground truth's kills (warm executor) for MutRecall.

The run directory is a journal: ``results.jsonl`` is appended one finished instance at a
time (flushed and fsynced), so an interrupted run resumes where it stopped and never
recomputes a finished instance.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from bench import journal
from bench.builder.closure import TestSide
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.evalspace import build_base
from bench.frameworks.registry import get_framework
from bench.isolation import IsolationError, resolve_mode
from bench.model import INVALID_SUBMISSION, NO_PREDICTION, GoldTest, Instance, InstanceResult, Outcome, Prediction
from bench.mutation.executor import load_manifest
from bench.production_index import ProductionIndex
from bench.summary import summarize_run
from bench.verdict import Judgement, VerdictOptions, judge


class EvaluationError(Exception):
    """A user-facing problem (bad predictions file, run dir of another run); one line."""




@dataclass
class EvaluateOptions:
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
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


# ----------------------------------------------------------------------------- predictions
def load_predictions(path: Path) -> tuple[dict[str, Prediction], dict[str, str], str]:
    """Predictions by instance id, format problems by instance id, and the file's sha256."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"{path}: no such predictions file")
    raw = path.read_bytes()
    predictions: dict[str, Prediction] = {}
    problems: dict[str, str] = {}
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise EvaluationError(f"{path}:{number}: not JSON ({exc.msg})") from None
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


@dataclass(frozen=True)
class TestArea:
    """What a prediction may write: new/changed Python under the features tree, nothing else."""

    __test__ = False

    features_dir: str
    infrastructure_py: frozenset[str]
    protected: frozenset[str]  # existing non-Python files of the features tree (fixtures, features)
    directories: frozenset[str] = frozenset()  # existing directories of the features tree
    runner_config_files: frozenset[str] = frozenset()  # the framework's configuration file names
    # the documentation ablation (bench.suite.authored): new feature files the agent wrote are
    # admitted here, and only here; an existing feature file is never replaced
    authored_dir: str | None = None

    @classmethod
    def of(cls, snapshot: Path, features_dir: str, framework: str = "behave") -> TestArea:
        side = TestSide.scan(snapshot, features_dir)
        entries = list((snapshot / features_dir).rglob("*"))
        protected = frozenset(p.relative_to(snapshot).as_posix() for p in entries
                              if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts)
        directories = frozenset(p.relative_to(snapshot).as_posix() for p in entries if p.is_dir())
        return cls(features_dir, side.infrastructure_py, protected, directories,
                   get_framework(framework).runner_config_files)

    def rejections(self, files: dict[str, str]) -> list[str]:
        """Why the submission's files cannot be laid out as a test (empty: they can)."""
        reasons = self._layout_rejections(files)
        base = PurePosixPath(self.features_dir)
        for raw in files:
            path = PurePosixPath(raw)
            if any(ord(c) < 32 or ord(c) == 127 for c in raw) or not _encodable(raw):
                reasons.append(f"{raw!r}: a control character or undecodable name in a path")
            elif path.is_absolute() or ".." in path.parts or raw != path.as_posix() or raw in ("", "."):
                reasons.append(f"{raw}: not a plain relative path")
            elif raw in self.directories:
                reasons.append(f"{raw}: a directory of the project, not a file")
            elif base not in path.parents:
                kind = "runner configuration" if path.name in self.runner_config_files else "outside the test area"
                reasons.append(f"{raw}: {kind} (only files under {self.features_dir}/ are test code)")
            elif path.suffix == ".feature" and not self._authored(path, raw):
                reasons.append(f"{raw}: feature files are the requirement, not test code" + (
                    f" (authored feature files go under {self.authored_dir}/)" if self.authored_dir else ""))
            elif raw in self.infrastructure_py:
                reasons.append(f"{raw}: shared test infrastructure (hooks) cannot be replaced")
            elif raw in self.protected:
                reasons.append(f"{raw}: shared fixture/test data cannot be replaced")
            elif "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                reasons.append(f"{raw}: bytecode is not test code")
            elif len(raw.encode("utf-8")) > MAX_PATH_BYTES or any(len(p.encode()) > 255 for p in path.parts):
                reasons.append(f"{raw[:80]}…: path too long")
        return reasons

    def _authored(self, path: PurePosixPath, raw: str) -> bool:
        return (self.authored_dir is not None and PurePosixPath(self.authored_dir) in path.parents
                and raw not in self.protected)

    @staticmethod
    def _layout_rejections(files: dict[str, str]) -> list[str]:
        reasons = []
        if len(files) > MAX_FILES:
            reasons.append(f"{len(files)} files (at most {MAX_FILES})")
        names = set(files)
        for raw, content in files.items():
            for parent in PurePosixPath(raw).parents:
                if parent.as_posix() in names:
                    reasons.append(f"{raw}: its directory {parent.as_posix()} is also submitted as a file")
                    break
            if not _encodable(content):
                reasons.append(f"{raw}: content is not valid UTF-8 text (e.g. a lone surrogate)")
            elif len(content.encode("utf-8")) > MAX_FILE_BYTES:
                reasons.append(f"{raw}: larger than {MAX_FILE_BYTES >> 20} MiB")
        return reasons


MAX_FILES = 200
MAX_FILE_BYTES = 1 << 20
MAX_PATH_BYTES = 1024


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


def generated_api(trace: dict[str, Any], index: ProductionIndex) -> set[str]:
    keys = set()
    for calls in trace.get("direct", {}).values():
        for file, line, qualname in calls:
            info = index.lookup(file, line, qualname)
            if info is not None and info.is_public:
                keys.add(info.key)
            elif info is None and qualname.endswith(".__init__"):
                keys.add(f"{file}:{qualname}")  # generated (dataclass) constructor
    return keys


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
             progress: Any = None) -> dict[str, Any]:
    options = options or EvaluateOptions()
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
    journal = Journal(run_dir / "results.jsonl")
    gold = dataset.load_gold()
    todo = [inst for inst in planned if inst.id not in journal.done]
    if todo:
        _evaluate_instances(dataset, gold, predictions, problems, todo, journal, options, progress)
    results = [journal.done[i.id] for i in planned]
    summary = summarize_run(results, dataset_name=dataset.card.name, predictions_sha256=digest,
                            resamples=options.resamples)
    summary["isolation"] = options.isolation
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def prepare_run(options: EvaluateOptions, run_dir: Path) -> Path:
    """Resolve the isolation mode (a one-line error when it is unavailable) and create ``run_dir``."""
    try:
        options.isolation = resolve_mode(options.isolation)  # type: ignore[arg-type]
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
    """Judging one project's predictions: its submission check, its sandbox base (built once,
    on first need) and its judge. Used by ``evaluate`` (one scenario per prediction) and by the
    suite evaluator (one suite prediction judged on each of its scenarios)."""

    def __init__(self, dataset: Dataset, project_name: str, gold: dict[str, GoldTest], options: EvaluateOptions,
                 tmp: Path, gold_files: set[str], snapshot: Path | None = None,
                 authored_dir: str | None = None) -> None:
        """``snapshot``: judge against this tree instead of the dataset's (the reverse task's predicted
        production). ``authored_dir``: the documentation ablation's directory of agent-written feature
        files, admitted by the submission check."""
        self.project = dataset.project(project_name)
        self.dataset, self.tmp, self.gold_files = dataset, tmp, gold_files
        self.options = options
        self.own = get_framework(self.project.framework).evaluation(dataset.root, self.project, gold, options)
        self.traced = bool(getattr(self.own, "traces", False)) if self.own is not None else True
        self.verdict_options = VerdictOptions(timeout=options.timeout, mutants=options.mutants,
                                              replays=options.replays, isolation=options.isolation,
                                              seed=options.seed, untrusted_production=snapshot is not None)
        snapshot = snapshot or dataset.root / self.project.snapshot
        self.snapshot = snapshot
        if self.own is None:
            self.area = replace(TestArea.of(snapshot, self.project.features_dir, self.project.framework),
                                authored_dir=authored_dir)
            self.index: ProductionIndex | None = ProductionIndex(snapshot, self.project.production)
            self.manifest = load_manifest(dataset.root, project_name) if options.mutants else {}
        else:
            self.index, self.manifest = None, {}
        self._base: Any = None
        self._base_lock = threading.Lock()

    def result_gold(self, gold: GoldTest | None) -> GoldTest | None:
        """The gold a generation failure's result is scored against: behave's results have always
        scored such a failure as 0 on every metric (no gold), a framework's own judge by its gold."""
        return gold if self.own is not None else None

    def rejections(self, prediction: Prediction) -> tuple[str | None, list[str]]:
        """Why the prediction is a generation failure without running it (None: it can run), and
        the reasons of the paths the submission check rejected (at most 50)."""
        files = prediction.files
        rejected = self.own.rejections(files) if self.own is not None else self.area.rejections(files)
        if rejected:
            return INVALID_SUBMISSION + rejected[0], rejected[:50]
        if self.own is not None:
            if not any(content.strip() for content in files.values()):
                return "no usable test code (no non-empty file)", []
        elif not any(path.endswith(".py") and content.strip() for path, content in files.items()):
            return "no usable test code (no non-empty .py file)", []
        return None, []

    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        """The verdict; an evaluator bug becomes an infrastructure failure, never an exception."""
        try:
            if self.own is not None:
                return self.own.judge(inst, prediction, gold)
            return judge(inst, prediction, gold, self.manifest, self.base(), self.tmp, self.verdict_options)
        except Exception as exc:  # noqa: BLE001 - an evaluator bug must not abort the run
            return Judgement(Outcome.infrastructure_failure, f"evaluator error: {type(exc).__name__}: {exc}"[:300])

    def base(self) -> Any:
        with self._base_lock:  # judged from several threads; built once
            return self._build_base()

    def _diversify_seed(self) -> int | None:
        """A fresh seed per evaluation session (a fixed one derived from ``seed`` when given)."""
        if not self.options.diversify:
            return None
        from bench.mutation.diversify import session_seed

        return session_seed(self.options.seed)

    def _python(self) -> str:
        """The interpreter of the project's own environment (made here on first need from the
        requirements its card records), else this one."""
        if not self.project.environment:
            return sys.executable
        from bench.environments import EnvironmentSetupError, ensure_environment

        try:
            return str(ensure_environment(self.project.environment))
        except EnvironmentSetupError as exc:
            raise EvaluationError(f"{self.project.name}: {exc}") from exc

    def _build_base(self) -> Any:
        if self._base is None:
            project = self.project
            self._base = build_base(self.snapshot, self.tmp / f"base-{_safe(project.name)}", project.features_dir,
                                    project.python_path, project.production, self.area.infrastructure_py,
                                    self.gold_files, project.framework, diversify_seed=self._diversify_seed(),
                                    python=self._python())
        return self._base


def ground_truth_files(gold: dict[str, GoldTest]) -> set[str]:
    """Every ground-truth test file of the dataset: kept off every sandbox's disk."""
    return {f.path for g in gold.values() for f in g.closure if f.role != "data"}


def _evaluate_instances(dataset: Dataset, gold: dict[str, GoldTest], predictions: dict[str, Prediction],
                        problems: dict[str, str], todo: list[Instance], journal: Journal,
                        options: EvaluateOptions, progress: Any) -> None:
    """Judge every instance in its own sandboxes; ``options.workers`` instances at a time.

    One prediction never aborts the run: whatever goes wrong while judging it becomes
    that instance's result (bench.verdict attributes lost workers), and a bug of the
    evaluator itself is recorded as an infrastructure failure with its reason."""
    by_project: dict[str, list[Instance]] = {}
    for inst in todo:
        by_project.setdefault(inst.project, []).append(inst)
    if progress is not None:
        progress.stage("evaluating", len(todo))
    gold_files = ground_truth_files(gold)
    with tempfile.TemporaryDirectory(prefix="req2test-eval-") as tmp:
        for project_name, instances in by_project.items():
            judging = ProjectJudging(dataset, project_name, gold, options, Path(tmp), gold_files)
            measured = 0.0 if judging.traced else None

            def one(inst: Instance, judging: ProjectJudging = judging, measured: float | None = measured) -> None:
                prediction = predictions.get(inst.id)
                problem = problems.get(inst.id)
                if problem is not None or prediction is None:
                    result = _empty_result(inst, Outcome.generation_failure, problem or NO_PREDICTION,
                                           judging.result_gold(gold.get(inst.id)), coverage=measured)
                elif (rejection := judging.rejections(prediction))[0] is not None:
                    reason, paths = rejection
                    result = _empty_result(inst, Outcome.generation_failure, reason,
                                           judging.result_gold(gold[inst.id]),
                                           coverage=measured, metadata=prediction.metadata,
                                           **({"rejected_paths": paths} if paths else {}))
                else:
                    started = time.monotonic()
                    judgement = judging.judge(inst, prediction, gold[inst.id])
                    result = _score(inst, prediction, judgement, gold[inst.id], judging.index,
                                    time.monotonic() - started, traced=judging.traced)
                journal.append(result)
                if progress is not None:
                    progress.advance()

            with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
                for future in [pool.submit(one, inst) for inst in instances]:
                    future.result()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


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


def _score(inst: Instance, prediction: Prediction, judgement: Judgement, gold: GoldTest,
           index: ProductionIndex | None, seconds: float, traced: bool = False) -> InstanceResult:
    """Calls and coverage come from behave's trace through ``index``, or, ``traced``, as a
    framework's own judge measured them (trace ``api``: declaration keys, ``coverage``);
    neither: both metrics None."""
    traced = traced or index is not None
    extra = {"evidence": judgement.evidence, "confirmation": judgement.confirmation}
    if judgement.outcome is not Outcome.passed:
        result = _empty_result(inst, judgement.outcome, judgement.detail, gold, metadata=prediction.metadata,
                               coverage=0.0 if traced else None, **extra)
        return result.model_copy(update={"evaluation_seconds": round(seconds, 3)})
    trace = judgement.trace
    truth_kills = set(gold.kills)
    api = generated_api(trace, index) if index is not None else {str(k) for k in trace.get("api", [])}
    # A generated test that fails under a mutant in any way (assertion, error, timeout) detects it;
    # the verdict process counted only detections that reproduced.
    found = judgement.kills
    mut_recall = recall(found, truth_kills)
    return InstanceResult(
        instance_id=inst.id, project=inst.project, feature_file=inst.requirement.feature_file,
        outcome=judgement.outcome, detail=judgement.detail, ground_truth_kills=len(truth_kills),
        metadata=prediction.metadata,
        api_f1=f1(api, set(gold.api_calls)) if gold.api_calls else None,
        coverage_jaccard=jaccard(line_set(trace.get("coverage", {})), line_set(gold.covered_lines))
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
