"""harness.submission_rules: one rule for run, submit and generate --for-submission."""

from __future__ import annotations

from harness.submission_rules import ConfigFacts, refusals

ELIGIBLE = ConfigFacts(agent="builtin", sandbox="default", sandbox_isolates=True)


def test_a_model_agent_in_an_isolating_sandbox_may_be_submitted() -> None:
    assert refusals(ELIGIBLE) == []
    # the arm's own pick is static: the oracle reported beside it is another configuration
    assert refusals(ELIGIBLE.model_copy(update={"selector": "static"})) == []


def test_each_reason_is_named() -> None:
    cases = {
        "agent 'oracle' reads the ground truth": {"agent": "oracle"},
        "agent 'mine:Agent' reads the ground truth": {"agent": "mine:Agent", "reads_ground_truth": True},
        "scripted provider": {"scripted_provider": True},
        "does not isolate": {"sandbox": "local", "sandbox_isolates": False},
        "decompose: evaluator": {"decompose": "evaluator"},
        "selector oracle — the evaluator chose": {"selector": "oracle"},
        "is not the arm's own": {"role": "selector", "selector": "judge"},
        "candidate 1 alone": {"role": "single"},
    }
    for expected, update in cases.items():
        (reason,) = refusals(ELIGIBLE.model_copy(update=update))
        assert expected in reason, (expected, reason)
