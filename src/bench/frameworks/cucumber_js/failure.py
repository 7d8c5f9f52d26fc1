"""Why a cucumber-js prediction's clean run failed, read from that run alone.

The clean run is the guarded run of the prediction on unchanged production that decides the
stage ladder (``judge.classify``); no mutant or equivalent variant is in its tree, and nothing
of a later verdict run is read here. Its message report gives the failing step (keyword and
line from the Gherkin document, the step's text from the pickle) and the exception's stack
trace; its stdout holds the progress formatter's report and whatever the test printed with
``console.log``, its stderr ``console.error``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypedDict

from bench.failure import failure_detail
from bench.frameworks.cucumber_js.runner import CucumberRun
from bench.model import FailingStep, FailureDetail

NOT_PASSING = ("FAILED", "UNDEFINED", "AMBIGUOUS", "PENDING")


class _Outputs(TypedDict):
    """The run's output arguments of ``failure_detail``, the same for every failure."""

    stdout: str
    stderr: str
    roots: Iterable[str]
    output_note: str


def clean_run_failure(run: CucumberRun, roots: Iterable[str]) -> FailureDetail:
    """The first step that did not pass (or the hook, or the load error), with the run's output."""
    outputs: _Outputs = {"stdout": run.stdout, "stderr": run.stderr, "roots": roots,
                        "output_note": "stdout: the progress formatter's report and the test's console.log"}
    for pickle in run.report.pickles:
        for step in pickle.steps:
            if step.status not in NOT_PASSING:
                continue
            where = FailingStep(keyword=step.keyword, text=step.text, location=f"{pickle.uri}:{step.line}")
            if step.status != "FAILED":
                return failure_detail(step=where, error=f"{step.status.lower()} step", **outputs)
            # the message is the error and its stack: the error is what comes before the frames
            error = re.split(r"\n\s+at ", step.message, maxsplit=1)[0].strip()
            return failure_detail(step=where, error=error or step.exception_type,
                                  traceback=step.stack or step.message, **outputs)
        if pickle.hook_failures:
            return failure_detail(error=f"a hook of the scenario failed: {pickle.hook_failures[0]}", **outputs)
    if run.timed_out:
        return failure_detail(error="the run timed out", **outputs)
    hooks = run.report.run_hook_failures
    return failure_detail(error=hooks[0] if hooks else f"exit {run.exit_code}", **outputs)
