"""A project's own environment (issue 26 item 6): ``--install-deps`` installs what the project
is missing into a cached environment of its own, never into req2test's interpreter, and the
build's workers and the evaluation's sandboxes run the project with it."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildError, BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.environments import MARKER, ensure_environment, environment_dir, environment_key, find_environment
from bench.evaluate import EvaluateOptions, evaluate
from tests.conftest import write_project

pytestmark = pytest.mark.integration

# click is one of req2test's own dependencies (typer's): the project pins another version
OWN_CLICK = importlib.metadata.version("click")
PINNED = "8.0.4" if OWN_CLICK != "8.0.4" else "8.0.3"

PINNED_PROJECT = {
    "pyproject.toml": f"""
        [project]
        name = "pinned"
        version = "0.1.0"
        dependencies = ["click=={PINNED}"]

        [tool.req2test]
        features = "features"
        python_path = ["src"]
        production = ["src/pinned"]
    """,
    "src/pinned/__init__.py": """
        import importlib.metadata


        def click_version():
            return importlib.metadata.version("click")


        def double(n):
            if n < 0:
                raise ValueError("negative")
            return n * 2
    """,
    "features/steps/steps.py": """
        from behave import given, when, then
        from pinned import click_version, double


        @given("the number {n:d}")
        def number(context, n):
            context.n = n


        @when("it is doubled")
        def doubled(context):
            context.result = double(context.n)


        @then("the result is {m:d}")
        def result(context, m):
            assert context.result == m, context.result


        @then("the project runs with its own click")
        def own_click(context):
            assert click_version() == "%s", click_version()
    """ % PINNED,  # noqa: UP031 - %: the step patterns' braces stay as written
    "features/double.feature": """
        Feature: doubling
          Scenario: a positive number
            Given the number 4
            When it is doubled
            Then the result is 8
            And the project runs with its own click
    """,
}


def test_an_environment_is_made_once_and_holds_what_it_was_asked_for(tmp_path: Path) -> None:
    python = ensure_environment([], root=tmp_path)
    assert (python.parent.parent / MARKER).is_file() and environment_dir(python) == python.parent.parent
    assert find_environment([], root=tmp_path) == python
    assert ensure_environment([], root=tmp_path) == python  # cached: the same directory
    assert environment_key(["b", "a"]) == environment_key(["a", "b", " a "])
    # it sees req2test's packages (the workers need behave and coverage) through the system site
    proc = subprocess.run([str(python), "-c", "import behave, coverage, sys; print(sys.prefix)"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == str(python.parent.parent), proc.stderr


def test_install_deps_builds_and_evaluates_in_the_projects_own_environment(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQ2TEST_ENVIRONMENTS", str(tmp_path / "envs"))
    project = write_project(tmp_path / "pinned", PINNED_PROJECT)
    with pytest.raises(BuildError, match="--install-deps"):
        build_dataset(str(project), tmp_path / "refused", BuildOptions(mutants=False))
    out = tmp_path / "dataset"
    card = build_dataset(str(project), out, BuildOptions(install_deps=True))
    # the step asserting the pinned click ran inside the build's workers: the scenario built
    assert card.projects[0].instances == 1 and card.projects[0].environment == [f"click=={PINNED}"]
    assert importlib.metadata.version("click") == OWN_CLICK  # req2test's own interpreter untouched
    assert find_environment([f"click=={PINNED}"]) is not None
    oracle = tmp_path / "oracle.jsonl"
    oracle.write_text("".join(p.model_dump_json() + "\n" for p in calibration_predictions(out)["oracle"]))
    summary = evaluate(out, oracle, tmp_path / "eval", EvaluateOptions(resamples=50))
    rows = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert [(r["outcome"], r["kill_complete"]) for r in rows] == [("pass", True)], rows
    assert summary["pass_at_1"]["value"] == 1.0
    assert load_dataset(out).card.projects[0].environment == [f"click=={PINNED}"]
