"""Run one Cucumber-JVM scenario in a JVM of its own, from classes compiled once
(``toolchain.compile_tests``), and read the result from the JSON formatter.

The command is the developers' ``mvn test -Dcucumber.filter.tags=...`` with Maven and JUnit
taken out: cucumber's own command line, ``io.cucumber.core.cli.Main``, in the project root
(surefire's working directory: java-algorand-sdk's ``ResponsesShared`` opens
``src/test/resources/...`` relative to it), on the test classpath, with

    --glue PKG ...                  the JUnit runner's package and its extraGlue
    --plugin json:FILE              the result (``cucumber_json.py``)
    [--plugin message:FILE]         step definitions and bindings (``definitions.py``)
    --tags "@a or @b ..."           the configured tags: a scenario outside them runs nothing
    path/x.feature:LINE             a scenario's line or an Examples row's (``pickles.py``), with
                                    its companions' lines when the project names setup/teardown
                                    scenarios (``FILE:SETUP:LINE:TEARDOWN``: Kapua's @setup)

and the project's own JVM arguments (``settings.jvm_args``: surefire's ``argLine`` and system
properties) after req2test's flags. A run *passes* when its scenario and every companion pass.

Why one JVM per scenario: glue classes are new per scenario (picocontainer), but static
state is not (java-algorand-sdk's ``ClientMocker`` keeps one static Mockito mock of
``OkHttpClient`` whose stubbing every scenario overwrites; ``TestingUtils`` keeps static
``ObjectMapper``s), and a mutant or a hidden body must not leak between verdicts through
class initialisation. The price is JVM start, class loading and glue scanning per scenario.

JVM start: ``archive=`` names an AppCDS archive (``-XX:SharedArchiveFile``). JDK 17's
*dynamic* archive (``-XX:ArchiveClassesAtExit``) refuses a class path with a non-empty
directory on it ("Cannot have non-empty directory in paths"), and a project's classes are
directories; so ``create_archive`` makes a *static* archive from a class list instead: one
run with ``-XX:DumpLoadedClassList``, then ``-Xshare:dump`` over the dependency jars alone.
It holds the JDK's and the dependencies' classes (not the project's, nor classes of signed
jars such as bouncycastle's, which CDS skips), stays valid across every rebuild of the project
(the class path at run time only has to start with the dump's), and a stale or mismatched
archive makes the JVM run without it rather than fail (``-Xshare:auto``, the default).
The dynamic archive does work when the project's classes are jars (uncompressed, with
directory entries: cucumber's glue scan lists a package through ``getResources(dir)``, and
the SDK reads resources with ``InputStream.available()``), but it then holds the project's
classes and must be dumped again after every compile; measured on java-algorand-sdk it saves
no more than the static one (5 scenarios: median CPU 2.58 s dynamic, 2.78 s static, 3.16 s none).

Cost of a big feature file: cucumber parses and compiles the whole file for every run;
java-algorand-sdk's transactions.feature (339 KB of padded Examples rows) makes each of its
rows ~9 s of CPU against ~1.6 s for other files; a one-row copy of the file (blank lines for
the other rows, as ``godog/outline.py`` writes it) brings its row 16 to 2.5 s.

Temporary files: each JVM gets a ``java.io.tmpdir`` of its own (``OUT/tmp``, removed with the
run's directory): Kapua's ``KapuaLiquibaseClient`` deletes and refills ``${java.io.tmpdir}/
kapua-liquibase`` at every database init, and two JVMs sharing ``/tmp`` break each other's
schema ("changelog-...-master.xml does not exist").

Coverage: ``jacoco=`` (agent jar, includes) adds the JaCoCo agent, which writes ``jacoco.exec``
at exit; ``jacoco.report`` turns it into lines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.frameworks.cucumber_jvm.cucumber_json import CucumberReport, ScenarioResult, read_report
from bench.frameworks.cucumber_jvm.definitions import MessageRun, read_messages
from bench.frameworks.cucumber_jvm.jacoco import agent_argument
from bench.frameworks.cucumber_jvm.pickles import companion_lines, selection, tag_expression

MAIN = "io.cucumber.core.cli.Main"
REPORT_NAME = "cucumber.json"
MESSAGES_NAME = "messages.ndjson"
EXEC_NAME = "jacoco.exec"
OUTPUT_NAME = "output.txt"
TMP_NAME = "tmp"  # the JVM's java.io.tmpdir, under its run's directory
# mockito 3.5.7's ByteBuddy 1.10.13 knows class files up to Java 15: let it read JDK 17's;
# publish.quiet: no "Share your Cucumber Report" banner (nothing is published unless enabled)
JVM_FLAGS = ("-Dnet.bytebuddy.experimental=true", "-Dcucumber.publish.quiet=true", "-Dfile.encoding=UTF-8")


@dataclass(frozen=True)
class Suite:
    """What every scenario JVM of one build shares."""

    root: Path  # the project root: the JVM's working directory
    classpath: tuple[str, ...]  # ``toolchain.runtime_classpath``
    glue: tuple[str, ...]
    tags: tuple[str, ...] = ()
    java: str = "java"
    jvm_flags: tuple[str, ...] = JVM_FLAGS
    jvm_args: tuple[str, ...] = ()  # the project's (``settings.jvm_args``), after ``jvm_flags``
    setup_tags: tuple[str, ...] = ()  # companion scenarios (``settings.setup_tags``)
    teardown_tags: tuple[str, ...] = ()

    def selection(self, feature: str, line: int) -> tuple[str, tuple[int, ...]]:
        """(cucumber's ``FILE:LINE...`` argument, the companions' lines) for one scenario."""
        setup, teardown = companion_lines(self.root / feature, self.setup_tags, self.teardown_tags)
        return selection(feature, line, setup, teardown)

    def has_companions(self, feature: str) -> bool:
        """Whether every scenario of ``feature`` runs beside setup/teardown companions."""
        return any(companion_lines(self.root / feature, self.setup_tags, self.teardown_tags))


@dataclass(frozen=True)
class Jacoco:
    agent: Path
    includes: tuple[str, ...]  # packages: ``com.algorand.algosdk`` instruments com.algorand.algosdk.*


@dataclass(frozen=True)
class CucumberJvmRun:
    feature: str  # as selected, relative to the project root
    line: int  # as selected: a scenario's line or an Examples row's
    report: CucumberReport
    exit_code: int | None  # None: killed at the timeout
    elapsed: float  # wall seconds of the JVM
    cpu: float  # user+system seconds of the JVM (what a busy machine does not inflate)
    timed_out: bool
    output: str  # the tail of stdout+stderr
    argv: tuple[str, ...]
    messages: MessageRun | None = None
    exec_file: Path | None = None  # with ``jacoco=``: where the agent wrote (maybe nothing)
    companions: tuple[int, ...] = ()  # the setup/teardown scenarios' lines the run also selected

    @property
    def scenario(self) -> ScenarioResult | None:
        hits = [s for s in self.report.scenarios if s.line == self.line]
        return hits[0] if len(hits) == 1 else None

    @property
    def others(self) -> list[ScenarioResult]:
        """The reported scenarios that are not the selected one (its companions, if all is well)."""
        return [s for s in self.report.scenarios if s.line != self.line]

    @property
    def passed(self) -> bool:
        """Exit status 0, the report written, exactly the selected pickle in it (and its
        companions, which passed too), every step passed."""
        scenario = self.scenario
        return (not self.timed_out and self.exit_code == 0 and scenario is not None and scenario.passed
                and all(s.line in self.companions and s.passed for s in self.others))

    @property
    def companions_passed(self) -> bool:
        """For a ``COMPANIONS_ONLY`` run: exit status 0 and exactly the companions reported, passed."""
        return (not self.timed_out and self.exit_code == 0 and bool(self.companions)
                and sorted(s.line for s in self.report.scenarios) == sorted(self.companions)
                and all(s.passed for s in self.report.scenarios))


def command(suite: Suite, feature: str, line: int, out_dir: Path, *, messages: bool = False,
            archive: Path | None = None, jacoco: Jacoco | None = None,
            extra_jvm: Sequence[str] = ()) -> list[str]:
    argv = [suite.java, *suite.jvm_flags, *suite.jvm_args, f"-Djava.io.tmpdir={(out_dir / TMP_NAME).resolve()}",
            *extra_jvm]
    if archive is not None:
        argv.append(f"-XX:SharedArchiveFile={archive.resolve()}")
    if jacoco is not None:
        argv.append(agent_argument(jacoco.agent, out_dir / EXEC_NAME, jacoco.includes))
    argv += ["-cp", os.pathsep.join(suite.classpath), MAIN, "--monochrome", "--strict"]
    for package in suite.glue:
        argv += ["--glue", package]
    argv += ["--plugin", f"json:{(out_dir / REPORT_NAME).resolve()}"]
    if messages:
        argv += ["--plugin", f"message:{(out_dir / MESSAGES_NAME).resolve()}"]
    if suite.tags:
        argv += ["--tags", tag_expression(list(suite.tags))]
    argv.append(suite.selection(feature, line)[0])
    return argv


def run_jvm(argv: list[str], cwd: Path, out_dir: Path, timeout: float, env: dict[str, str],
            pass_fds: tuple[int, ...] = ()) -> tuple[int | None, float, float, bool, str]:
    """(exit code, wall, cpu, timed out, output tail) of one JVM in a session of its own, with
    exactly ``env`` and ``pass_fds`` (the judge's selection file) open across exec."""
    output_path = out_dir / OUTPUT_NAME
    start = time.perf_counter()
    with output_path.open("ab") as sink:  # appended: a restored JVM opens the file by its path too
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # wait4: the child's own rusage
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    text = output_path.read_bytes()[-4000:].decode(errors="replace")
    code = None if killed.is_set() else proc.returncode
    return code, elapsed, usage.ru_utime + usage.ru_stime, killed.is_set(), text


def run_scenario(suite: Suite, feature: str, line: int, out_dir: Path, *, messages: bool = False,
                 archive: Path | None = None, jacoco: Jacoco | None = None, timeout: float = 300.0,
                 extra_jvm: Sequence[str] = (), env: dict[str, str] | None = None) -> CucumberJvmRun:
    """One JVM running the scenario (or Examples row) at ``feature:line`` (``feature``
    relative to ``suite.root``; ``line`` 0 runs the whole file)."""
    (out_dir / TMP_NAME).mkdir(parents=True, exist_ok=True)
    for stale in (REPORT_NAME, MESSAGES_NAME, EXEC_NAME):
        (out_dir / stale).unlink(missing_ok=True)
    argv = command(suite, feature, line, out_dir, messages=messages, archive=archive, jacoco=jacoco,
                   extra_jvm=extra_jvm)
    run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(out_dir.resolve()), "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", **(env or {})}
    code, elapsed, cpu, timed_out, output = run_jvm(argv, suite.root, out_dir, timeout, run_env)
    report = read_report(out_dir / REPORT_NAME)
    report = replace(report, scenarios=tuple(replace(s, uri=_relative(s.uri, suite.root)) for s in report.scenarios))
    return CucumberJvmRun(feature=feature, line=line, report=report, exit_code=code, elapsed=elapsed, cpu=cpu,
                          timed_out=timed_out, output=output, argv=tuple(argv),
                          messages=read_messages(out_dir / MESSAGES_NAME) if messages else None,
                          exec_file=(out_dir / EXEC_NAME) if jacoco is not None else None,
                          companions=suite.selection(feature, line)[1])


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root.resolve()).as_posix() if path.startswith("/") else path
    except ValueError:
        return path


