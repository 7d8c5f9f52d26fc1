"""cucumber-js (JavaScript/TypeScript) behind the ``Framework`` protocol.

What differs from behave, and why:

- **granularity**: a test implementation is a set of step-definition *sites* (call
  statements), not files (``testside``);
- **runs**: every run is a new ``node`` process on its own hard-linked tree (``runner``);
  Node has no fork, and a fresh process is also the reference run, so the warm executor is
  Stryker's (mutants switched through its instrumented code) and the fresh process checks it;
- **mutants**: Stryker's instrumenter and its cucumber runner with per-test coverage and
  ``disableBail`` (every killing scenario), read from its JSON report (``build``).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from bench.frameworks.cucumber_js.language import TypeScriptLanguage
from bench.frameworks.protocol import Builder, Framework, FreshVerdict, PromptTerms, TestAreaSpec, TestSideView
from bench.gherkin_reader import FeatureFile
from bench.judging import Judge, JudgeContext, RunVerdict
from bench.model import GoldTest, Mutant

if TYPE_CHECKING:
    from bench.builder.pipeline import BuildOptions, StageTimer
    from bench.frameworks.cucumber_js.runner import CucumberRun
    from bench.model import DatasetCard
    from bench.progress import Progress
    from bench.project import ProjectSource

CUCUMBER_VERSION = "12.9.0"  # 13.x needs Node >= 22; Node 20 is what Debian gives here
STRYKER_VERSION = "9.6.1"
CONFIG_FILES = frozenset({"cucumber.json", "cucumber.js", "cucumber.cjs", "cucumber.mjs", "cucumber.yaml",
                          "cucumber.yml", "package.json", "package-lock.json", "tsconfig.json",
                          "stryker.config.json", "stryker.conf.js", "req2test.toml", ".mocharc.json"})


class CucumberJsFramework(Framework):
    name: ClassVar[str] = "cucumber-js"
    language: ClassVar[TypeScriptLanguage] = TypeScriptLanguage()
    runner_config_files: ClassVar[frozenset[str]] = CONFIG_FILES
    interpreter: ClassVar[str] = "node"

    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """The directories of the profile's step files; files without a step definition
        (world, hooks, registration) are fixed."""
        from bench.frameworks.cucumber_js.runner import step_files
        from bench.frameworks.cucumber_js.testside import SOURCE_SUFFIXES, TestSideJs

        files = step_files(root)
        side = TestSideJs(root, files)
        dirs = tuple(sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}))
        entries = [p for d in dirs for p in (root / d).rglob("*") if "node_modules" not in p.parts]
        return TestAreaSpec(dirs=dirs, suffixes=SOURCE_SUFFIXES, fixed_paths=frozenset(side.infrastructure),
                            protected=frozenset(p.relative_to(root).as_posix() for p in entries
                                                if p.is_file() and p.suffix not in SOURCE_SUFFIXES),
                            directories=frozenset(p.relative_to(root).as_posix() for p in entries if p.is_dir()),
                            runner_config_files=self.runner_config_files, language="JavaScript/TypeScript")

    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        """Step-definition granularity: every step-definition statement goes, the rest of each
        step file (helpers, world, hooks) stays."""
        from bench.frameworks.cucumber_js.runner import step_files
        from bench.frameworks.cucumber_js.testside import TestSideJs

        side = TestSideJs(snapshot, step_files(snapshot))
        return TestSideView(removed_files=frozenset(), rewritten=side.files_without(side.sites, keep_lines=False),
                            removed=sorted(f"{s.file}:{s.line}" for s in side.sites),
                            infrastructure=frozenset(side.infrastructure))

    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        from bench.frameworks.cucumber_js.calibration import calibration_files

        return calibration_files(snapshot, records, suite)

    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        """The project's packages from its lockfile, read-only, where Node looks for them."""
        from bench.frameworks.cucumber_js.judge import ensure_node_modules

        return {"node_modules": ensure_node_modules(snapshot)}

    def prompt_terms(self) -> PromptTerms:
        return PromptTerms(runner="cucumber-js", language="JavaScript",
                           step_definitions="cucumber-js step definitions",
                           hooks_file="the support files that register hooks (e.g. index.js)",
                           code_fence="javascript", run_example="npx cucumber-js features/x.feature:12",
                           placeholder='throw new Error("implementation hidden")',
                           infrastructure="the support files without step definitions (world, hooks, registration)",
                           import_note="Step files load production by relative path (e.g. `require('../../src/...')`); "
                                       "the project's packages are in `node_modules/`, and "
                                       "`node node_modules/@cucumber/cucumber/bin/cucumber.js FEATURE:LINE` runs a "
                                       "scenario.")

    def version(self) -> str:
        return CUCUMBER_VERSION

    def runtime_packages(self) -> list[str]:
        return [f"@cucumber/cucumber@{CUCUMBER_VERSION}", f"@stryker-mutator/core@{STRYKER_VERSION}",
                f"@stryker-mutator/cucumber-runner@{STRYKER_VERSION}"]

    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        from bench.frameworks.cucumber_js.runner import CLI

        return [CLI, *(["--fail-fast"] if stop else []), *(["--format", f"message:{report}"] if report else []),
                *[f"{feature}:{line}" for line in lines]]

    def dry_run_command(self, features_dir: str) -> list[str]:
        from bench.frameworks.cucumber_js.runner import CLI

        return [CLI, "--dry-run", "--format", "summary", features_dir]

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        # cucumber-js parses with @cucumber/gherkin, the reference grammar our reader follows;
        # a disagreement shows up at build time as a selected line that runs no pickle
        return []

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        from bench.frameworks.cucumber_js.runner import link_tree, run_cucumber

        replaced = self.language.mutated_files(root, mutant)
        with tempfile.TemporaryDirectory(prefix="req2test-fresh-") as tmp:
            work = Path(tmp) / "root"
            link_tree(root, work, replaced, (root / "node_modules").resolve())
            start = time.perf_counter()
            run = run_cucumber(work, [f"{feature}:{line}" for line in lines], Path(tmp) / "out",
                               timeout=timeout, fail_fast=True)
            return fresh_verdict(run, time.perf_counter() - start)

    # ------------------------------------------------------------------ build and judge
    def builder(self) -> Builder:
        return _CucumberJsBuilder(self)

    def judge(self, context: JudgeContext) -> Judge:
        from bench.frameworks.cucumber_js.judge import CucumberJsJudge

        return CucumberJsJudge(self, context)


class _CucumberJsBuilder(Builder):
    """Stryker's instrumented runs and fresh node processes (``build``)."""

    def __init__(self, framework: CucumberJsFramework) -> None:
        self.framework = framework

    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        from bench.frameworks.cucumber_js.build import build_project

        return build_project(self.framework, source, out_dir, options, progress, timer, tmp)


def fresh_verdict(run: CucumberRun, elapsed: float) -> FreshVerdict:
    if run.timed_out:
        return FreshVerdict(RunVerdict.timeout, elapsed)
    if run.passed:
        return FreshVerdict(RunVerdict.survived, elapsed)
    if not run.report.steps_ran():
        return FreshVerdict(RunVerdict.infra_no_step, elapsed, (run.stderr or json.dumps(run.report.run_hook_failures))[-300:])
    return FreshVerdict(RunVerdict.killed, elapsed)
