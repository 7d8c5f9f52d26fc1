"""Split-stream mutant runs: fork each mutant where its execution first diverges.

A run of an unmutated test and a run with one mutant are identical until the mutated
code first executes (the run is deterministic; the clean run proves the test passes).
So one *driver* process runs the test unmutated and, at each *fork point* — the start
of the run, of each scenario and of each top-level step — forks one child per mutant
whose mutated lines the clean run first executed at or after that point. The child
swaps the mutated code in and simply continues the run; it never repeats the shared
prefix (loading the document, the Given steps), which a fork per mutant at the start
would redo every time.

The clean traced run labels the same points (coverage.py dynamic contexts), which is
how a mutant's fork point is found. Standard library only: this runs in the project's
environment.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.frameworks.behave import forking

RUN_START = "run"


def scenario_point(scenario_index: int) -> str:
    return f"s{scenario_index}"


def step_point(scenario_index: int, step_index: int) -> str:
    return f"s{scenario_index}.{step_index}"


def call_point(step_label: str, call_index: int) -> str:
    """After the n-th return from production into the step's code."""
    return f"{step_label}.c{call_index}"


def first_points(contexts_by_line: dict[int, list[str]], order: dict[str, int]) -> dict[int, str]:
    """For each covered line, the earliest labelled point whose span executed it."""
    out: dict[int, str] = {}
    for line, labels in contexts_by_line.items():
        known = [label for label in labels if label in order]
        out[line] = min(known, key=order.__getitem__) if known else RUN_START
    return out


def fork_point(mutant: dict[str, Any], first: dict[str, dict[str, str]], order: dict[str, int]) -> str:
    """Where to fork ``mutant``: before the first call of its (outermost) function.

    Not merely before the first execution of the mutated line: a frame of the old code
    that exists at the fork — a call in progress, a suspended generator, a closure its
    outer function is about to create — would run the old line later. When the function
    never ran before the fork, no such frame exists. Any line of the function's span
    executes on every call, so its earliest labelled point is the fork point; forking
    earlier is always correct, so anything unknown falls back to the start of the run.
    """
    by_line = first.get(mutant["file"], {})
    start = int(mutant.get("function_line") or mutant["line"])
    end = int(mutant.get("function_end") or mutant["end_line"])
    labels = [label for line, label in by_line.items() if start <= int(line) <= end]
    if not labels:
        return RUN_START
    return min(labels, key=lambda label: order.get(label, -1))


class SplitStream:
    """The driver's fork logic; the run calls :meth:`at` at every labelled point.

    ``prepare(mutant)`` runs in the fresh child before it continues: it swaps the
    mutated code in and returns an error text when it cannot (the mutant then goes
    the slow way). ``results`` maps mutant ids to the children's raw results.
    """

    def __init__(self, plan: dict[str, list[dict[str, Any]]], limit: float,
                 prepare: Callable[[dict[str, Any]], str | None],
                 summarize: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.plan = {label: list(mutants) for label, mutants in plan.items()}
        self.limit = limit
        self.prepare = prepare
        self.summarize = summarize
        self.results: dict[str, dict[str, Any]] = {}
        self.is_mutant_child = False
        self.threads_stopped_forking: str | None = None  # the point where live threads stopped it

    def at(self, label: str) -> None:
        if self.is_mutant_child:
            return  # a mutant child runs to the end without forking further
        if self.plan and threading.active_count() > 1:
            # The run started threads (py-algorand-sdk's mock HTTP servers in before_all):
            # a forked child would have none of them and hang on its first request. Fork no
            # more; the mutants left are each run whole from a fork of the worker.
            self.threads_stopped_forking = label
            self.plan.clear()
            return
        for mutant in self.plan.pop(label, ()):
            self._fork(mutant)
            if self.is_mutant_child:
                return  # this process is the mutant now: continue the run from here

    def _fork(self, mutant: dict[str, Any]) -> None:
        read_fd, write_fd = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            forking.become_child(write_fd)
            self.is_mutant_child = True
            self.plan.clear()
            sys.setprofile(None)  # the driver's point hook: the mutant runs at full speed
            try:
                error = self.prepare(mutant)
            except BaseException as exc:  # noqa: BLE001 - the swap itself failed: never run half-swapped
                error = f"{type(exc).__name__}: {exc}"
            if error:
                forking.report_and_exit({"swap_error": error})
            return
        os.close(write_fd)
        self.results[mutant["id"]] = forking.await_child(pid, read_fd, started, self.limit)

    def finish(self, run_result: dict[str, Any]) -> None:
        """Called once the run is over: a mutant child reports its verdict and exits here."""
        if self.is_mutant_child:
            forking.report_and_exit(self.summarize(run_result))
