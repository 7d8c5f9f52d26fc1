"""Setup/teardown companion scenarios and the project's JVM arguments (``settings.jvm_args``,
``setup_tags``, ``teardown_tags``), as Kapua needs them: every feature opens with an ``@setup``
scenario whose hooks build the JVM-wide state (system properties, the Guice locator) the later
scenarios use, and most close with a ``@teardown`` one; a scenario runs as
``FILE:SETUP:LINE:TEARDOWN`` and passes when all of them pass. Inline features and reports, no JVM."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.cucumber_json import parse_report
from bench.frameworks.cucumber_jvm.pickles import COMPANIONS_ONLY, companion_lines, is_companion, selection
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun, Suite, command
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettingsError, read_settings
from bench.frameworks.cucumber_jvm.warm_runner import warm_suite

ROOT = Path(__file__).resolve().parents[2]

FEATURE = textwrap.dedent("""\
    @svc
    @env_none
    Feature: A service

      @setup
      @KapuaProperties("locator.class.impl=x.MockedLocator")
      Scenario: Initialize test environment
        Given Init Security Context

      Scenario: Create one
        Given a thing named "a"
        Then I find "a"

      Scenario: Create two
        Given a thing named "b"

      @teardown
      Scenario: Reset Security Context
        Given Reset Security Context
    """)


def _project(tmp_path: Path, extra: str = "") -> Path:
    root = tmp_path / "p"
    (root / "src/test/resources/features").mkdir(parents=True)
    (root / "src/test/resources/features/svc.feature").write_text(FEATURE)
    (root / "pom.xml").write_text("<project/>")
    (root / "req2test.toml").write_text(textwrap.dedent("""\
        [tool.req2test]
        framework = "cucumber-jvm"
        features = "src/test/resources/features"
        glue = ["x.steps", "x.common"]
        production_package = "x"
        tags = ["env_none"]
        """) + extra)
    return root


def test_settings_read_jvm_args_and_companion_tags(tmp_path: Path) -> None:
    root = _project(tmp_path, 'jvm_args = ["--add-opens=java.base/java.lang=ALL-UNNAMED", "-Da=b c"]\n'
                              'setup_tags = ["@setup"]\nteardown_tags = ["teardown"]\n'
                              'reload_groups = ["org.eclipse.kapua", "org.mockito"]\n')
    settings = read_settings(root)
    assert settings.reload_groups == ("org.eclipse.kapua", "org.mockito")
    repo = "/root/.m2/repository"
    assert settings.reloaded_jar(f"{repo}/org/eclipse/kapua/kapua-commons/2.1.0-SNAPSHOT/kapua-commons-2.1.0-SNAPSHOT.jar")
    assert settings.reloaded_jar(f"{repo}/org/mockito/mockito-core/1.10.19/mockito-core-1.10.19.jar")
    assert not settings.reloaded_jar(f"{repo}/org/eclipse/persistence/eclipselink/2.7.9/eclipselink-2.7.9.jar")
    assert not settings.reloaded_jar(f"{repo}/org/mockitox/y/1/y-1.jar")
    assert settings.jvm_args == ("--add-opens=java.base/java.lang=ALL-UNNAMED", "-Da=b c")
    assert settings.setup_tags == ("setup",) and settings.teardown_tags == ("teardown",)
    plain = read_settings(_project(tmp_path / "plain"))
    assert plain.jvm_args == () and plain.setup_tags == () and plain.teardown_tags == ()
    assert plain.reload_groups == () and not plain.reloaded_jar(f"{repo}/org/mockito/m/1/m-1.jar")


def test_settings_refuse_a_jvm_arg_that_is_no_option(tmp_path: Path) -> None:
    with pytest.raises(CucumberJvmSettingsError, match="not a JVM option"):
        read_settings(_project(tmp_path, 'jvm_args = ["Dfoo=bar"]\n'))


def test_companion_lines_and_selection(tmp_path: Path) -> None:
    root = _project(tmp_path)
    feature = root / "src/test/resources/features/svc.feature"
    assert companion_lines(feature, ("setup",), ("teardown",)) == ((7,), (18,))
    assert companion_lines(feature, ("@setup",), ()) == ((7,), ())
    assert companion_lines(feature) == ((), ())  # nothing configured: no companions
    assert companion_lines(root / "missing.feature", ("setup",), ()) == ((), ())
    assert selection("f.feature", 10, (7,), (18,)) == ("f.feature:7:10:18", (7, 18))
    assert selection("f.feature", 0, (7,), (18,)) == ("f.feature", ())  # the whole file: no companions
    assert selection("f.feature", 7, (7,), (18,)) == ("f.feature:7:18", (18,))  # a companion itself
    assert selection("f.feature", 10) == ("f.feature:10", ())
    # the companions alone: the baseline a scenario's coverage leaves out
    assert selection("f.feature", COMPANIONS_ONLY, (7,), (18,)) == ("f.feature:7:18", (7, 18))
    with pytest.raises(ValueError, match="no setup/teardown"):
        selection("f.feature", COMPANIONS_ONLY)
    assert is_companion(["@svc", "@setup"], ("setup",), ("teardown",))
    assert is_companion(["teardown"], (), ("@teardown",))
    assert not is_companion(["@svc"], ("setup",), ("teardown",)) and not is_companion(["@setup"], (), ())


def test_command_selects_the_companions_and_adds_the_jvm_args(tmp_path: Path) -> None:
    root = _project(tmp_path)
    suite = Suite(root=root, classpath=("/r/a.jar",), glue=("x.steps",), tags=("env_none",),
                  jvm_args=("--add-opens=java.base/java.lang=ALL-UNNAMED", "-Dk=v"), setup_tags=("setup",),
                  teardown_tags=("teardown",))
    argv = command(suite, "src/test/resources/features/svc.feature", 11, tmp_path / "o")
    assert argv[-1] == "src/test/resources/features/svc.feature:7:11:18"
    flags = argv[:argv.index("-cp")]
    assert flags[-3:-1] == ["--add-opens=java.base/java.lang=ALL-UNNAMED", "-Dk=v"]
    # every JVM its own java.io.tmpdir (Kapua's liquibase client empties ${java.io.tmpdir}/kapua-liquibase)
    assert flags[-1] == f"-Djava.io.tmpdir={(tmp_path / 'o' / 'tmp').resolve()}"
    assert command(suite, "src/test/resources/features/svc.feature", 0, tmp_path / "o")[-1] == \
        "src/test/resources/features/svc.feature"
    warm = warm_suite(["/r/a.jar"], [], root, ["x.steps"], ["env_none"], jvm_args=["-Dk=v"], setup_tags=["setup"])
    assert warm.jvm_args == ("-Dk=v",) and warm.setup_tags == ("setup",) and warm.teardown_tags == ()


def _report(statuses: dict[int, str]) -> str:
    elements = [{"line": line, "name": f"s{line}", "keyword": "Scenario", "type": "scenario", "id": f"s;{line}",
                 "steps": [{"name": "a step", "keyword": "Given ", "line": line + 1,
                            "match": {"location": "x.steps.S.step()"},
                            "result": {"status": status, "duration": 1,
                                       **({"error_message": "java.lang.AssertionError: no"}
                                          if status == "failed" else {})}}]}
                for line, status in statuses.items()]
    return json.dumps([{"uri": "file:///p/svc.feature", "name": "A service", "keyword": "Feature", "line": 3,
                        "elements": elements}])


def _run(statuses: dict[int, str], line: int, companions: tuple[int, ...], exit_code: int = 0) -> CucumberJvmRun:
    return CucumberJvmRun(feature="svc.feature", line=line, report=parse_report(_report(statuses)),
                          exit_code=exit_code, elapsed=1.0, cpu=1.0, timed_out=False, output="", argv=(),
                          companions=companions)


def test_a_run_passes_with_its_companions_passing() -> None:
    run = _run({7: "passed", 11: "passed", 18: "passed"}, 11, (7, 18))
    assert run.passed and run.scenario is not None and run.scenario.line == 11
    assert [s.line for s in run.others] == [7, 18]
    # a failing setup fails the run, whatever the scenario did
    assert not _run({7: "failed", 11: "passed", 18: "passed"}, 11, (7, 18), exit_code=1).passed
    # a scenario that is no companion of this run: cucumber ran more than it was asked
    assert not _run({7: "passed", 11: "passed", 15: "passed"}, 11, (7,)).passed
    # without companions, exactly the one scenario (as before)
    assert _run({11: "passed"}, 11, ()).passed and not _run({7: "passed", 11: "passed"}, 11, ()).passed
    # a run of the companions alone: exactly they, passed
    alone = _run({7: "passed", 18: "passed"}, COMPANIONS_ONLY, (7, 18))
    assert alone.companions_passed and not alone.passed
    assert not _run({7: "passed", 18: "failed"}, COMPANIONS_ONLY, (7, 18), exit_code=1).companions_passed
    assert not _run({7: "passed", 11: "passed", 18: "passed"}, COMPANIONS_ONLY, (7, 18)).companions_passed
    assert not _run({11: "passed"}, 11, ()).companions_passed  # no companions: not such a run


def test_verdicts_and_failures_with_companions() -> None:
    from bench.frameworks.cucumber_jvm.build import _failure
    from bench.frameworks.cucumber_jvm.framework import run_verdict
    from bench.frameworks.cucumber_jvm.judge import classify
    from bench.judging import Outcome, RunVerdict

    ok = _run({7: "passed", 11: "passed", 18: "passed"}, 11, (7, 18))
    assert run_verdict(ok) is RunVerdict.survived and classify([ok], 1) == (Outcome.passed, "")
    broken_setup = _run({7: "failed", 11: "passed", 18: "passed"}, 11, (7, 18), exit_code=1)
    assert run_verdict(broken_setup) is RunVerdict.killed  # the test failed: a mutant breaking setup kills it
    outcome, detail = classify([broken_setup], 1)
    assert outcome is Outcome.execution_failure and "companion scenario at line 7" in detail
    assert _failure(broken_setup) == ("failed", "line 11: its companion scenario at line 7 failed")
    stray = _run({7: "passed", 11: "passed", 15: "passed"}, 11, (7,))
    assert _failure(stray)[0] == "not_run" and "line 15" in classify([stray], 1)[1]
