"""The reference way to run a test against a mutant: a fresh behave process, mutant on disk.

Slow (hundreds of ms a run) but obviously right; the warm executor must agree with it
(benchmarks/mutant_speed.py and tests/unit/test_mutation.py check that). The executor
itself never uses it: import-time mutants go through an import hook instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.model import Mutant
from bench.mutation.generate import apply_mutant


@dataclass(frozen=True)
class FreshVerdict:
    verdict: str  # killed | survived | timeout | infra_no_step
    elapsed: float
    detail: str = ""


def shadow_tree(root: Path, target: Path, replaced: dict[str, str]) -> None:
    """``target`` mirrors ``root`` through symlinks, except the files in ``replaced``, written."""
    dirs_needed = {Path(rel).parent for rel in replaced}
    expanded = set()
    for d in dirs_needed:
        while d != Path("."):
            expanded.add(d)
            d = d.parent

    def mirror(rel_dir: Path) -> None:
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(root / rel_dir):
            rel = rel_dir / entry.name
            if entry.name == "__pycache__":
                continue
            if rel.as_posix() in replaced:
                (target / rel).write_text(replaced[rel.as_posix()], encoding="utf-8")
            elif rel in expanded and entry.is_dir():
                mirror(rel)
            else:
                os.symlink(os.path.realpath(root / rel), target / rel)

    mirror(Path("."))


def run_fresh(root: Path, python_path: list[str], feature: str, lines: list[int], mutant: Mutant | None,
              timeout: float, python: str = sys.executable) -> FreshVerdict:
    """Run FEATURE:LINES in a fresh `python -m behave` on a shadow of ``root`` with the mutant applied."""
    with tempfile.TemporaryDirectory(prefix="req2test-fresh-") as tmp:
        work = Path(tmp) / "root"
        replaced = {}
        if mutant is not None:
            original = (Path(os.path.realpath(root / mutant.file))).read_text(encoding="utf-8")
            replaced[mutant.file] = apply_mutant(original, mutant)
        shadow_tree(root, work, replaced)
        report = Path(tmp) / "report.json"
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.pathsep.join(str(work / p) for p in python_path))
        # --stop: a mutant's run ends at the first failing scenario, as in the executor
        cmd = [python, "-m", "behave", "--stop", "--no-summary", "--no-snippets", "-f", "json", "-o", str(report),
               *[f"{feature}:{line}" for line in lines]]
        import time
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return FreshVerdict("timeout", time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        if proc.returncode == 0:  # behave exits 0 only when every selected scenario passed
            return FreshVerdict("survived", elapsed)
        statuses = _step_statuses(report)
        if not any(s not in ("skipped", "untested") for s in statuses):
            return FreshVerdict("infra_no_step", elapsed, proc.stderr.decode(errors="replace")[-300:])
        return FreshVerdict("killed", elapsed)


def _step_statuses(report: Path) -> list[str]:
    try:
        data = json.loads(report.read_text(encoding="utf-8") or "[]")
    except (OSError, ValueError):
        return []
    out = []
    for feature in data:
        for element in feature.get("elements", []):
            if element.get("status") == "skipped":
                continue  # scenarios the selection did not pick
            for step in element.get("steps", []):
                out.append(step.get("result", {}).get("status", "untested"))
    return out
