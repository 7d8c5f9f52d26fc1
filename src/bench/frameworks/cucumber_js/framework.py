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
from typing import TYPE_CHECKING, Any, ClassVar

from bench.frameworks.cucumber_js.language import TypeScriptLanguage
from bench.frameworks.protocol import Framework, FreshVerdict, PromptTerms, TestAreaSpec
from bench.gherkin_reader import FeatureFile
from bench.model import Mutant

if TYPE_CHECKING:
    from bench.frameworks.cucumber_js.runner import CucumberRun

CUCUMBER_VERSION = "12.9.0"  # 13.x needs Node >= 22; Node 20 is what Debian gives here
STRYKER_VERSION = "9.6.1"
CONFIG_FILES = frozenset({"cucumber.json", "cucumber.js", "cucumber.cjs", "cucumber.mjs", "cucumber.yaml",
                          "cucumber.yml", "package.json", "package-lock.json", "tsconfig.json",
                          "stryker.config.json", "stryker.conf.js", "req2test.toml", ".mocharc.json"})


class CucumberJsFramework(Framework):
    name: ClassVar[str] = "cucumber-js"
    language: ClassVar[TypeScriptLanguage] = TypeScriptLanguage()
    runner_config_files: ClassVar[frozenset[str]] = CONFIG_FILES
    # no Python worker: builds go through bench.frameworks.cucumber_js.build, evaluations
    # through bench.frameworks.cucumber_js.judge (the protocol's build_project/judge_instance)
    build_worker_module: ClassVar[str] = "bench.frameworks.cucumber_js.build"
    eval_worker_module: ClassVar[str] = "bench.frameworks.cucumber_js.judge"
    interpreter: ClassVar[str] = "node"

    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """The directories of the profile's step files; files without a step definition
        (world, hooks, registration) are fixed."""
        from bench.frameworks.cucumber_js.runner import step_files
        from bench.frameworks.cucumber_js.testside import SOURCE_SUFFIXES, TestSideJs

        files = step_files(root)
        side = TestSideJs(root, files)
        return TestAreaSpec(dirs=tuple(sorted({f.rsplit("/", 1)[0] for f in files if "/" in f})),
                            suffixes=SOURCE_SUFFIXES, fixed_paths=frozenset(side.infrastructure))

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

    # ------------------------------------------------------------------ own pipelines
    def build_project(self, source: Any, out_dir: Path, options: Any, progress: Any, timer: Any,
                      tmp: Path) -> Any:
        from bench.frameworks.cucumber_js.build import build_project

        return build_project(self, source, out_dir, options, progress, timer, tmp)

    def evaluation(self, dataset_root: Path, project: Any, gold: dict, options: Any) -> Any:
        from bench.frameworks.cucumber_js.judge import ProjectJudge

        return ProjectJudge(self, dataset_root, project, gold, options)


def fresh_verdict(run: CucumberRun, elapsed: float) -> FreshVerdict:
    if run.timed_out:
        return FreshVerdict("timeout", elapsed)
    if run.passed:
        return FreshVerdict("survived", elapsed)
    if not run.report.steps_ran():
        return FreshVerdict("infra_no_step", elapsed, (run.stderr or json.dumps(run.report.run_hook_failures))[-300:])
    return FreshVerdict("killed", elapsed)
