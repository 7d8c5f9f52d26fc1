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
MAX_STACK = 32 * 1024  # characters of a step's stack trace kept (the result keeps 16 KiB of it)


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
    keyword: str = Field("", description="as the feature file writes it (Given / And ...), from the Gherkin document")
    line: int = Field(0, description="the step's line in the feature file (an outline's: the template step's)")
    stack: str = Field("", description="the exception's stack trace as the runner reported it")


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
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return RunReport()
    return parse_report(lines)


# messages a run writes once; what comes after ``testRunFinished`` was not written by the run
_ONCE = ("meta", "testRunStarted", "testRunFinished")


def report_problems(lines: list[str], *, torn_tail: bool = False) -> list[str]:
    """Why a message stream cannot be the one cucumber-js's message formatter wrote (empty:
    it can). The formatter writes each message once, in the protocol's order; a test that
    writes into the channel itself (an exit handler appending a forged report, a second
    ``testRunFinished``, a step finished twice) leaves a stream that is not. ``torn_tail``: the
    process was killed, its last line may be cut."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    finished_at = -1
    cases: set[str] = set()
    started_steps: set[tuple[str, str]] = set()
    finished_steps: set[tuple[str, str]] = set()
    finished_cases: set[str] = set()
    for number, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            message = json.loads(raw)
        except ValueError:
            if torn_tail and number == len(lines) - 1:
                continue
            problems.append(f"line {number + 1} is not a message")
            continue
        if not isinstance(message, dict) or len(message) != 1:
            problems.append(f"line {number + 1} is not a message")
            continue
        kind = next(iter(message))
        body = message[kind] if isinstance(message[kind], dict) else {}
        if finished_at >= 0:
            problems.append(f"a {kind!r} message after testRunFinished (line {number + 1})")
        if kind in _ONCE:
            seen[kind] = seen.get(kind, 0) + 1
            if seen[kind] > 1:
                problems.append(f"a second {kind!r} message (line {number + 1})")
        if kind == "meta" and number != 0:
            problems.append(f"'meta' is not the first message (line {number + 1})")
        elif kind == "testRunFinished":
            finished_at = number
        elif kind == "testCaseStarted":
            case = str(body.get("id", ""))
            if case in cases:
                problems.append(f"test case {case} started twice")
            cases.add(case)
        elif kind in ("testStepStarted", "testStepFinished"):
            key = (str(body.get("testCaseStartedId", "")), str(body.get("testStepId", "")))
            if key[0] not in cases or key[0] in finished_cases:
                problems.append(f"{kind} outside its test case (line {number + 1})")
            target = started_steps if kind == "testStepStarted" else finished_steps
            if key in target:
                problems.append(f"{kind} twice for step {key[1]} (line {number + 1})")
            if kind == "testStepFinished" and key not in started_steps:
                problems.append(f"testStepFinished before testStepStarted for step {key[1]} (line {number + 1})")
            target.add(key)
        elif kind == "testCaseFinished":
            case = str(body.get("testCaseStartedId", ""))
            if case not in cases or case in finished_cases:
                problems.append(f"testCaseFinished twice or for an unknown test case (line {number + 1})")
            finished_cases.add(case)
    return problems[:20]


def parse_report(lines: list[str]) -> RunReport:
    """The run a message stream tells (lines of NDJSON)."""
    report = RunReport()
    pickles: dict[str, dict] = {}
    cases: dict[str, tuple[str, dict[str, tuple[str, list[str]]]]] = {}  # case id -> (pickle id, step id -> ...)
    started: dict[str, str] = {}  # testCaseStarted id -> case id
    runs: dict[str, PickleRun] = {}
    hooks: dict[str, str] = {}  # run-hook started id
    written: dict[str, tuple[str, int]] = {}  # Gherkin step id -> (keyword, line): what a report shows
    for raw in lines:
        try:
            message = json.loads(raw)
        except ValueError:
            continue  # a torn last line
        if not isinstance(message, dict):
            continue
        if "gherkinDocument" in message:
            written.update(_written_steps(message["gherkinDocument"]))
        elif "pickle" in message:
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
            pickle_run = PickleRun(uri=str(pickle.get("uri", "")), line=int(location.get("line", 0)),
                                    name=str(pickle.get("name", "")), started=True)
            step_texts = {s["id"]: s for s in pickle.get("steps", [])}
            for pickle_step, definitions in cases.get(case_id, ("", {}))[1].values():
                if pickle_step:
                    ps = step_texts.get(pickle_step, {})
                    keyword, line = written.get(next(iter(ps.get("astNodeIds") or []), ""), ("", 0))
                    pickle_run.steps.append(StepRun(text=str(ps.get("text", "")),
                                                    step_type=str(ps.get("type", "Unknown")),
                                                    definition_ids=definitions, keyword=keyword, line=line))
            runs[event["id"]] = pickle_run
            report.pickles.append(pickle_run)
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
            stack = str((result.get("exception") or {}).get("stackTrace", "") or "")[:MAX_STACK]
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
                                                           "exception_type": exception, "stack": stack})
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


def _written_steps(document: object) -> dict[str, tuple[str, int]]:
    """Every step of a Gherkin document (backgrounds, scenarios, rules) by id: its keyword as
    written and its line."""
    out: dict[str, tuple[str, int]] = {}
    feature = document.get("feature") if isinstance(document, dict) else None
    stack = list((feature or {}).get("children") or []) if isinstance(feature, dict) else []
    while stack:
        child = stack.pop()
        if not isinstance(child, dict):
            continue
        for kind in ("background", "scenario"):
            node = child.get(kind)
            if isinstance(node, dict):
                for step in node.get("steps") or []:
                    if isinstance(step, dict) and "id" in step:
                        out[str(step["id"])] = (str(step.get("keyword", "")).strip(),
                                                int((step.get("location") or {}).get("line", 0) or 0))
        rule = child.get("rule")
        if isinstance(rule, dict):
            stack.extend(rule.get("children") or [])
    return out