@dataclass(frozen=True)
class ArchiveResult:
    archive: Path | None
    classes: int  # classes the training run loaded
    seconds: float
    problem: str = ""


def create_archive(suite: Suite, dependencies: Sequence[str], feature: str, line: int, work: Path,
                   timeout: float = 600.0) -> ArchiveResult:
    """A static AppCDS archive ``work/app.jsa`` of the classes one scenario run loads from the
    JDK and from ``dependencies`` (the jars: the class path at run time must start with them,
    as ``toolchain.runtime_classpath`` orders it). See the module docstring for why not
    ``-XX:ArchiveClassesAtExit``."""
    start = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    class_list, archive = work / "classes.lst", work / "app.jsa"
    archive.unlink(missing_ok=True)
    training = run_scenario(suite, feature, line, work / "training", timeout=timeout,
                            extra_jvm=("-Xshare:off", f"-XX:DumpLoadedClassList={class_list.resolve()}"))
    if not class_list.is_file():
        return ArchiveResult(None, 0, time.perf_counter() - start, f"no class list: {training.output[-300:]}")
    classes = sum(1 for text in class_list.read_text(errors="replace").splitlines() if text and not text.startswith("#"))
    dump = [suite.java, "-Xshare:dump", f"-XX:SharedClassListFile={class_list.resolve()}",
            f"-XX:SharedArchiveFile={archive.resolve()}", "-cp", os.pathsep.join(dependencies)]
    proc = subprocess.run(dump, cwd=work, capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not archive.is_file():
        return ArchiveResult(None, classes, time.perf_counter() - start,
                             f"-Xshare:dump failed: {(proc.stdout + proc.stderr).decode(errors='replace')[-400:]}")
    return ArchiveResult(archive, classes, time.perf_counter() - start)
