"""Why a Cucumber-JVM prediction's clean run failed, read from that run alone.

The clean run is the JVM of the verdict class path with a null number selected (no site's
mutant: production behaves as shipped) that decides the stage ladder (``judge.classify``); no
later verdict run is read here. Cucumber's JSON report gives the failing step (keyword, text,
line) and its ``error_message``, the whole stack trace (cucumber already cut it below the step
definition: ``✽.the step(file:…feature:LINE)`` is its last frame); the JVM's combined
stdout+stderr tail (``CucumberJvmRun.output``) what the test printed. Frames and lines of the
mutant switch (``schemata.PACKAGE``: ``req2test.schema.S`` helpers, the ``Main`` launcher) are
left out: the machinery that selects mutants is no part of the prediction's failure.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.failure import failure_detail
from bench.frameworks.cucumber_jvm.cucumber_json import StepResult
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun
from bench.frameworks.cucumber_jvm.schemata import PACKAGE
from bench.model import FailingStep, FailureDetail

NOT_PASSING = ("failed", "undefined", "pending", "ambiguous")
OUTPUT_NOTE = "stdout and stderr interleaved, the last 4000 characters the JVM wrote"


def clean_run_failure(runs: list[CucumberJvmRun], roots: Iterable[str]) -> FailureDetail | None:
    """The first row that did not pass: its failing step (or hook) and stack, and the JVM's output."""
    run = next((r for r in runs if not r.passed), None)
    if run is None:
        return None
    roots = list(roots)
    output = without_switch(run.output)
    scenario = run.scenario
    if scenario is not None:
        step = next((s for s in scenario.steps if s.status in NOT_PASSING), None)
        if step is not None:
            return _step_failure(step, scenario.uri, output, roots)
        hook = next((h for h in (*scenario.before, *scenario.after) if h.status == "failed"), None)
        if hook is not None:
            stack = without_switch(hook.error)
            return failure_detail(error=f"hook {hook.location} failed: {_first_line(stack)}", traceback=stack,
                                  stdout=output, roots=roots, output_note=OUTPUT_NOTE)
    error = "the run timed out" if run.timed_out else (run.report.problem or f"exit {run.exit_code}")
    return failure_detail(error=error, stdout=output, roots=roots, output_note=OUTPUT_NOTE)


def _step_failure(step: StepResult, uri: str, output: str, roots: list[str]) -> FailureDetail:
    where = FailingStep(keyword=step.keyword, text=step.text, location=f"{uri}:{step.line}")
    stack = without_switch(step.error)
    error = _first_line(stack) or f"{step.status} step"
    return failure_detail(step=where, error=error, traceback=stack, stdout=output, roots=roots,
                          output_note=OUTPUT_NOTE)


def without_switch(text: str) -> str:
    """``text`` without the lines that name the mutant switch's package, a count where frames went."""
    kept: list[str] = []
    dropped = 0
    for line in text.splitlines():
        if PACKAGE in line:
            dropped += 1
            continue
        kept.append(line)
    if dropped:
        kept.append(f"\t({dropped} lines of the evaluator's launcher left out)")
    return "\n".join(kept)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
