"""The agent extension point: one protocol, one task record, one result record.

Writing your own agent (see ``examples/custom_agent``): implement ``run(task, env)`` —
read the task, act in ``env.sandbox`` (exec, read_file, write_file), call models through
``env.model`` so the ledger and limits apply, record what you did in ``env.trajectory``
— and return an ``AgentResult`` saying why you stopped. The harness collects the test
from the workspace diff afterwards; an agent never writes predictions itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from bench.history.answers import StatedAtom, TakeoverAnswer
from bench.model import Instance
from harness.llm import Model
from harness.sandbox.instance import InstanceSandbox

# provider_refused: no or bad credentials, unknown model, a rejected request. The run stops
# there (every later generation would be refused too) and writes no prediction for it.
EndReason = Literal["submitted", "no_tool_call", "max_calls", "wall_clock", "max_cost", "provider_interrupted",
                    "provider_refused", "agent_error", "finished"]


class SuiteScenario(BaseModel):
    instance_id: str
    name: str
    line: int


class SuiteTask(BaseModel):
    """Suite mode (``mode: suite``): the step definitions of every scenario of one feature file."""

    suite_id: str = Field(description="PROJECT/FEATURE_FILE")
    kind: Literal["tests", "implementation"] = Field(
        "tests", description="tests: write the step definitions; implementation (the reverse task): the step "
                             "definitions are given, fill in the hidden production bodies")
    given_tests: list[str] = Field(default_factory=list, description="implementation: the step files in place")
    feature_file: str = Field(description="the feature file (documentation: withheld from the workspace too)")
    gherkin: str = Field(description="the whole feature file (empty in the documentation ablation)")
    scenarios: list[SuiteScenario] = Field(description="the scenarios to implement (empty in the documentation "
                                                       "ablation: the agent writes its own)")
    specification: Literal["feature", "documentation"] = "feature"
    documentation: str = Field("", description="documentation: the docstrings of the feature's target interfaces")
    authored_dir: str = Field("", description="documentation: where the agent's own feature files go")
    view_instance: str = Field("", description="the scenario instance whose view the sandbox shows (default: the "
                                               "first scenario)")


HistoryCondition = Literal["full", "relevant"]
OracleState = Literal["none", "pre", "post"]


class TakeoverTask(BaseModel):
    """What a takeover agent is told (the arm's condition chose the parts)."""

    target_id: str
    request: str
    history: str = Field(description="the visible history, rendered oldest first")
    history_condition: HistoryCondition
    oracle_state: OracleState = "none"
    given_state: list[StatedAtom] = Field(default_factory=list, description="the gold atoms, when oracle_state")
    frozen_answer: TakeoverAnswer | None = Field(None, description="the arm's own phase-A answer (two_phase)")
    production: list[str]
    features_dir: str


class AgentTask(BaseModel):
    """Everything an agent may know about one generation."""

    instance: Instance = Field(description="the requirement; in suite mode the feature's first scenario "
                                           "(read ``suite`` for the whole task)")
    suite: SuiteTask | None = Field(None, description="set in suite mode: implement every scenario listed")
    takeover: TakeoverTask | None = Field(None, description="set in takeover mode: ``instance`` then only carries "
                                                            "the request")
    view: Literal["th", "ah"]
    features_dir: str
    python_path: str = Field(description="PYTHONPATH inside the sandbox that makes production importable")
    paragraphs: list[str] = Field(default_factory=list, description="the prompt paragraphs the arm adds: shipped "
                                  "names, or paths of the user's files (harness.prompts.is_path)")
    template: str | None = Field(None, description="a task prompt template file of the user's, in place of the "
                                 "shipped one")
    prompt_texts: dict[str, str] = Field(default_factory=dict, description="the text of each paragraph or "
                                         "template given by path, read when the run was planned (by path)")
    enriched_requirement: str | None = Field(None, description="a clarified requirement, when a strategy made one")
    prerequisite_tests: dict[str, str] = Field(default_factory=dict,
                                               description="passing tests of prerequisite requirements")
    framework: str = Field("behave", description="the project's test framework (bench.frameworks.registry name)")
    test_dirs: list[str] = Field(default_factory=list,
                                 description="where test code goes when it is not under features_dir (cucumber-js)")


class AgentResult(BaseModel):
    reason: EndReason
    detail: str = ""
    summary: str = Field("", description="what the agent says it did (its submit message)")


class Trajectory:
    """Every message, tool call, output, timing and cost of one generation, as JSON lines."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.started = time.monotonic()
        self.events: list[dict[str, Any]] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")

    def add(self, kind: str, **fields: Any) -> None:
        event = {"t": round(time.monotonic() - self.started, 3), "type": kind, **fields}
        self.events.append(event)
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(event, default=str) + "\n")


class AgentEnv:
    """What the harness hands an agent for one generation."""

    def __init__(self, opened: InstanceSandbox, model: Model | None, trajectory: Trajectory,
                 oracle: Any = None) -> None:
        self.opened = opened
        self.sandbox = opened.sandbox
        self.model = model
        self.trajectory = trajectory
        # the black-box oracle ablation: ``oracle.check(line) -> str`` (harness.generate.BlackBoxOracle)
        self.oracle = oracle


@runtime_checkable
class Agent(Protocol):
    name: str

    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult: ...
