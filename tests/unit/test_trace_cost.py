"""The traced run made cheaper (issue 26 item 7) records exactly what the reference did.

``bench.frameworks.behave.trace_reference`` keeps the traced run as it was; a worker started with
``REQ2TEST_REFERENCE_TRACE=1`` records with it. Both workers run the same scenarios traced and
must return the same result: coverage, first points, points, direct calls, executed
functions, step files, opened files, steps. Timing is benchmarks/trace_cost.py's business.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
from bench.frameworks.behave.trace_reference import ENV_FLAG
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
from tests.conftest import EXAMPLE, write_project

# Every path of the profile callback: direct calls, a descriptor (trampoline) and a property
# between step code and production, generators resumed from step code and from production,
# production raising into a step, production calling back into a step helper that calls
# production (no call point there: production is further out), a dataclass __init__ called
# from a step, lambdas and comprehensions, a data file opened by a step, Given/When/Then and
# a background, an outline with rows.
EDGE_FILES = {
    "src/edgy/__init__.py": "",
    "src/edgy/core.py": '''
        from dataclasses import dataclass


        class lazy:
            def __init__(self, fget):
                self.fget = fget

            def __get__(self, obj, owner):
                return self.fget(obj)


        @dataclass
        class Point:
            x: int
            y: int = 0

            def norm(self):
                return abs(self.x) + abs(self.y)


        class Box:
            def __init__(self, items=()):
                self.items = list(items)

            @lazy
            def total(self):
                return sum(_value(i) for i in self.items)

            @property
            def count(self):
                return len([i for i in self.items if i is not None])

            def each(self):
                for item in self.items:
                    yield _value(item)

            def apply(self, callback):
                return [callback(self, item) for item in self.items]

            def fail(self):
                raise ValueError("no")


        def _value(item):
            return (lambda v: v * 1)(item)
    ''',
    "features/edge.feature": """
        Feature: Edges

          Background:
            Given a box of 1, 2, 3

          Scenario: Direct, descriptor and property
            When I read the total
            Then the total is 6
            And the count is 3

          Scenario: Generators, callbacks and errors
            When I walk the box
            And I apply the doubling callback
            Then walking gave 1, 2, 3
            And failing is caught

          Scenario Outline: Points
            When I make a point <x>
            Then its norm is <n>

            Examples:
              | x  | n |
              | 2  | 2 |
              | -3 | 3 |
    """,
    "features/data/seed.txt": "seed\n",
    "features/steps/edge_steps.py": """
        import os

        from behave import given, then, when

        from edgy.core import Box, Point


        def double(box, item):
            return box.count * item


        @given("a box of 1, 2, 3")
        def step_box(context):
            with open(os.path.join(os.path.dirname(__file__), "..", "data", "seed.txt")) as fh:
                fh.read()
            context.box = Box([1, 2, 3])


        @when("I read the total")
        def step_total(context):
            context.total = context.box.total


        @then("the total is 6")
        def step_is_six(context):
            assert context.total == 6


        @then("the count is 3")
        def step_count(context):
            assert context.box.count == 3


        @when("I walk the box")
        def step_walk(context):
            walker = context.box.each()
            context.walked = [next(walker)]
            context.walked += list(walker)


        @when("I apply the doubling callback")
        def step_apply(context):
            context.applied = context.box.apply(double)


        @then("walking gave 1, 2, 3")
        def step_walked(context):
            assert context.walked == [1, 2, 3]
            assert context.applied == [3, 6, 9]


        @then("failing is caught")
        def step_fail(context):
            try:
                context.box.fail()
            except ValueError:
                pass


        @when("I make a point {x:d}")
        def step_point(context, x):
            context.point = Point(x)


        @then("its norm is {n:d}")
        def step_norm(context, n):
            assert context.point.norm() == n
    """,
}


def _spec(root: Path, production: str, package: str, reference: bool) -> WorkerSpec:
    return WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir="features", python_path=["src"], production=[production],
                      import_packages=[package], preload=True,
                      extra_env={ENV_FLAG: "1"} if reference else {})


def _traced_pairs(root: Path, production: str, package: str,
                  runs: list[tuple[str, list[int]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    pairs = []
    with WorkerPool(_spec(root, production, package, False)) as fast, \
            WorkerPool(_spec(root, production, package, True)) as reference:
        for feature, lines in runs:
            request = {"op": "run", "feature": feature, "lines": lines, "timeout": 60, "trace": True}
            pairs.append((fast.call_one(request), reference.call_one(request)))
    return pairs


def _same(fast: dict[str, Any], reference: dict[str, Any]) -> None:
    assert "trace" in fast, fast
    strip = ("elapsed",)
    assert json.dumps({k: v for k, v in fast.items() if k not in strip}, sort_keys=True) == \
        json.dumps({k: v for k, v in reference.items() if k not in strip}, sort_keys=True)


def test_edge_cases_trace_as_the_reference_did(tmp_path: Path) -> None:
    root = write_project(tmp_path / "edgy", EDGE_FILES)
    pairs = _traced_pairs(root, "src/edgy", "edgy", [("features/edge.feature", [6]),
                                                      ("features/edge.feature", [11]),
                                                      ("features/edge.feature", [22, 23]),
                                                      ("features/edge.feature", [6, 11, 22, 23])])
    for fast, reference in pairs:
        _same(fast, reference)
    trace = pairs[-1][0]["trace"]
    # the paths the comparison is meant to exercise were taken
    direct = {q for calls in trace["direct"].values() for _, _, q in calls}
    assert {"Box.total", "Box.count", "Box.each", "Box.apply", "Box.fail", "Point.__init__", "Point.norm"} <= direct
    assert "lazy.__get__" not in direct and "_value" not in direct
    assert any(label.count(".c") for label in trace["points"])  # call points after returns into steps
    assert trace["first_point"]["src/edgy/core.py"]
    assert "features/data/seed.txt" in trace["opened"]


def test_tinyshop_traces_as_the_reference_did(tmp_path: Path) -> None:
    root = tmp_path / "tinyshop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    runs = [("features/checkout.feature", [26]), ("features/discounts.feature", [37]),
            ("features/catalog.feature", [39]), ("features/order_lifecycle.feature", [9, 17])]
    for fast, reference in _traced_pairs(root, "src/tinyshop", "tinyshop", runs):
        _same(fast, reference)
        assert fast["trace"]["coverage"] and fast["trace"]["executed_when_then"]
