"""The warm worker against a real behave suite: bindings, tracing, crash containment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.builder.analysis import TracedScenario
from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
from bench.frameworks.outcomes import classify_run
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
from tests.conftest import write_project


def _spec(root: Path, preload: bool = True) -> WorkerSpec:
    return WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir="features", python_path=["src"], production=["src/minicalc"],
                      import_packages=["minicalc"], preload=preload)


def _run(pool: WorkerPool, feature: str, lines: list[int], **extra) -> dict:
    return pool.call_one({"op": "run", "feature": feature, "lines": lines, "timeout": 20, **extra})


def test_bindings_nested_steps_and_tracing(mini_project: Path) -> None:
    with WorkerPool(_spec(mini_project)) as pool:
        result = _run(pool, "features/calc.feature", [13], trace=True)
    assert classify_run(result, 1).passed
    traced = TracedScenario.from_result(result)
    steps = [(b.step_text, b.depth, b.role, b.background, b.binding.qualname) for b in traced.bindings]
    assert steps == [
        ("a calculator", 0, "given", True, "given_calc"),
        ("I add 2 and then 5", 0, "when", False, "when_add_twice"),
        ("I add 2", 1, "when", False, "when_add"),   # nested execute_steps() is bound too
        ("I add 5", 1, "when", False, "when_add"),
        ("the total is 7", 0, "then", False, "then_total"),
        ("the doubled total is 14", 0, "then", False, "then_doubled"),
    ]
    assert traced.step_files == {"features/steps/calc_steps.py"}
    # direct calls by step: the Background constructs, When adds, Then reads the property
    direct = {i: sorted(q for _, _, q in keys) for i, keys in traced.direct.items()}
    assert direct[0] == ["Calculator.__init__"]
    assert direct[1] == ["Calculator.add"]
    assert "Calculator.doubled" in direct[3]
    assert "Receipt.__init__" in direct[2]  # dataclass-generated __init__ attributed to its class
    # _check is reached only through Calculator.add: executed, but never direct
    assert any(q == "_check" for _, _, q in traced.executed_when_then)
    assert not any(q == "_check" for keys in traced.direct.values() for _, _, q in keys)
    core = traced.coverage["src/minicalc/core.py"]
    assert 20 in core and 7 not in core  # add() ran, the ValueError branch did not


def test_opened_data_files_are_recorded(mini_project: Path) -> None:
    with WorkerPool(_spec(mini_project)) as pool:
        result = _run(pool, "features/calc.feature", [25, 26], trace=True)
    assert classify_run(result, 2).passed
    assert [s["line"] for s in result["scenarios"]] == [25, 26]
    assert "features/data/seed.txt" in result["trace"]["opened"]


@pytest.mark.parametrize("body, reason", [
    ("import os; os._exit(0)", "crashed"),
    ("import sys; sys.exit(0)", "aborted"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "crashed"),
    ("while True: pass", "timeout"),
    ("raise RuntimeError('boom')", "error"),
    ("assert 1 == 2", "assertion_failed"),
])
def test_hostile_steps_never_pass(tmp_path: Path, body: str, reason: str) -> None:
    root = write_project(tmp_path, {
        "src/minicalc/__init__.py": "",
        "features/x.feature": "Feature: x\n  Scenario: y\n    Given a hostile step\n",
        "features/steps/s.py": f"from behave import given\n@given('a hostile step')\ndef s(context):\n    {body}\n",
    })
    with WorkerPool(_spec(root)) as pool:
        result = pool.call_one({"op": "run", "feature": "features/x.feature", "lines": [2], "timeout": 2})
        assert classify_run(result, 1).reason == reason
        # the worker survives and still serves
        assert pool.call_one({"op": "static_bindings"})["scenarios"]


def test_load_error_is_reported_not_raised(tmp_path: Path) -> None:
    root = write_project(tmp_path, {
        "src/minicalc/__init__.py": "",
        "features/x.feature": "Feature: x\n  Scenario: y\n    Given z\n",
        "features/steps/s.py": "def broken(:\n",
    })
    with WorkerPool(_spec(root)) as pool:
        assert "SyntaxError" in pool.init_reply["load_error"]


def test_workspace_keeps_only_listed_python(mini_project: Path) -> None:
    with WorkerPool(_spec(mini_project, preload=False)) as pool:
        positive = _run(pool, "features/calc.feature", [9], workspace={
            "key": "pos", "keep_py": ["features/steps/calc_steps.py", "features/steps/helpers.py",
                                      "features/environment.py"]})
        negative = _run(pool, "features/calc.feature", [9], workspace={
            "key": "neg", "keep_py": ["features/environment.py"]})
        helpers_missing = _run(pool, "features/calc.feature", [9], workspace={
            "key": "nohelpers", "keep_py": ["features/steps/calc_steps.py"]})
    assert classify_run(positive, 1).passed
    assert classify_run(negative, 1).reason == "step_undefined"
    assert not negative.get("load_error")  # the runner still initialises with an empty steps dir
    assert classify_run(helpers_missing, 1).reason == "init_failed"
