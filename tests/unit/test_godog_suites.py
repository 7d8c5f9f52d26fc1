"""testing.T godog suites (coddy-agent's layout): discovery from the test files, pickles and
their subtest names, godog's tag expressions, and one pickle's steps read from the suite's own
``go test -test.v`` pretty output (tests/unit/data/godog_pretty: captured from coddy-agent
aaaea77 with godog v0.15.1)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.frameworks.godog.pretty import ExpectedStep, parse_subtest
from bench.frameworks.godog.suites import (
    build_tags_of,
    discover,
    plan,
    rewrite,
    subtest_pattern,
    tags_match,
)

DATA = Path(__file__).parent / "data" / "godog_pretty"

SUITE_FILE = '''//go:build http && !ui

package httpserver

import (
	"testing"

	"github.com/cucumber/godog"
)

func initializeThing(sc *godog.ScenarioContext) {
	sc.Step(`^a thing$`, func() error { return nil })
}

func TestThingFeature(t *testing.T) {
	suite := godog.TestSuite{
		Name:                "thing",
		ScenarioInitializer: initializeThing,
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    []string{"../../features/thing.feature"},
			Tags:     "@http",
			TestingT: t,
			Strict:   true,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("failed")
	}
}

func TestNotASuite(t *testing.T) {
	_ = godog.TestSuite{Name: "no TestingT", Options: &godog.Options{Paths: []string{"x.feature"}}}
}
'''

FEATURE = '''Feature: things

  Scenario: plain
    Given a thing

  @http
  Scenario: over http
    Given a thing

  @http
  Scenario Outline: rows <n>
    Given a thing

    Examples:
      | n |
      | 1 |
      | 1 |
      | 2 |
'''


def test_discovery_reads_the_suite_literal(tmp_path: Path) -> None:
    (tmp_path / "external" / "httpserver").mkdir(parents=True)
    (tmp_path / "external" / "httpserver" / "bdd_thing_test.go").write_text(SUITE_FILE)
    (tmp_path / "features").mkdir()
    (tmp_path / "features" / "thing.feature").write_text(FEATURE)
    [suite] = discover(tmp_path)
    assert (suite.package, suite.test, suite.build_tags) == ("external/httpserver", "TestThingFeature", ("http",))
    assert suite.paths == ("features/thing.feature",) and suite.godog_tags == "@http"
    assert suite.initializer == "initializeThing" and suite.key == "external/httpserver:TestThingFeature"
    # the @http pickles in godog's order; equal names get Go's #01, #02
    pickles = plan(tmp_path, suite)
    assert [(p.line, pickles.subtests[(p.feature, p.line)]) for p in pickles.pickles] == [
        (7, "over_http"), (16, "rows_1"), (17, "rows_1#01"), (18, "rows_2")]
    assert pickles.pickle("features/thing.feature", 17).steps == (("a thing", 12),)


def test_build_constraints_tags_and_patterns() -> None:
    assert build_tags_of(b"//go:build http && !ui\n\npackage x\n") == ("http",)
    assert build_tags_of(b"// +build old\npackage x\n") == ()
    assert build_tags_of(b"//go:build ignore\npackage x\n") is None
    assert tags_match("", []) and tags_match("@a,@b", ["@b"]) and not tags_match("@a && @b", ["@a"])
    assert tags_match("~@wip", ["@x"]) and not tags_match("~@wip", ["@wip"])
    assert rewrite("a b\tc") == "a_b_c"
    pattern = subtest_pattern("TestX", "one/two (three)#01")
    assert pattern == r"^TestX$/^one$/^two\ \(three\)\#01$"
    assert re.match(pattern.split("/")[2], "two (three)#01")


def _expected(*steps: tuple[str, int]) -> list[ExpectedStep]:
    return [ExpectedStep(text, line) for text, line in steps]


BACKGROUND = (("an active Coddy config:", 21), ("the session can hot-reload its runtime configuration", 36))


def test_a_passing_scenario_with_its_background_printed() -> None:
    output = (DATA / "background_printed.txt").read_text()
    report = parse_subtest(output, "TestConfigToolsFeature", "Read_one_setting_instead_of_the_whole_file",
                           "features/config_tools.feature", 38, "Read one setting instead of the whole file",
                           _expected(*BACKGROUND, ('the agent reads config path "mcp_servers[name=filesystem].command"',
                                                   39), ('the read returns "npx"', 40),
                                     ("the read names the active config file", 41)))
    [scenario] = report.scenarios
    assert scenario.passed and [s.status for s in scenario.steps] == ["passed"] * 5
    # the location godog v0.15 prints is the registration's line
    assert [s.match.line for s in scenario.steps if s.match] == [321, 322, 323, 324, 325]


def test_the_background_not_printed_is_inferred_from_the_result() -> None:
    output = (DATA / "background_not_printed.txt").read_text()
    report = parse_subtest(output, "TestConfigToolsFeature", "Credentials_are_redacted_on_read",
                           "features/config_tools.feature", 43, "Credentials are redacted on read",
                           _expected(*BACKGROUND, ('the agent reads config path "mcp_servers[name=filesystem]"', 44),
                                     ("the read is marked as redacted", 45),
                                     ('the read does not expose "super-secret"', 46)))
    [scenario] = report.scenarios
    assert scenario.passed
    assert [s.match is None for s in scenario.steps] == [True, True, False, False, False]


def test_a_failed_step_its_error_and_the_skipped_rest() -> None:
    output = (DATA / "failed_step.txt").read_text()
    report = parse_subtest(output, "TestConfigToolsFeature", "Staged_commands_do_not_touch_the_active_config",
                           "features/config_tools.feature", 48, "Staged commands do not touch the active config",
                           _expected(*BACKGROUND, ("the agent stages config commands:", 49),
                                     ("the staging result lists 3 pending commands", 54),
                                     ('config path "agent.max_turns" equals "17"', 55),
                                     ("the runtime config is not reloaded", 56)))
    [scenario] = report.scenarios
    assert [s.status for s in scenario.steps] == ["passed", "passed", "passed", "failed", "skipped", "skipped"]
    assert "want ok with 3 pending commands" in scenario.steps[3].error
    assert not scenario.passed and scenario.status == "failed"


def test_an_outline_row_binds_by_the_template_and_takes_the_subtest_result() -> None:
    output = (DATA / "outline_first_row.txt").read_text()
    report = parse_subtest(output, "TestLLMRetryOwnershipFeature",
                           "One_configured_retry_sends_exactly_two_upstream_requests",
                           "features/llm_retry_ownership.feature", 13, "One configured retry",
                           _expected(('a "openai" provider using "non-streaming" requests with one configured retry', 6),
                                     ("the upstream responds with a retryable server error", 7),
                                     ("the provider call fails", 8), ("exactly 2 upstream requests are sent", 9)))
    [scenario] = report.scenarios
    assert scenario.passed and [s.match.line for s in scenario.steps if s.match] == [173, 174, 175, 176]


def test_no_result_for_the_subtest_is_no_report() -> None:
    report = parse_subtest("=== RUN   TestX\npanic: boom\n", "TestX", "a", "f.feature", 3, "a",
                           _expected(("x", 4)))
    assert not report.written and "no result" in report.problem
