"""behave (Python) behind the ``Framework`` protocol.

The heavy parts stay where they were written and are named here: the build's warm
worker (``behave_worker``), the evaluator's sandboxed worker (``eval_worker``), the
fresh-process reference (``bench.mutation.fresh``) and the parser cross-check
(``bench.gherkin_reader``). Commands are exactly what those callers ran before the
protocol existed, so results are unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import ClassVar

from bench.frameworks.protocol import Framework, FreshVerdict, Language, PromptTerms
from bench.gherkin_reader import FeatureFile
from bench.languages.python import PythonLanguage
from bench.model import Mutant


class BehaveFramework(Framework):
    name: ClassVar[str] = "behave"
    language: ClassVar[Language] = PythonLanguage()
    # behave reads its configuration from any of these (first found wins)
    runner_config_files: ClassVar[frozenset[str]] = frozenset(
        {"behave.ini", ".behaverc", "setup.cfg", "tox.ini", "pyproject.toml"})
    build_worker_module: ClassVar[str] = "bench.frameworks.behave_worker"
    eval_worker_module: ClassVar[str] = "bench.frameworks.eval_worker"

    def prompt_terms(self) -> PromptTerms:
        return PromptTerms(runner="behave", language="Python", step_definitions="behave step definitions",
                           hooks_file="environment.py", code_fence="python", run_example="python -m behave ...")

    def version(self) -> str:
        from behave.version import VERSION

        return str(VERSION)

    def runtime_packages(self) -> list[str]:
        return [f"behave=={metadata.version('behave')}"]

    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        output = ["-f", "json", "-o", report] if report else ["-f", "plain"]
        return ["-m", "behave", *(["--stop"] if stop else []), "--no-summary", "--no-snippets", *output,
                *[f"{feature}:{line}" for line in lines]]

    def dry_run_command(self, features_dir: str) -> list[str]:
        return ["-m", "behave", "--dry-run", "--no-summary", "-f", "null", features_dir]

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        from bench.gherkin_reader import cross_check_with_behave

        return cross_check_with_behave(root, feature)

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        from bench.mutation.fresh import shadow_tree

        with tempfile.TemporaryDirectory(prefix="req2test-fresh-") as tmp:
            work = Path(tmp) / "root"
            replaced = {}
            if mutant is not None:
                original = Path(os.path.realpath(root / mutant.file)).read_text(encoding="utf-8")
                replaced[mutant.file] = self.language.apply_mutant(original, mutant)
            shadow_tree(root, work, replaced)
            report = Path(tmp) / "report.json"
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
                       PYTHONPATH=os.pathsep.join(str(work / p) for p in python_path))
            # stop: a mutant's run ends at the first failing scenario, as in the executor
            cmd = [python, *self.run_command(feature, lines, stop=True, report=str(report))]
            start = time.perf_counter()
            try:
                proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, timeout=timeout, check=False)
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
    """Every selected step's status from behave's JSON report."""
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
