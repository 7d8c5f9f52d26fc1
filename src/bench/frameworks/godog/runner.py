"""Run one godog scenario in a process of its own, from a test binary built once
(``toolchain.build_test_binary``), and read the result from godog's cucumber JSON.

Why one process per scenario: a godog suite's step functions usually share package-level
variables (go-algorand-sdk's ``test`` package declares ~90 of them, and its three ``Before``
hooks reset three: ``stxObj``, ``abiMethods``, ``globalErrForExamination``); godog runs every
scenario of a process in one package state. A new process per scenario is the only isolation
Go offers (no fork of a running Go program), and the binary starts in ~0.1 s.

The command is the developers' ``cd PACKAGE && go test --godog.strict=true --godog.tags=...``
with the compile taken out: the binary runs in the package directory (``go test``'s working
directory, where the steps find ``features/resources/...``), godog's flags are the ones
TestMain binds with ``godog.BindFlags("godog.", flag.CommandLine, &opt)``, and the feature
paths are the remaining arguments (``opt.Paths = flag.Args()``). ``-test.run=^$`` keeps any
plain Go test of the package from running after godog (``m.Run()``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from bench.frameworks.godog.coverprofile import CoverProfile, parse_profile
from bench.frameworks.godog.cucumber_json import GodogReport, ScenarioResult, read_report
from bench.frameworks.godog.definitions import StepDefinition, parse_definitions
from bench.frameworks.godog.outline import ScenarioLocation, locate, one_row_feature
from bench.frameworks.godog.pretty import ExpectedStep, parse_subtest
from bench.frameworks.godog.sandbox import Wrap
from bench.frameworks.godog.schemata import launch, selection
from bench.frameworks.godog.suites import GoSuite, SuitePlan, subtest_pattern

MEMORY_LIMIT = 4 << 30  # bytes of address space a run may use (RLIMIT_AS): a runaway mutant stops there
REPORT_NAME = "cucumber.json"
PROFILE_NAME = "cover.out"


@dataclass(frozen=True)
class GodogRun:
    feature: str  # as selected, relative to the project root
    line: int  # as selected: a scenario's line or an outline row's
    report: GodogReport
    exit_code: int | None  # None: killed at the timeout
    elapsed: float
    timed_out: bool
    output: str  # the tail of stdout+stderr (a panic's trace lands here)
    argv: tuple[str, ...]
    coverage: CoverProfile | None = None  # with ``coverage=True``: None when no profile was written
    coverage_problem: str = ""

    @property
    def scenario(self) -> ScenarioResult | None:
        """The selected scenario's result (the one pickle the run was given)."""
        hits = [s for s in self.report.scenarios if s.line == self.line]
        return hits[0] if len(hits) == 1 else None

    @property
    def passed(self) -> bool:
        """Exit status 0, the report written, exactly the selected pickle in it, every step passed."""
        scenario = self.scenario
        return (not self.timed_out and self.exit_code == 0 and len(self.report.scenarios) == 1
                and scenario is not None and scenario.passed)


def selection_argument(root: Path, package_dir: Path, feature: str, line: int,
                       scratch: Path) -> tuple[str, ScenarioLocation]:
    """The feature path argument that selects ``feature:line`` alone, written relative to the
    package directory (the binary's working directory) when the feature lies under it. An
    outline row gets a one-row copy of the feature in ``scratch`` (``outline.py``), selected by
    the outline's line: godog's JSON then names that copy, at the same line numbers."""
    source = root / feature
    text = source.read_text(encoding="utf-8")
    location = locate(text, line)
    if location.row_line is None:
        try:
            path = source.relative_to(package_dir).as_posix()
        except ValueError:
            path = str(source.resolve())
        return f"{path}:{location.scenario_line}", location
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / source.name
    copy.write_text(one_row_feature(text, location), encoding="utf-8")
    return f"{copy.resolve()}:{location.scenario_line}", location


