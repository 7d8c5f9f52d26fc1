"""The builder's warm Cucumber-JVM runner (``java/WarmRunner.java``): many scenario runs in one
JVM, each in a class loader of its own over the project's class directories.

Why: a fresh JVM per (row, mutant) costs ~1.1-1.8 s of CPU on java-algorand-sdk even with
AppCDS, and a mutant stage makes tens of thousands of such runs. In the warm JVM the JDK,
cucumber and the dependency jars stay loaded; each run gets a new ``URLClassLoader`` over the
test classes, test resources and (schemata) production classes, so the glue, its helpers and
production are loaded and initialised afresh — their static state (java-algorand-sdk's static
Mockito mock, its ``ObjectMapper``s) does not survive a run. What can survive is state held
*in* the dependencies (a cache keyed by a class of an earlier loader, a static of a library):
the builder's fresh-process check replays a sample of verdicts in plain JVMs and reports every
disagreement.

The runner is restarted after ``RESTART_AFTER`` runs (loaders that a library cache keeps alive
are freed with the JVM), after a timeout (a Java thread cannot be stopped: the JVM halts) and
when it dies (a test's ``System.exit``). Only the builder uses it: a judge's verdict run is a
fresh JVM (the trust rule).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.frameworks.cucumber_jvm.cucumber_json import read_report
from bench.frameworks.cucumber_jvm.javac_server import helper_classes
from bench.frameworks.cucumber_jvm.pickles import companion_lines, selection, tag_expression
from bench.frameworks.cucumber_jvm.runner import JVM_FLAGS, REPORT_NAME, CucumberJvmRun, _relative

RUNNER_CLASS = "WarmRunner"
RESTART_AFTER = 150  # runs per JVM


@dataclass(frozen=True)
class WarmSuite:
    root: Path  # the JVM's working directory (the project root)
    dependencies: tuple[str, ...]  # jars: the runner's own class path (cucumber among them)
    directories: tuple[str, ...]  # the project's class directories, loaded afresh per run
    glue: tuple[str, ...]
    tags: tuple[str, ...] = ()
    # a schemata build's "CLASS FIELD": the static int the selected number is written to per run
    switch_field: str | None = None
    java: str = "java"
    archive: Path | None = None  # AppCDS of the dependency jars (the class path starts with them)
    jvm_args: tuple[str, ...] = ()  # the project's (``settings.jvm_args``)
    setup_tags: tuple[str, ...] = ()  # companion scenarios (``settings.setup_tags``)
    teardown_tags: tuple[str, ...] = ()


class WarmRunner:
    """One warm JVM (not thread-safe: give each worker thread its own)."""

    def __init__(self, suite: WarmSuite) -> None:
        self.suite = suite
        self._proc: subprocess.Popen[str] | None = None
        self._tmp: Path | None = None
        self._runs = 0
        self.restarts = 0

    def _start(self) -> subprocess.Popen[str]:
        suite = self.suite
        classes = helper_classes(RUNNER_CLASS)
        self._tmp = Path(tempfile.mkdtemp(prefix="req2test-warm-"))  # its own java.io.tmpdir (runner.py)
        argv = [suite.java, *JVM_FLAGS, *suite.jvm_args, f"-Djava.io.tmpdir={self._tmp}", "-XX:+UseSerialGC",
                "-Xmx1g"]
        if suite.archive is not None:
            argv.append(f"-XX:SharedArchiveFile={suite.archive.resolve()}")
        argv += ["-cp", os.pathsep.join([*suite.dependencies, str(classes)]), RUNNER_CLASS]
        proc = subprocess.Popen(argv, cwd=suite.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1,
                                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                                     "HOME": str(suite.root), "TMPDIR": "/tmp"})
        assert proc.stdin is not None
        lines = [f"DIR {Path(d).resolve()}" for d in suite.directories]
        lines += ["ARG --monochrome", "ARG --strict"]
        for package in suite.glue:
            lines += ["ARG --glue", f"ARG {package}"]
        if suite.tags:
            lines += ["ARG --tags", f"ARG {tag_expression(list(suite.tags))}"]
        if suite.switch_field:
            lines.append(f"SWITCH {suite.switch_field}")
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        self._runs = 0
        return proc

    def run(self, feature: str, line: int, out_dir: Path, number: int = 0, timeout: float = 120.0) -> CucumberJvmRun:
        """The scenario (or Examples row) at ``feature:line`` with schema number ``number``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        report_path = out_dir / REPORT_NAME
        report_path.unlink(missing_ok=True)
        if any(c in str(report_path.resolve()) for c in " \n") or " " in feature or "\n" in feature:
            raise ValueError(f"the warm runner cannot pass a path with a space or line break: {feature}")
        chosen, companions = selection(feature, line, *companion_lines(self.suite.root / feature,
                                                                        self.suite.setup_tags,
                                                                        self.suite.teardown_tags))
        if self._proc is None or self._proc.poll() is not None or self._runs >= RESTART_AFTER:
            self.close()
            self._proc = self._start()
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        self._runs += 1
        start = time.perf_counter()
        reply = ""
        guard = threading.Timer(timeout + 30.0, proc.kill)  # the JVM's own timeout failed to end it
        guard.start()
        try:
            proc.stdin.write(f"RUN {number} {report_path.resolve()} {chosen} {int(timeout * 1000)}\n")
            proc.stdin.flush()
            reply = proc.stdout.readline().strip()
        except (BrokenPipeError, OSError):
            reply = ""
        finally:
            guard.cancel()
        elapsed = time.perf_counter() - start
        timed_out = reply == "TIMEOUT"
        code: int | None = int(reply[5:]) if reply.startswith("EXIT ") else None
        if code is None:  # timeout, error or a dead JVM: the next run starts a new one
            self.close()
            self.restarts += 1
        report = read_report(report_path)
        report = replace(report, scenarios=tuple(replace(s, uri=_relative(s.uri, self.suite.root))
                                                 for s in report.scenarios))
        return CucumberJvmRun(feature=feature, line=line, report=report, exit_code=None if timed_out else code,
                              elapsed=elapsed, cpu=0.0, timed_out=timed_out,
                              output="" if code is not None else (reply or "the warm runner ended"),
                              argv=(feature, str(line), str(number)), companions=companions)

    def close(self) -> None:
        if self._proc is not None:
            try:
                if self._proc.stdin:
                    self._proc.stdin.close()
            except OSError:
                pass
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


