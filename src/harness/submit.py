"""``req2test submit RUN -o BUNDLE``: a run packaged for benchmark submission.

The bundle (documented in docs/submission.md):

    manifest.json          SubmissionManifest — tool, dataset, every configuration's metadata, sha256 of every file
    manifest.schema.json   its JSON Schema
    experiment.yaml        the experiment file as run
    configs/<config>/      config.json, predictions.jsonl, results.jsonl, summary.json,
                           ledger.jsonl (every model call), trajectories/<instance>/c<k>/<attempt>.jsonl

A configuration is refused, with its reasons, when the evaluator steered it (oracle selector, evaluator
feedback in decomposition), when it ran in the local sandbox (no isolation), or when its agent read the
ground truth. The written manifest is validated against its own schema, and every predictions/results
line against the benchmark's record types, before the bundle is declared done.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

import harness
from bench.errors import UserError
from bench.model import InstanceResult, Prediction

FORMAT_VERSION = "1"


class SubmissionError(UserError):
    """Why a run cannot be submitted; one line per reason."""


class SandboxInfo(BaseModel):
    name: str
    backend: str
    egress_allow: list[str] = Field(default_factory=list)


class ConfigurationEntry(BaseModel):
    name: str
    directory: str
    agent: str
    model: str | None
    reasoning: str | None
    view: str
    paragraphs: list[str]
    strategies: dict[str, Any]
    n: int
    sandbox: SandboxInfo
    predictions: int = Field(description="prediction lines")
    results: int = Field(description="evaluated instances")
    pass_at_1: float
    kill_complete_at_1: float


class SubmissionManifest(BaseModel):
    format_version: str = FORMAT_VERSION
    tool: str = "req2test"
    tool_version: str
    created: str
    run_name: str
    dataset: str
    dataset_card_sha256: str
    instances: int
    configurations: list[ConfigurationEntry]
    files: dict[str, str] = Field(description="relative path -> sha256 of every other file in the bundle")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_bundle(run_dir: Path, out_dir: Path, configs: list[str] | None = None) -> SubmissionManifest:
    from bench.runs import ConfigRecord, config_dir_name
    from harness.sandbox.policy import load_policy

    plan_path = run_dir / "plan.json"
    if not plan_path.is_file():
        raise SubmissionError(f"{run_dir} is not a run directory of `req2test run` (no plan.json)")
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    records = {}
    for path in sorted((run_dir / "configs").glob("*/config.json")):
        record = ConfigRecord.model_validate_json(path.read_text(encoding="utf-8"))
        records[record.name] = record
    if not records:
        raise SubmissionError(f"{run_dir} has no evaluated configurations yet; finish the run first")
    wanted = configs or [name for name, r in records.items() if r.role == "arm"]
    unknown = [name for name in wanted if name not in records]
    if unknown:
        raise SubmissionError(f"no configuration {unknown[0]!r} in {run_dir} (have: {', '.join(records)})")
    refusals = [f"{name}: {reason}" for name in wanted for reason in records[name].submission_refusals]
    if refusals:
        raise SubmissionError("refused — " + "; ".join(refusals) +
                              ". Submit the other configurations with --config NAME")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise SubmissionError(f"{out_dir} exists and is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in wanted:
        record = records[name]
        source = run_dir / "configs" / config_dir_name(name)
        target = out_dir / "configs" / config_dir_name(name)
        target.mkdir(parents=True)
        for file in ("config.json", "predictions.jsonl", "results.jsonl", "summary.json"):
            shutil.copy2(source / file, target / file)
        predictions = _validated_lines(target / "predictions.jsonl", Prediction)
        results = _validated_lines(target / "results.jsonl", InstanceResult)
        if len(results) != len(plan["instances"]):
            raise SubmissionError(f"{name}: {len(results)} of {len(plan['instances'])} instances evaluated; "
                                  "finish the run first")
        generations = run_dir / "generations" / record.generations
        with open(target / "ledger.jsonl", "w", encoding="utf-8") as ledger:
            ledger.writelines(part.read_text(encoding="utf-8") for part in sorted(generations.glob("**/*ledger.jsonl")))
        for candidate in sorted(generations.glob("c*/trajectories")):
            for instance_dir in sorted(p for p in candidate.iterdir() if p.is_dir()):
                shutil.copytree(instance_dir, target / "trajectories" / instance_dir.name / candidate.parent.name)
        if record.sandbox is None:  # a config.json the runner did not write (it always records one)
            raise SubmissionError(f"{name}: its config.json records no sandbox policy")
        policy = load_policy(record.sandbox)
        summary = json.loads((target / "summary.json").read_text(encoding="utf-8"))
        entries.append(ConfigurationEntry(
            name=name, directory=f"configs/{config_dir_name(name)}", agent=record.agent, model=record.model,
            reasoning=record.reasoning, view=record.view, paragraphs=record.paragraphs, strategies=record.strategies,
            n=record.n, sandbox=SandboxInfo(name=policy.name, backend=policy.backend,
                                            egress_allow=list(policy.egress_allow)),
            predictions=len(predictions), results=len(results), pass_at_1=summary["pass_at_1"]["value"],
            kill_complete_at_1=summary["kill_complete_at_1"]["value"]))
    shutil.copy2(run_dir / "experiment.yaml", out_dir / "experiment.yaml")
    schema = SubmissionManifest.model_json_schema()
    (out_dir / "manifest.schema.json").write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    files = {str(p.relative_to(out_dir)): _sha(p) for p in sorted(out_dir.rglob("*"))
             if p.is_file() and p.name != "manifest.json"}
    manifest = SubmissionManifest(tool_version=harness.__version__, created=datetime.now(UTC).isoformat(),
                                  run_name=plan["name"], dataset=Path(plan["dataset_dir"]).name,
                                  dataset_card_sha256=plan["dataset_card_sha256"], instances=len(plan["instances"]),
                                  configurations=entries, files=files)
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    validate_bundle(out_dir)
    return manifest


def _validated_lines(path: Path, model: type[BaseModel]) -> list[BaseModel]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            rows.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise SubmissionError(f"{path}:{number}: not a valid {model.__name__}: "
                                  f"{exc.errors()[0]['msg']}") from None
    return rows


def validate_bundle(bundle: Path) -> SubmissionManifest:
    """The manifest against its JSON Schema and model, every listed file against its hash, every line typed."""
    import jsonschema

    try:
        data = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
        schema = json.loads((bundle / "manifest.schema.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SubmissionError(f"{bundle}: unreadable manifest: {exc}") from None
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        raise SubmissionError(f"{bundle}/manifest.json: {exc.message}") from None
    manifest = SubmissionManifest.model_validate(data)
    for relative, digest in manifest.files.items():
        path = bundle / relative
        if not path.is_file() or _sha(path) != digest:
            raise SubmissionError(f"{bundle}/{relative}: missing or changed since the manifest was written")
    for entry in manifest.configurations:
        _validated_lines(bundle / entry.directory / "predictions.jsonl", Prediction)
        _validated_lines(bundle / entry.directory / "results.jsonl", InstanceResult)
    return manifest
