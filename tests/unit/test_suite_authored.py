"""The documentation ablation's pieces (bench.suite.authored): what the submission check admits,
how authored feature files are read and capped, how a suite of authored scenarios is scored, and
the documentation page's docstrings."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from bench.frameworks.protocol import TestAreaSpec
from bench.frameworks.registry import get_framework
from bench.model import Outcome
from bench.suite.authored import (
    DocumentedDeclaration,
    DocumentedType,
    _docstrings,
    _render,
    authored_dir,
    authored_requirements,
    judged_cap,
    score_authored_result,
    split_at_cap,
)
from bench.suite.evaluate import ScenarioVerdict
from bench.suite.instances import SuiteInstance
from bench.suite.targets import TargetPair

FEATURE = """\
Feature: Own scenarios
  Scenario: one
    Given a thing
    Then it holds

  Scenario Outline: rows
    Given <n> things
    Then it holds

    Examples:
      | n |
      | 1 |
      | 2 |
      | 3 |

  Scenario: last
    Then it holds
"""


def _area(tmp_path: Path) -> TestAreaSpec:
    features = tmp_path / "features"
    (features / "steps").mkdir(parents=True)
    (features / "a.feature").write_text("Feature: a\n")
    (features / "environment.py").write_text("")
    return replace(get_framework("behave").test_area(tmp_path, "features"), authored_dirs=(authored_dir("features"),))


def test_only_new_feature_files_under_the_authored_directory_are_admitted(tmp_path: Path) -> None:
    area = _area(tmp_path)
    assert area.rejections({"features/authored/own.feature": FEATURE, "features/steps/own.py": "x = 1\n"}) == []
    rejected = area.rejections({"features/a.feature": "Feature: b\n",  # a reference feature: never replaced
                                "features/elsewhere/x.feature": FEATURE,
                                "features/authored/../a.feature": FEATURE,
                                "authored/x.feature": FEATURE})
    assert len(rejected) == 4
    assert any("features/a.feature: feature files are the requirement" in r for r in rejected)
    assert any("authored feature files go under features/authored/" in r for r in rejected)
    # without the ablation nothing changes: a feature file is never test code
    plain = get_framework("behave").test_area(tmp_path, "features")
    assert plain.rejections({"features/authored/own.feature": FEATURE}) == [
        "features/authored/own.feature: feature files are the requirement, not test code"]


def test_authored_scenarios_are_read_in_order_and_bad_files_reported() -> None:
    files = {"features/authored/b.feature": FEATURE, "features/authored/a.feature": "not gherkin at all\n  Given",
             "features/steps/x.py": "", "features/other.feature": FEATURE}
    requirements, problems = authored_requirements(files, "features/authored")
    assert [(r.feature_file, r.scenario_line) for r in requirements] == [
        ("features/authored/b.feature", 2), ("features/authored/b.feature", 6), ("features/authored/b.feature", 16)]
    assert requirements[1].run_lines == [12, 13, 14]
    assert len(problems) == 1 and problems[0].startswith("features/authored/a.feature:")


def test_the_cap_counts_runnable_units() -> None:
    requirements, _ = authored_requirements({"features/authored/b.feature": FEATURE}, "features/authored")
    assert judged_cap(2) == 10 and judged_cap(7) == 21
    judged, over = split_at_cap(requirements, 4)  # 1 + 3 rows fit, the last scenario does not
    assert [r.scenario_line for r in judged] == [2, 6] and [r.scenario_line for r in over] == [16]
    judged, over = split_at_cap(requirements, 3)  # the outline's three rows do not fit after the first
    assert [r.scenario_line for r in judged] == [2] and len(over) == 2


def test_scoring_authored_scenarios() -> None:
    """5 authored for 2 reference scenarios; 3 valid, one failing, one over the cap: validity 3/5;
    targets m1, m2, m3: m1 killed by a valid one, m2 'killed' only by the failing one, m3 survives:
    1/3; size 5/2."""
    suite = SuiteInstance(id="p/f.feature", project="p", feature_file="f.feature", scenarios=["s1", "s2"],
                          specification_words=40, reference_step_definitions=[],
                          targets=[TargetPair(scenario="s1", mutant=m, unrelated_kills=0) for m in ("m1", "m2", "m3")],
                          candidates=3, dropped=0)
    verdicts = [ScenarioVerdict(instance_id="a1", outcome=Outcome.passed, stability="valid", kills=["m1"]),
                ScenarioVerdict(instance_id="a2", outcome=Outcome.passed, stability="valid"),
                ScenarioVerdict(instance_id="a3", outcome=Outcome.passed, stability="valid"),
                ScenarioVerdict(instance_id="a4", outcome=Outcome.assertion_failure, stability="failing",
                                kills=["m2"]),
                ScenarioVerdict(instance_id="a5", outcome=Outcome.generation_failure, stability="failing",
                                detail="over the cap")]
    result = score_authored_result(suite, verdicts, "", 2.0, None, documentation_words=77)
    assert result.validity.value == pytest.approx(3 / 5) and result.validity.failing == 2
    assert result.mutation.killed_ids == ["m1"] and result.mutation.value == pytest.approx(1 / 3)
    assert result.size.generated == 5 and result.size.ratio == 2.5
    assert result.specification_words == 77
    empty = score_authored_result(suite, [], "no authored scenario", 0.0, None, documentation_words=77)
    assert empty.validity.value is None and empty.mutation.value == 0.0 and empty.size.ratio == 0.0


def test_docstrings_by_qualified_name_and_the_page(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent('''
        """Module."""
        class Shop:
            """A shop."""
            def add(self, x):
                """Add ``x``."""
                return x
            class Inner:
                def deep(self):
                    """Deep."""
        def free():
            return 1
    '''))
    assert _docstrings(source) == {"Shop": "A shop.", "Shop.add": "Add ``x``.", "Shop.Inner": "",
                                   "Shop.Inner.deep": "Deep.", "free": ""}
    assert _docstrings(tmp_path / "missing.py") == {}
    page = _render([DocumentedType(declaring_type="m.Shop", file="m.py", docstring="A shop.", declarations=[
        DocumentedDeclaration(key="m.py:Shop.add", signature="def add(self, x):", docstring="Add ``x``."),
        DocumentedDeclaration(key="m.py:Shop.free", signature="def free():")])])
    assert page.splitlines() == ["## `m.Shop` (m.py)", "", "A shop.", "", "### `def add(self, x):`", "",
                                 "Add ``x``.", "", "### `def free():`", "", "(no docstring)"]
    assert "No production interface" in _render([])
