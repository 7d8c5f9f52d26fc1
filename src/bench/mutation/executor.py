"""Run one test against many mutants with the warm worker; a fresh import only as fallback.

A *session* (behave_worker ``op=session``) does one coverage-traced clean run, marks
mutants on lines the test never reaches as survived (``unreached``) without running
them, and runs every reached mutant split-stream (split_stream.py) with the mutated
function's code swapped in. Mutants whose mutated lines ran at import time cannot be
replayed by a swap; the worker marks them ``fallback`` and ``resolve_fallbacks`` runs
them by importing the package once per mutant with the mutant served by an import hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.frameworks.messages import ImportMutantRequest, ImportRun, RunWorkspace, SessionRequest
from bench.model import Mutant
from bench.progress import Progress

# Verdicts that make the instance–mutant pair unusable (excluded, counted:
# docs/building.md#mutants-and-ground-truth-kills).
INFRASTRUCTURE = frozenset({"timeout", "infra_no_step"})


def manifest_path(dataset_dir: Path, project: str) -> Path:
    return Path(dataset_dir) / "mutants" / f"{project}.jsonl"


def write_manifest(dataset_dir: Path, project: str, mutants: list[Mutant]) -> Path:
    path = manifest_path(dataset_dir, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(mutant.model_dump_json() + "\n" for mutant in mutants)
    return path


def load_manifest(dataset_dir: Path, project: str) -> dict[str, Mutant]:
    path = manifest_path(dataset_dir, project)
    out: dict[str, Mutant] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                mutant = Mutant.model_validate_json(line)
                out[mutant.id] = mutant
    return out


def pool_for(manifest: dict[str, Mutant] | list[Mutant], covered: dict[str, list[int]]) -> list[Mutant]:
    """U_i (Eq. 2): mutants whose source lines intersect the lines the test covers."""
    mutants = manifest.values() if isinstance(manifest, dict) else manifest
    covered_sets = {f: set(v) for f, v in covered.items()}
    return [m for m in mutants if covered_sets.get(m.file, set()).intersection(m.lines)]


@dataclass
class SessionOutcome:
    clean: dict[str, Any]
    verdicts: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    fallbacks: int = 0
    split_stream_discarded: str | None = None  # why the shared-prefix forks were thrown away, if they were
    # kills only: the step definitions ("file:line") the failing run executed (None: not reported)
    bindings: dict[str, list[str]] = field(default_factory=dict)

    def ids(self, verdict: str) -> list[str]:
        return sorted(k for k, v in self.verdicts.items() if v == verdict)

    @property
    def killed(self) -> set[str]:
        return {k for k, v in self.verdicts.items() if v == "killed"}

    @property
    def excluded(self) -> dict[str, str]:
        return {k: v for k, v in self.verdicts.items() if v in INFRASTRUCTURE}


def session_request(feature: str, lines: list[int], mutants: list[Mutant], workspace: RunWorkspace | None = None,
                    timeout: float = 120.0) -> SessionRequest:
    request: SessionRequest = {"op": "session", "feature": feature, "lines": lines, "timeout": timeout,
                               "mutants": [m.model_dump(mode="json") for m in mutants]}
    if workspace is not None:
        request["workspace"] = workspace
    return request


def collect_session(reply: dict[str, Any]) -> SessionOutcome:
    """Verdicts of a session reply; ``fallback`` ones still need ``resolve_fallbacks``."""
    if "clean" not in reply:
        return SessionOutcome(clean={"exit": reply.get("exit", "worker_error"), "error": reply.get("error", "")})
    outcome = SessionOutcome(clean=reply["clean"], split_stream_discarded=reply.get("split_stream_discarded"))
    for mutant_id, record in (reply.get("mutants") or {}).items():
        verdict = record["verdict"]
        outcome.verdicts[mutant_id] = "survived" if verdict == "unreached" else verdict
        if record.get("detail"):
            outcome.details[mutant_id] = str(record["detail"])[:300]
        if verdict == "killed" and isinstance(record.get("bindings"), list):
            outcome.bindings[mutant_id] = [str(b) for b in record["bindings"]]
    return outcome


@dataclass(frozen=True)
class FallbackJob:
    owner: str  # the instance id whose test runs
    outcome: SessionOutcome
    mutant: Mutant
    feature: str
    lines: list[int]
    workspace: RunWorkspace | None
    timeout: float


def fallback_jobs(owner: str, outcome: SessionOutcome, mutants: dict[str, Mutant], feature: str, lines: list[int],
                  workspace: RunWorkspace | None = None) -> list[FallbackJob]:
    limit = max(2.0, 10.0 * float(outcome.clean.get("elapsed", 0.1)))
    return [FallbackJob(owner, outcome, mutants[mid], feature, lines, workspace, limit)
            for mid, verdict in outcome.verdicts.items() if verdict == "fallback"]


def resolve_fallbacks(pool: Any, jobs: list[FallbackJob], packages: list[str], progress: Progress | None = None) -> None:
    """Run import-time mutants: one warm import of the mutated package per mutant, then
    every test that needs it (``pool``: workers started without importing production)."""
    by_mutant: dict[str, list[FallbackJob]] = {}
    for job in jobs:
        by_mutant.setdefault(job.mutant.id, []).append(job)
    requests: list[ImportMutantRequest] = []
    for group in by_mutant.values():
        runs: list[ImportRun] = [{"key": str(i), "feature": j.feature, "lines": j.lines, "workspace": j.workspace,
                                  "timeout": j.timeout} for i, j in enumerate(group)]
        requests.append({"op": "import_mutant", "mutant": group[0].mutant.model_dump(mode="json"),
                         "packages": packages, "runs": runs})
    if progress is not None:
        progress.stage("import-time mutants", len(requests))
    replies = pool.map(requests, on_result=(lambda i, r: progress.advance()) if progress is not None else None)
    for group, reply in zip(by_mutant.values(), replies):
        verdicts = reply.get("verdicts", {})
        for i, job in enumerate(group):
            record = verdicts.get(str(i), {"verdict": "infra_no_step", "detail": str(reply.get("error", "no verdict"))})
            verdict = record["verdict"]
            job.outcome.verdicts[job.mutant.id] = "killed" if verdict == "fallback" else verdict
            job.outcome.fallbacks += 1
            if verdict == "killed" and isinstance(record.get("bindings"), list):
                job.outcome.bindings[job.mutant.id] = [str(b) for b in record["bindings"]]
