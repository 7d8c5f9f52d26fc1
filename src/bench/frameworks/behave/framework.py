"""behave (Python) behind the ``Framework`` protocol.

The heavy parts stay where they were written and are named here: the build's warm
worker (``behave_worker``), the evaluator's sandboxed worker (``eval_worker``), the
fresh-process reference (``bench.frameworks.behave.fresh``) and the parser cross-check
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
from typing import TYPE_CHECKING, ClassVar

from bench.frameworks.behave import BUILD_WORKER_MODULE, test_side
from bench.frameworks.protocol import (
    Builder,
    Framework,
    FreshVerdict,
    Language,
    PromptTerms,
    TestAreaSpec,
    TestSideView,
)
from bench.gherkin_reader import FeatureFile
from bench.judging import Judge, JudgeContext, RunVerdict
from bench.languages.python import PythonLanguage
from bench.model import GoldTest, Mutant

if TYPE_CHECKING:
    from bench.builder.pipeline import BuildOptions, StageTimer
    from bench.model import DatasetCard
    from bench.progress import Progress
    from bench.project import ProjectSource


class BehaveFramework(Framework):
    name: ClassVar[str] = "behave"
    language: ClassVar[Language] = PythonLanguage()
    # behave reads its configuration from any of these (first found wins)
    runner_config_files: ClassVar[frozenset[str]] = frozenset(
        {"behave.ini", ".behaverc", "setup.cfg", "tox.ini", "pyproject.toml"})

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

    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        return test_side.test_area(root, features_dir, self.runner_config_files)

    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        return test_side.view_test_side(snapshot, features_dir, gold_test_files)

    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        return test_side.calibration_files(snapshot, records, suite)

    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        return {}  # the sandbox's Python environment holds the project's packages

    def builder(self) -> Builder:
        return BehaveBuilder(self)

    def judge(self, context: JudgeContext) -> Judge:
        from bench.frameworks.behave.judge import BehaveJudge

        return BehaveJudge(self, context)

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        from bench.gherkin_reader import cross_check_with_behave

        return cross_check_with_behave(root, feature)

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        from bench.frameworks.behave.fresh import shadow_tree

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
                return FreshVerdict(RunVerdict.timeout, time.perf_counter() - start)
            elapsed = time.perf_counter() - start
            if proc.returncode == 0:  # behave exits 0 only when every selected scenario passed
                return FreshVerdict(RunVerdict.survived, elapsed)
            statuses = _step_statuses(report)
            if not any(s not in ("skipped", "untested") for s in statuses):
                return FreshVerdict(RunVerdict.infra_no_step, elapsed, proc.stderr.decode(errors="replace")[-300:])
            return FreshVerdict(RunVerdict.killed, elapsed)


class BehaveBuilder(Builder):
    """The warm-worker pipeline with this package's build worker."""

    def __init__(self, framework: BehaveFramework) -> None:
        self.framework = framework

    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        from bench.builder.pipeline import build_with_warm_workers

        return build_with_warm_workers(self.framework, BUILD_WORKER_MODULE, source, out_dir, options, progress,
                                       timer, tmp)


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
