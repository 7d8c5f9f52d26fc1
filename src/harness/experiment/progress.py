"""The live display of a ``req2test run``: one progress bar per stage (or log lines when output is not a
terminal) with the run's counters on top: instances done, passes, money spent.

Owns only the display and those counters. It is its own module because every stage of a run (planning aside)
reports to it, and because the CLI and the demo construct one before any runner exists; ``money`` is also what
``costs.RunCosts`` holds the run's budget against. rich and the line logger are imported lazily: a run without a
display never loads them.
"""

from __future__ import annotations


class RunProgress:
    """Instances done, passes, money spent and ETA, on one rich progress bar per stage.

    A ``bench.progress.Progress`` with the run's counters on top (``money`` also enforces the
    budget), so the runner keeps this concrete type rather than the protocol."""

    def __init__(self, enabled: bool, lines: bool = False) -> None:
        """``lines``: log lines instead of bars (output is not a terminal)."""
        self.enabled = enabled
        self.bar = None
        self.task = None
        self.money = 0.0
        self.passes = 0
        self.evaluated = 0
        self.lines = None
        if enabled and lines:
            from bench.console import LineProgress  # lazy, like rich below: a run without a display never loads it

            self.lines = LineProgress(status=lambda: self.status)

    def stage(self, name: str, total: int | None = None) -> None:
        if not self.enabled:
            return
        if self.lines is not None:
            self.lines.stage(name, total)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        from bench.console import console

        if self.bar is None:
            self.bar = Bar(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                           console=console, transient=False)
            self.bar.start()
        self.task = self.bar.add_task(name, total=total, status=self.status)

    @property
    def status(self) -> str:
        passes = f"passes {self.passes}/{self.evaluated}" if self.evaluated else "passes -"
        return f"{passes} · ${self.money:.4f}"

    def advance(self, n: int = 1) -> None:
        if self.lines is not None:
            self.lines.advance(n)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=n, status=self.status)

    def log(self, line: str) -> None:
        if not self.enabled:
            return
        if self.lines is not None:
            self.lines.log(line)
            return
        from bench.console import console

        # printed through the bar's console, the line lands above the live bars instead of through them
        target = self.bar.console if self.bar is not None else console
        target.print(line, highlight=False, soft_wrap=True, markup=False)

    def close(self) -> None:
        if self.lines is not None:
            self.lines.close()
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
