"""The build's workspaces are real trees, a run's first error is read from behave's output."""

from __future__ import annotations

import os
from pathlib import Path

from bench.builder.closure import TestSide
from bench.builder.diagnose import first_error
from bench.builder.workspaces import WorkspaceLayout, materialize, request_workspaces, workspace_root
from tests.conftest import write_project


def test_a_workspace_is_a_real_tree_with_only_production_linked(tmp_path: Path) -> None:
    slot = write_project(tmp_path / "slot0", {
        "python/src/shop/__init__.py": "",
        "python/src/shop/users.py": "X = 1\n",
        "python/src/shop/data/names.txt": "ann\n",
        "python/features/environment.py": "from features.support import boot\n",
        "python/features/__init__.py": "",
        "python/features/support.py": "def boot(): pass\n",
        "python/features/steps/a_steps.py": "",
        "python/features/steps/b_steps.py": "",
        "python/features/fixtures/seed.txt": "10\n",
        "python/features/users.feature": "Feature: x\n",
        "README.md": "hello\n",
    })
    side = TestSide.scan(slot, "python/features", python_path=["python/src", "python"],
                         production=["python/src/shop"])
    # the hooks' import through the python_path package is infrastructure; production is not test code
    assert side.infrastructure_py == {"python/features/environment.py", "python/features/support.py",
                                      "python/features/__init__.py"}
    assert not any(f.startswith("python/src/") for f in side.python_files)
    layout = WorkspaceLayout.of(side)
    spec = {"key": "positive-1", "keep_py": sorted(side.infrastructure_py | {"python/features/steps/a_steps.py"}),
            "files": {"python/features/steps/c_steps.py": "# written\n"}}
    ws = materialize(slot, spec, layout)
    assert ws == workspace_root(slot, "positive-1") == tmp_path / "ws-slot0" / "positive-1"
    assert (ws / "python/features/steps/a_steps.py").is_file()
    assert not (ws / "python/features/steps/b_steps.py").exists()  # test side, not kept
    assert (ws / "python/features/steps/c_steps.py").read_text() == "# written\n"
    # the production package stays whole: the worker's own copy, linked
    assert (ws / "python/src/shop").is_symlink()
    assert (ws / "python/src/shop/users.py").read_text() == "X = 1\n"
    # everything else is real: no path of the test side resolves out of the workspace
    for path in [ws / "python", ws / "python/features", ws / "python/features/environment.py",
                 ws / "python/features/fixtures/seed.txt", ws / "README.md"]:
        assert not path.is_symlink(), path
        assert path.resolve().is_relative_to(ws.resolve()), path
    assert os.stat(ws / "README.md").st_ino == os.stat(slot / "README.md").st_ino  # hard-linked
    assert materialize(slot, spec, layout) == ws  # made once


def test_request_workspaces() -> None:
    a, b = {"key": "a", "keep_py": []}, {"key": "b", "keep_py": []}
    assert list(request_workspaces({"op": "run", "workspace": a})) == [a]
    assert list(request_workspaces({"op": "import_mutant", "runs": [{"workspace": None}, {"workspace": b}]})) == [b]
    assert list(request_workspaces({"op": "session"})) == []


def test_first_error_of_a_behave_run() -> None:
    hook = """Feature: A ledger

  Scenario: One entry
    Given an empty book ... passed in 0.000s
HOOK-ERROR in after_scenario: AmbiguousStep: @given('a fresh start') has already been defined in
  existing step @given('a fresh start') at features/steps/cleanup_steps.py:8

  Scenario: Two entries
"""
    assert first_error(hook) == ("HOOK-ERROR in after_scenario: AmbiguousStep: @given('a fresh start') has already "
                                 "been defined in existing step @given('a fresh start') at "
                                 "features/steps/cleanup_steps.py:8")
    step = """    Then the balance is 5 ... failed in 0.000s
      Traceback (most recent call last):
        File "features/steps/book_steps.py", line 17, in balance
          assert context.book.balance() == total
      AssertionError: 4 != 5
"""
    assert first_error(step) == "AssertionError: 4 != 5"
    assert first_error("1 feature passed\n") is None
