"""The step definitions of a Cucumber-JVM suite and what a run bound to them, from the message
stream (``--plugin message:FILE``, NDJSON, cucumber-messages 13.0.1 as cucumber-jvm 6.6.0
writes it).

Every run lists *every* step definition of its glue, whether a step used it or not, one
``stepDefinition`` envelope each: ``id``, ``pattern.source`` (the annotation's text),
``pattern.type`` (absent for a Cucumber expression, the protobuf default;
``REGULAR_EXPRESSION`` for a regular expression: cucumber-jvm reads an annotation text as a
regex when it starts with ``^`` or ends with ``$``) and ``sourceReference.javaMethod``
(``className``, ``methodName``, ``methodParameterTypes``). So any one-scenario run, or a
``--dry-run``, is the suite's definition listing (what ``--godog.definitions`` is for godog).

A ``testCase`` envelope lists the steps of the pickle that ran: ``pickleStepId`` and
``stepDefinitionIds`` (none: undefined; two or more: ambiguous), hooks as ``hookId``.
Pickles are listed for the *whole* feature file, selected or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bench.frameworks.cucumber_jvm.cucumber_json import JavaMethod


@dataclass(frozen=True)
class StepDefinition:
    id: str
    pattern: str
    regex: bool  # a regular expression (else a Cucumber expression)
    method: JavaMethod | None


@dataclass(frozen=True)
class BoundStep:
    text: str
    definition_ids: tuple[str, ...]


@dataclass(frozen=True)
class MessageRun:
    definitions: tuple[StepDefinition, ...]
    bound: tuple[tuple[BoundStep, ...], ...]  # per test case (one for a one-scenario run), in run order
    problem: str = ""

    def definition(self, definition_id: str) -> StepDefinition | None:
        return next((d for d in self.definitions if d.id == definition_id), None)


def _method(reference: dict) -> JavaMethod | None:
    java = reference.get("javaMethod") if isinstance(reference, dict) else None
    if not isinstance(java, dict) or "className" not in java:
        return None
    return JavaMethod(str(java["className"]), str(java.get("methodName", "")),
                      tuple(str(t) for t in java.get("methodParameterTypes") or []))


def parse_messages(text: str) -> MessageRun:
    definitions: list[StepDefinition] = []
    pickle_steps: dict[str, str] = {}
    cases: list[list[tuple[str, tuple[str, ...]]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            envelope = json.loads(line)
        except ValueError:
            return MessageRun((), (), problem=f"line {number} is not JSON")
        if "stepDefinition" in envelope:
            raw = envelope["stepDefinition"]
            pattern = raw.get("pattern") or {}
            definitions.append(StepDefinition(
                id=str(raw.get("id", "")), pattern=str(pattern.get("source", "")),
                regex=pattern.get("type") == "REGULAR_EXPRESSION", method=_method(raw.get("sourceReference") or {})))
        elif "pickle" in envelope:
            for step in envelope["pickle"].get("steps") or []:
                pickle_steps[str(step.get("id", ""))] = str(step.get("text", ""))
        elif "testCase" in envelope:
            cases.append([(str(s["pickleStepId"]), tuple(str(i) for i in s.get("stepDefinitionIds") or []))
                          for s in envelope["testCase"].get("testSteps") or [] if "pickleStepId" in s])
    bound = tuple(tuple(BoundStep(pickle_steps.get(step_id, ""), ids) for step_id, ids in case) for case in cases)
    return MessageRun(tuple(definitions), bound)


def read_messages(path: Path) -> MessageRun:
    try:
        return parse_messages(path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return MessageRun((), (), problem="no message stream written")
