"""The reverse task (TestSuiteBench §4): given a feature's tests, implement the production code.

The agent works in the all-hidden view with the developers' step definitions of the feature
in place, and fills in the hidden bodies. Its prediction is the **whole production tree**
(every ``.py`` file under the project's production paths, changed or not), because the
evaluator must not fall back to the real code for a file the agent left alone: production
is replaced wholesale, so an untouched placeholder still raises "implementation hidden".

Score = the share of the feature's scenarios whose ground-truth steps pass on the
predicted production, each judged by the verdict process (sandboxed, screened; the traced
run and the null-variant clean runs must agree, else the scenario is ``unstable``). The
predicted production is hostile code like any test: it runs inside the same sandbox and
under the same runtime audit as a prediction's steps.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from bench import stopping
from bench.dataset import Dataset
from bench.evaluate import EvaluateOptions, ProjectJudging, UnsupportedByFramework, ground_truth_files
from bench.model import NO_PREDICTION, Frozen, GenerationMetadata, GoldTest, Outcome, Prediction, ProjectRecord
from bench.progress import Progress
from bench.suite.evaluate import ScenarioVerdict, journaled_suite_run, stability_of
from bench.suite.instances import SuiteInstance
from bench.tree_rules import BYTECODE_DIRS, VCS_DATA

MAX_FILE_BYTES = 1 << 20
MAX_FILES = 2000
# Narrower than NOT_PROJECT_CONTENT: the implemented snapshot copies everything else of the
# dataset's snapshot as it is (build/, venv/, ... can be the project's own), and which
# prediction paths are refused stays as it was.
_SKIPPED = VCS_DATA | BYTECODE_DIRS | {".mypy_cache", ".pytest_cache"}


class ReverseResult(Frozen):
    suite_id: str
    project: str
    feature_file: str
    detail: str = Field("", description="why nothing ran (a generation failure), else empty")
    scenarios: list[ScenarioVerdict]
    passed: int
    total: int
    score: float | None = Field(description="passed / total")
    evaluation_seconds: float
    metadata: GenerationMetadata | None = None


def production_sources(root: Path, production: list[str]) -> list[str]:
    """Relative paths of every Python source under the production paths (files or directories)."""
    out: set[str] = set()
    for entry in production:
        path = root / entry
        if path.is_file() and path.suffix == ".py":
            out.add(PurePosixPath(entry).as_posix())
        elif path.is_dir():
            for file in path.rglob("*.py"):
                rel = file.relative_to(root)
                if not (set(rel.parts) & _SKIPPED) and file.is_file() and not file.is_symlink():
                    out.add(rel.as_posix())
    return sorted(out)


def _under_production(path: str, production: list[str]) -> bool:
    pure = PurePosixPath(path)
    return any(pure == PurePosixPath(p) or PurePosixPath(p) in pure.parents for p in production)


def reverse_rejections(files: dict[str, str], production: list[str]) -> list[str]:
    """Why a reverse prediction cannot be laid out as production code (empty: it can)."""
    reasons = []
    if len(files) > MAX_FILES:
        reasons.append(f"{len(files)} files (at most {MAX_FILES})")
    for raw, content in files.items():
        pure = PurePosixPath(raw)
        if pure.is_absolute() or ".." in pure.parts or raw != pure.as_posix() or any(ord(c) < 32 for c in raw):
            reasons.append(f"{raw!r}: not a plain relative path")
        elif pure.suffix != ".py" or set(pure.parts) & _SKIPPED:
            reasons.append(f"{raw}: only Python sources of the production code are collected")
        elif not _under_production(raw, production):
            reasons.append(f"{raw}: outside the production paths ({', '.join(production)})")
        elif len(content.encode("utf-8", errors="surrogatepass")) > MAX_FILE_BYTES:
            reasons.append(f"{raw}: larger than {MAX_FILE_BYTES >> 20} MiB")
    if not files:
        reasons.append("no production source at all (the whole production tree is the prediction)")
    return reasons


def implemented_snapshot(snapshot: Path, dest: Path, production: list[str], files: dict[str, str]) -> Path:
    """A copy of ``snapshot`` whose production Python sources are exactly ``files``: every other
    production ``.py`` file is removed (a missing module fails to import, as it should)."""
    shutil.copytree(snapshot, dest, symlinks=True, ignore=shutil.ignore_patterns(*_SKIPPED))
    for rel in production_sources(dest, production):
        (dest / rel).unlink()
    for rel, text in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return dest


def ground_truth_steps(snapshot: Path, gold: GoldTest) -> dict[str, str]:
    """The developers' test implementation of one scenario (its closure's code files)."""
    return {f.path: (snapshot / f.path).read_text(encoding="utf-8") for f in gold.closure if f.role != "data"}


def evaluate_reverse(dataset_dir: Path, predictions_path: Path, run_dir: Path, options: EvaluateOptions | None = None,
                     suites: list[str] | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Judge every reverse prediction (or those in ``suites``); writes ``reverse_results.jsonl``
    (a journal: an interrupted run resumes) and ``reverse_summary.json``."""
    options = options or EvaluateOptions()
    options.mutants = False  # the reverse score runs the ground truth on the predicted code only

    def judge(dataset: Dataset, todo: list[SuiteInstance], predictions: dict[str, Prediction],
              problems: dict[str, str], options: EvaluateOptions, append: Any) -> None:
        gold = dataset.load_gold()
        for suite in todo:
            append(_judge_reverse(dataset, suite, predictions.get(suite.id), problems.get(suite.id), gold, options,
                                  progress))

    return journaled_suite_run("reverse", ReverseResult, judge, summarize_reverse, dataset_dir, predictions_path,
                               run_dir, options, suites, progress)


