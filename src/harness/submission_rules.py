"""The one rule for what may be submitted to the benchmark.

A configuration is submittable when its tests came from a model, through an isolating
sandbox, and nothing the evaluator knows steered them. ``req2test run`` records the reasons
a configuration is refused in its config.json, ``req2test submit`` refuses on them, and
``req2test generate --for-submission`` applies the same rule before it starts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# Calibration agents copy or strip the developers' own tests.
GROUND_TRUTH_AGENTS = ("oracle", "empty", "then-stripped")


class ConfigFacts(BaseModel):
    """What the rule looks at, for one reported configuration."""

    agent: str
    reads_ground_truth: bool = Field(False, description="the agent declares uses_ground_truth (custom agents)")
    role: Literal["arm", "single", "selector"] = "arm"
    selector: str | None = Field(None, description="the selector whose picks this configuration reports")
    decompose: str = "off"
    sandbox: str
    sandbox_isolates: bool
    scripted_provider: bool = Field(False, description="answers came from req2test's scripted provider")
    black_box_oracle: bool = Field(False, description="the agent asked the evaluator whether its steps pass")


def refusals(facts: ConfigFacts) -> list[str]:
    """Why ``facts`` may not be submitted; empty when it may."""
    reasons = []
    if facts.agent in GROUND_TRUTH_AGENTS or facts.reads_ground_truth:
        reasons.append(f"agent {facts.agent!r} reads the ground truth")
    if facts.scripted_provider:
        reasons.append("the model's answers came from a scripted provider, not a model")
    if not facts.sandbox_isolates:
        reasons.append(f"sandbox {facts.sandbox!r} does not isolate (backend local)")
    if facts.decompose == "evaluator":
        reasons.append("decompose: evaluator — prerequisite verdicts came from the evaluator")
    if facts.black_box_oracle:
        reasons.append("black_box_oracle — the agent asked the evaluator whether its steps pass on the real code")
    if facts.selector == "oracle":
        reasons.append("selector oracle — the evaluator chose among candidates")
    if facts.role == "selector":
        reasons.append(f"selector {facts.selector!r} is not the arm's own (its first selector is)")
    if facts.role == "single":
        reasons.append("candidate 1 alone is a comparison, not the arm")
    return reasons
