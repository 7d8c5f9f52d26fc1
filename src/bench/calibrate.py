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

from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.frameworks.registry import get_framework
from bench.model import GenerationMetadata, InstanceResult, Prediction
from bench.progress import Progress

CALIBRATIONS = ("oracle", "empty", "then-stripped")


def calibration_predictions(dataset_dir: Path, arms: tuple[str, ...] = CALIBRATIONS) -> dict[str, list[Prediction]]:
    """The reference predictions of every instance, per arm (``arms``, a subset of ``CALIBRATIONS``)."""
    unknown = [a for a in arms if a not in CALIBRATIONS]
    if unknown:
        raise ValueError(f"no calibration arm named {unknown[0]!r}; available: {', '.join(CALIBRATIONS)}")
    dataset = load_dataset(dataset_dir)
    gold = dataset.load_gold()
    out: dict[str, list[Prediction]] = {name: [] for name in arms}
    for inst in dataset.instances:
        project = dataset.project(inst.project)
        snapshot = dataset.root / project.snapshot
        files = get_framework(project.framework).calibration_files(snapshot, [gold[inst.id]])
        for name in arms:
            out[name].append(Prediction(instance_id=inst.id, files=files[name],
                                        metadata=GenerationMetadata(agent=f"calibration:{name}")))
    return out


def calibrate(dataset_dir: Path, out_dir: Path, options: EvaluateOptions | None = None,
              progress: Progress | None = None, arms: tuple[str, ...] = CALIBRATIONS) -> dict[str, dict[str, Any]]:
    """Evaluate each arm of ``arms`` into ``out_dir/<arm>`` (resumable: a rerun keeps what is done)."""
    out_dir = Path(out_dir)
    summaries = {}
    for name, predictions in calibration_predictions(dataset_dir, arms).items():
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

    def __init__(self, inner: Progress | None) -> None:
        self.inner = inner

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        if self.inner is not None:
            self.inner.advance(n)

    def log(self, line: str) -> None:
        if self.inner is not None:
            self.inner.log(line)
