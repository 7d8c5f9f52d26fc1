"""The Cucumber-JVM runner's pure parts, on recorded cucumber-jvm 6.6.0 output
(tests/unit/data/cucumber_jvm/):

- ``probe_cucumber.json``: the JSON formatter's report of one JVM running all of
  ``probe.feature`` against ``ProbeSteps.java.txt`` (compiled with javac on java-algorand-sdk's
  test classpath): a Background, passing steps bound to a Cucumber expression, a regex and a
  nested class's method, a failing assertion then a skipped step, a failing and a passing
  Examples row, a pending step, a step throwing ``UnsupportedOperationException("implementation
  hidden")``, an undefined step, an ambiguous step and a failing ``@Before`` hook;
- ``probe_row_cucumber.json`` + ``probe_row_messages.ndjson``: ``probe.feature:22`` alone (the
  second Examples row, selected by its own line) with the message plugin;
- ``sdk_row_cucumber.json``: java-algorand-sdk's run of ``responses.feature:12`` (a row of the
  outline at line 4) with its Background;
- ``sdk_jacoco.xml``: an excerpt of the JaCoCo XML report of a java-algorand-sdk scenario.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.cucumber_json import JavaMethod, parse_location, parse_report, read_report, uri_path
from bench.frameworks.cucumber_jvm.definitions import parse_messages, read_messages
from bench.frameworks.cucumber_jvm.jacoco import agent_argument, parse_xml
from bench.frameworks.cucumber_jvm.pickles import feature_pickles, selected, tag_expression
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun, Jacoco, Suite, command
from bench.frameworks.cucumber_jvm.toolchain import runtime_classpath

DATA = Path(__file__).parent / "data" / "cucumber_jvm"


def test_probe_report_statuses_errors_and_matches() -> None:
    report = read_report(DATA / "probe_cucumber.json")
    assert report.written and report.features == ("features/probe.feature",)
    by_line = {s.line: s for s in report.scenarios}
    assert {line: s.status for line, s in by_line.items()} == {
        5: "passed", 10: "failed", 21: "passed", 22: "failed", 24: "pending", 27: "failed", 30: "undefined",
        33: "ambiguous", 37: "failed"}
    ok = by_line[5]
    assert ok.passed and ok.keyword == "Scenario" and ok.name == "ok" and ok.uri == "features/probe.feature"
    # the Background element is folded into each scenario, first
    assert [(s.keyword, s.text, s.background) for s in ok.steps] == [
        ("Given", "a start of 1", True), ("When", "I add 2", False), ("Then", "the total is 3", False),
        ("And", "a nested step", False)]
    assert ok.steps[0].match == JavaMethod("probe.ProbeSteps", "aStartOf", ("java.lang.Integer",))
    assert ok.steps[1].match == JavaMethod("probe.ProbeSteps", "iAdd", ("int",))  # a regex definition
    nested = ok.steps[3].match
    assert nested == JavaMethod("probe.ProbeSteps$Nested", "nestedStep", ())
    assert nested.source_path == "probe/ProbeSteps.java" and nested.package == "probe"
    failed = by_line[10]
    assert [s.status for s in failed.steps] == ["passed", "passed", "failed", "skipped"]
    assert failed.steps[2].error.startswith("java.lang.AssertionError: expected 4 but was 3")
    # the stack trace names the step method's source line: ProbeSteps.java:30 is theTotalIs's throw
    assert "at probe.ProbeSteps.theTotalIs(ProbeSteps.java:30)" in failed.steps[2].error
    rows = by_line[21], by_line[22]
    assert [r.name for r in rows] == ["rows 1", "rows 5"] and all(r.keyword == "Scenario Outline" for r in rows)
    assert by_line[27].steps[-1].error.startswith("java.lang.UnsupportedOperationException: implementation hidden")
    undefined, ambiguous = by_line[30].steps[-1], by_line[33].steps[-1]
    assert undefined.status == "undefined" and undefined.match is None and undefined.location == ""
    assert ambiguous.status == "ambiguous" and ambiguous.match is None
    assert "matches more than one step definition" in ambiguous.error
    hooked = by_line[37]
    assert [s.status for s in hooked.steps] == ["skipped", "skipped"] and not hooked.passed
    (hook,) = hooked.before
    assert hook.status == "failed" and hook.match == JavaMethod("probe.ProbeSteps", "hookSaysNo", ())
    assert "hook says no" in hook.error


def test_an_examples_row_selected_by_its_own_line() -> None:
    report = read_report(DATA / "probe_row_cucumber.json")
    (row,) = report.scenarios
    assert row.line == 22 and row.name == "rows 5" and row.status == "failed"
    assert row.uri == "features/probe.feature"  # the relative path as given, "file:" dropped
    run = CucumberJvmRun(feature="features/probe.feature", line=22, report=report, exit_code=1, elapsed=1.0,
                         cpu=1.0, timed_out=False, output="", argv=())
    assert run.scenario is row and not run.passed


def test_message_stream_lists_every_definition_and_the_bindings() -> None:
    run = read_messages(DATA / "probe_row_messages.ndjson")
    assert not run.problem
    patterns = {d.pattern: d for d in run.definitions}
    assert len(run.definitions) == 8  # every annotated method of the glue, used or not
    assert patterns["^I add (\\d+)$"].regex and not patterns["the total is {int}"].regex
    assert patterns["a nested step"].method == JavaMethod("probe.ProbeSteps$Nested", "nestedStep", ())
    (case,) = run.bound
    assert [step.text for step in case] == ["a start of 1", "I add 5", "the total is 7"]
    assert [run.definition(step.definition_ids[0]).method.method for step in case] == ["aStartOf", "iAdd", "theTotalIs"]
    assert parse_messages("not json\n").problem


def test_sdk_row_report() -> None:
    report = read_report(DATA / "sdk_row_cucumber.json")
    (row,) = report.scenarios
    assert row.line == 12 and row.passed and row.keyword == "Scenario Outline"
    assert row.uri == "src/test/resources/com/algorand/algosdk/unit/responses.feature"
    assert "@unit.responses" in row.tags
    locations = {s.match.class_name for s in row.steps if s.match}
    assert locations <= {"com.algorand.algosdk.unit.ResponsesShared", "com.algorand.algosdk.unit.IndexerResponses",
                         "com.algorand.algosdk.unit.AlgodResponses"}


def test_locations_and_uris() -> None:
    assert parse_location("com.x.A.m(java.lang.String,java.lang.Long)") == JavaMethod(
        "com.x.A", "m", ("java.lang.String", "java.lang.Long"))
    assert parse_location("com.x.A$B.m(int[],java.util.List)") == JavaMethod("com.x.A$B", "m", ("int[]", "java.util.List"))
    assert parse_location("features/p.feature:3") is None
    assert uri_path("file:src/x.feature") == "src/x.feature"
    assert uri_path("file:///tmp/x.feature") == "/tmp/x.feature"
    assert uri_path("classpath:com/x.feature") == "classpath:com/x.feature"
    assert parse_report("{}").problem and parse_report("nope").problem


def test_jacoco_xml_lines() -> None:
    coverage = parse_xml((DATA / "sdk_jacoco.xml").read_text())
    assert coverage.instrumented and coverage.covered
    for path, lines in coverage.covered.items():
        assert path.startswith("com/algorand/algosdk/") and path.endswith(".java")
        assert lines <= coverage.instrumented[path]
    covered, instrumented = coverage.under("src/main/java")
    assert all(p.startswith("src/main/java/com/algorand/algosdk/") for p in (*covered, *instrumented))
    with pytest.raises(ValueError):
        parse_xml("<html/>")
    assert agent_argument(Path("/a/agent.jar"), Path("/o/j.exec"), ["com.x", "org.y"]) == (
        "-javaagent:/a/agent.jar=destfile=/o/j.exec,includes=com.x.*:org.y.*")


def test_pickles_select_rows_by_their_own_line_and_tags() -> None:
    pickles = feature_pickles("features/probe.feature", (DATA / "probe.feature").read_text())
    assert [(p.line, p.scenario_line, p.outline_row) for p in pickles if p.outline_row] == [(21, 15, True), (22, 15, True)]
    assert [p.line for p in pickles] == [5, 10, 21, 22, 24, 27, 30, 33, 37]
    hooked = pickles[-1]
    assert hooked.tags == ("@hookfails",) and selected(hooked, ["hookfails"]) and not selected(pickles[0], ["hookfails"])
    assert selected(pickles[0], [])
    assert tag_expression(["unit.a", "@unit.b"]) == "@unit.a or @unit.b"


def test_command_line(tmp_path: Path) -> None:
    root = tmp_path / "p"
    classpath = runtime_classpath(root, ["/r/a.jar", "/r/b.jar"])
    # jars first, the project's directories last (AppCDS: no non-empty directory before an archived jar)
    assert classpath[:2] == ["/r/a.jar", "/r/b.jar"] and classpath[2].endswith("target/test-classes")
    suite = Suite(root=root, classpath=tuple(classpath), glue=("com.x.unit", "com.x.shared"), tags=("unit.a", "unit.b"))
    argv = command(suite, "f/x.feature", 12, tmp_path / "o", messages=True, archive=tmp_path / "app.jsa",
                   jacoco=Jacoco(tmp_path / "agent.jar", ("com.x",)))
    assert argv[0] == "java" and "-Dnet.bytebuddy.experimental=true" in argv
    assert f"-XX:SharedArchiveFile={tmp_path / 'app.jsa'}" in argv
    assert any(a.startswith("-javaagent:") and "includes=com.x.*" in a for a in argv)
    main = argv.index("io.cucumber.core.cli.Main")
    assert argv[main - 2] == "-cp" and argv[main - 1] == ":".join(classpath)
    tail = argv[main + 1:]
    assert tail[tail.index("--tags") + 1] == "@unit.a or @unit.b"
    assert [tail[i + 1] for i, a in enumerate(tail) if a == "--glue"] == ["com.x.unit", "com.x.shared"]
    assert tail[-1] == "f/x.feature:12"
    assert any(a.startswith("json:") for a in tail) and any(a.startswith("message:") for a in tail)


def test_corpus_places_features_like_the_harness(tmp_path: Path) -> None:
    from tests.integration.recipes import recipe

    corpus = recipe("java_algorand_sdk")

    out = tmp_path / "sdk"
    harness = out / corpus.HARNESS_DIR
    for rel in ("unit/a.feature", "unit/offline.feature", "integration/b.feature", "resources/programs/x.teal",
                "README.md"):
        (harness / rel).parent.mkdir(parents=True, exist_ok=True)
        (harness / rel).write_text("x")
    corpus.place_like_the_harness(out)
    assert (harness / "integration/offline.feature").is_file() and not (harness / "unit/offline.feature").exists()
    assert (out / "src/test/resources/programs/x.teal").is_file() and not (harness / "resources").exists()
    assert sorted(p.name for p in harness.iterdir()) == ["integration", "unit"]


def test_jvm_process_exit_output_and_timeout(tmp_path: Path) -> None:
    from bench.frameworks.cucumber_jvm.runner import run_jvm

    code, elapsed, cpu, timed_out, output = run_jvm(["sh", "-c", "echo hello; exit 3"], tmp_path, tmp_path, 30.0, {"PATH": "/usr/bin:/bin"})
    assert (code, timed_out) == (3, False) and "hello" in output and cpu >= 0.0 and elapsed > 0.0
    code, elapsed, _, timed_out, _ = run_jvm(["sh", "-c", "sleep 30 & wait"], tmp_path, tmp_path, 0.5, {"PATH": "/usr/bin:/bin"})
    assert code is None and timed_out and elapsed < 10.0  # the whole session killed, the child sleep too
