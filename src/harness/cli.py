"""The ``req2test`` command: the bench commands and the harness commands.

The CLI lives in harness because harness may import bench, never the reverse.
"""

from __future__ import annotations

import os
import sys
from typing import cast

import typer

from harness.lazy_cli import LazyCommand, LazyGroup, lazy_group, typer_factory

# Each command's module is imported only when that command runs (``harness.lazy_cli``): --help and
# --version stay fast. The summary is what the command list shows, loaded or not.
COMMANDS: dict[str, LazyCommand] = {name: LazyCommand(target=target, summary=summary) for name, target, summary in [
    ("build", "bench.cli:build", "Build benchmark instances from a real BDD project."),
    ("summary", "bench.cli:summary", "Print a dataset's card: instances, exclusions with reasons, Table-2 statistics."),
    ("families", "bench.cli:families_command",
     "The requirement families several datasets share: the same Gherkin scenario in other repositories."),
    ("evaluate", "bench.cli:evaluate_command",
     ("Score generated test implementations: stage outcome, API-call F1, coverage Jaccard, mutant-kill recall "
      "and KillComplete@1.")),
    ("calibrate", "bench.cli:calibrate_command",
     "Evaluate three reference prediction sets made from the ground truth: oracle, empty and then-stripped."),
    ("schema", "bench.cli:schema", "Print the JSON Schema of one of the dataset's record types."),
    ("history", "bench.cli:history", "Replay a repository's history of requirement atoms (scenarios)."),
    ("suites", "bench.cli:suites", "The suite instances of a dataset (one per feature file, seed 002)."),
    ("takeover", "bench.cli:takeover", "Build takeover targets from a project's history (seed 001, ReqMemBench)."),
    ("view", "harness.cli_views:view_command", "Write the view an agent sees for one instance, then audit it."),
    ("generate", "harness.cli_generate:generate_command",
     "Run an agent on instances inside sandboxes and write RUN_DIR/predictions.jsonl."),
    ("run", "harness.cli_run:run_command",
     "Run an experiment: arms × views × instances × n candidates → generation → evaluation → report."),
    ("submit", "harness.cli_run:submit_command",
     "Package a run for benchmark submission: predictions, metadata, trajectories, ledger and results."),
    ("demo", "harness.cli_run:demo_command",
     "Run the whole pipeline offline on the bundled example and end with the report."),
    ("compare", "harness.cli_report:compare_command",
     "Compare two configurations on the instances both scored."),
    ("report", "harness.cli_report:report_command", "Write RUN/report.md and RUN/report.html."),
    ("show", "harness.cli_show:show_command", "Why each instance came out as it did."),
    ("prompts", "harness.cli_prompts:prompts_command",
     "List, print or render the prompt templates and paragraphs an experiment's arms use."),
    ("attribute", "harness.cli_attribute:attribute_command",
     "Label each failing scenario and each surviving requirement-targeted mutant of a suite configuration."),
    ("provider", "harness.cli:provider_app",
     "A scripted model provider on loopback, for testing agents offline."),
    ("agents", "harness.cli_agents:agents_app",
     "External coding agents: install on request, list what is installed."),
]}

app = typer.Typer(
    name="req2test",
    help="Requirement-grounded test generation: build benchmark instances from BDD projects, "
         "run agents on them, and score the tests they write.\n\n"
         "Example: req2test build examples/tinyshop -o datasets/tinyshop",
    cls=lazy_group(COMMANDS),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"req2test {version('req2test')}")
        except PackageNotFoundError:  # run from a source tree without installing
            print("req2test (not installed: running from a source tree)")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.",
                                       callback=_version, is_eager=True)) -> None:
    """Requirement-grounded test generation: build benchmark instances from BDD projects, run agents on
    them, and score the tests they write."""


@typer_factory
def provider_app() -> typer.Typer:
    from harness.provider.cli import provider_serve

    group = typer.Typer(help="A scripted model provider on loopback, for testing agents offline.",
                        no_args_is_help=True, rich_markup_mode="markdown")
    group.command("serve")(provider_serve)
    return group


def commands() -> dict:
    """Every top-level command, imported (for tools and tests that walk the real commands)."""
    return cast(LazyGroup, typer.main.get_command(app)).load_all()  # app's cls is a LazyGroup (lazy_group)


def main() -> None:
    from bench import stopping
    from bench.errors import UserError

    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    stopping.interrupt_on_sigterm()  # `kill`, `timeout` and CI cancellations stop a run as Ctrl-C does
    try:
        app()
    except SystemExit as exc:
        if exc.code == 130:  # interrupted: no sandbox or thread may outlive the command
            stopping.exit_interrupted()
        raise
    except UserError as exc:  # a user's mistake no command caught itself: its message, never a traceback
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
