"""The terminal output both layers share: the two consoles and the progress displays.

Library code may import this (the experiment runner draws its bars on the same stderr console);
the CLIs build on it. Keeping it out of ``bench.cli`` means no library module imports a CLI module
(tests/unit/test_cli_not_imported.py checks that).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)  # progress, notes, errors: never mixed into what a command prints
out = Console()  # a command's result (tables, JSON, paths), for pipes and scripts


class RichProgress:
    """Progress bars for the long stages of a build (a ``bench.progress.Progress``)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Progress | None = None
        self.task = None

    def stage(self, name: str, total: int | None = None) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            self.progress = Progress(TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False)
            self.progress.start()
        if self.task is not None:
            self.progress.update(self.task, completed=self.progress.tasks[-1].total)
        self.task = self.progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task, n)

    def log(self, line: str) -> None:
        """A line above the bars (a long step that has no bar of its own)."""
        console.print(line, highlight=False, soft_wrap=True, markup=False)

    def close(self) -> None:
        if self.progress is not None:
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

    def _line(self, text: str) -> None:
        extra = f" · {self.status()}" if self.status is not None else ""
        console.print(f"{text}{extra}", highlight=False, soft_wrap=True, markup=False)

    def log(self, line: str) -> None:
        self._line(line)

    def stage(self, name: str, total: int | None = None) -> None:
        self._finish()
        self.name, self.total, self.done = name, total, 0
        self.started = self.last = time.monotonic()
        self._line(f"{name}: started" + (f", {total} to do" if total is not None else ""))

    def advance(self, n: int = 1) -> None:
        if self.name is None:
            return
        before, self.done = self.done, self.done + n
        now = time.monotonic()
        step = max(1, (self.total or 0) // 10)
        if self.done // step > before // step or now - self.last >= self.every_seconds:
            self.last = now
            of = f"/{self.total}" if self.total is not None else ""
            self._line(f"{self.name}: {self.done}{of} after {now - self.started:.0f} s")

    def _finish(self) -> None:
        if self.name is not None:
            self._line(f"{self.name}: finished {self.done} in {time.monotonic() - self.started:.0f} s")
            self.name = None

    def close(self) -> None:
        self._finish()


def progress_for(quiet: bool, status: Callable[[], str] | None = None) -> RichProgress | LineProgress:
    """Bars on a terminal, log lines elsewhere, nothing with --quiet."""
    if quiet:
        return RichProgress(enabled=False)
    return RichProgress(enabled=True) if sys.stderr.isatty() else LineProgress(status)
