"""The terminal output both layers share: the two consoles and the progress displays.

Library code may import this (the experiment runner draws its bars on the same stderr console);
the CLIs build on it. Keeping it out of ``bench.cli`` means no library module imports a CLI module
(tests/unit/test_cli_not_imported.py checks that).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

# The width of a command's result when stdout is a pipe or a file. rich would take 80 columns there (or the width of
# whatever terminal stdin or stderr is), folding table rows a script or a saved file needs whole. 300 columns hold
# every row req2test prints (the widest, a `show` row with costs, is ~265: a long instance id and a detail cut
# at 120) and no more: what fills the width (the rules between the parts of an instance's page) stays one
# readable line in a file. $COLUMNS, when set, still decides.
PIPED_WIDTH = 300


def result_console(file: TextIO | None = None) -> Console:
    """The console a command's result goes to (``file``: stdout when None): the terminal's width on a terminal,
    ``$COLUMNS`` or ``PIPED_WIDTH`` elsewhere."""
    stream = file if file is not None else sys.stdout
    width = None
    if not (stream is not None and stream.isatty()):
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return Console(file=file, width=width)


console = Console(stderr=True)  # progress, notes, errors: never mixed into what a command prints
out = result_console()  # a command's result (tables, JSON, paths), for pipes and scripts


def end_stage(bar: Progress, task: TaskID, last_advance: float | None, fill: bool = True) -> None:
    """Stop a finished stage's clock where its work ended: its last advance (else now, for a stage that never
    advanced); ``fill``: and show its bar full (the stage is over).

    rich stops a task's clock only when it reaches its total. A stage that ends short of it (units skipped, a total
    counted generously) went on counting through whatever ran after it (the fresh-process check, writing the
    dataset) until the next bar or the end of the display: 352 s shown for a 36 s stage."""
    found = next((t for t in bar.tasks if t.id == task), None)
    if found is None:
        return
    if found.finished_time is None and found.start_time is not None:
        end = last_advance if last_advance is not None else bar.get_time()
        found.finished_time = max(0.0, end - found.start_time)  # rich never overwrites a set finished_time
    if fill and found.total is not None:
        bar.update(task, completed=found.total)


class RichProgress:
    """Progress bars for the long stages of a build (a ``bench.progress.Progress``)."""

    def __init__(self, enabled: bool, clock: Callable[[], float] | None = None) -> None:
        """``clock``: the bars' time source (rich's, time.monotonic, when None)."""
        self.enabled = enabled
        self.clock = clock
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.last_advance: float | None = None

    def stage(self, name: str, total: int | None = None) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            self.progress = Progress(TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False,
                                     get_time=self.clock)
            self.progress.start()
        self._end_stage()
        self.task = self.progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task, n)
            self.last_advance = self.progress.get_time()

    def _end_stage(self) -> None:
        if self.progress is not None and self.task is not None:
            end_stage(self.progress, self.task, self.last_advance)
        self.task, self.last_advance = None, None

    def log(self, line: str) -> None:
        """A line above the bars (a long step that has no bar of its own)."""
        console.print(line, highlight=False, soft_wrap=True, markup=False)

    def close(self) -> None:
        if self.progress is not None:
            self._end_stage()
            self.progress.stop()


class LineProgress:
    """A ``bench.progress.Progress`` for logs (CI, a pipe, nohup): a line when a stage starts and ends, and one per
    tenth of the stage or per 30 s, whichever comes first; bars would print nothing there."""

    def __init__(self, status: Callable[[], str] | None = None, every_seconds: float = 30.0) -> None:
        self.status = status
        self.every_seconds = every_seconds
        self.name: str | None = None
        self.total: int | None = None
        self.done = 0
        self.started = self.last = 0.0
        self.last_advance: float | None = None  # where the stage's work ended, when it did not reach its total

    def _line(self, text: str) -> None:
        extra = f" · {self.status()}" if self.status is not None else ""
        console.print(f"{text}{extra}", highlight=False, soft_wrap=True, markup=False)

    def log(self, line: str) -> None:
        self._line(line)

    def stage(self, name: str, total: int | None = None) -> None:
        self._finish()
        self.name, self.total, self.done, self.last_advance = name, total, 0, None
        self.started = self.last = time.monotonic()
        self._line(f"{name}: started" + (f", {total} to do" if total is not None else ""))

    def advance(self, n: int = 1) -> None:
        if self.name is None:
            return
        before, self.done = self.done, self.done + n
        now = self.last_advance = time.monotonic()
        step = max(1, (self.total or 0) // 10)
        if self.done // step > before // step or now - self.last >= self.every_seconds:
            self.last = now
            of = f"/{self.total}" if self.total is not None else ""
            self._line(f"{self.name}: {self.done}{of} after {now - self.started:.0f} s")

    def _finish(self) -> None:
        if self.name is not None:
            # timed to the last advance, as the bars are (end_stage): not through the step that ran after it
            end = self.last_advance if self.last_advance is not None else time.monotonic()
            self._line(f"{self.name}: finished {self.done} in {end - self.started:.0f} s")
            self.name = None

    def close(self) -> None:
        self._finish()


def progress_for(quiet: bool, status: Callable[[], str] | None = None) -> RichProgress | LineProgress:
    """Bars on a terminal, log lines elsewhere, nothing with --quiet."""
    if quiet:
        return RichProgress(enabled=False)
    return RichProgress(enabled=True) if sys.stderr.isatty() else LineProgress(status)
