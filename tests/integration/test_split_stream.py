"""Split-stream mutant runs agree with a fresh process, including the cases built to break them.

The project below holds what a fork in the middle of a run could get wrong: a generator
that a step creates and later steps resume (its frame keeps the old code), a constructor
whose `super().__init__()` a mutant removes (the closure cell layout changes), a helper
first reached only in the last step (forked late), and an outline whose first row fails
under some mutants (the run stops there, as `behave --stop` does).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_project

STREAMS_FILES = {
    "src/streams/__init__.py": "",
    "src/streams/core.py": '''
        class Base:
            def __init__(self, name):
                self.name = name.upper()


        class Counter(Base):
            def __init__(self, name, start=0):
                super().__init__(name)
                self.value = start

            def bump(self, by=1):
                self.value = self.value + by
                return self.value


        def describe(counter):
            if counter.value > 4:
                return f"{counter.name} is big"
            return f"{counter.name} is small"


        def countdown(n):
            while n > 0:
                yield n
                n = n - 1
            yield "done" if n == 0 else "overshoot"
    ''',
    "features/steps/steps.py": '''
        from behave import given, when, then
        from streams.core import Counter, countdown, describe


        @given('a counter named "{name}"')
        def given_counter(context, name):
            context.counter = Counter(name)


        @when("I bump it by {n:d}")
        def when_bump(context, n):
            context.counter.bump(n)


        @then("its value is {n:d}")
        def then_value(context, n):
            assert context.counter.value == n, context.counter.value


        @then('it is described as "{text}"')
        def then_described(context, text):
            assert describe(context.counter) == text, describe(context.counter)


        @given("a countdown from {n:d}")
        def given_countdown(context, n):
            context.countdown = countdown(n)


        @when("I take one value")
        def when_take(context):
            context.first = next(context.countdown)


        @then('the next values are {a:d} and "{b}"')
        def then_next(context, a, b):
            assert (next(context.countdown), next(context.countdown)) == (a, b)
    ''',
    "features/streams.feature": """
        Feature: Streams

          Scenario: Counting
            Given a counter named "a"
            When I bump it by 2
             And I bump it by 3
            Then its value is 5
             And it is described as "A is big"

          Scenario: A countdown held across steps
            Given a countdown from 2
            When I take one value
            Then the next values are 1 and "done"

          Scenario Outline: Bumping
            Given a counter named "<name>"
            When I bump it by <n>
            Then its value is <n>

            Examples:
              | name | n |
              | x    | 1 |
              | y    | 4 |
    """,
}


@pytest.mark.integration
def test_split_stream_verdicts_equal_fresh_processes(tmp_path: Path) -> None:
    from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
    from bench.frameworks.behave.fresh import run_fresh
    from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
    from bench.mutation.executor import collect_session
    from bench.mutation.generate import generate_mutants

    root = write_project(tmp_path / "streams", STREAMS_FILES)
    mutants = generate_mutants(root, ["src/streams"])
    spec = WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir="features", python_path=["src"], production=["src/streams"],
                      import_packages=["streams"], preload=True, isolation="none")
    runs = {"counting": [3], "countdown": [10], "outline": [20, 21]}
    points: dict[str, dict[str, str]] = {}
    with WorkerPool(spec) as pool:
        for name, lines in runs.items():
            reply = pool.call_one({"op": "session", "feature": "features/streams.feature", "lines": lines,
                                   "mutants": [m.model_dump() for m in mutants]})
            assert reply["clean"].get("scenarios"), reply["clean"]
            outcome = collect_session(reply)
            points[name] = {mid: rec.get("point", "") for mid, rec in reply["mutants"].items()}
            for mutant in mutants:
                fresh = run_fresh(root, ["src"], "features/streams.feature", lines, mutant, 60)
                assert outcome.verdicts[mutant.id] == fresh.verdict, (name, mutant, reply["mutants"][mutant.id])
            assert outcome.fallbacks == 0 and "fallback" not in outcome.verdicts.values()

    by_function = {m.id: m.function for m in mutants}
    # the helper first called in the last step forks after the earlier steps' calls
    describe = [p for mid, p in points["counting"].items() if by_function[mid] == "describe" and p]
    assert describe and all(p.startswith("s0.4") for p in describe), describe
    # generator mutants fork at the start: a generator object keeps the code it was made with
    gen = [p for mid, p in points["countdown"].items() if by_function[mid] == "countdown" and p]
    assert gen and set(gen) == {"run"}, gen
    # super().__init__() removal changes the closure layout, yet is swapped, not re-imported
    removal = [m for m in mutants if m.function == "Counter.__init__" and m.operator == "call_removal"]
    assert removal and all(points["counting"][m.id] for m in removal)
