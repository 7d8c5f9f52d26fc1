"""The ``req2test`` command: the bench commands and the harness commands.

The CLI lives in harness because harness may import bench, never the reverse.
"""

from __future__ import annotations

import os

import typer

from bench import cli as bench_cli
from harness.cli_agents import agents_app
from harness.cli_attribute import attribute_command
from harness.cli_generate import generate_command
from harness.cli_report import compare_command, report_command
from harness.cli_run import demo_command, run_command, submit_command
from harness.cli_show import show_command
from harness.cli_views import view_command
from harness.provider.cli import provider_serve

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


app.command("build")(bench_cli.build)
app.command("summary")(bench_cli.summary)
app.command("families")(bench_cli.families_command)
app.command("evaluate")(bench_cli.evaluate_command)
app.command("calibrate")(bench_cli.calibrate_command)
app.command("schema")(bench_cli.schema)
app.command("history")(bench_cli.history)
app.command("suites")(bench_cli.suites)
app.command("takeover")(bench_cli.takeover)
app.command("view")(view_command)
app.command("generate")(generate_command)
app.command("run")(run_command)
app.command("submit")(submit_command)
app.command("demo")(demo_command)
app.command("compare")(compare_command)
app.command("report")(report_command)
app.command("show")(show_command)
app.command("attribute")(attribute_command)
provider_app = typer.Typer(help="A scripted model provider on loopback, for testing agents offline.",
                           no_args_is_help=True, rich_markup_mode="markdown")
provider_app.command("serve")(provider_serve)
app.add_typer(provider_app, name="provider")
app.add_typer(agents_app, name="agents")


def main() -> None:
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    app()


if __name__ == "__main__":
    main()
