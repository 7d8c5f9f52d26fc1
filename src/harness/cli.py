"""The ``req2test`` command: bench commands plus (later) the harness commands.

The CLI lives in harness because harness may import bench, never the reverse.
"""

from __future__ import annotations

import os

import typer

from bench import cli as bench_cli
from harness.cli_views import view_command

app = typer.Typer(
    name="req2test",
    help="Requirement-grounded test generation: build benchmark instances from BDD projects, "
         "run agents on them, and score the tests they write.\n\n"
         "Example: req2test build examples/tinyshop -o datasets/tinyshop",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
app.command("build")(bench_cli.build)
app.command("summary")(bench_cli.summary)
app.command("evaluate")(bench_cli.evaluate_command)
app.command("calibrate")(bench_cli.calibrate_command)
app.command("schema")(bench_cli.schema)
app.command("view")(view_command)


def main() -> None:
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    app()


if __name__ == "__main__":
    main()
