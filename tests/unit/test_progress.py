"""bench.progress.Progress: every display in the code base is one, and the run display takes the
protocol's ``advance(n)`` and ``log(line)`` (it used to take neither)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from bench import console as display
from bench.progress import NullProgress, Progress
from harness.experiment.runner import RunProgress


@pytest.mark.parametrize("make", [NullProgress, lambda: display.RichProgress(enabled=False), display.LineProgress,
                                  lambda: RunProgress(False), lambda: RunProgress(True, lines=True)],
                         ids=["null", "rich", "lines", "run", "run-lines"])
def test_every_display_is_a_progress(make) -> None:
    progress = make()
    assert isinstance(progress, Progress)
    progress.stage("a stage")  # total is optional everywhere
    progress.advance()
    progress.advance(3)


def test_the_run_display_counts_n_and_logs_a_line(monkeypatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(display, "console", Console(file=buffer, width=200))
    progress = RunProgress(True, lines=True)
    progress.stage("evaluate arm", 10)
    progress.advance(10)
    progress.log("[not markup] a long step")
    progress.close()
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "evaluate arm: started, 10 to do · passes - · $0.0000"
    assert any(line.startswith("evaluate arm: 10/10 after ") for line in lines)
    assert "[not markup] a long step · passes - · $0.0000" in lines
    assert lines[-1].startswith("evaluate arm: finished 10 in")
