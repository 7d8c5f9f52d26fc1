"""Cucumber-JVM (Java) behind the ``Framework`` protocol — issue 29: runs, the test side, views,
calibration files, a builder with mutant schemata (``build.py``, ``mutation.py``) and a judge
(``judge.py``: fresh JVMs in bubblewrap without ``/proc``, the Java screen).

What differs from the other frameworks, and why:

- **runs**: the project is compiled once by Maven (``workspace.prepare``); every run is a new JVM
  through cucumber's own command line, ``io.cucumber.core.cli.Main`` (``runner.py``): static
  state (a shared Mockito mock, ``ObjectMapper``s) outlives a scenario in one JVM. A variant of
  the test side is compiled by a warm javac (``javac_server``) against the project's classes;
- **granularity**: a test implementation is a set of annotated step methods (``@Given``,
  ``@When``, ``@Then``...) plus the helpers, fields and constructors they reach (``testside.py``);
- **versions**: cucumber-jvm is a Maven dependency of the project, not something req2test
  installs (``runtime_packages`` is empty); ``version`` is the one the last project's build used;
- ``run_command`` is what a developer types, ``mvn test`` with cucumber's own properties
  (``cucumber.features``, ``cucumber.filter.tags``), run by ``mvn``;
- **ground truth vs verdicts**: the builder runs mutants in warm JVMs (``warm_runner``: a class
  loader per run), checked against fresh JVMs on a sample; a judge's every verdict run is a
  fresh JVM (the trust rule).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from bench.frameworks.cucumber_jvm.language import JavaLanguage
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettingsError, read_settings, settings_table
from bench.frameworks.instance_sites import binding_roles, instance_sites
from bench.frameworks.protocol import Builder, Framework, FreshVerdict, PromptTerms, TestAreaSpec, TestSideView
from bench.gherkin_reader import FeatureFile
from bench.judging import Judge, JudgeContext, RunVerdict, UnsupportedByFramework
from bench.model import GoldTest, Mutant

if TYPE_CHECKING:
    from bench.builder.pipeline import BuildOptions, StageTimer
    from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun
    from bench.frameworks.cucumber_jvm.testside import TestSideJava
    from bench.model import DatasetCard
    from bench.progress import Progress
    from bench.project import ProjectSource

CONFIG_FILES = frozenset({"pom.xml", "req2test.toml", "cucumber.properties", "junit-platform.properties"})
_CUCUMBER_JAR = re.compile(r"/io/cucumber/cucumber-core/([^/]+)/cucumber-core-")


class CucumberJvmFramework(Framework):
    name: ClassVar[str] = "cucumber-jvm"
    language: ClassVar[JavaLanguage] = JavaLanguage()
    runner_config_files: ClassVar[frozenset[str]] = CONFIG_FILES
    # run_command's argv is given to Maven; req2test's own runs start `java` on the class path
    interpreter: ClassVar[str] = "mvn"

    def __init__(self) -> None:
        self._version: str | None = None
        self._sides: dict[Path, TestSideJava] = {}

    def note_classpath(self, dependencies: list[str] | tuple[str, ...]) -> None:
        """Record the cucumber-core version on a project's class path (the card's runner)."""
        for jar in dependencies:
            found = _CUCUMBER_JAR.search(jar.replace("\\", "/"))
            if found:
                self._version = found[1]
                return

    def side(self, root: Path, features_dir: str | None = None) -> TestSideJava:
        """The project's test side (step methods, helpers, hooks), remembered per tree."""
        from bench.frameworks.cucumber_jvm.pickles import companion_steps
        from bench.frameworks.cucumber_jvm.testside import TestSideJava

        key = root.resolve()
        if key not in self._sides:
            try:
                settings = read_settings(root, features_dir)
            except CucumberJvmSettingsError as exc:
                raise RuntimeError(str(exc)) from exc
            fixtures = companion_steps(root, settings.features, settings.setup_tags, settings.teardown_tags)
            self._sides.setdefault(key, TestSideJava(root, settings.glue_dirs, fixture_steps=fixtures))
        return self._sides[key]

    # ------------------------------------------------------------------ the runner
    def prompt_terms(self) -> PromptTerms:
        return PromptTerms(
            runner="Cucumber-JVM", language="Java",
            step_definitions="Cucumber-JVM step definitions (methods annotated @Given/@When/@Then in the glue "
                             "packages' classes, with the fields, constructors and helpers they use)",
            hooks_file="the glue's hook methods (@Before/@After) and the shared state classes injected into "
                       "step classes",
            code_fence="java",
            run_example="mvn -q test -Dcucumber.features=src/test/resources/x/y.feature:12",
            placeholder='throw new UnsupportedOperationException("implementation hidden");',
            infrastructure="the JUnit runner class, hook methods (@Before/@After...), parameter types and the "
                           "state classes every step class shares, and the code only they reach",
            import_note="Step definitions are Java classes in the glue packages under src/test/java (one public "
                        "class per file, package matching the directory); they import production classes by "
                        "package. Step classes get shared state through constructor injection "
                        "(cucumber-picocontainer). `mvn -q test -Dcucumber.features=FILE:LINE` runs one scenario; "
                        "an Examples row is selected by its own line.")

    def version(self) -> str:
        return self._version or "unknown"

    def runtime_packages(self) -> list[str]:
        return []  # cucumber-jvm is a Maven dependency of the project

    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        """``mvn test`` of the project's JUnit runner with cucumber's own properties: the
        selection as ``cucumber.features`` (cucumber-jvm keeps the pickles of the listed lines,
        an Examples row by its own line), ``--strict`` semantics by default in cucumber 6+."""
        selection = f"{feature}:{':'.join(str(n) for n in lines)}" if lines else feature
        plugins = [f"json:{report}"] if report else []
        return ["-q", "test", f"-Dcucumber.features={selection}",
                *(["-Dcucumber.plugin=" + ",".join(plugins)] if plugins else []),
                *(["-Dsurefire.skipAfterFailureCount=1"] if stop else [])]

    def dry_run_command(self, features_dir: str) -> list[str]:
        return ["-q", "test", f"-Dcucumber.features={features_dir}", "-Dcucumber.execution.dry-run=true"]

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        # cucumber-jvm parses with cucumber's gherkin (the grammar bench.gherkin_reader follows);
        # a disagreement shows at build time as a selected line that runs no pickle
        return []

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        """``root`` as ``workspace.prepare`` left it (compiled, its class path beside the
        classes), with ``mutant``'s file recompiled alone by a plain ``javac`` into a directory
        that stands before ``target/classes``; every selected line in a fresh JVM. A compile
        error means the runner could not load the variant."""
        import os
        import subprocess
        import tempfile

        from bench.frameworks.cucumber_jvm.runner import Suite, run_scenario
        from bench.frameworks.cucumber_jvm.schemata import javac_flags
        from bench.frameworks.cucumber_jvm.workspace import CLASSPATH_FILE

        settings = read_settings(root)
        listed = root / "target" / CLASSPATH_FILE
        if not listed.is_file():
            return FreshVerdict(RunVerdict.infra_no_step, 0.0, f"{root} is not a prepared tree (no {listed})")
        dependencies = [p for p in listed.read_text(encoding="utf-8").split(os.pathsep) if p]
        classes, test_classes = root / "target" / "classes", root / "target" / "test-classes"
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="req2test-jvm-fresh-") as tmp_name:
            tmp = Path(tmp_name)
            overlay = tmp / "overlay"
            overlay.mkdir()
            if mutant is not None:
                source = tmp / "src" / mutant.file
                source.parent.mkdir(parents=True, exist_ok=True)
                source.write_text(self.language.apply_mutant((root / mutant.file).read_text(encoding="utf-8"), mutant),
                                  encoding="utf-8")
                proc = subprocess.run(["javac", *javac_flags(root), "-nowarn", "-proc:none", "-d", str(overlay),
                                       "-cp", os.pathsep.join([*dependencies, str(classes)]), str(source)],
                                      capture_output=True, text=True, check=False, timeout=max(600.0, timeout))
                if proc.returncode != 0:
                    return FreshVerdict(RunVerdict.infra_no_step, time.perf_counter() - start,
                                        (proc.stdout + proc.stderr)[-300:])
            suite = Suite(root=root, classpath=(*dependencies, str(test_classes), str(overlay), str(classes)),
                          glue=settings.glue, tags=settings.tags, jvm_args=settings.jvm_args,
                          setup_tags=settings.setup_tags, teardown_tags=settings.teardown_tags)
            for n, line in enumerate(lines):
                run = run_scenario(suite, feature, line, tmp / "out" / str(n), timeout=timeout)
                verdict = run_verdict(run)
                if verdict is not RunVerdict.survived:
                    return FreshVerdict(verdict, time.perf_counter() - start, run.output[-300:])
        return FreshVerdict(RunVerdict.survived, time.perf_counter() - start)

    # ------------------------------------------------------------------ the test side
    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """The glue packages' source directories, ``.java`` files. Fixed: files that hold no step
        method and none of the helpers step methods reach (hooks, the runner, shared state).
        Protected: every other file of those directories."""
        settings = read_settings(root, features_dir)
        side = self.side(root, features_dir)
        sites = side.sites()
        implementation = {s.file for s in sites} | set(side.closure(sites).files)
        dirs = [d for d in settings.glue_dirs if (root / d).is_dir()]
        entries = [p for d in dirs for p in (root / d).rglob("*")]
        java_files = {p.relative_to(root).as_posix() for p in entries if p.is_file() and p.suffix == ".java"}
        return TestAreaSpec(
            dirs=tuple(dirs), suffixes=(".java",), fixed_paths=frozenset(java_files - implementation),
            protected=frozenset(p.relative_to(root).as_posix() for p in entries
                                if p.is_file() and p.suffix != ".java"),
            directories=frozenset(p.relative_to(root).as_posix() for p in entries if p.is_dir()),
            runner_config_files=self.runner_config_files, language="Java")

    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        """Step-method granularity: every step method and every helper only step methods reach go
        (their lines blanked, so the rest keeps its numbers); hooks, the runner and the shared
        state classes stay."""
        files, removed, infrastructure = self.side(snapshot, features_dir).view()
        return TestSideView(removed_files=frozenset(), rewritten=files, removed=sorted(removed),
                            infrastructure=frozenset(infrastructure))

    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        """oracle / empty (every step method of the instance does nothing) / then-stripped (the
        methods only its Then steps use), from ``testside.calibration_files``."""
        from bench.frameworks.cucumber_jvm.testside import calibration_files

        if suite or len(records) != 1:
            raise UnsupportedByFramework("suite calibration is not implemented for cucumber-jvm projects")
        record = records[0]
        side = self.side(snapshot, _features_dir(snapshot))
        sites = instance_sites(side.sites(), record)
        if len(sites) != len({(d.file, d.line) for d in record.step_definitions}):
            raise UnsupportedByFramework(f"cucumber-jvm: {len(record.step_definitions) - len(sites)} of the instance's step methods "
                                         f"are not in the snapshot's glue")
        return calibration_files(side, sites, binding_roles(record))

    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        # the Maven repository is Maven's (~/.m2 or -Dmaven.repo.local), not part of a workspace
        return {}

    # ------------------------------------------------------------------ build and judge
    def builder(self) -> Builder:
        return _CucumberJvmBuilder(self)

    def judge(self, context: JudgeContext) -> Judge:
        from bench.frameworks.cucumber_jvm.judge import CucumberJvmJudge

        return CucumberJvmJudge(self, context)


class _CucumberJvmBuilder(Builder):
    def __init__(self, framework: CucumberJvmFramework) -> None:
        self.framework = framework

    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        from bench.frameworks.cucumber_jvm.build import build_project

        return build_project(self.framework, source, out_dir, options, progress, timer, tmp)


def run_verdict(run: CucumberJvmRun) -> RunVerdict:
    """survived (the selected pickle passed), timeout, infra_no_step (no report, or no step of
    the pickle ran), killed (a step failed)."""
    if run.timed_out:
        return RunVerdict.timeout
    if run.passed:
        return RunVerdict.survived
    scenario = run.scenario
    if scenario is None or not any(s.status in ("passed", "failed") for s in scenario.steps):
        return RunVerdict.infra_no_step
    return RunVerdict.killed


def _features_dir(snapshot: Path) -> str:
    return str(settings_table(snapshot).get("features", "features"))


__all__ = ["CucumberJvmFramework", "run_verdict"]
