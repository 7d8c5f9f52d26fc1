"""A framework added through the protocol alone: ``tests/toyfw`` (a toy runner, its builder,
judge and test side) is installed as a ``req2test.frameworks`` entry point and nothing in
``src/`` names it. The generic builder builds a project of it, the generic evaluator calibrates
the dataset through its judge (the oracle is kill-complete, the empty test kills nothing), and
the harness's views hide its production through its language's hider."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibrate
from bench.dataset import load_dataset
from bench.frameworks import registry
from bench.frameworks.protocol import HIDDEN_MESSAGE
from bench.judging import EvaluateOptions

SRC = Path(__file__).resolve().parents[2] / "src"

PROJECT = {
    "pyproject.toml": """
        [project]
        name = "toycalc"
        version = "0.1"
        dependencies = []

        [tool.req2test]
        features = "features"
        python_path = ["src"]
        production = ["src/toycalc"]
        framework = "toy"
    """,
    "src/toycalc/__init__.py": """
        def add(a, b):
            return a + b


        def discount(total, percent):
            if percent > 100:
                raise ValueError("more than everything")
            return total - total * percent // 100
    """,
    "features/calc.feature": """
        Feature: toy calculator

          Scenario: adding
            Given the numbers 2 and 3
            When they are added
            Then the result is 5

          Scenario: a discount
            Given a total of 200
            When 10 percent are taken off
            Then the result is 180
    """,
    "features/toysteps/calc_steps.py": """
        from toyrun import step

        import toycalc


        @step(r"the numbers (\\d+) and (\\d+)")
        def given_numbers(context, a, b):
            context["numbers"] = (int(a), int(b))


        @step(r"they are added")
        def when_added(context):
            context["result"] = toycalc.add(*context["numbers"])


        @step(r"a total of (\\d+)")
        def given_total(context, total):
            context["total"] = int(total)


        @step(r"(\\d+) percent are taken off")
        def when_discounted(context, percent):
            context["result"] = toycalc.discount(context["total"], int(percent))


        @step(r"the result is (\\d+)")
        def then_result(context, expected):
            assert context["result"] == int(expected), context["result"]
    """,
}


@pytest.fixture
def toy_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy framework as a third party installs it: a distribution with an entry point."""
    site = tmp_path / "site"
    dist = site / "toyfw-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfw\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[req2test.frameworks]\ntoy = tests.toyfw:ToyFramework\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))


def _write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def test_nothing_in_src_names_the_toy_framework() -> None:
    for path in SRC.rglob("*.py"):
        assert "toyfw" not in path.read_text(encoding="utf-8"), path


def test_a_toy_framework_builds_evaluates_and_views_through_the_protocol(tmp_path: Path, toy_installed) -> None:
    from harness.views import materialize

    assert "toy" in registry.available()
    project = _write_project(tmp_path / "toycalc")
    card = build_dataset(str(project), tmp_path / "ds", BuildOptions(workers=1, timeout=60))
    assert card.projects[0].runner == "toy 0.1" and card.projects[0].instances == 2
    dataset = load_dataset(tmp_path / "ds")
    gold = dataset.load_gold()
    assert all(g.kills for g in gold.values()), "every scenario kills some mutant of its function"
    assert all(set(g.kills) <= set(g.pool) for g in gold.values())

    summaries = calibrate(tmp_path / "ds", tmp_path / "cal", EvaluateOptions(workers=1, timeout=60, resamples=50))
    results = {arm: [json.loads(line) for line in (tmp_path / "cal" / arm / "results.jsonl").read_text().splitlines()]
               for arm in ("oracle", "empty", "then-stripped")}
    assert [(r["outcome"], r["kill_complete"]) for r in results["oracle"]] == [("pass", True)] * 2
    assert all(r["generated_kills"] == 0 and r["outcome"] == "pass" for r in results["empty"])
    # without its Then step a test still detects the mutants that make a When step raise: in between
    assert sum(r["generated_kills"] for r in results["then-stripped"]) < sum(r["generated_kills"]
                                                                          for r in results["oracle"])
    assert all(r["coverage_jaccard"] is None for r in results["oracle"])  # the toy judge measures no trace
    assert set(summaries) == {"oracle", "empty", "then-stripped"}

    instance = dataset.instances[0]
    view = materialize(dataset, instance.id, "ah", cache_dir=tmp_path / "views")
    assert not (view.root / "features/toysteps/calc_steps.py").exists()
    assert view.manifest.removed_test_files == ["features/toysteps/calc_steps.py"]
    hidden = (view.root / "src/toycalc/__init__.py").read_text(encoding="utf-8")
    assert HIDDEN_MESSAGE in hidden and "return a + b" not in hidden
    assert sorted(view.manifest.hidden) == ["src/toycalc/__init__.py:add", "src/toycalc/__init__.py:discount"]


def test_the_toy_judge_uses_the_one_submission_check(tmp_path: Path, toy_installed) -> None:
    framework = registry.get_framework("toy")
    area = framework.test_area(tmp_path, "features")
    assert area.rejections({"features/toysteps/mine.py": "x = 1\n"}) == []
    assert "outside the test area" in area.rejections({"src/toycalc/__init__.py": "x = 1\n"})[0]
    assert "feature files are the requirement" in area.rejections({"features/toysteps/a.feature": ""})[0]
