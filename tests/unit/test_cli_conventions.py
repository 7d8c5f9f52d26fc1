"""One CLI convention across req2test's commands (issue 13, item 6)."""

from __future__ import annotations

import io
import re

import typer
from typer.testing import CliRunner

from harness.cli import app

COMMAND = typer.main.get_command(app)


def _commands(group=COMMAND, prefix: str = "") -> dict:
    """Every leaf command by its full name (typer may bring its own click: duck-typed)."""
    found = {}
    children = group.load_all() if hasattr(group, "load_all") else group.commands  # the root is lazy
    for name, command in children.items():
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


def test_short_flags_mean_one_thing_everywhere() -> None:
    meaning: dict[str, set[str]] = {}
    for name, command in _commands().items():
        for param in command.params:
            if param.param_type_name != "option":
                continue
            assert "--output-dir" not in param.opts, f"{name}: use --output/-o"
            for short in (o for o in param.opts if re.fullmatch(r"-[a-zA-Z]", o)):
                long = next(o for o in param.opts if o.startswith("--"))
                meaning.setdefault(short, set()).add(long)
    assert meaning["-p"] == {"--predictions"}
    assert meaning["-o"] == {"--output"}
    assert all(len(longs) == 1 for longs in meaning.values()), meaning


def test_help_keeps_angle_brackets_and_the_example_file() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], terminal_width=140)
    assert result.exit_code == 0
    assert "configs/<arm>@<view>/" in result.output and "runs/<name>" in result.output
    assert "  - {name: plain, model: openai/gpt-5-mini}" in result.output  # the YAML keeps its lines


def test_every_command_has_examples_in_its_help() -> None:
    for name, command in _commands().items():
        if name in ("provider serve",):
            continue
        assert "Example" in (command.help or ""), f"{name} --help has no example"


def test_progress_logs_lines_when_the_output_is_not_a_terminal(monkeypatch) -> None:
    from rich.console import Console

    from bench import console as display

    buffer = io.StringIO()
    monkeypatch.setattr(display, "console", Console(file=buffer, width=200))  # never pin the shared console's stream
    progress = display.progress_for(quiet=False)
    assert isinstance(progress, display.LineProgress)  # pytest's stderr is not a terminal
    progress.stage("scenarios in isolation", 20)
    for _ in range(20):
        progress.advance()
    progress.stage("positive/negative validation", 3)
    progress.close()
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "scenarios in isolation: started, 20 to do"
    assert sum(1 for line in lines if line.startswith("scenarios in isolation: ") and " after " in line) == 10
    assert lines[-1].startswith("positive/negative validation: finished 0 in")
    quiet = display.progress_for(quiet=True)
    assert isinstance(quiet, display.RichProgress) and not quiet.enabled
