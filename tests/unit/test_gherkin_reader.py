from pathlib import Path

from bench.gherkin_reader import cross_check_with_behave, read_feature_file
from tests.conftest import write_project


def test_background_outline_and_effective_steps(mini_project: Path) -> None:
    parsed = read_feature_file(mini_project, mini_project / "features/calc.feature")
    assert parsed.problem is None
    names = [r.scenario_name for r in parsed.requirements]
    assert names == ["Add one number", "Add two numbers", "Add from a seed"]
    first, _, outline = parsed.requirements
    assert [s.text for s in first.background_steps] == ["a calculator"]
    assert [(s.type, s.text) for s in first.effective_steps] == [
        ("given", "a calculator"), ("when", "I add 3"), ("then", "the total is 3")]
    assert first.run_lines == [first.scenario_line] == [9]
    # And/But take the type of the step before them
    second = parsed.requirements[1]
    assert [s.type for s in second.steps] == ["when", "then", "then"]
    assert outline.is_outline and outline.examples[0].header == ["n", "total"]
    assert outline.run_lines == [25, 26]
    assert "Background:" in outline.gherkin and "Scenario Outline: Add from a seed" in outline.gherkin
    assert "Scenario: Add one number" not in outline.gherkin
    assert cross_check_with_behave(mini_project, parsed) == []


def test_problem_files(tmp_path: Path) -> None:
    root = write_project(tmp_path, {
        "features/empty.feature": "# nothing here\n",
        "features/untitled.feature": "Feature:\n  Scenario: x\n    Given y\n",
        "features/bad.feature": "Feature: ok\n  Scenario: x\n    Given y\n      | a | b |\n      | 1 |\n",
        "features/rule.feature": (
            "Feature: rules\n  Background:\n    Given a\n  Rule: r\n    Background:\n      Given b\n"
            "    Scenario: s\n      When c\n"),
    })
    problems = {p: read_feature_file(root, root / "features" / p).problem
                for p in ["empty.feature", "untitled.feature", "bad.feature"]}
    assert problems == {"empty.feature": "empty", "untitled.feature": "no_title", "bad.feature": "unparsable"}
    rule = read_feature_file(root, root / "features/rule.feature").requirements[0]
    assert [s.text for s in rule.effective_steps] == ["a", "b", "c"]
