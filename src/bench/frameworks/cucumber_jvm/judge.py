"""Judge a Cucumber-JVM prediction: the prediction's glue compiled once against the project, the
production as mutant schemata compiled once per judge session, then every verdict run a fresh
JVM in bubblewrap without ``/proc`` — started, or, where criu works, restored from a checkpoint
made once per session before any class of the project existed in it (``restored``: the same
trust, a process per run, about half the CPU; the traced run is always started).

**Nothing that decides a verdict is in the test's reach** (issue 25's rule, by construction):

- every variant — the clean run, each mutant, each null variant, each decoy — runs **the same
  class path and the same argv** (``java -Xmx1g … req2test.schema.Main
  io.cucumber.core.cli.Main … --plugin json:/run/out/cucumber.json FEATURE:LINE``, the output
  directory bound at one path inside the sandbox, one environment); the variant is a number
  the launcher reads from fd 3 (an unlinked file) and closes before any class of the class
  path loads (``schemata``) — or, in a restored JVM, a command file the zygote reads and
  deletes before the run's class loader exists. No argument, environment variable, system
  property or file differs between a clean run and a mutant run;
- the **clean run itself runs a null number** (one no site uses): a test that asks the switch
  "is some number active" by reflection gets the same answer in the clean run as under a
  mutant, and fails its own clean run;
- the schemata numbering is drawn anew for each judge session (``order_seed``, from 1..2N), so
  nothing learnt about numbers in one session holds in the next;
- **null variants** (numbers no site uses) and **decoys** (real mutants of the dataset on lines
  the prediction's own traced run has bytecode on and never executed: their numbers are the
  ones sites use, so a test that reads the class files cannot tell them from a kill, yet they
  cannot change what the test runs) go where cucumber-js has equivalent variants, each run
  exactly like a mutant, on the rows of some kill. A test that fails one while the clean run
  passes is reacting to the switch, not to behaviour: the null variant again (four times the
  budget) beside two clean runs — failing again → ``tampering`` (a decoy that fails again:
  ``unstable``, since a path that differs from run to run may reach it), anything else →
  ``unstable`` unless every retry passes (a busy machine);
- the run's tree holds **no ``.java`` file and no ``target/``**: the JVM needs classes, not
  sources, so the ground truth's step methods (their source) and production as data are not
  there; the class path holds the prediction's compiled glue (the ground truth's step methods
  removed from the shipped glue, ``TestSideJava.files_without``, the prediction's files laid
  over it), the test resources, the schemata classes and production's resources;
- a static screen (``screen``) refuses the routes into the JVM (``setAccessible``,
  ``getDeclared*``, ``Unsafe``, class loaders, ``Class.forName`` of a computed name,
  ``req2test``, processes, ``System.exit``, JNI, ``/proc``…) → ``tampering``, before anything
  compiles;
- a sample of the claimed kills (5) is reproduced in a fresh JVM; a kill that does not
  reproduce → ``unstable``.

What in-process code can still do is in ``screen``'s docstring: in short, anything by behaviour
(it moves the clean run, the null variants and the mutants alike), and, through a reflective
route the screen does not list plus the class files read as data, tell *which sites* the active
number belongs to — the numbering per session, the null clean run, the nulls and the decoys
make every cruder form of that fail a run with no mutant in it. The report is a file the JVM
writes into its own (writable) output directory, and the exit status is the JVM's: a test that
reaches ``Runtime.halt`` through an unlisted route could rewrite the report and exit 0 — in every
run alike, so it can forge a pass of a failing test (0 kills), never a kill. The traced run can
be told from a verdict run (plain classes, the JaCoCo agent): what it measures (coverage, API
calls, which rows reach a mutant, which mutants are decoys) is what the test shows it.

The traced run is a separate JVM per row over the plain production classes (no schemata) with
the JaCoCo agent, sandboxed too: its covered lines (less what loading the suite and, alone, the feature's
setup/teardown companions cover) give
``coverage_jaccard``, and the production calls of the prediction's bound step methods (the JSON
formatter's ``match`` → ``TestSideJava.site_for_method`` → the closure's spans → ``CallReader``
→ ``scenario_calls``) the API-call F1, measured as the builder measured the ground truth. Its
per-row coverage decides which rows a mutant runs in (``rows_to_run``: every row when the trace
reached none), which kills wait (``kill_plan``: when more than 8 lie on lines no row reached, 8
run first and the rest only if one of those fails, so an empty test costs a few JVMs rather than
one per kill, and a test hiding its reach from the traced run only loses kills) and which
mutants are decoys.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.builder.schemata_stage import MIN_TIMEOUT, TIMEOUT_FACTOR, RowCoverage, kill_plan, rows_to_run
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.cucumber_jvm import restored as restored_jvm
from bench.frameworks.cucumber_jvm import runner
from bench.frameworks.cucumber_jvm.cucumber_json import read_report
from bench.frameworks.cucumber_jvm.declarations import CallReader, JavaProductionDeclarations
from bench.frameworks.cucumber_jvm.failure import clean_run_failure
from bench.frameworks.cucumber_jvm.framework import run_verdict
from bench.frameworks.cucumber_jvm.interfaces import scenario_calls
from bench.frameworks.cucumber_jvm.jacoco import CoverageBaseline
from bench.frameworks.cucumber_jvm.jacoco import report as jacoco_report
from bench.frameworks.cucumber_jvm.javac_server import JavacPool
from bench.frameworks.cucumber_jvm.pickles import COMPANIONS_ONLY
from bench.frameworks.cucumber_jvm.restored import Zygote
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun, Jacoco, Suite
from bench.frameworks.cucumber_jvm.sandbox import OUT, Wrap, java_binary, java_env, layout, sandboxed
from bench.frameworks.cucumber_jvm.schemata import (
    PACKAGE,
    SchemataError,
    compile_schemata,
    launch,
    selection,
    through_main,
)
from bench.frameworks.cucumber_jvm.screen import screen
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettingsError, read_settings
from bench.frameworks.cucumber_jvm.testside import TestSideJava
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain, jacoco_jars
from bench.frameworks.cucumber_jvm.workspace import JavaProject, PrepareError, compile_variant, prepare, without_classes
from bench.frameworks.trees import copy_tree, link_tree
from bench.isolation import bwrap_path
from bench.judging import (
    RETRY_BUDGET,
    Judge,
    JudgeContext,
    Judgement,
    RetryDecision,
    RunTrace,
    RunVerdict,
    UnsupportedByFramework,
    decide_retries,
    equivalent_count,
    retry_plan,
    spread_among,
)
from bench.model import GoldTest, Instance, Mutant, Outcome, Prediction
from bench.mutation.executor import load_manifest

if TYPE_CHECKING:
    from bench.frameworks.cucumber_jvm.framework import CucumberJvmFramework

REPRODUCED_KILLS = 5
MIN_ROW_TIMEOUT = 30.0  # a fresh JVM in a sandbox on a busy machine starts in seconds, not milliseconds
MEMORY_LIMIT = 1 << 30  # -Xmx of every verdict run (a mutant that allocates without end fails, not the machine)
# the same for every run; semantics-preserving (C1 only, one GC thread): short runs cost less CPU
JVM_FLAGS = (*runner.JVM_FLAGS, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
NO_SCENARIO_TAG = "@req2test-selects-no-scenario"  # the builder's: loading the suite, no scenario
SWITCH_FIELD = f"{PACKAGE}.Main selected"  # where a restored zygote writes the number (restored.py)
NULL, DECOY = "null", "decoy"  # plan items: a number no site uses / a mutant the prediction never reaches
ROLES = ("given", "when", "then")
_ASSERTIONS = ("AssertionError", "AssertionFailedError", "ComparisonFailure", "MultipleFailuresError")


def classify(runs: list[CucumberJvmRun], expected: int) -> tuple[Outcome, str]:
    """The stage ladder from the clean run's rows (docs/evaluation.md#outcomes-the-first-failing-stage)."""
    for run in runs:
        where = f"line {run.line}"
        if run.timed_out:
            return Outcome.execution_failure, f"{where}: timeout"
        if not run.report.written:
            if run.exit_code == 0:
                return Outcome.execution_failure, (f"{where}: the JVM ended before cucumber wrote its report "
                                                   f"(exit 0): {_last_lines(run.output)}")
            return Outcome.build_failure, f"{where}: the suite did not start (exit {run.exit_code}): " + \
                _last_lines(run.output)
        scenario = run.scenario
        if scenario is None:
            return Outcome.execution_failure, (f"{where}: cucumber ran {len(run.report.scenarios)} scenarios, "
                                               f"not the selected one")
        for step in scenario.steps:
            if step.status in ("undefined", "pending", "ambiguous"):
                return Outcome.binding_failure, f"{step.status} step: {step.text}"
        for step in scenario.steps:
            if step.status == "failed":
                first = step.error.strip().splitlines()[0] if step.error.strip() else ""
                outcome = Outcome.assertion_failure if any(a in first for a in _ASSERTIONS) \
                    else Outcome.execution_failure
                return outcome, f"{where}: {step.text}: {step.error.strip()[:240]}"
        for hook in (*scenario.before, *scenario.after):
            if hook.status == "failed":
                return Outcome.execution_failure, f"{where}: hook {hook.location}: {hook.error.strip()[:240]}"
        for other in run.others:  # a setup/teardown companion (settings.setup_tags), or a stray pickle
            if other.line not in run.companions:
                return Outcome.execution_failure, f"{where}: cucumber also ran the scenario at line {other.line}"
            if not other.passed:
                return Outcome.execution_failure, f"{where}: its companion scenario at line {other.line} failed"
        if not run.passed:
            return Outcome.execution_failure, f"{where}: exit {run.exit_code}: {_last_lines(run.output)}"
    if len(runs) != expected:
        return Outcome.execution_failure, f"ran {len(runs)} of {expected} rows"
    return Outcome.passed, ""


