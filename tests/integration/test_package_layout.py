"""A second behave layout, small: the py-algorand-sdk shape on a project of our own.

behave's base dir is ``tests/`` (environment.py and steps/ there, features under
tests/features), step modules import each other through the ``tests`` package, the
project declares its dependencies in setup.py only, and its suite is a tag selection.
Before the fix every scenario whose steps import a sibling through the package was
excluded as ``validation_positive_failed`` (the sibling loaded twice: AmbiguousStep).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.project import declared_dependencies, resolve_source
from tests.conftest import write_project

pytestmark = pytest.mark.integration

FILES = {
    "setup.py": """
        import setuptools

        REQUIRES = ["packaging>=20", "typing_extensions>=4"]

        setuptools.setup(
            name="pkg-calc",
            version="1.4.0",
            install_requires=REQUIRES,
            packages=setuptools.find_packages(include=("pkgcalc", "pkgcalc.*")),
        )
    """,
    "pyproject.toml": """
        [tool.req2test]
        features = "tests"
        python_path = ["."]
        production = ["pkgcalc"]
        tags = ["unit.math", "@unit.text"]
    """,
    "pkgcalc/__init__.py": """
        def add(a, b):
            return a + b


        def shout(text):
            return text.upper() + "!"
    """,
    "tests/__init__.py": "",
    "tests/steps/__init__.py": "",
    "tests/environment.py": """
        def before_scenario(context, scenario):
            context.log = []
    """,
    "tests/steps/common_steps.py": """
        from behave import given


        def remember(context, value):
            context.log.append(value)
            context.value = value


        @given("the numbers {a:d} and {b:d}")
        def given_numbers(context, a, b):
            context.numbers = (a, b)
    """,
    "tests/steps/math_steps.py": """
        import tests.steps.common_steps  # noqa: F401  (as py-algorand-sdk does)
        from behave import then, when
        from tests.steps.common_steps import remember

        from pkgcalc import add


        @when("I add them")
        def when_add(context):
            remember(context, add(*context.numbers))


        @then("the result is {n:d}")
        def then_result(context, n):
            assert context.value == n, context.value
    """,
    "tests/steps/text_steps.py": """
        from behave import then, when
        from tests.steps.common_steps import remember

        from pkgcalc import shout


        @when('I shout "{text}"')
        def when_shout(context, text):
            remember(context, shout(text))


        @then('I hear "{text}"')
        def then_hear(context, text):
            assert context.value == text, context.value
    """,
    "tests/features/unit/math.feature": """
        @unit
        Feature: Arithmetic

          @unit.math
          Scenario: Add two numbers
            Given the numbers 2 and 3
            When I add them
            Then the result is 5

          @unit.text
          Scenario: Shout
            When I shout "hey"
            Then I hear "HEY!"

          @unit.other
          Scenario: Not in this SDK's suite
            Given the numbers 1 and 1
            When I add them
            Then the result is 3
    """,
    "tests/features/integration/live.feature": """
        @integration
        Feature: Needs a network
          Scenario: Talk to a node
            Given the numbers 0 and 0
    """,
}


def test_setup_py_projects_declare_their_dependencies(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", FILES)
    assert declared_dependencies(project) == ["packaging>=20", "typing_extensions>=4"]
    source = resolve_source(str(project))
    assert (source.name, source.version) == ("pkg-calc", "1.4.0")
    assert source.tags == ["unit.math", "unit.text"]
    (project / "setup.cfg").write_text("[options]\ninstall_requires =\n    attrs>=20\n    packaging\n")
    assert declared_dependencies(project) == ["attrs>=20", "packaging"]


def test_package_imported_step_modules_build_and_calibrate(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", FILES)
    out = tmp_path / "dataset"
    build_dataset(str(project), out, BuildOptions(workers=2, timeout=60))
    dataset = load_dataset(out)
    card = dataset.card.projects[0]
    assert card.exclusions == {"not_selected_by_tags": 2}, card.exclusions
    assert card.instances == 2
    gold = dataset.load_gold()
    add = gold["pkg-calc/tests/features/unit/math.feature:5"]
    # the sibling imported through the package is part of the test, with the package itself
    assert {f.path for f in add.closure if f.path.endswith(".py")} == {
        "tests/steps/math_steps.py", "tests/steps/common_steps.py", "tests/__init__.py", "tests/steps/__init__.py"}
    assert add.kills, "the developers' test kills mutants of add()"

    sets = calibration_predictions(out)
    for name, kc in (("oracle", 1.0), ("empty", 0.0)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name]))
        summary = evaluate(out, path, tmp_path / name, EvaluateOptions(workers=2, resamples=100))
        assert summary["kill_complete_at_1"]["value"] == kc, json.dumps(summary["outcomes"])
        if name == "oracle":
            assert summary["pass_at_1"]["value"] == 1.0


def test_bad_layout_settings_are_one_line_errors(tmp_path: Path) -> None:
    from bench.project import SourceError

    for setting in ("tags = 5", 'test_dependencies = "glom"'):
        files = dict(FILES)
        files["pyproject.toml"] = FILES["pyproject.toml"].replace('tags = ["unit.math", "@unit.text"]', setting)
        project = write_project(tmp_path / setting.split()[0], files)
        with pytest.raises(SourceError, match=r"\[tool.req2test\] (tags|test_dependencies) must be a list"):
            resolve_source(str(project))
