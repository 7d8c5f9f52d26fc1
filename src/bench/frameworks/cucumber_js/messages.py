"""Read a cucumber-js run from its Cucumber Messages NDJSON (``--format message:FILE``).

The runner's own model, never printed text: pickles (a scenario or an outline row, with its
line), step definitions (pattern and where ``Given(...)`` was called), test cases (which
definitions each step matched) and step results. Unknown message kinds are ignored, as the
protocol asks of consumers.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# statuses of the Cucumber Messages protocol (TestStepResultStatus)
BINDING_STATUSES = frozenset({"UNDEFINED", "AMBIGUOUS", "PENDING"})


class StepDefinitionInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    pattern: str
    uri: str
    line: int


class StepRun(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    step_type: str = Field(description="Context / Action / Outcome / Unknown, from the pickle")
    definition_ids: list[str]
    status: str = "UNKNOWN"
    message: str = ""
    exception_type: str = ""


class PickleRun(BaseModel):
    uri: str
    line: int
    name: str
    steps: list[StepRun] = Field(default_factory=list)
    hook_failures: list[str] = Field(default_factory=list)
    started: bool = False


class RunReport(BaseModel):
    """One cucumber-js process, as its messages tell it."""

    pickles: list[PickleRun] = Field(default_factory=list)
    definitions: dict[str, StepDefinitionInfo] = Field(default_factory=dict)
    run_hook_failures: list[str] = Field(default_factory=list)
    success: bool | None = None
    finished: bool = False

    def steps_ran(self) -> bool:
        return any(s.status not in ("UNKNOWN", "SKIPPED") for p in self.pickles for s in p.steps)


def read_report(path: Path) -> RunReport:
    """The run in ``path``; a missing or truncated file gives what was written before the cut."""
    report = RunReport()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return report
    pickles: dict[str, dict] = {}
    cases: dict[str, tuple[str, dict[str, tuple[str, list[str]]]]] = {}  # case id -> (pickle id, step id -> ...)
    started: dict[str, str] = {}  # testCaseStarted id -> case id
    runs: dict[str, PickleRun] = {}
    hooks: dict[str, str] = {}  # run-hook started id
    for raw in lines:
        try:
            message = json.loads(raw)
        except ValueError:
            continue  # a torn last line
        if not isinstance(message, dict):
            continue
        if "pickle" in message:
            pickle = message["pickle"]
            pickles[pickle["id"]] = pickle
        elif "stepDefinition" in message:
            d = message["stepDefinition"]
            ref = d.get("sourceReference", {})
            report.definitions[d["id"]] = StepDefinitionInfo(
                id=d["id"], pattern=str(d.get("pattern", {}).get("source", "")), uri=str(ref.get("uri", "")),
                line=int(ref.get("location", {}).get("line", 0)))
        elif "testCase" in message:
            case = message["testCase"]
            steps = {s["id"]: (s.get("pickleStepId", ""), list(s.get("stepDefinitionIds", []) or []))
                     for s in case.get("testSteps", [])}
            cases[case["id"]] = (case["pickleId"], steps)
        elif "testCaseStarted" in message:
            event = message["testCaseStarted"]
            case_id = event["testCaseId"]
            started[event["id"]] = case_id
            pickle = pickles.get(cases.get(case_id, ("", {}))[0], {})
            location = pickle.get("location", {})
            run = PickleRun(uri=str(pickle.get("uri", "")), line=int(location.get("line", 0)),
                            name=str(pickle.get("name", "")), started=True)
            step_texts = {s["id"]: s for s in pickle.get("steps", [])}
            for _step_id, (pickle_step, definitions) in cases.get(case_id, ("", {}))[1].items():
                if pickle_step:
                    ps = step_texts.get(pickle_step, {})
                    run.steps.append(StepRun(text=str(ps.get("text", "")), step_type=str(ps.get("type", "Unknown")),
                                             definition_ids=definitions))
            runs[event["id"]] = run
            report.pickles.append(run)
        elif "testStepFinished" in message:
            event = message["testStepFinished"]
            run = runs.get(event.get("testCaseStartedId", ""))
            case_id = started.get(event.get("testCaseStartedId", ""), "")
            if run is None:
                continue
            result = event.get("testStepResult", {})
            status = str(result.get("status", "UNKNOWN"))
            text = str(result.get("message", ""))[:2000]
            exception = str((result.get("exception") or {}).get("type", ""))
            pickle_step, _ = cases.get(case_id, ("", {}))[1].get(event.get("testStepId", ""), ("", []))
            if not pickle_step:  # a Before/After hook of the scenario
                if status not in ("PASSED", "SKIPPED"):
                    run.hook_failures.append(f"{status}: {text[:300]}")
                continue
            pickle = pickles.get(cases[case_id][0], {})
            order = [s["id"] for s in pickle.get("steps", [])]
            index = order.index(pickle_step) if pickle_step in order else -1
            if 0 <= index < len(run.steps):
                step = run.steps[index]
                run.steps[index] = step.model_copy(update={"status": status, "message": text,
                                                           "exception_type": exception})
        elif "testRunHookStarted" in message:
            hooks[message["testRunHookStarted"]["id"]] = message["testRunHookStarted"].get("hookId", "")
        elif "testRunHookFinished" in message:
            result = message["testRunHookFinished"].get("result", {})
            if result.get("status") not in ("PASSED", "SKIPPED", None):
                report.run_hook_failures.append(f"{result.get('status')}: {str(result.get('message', ''))[:300]}")
        elif "testRunFinished" in message:
            report.finished = True
            report.success = bool(message["testRunFinished"].get("success"))
    return report
