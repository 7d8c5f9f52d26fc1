"""Layouts of real behave projects the builder met only in the wild (issue 26), each as a small
project of its own: hooks that resolve their own path and import a step module, a nested
package layout, hooks that call production, and what a build says about the scenarios it
excludes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset
from bench.mutation.executor import load_manifest
from harness.cli import app
from tests.conftest import write_project

pytestmark = pytest.mark.integration

LEDGER = {
    "pyproject.toml": """
        [project]
        name = "ledger"
        version = "0.1.0"

        [tool.req2test]
        features = "features"
        python_path = ["src"]
        production = ["src/ledger"]
    """,
    "src/ledger/__init__.py": """
        from ledger.book import Book
    """,
    "src/ledger/book.py": """
        class Book:
            def __init__(self):
                self.entries = []

            def add(self, amount):
                if amount <= 0:
                    raise ValueError("amount must be positive")
                self.entries.append(amount)
                return len(self.entries)

            def balance(self):
                return sum(self.entries)
    """,
    # the hooks put their own (resolved) directory on sys.path and import a step module in
    # after_scenario: through a symlinked workspace that was the worker's copy of the module
    "features/environment.py": """
        import sys
        from pathlib import Path

        HERE = Path(__file__).resolve().parent
        if str(HERE) not in sys.path:
            sys.path.insert(0, str(HERE))


        def after_scenario(context, scenario):
            from steps import cleanup_steps
            cleanup_steps.reset(context)
    """,
    "features/steps/cleanup_steps.py": """
        from behave import given


        def reset(context):
            context.book = None


        @given("a fresh start")
        def fresh_start(context):
            reset(context)
    """,
    "features/steps/book_steps.py": """
        from behave import given, when, then
        from ledger import Book


        @given("an empty book")
        def empty_book(context):
            context.book = Book()


        @when("I add {amount:d}")
        def add(context, amount):
            context.book.add(amount)


        @then("the balance is {total:d}")
        def balance(context, total):
            assert context.book.balance() == total
    """,
    "features/book.feature": """
        Feature: A ledger

          Scenario: One entry
            Given an empty book
            When I add 5
            Then the balance is 5

          Scenario: Two entries
            Given a fresh start
            And an empty book
            When I add 2
            And I add 3
            Then the balance is 5
    """,
}


def _build(project: Path, out: Path, **options: object):
    return build_dataset(str(project), out, BuildOptions(workers=2, timeout=60, **options))  # type: ignore[arg-type]


def test_hooks_resolving_their_own_path_build(tmp_path: Path) -> None:
    """Item 1: every workspace is a real tree, so the hooks' resolved path stays inside it
    (a symlinked one loaded the step modules twice: AmbiguousStep in the hook, 0 instances)."""
    card = _build(write_project(tmp_path / "ledger", LEDGER), tmp_path / "out", mutants=False)
    assert card.exclusions == [], [(e.id, e.reason, e.detail) for e in card.exclusions]
    assert card.projects[0].instances == 2
    gold = load_dataset(tmp_path / "out").load_gold()
    for record in gold.values():
        assert record.validation.positive_runs == [True] * 3
        assert record.validation.negative_runs == [False] * 3


def test_a_failed_validation_says_why(tmp_path: Path) -> None:
    """Item 1's second half and item 5: an exclusion carries the first error of the failing
    run (a hook's too), and `req2test build` prints one example per reason."""
    files = dict(LEDGER)
    # a suite sanity check: every step module of the suite must be on disk (the positive
    # workspace holds only the scenario's own)
    files["features/environment.py"] = """
        from pathlib import Path

        STEPS = Path(__file__).parent / "steps"


        def after_scenario(context, scenario):
            for name in ("book_steps.py", "cleanup_steps.py"):
                assert (STEPS / name).is_file(), f"step module {name} is missing"
    """
    project = write_project(tmp_path / "ledger", files)
    result = CliRunner().invoke(app, ["build", str(project), "-o", str(tmp_path / "out"), "--workers", "2",
                                      "--no-mutants", "-q"])
    assert result.exit_code == 0, result.output
    card = load_dataset(tmp_path / "out").card
    failed = [e for e in card.exclusions if e.reason == "validation_positive_failed"]
    assert [e.id for e in failed] == ["ledger/features/book.feature:3"]  # :8 binds both step modules
    assert "HOOK-ERROR in after_scenario: AssertionError: step module cleanup_steps.py is missing" in failed[0].detail
    assert failed[0].detail.startswith("closure alone passed 0/3 runs; first failure: hook_error: ")
    printed = " ".join(result.output.split())
    assert ("validation_positive_failed (1 scenario), e.g. features/book.feature:3: closure alone passed 0/3 "
            "runs; first failure: hook_error: HOOK-ERROR in after_scenario: AssertionError") in printed


NESTED = {
    "python/src/shop/__init__.py": '''
        """A user directory."""
    ''',
    "python/src/shop/users.py": """
        class Directory:
            def __init__(self):
                self.users = {}

            def register(self, name, age):
                if age < 18:
                    raise ValueError("too young")
                self.users[name] = age
                return len(self.users)

            def count(self):
                return len(self.users)
    """,
    "python/features/__init__.py": "",
    "python/features/environment.py": """
        def before_scenario(context, scenario):
            context.errors = []
    """,
    "python/features/steps/__init__.py": "",
    "python/features/steps/users_steps.py": """
        from behave import given, when, then
        from shop.users import Directory


        @given("an empty directory")
        def empty(context):
            context.directory = Directory()


        @when("{name} registers aged {age:d}")
        def register(context, name, age):
            try:
                context.directory.register(name, age)
            except ValueError as exc:
                context.errors.append(str(exc))


        @then("the directory holds {n:d} users")
        def holds(context, n):
            assert context.directory.count() == n


        @then('registration fails with "{message}"')
        def fails(context, message):
            assert context.errors == [message], context.errors
    """,
}
USERS_FEATURE = """
    Feature: A user directory

      Scenario: Register an adult
        Given an empty directory
        When ann registers aged 30
        Then the directory holds 1 users

      Scenario: Minors are refused
        Given an empty directory
        When bob registers aged 12
        Then registration fails with "too young"
        And the directory holds 0 users
"""


def _nested(root: Path, features: str) -> Path:
    files = dict(NESTED)
    files["pyproject.toml"] = f"""
        [project]
        name = "nestedshop"
        version = "0.1.0"

        [tool.req2test]
        features = "{features}"
        python_path = ["python/src", "python"]
        production = ["python/src/shop"]
    """
    if features == "python/features":  # behave's base dir is the nested package itself
        files["python/features/users.feature"] = USERS_FEATURE
    else:  # the Gherkin at the repository root; hooks and steps load the nested package
        files["features/users.feature"] = USERS_FEATURE
        files["environment.py"] = "from features.environment import *  # noqa: F401,F403\n"
        files["steps/all_steps.py"] = "from features.steps.users_steps import *  # noqa: F401,F403\n"
    return write_project(root, files)


@pytest.mark.parametrize("features", ["python/features", "."])
def test_nested_package_layouts_build(tmp_path: Path, features: str) -> None:
    """Item 2: a production package inside the features tree's top directory (or inside the
    features tree itself) stays whole in every workspace; test-side modules are found through
    the project's python_path, and the steps/ module that loads a nested one is part of the test."""
    project = _nested(tmp_path / "nested", features)
    card = _build(project, tmp_path / "out")
    assert card.exclusions == [], [(e.id, e.reason, e.detail) for e in card.exclusions]
    assert card.projects[0].instances == 2
    gold = load_dataset(tmp_path / "out").load_gold()
    feature = "python/features/users.feature" if features != "." else "features/users.feature"
    record = gold[f"nestedshop/{feature}:8"]
    code = {f.path: f.role for f in record.closure}
    assert code["python/features/steps/users_steps.py"] == "step_definitions"
    assert not any(p.startswith("python/src/") for p in code), code  # production is never test code
    if features == ".":
        assert code["steps/all_steps.py"] == "helper"  # behave loads the nested module through it
    assert record.kills and "python/src/shop/users.py:Directory.register" in record.api_calls


def test_steps_above_the_features_dir_are_named_as_the_reason(tmp_path: Path) -> None:
    """The same Gherkin with `features = "features"`: behave's base dir is the project root (its
    steps/ and environment.py), outside the test area; every exclusion says which setting fixes it."""
    project = _nested(tmp_path / "nested", "features")
    card = _build(project, tmp_path / "out", mutants=False)
    assert card.projects[0].instances == 0
    assert {e.reason for e in card.exclusions} == {"validation_negative_passed"}
    assert all('set [tool.req2test] features = "."' in e.detail for e in card.exclusions)


AUDITED = dict(LEDGER)
AUDITED.update({
    "src/ledger/audit.py": '''
        _SEALS = []


        def seal(label):
            """Close a scenario's journal: the suite's hooks call this after every scenario."""
            if not label:
                raise ValueError("a seal needs a label")
            _SEALS.append(label)
            return len(_SEALS) > 0
    ''',
    "features/environment.py": """
        from ledger import audit


        def after_scenario(context, scenario):
            if not audit.seal(scenario.name):
                raise AssertionError("the journal was not sealed")
    """,
})


def test_kills_of_the_shared_infrastructure_are_kept_apart(tmp_path: Path) -> None:
    """Item 4: mutants that the hooks detect by themselves (the empty test fails under them) are
    infrastructure kills, not kills of the test; the empty calibration arm then kills nothing,
    and `req2test calibrate` fails loudly on a dataset that still counts them."""
    out = tmp_path / "out"
    _build(write_project(tmp_path / "ledger", AUDITED), out)
    dataset = load_dataset(out)
    assert dataset.verify() == []
    gold = dataset.load_gold()
    manifest = load_manifest(out, "ledger")
    for record in gold.values():
        assert record.infrastructure_kills, record.instance_id
        assert not set(record.infrastructure_kills) & set(record.kills)
        assert not set(record.infrastructure_kills) & set(record.assertion_dependent + record.hidden_kills)
        assert record.kills  # the test's own kills (Book.add, Book.balance) stay
        assert {manifest[k].file for k in record.infrastructure_kills} == {"src/ledger/audit.py"}
    mutation = dataset.card.mutation
    assert mutation["infrastructure_kills"] == sum(len(r.infrastructure_kills) for r in gold.values())

    runner = CliRunner()
    result = runner.invoke(app, ["calibrate", str(out), "-o", str(tmp_path / "cal"), "--workers", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert "calibration failed" not in result.output

    # a dataset of the previous builder counted them as kills of every test
    path = out / "gold" / "ledger.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        record["kills"] = sorted(record["kills"] + record.pop("infrastructure_kills"))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = runner.invoke(app, ["calibrate", str(out), "-o", str(tmp_path / "cal-old"), "--workers", "2", "-q"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: calibration failed: the empty arm"), result.output