def run_scenario(binary: Path, root: Path, package: str, feature: str, line: int, out_dir: Path, *,
                 tags: list[str] | None = None, strict: bool = True, coverage: bool = False,
                 timeout: float = 120.0, env: dict[str, str] | None = None, mutant: int | None = None,
                 wrap: Wrap | None = None,
                 memory_limit: int | None = MEMORY_LIMIT, plan: SuitePlan | None = None) -> GodogRun:
    """One process of ``binary`` running the scenario (or outline row) at ``feature:line``
    (``feature`` relative to ``root``; the binary's package is ``root/package``).

    ``plan``: the scenario's testing.T suite (``suites``): the process runs the suite's Test
    function with ``-test.run`` choosing the pickle's subtest, and the steps are read from its
    ``-test.v`` output (``pretty``); ``tags`` and ``strict`` are the suite's own then.

    ``tags``: godog's ``--godog.tags`` as the suite's configuration has them (joined with
    commas, godog's "or"; a scenario outside them runs nothing). ``coverage``: the binary was
    built with ``cover=`` and the run writes a profile (``CoverProfile.lines`` reads it).

    ``mutant``: the number of the mutant a schemata binary runs (``schemata.selection``; 0 runs
    the original), given as fd 3 from an unlinked file: no path, argument or variable names it.
    ``wrap(argv, cwd, out_dir)``: the command as a sandbox runs it (``sandbox.sandboxed``).
    ``memory_limit``: the process's address space (None: unlimited)."""
    package_dir = root / package
    out_dir.mkdir(parents=True, exist_ok=True)
    if "," in str(out_dir.resolve()):  # godog splits --godog.format at commas
        raise ValueError(f"{out_dir}: a run directory may not contain a comma")
    report_path = out_dir / REPORT_NAME
    profile_path = out_dir / PROFILE_NAME
    for stale in (report_path, profile_path):
        stale.unlink(missing_ok=True)
    testing_t = plan is not None and not plan.suite.flag_driven
    if testing_t:
        assert plan is not None and plan.suite.test is not None
        subtest = plan.subtests.get((feature, line))
        if subtest is None:
            raise ValueError(f"{plan.suite.key} runs no pickle at {feature}:{line}")
        path_arg = feature
        argv = [str(binary.resolve()), f"-test.run={subtest_pattern(plan.suite.test, subtest)}", "-test.v"]
    else:
        path_arg, _ = selection_argument(root, package_dir, feature, line, out_dir / "feature")
        argv = [str(binary.resolve()), "-test.run=^$", f"--godog.format=cucumber:{report_path.resolve()}",
                f"--godog.strict={'true' if strict else 'false'}"]
        if tags:
            argv.append("--godog.tags=" + ",".join(t if t.startswith("@") else f"@{t}" for t in tags))
    if coverage:
        argv.append(f"-test.coverprofile={profile_path.resolve()}")
    if not testing_t:
        argv.append(path_arg)
    run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(out_dir.resolve()), "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", **(env or {})}
    chosen = None
    if mutant is not None:
        # unlinked at once: the content reaches the child as fd 3 only (closed below, once it has it)
        chosen = tempfile.TemporaryFile()  # noqa: SIM115
        chosen.write(selection(mutant))
        chosen.flush()
    started, extra = launch(argv, chosen.fileno() if chosen is not None else None, memory_limit)
    command = wrap(started, package_dir, out_dir) if wrap is not None else started
    start = time.perf_counter()
    # a session of its own, so a timeout ends the binary and anything it started, by group id
    try:
        proc = subprocess.Popen(command, cwd=package_dir, env=run_env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                **extra)  # type: ignore[call-overload]
    finally:
        if chosen is not None:
            chosen.close()
    try:
        out, _ = proc.communicate(timeout=timeout)
        code, timed_out = proc.returncode, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # ended meanwhile
            pass
        out, _ = proc.communicate()
        code, timed_out = None, True
    elapsed = time.perf_counter() - start
    profile, problem = read_profile(profile_path) if coverage else (None, "")
    text = out.decode(errors="replace")
    if testing_t:
        assert plan is not None and plan.suite.test is not None
        pickle = plan.pickle(feature, line)
        report = parse_subtest(text, plan.suite.test, plan.subtests[(feature, line)], feature, line, pickle.name,
                               [ExpectedStep(text, number) for text, number in pickle.steps])
    else:
        report = read_report(report_path)
        # the report names the path as given (a one-row copy's is in scratch): name the selected feature
        given = path_arg.rsplit(":", 1)[0]
        report = replace(report, scenarios=tuple(replace(s, uri=feature) if s.uri == given else s
                                                 for s in report.scenarios))
    return GodogRun(feature=feature, line=line, report=report, exit_code=code, elapsed=elapsed,
                    timed_out=timed_out, output=text[-4000:], argv=tuple(argv),
                    coverage=profile, coverage_problem=problem)


