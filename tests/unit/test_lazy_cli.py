"""The root command imports a command's module only when that command runs (issue 30, item 5)."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys

import typer
from typer.testing import CliRunner

from harness.cli import COMMANDS, app, commands

HEAVY = ("bench.cli", "bench.builder", "bench.evaluate", "harness.cli_run", "harness.agents", "litellm",
         "harness.sandbox", "jinja2", "git")


def _modules_after(argv: list[str]) -> set[str]:
    probe = ("import json, sys\n"
             "from harness.cli import main\n"
             f"sys.argv = {['req2test', *argv]!r}\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_and_version_import_no_command_module() -> None:
    for argv in (["--help"], ["--version"], []):
        loaded = _modules_after(argv)
        heavy = sorted(m for m in loaded if m.startswith(HEAVY))
        assert heavy == [], (argv, heavy)


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _modules_after(["schema", "--help"])
    assert "bench.cli" in loaded
    assert not any(m.startswith(("harness.cli_run", "harness.cli_report", "litellm")) for m in loaded)


def test_every_summary_is_the_start_of_the_commands_own_help() -> None:
    real = commands()
    assert set(real) == set(COMMANDS)
    for name, command in real.items():
        first = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())
        summary = COMMANDS[name].summary
        assert re.findall(r"\w+", first)[:5] == re.findall(r"\w+", summary)[:5], (name, summary, first)
        assert command.short_help == summary  # the list reads the same once imported


def test_listing_commands_and_running_one() -> None:
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"], terminal_width=200)
    assert listing.exit_code == 0
    for name, lazy in COMMANDS.items():
        assert name in listing.output and lazy.summary[:30] in listing.output, name
    ran = runner.invoke(app, ["schema", "--help"], terminal_width=200)
    assert ran.exit_code == 0 and "JSON Schema" in ran.output
    served = runner.invoke(app, ["provider", "serve", "--help"], terminal_width=200)
    assert served.exit_code == 0 and "--script" in served.output, served.output
    typo = runner.invoke(app, ["evalute"], terminal_width=200)
    assert typo.exit_code != 0 and "evaluate" in typo.output


def test_the_root_group_is_a_typer_group() -> None:
    assert isinstance(typer.main.get_command(app), typer.core.TyperGroup)


def _leaves(group, prefix: str = ""):
    children = group.load_all() if hasattr(group, "load_all") else group.commands
    for name, command in children.items():
        if hasattr(command, "commands"):
            yield from _leaves(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_placeholders_in_help_survive_the_markdown_renderer() -> None:
    """`DIR/<project>/<feature>.md` printed as `DIR//.md` before (an HTML tag to markdown)."""
    runner = CliRunner()
    checked = 0
    for name, command in _leaves(typer.main.get_command(app)):
        shown = " ".join(runner.invoke(app, [*name.split(), "--help"], terminal_width=400).output.split())
        for text in [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]:
            for placeholder in re.findall(r"<[A-Za-z_][\w\-.]*>", text.replace("\\<", "<")):
                checked += 1
                assert placeholder in shown, (name, placeholder)
    assert checked >= 3
