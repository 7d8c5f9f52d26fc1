"""Which kills a schemata judge runs at once and which wait (``schemata_stage.kill_plan``)."""

from __future__ import annotations

import random

from bench.builder.schemata_stage import UNREACHED_SAMPLE, kill_plan
from bench.model import Mutant


def _mutant(ident: str, line: int) -> Mutant:
    return Mutant(id=ident, file="shop/cart.go", line=line, col=0, end_line=line, end_col=1, operator="negation",
                  original="a", replacement="b", function="F", function_line=1, lines=[line], scope=[1, 200],
                  function_end=200)


def _mutants(count: int) -> dict[str, Mutant]:
    return {f"m{n}": _mutant(f"m{n}", 10 + n) for n in range(count)}


def test_every_kill_runs_when_few_are_unreached() -> None:
    mutants = _mutants(12)
    reached = {21: {"shop/cart.go": {10 + n for n in range(12 - UNREACHED_SAMPLE)}}}
    plan = kill_plan(sorted(mutants), reached, mutants, random.Random(1))
    assert sorted(plan.now) == sorted(mutants)
    assert not plan.held
    assert len(plan.sampled) == UNREACHED_SAMPLE


def test_many_unreached_kills_wait_behind_a_sample() -> None:
    mutants = _mutants(40)
    reached = {21: {"shop/cart.go": {10, 11, 12}}, 22: {"shop/cart.go": {13}}}
    plan = kill_plan(sorted(mutants), reached, mutants, random.Random(1))
    assert {"m0", "m1", "m2", "m3"} <= set(plan.now)  # every reached kill runs
    assert len(plan.sampled) == UNREACHED_SAMPLE and plan.sampled <= set(plan.now)
    assert len(plan.now) == 4 + UNREACHED_SAMPLE
    assert sorted([*plan.now, *plan.held]) == sorted(mutants)
    assert not set(plan.held) & set(plan.now)
    # the sample is drawn, not the first ones: another seed draws another sample
    assert kill_plan(sorted(mutants), reached, mutants, random.Random(2)).sampled != plan.sampled


def test_a_row_without_coverage_holds_nothing_back() -> None:
    mutants = _mutants(40)
    plan = kill_plan(sorted(mutants), {21: {"shop/cart.go": set()}, 22: None}, mutants, random.Random(1))
    assert sorted(plan.now) == sorted(mutants) and not plan.held and not plan.sampled


def test_an_empty_trace_runs_only_the_sample() -> None:
    mutants = _mutants(450)
    plan = kill_plan(sorted(mutants), {21: {}}, mutants, random.Random(3))
    assert len(plan.now) == UNREACHED_SAMPLE and len(plan.held) == 450 - UNREACHED_SAMPLE


def test_the_held_kills_run_only_after_a_sampled_one_failed() -> None:
    mutants = _mutants(40)
    plan = kill_plan(sorted(mutants), {21: {}}, mutants, random.Random(4))
    assert plan.rest({"not-a-sampled-one"}) == [] and plan.record([]) == {"unreached_kills": 40,
                                                                          "unreached_not_run": 40 - UNREACHED_SAMPLE}
    sampled = next(iter(plan.sampled))
    assert plan.rest({sampled}) == plan.held
    assert plan.record(plan.rest({sampled})) == {"unreached_kills": 40, "unreached_not_run": 0}
