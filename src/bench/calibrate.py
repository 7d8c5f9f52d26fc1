"""``req2test calibrate``: reference prediction sets built from the ground truth.

- oracle: the ground-truth test implementation itself — must pass and be kill-complete
  on every scorable instance;
- empty: every step-definition body is ``pass`` — may pass, must kill nothing;
- then-stripped: the Then-step bodies are ``pass`` — lies in between.
A calibration that does not come out this way is an evaluator bug — or, for the empty arm, a
dataset whose ground-truth kills hold mutants the shared infrastructure detects by itself
(hooks that call production): the builder records those as ``infrastructure_kills``, apart
from ``kills``; ``empty_arm_problem`` says when the empty arm killed anything all the same,
and ``req2test calibrate`` then exits non-zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.builder.mutation_stage import empty_test_files
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import GenerationMetadata, InstanceResult, Prediction
from bench.testimpl import strip_step_bodies, then_step_targets

CALIBRATIONS = ("oracle", "empty", "then-stripped")


def calibration_predictions(dataset_dir: Path) -> dict[str, list[Prediction]]:
    dataset = load_dataset(dataset_dir)
    gold = dataset.load_gold()
    out: dict[str, list[Prediction]] = {name: [] for name in CALIBRATIONS}
    for inst in dataset.instances:
        project = dataset.project(inst.project)
        snapshot = dataset.root / project.snapshot
        record = gold[inst.id]
        if project.framework == "cucumber-js":  # step-definition granularity
            from bench.frameworks.cucumber_js.calibration import calibration_files

            for name, files in calibration_files(snapshot, record).items():
                out[name].append(Prediction(instance_id=inst.id, files=files,
                                            metadata=GenerationMetadata(agent=f"calibration:{name}")))
            continue
        code = sorted(f.path for f in record.closure if f.role != "data")
        oracle = {path: (snapshot / path).read_text(encoding="utf-8") for path in code}
        empty = empty_test_files(snapshot, record)  # the build ran the same against the kills
        stripped = dict(oracle)
        stripped.update(strip_step_bodies(snapshot, code, then_step_targets(record)))
        for name, files in (("oracle", oracle), ("empty", empty), ("then-stripped", stripped)):
            out[name].append(Prediction(instance_id=inst.id, files=files,
                                        metadata=GenerationMetadata(agent=f"calibration:{name}")))
    return out


def calibrate(dataset_dir: Path, out_dir: Path, options: EvaluateOptions | None = None,
              progress: Any = None) -> dict[str, dict[str, Any]]:
    out_dir = Path(out_dir)
    summaries = {}
    for name, predictions in calibration_predictions(dataset_dir).items():
        run_dir = out_dir / name
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "predictions.jsonl"
        text = "".join(p.model_dump_json() + "\n" for p in predictions)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        if progress is not None:
            progress.stage(f"calibration: {name}", len(predictions))
        summaries[name] = evaluate(dataset_dir, path, run_dir, options, progress=_Prefixed(progress))
    return summaries


def empty_arm_kills(run_dir: Path) -> dict[str, int]:
    """Ground-truth kills the empty arm made, per instance (those with any), from the arm's
    run directory (``results.jsonl``: the last record of an instance counts)."""
    results: dict[str, InstanceResult] = {}
    path = Path(run_dir) / "results.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                try:
                    record = InstanceResult.model_validate_json(line)
                except ValueError:
                    continue  # a torn tail
                results[record.instance_id] = record
    return {i: r.generated_kills for i, r in sorted(results.items()) if r.generated_kills}


def empty_arm_problem(out_dir: Path) -> str | None:
    """One line when the empty arm of the calibration in ``out_dir`` killed anything, else None."""
    kills = empty_arm_kills(Path(out_dir) / "empty")
    if not kills:
        return None
    first = next(iter(kills))
    return (f"calibration failed: the empty arm (every step body emptied) killed {sum(kills.values())} "
            f"ground-truth mutant(s) on {len(kills)} instance(s), e.g. {kills[first]} on {first}: the shared "
            f"infrastructure detects them without the test; rebuild the dataset so that they are recorded as "
            f"infrastructure kills")


class _Prefixed:
    """Reuse one progress display across the three runs (stage() already announced)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        if self.inner is not None:
            self.inner.advance(n)
