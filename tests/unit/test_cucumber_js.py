"""cucumber-js pieces that need no Node: the step-definition scan, hiding and emptying,
the Messages reader, mutant application, the prediction screen and project settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.frameworks.cucumber_js.judge import screen
from bench.frameworks.cucumber_js.language import TypeScriptLanguage, make_mutant
from bench.frameworks.cucumber_js.messages import read_report
from bench.frameworks.cucumber_js.testside import TestSideJs, remove_sites, scan_source, strip_bodies
from bench.frameworks.registry import available, get_framework
from bench.project import SourceError, resolve_source

STEPS = b"""'use strict';
const { Given, When, Then } = require('@cucumber/cucumber');
function helper(x) { return x + 1; }

Given('an empty cart', function () {
  this.cart = [];
});

When("I add {int} \\"things\\"", function (n) {
  this.cart.push(helper(n));
});

Then(/^the cart holds (\\d+)$/, async function (n) {
  if (this.cart.length !== Number(n)) throw new Error('no');
});

const name = 'dynamic';
Given(name, function () {});
"""


def test_scan_finds_literal_step_definitions_in_order() -> None:
    sites = scan_source("steps.js", STEPS)
    assert [(s.keyword, s.pattern, s.line, s.end_line) for s in sites] == [
        ("Given", "an empty cart", 5, 7),
        ("When", 'I add {int} "things"', 9, 11),
        ("Then", r"^the cart holds (\d+)$", 13, 15),
    ]  # Given(name, ...) has no literal pattern: registration code, not a definition


def test_remove_keeps_every_other_line_in_place() -> None:
    sites = scan_source("steps.js", STEPS)
    out = remove_sites(STEPS, [sites[1]])
    assert out.count(b"\n") == STEPS.count(b"\n")
    assert b"I add" not in out and b"an empty cart" in out and b"the cart holds" in out
    assert out.splitlines()[12] == STEPS.splitlines()[12]  # the Then call did not move


def test_strip_bodies_empties_only_the_chosen_functions() -> None:
    sites = scan_source("steps.js", STEPS)
    out = strip_bodies("steps.js", STEPS, [sites[0], sites[2]])
    assert b"this.cart = []" not in out and b"throw new Error" not in out
    assert b"this.cart.push(helper(n))" in out
    assert out.count(b"\n") == STEPS.count(b"\n")
    assert [s.pattern for s in scan_source("steps.js", out)] == [s.pattern for s in sites]


def test_site_lookup_prefers_the_call_site_then_the_step_kind(tmp_path: Path) -> None:
    (tmp_path / "s.js").write_bytes(b"Given('x', function () {});\nThen('x', function () {});\n")
    side = TestSideJs(tmp_path, ["s.js"])
    assert side.site_for("x", "Outcome").keyword == "Then"
    assert side.site_for("x", "Context").keyword == "Given"
    assert side.site_for("x", "Outcome", "s.js", 1).keyword == "Given"  # where Given(...) was called
    assert side.site_for("missing", "Context") is None
    assert side.infrastructure == []


def _write_messages(path: Path, messages: list[dict]) -> None:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages) + '{"torn', encoding="utf-8")


def test_messages_reader_gives_statuses_bindings_and_rows(tmp_path: Path) -> None:
    report = tmp_path / "m.ndjson"
    _write_messages(report, [
        {"pickle": {"id": "p1", "uri": "f.feature", "location": {"line": 12}, "name": "row",
                    "steps": [{"id": "s1", "text": "an empty cart", "type": "Context"},
                              {"id": "s2", "text": "the cart holds 2", "type": "Outcome"}]}},
        {"stepDefinition": {"id": "d1", "pattern": {"source": "an empty cart"},
                            "sourceReference": {"uri": "steps.js", "location": {"line": 5}}}},
        {"testCase": {"id": "c1", "pickleId": "p1", "testSteps": [
            {"id": "h1", "hookId": "hook"},
            {"id": "t1", "pickleStepId": "s1", "stepDefinitionIds": ["d1"]},
            {"id": "t2", "pickleStepId": "s2", "stepDefinitionIds": []}]}},
        {"testCaseStarted": {"id": "r1", "testCaseId": "c1"}},
        {"testStepFinished": {"testCaseStartedId": "r1", "testStepId": "h1", "testStepResult": {"status": "PASSED"}}},
        {"testStepFinished": {"testCaseStartedId": "r1", "testStepId": "t1", "testStepResult": {"status": "PASSED"}}},
        {"testStepFinished": {"testCaseStartedId": "r1", "testStepId": "t2",
                              "testStepResult": {"status": "UNDEFINED"}}},
        {"testRunFinished": {"success": False}},
    ])
    run = read_report(report)
    assert run.finished and run.success is False
    (pickle,) = run.pickles
    assert (pickle.uri, pickle.line) == ("f.feature", 12)
    assert [(s.text, s.status, s.definition_ids) for s in pickle.steps] == [
        ("an empty cart", "PASSED", ["d1"]), ("the cart holds 2", "UNDEFINED", [])]
    assert run.definitions["d1"].line == 5
    assert read_report(tmp_path / "absent").pickles == []


def test_mutant_application_checks_the_original_text(tmp_path: Path) -> None:
    source = "function f(a, b) {\n  return a + b;\n}\n"
    (tmp_path / "f.js").write_text(source)
    mutant = make_mutant(tmp_path, "f.js", "ArithmeticOperator", "a - b", 2, 9, 2, 14)
    assert mutant.original == "a + b"
    language = TypeScriptLanguage()
    assert language.apply_mutant(source, mutant) == "function f(a, b) {\n  return a - b;\n}\n"
    with pytest.raises(ValueError):
        language.apply_mutant(source.replace("a + b", "a * b"), mutant)
    again = make_mutant(tmp_path, "f.js", "ArithmeticOperator", "a - b", 2, 9, 2, 14)
    assert again.id == mutant.id  # stable across builds


@pytest.mark.parametrize("code", [
    "require('child_process').execSync('x')",
    "const vm = require('node:vm')",
    "if (process.env.X) {}",
    "Object.keys(require.cache)",
    "Function.prototype.toString.call(f)",
    "globalThis['__stryker__']",
    "fs.readFileSync('src/cart.js', 'utf8')",
    "fs.readFileSync(path.join(__dirname, '../../src/cart.js'))",
    "const cp = require('child' + '_process')",
    "const p = this.constructor.constructor('return pro' + 'cess')()",
    "Reflect.get(x, 'y')",
    "import('node:' + 'vm')",
    "const { env } = process",
])
def test_screen_refuses_what_could_observe_a_verdict(code: str) -> None:
    assert screen({"features/step_definitions/x.js": code}, ["src"])


def test_screen_passes_ordinary_step_code() -> None:
    code = STEPS.decode() + "\nconst data = fs.readFileSync(path.join(dir, 'resources', 'a.json'));\n" \
                            "assert.strictEqual(buf.toString(), 'x');\n" \
                            "When('I process the order', function () { /* process it */ });\n"
    assert screen({"features/step_definitions/x.js": code}, ["src"]) == []


def test_cucumber_js_is_registered() -> None:
    assert "cucumber-js" in available()
    framework = get_framework("cucumber-js")
    assert framework.language.name == "typescript"
    assert framework.run_command("f.feature", [3, 9], stop=True)[-2:] == ["f.feature:3", "f.feature:9"]
    assert "cucumber.json" in framework.runner_config_files


def test_a_js_project_is_described_from_req2test_toml_and_package_json(tmp_path: Path) -> None:
    (tmp_path / "features").mkdir()
    (tmp_path / "features" / "a.feature").write_text("Feature: a\n  Scenario: s\n    Given x\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "package.json").write_text(json.dumps({"name": "cartjs", "version": "0.3.1"}))
    (tmp_path / "req2test.toml").write_text('[tool.req2test]\nframework = "cucumber-js"\nproduction = ["src"]\n')
    source = resolve_source(str(tmp_path))
    assert (source.name, source.version, source.framework, source.production) == ("cartjs", "0.3.1",
                                                                                   "cucumber-js", ["src"])
    assert source.dependencies == []  # a JS project's packages come from its lockfile
    (tmp_path / "package.json").write_text("{not json")
    with pytest.raises(SourceError, match="package.json is not valid JSON"):
        resolve_source(str(tmp_path))
