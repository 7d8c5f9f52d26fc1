"""Shared fixtures: a tiny behave project written on the fly (fast, fully controlled)."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

# litellm fetches its price map from GitHub when imported unless told not to (harness.llm sets
# this too, but a test may import litellm first): offline, that is seconds of failed attempts.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tinyshop"

MINI_FILES = {
    "pyproject.toml": """
        [project]
        name = "minicalc"
        version = "0.3.0"

        [tool.req2test]
        features = "features"
        python_path = ["src"]
        production = ["src/minicalc"]
    """,
    "src/minicalc/__init__.py": """
        from minicalc.core import Calculator, make_calculator
    """,
    "src/minicalc/core.py": '''
        """A calculator with a memory."""
        from dataclasses import dataclass


        def _check(value):
            if value < 0 or value > LIMIT:
                raise ValueError("negative")
            return value


        class Calculator:
            """Adds numbers."""

            def __init__(self, start=0):
                self.total = start

            def add(self, amount: int) -> int:
                """Add and return the total."""
                self.total = min(self.total + _check(amount), _default_limit(2))
                return self.total

            @property
            def doubled(self):
                return self.total * 2

            def _secret(self):
                return 42


        @dataclass
        class Receipt:
            total: int


        def make_calculator(path=None):
            """Build a calculator from a seed file (the project's own fixture loader)."""
            start = 0
            if path is not None:
                with open(path) as fh:
                    start = int(fh.read().strip())
            return Calculator(start)


        def _default_limit(scale=1):
            return 1000 * scale


        LIMIT = _default_limit()  # runs at import time: its mutants need a re-import
    ''',
    "features/environment.py": """
        import os

        def before_all(context):
            context.fixtures = os.path.join(os.path.dirname(__file__), "data")
    """,
    "features/data/seed.txt": "10\n",
    "features/steps/helpers.py": """
        import os

        def seed_path(context):
            return os.path.join(context.fixtures, "seed.txt")
    """,
    "features/steps/calc_steps.py": """
        from behave import given, when, then
        from helpers import seed_path
        from minicalc import make_calculator, Calculator
        from minicalc.core import Receipt


        @given("a calculator")
        def given_calc(context):
            context.calc = Calculator()


        @given("a seeded calculator")
        def given_seeded(context):
            context.calc = make_calculator(seed_path(context))


        @when("I add {n:d}")
        def when_add(context, n):
            context.calc.add(n)


        @when("I add {a:d} and then {b:d}")
        def when_add_twice(context, a, b):
            context.execute_steps(f"When I add {a}\\nWhen I add {b}")


        @then("the total is {n:d}")
        def then_total(context, n):
            assert context.calc.total == n, context.calc.total
            assert Receipt(context.calc.total).total == n


        @then("the doubled total is {n:d}")
        def then_doubled(context, n):
            assert context.calc.doubled == n
    """,
    "features/steps/other_steps.py": """
        from behave import given, then


        @given("nothing")
        def given_nothing(context):
            pass


        @then("it is pending")
        def then_pending(context):
            from behave.api.pending_step import StepNotImplementedError
            raise StepNotImplementedError("later")
    """,
    "features/calc.feature": """
        Feature: Add numbers
          In order to total my bills
          As a shopper
          I want a calculator

          Background:
            Given a calculator

          Scenario: Add one number
            When I add 3
            Then the total is 3

          Scenario: Add two numbers
            When I add 2 and then 5
            Then the total is 7
             And the doubled total is 14

          Scenario Outline: Add from a seed
            Given a seeded calculator
            When I add <n>
            Then the total is <total>

            Examples:
              | n | total |
              | 1 | 11    |
              | 5 | 15    |
    """,
    "features/broken.feature": """
        Feature: Things that cannot be instances

          Scenario: Undefined step
            Given nothing
            Then something nobody wrote

          Scenario: Pending step
            Given nothing
            Then it is pending

          Scenario: Wrong expectation
            Given a calculator
            When I add 1
            Then the total is 2

          @live
          Scenario: Needs the live service
            Given nothing
    """,
    "features/notes.feature": """
        # only a comment
    """,
}


def write_project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def mini_project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "minicalc", MINI_FILES)


@pytest.fixture(scope="session")
def mini_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.builder.pipeline import BuildOptions, build_dataset

    base = tmp_path_factory.mktemp("mini")
    project = write_project(base / "minicalc", MINI_FILES)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(workers=2, timeout=30))
    return out


@pytest.fixture(scope="session")
def example_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.builder.pipeline import BuildOptions, build_dataset

    base = tmp_path_factory.mktemp("example")
    project = base / "tinyshop"
    shutil.copytree(EXAMPLE, project)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(workers=2, timeout=60))
    return out
