"""The live display of a ``req2test run``: one progress bar per stage (or log lines when output is not a
terminal) with the run's counters on top: instances done, passes per arm, money spent.

Owns only the display and those counters. It is its own module because every stage of a run (planning aside)
reports to it, and because the CLI and the demo construct one before any runner exists; ``money`` is also what
``costs.RunCosts`` holds the run's budget against. rich and the line logger are imported lazily: a run without a
display never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported lazily (see above)
    from rich.progress import Progress as Bar
    from rich.progress import TaskID


def pass_status(counts: dict[str, tuple[int, int]]) -> str:
    """Each arm's passes over its evaluated candidates, in the order the arms were evaluated
    (``plain 3/5 pass · grounded 4/5 pass``): one sum over the arms would mix the arms it compares."""
    if not counts:
        return "passes -"
    return " · ".join(f"{arm} {passed}/{evaluated} pass" for arm, (passed, evaluated) in counts.items())


class RunProgress:
    """Instances done, passes per arm, money spent and ETA, on one rich progress bar per stage.

    A ``bench.progress.Progress`` with the run's counters on top (``money`` also enforces the
    budget), so the runner keeps this concrete type rather than the protocol."""

    def __init__(self, enabled: bool, lines: bool = False) -> None:
        """``lines``: log lines instead of bars (output is not a terminal)."""
        self.enabled = enabled
        self.bar: Bar | None = None
        self.task: TaskID | None = None
        self.last_advance: float | None = None
        self.money = 0.0
        self.passes: dict[str, tuple[int, int]] = {}  # per arm (``count_pass``): passed, evaluated
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
        self._end_stage()
        self.task = self.bar.add_task(name, total=total, status=self.status)

    def count_pass(self, arm: str, passed: bool) -> None:
        """One evaluated candidate of ``arm`` (the label the status shows it under)."""
        done, evaluated = self.passes.get(arm, (0, 0))
        self.passes[arm] = (done + passed, evaluated + 1)

    @property
    def status(self) -> str:
        return f"{pass_status(self.passes)} · ${self.money:.4f}"

    def advance(self, n: int = 1) -> None:
        if self.lines is not None:
            self.lines.advance(n)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=n, status=self.status)
            self.last_advance = self.bar.get_time()

    def _end_stage(self) -> None:
        """The stage's time stops at its last advance, not when the next stage or the end of the run comes."""
        from bench.console import end_stage

        if self.bar is not None and self.task is not None:
            end_stage(self.bar, self.task, self.last_advance, fill=False)  # a run stopped short stays short
        self.task, self.last_advance = None, None

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
            self._end_stage()
            self.bar.stop()
            self.bar = None