def read_profile(path: Path) -> tuple[CoverProfile | None, str]:
    """A run's coverage profile, or why there is none."""
    try:
        return parse_profile(path.read_text(encoding="utf-8")), ""
    except FileNotFoundError:
        return None, "no coverage profile written (the process ended before m.Run() returned)"
    except ValueError as exc:
        return None, str(exc)


def run_loading(binary: Path, root: Path, suite: GoSuite, feature: str, line: int, out_dir: Path, *,
                timeout: float = 120.0, wrap: Wrap | None = None) -> GodogRun:
    """A process of a coverage binary that loads ``suite`` and runs no scenario: its profile is
    what loading covers (package initialisation, TestMain, the suite's initializers). The
    flag-driven suite gets a tag no scenario has; a testing.T suite runs its Test function with
    a subtest pattern no pickle matches (godog still parses the features and calls t.Run)."""
    from bench.frameworks.godog.framework import NO_SCENARIO_TAG

    if suite.flag_driven:
        return run_scenario(binary, root, suite.package, feature, line, out_dir, tags=[NO_SCENARIO_TAG],
                            coverage=True, timeout=timeout, wrap=wrap)
    assert suite.test is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    profile_path = out_dir / PROFILE_NAME
    profile_path.unlink(missing_ok=True)
    argv = [str(binary.resolve()), f"-test.run=^{re.escape(suite.test)}$/^$",
            f"-test.coverprofile={profile_path.resolve()}"]
    package_dir = root / suite.package
    command = wrap(argv, package_dir, out_dir) if wrap is not None else argv
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=package_dir, env={"PATH": "/usr/local/bin:/usr/bin:/bin",
                                                             "HOME": str(out_dir.resolve()), "TMPDIR": "/tmp",
                                                             "LANG": "C.UTF-8"},
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
        code, output, timed_out = proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        code, output, timed_out = None, "", True
    profile, problem = read_profile(profile_path)
    return GodogRun(feature=feature, line=line, report=GodogReport(problem="a loading run reports no scenario"),
                    exit_code=code, elapsed=time.perf_counter() - start, timed_out=timed_out,
                    output=output[-4000:], argv=tuple(argv), coverage=profile, coverage_problem=problem)


def list_definitions(binary: Path, root: Path, package: str, timeout: float = 60.0) -> list[StepDefinition]:
    """The suite's step definitions in registration order (``--godog.definitions``, godog's dry
    run: exit status 2 by design). ``RuntimeError`` when the suite cannot initialise."""
    proc = subprocess.run([str(binary.resolve()), "-test.run=^$", "--godog.definitions", "--godog.no-colors"],
                          cwd=root / package, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    definitions = parse_definitions(text)
    if not definitions:
        raise RuntimeError(f"the godog suite lists no step definitions (exit {proc.returncode}): {text[-300:]!r}")
    return definitions
