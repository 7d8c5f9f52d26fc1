"""Small run directories in tmp_path, written as the real writers write them: ``claim_run_dir`` (plan.json,
experiment.yaml), ``configs/<config>/`` as ``harness.experiment.configs.write_config`` lays it out
(config.json from a ConfigRecord, predictions.jsonl, results.jsonl, summary.json from ``summarize_run``) and a
plain ``req2test evaluate`` directory (results.jsonl, summary.json, run.json).

Instances: project p, twelve scenarios over three feature files. An arm's results are given as a quality:
"weak" fails every assertion, "strong" passes kill-complete everywhere, "half" passes kill-complete on the
first six only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench.model import GenerationMetadata, InstanceResult, Outcome, Prediction
from bench.runs import ConfigRecord, config_dir_name
from bench.summary import summarize_run

IDS = [f"p/features/f{k // 4}.feature:{10 + k}" for k in range(12)]


def results(quality: str, cost: float = 0.1) -> list[InstanceResult]:
    out = []
    for k, instance_id in enumerate(IDS):
        good = quality == "strong" or (quality == "half" and k < 6)
        out.append(InstanceResult(
            instance_id=instance_id, project="p", feature_file=instance_id.split("/", 1)[1].split(":")[0],
            outcome=Outcome.passed if good else Outcome.assertion_failure, api_f1=1.0 if good else 0.0,
            coverage_jaccard=1.0 if good else 0.0, mutant_recall=1.0 if good else 0.0, kill_complete=good,
            kill_complete_relaxed=good, ground_truth_kills=2, generated_kills=2 if good else 0,
            evaluation_seconds=1.0, metadata=GenerationMetadata(cost_usd=cost)))
    return out


def write_config(run: Path, record: ConfigRecord, quality: str, cost: float = 0.1) -> list[InstanceResult]:
    """One configuration directory, as write_config writes it; returns the results written."""
    out = run / "configs" / config_dir_name(record.name)
    out.mkdir(parents=True, exist_ok=True)
    rows = results(quality, cost)
    lines = "".join(Prediction(instance_id=r.instance_id, files={"features/steps/s.py": "x = 1\n"},
                               metadata=r.metadata).model_dump_json() + "\n" for r in rows)
    (out / "config.json").write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / "predictions.jsonl").write_text(lines, encoding="utf-8")
    (out / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    summary = summarize_run(rows, dataset_name="tiny", predictions_sha256=hashlib.sha256(lines.encode()).hexdigest(),
                            resamples=100)
    summary["config"] = record.name
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return rows


def arm_record(arm: str, **fields: Any) -> ConfigRecord:
    return ConfigRecord(name=f"{arm}@th", arm=arm, view="th", role="arm", agent="none", **fields)


def claim(run: Path, arms: list[dict[str, Any]], baseline: str | None = None, name: str = "ab") -> None:
    """plan.json and experiment.yaml as ``req2test run`` writes them for an experiment of these arms."""
    from harness.experiment.config import Experiment
    from harness.experiment.journal import claim_run_dir
    from harness.experiment.plan import ExperimentPlan

    data: dict[str, Any] = {"name": name, "dataset": "ds", "arms": arms}
    if baseline is not None:
        data["baseline"] = baseline
    experiment = Experiment.model_validate(data)
    plan = ExperimentPlan(name=name, file=str(run / "ab.yaml"), experiment=experiment.model_dump(mode="json"),
                          dataset_dir=str(run / "no-dataset"), dataset_card_sha256="0" * 64, instances=IDS)
    claim_run_dir(run, plan, json.dumps(data))


def experiment_run(run: Path, arms: dict[str, str], baseline: str | None = None) -> Path:
    """A ``req2test run`` directory of one-candidate arms (name → quality), in the order given."""
    claim(run, [{"name": arm, "agent": "none"} for arm in arms], baseline)
    for arm, quality in arms.items():
        write_config(run, arm_record(arm), quality)
    return run


def evaluate_run(run: Path, quality: str, dataset: Path | None = None) -> Path:
    """A plain ``req2test evaluate`` directory: results.jsonl, summary.json, run.json."""
    run.mkdir(parents=True)
    rows = results(quality)
    (run / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    summary = summarize_run(rows, dataset_name="tiny", predictions_sha256="0" * 64, resamples=100)
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"dataset": str(dataset or run / "no-dataset")}), encoding="utf-8")
    return run