class WarmRunnerPool:
    """One ``WarmRunner`` per calling thread."""

    def __init__(self, suite: WarmSuite) -> None:
        self.suite = suite
        self._local = threading.local()
        self._all: list[WarmRunner] = []
        self._lock = threading.Lock()

    def run(self, feature: str, line: int, out_dir: Path, number: int = 0, timeout: float = 120.0) -> CucumberJvmRun:
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = WarmRunner(self.suite)
            self._local.runner = runner
            with self._lock:
                self._all.append(runner)
        try:
            return runner.run(feature, line, out_dir, number, timeout)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self._all)

    def close(self) -> None:
        with self._lock:
            for runner in self._all:
                runner.close()
            self._all.clear()


def warm_suite(dependencies: Sequence[str], directories: Sequence[str | Path], root: Path, glue: Sequence[str],
               tags: Sequence[str], *, switch_field: str | None = None, java: str = "java",
               archive: Path | None = None, jvm_args: Sequence[str] = (), setup_tags: Sequence[str] = (),
               teardown_tags: Sequence[str] = ()) -> WarmSuite:
    return WarmSuite(root=root, dependencies=tuple(dependencies), directories=tuple(str(d) for d in directories),
                     glue=tuple(glue), tags=tuple(tags), switch_field=switch_field, java=java, archive=archive,
                     jvm_args=tuple(jvm_args), setup_tags=tuple(setup_tags), teardown_tags=tuple(teardown_tags))


__all__ = ["RESTART_AFTER", "WarmRunner", "WarmRunnerPool", "WarmSuite", "warm_suite"]
