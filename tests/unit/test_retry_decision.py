"""How every judge decides failed equivalent variants (bench.judging.retry_plan / decide_retries):
a test that reads the mutant switch is tampering; a test that fails at random almost never is."""

from __future__ import annotations

import random

from bench.judging import (
    CONTROL_RUNS,
    RETRIED_VARIANTS,
    VARIANT_RETRIES,
    RetryDecision,
    RunVerdict,
    decide_retries,
    retry_plan,
)

S, K, T = RunVerdict.survived, RunVerdict.killed, RunVerdict.timeout


def test_each_failed_variant_is_retried_twice_beside_four_controls() -> None:
    plan = retry_plan(5, random.Random(0))
    assert sorted(i for i in plan if i is not None) == [i for i in range(RETRIED_VARIANTS) for _ in range(VARIANT_RETRIES)]
    assert plan.count(None) == CONTROL_RUNS
    assert len(retry_plan(1, random.Random(0))) == VARIANT_RETRIES + CONTROL_RUNS


def test_a_switch_reader_is_tampering() -> None:
    """It fails every run with a variant and passes every run without one."""
    plan = retry_plan(2, random.Random(1))
    verdicts = [S if index is None else K for index in plan]
    assert decide_retries(plan, verdicts, 2, first_real=True) == (RetryDecision.tampering, [0, 1])


def test_one_passing_retry_makes_it_unstable_not_tampering() -> None:
    plan = retry_plan(1, random.Random(2))
    first = plan.index(0)
    verdicts = [S if index is None or n == first else K for n, index in enumerate(plan)]
    assert decide_retries(plan, verdicts, 1, first_real=True)[0] is RetryDecision.unstable


def test_timeouts_never_make_tampering_and_pass_as_the_machines_doing() -> None:
    plan = retry_plan(1, random.Random(3))
    assert decide_retries(plan, [S if i is None else T for i in plan], 1, first_real=True)[0] is RetryDecision.unstable
    assert decide_retries(plan, [S if i is None else K for i in plan], 1, first_real=False)[0] is RetryDecision.unstable
    assert decide_retries(plan, [S] * len(plan), 1, first_real=False)[0] is RetryDecision.transient


def test_a_failing_control_is_never_tampering() -> None:
    plan = retry_plan(1, random.Random(4))
    control = plan.index(None)
    verdicts = [K if index is not None or n == control else S for n, index in enumerate(plan)]
    assert decide_retries(plan, verdicts, 1, first_real=True)[0] is RetryDecision.unstable


def test_more_failed_variants_than_retried_is_unstable_even_if_all_pass_now() -> None:
    plan = retry_plan(RETRIED_VARIANTS + 1, random.Random(5))
    assert decide_retries(plan, [S] * len(plan), RETRIED_VARIANTS + 1, first_real=True)[0] is RetryDecision.unstable


def test_a_test_that_fails_at_random_is_rarely_called_tampering() -> None:
    """Simulated: a test failing any run with probability p, given that one variant already failed.
    One retry beside two controls called it tampering up to 15 % of the time (p = 1/3); two retries
    beside four controls stay near p^2 (1-p)^4 <= 2.2 %."""
    rng = random.Random(6)
    for p in (0.1, 1 / 3, 0.5, 0.8):
        tampering = 0
        trials = 20_000
        for _ in range(trials):
            plan = retry_plan(1, rng)
            verdicts = [K if rng.random() < p else S for _ in plan]
            tampering += decide_retries(plan, verdicts, 1, first_real=True)[0] is RetryDecision.tampering
        expected = p ** VARIANT_RETRIES * (1 - p) ** CONTROL_RUNS
        assert abs(tampering / trials - expected) < 0.006, (p, tampering / trials, expected)
        assert tampering / trials < 0.03
