"""Why a godog prediction's clean run failed, read from that run alone.

The clean run is the run of the verdict binary with the original selected (mutant number 0:
no site changed) that decides the stage ladder (``judge.classify``); no later verdict run is
read here. godog's cucumber JSON gives the failing step (keyword, text, line) and its error —
Go errors carry no stack, a panic's value is its message — and the process's combined
stdout+stderr tail (``GodogRun.output``) what the test printed (a panic's goroutine dump
lands there). Lines naming the mutant-switch package (``schemata.SCHEMA_DIR``) are left out:
the machinery that selects mutants is no part of the prediction's failure.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.failure import failure_detail
from bench.frameworks.godog.runner import GodogRun
from bench.frameworks.godog.schemata import SCHEMA_DIR
from bench.model import FailingStep, FailureDetail

NOT_PASSING = ("failed", "undefined", "pending", "ambiguous")
OUTPUT_NOTE = "stdout and stderr interleaved, the last 4000 characters the process wrote"


def clean_run_failure(runs: list[GodogRun], roots: Iterable[str]) -> FailureDetail | None:
    """The first row that did not pass: its failing step and error, and the process's output."""
    run = next((r for r in runs if not r.passed), None)
    if run is None:
        return None
    output = _without_switch(run.output)
    scenario = run.scenario
    step = next((s for s in scenario.steps if s.status in NOT_PASSING), None) if scenario is not None else None
    if step is None:  # no step to name: a timeout, no report, the wrong scenario, a bad exit
        error = "the run timed out" if run.timed_out else (run.report.problem or f"exit {run.exit_code}")
        return failure_detail(error=error, stdout=output, roots=roots, output_note=OUTPUT_NOTE)
    assert scenario is not None
    where = FailingStep(keyword=step.keyword, text=step.text, location=f"{scenario.uri}:{step.line}")
    error = _without_switch(step.error) if step.status == "failed" else f"{step.status} step"
    return failure_detail(step=where, error=error, stdout=output, roots=roots, output_note=OUTPUT_NOTE)


def _without_switch(text: str) -> str:
    switch = SCHEMA_DIR.rsplit("/", 1)[-1].lower()  # the package's name, as import path or identifier
    return "\n".join(line for line in text.splitlines() if switch not in line.lower())
