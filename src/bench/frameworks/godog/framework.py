"""Godog (Go) behind the ``Framework`` protocol — issue 28: runs, the test side, views,
calibration files, a builder with mutant schemata, and a judge (``judge.py``).

What differs from the other two, and why:

- **runs**: the suite's test binary is compiled once (``go test -c``) and every run is a new
  process of it in the package directory (``runner.py``): a Go program cannot fork, and godog
  runs every scenario of a process in one package state. The runner's "interpreter" is the test
  binary req2test builds, not a program of the project's environment; ``run_command`` is what a
  developer types instead (``go test ./PACKAGE ... -args FEATURE:LINE``), run by ``go``;
- **granularity**: a test implementation is a set of ``X.Step(pattern, handler)`` registration
  statements plus the handlers and package helpers they reach (``testside.py``);
- **versions**: godog is a module of the project (go.mod), not something req2test installs, so
  ``runtime_packages`` is empty and ``version`` is the godog the last project required (else the
  newest in the shared module cache).
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from bench.frameworks.godog.language import GoLanguage
from bench.frameworks.godog.settings import GodogSettingsError, package_of_feature, required_godog
from bench.frameworks.instance_sites import binding_roles, instance_sites
from bench.frameworks.protocol import Builder, Framework, FreshVerdict, PromptTerms, TestAreaSpec, TestSideView
from bench.gherkin_reader import FeatureFile
from bench.judging import Judge, JudgeContext, RunVerdict, UnsupportedByFramework
from bench.model import GoldTest, Mutant

if TYPE_CHECKING:
    from bench.builder.pipeline import BuildOptions, StageTimer
    from bench.frameworks.godog.layout import GodogLayout
    from bench.frameworks.godog.runner import GodogRun
    from bench.frameworks.godog.testside import TestSideGo
    from bench.model import DatasetCard
    from bench.progress import Progress
    from bench.project import ProjectSource

CONFIG_FILES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum", "req2test.toml"})
NO_SCENARIO_TAG = "@req2test-selects-no-scenario"  # a tag no scenario has: the suite loads, nothing runs
SOURCE_SUFFIXES = (".go",)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version.split("-", 1)[0])[:3])


class GodogFramework(Framework):
    name: ClassVar[str] = "godog"
    language: ClassVar[GoLanguage] = GoLanguage()
    runner_config_files: ClassVar[frozenset[str]] = CONFIG_FILES
    # run_command's argv is given to the go command (``go test``); req2test's own runs start the
    # test binary it compiled. Not "python": an agent's sandbox needs no Python environment
    interpreter: ClassVar[str] = "go"

    def __init__(self) -> None:
        self._godog_version: str | None = None  # what the last project's go.mod requires
        # the layouts of the project trees seen (suites by feature: run_command has no tree)
        self._layouts: dict[Path, GodogLayout] = {}

    def layout(self, root: Path, features_dir: str | None = None) -> GodogLayout:
        """The project's suites and test sides (``layout``), remembered per tree."""
        from bench.frameworks.godog.layout import GodogLayout

        key = root.resolve()
        if key not in self._layouts:
            try:
                made = GodogLayout.of(root, features_dir)
            except GodogSettingsError as exc:
                raise RuntimeError(str(exc)) from exc
            self._layouts.setdefault(key, made)  # (two threads may make one: the first stays)
        return self._layouts[key]

    # ------------------------------------------------------------------ the runner
    def prompt_terms(self) -> PromptTerms:
        return PromptTerms(
            runner="godog", language="Go",
            step_definitions="godog step definitions (`ctx.Step(pattern, handler)` registrations and their handler "
                             "functions)",
            hooks_file="the suite's initializer functions (ScenarioInitializer/TestSuiteInitializer) and TestMain",
            code_fence="go",
            run_example="go test ./test -count=1 -run '^$' -args --godog.strict=true features/x.feature:12",
            placeholder='panic("implementation hidden")',
            infrastructure="TestMain, the initializer functions that register the steps (their hooks stay; the "
                           "`Step` registrations are the test implementation) and the code only they reach",
            import_note="Step definitions are Go files of the suite's test package (e.g. `test/*_test.go`, package "
                        "`test`); they import production by its module path (go.mod's `module` line plus the "
                        "directory). `go test ./PACKAGE -count=1 -run '^$' -args --godog.strict=true "
                        "features/x.feature:LINE` runs a scenario from the module root (the path is "
                        "relative to the package directory; godog selects a Scenario's own line, and an "
                        "outline's line runs all its Examples rows).")

    def version(self) -> str:
        if self._godog_version:
            return self._godog_version
        from bench.frameworks.godog.toolchain import cache_root

        found = sorted((p.name.split("@v", 1)[1] for p in (cache_root() / "mod" / "github.com" / "cucumber").glob(
            "godog@v*") if p.is_dir()), key=_version_key)
        return found[-1] if found else "unknown"

    def note_project(self, root: Path) -> None:
        """Record the godog version ``root``'s go.mod requires (what the card's runner names)."""
        self._godog_version = required_godog(root) or self._godog_version

    def runtime_packages(self) -> list[str]:
        return []  # godog is a module the project's go.mod requires; nothing is installed for it

    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        """``go test`` of the feature's package (godog's layout: ``<package>/features/...``,
        ``settings.package_of_feature``), the feature paths after ``-args`` relative to the package
        directory (a suite's TestMain takes them as ``opt.Paths = flag.Args()``, as req2test's own
        runs give them). godog selects by a Scenario's line; an Examples row's line selects nothing
        (req2test's own runs select a row through a one-row copy of the feature, ``outline.py``)."""
        for layout in reversed(list(self._layouts.values())):
            if layout.flag_driven:
                continue
            suite = layout.suite_of(feature, lines)
            suite_plan = layout.plan(suite) if suite is not None else None
            if suite is None or suite_plan is None or suite.test is None:
                continue
            from bench.frameworks.godog.suites import subtest_pattern

            names = [suite_plan.subtests[(feature, line)] for line in lines]
            pattern = subtest_pattern(suite.test, names[0]) if len(names) == 1 else f"^{suite.test}$"
            return ["test", "-count=1", "-v", *([f"-tags={','.join(suite.build_tags)}"] if suite.build_tags else []),
                    f"-run={pattern}", "." if suite.package == "." else f"./{suite.package}"]
        package, path = package_of_feature(feature)
        return ["test", "-count=1", "-run=^$", "." if package == "." else f"./{package}", "-args",
                "--godog.strict=true", *(["--godog.stop-on-failure"] if stop else []),
                *([f"--godog.format=cucumber:{report}"] if report else []),
                *[f"{path}:{line}" for line in lines]]

    def dry_run_command(self, features_dir: str) -> list[str]:
        """The suite loads (its package compiles, TestMain and the initializers run) and selects
        no scenario: a tag none has. (``--godog.definitions`` lists the steps but always exits 2.)"""
        package, path = package_of_feature(features_dir.rstrip("/") + "/x.feature")
        return ["test", "-count=1", "-run=^$", "." if package == "." else f"./{package}", "-args",
                "--godog.strict=true", f"--godog.tags={NO_SCENARIO_TAG}", path.rsplit("/", 1)[0]]

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        # godog v0.14 parses with cucumber's gherkin/go, the official grammar our reader follows;
        # a disagreement shows at build time as a selected line that runs no pickle
        return []

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        """A plain test binary of a copy of ``root`` with ``mutant`` on disk, one process per
        selected line; a compile error means the runner could not load the variant."""
        from bench.frameworks.godog.runner import run_scenario
        from bench.frameworks.godog.toolchain import GoToolchain, build_test_binary
        from bench.frameworks.trees import link_tree

        layout = self.layout(root)
        suite = layout.suite_of(feature, lines)
        if suite is None:
            return FreshVerdict(RunVerdict.infra_no_step, 0.0, f"no godog suite runs {feature}:{lines}")
        replaced = {}
        if mutant is not None:
            replaced[mutant.file] = self.language.apply_mutant((root / mutant.file).read_text(encoding="utf-8"),
                                                               mutant)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="req2test-godog-fresh-") as tmp:
            tree = link_tree(root, Path(tmp) / "root", replaced)
            binary = Path(tmp) / "bin" / "suite.test"
            built = build_test_binary(tree, suite.package, binary, GoToolchain.find(), timeout=max(600.0, timeout),
                                      tags=suite.build_tags)
            if not built.ok:
                return FreshVerdict(RunVerdict.infra_no_step, time.perf_counter() - start, built.output[-300:])
            for n, line in enumerate(lines):
                run = run_scenario(binary, tree, suite.package, feature, line, Path(tmp) / "out" / str(n),
                                   tags=list(layout.settings.tags), timeout=timeout, plan=layout.plan(suite))
                verdict = run_verdict(run)
                if verdict is not RunVerdict.survived:
                    return FreshVerdict(verdict, time.perf_counter() - start, run.output[-300:])
        return FreshVerdict(RunVerdict.survived, time.perf_counter() - start)

    # ------------------------------------------------------------------ the test side
    def _side(self, root: Path, features_dir: str, package: str | None = None) -> TestSideGo:
        layout = self.layout(root, features_dir)
        return layout.side(package if package is not None else layout.packages[0])

    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """The test packages' directories, Go test files (a testing.T suite's package is often
        production too: only its ``*_test.go`` files are test code there). Fixed: the files
        that hold no registration and only infrastructure (TestMain, ``init``, hooks-only
        initializers, plain Go tests, what only they reach) — or nothing but declarations.
        Protected: every other file under the packages (features, fixtures, resources)."""
        layout = self.layout(root, features_dir)
        dirs: list[str] = []
        fixed: set[str] = set()
        entries: list[Path] = []
        for package in layout.packages:
            side = layout.side(package)
            sites = side.sites()
            implementation = {s.file for s in sites} | {d.file for d in side.closure(sites).functions}
            fixed |= {f for f in side.files if f not in implementation}
            base = root / package if package not in ("", ".") else root
            dirs.append(package if package not in ("", ".") else ".")
            entries += [p for p in base.rglob("*")] if package not in ("", ".") else [p for p in base.glob("*")]
        suffixes = SOURCE_SUFFIXES if layout.flag_driven else ("_test.go",)
        return TestAreaSpec(
            dirs=tuple(dirs), suffixes=suffixes, fixed_paths=frozenset(fixed),
            protected=frozenset(p.relative_to(root).as_posix() for p in entries
                                if p.is_file() and not p.name.endswith(suffixes)),
            directories=frozenset(p.relative_to(root).as_posix() for p in entries if p.is_dir()),
            runner_config_files=self.runner_config_files, language="Go")

    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        """Registration granularity: every ``Step`` registration and every function only
        registrations reach go (lines dropped, imports they alone used pruned); TestMain, the
        initializers' hooks and what they reach stay — in every test package."""
        layout = self.layout(snapshot, features_dir)
        rewritten: dict[str, bytes] = {}
        removed: list[str] = []
        kept: set[str] = set()
        for package in layout.packages:
            files, gone, infrastructure = layout.side(package).view()
            rewritten.update(files)
            removed += gone
            kept |= set(infrastructure)
        return TestSideView(removed_files=frozenset(), rewritten=rewritten, removed=sorted(removed),
                            infrastructure=frozenset(kept))

    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        """oracle / empty (every handler of the instance returns zero values) / then-stripped
        (the handlers only its Then steps use), from ``testside.calibration_files``."""
        from bench.frameworks.godog.testside import calibration_files

        if suite or len(records) != 1:
            raise UnsupportedByFramework("suite calibration is not implemented for godog projects")
        record = records[0]
        features_dir = _features_dir(snapshot)
        packages = {str(Path(d.file).parent.as_posix()) for d in record.step_definitions}
        if len(packages) != 1:
            raise UnsupportedByFramework(f"godog: the instance's registrations lie in {len(packages)} packages")
        side = self._side(snapshot, features_dir, packages.pop())
        sites = instance_sites(side.sites(), record)
        if len(sites) != len({(d.file, d.line) for d in record.step_definitions}):
            raise UnsupportedByFramework(f"godog: {len(record.step_definitions) - len(sites)} of the instance's registrations are not "
                                         f"in the snapshot's test package")
        return calibration_files(side, sites, binding_roles(record))

    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        # the module cache is the go command's (GOMODCACHE), not a directory of the workspace
        return {}

    # ------------------------------------------------------------------ build and judge
    def builder(self) -> Builder:
        return _GodogBuilder(self)

    def judge(self, context: JudgeContext) -> Judge:
        from bench.frameworks.godog.judge import GodogJudge

        return GodogJudge(self, context)


class _GodogBuilder(Builder):
    """One test binary, one process per scenario (``build``)."""

    def __init__(self, framework: GodogFramework) -> None:
        self.framework = framework

    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        from bench.frameworks.godog.build import build_project

        return build_project(self.framework, source, out_dir, options, progress, timer, tmp)


def run_verdict(run: GodogRun) -> RunVerdict:
    """What one run showed of a variant: survived (the selected pickle passed), timeout,
    infra_no_step (no report, or no step of the pickle ran), killed (a step failed)."""
    if run.timed_out:
        return RunVerdict.timeout
    if run.passed:
        return RunVerdict.survived
    scenario = run.scenario
    if scenario is None or not any(s.status in ("passed", "failed") for s in scenario.steps):
        return RunVerdict.infra_no_step
    return RunVerdict.killed


def _features_dir(snapshot: Path) -> str:
    from bench.frameworks.godog.settings import settings_table

    return str(settings_table(snapshot).get("features", "features"))