def _judge_reverse(dataset: Dataset, suite: SuiteInstance, prediction: Prediction | None, problem: str | None,
                   gold: dict[str, GoldTest], options: EvaluateOptions, progress: Progress | None) -> ReverseResult:
    started = time.monotonic()
    project: ProjectRecord = dataset.project(suite.project)
    if problem is None and prediction is None:
        problem = NO_PREDICTION
    if problem is None and prediction is not None and (
            rejected := reverse_rejections(prediction.files, project.production)):
        problem = "invalid submission: " + rejected[0]
    verdicts: list[ScenarioVerdict] = []
    if problem is not None:
        verdicts = [ScenarioVerdict(instance_id=s, outcome=Outcome.generation_failure, detail=problem,
                                    stability="failing") for s in suite.scenarios]
        if progress is not None:
            for _ in suite.scenarios:
                progress.advance()
    else:
        assert prediction is not None
        verdicts = judge_on_production(dataset, suite.project, prediction.files, suite.scenarios, gold, options,
                                       progress)
    passed = sum(1 for v in verdicts if v.stability == "valid")
    return ReverseResult(suite_id=suite.id, project=suite.project, feature_file=suite.feature_file,
                         detail=problem or "", scenarios=verdicts, passed=passed, total=len(verdicts),
                         score=passed / len(verdicts) if verdicts else None,
                         evaluation_seconds=round(time.monotonic() - started, 3),
                         metadata=prediction.metadata if prediction is not None else None)


def judge_on_production(dataset: Dataset, project_name: str, production: dict[str, str], scenarios: list[str],
                        gold: dict[str, GoldTest], options: EvaluateOptions, progress: Progress | None = None,
                        steps_from: Path | None = None) -> list[ScenarioVerdict]:
    """Each scenario's developer steps judged on ``production`` (the whole production tree, which
    replaces the project's): the reverse task's score and the takeover task's delivery checks.

    ``steps_from``: the tree the ground-truth steps are read from (default: the dataset's snapshot).
    """
    project: ProjectRecord = dataset.project(project_name)
    original = steps_from or dataset.root / project.snapshot
    with tempfile.TemporaryDirectory(prefix="req2test-production-") as tmp:
        snapshot = implemented_snapshot(dataset.root / project.snapshot, Path(tmp) / "snapshot",
                                        project.production, production)
        try:
            judging = ProjectJudging(dataset, project_name, gold, options, Path(tmp), ground_truth_files(gold),
                                     snapshot=snapshot)
        except UnsupportedByFramework as exc:  # the framework's judge cannot judge a predicted production
            if progress is not None:
                for _ in scenarios:
                    progress.advance()
            return [ScenarioVerdict(instance_id=s, outcome=Outcome.generation_failure, detail=str(exc),
                                    stability="failing") for s in scenarios]
        by_id = {i.id: i for i in dataset.instances}

        def one(scenario: str) -> ScenarioVerdict:
            steps = Prediction(instance_id=scenario, files=ground_truth_steps(original, gold[scenario]))
            judgement = judging.judge(by_id[scenario], steps, gold[scenario].model_copy(
                update={"pool": [], "kills": []}))
            if progress is not None:
                progress.advance()
            return ScenarioVerdict(instance_id=scenario, outcome=judgement.outcome,
                                   stability=stability_of(judgement.outcome), detail=judgement.detail[:300],
                                   clean_runs=int(judgement.confirmation.get("clean_runs", 0)))

        with stopping.StoppablePool(max_workers=max(1, options.workers)) as pool:
            return list(pool.map(one, scenarios))


def summarize_reverse(results: list[ReverseResult], dataset_name: str, predictions_sha256: str) -> dict[str, Any]:
    scores = [r.score for r in results if r.score is not None]
    total = sum(r.total for r in results)
    return {"dataset": dataset_name, "predictions_sha256": predictions_sha256, "mode": "reverse",
            "suites": len(results), "scenarios": total,
            "score_mean": round(sum(scores) / len(scores), 4) if scores else None,
            "score_pooled": round(sum(r.passed for r in results) / total, 4) if total else None,
            "suites_all_passing": sum(1 for r in results if r.total and r.passed == r.total),
            "flaky": sum(1 for r in results for v in r.scenarios if v.stability == "flaky"),
            "infrastructure_failures": sum(1 for r in results for v in r.scenarios
                                           if v.outcome is Outcome.infrastructure_failure),
            "cost_usd": round(sum((r.metadata.cost_usd or 0.0) for r in results if r.metadata), 6),
            "evaluation_seconds": round(sum(r.evaluation_seconds for r in results), 1)}
