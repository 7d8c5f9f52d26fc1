"""Read one scenario of a testing.T godog suite from its ``go test -test.v`` output, where the
suite's own ``Format: "pretty"`` (fixed in the project's code) prints the steps.

What the output holds (godog v0.15.1, internal/formatters/fmt_pretty.go, colours on): inside
the ``=== RUN   TestX/<subtest>`` section, each step that ran as one line,
``ESC[<c>m<Keyword>ESC[0m ESC[<c>m<text>ESC[0m <pad> ESC[1;30m# <file>.go:<line> -> <type>ESC[0m``,
its colour its status (32 passed, 31 failed, 36 skipped, 33 undefined or pending), the
location the step's *registration* (``ctx.Step(...)``'s line, in the package directory); a failed
step's error follows in bold red; then ``--- PASS|FAIL: TestX/<subtest>``. A feature's
Background is printed with the first pickle of the feature only, so the steps the output does
not show are inferred from the subtest's result (passed before a failure, skipped after it; a
failure no shown step carries — a Background step, a hook — goes to the first unshown step,
with the ``t.Errorf`` text godog wrote for it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bench.frameworks.godog.cucumber_json import GodogReport, ScenarioResult, StepMatch, StepResult

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"^\s*\x1b\[(?P<color>[0-9;]+)m(?P<keyword>Given|When|Then|And|But|\*)\x1b\[0m (?P<rest>.*)$")
_LOCATION = re.compile(r"^(?P<file>[^\s:/]+\.go):(?P<line>\d+)")
STATUS_BY_COLOR = {"32": "passed", "31": "failed", "36": "skipped", "33": "undefined", "1;31": "failed"}


@dataclass(frozen=True)
class ExpectedStep:
    """A step of the pickle as the feature says it (Background first)."""

    text: str
    line: int


def _plain(text: str) -> str:
    return " ".join(_ANSI.sub("", text).split())


def _section(output: str, full_name: str) -> tuple[list[str], str | None]:
    """The lines printed while the subtest ran, and its result (PASS, FAIL, SKIP or None)."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"=== RUN   {full_name}"), None)
    result = None
    for line in lines:
        match = re.match(rf"^\s*--- (PASS|FAIL|SKIP): {re.escape(full_name)} \(", line)
        if match:
            result = match.group(1)
    if start is None:
        return [], result
    section: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith(("=== RUN", "=== NAME", "=== CONT", "--- ")) or _plain(line).startswith("--- Failed steps"):
            break
        section.append(line)
    return section, result


def parse_subtest(output: str, test: str, subtest: str, feature: str, line: int, name: str,
                  expected: Sequence[ExpectedStep]) -> GodogReport:
    """The report of the one pickle a ``-test.run='^TEST$/^SUBTEST$'`` process ran."""
    full_name = f"{test}/{subtest}"
    section, result = _section(output, full_name)
    if result is None:
        return GodogReport(problem=f"no result for {full_name} (the process ended before the subtest did)")
    printed: list[tuple[str, str, str, StepMatch | None, str]] = []  # keyword, text, status, match, error
    template: list[tuple[str, str, str, StepMatch | None, str]] = []  # an outline's steps, as written
    errors: list[str] = []
    in_outline = False
    for raw in section:
        plain = _plain(raw)
        if plain.startswith(("Scenario Outline:", "Scenario Template:")):
            in_outline = True
            continue
        if plain.startswith(("Examples:", "Scenarios:")):
            in_outline = False
            continue
        step = _STEP.match(raw)
        if step is None:
            if printed and printed[-1][2] == "failed" and "\x1b[1;31m" in raw and not printed[-1][4]:
                keyword, text, status, match, _ = printed[-1]
                printed[-1] = (keyword, text, status, match, plain)
            elif re.match(r"^\S+\.go:\d+: ", plain):
                errors.append(plain.split(": ", 1)[1])
            continue
        rest = step["rest"]
        text_part, _, comment = rest.partition("\x1b[1;30m# ")
        location = _plain(comment)
        found = _LOCATION.match(location)
        match = StepMatch(found["file"], int(found["line"])) if found else None
        status = STATUS_BY_COLOR.get(step["color"], "unknown")
        (template if in_outline else printed).append((step["keyword"], _plain(text_part), status, match, ""))
    if template and len(template) <= len(expected):
        return _outline_row(result, errors, printed, template, feature, line, name, expected)
    steps: list[StepResult] = []
    cursor = 0
    failed_seen = any(p[2] in ("failed", "undefined") for p in printed)
    after_failure = False
    for want in expected:
        hit = None
        for index in range(cursor, len(printed)):
            if printed[index][1] == " ".join(want.text.split()):
                hit = index
                break
        if hit is not None:
            keyword, text, status, match, error = printed[hit]
            cursor = hit + 1
            steps.append(StepResult(keyword=keyword, text=want.text, line=want.line, status=status, error=error,
                                    match=match, location=f"{match.file}:{match.line}" if match else ""))
            after_failure = after_failure or status in ("failed", "undefined", "pending")
            continue
        if result == "PASS" or (failed_seen and not after_failure):
            status = "passed" if not after_failure else "skipped"
        elif after_failure:
            status = "skipped"
        else:  # the failure no shown step carries: this one (a Background step, or a hook before it)
            status, after_failure = "failed", True
            steps.append(StepResult(keyword="", text=want.text, line=want.line, status=status,
                                    error=errors[0] if errors else "failed (godog's output does not say where)"))
            continue
        steps.append(StepResult(keyword="", text=want.text, line=want.line, status=status))
    if result == "FAIL" and all(s.status == "passed" for s in steps) and steps:
        # the subtest failed after every step passed (an After hook): the last step carries it
        last = steps[-1]
        steps[-1] = StepResult(keyword=last.keyword, text=last.text, line=last.line, status="failed",
                               error=errors[0] if errors else "an After hook failed", match=last.match,
                               location=last.location)
    scenario = ScenarioResult(uri=feature, line=line, name=name, keyword="Scenario", tags=(), steps=tuple(steps))
    return GodogReport(scenarios=(scenario,), features=(feature,))


def _outline_row(result: str, errors: list[str], printed: list, template: list, feature: str, line: int,
                 name: str, expected: Sequence[ExpectedStep]) -> GodogReport:
    """An outline's first row: pretty prints the outline's template steps (``<placeholders>``, in
    the colour of skipped, under ``Scenario Outline:``) and the row's cells in the colour of its result, so each step is bound by
    its position among the template's and the row's result is the subtest's: every step passed,
    or (the output does not say which) the first step failed with godog's error, the rest skipped."""
    background = printed
    first = len(expected) - len(template)
    steps: list[StepResult] = []
    for index, want in enumerate(expected):
        keyword, match = "", None
        if index >= first:
            keyword, _, _, match, _ = template[index - first]
        else:
            hit = next((b for b in background if b[1] == " ".join(want.text.split())), None)
            if hit is not None:
                keyword, match = hit[0], hit[3]
        if result == "PASS":
            status, error = "passed", ""
        elif index == 0:
            status, error = "failed", errors[0] if errors else "the Examples row failed (godog's output does not say " \
                                                                 "at which step)"
        else:
            status, error = "skipped", ""
        steps.append(StepResult(keyword=keyword, text=want.text, line=want.line, status=status, error=error,
                                match=match, location=f"{match.file}:{match.line}" if match else ""))
    scenario = ScenarioResult(uri=feature, line=line, name=name, keyword="Scenario Outline", tags=(),
                              steps=tuple(steps))
    return GodogReport(scenarios=(scenario,), features=(feature,))


__all__ = ["ExpectedStep", "parse_subtest"]