def _last_lines(output: str) -> str:
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[:300]


@dataclass
class _Session:
    """What one judge session made (``prepare``)."""

    project: JavaProject
    data: Path  # the run tree: the snapshot without .java files and target/
    schemata_classes: Path
    main_resources: Path  # target/classes less its classes
    numbers: dict[str, int]
    null_numbers: list[int]
    missing: list[str]
    archive: Path | None
    jacoco: Jacoco
    cli: Path
    baseline: CoverageBaseline  # what loading the suite and each feature's companions cover
    java: str  # the JDK's own launcher, resolved
    seconds: float
    zygote: Zygote | None = None  # verdict runs restore it (``restored``); None: fresh JVMs
    zygote_path: tuple[str, ...] = ()  # its class path (jars, resources): the run's loader holds the rest
    zygote_problem: str = ""  # why there is none (criu missing, the dump failed, turned off)


class CucumberJvmJudge(Judge):
    """Judges one project's instances of a Cucumber-JVM dataset."""

    traces = True
    failures_scored_by_gold = True

    def __init__(self, framework: CucumberJvmFramework, context: JudgeContext) -> None:
        if context.snapshot is not None:
            raise UnsupportedByFramework("judging on a predicted production (the reverse task) is not implemented "
                                         "for cucumber-jvm projects")
        self.framework = framework
        self.record = context.project
        self.options = context.options
        self.snapshot = context.project_snapshot
        self.tmp = context.tmp / "cucumber-jvm"
        features = context.project.features_dir
        try:
            self.settings = read_settings(self.snapshot, features)
        except CucumberJvmSettingsError as exc:
            raise UnsupportedByFramework(f"cucumber-jvm: {exc}") from exc
        if len(self.settings.production) != 1:
            raise UnsupportedByFramework(f"cucumber-jvm: one production source root is supported, not "
                                         f"{list(self.settings.production)}")
        area = framework.test_area(self.snapshot, features)
        self.area = replace(area, authored_dirs=(context.authored_dir,)) if context.authored_dir else area
        self.side = framework.side(self.snapshot, features)
        self.shipped = {rel: (self.snapshot / rel).read_text(encoding="utf-8", errors="replace")
                        for rel in self.side.files}
        self.mutants: dict[str, Mutant] = load_manifest(context.dataset_root, context.project.name) \
            if context.options.mutants else {}
        self.declarations = JavaProductionDeclarations(self.snapshot, list(self.settings.production))
        self.rng = random.Random(context.options.seed)
        self._rng_lock = threading.Lock()
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._count = 0
        self.wrap: Wrap | None = None
        self.javac: JavacPool | None = None

    # ------------------------------------------------------------------ session set-up
    def prepare(self) -> None:
        with self._lock:
            if self._session is None:
                self._session = self._prepare()

    def _prepare(self) -> _Session:
        started = time.monotonic()
        use_bwrap = False
        if self.options.isolation != "none":
            if bwrap_path() is not None:
                use_bwrap = True
            elif self.options.isolation == "bwrap":
                raise RuntimeError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
        try:
            toolchain = JavaToolchain.find()
        except RuntimeError as exc:
            raise RuntimeError(f"cucumber-jvm: {exc}") from exc
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True)
        # the project as shipped, compiled once (Maven offline first)
        work = copy_tree(self.snapshot, self.tmp / "work")
        shutil.rmtree(work / "target", ignore_errors=True)
        try:
            project = prepare(work, read_settings(work, self.record.features_dir), toolchain, self.tmp / "prepare")
        except PrepareError as exc:
            raise RuntimeError(f"cucumber-jvm: {exc}") from exc
        self.framework.note_classpath(project.dependencies)
        self.javac = JavacPool(toolchain.java)
        weakref.finalize(self, self.javac.close)
        try:
            agent, cli = jacoco_jars(toolchain, offline=True)
        except RuntimeError:
            agent, cli = jacoco_jars(toolchain)
        # production as this session judges it: the schemata of the dataset's mutants, numbered
        # afresh (1..2N at random: the numbers no site uses are the null variants)
        mutants = sorted(self.mutants.values(), key=lambda m: m.id)
        try:
            schemata = compile_schemata(link_tree(work, self.tmp / "schemata-tree"), mutants, work,
                                        list(project.dependencies), toolchain, out=self.tmp / "schemata-classes",
                                        production=list(self.settings.production),
                                        order_seed=secrets.randbits(62))
        except SchemataError as exc:
            raise RuntimeError(f"cucumber-jvm: the mutant schemata do not compile: {exc}") from exc
        shutil.rmtree(self.tmp / "schemata-tree", ignore_errors=True)
        used = set(schemata.numbers.values())
        span = max(2 * len(mutants), 64)
        null_numbers = [n for n in range(1, span + 1) if n not in used]
        main_resources = without_classes(project.classes, self.tmp / "main-resources")
        data = self.tmp / "data"
        link_tree(self.snapshot, data, None)
        shutil.rmtree(data / "target", ignore_errors=True)
        for path in list(data.rglob("*.java")):
            if path.is_file() or path.is_symlink():
                path.unlink()
        java = java_binary(toolchain.java)
        plain = project.suite()
        features = sorted((work / self.settings.features).rglob("*.feature"), key=lambda p: p.stat().st_size)
        feature = features[0].relative_to(work).as_posix() if features else self.settings.features
        loading = replace(plain, tags=(NO_SCENARIO_TAG,))
        archived = runner.create_archive(loading, list(project.dependencies), feature, 0, self.tmp / "cds",
                                         timeout=self.options.timeout)
        jacoco = Jacoco(agent, (self.settings.production_package,))

        def covered_by(run: CucumberJvmRun) -> dict[str, set[int]] | None:
            """The production lines a trusted run of the plain project ran (None: no report)."""
            if run.exec_file is None:
                return None
            made = jacoco_report(project.java, cli, run.exec_file, project.classes,
                                 work / self.settings.production[0], run.exec_file.parent / "jacoco.xml")
            return None if made.coverage is None else made.coverage.under(self.settings.production[0])[0]

        load_run = runner.run_scenario(loading, feature, 0, self.tmp / "load", archive=archived.archive,
                                       jacoco=jacoco, timeout=self.options.timeout)
        load_lines = covered_by(load_run) or {}
        # what a feature's setup/teardown companions run alone, as the builder left it out of
        # the ground truth's covered lines: a test that does nothing covers nothing
        companion_cover: dict[str, dict[str, set[int]]] = {}
        for path in features:
            rel = path.relative_to(work).as_posix()
            if not plain.has_companions(rel):
                continue
            run = runner.run_scenario(plain, rel, COMPANIONS_ONLY, self.tmp / "companions" / str(len(companion_cover)),
                                      archive=archived.archive, jacoco=jacoco, timeout=self.options.timeout)
            lines = covered_by(run) if run.companions_passed else None
            if lines is None:
                raise RuntimeError(f"cucumber-jvm: the setup/teardown scenarios of {rel} do not pass on their own "
                                   f"in the shipped project: {run.output[-300:]}")
            companion_cover[rel] = lines
        if use_bwrap:
            readonly = [Path(p) for p in project.dependencies] + [self.tmp / "schemata-classes", main_resources,
                                                                  project.resources, project.classes, agent]
            if archived.archive is not None:
                readonly.append(archived.archive)
            self.wrap = sandboxed(data, readonly, java)
        zygote, zygote_path, zygote_problem = self._zygote(project, data, readonly if use_bwrap else None, java,
                                                           [project.resources, main_resources])
        return _Session(project=project, data=data, schemata_classes=self.tmp / "schemata-classes",
                        main_resources=main_resources, numbers=schemata.numbers, null_numbers=null_numbers,
                        missing=sorted(set(self.mutants) - set(schemata.numbers)), archive=archived.archive,
                        jacoco=jacoco, cli=cli, baseline=CoverageBaseline(load_lines, companion_cover), java=java,
                        seconds=time.monotonic() - started, zygote=zygote, zygote_path=zygote_path,
                        zygote_problem=zygote_problem)

    def _zygote(self, project: JavaProject, data: Path, readonly: list[Path] | None, java: str,
                resources: list[Path]) -> tuple[Zygote | None, tuple[str, ...], str]:
        """The checkpointed JVM the verdict runs restore (``restored``), with its class path (the
        jars, then ``resources``: the verdict class path's order, its class directories left
        out), or why there is none (then every verdict run is a fresh JVM)."""
        if readonly is None:
            return None, (), "the judge runs without bubblewrap"
        if not restored_jvm.enabled():
            return None, (), f"{restored_jvm.ENABLE_ENV}=0"
        if restored_jvm.criu_binary() is None:
            return None, (), "no working criu 4.x (scripts/install-criu.sh)"
        settings = project.settings
        # the project's own jars (settings.reload_groups) load per run, as in the builder's warm runner
        jars = [jar for jar in project.dependencies if not settings.reloaded_jar(jar)]
        # the resources after the jars, as on the verdict class path; unless some jars load per run:
        # they come before the resources there, so the resources load per run too, after them
        reloaded = len(jars) < len(project.dependencies)
        path = (*jars, *([] if reloaded else [str(r.resolve()) for r in resources]))
        out = self.tmp / "zygote-out"
        flags = [*JVM_FLAGS, *settings.jvm_args, f"-Djava.io.tmpdir={OUT / runner.TMP_NAME}",
                 f"-Xmx{MEMORY_LIMIT >> 20}m"]
        try:
            zygote = restored_jvm.make_zygote(java, flags, list(path), data, layout(data, readonly, java),
                                              self._jvm_env(java), out, self.tmp / "zygote",
                                              timeout=max(300.0, self.options.timeout))
        except restored_jvm.ZygoteError as exc:
            return None, (), str(exc)[:500]
        finally:
            shutil.rmtree(out, ignore_errors=True)
        return zygote, path, ""

    @staticmethod
    def _jvm_env(java: str, home: Path = OUT) -> dict[str, str]:
        """Every verdict JVM's environment (a restored one keeps the zygote's); ``home``: the run's
        output directory as the JVM sees it."""
        return {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": "/tmp", "LANG": "C.UTF-8", **java_env(java)}

    # ------------------------------------------------------------------ submission check
    def rejections(self, files: dict[str, str]) -> list[str]:
        return self.area.rejections(files)

    def unusable(self, files: dict[str, str]) -> str | None:
        return None if any(content.strip() for content in files.values()) else "no usable test code (no non-empty file)"

    # ------------------------------------------------------------------ verdict
    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        findings = screen(prediction.files, self.shipped)
        if findings:
            return Judgement(Outcome.tampering, findings[0], evidence=findings)
        self.prepare()
        with self._lock:
            self._count += 1
            number = self._count
        with tempfile.TemporaryDirectory(prefix=f"req2test-jvm-{number}-", dir=self.tmp) as tmp:
            return _Verdict(self, inst, prediction, gold, Path(tmp)).decide()

    def files(self, prediction: Prediction, gold: GoldTest) -> dict[str, bytes]:
        """The glue as judged: the ground truth's step methods removed, the prediction's files laid over."""
        wanted = {(d.file, d.line) for d in gold.step_definitions}
        removed = [s for s in self.side.sites() if (s.file, s.line) in wanted]
        files = self.side.files_without(removed)
        files.update({path: text.encode("utf-8") for path, text in prediction.files.items() if path.endswith(".java")})
        return files

    def shuffled(self, items: list[Any]) -> list[Any]:
        with self._rng_lock:
            items = list(items)
            self.rng.shuffle(items)
            return items

    def planned_retries(self, failed: int) -> list[int | None]:
        with self._rng_lock:
            return retry_plan(failed, self.rng)

    def draw(self, population: list[Any], count: int) -> list[Any]:
        with self._rng_lock:
            return self.rng.sample(population, min(count, len(population)))

    def choice(self, population: list[Any]) -> Any:
        with self._rng_lock:
            return self.rng.choice(population)


class _Verdict:
    """One prediction's runs (one thread)."""

    def __init__(self, judge: CucumberJvmJudge, inst: Instance, prediction: Prediction, gold: GoldTest,
                 tmp: Path) -> None:
        assert judge._session is not None
        self.judge = judge
        self.session = judge._session
        self.inst = inst
        self.prediction = prediction
        self.gold = gold
        self.tmp = tmp
        self.jvms = 0
        self.restores = 0  # verdict runs made by a restored zygote
        self.restore_failures = 0  # restores the zygote never took: made by fresh JVMs instead
        self.binds: list[str] = []  # what a restore sandbox binds beyond the session's layout
        self.wrap: Wrap | None = None
        self.options = judge.options
        self.row_timeout = min(self.options.timeout, max(MIN_ROW_TIMEOUT, MIN_TIMEOUT,
                                                         TIMEOUT_FACTOR * gold.runtime_seconds))

    # ------------------------------------------------------------------ one JVM
    def jvm(self, suite: Suite, line: int, *, number: int | None, timeout: float,
            jacoco: Jacoco | None = None) -> CucumberJvmRun:
        """One fresh JVM on ``suite`` running the row at ``line``: with ``number``, through the
        schemata launcher with ``selection(number)`` as fd 3; sandboxed when the judge is."""
        self.jvms += 1
        session = self.session
        feature = self.inst.requirement.feature_file
        out = self.tmp / "out" / secrets.token_hex(8)  # a name of its own: nothing in it counts the runs
        (out / runner.TMP_NAME).mkdir(parents=True)  # the JVM's java.io.tmpdir (runner.command)
        if number is not None and jacoco is None and session.zygote is not None and self.wrap is not None:
            run = self.restored(suite, line, number, timeout, out)
            if run is not None:
                return run
            self.restore_failures += 1  # made again below, by a fresh JVM
            shutil.rmtree(out, ignore_errors=True)
            (out / runner.TMP_NAME).mkdir(parents=True)
        wrap = self.wrap
        inside = OUT if wrap is not None else out
        argv = runner.command(suite, feature, line, inside, archive=session.archive, jacoco=jacoco)
        fd: int | None = None
        if number is not None:
            argv = through_main(argv, runner.MAIN)
            holder = self.tmp / "sel" / secrets.token_hex(8)
            holder.parent.mkdir(parents=True, exist_ok=True)
            holder.write_bytes(selection(number))
            fd = os.open(holder, os.O_RDONLY)
            holder.unlink()  # only the open descriptor holds it
        try:
            command, extra = launch(argv, fd, MEMORY_LIMIT)
            if wrap is not None:
                command = wrap(command, suite.root, out)
            env = self.judge._jvm_env(session.java, inside)
            code, elapsed, cpu, timed_out, output = runner.run_jvm(command, suite.root, out, timeout, env,
                                                         tuple(extra.get("pass_fds", ())))  # type: ignore[arg-type]
        finally:
            if fd is not None:
                os.close(fd)
        return self.result(suite, line, out, code, elapsed, cpu, timed_out, output, argv,
                           (out / runner.EXEC_NAME) if jacoco is not None else None)

    def result(self, suite: Suite, line: int, out: Path, code: int | None, elapsed: float, cpu: float,
               timed_out: bool, output: str, argv: list[str], exec_file: Path | None = None) -> CucumberJvmRun:
        """A finished run (started or restored) with the report it wrote into ``out``."""
        feature = self.inst.requirement.feature_file
        report = read_report(out / runner.REPORT_NAME)
        report = replace(report, scenarios=tuple(replace(s, uri=runner._relative(s.uri, suite.root))
                                                 for s in report.scenarios))
        return CucumberJvmRun(feature=feature, line=line, report=report, exit_code=code, elapsed=elapsed, cpu=cpu,
                              timed_out=timed_out, output=output, argv=tuple(argv), exec_file=exec_file,
                              companions=suite.selection(feature, line)[1])

    def restored(self, suite: Suite, line: int, number: int, timeout: float, out: Path) -> CucumberJvmRun | None:
        """The run of ``jvm`` by a restored zygote (``restored``), or None when the restore failed
        (the zygote never took its command): the caller then runs a fresh JVM."""
        session = self.session
        assert session.zygote is not None
        feature = self.inst.requirement.feature_file
        on_zygote = set(session.zygote_path)
        argv = runner.command(suite, feature, line, OUT)
        arguments = argv[argv.index(runner.MAIN) + 1:]
        directories = [entry for entry in suite.classpath if entry not in on_zygote]
        restored_jvm.command_file(out, number, SWITCH_FIELD, directories, str(OUT / runner.OUTPUT_NAME), arguments)
        command = restored_jvm.restore_command(session.zygote, self.binds, suite.root, out)
        code, elapsed, cpu, timed_out, output = runner.run_jvm(command, suite.root, out, timeout,
                                                               {"PATH": "/usr/bin:/bin"})
        if not restored_jvm.restored(out):
            return None
        self.restores += 1
        return self.result(suite, line, out, code, elapsed, cpu, timed_out, output, argv)

    def rows(self, suite: Suite, number: int, budget: float = 1.0, rows: list[int] | None = None,
             timeout: float | None = None) -> tuple[RunVerdict, list[CucumberJvmRun]]:
        """Every row (or just ``rows``) with ``number``, stopping at the first that does not pass."""
        runs: list[CucumberJvmRun] = []
        for line in self.inst.requirement.run_lines if rows is None else rows:
            run = self.jvm(suite, line, number=number, timeout=(timeout or self.row_timeout) * budget)
            shutil.rmtree(self.tmp / "out", ignore_errors=True)
            runs.append(run)
            verdict = run_verdict(run)
            if verdict is not RunVerdict.survived:
                return verdict, runs
        return RunVerdict.survived, runs

    def null(self) -> int:
        return self.judge.choice(self.session.null_numbers)

    # ------------------------------------------------------------------ the decision
    def decide(self) -> Judgement:
        session, judge, inst, gold = self.session, self.judge, self.inst, self.gold
        req = inst.requirement
        files = judge.files(self.prediction, gold)
        assert judge.javac is not None
        variant = compile_variant(session.project, files, self.tmp / "variant", judge.javac)
        if not variant.compile.ok:
            return Judgement(Outcome.build_failure, f"the test does not compile: {_compile_error(variant.compile.output)}")
        project = session.project
        verdict_suite = Suite(root=session.data, classpath=(*project.dependencies, str(variant.classes.resolve()),
                                                            str(project.resources.resolve()),
                                                            str(session.schemata_classes.resolve()),
                                                            str(session.main_resources.resolve())),
                              glue=project.settings.glue, tags=tuple(project.settings.tags), java=session.java,
                              jvm_flags=JVM_FLAGS, jvm_args=project.settings.jvm_args,
                              setup_tags=project.settings.setup_tags, teardown_tags=project.settings.teardown_tags)
        traced_suite = replace(verdict_suite, classpath=(*project.dependencies, str(variant.classes.resolve()),
                                                         str(project.resources.resolve()),
                                                         str(project.classes.resolve())))
        self.wrap = None
        if judge.wrap is not None:  # the prediction's classes join what the sandbox shows, read-only
            self.wrap = _binding(judge.wrap, variant.classes)
            classes = str(variant.classes.resolve())
            self.binds = ["--ro-bind", classes, classes]
        _, clean_rows = self.rows(verdict_suite, self.null(), timeout=self.options.timeout)
        outcome, detail = classify(clean_rows, len(req.run_lines))
        if outcome is not Outcome.passed:  # the clean run's own failure (a null number: no mutant)
            roots = [str(session.data), str(session.data.resolve()), str(self.tmp), str(self.tmp.resolve()),
                     str(judge.tmp), str(OUT)]
            return Judgement(outcome, detail, fresh_runs=self.jvms, failure=clean_run_failure(clean_rows, roots))
        traced = self.trace(traced_suite, variant.classes)
        if isinstance(traced, Judgement):
            traced.fresh_runs = self.jvms
            return traced
        trace, coverage, instrumented = traced
        return self.mutation(verdict_suite, trace, coverage, instrumented)

    def mutation(self, suite: Suite, trace: RunTrace, coverage: RowCoverage,
                 instrumented: dict[str, set[int]]) -> Judgement:
        judge, gold, session = self.judge, self.gold, self.session
        confirmation: dict[str, Any] = {"clean_runs": 1, "traced_runs": 1,
                                        "sandbox": "bwrap-no-proc" if judge.wrap is not None else "none",
                                        "schemata": len(session.numbers), "clean_number": "null"}
        if not self.options.mutants or not gold.kills:
            confirmation.update(self.processes())
            return Judgement(Outcome.passed, fresh_runs=self.jvms, trace=trace, confirmation=confirmation)
        mutants = judge.mutants

        def rows(mutant_id: str) -> list[int] | None:
            return rows_to_run(coverage, mutants[mutant_id])

        kills = [m for m in gold.kills if m in session.numbers and m in mutants]
        with judge._rng_lock:
            schedule = kill_plan(kills, coverage, mutants, judge.rng)
        plan: list[str] = judge.shuffled(schedule.now)
        count = equivalent_count(len(schedule.now))
        extra = [f"{NULL}:{n}" for n in judge.draw(session.null_numbers, count)]
        extra += [f"{DECOY}:{m}" for m in judge.draw(self.decoys(coverage, instrumented), count)]
        extra = judge.shuffled(extra)
        with judge._rng_lock:
            spread_among(plan, extra, judge.rng)
        # a null variant or a decoy runs the rows of some kill (a run looks like any mutant's)
        reach_of = {item: rows(judge.choice(schedule.now)) if kills else None for item in extra}
        claimed: set[str] = set()
        timeouts = 0
        failed: list[tuple[str, list[CucumberJvmRun]]] = []
        stepless: list[str] = []
        verdicts: dict[str, RunVerdict] = {}

        def judge_kill(item: str) -> None:
            nonlocal timeouts
            verdict, _ = self.rows(suite, session.numbers[item], rows=rows(item))
            verdicts[item] = verdict
            if verdict is RunVerdict.infra_no_step:
                stepless.append(item)
            elif verdict is not RunVerdict.survived:
                claimed.add(item)
                timeouts += int(verdict is RunVerdict.timeout)

        def null_or_decoy(item: str) -> bool:
            if item not in reach_of:
                return False
            verdict, ran = self.rows(suite, self.number_of(item), rows=reach_of[item] or None)
            if verdict is not RunVerdict.survived:
                failed.append((item, ran))
            return True

        held = schedule.run(plan, claimed, judge_kill, null_or_decoy)
        nulls = sum(1 for item in extra if item.startswith(NULL))
        confirmation.update({"clean_runs": 1 + nulls, "null_variants": nulls, "decoys": len(extra) - nulls,
                             **schedule.record(held)})
        if failed:
            decided = self.failed_variants(suite, failed)
            if decided is not None:
                decided.fresh_runs = self.jvms
                return decided
            confirmation["clean_reruns"] = len(failed)
        if stepless:
            mutant = stepless[0]
            again, _ = self.rows(suite, session.numbers[mutant], rows=rows(mutant))
            control, _ = self.rows(suite, self.null())
            if again is RunVerdict.infra_no_step and control is RunVerdict.survived:
                return Judgement(Outcome.infrastructure_failure, f"no step ran under mutant {mutant}",
                                 fresh_runs=self.jvms)
            return Judgement(Outcome.unstable, f"no step ran under mutant {mutant}, and the confirmation disagreed",
                             evidence=[f"mutant {mutant}: no step ran, then {again}; unchanged production {control}"],
                             fresh_runs=self.jvms)
        order = judge.shuffled(sorted(claimed))[:REPRODUCED_KILLS]
        for mutant_id in order:
            again, _ = self.rows(suite, session.numbers[mutant_id], rows=rows(mutant_id))
            if again is RunVerdict.survived:
                return Judgement(Outcome.unstable, f"the kill of {mutant_id} did not reproduce",
                                 evidence=[f"kill of {mutant_id} did not reproduce"], fresh_runs=self.jvms)
        confirmation["reproduced_kills"] = len(order)
        if session.missing:
            confirmation["mutants_not_compiled"] = len(session.missing)
        confirmation.update(self.processes())
        return Judgement(Outcome.passed, kills=claimed, timeouts=timeouts, fresh_runs=self.jvms, trace=trace,
                         confirmation=confirmation, verdicts=verdicts)

    def processes(self) -> dict[str, Any]:
        """What the confirmation says of the verdict JVMs: how many, and how many were restored
        from the session's zygote rather than started (``restored``)."""
        found: dict[str, Any] = {"jvms": self.jvms, "restored_jvms": self.restores}
        if self.restore_failures:
            found["restore_failures"] = self.restore_failures
        if self.session.zygote is None:
            found["zygote"] = self.session.zygote_problem
        return found

    def number_of(self, item: str) -> int:
        kind, _, what = item.partition(":")
        return int(what) if kind == NULL else self.session.numbers[what]

    def decoys(self, coverage: RowCoverage, instrumented: dict[str, set[int]]) -> list[str]:
        """Mutants of the dataset the prediction cannot reach: every line of each holds no
        instruction the traced run executed, and its own line holds bytecode (a line without
        bytecode, such as a constant's, may still run in the schemata build)."""
        if any(lines is None for lines in coverage.values()):
            return []
        covered: dict[str, set[int]] = {}
        for lines in coverage.values():
            for file, hit in (lines or {}).items():
                covered.setdefault(file, set()).update(hit)
        kills = set(self.gold.kills)
        found = []
        for mutant_id in sorted(self.session.numbers):
            mutant = self.judge.mutants.get(mutant_id)
            if mutant is None or mutant_id in kills or mutant.line not in instrumented.get(mutant.file, set()):
                continue
            if not set(mutant.lines) & covered.get(mutant.file, set()):
                found.append(mutant_id)
        return found

    def failed_variants(self, suite: Suite, failed: list[tuple[str, list[CucumberJvmRun]]]) -> Judgement | None:
        """Failed null variants and decoys, decided as every judge decides failed equivalent
        variants (``bench.judging.retry_plan``): each (at most 3) twice more with four times the
        budget beside four clean runs (null numbers), shuffled. All pass now → the machine's (a
        timeout under load): None; a null variant fails every retry, not by a timeout, while the
        controls pass → tampering; a decoy doing so → unstable (a path that differs from run to
        run may reach it); anything else → unstable."""
        plan = self.judge.planned_retries(len(failed))
        verdicts = [self.rows(suite, self.null() if index is None else self.number_of(failed[index][0]),
                              RETRY_BUDGET)[0] for index in plan]
        first_real = any(any(not r.timed_out and not r.passed for r in rows) for _, rows in failed)
        decision, again = decide_retries(plan, verdicts, len(failed), first_real)
        kinds = {i: failed[i][0].partition(":")[0] for i in again}
        evidence = [f"{'null variant' if kinds[i] == NULL else 'unreached mutant ' + failed[i][0].partition(':')[2]} "
                    "failed every retry" for i in again]
        if decision is RetryDecision.tampering and any(kind == NULL for kind in kinds.values()):
            return Judgement(Outcome.tampering, "the test failed a run in which no mutant was active, on every "
                             "retry, while unchanged production passed: it reacts to the mutant switch, not to "
                             "behaviour", evidence=evidence)
        if decision is RetryDecision.tampering:
            return Judgement(Outcome.unstable, "the test failed, on every retry, under a mutant on lines its own "
                             "traced run never executed, while unchanged production passed: it reacts to the mutant "
                             "switch or takes a different path every run", evidence=evidence)
        if decision is RetryDecision.transient:
            return None
        return Judgement(Outcome.unstable, "a run with no mutant active failed, and not reproducibly",
                         evidence=[f"{item}: failed" for item, _ in failed])

    # ------------------------------------------------------------------ the traced run
    def trace(self, suite: Suite, classes: Path) -> tuple[RunTrace, RowCoverage, dict[str, set[int]]] | Judgement:
        """One JVM per row over the plain production classes with the JaCoCo agent (no schemata,
        no launcher); must pass too. Returns the trace, each row's covered production lines and
        the lines that hold bytecode."""
        session = self.session
        req = self.inst.requirement
        root = self.judge.settings.production[0]
        rows: list[CucumberJvmRun] = []
        per_row: RowCoverage = {}
        instrumented: dict[str, set[int]] = {}
        for n, line in enumerate(req.run_lines):
            run = self.jvm(suite, line, number=None, timeout=self.options.timeout, jacoco=session.jacoco)
            rows.append(run)
            hits: dict[str, set[int]] | None = None
            if run.passed and run.exec_file is not None:
                made = jacoco_report(session.java, session.cli, run.exec_file, session.project.classes,
                                     session.project.root / root, self.tmp / f"jacoco-{n}.xml")
                if made.coverage is not None:
                    hits, measured = made.coverage.under(root)
                    for file, numbers in measured.items():
                        instrumented.setdefault(file, set()).update(numbers)
            per_row[line] = hits
            shutil.rmtree(self.tmp / "out", ignore_errors=True)
            if not run.passed:
                return Judgement(Outcome.unstable, "the traced run did not pass while the clean run did",
                                 evidence=["traced run: " + classify(rows, len(req.run_lines))[1]])
        lines: dict[str, set[int]] = {}
        for hits in per_row.values():
            for file, hit in (hits or {}).items():
                lines.setdefault(file, set()).update(hit)
        covered = {f: sorted(hit) for f, hit in sorted(session.baseline.scenario_lines(req.feature_file, lines).items())}
        api = self.api(rows, lines, classes)
        return RunTrace(coverage={f: v for f, v in covered.items() if v}, api=api), per_row, instrumented

    def api(self, rows: list[CucumberJvmRun], lines: dict[str, set[int]], classes: Path) -> list[str]:
        """The production declarations the prediction's bound step methods (and the helpers they
        reach) call and the run executed, as the builder measured the ground truth's."""
        judge = self.judge
        settings = judge.settings
        tree = self.tmp / "prediction"
        sources = classes.parent / "src"  # compile_variant's copy of the test sources
        link = tree / settings.test_sources
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            os.symlink(sources.resolve(), link)
        side = TestSideJava(tree, settings.glue_dirs, settings.test_sources)
        by_line = {s.line: s for s in self.inst.requirement.effective_steps}
        roles: dict[Any, set[str]] = {}
        for run in rows:
            scenario = run.scenario
            if scenario is None:
                continue
            for index, step in enumerate(scenario.steps):
                site = side.site_for_method(step.match) if step.match is not None else None
                if site is None:
                    continue
                effective = by_line.get(step.line)
                if effective is None and index < len(self.inst.requirement.effective_steps):
                    effective = self.inst.requirement.effective_steps[index]
                role = effective.type if effective is not None else (site.kind if site.kind in ROLES else "given")
                roles.setdefault(site, set()).add(role)
        spans: list[tuple[HandlerSpan, str]] = []
        for site, kinds in roles.items():
            for decl in side.closure([site]).functions:
                spans += [(HandlerSpan(decl.file, decl.line, decl.end_line), role) for role in sorted(kinds)]
        calls = scenario_calls(judge.declarations.ran(lines), CallReader(tree, judge.declarations), spans)
        return [str(k) for k in calls.api_keys]


def _binding(wrap: Wrap, classes: Path) -> Wrap:
    """``wrap`` that also binds ``classes`` (a prediction's compiled glue) read-only."""
    path = str(classes.resolve())

    def bound(argv: list[str], cwd: Path, out: Path) -> list[str]:
        args = wrap(argv, cwd, out)
        at = args.index("--chdir")
        return [*args[:at], "--ro-bind", path, path, *args[at:]]

    return bound


def _compile_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[0][:400]


__all__ = ["CucumberJvmJudge", "classify"]
