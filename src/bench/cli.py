"""Command-line commands of the bench layer (mounted into ``req2test`` by harness.cli)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from bench.build.pipeline import BuildError, BuildOptions, build_dataset
from bench.dataset import DatasetError, load_dataset

console = Console(stderr=True)
out = Console()


class RichProgress:
    """Progress bars for the long stages of a build."""

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

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def fail(message: str, code: int = 2) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def build(
    source: Annotated[str, typer.Argument(help="A behave project directory, or a PyPI sdist spec NAME==VERSION.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Dataset directory to create.")],
    workers: Annotated[int, typer.Option(help="Warm runner processes; 0 = one per core.", min=0)] = 0,
    runs: Annotated[int, typer.Option(help="Repetitions of each isolation/validation run.", min=1)] = 3,
    timeout: Annotated[float, typer.Option(help="Seconds one scenario run may take.", min=1)] = 120.0,
    shared_threshold: Annotated[float, typer.Option(
        help="Production code run by the When/Then steps of more than this share of instances is "
             "shared infrastructure and stays visible in target-hidden views.", min=0.0, max=1.0)] = 0.5,
    name: Annotated[str | None, typer.Option(help="Project name in instance ids (default: from the source).")] = None,
    install_deps: Annotated[bool, typer.Option(help="pip-install the project's missing runtime dependencies.")] = False,
    mutants: Annotated[bool, typer.Option(help="Generate mutants and record ground-truth kills (stage IV).")] = True,
    force: Annotated[bool, typer.Option(help="Replace OUTPUT if it already holds a dataset.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Build benchmark instances from a real behave project.

    Parses every feature, runs each scenario alone three times in a warm in-process
    runner, records runtime step bindings, recovers and validates each scenario's
    test implementation (positive and negative workspaces), traces target interfaces,
    and writes an agent-visible instances.jsonl beside an evaluator-only gold/.

    Examples:

      req2test build examples/tinyshop -o datasets/tinyshop

      req2test build python-docx==1.2.0 -o datasets/python-docx --install-deps
    """
    options = BuildOptions(runs=runs, timeout=timeout, shared_threshold=shared_threshold, name=name,
                           install_deps=install_deps, force=force, mutants=mutants)
    if workers:
        options.workers = workers
    progress = RichProgress(enabled=not quiet and sys.stderr.isatty())
    try:
        card = build_dataset(source, output, options, progress)
    except BuildError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail("interrupted; nothing was written to the output directory", 130) from None
    finally:
        progress.close()
    console.print(f"built {output} in {sum(card.stage_seconds.values()):.1f}s")
    print_summary(output)


def summary(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the dataset card as JSON.")] = False,
) -> None:
    """Print a dataset's card: instances, exclusions with reasons, Table-2 statistics.

    Example:

      req2test summary datasets/tinyshop
    """
    if as_json:
        try:
            data = load_dataset(dataset).card
        except DatasetError as exc:
            raise fail(str(exc)) from None
        out.print_json(json.dumps(data.model_dump(mode="json")))
        return
    print_summary(dataset)


def schema(
    name: Annotated[str, typer.Argument(help="instance, gold or dataset-card.")],
) -> None:
    """Print the JSON Schema of one of the dataset's record types.

    Example:

      req2test schema instance > instance.schema.json
    """
    from bench.schema import SCHEMAS
    from bench.schema import schema as make_schema

    if name not in SCHEMAS:
        raise fail(f"unknown schema {name!r}; choose one of: {', '.join(SCHEMAS)}")
    out.print_json(json.dumps(make_schema(name)))


def print_summary(dataset_dir: Path) -> None:
    try:
        dataset = load_dataset(dataset_dir)
    except DatasetError as exc:
        raise fail(str(exc)) from None
    card = dataset.card
    for project in card.projects:
        out.print(f"[bold]{project.name} {project.version}[/]  ({project.source}, sha256 {project.source_sha256[:12]}…)")
        out.print(f"  features: {project.features_total}   scenarios: {project.scenarios_total}   "
                  f"instances: {project.instances}   groups (scored): {project.groups}")
        levels = ", ".join(f"{k} {v}" for k, v in project.test_levels.items()) or "-"
        out.print(f"  test levels: {levels}   depends_on pairs: {project.depends_on_pairs}   "
                  f"variant_of pairs: {project.variant_of_pairs}   empty target interfaces: "
                  f"{project.empty_interface_instances}")
        if project.exclusions:
            out.print("  excluded: " + ", ".join(f"{k} {v}" for k, v in project.exclusions.items()))
        table = Table("statistic", "min", "max", "mean", "total", title="per instance (Table 2)")
        for key, stat in project.statistics.items():
            table.add_row(key, f"{stat.min:g}", f"{stat.max:g}", f"{stat.mean:g}", f"{stat.total:g}")
        out.print(table)
    if card.mutation:
        m = card.mutation
        out.print(f"  mutants: {m['mutants']} ({', '.join(f'{k} {v}' for k, v in m['mutants_per_operator'].items())})")
        out.print(f"  mean pool {m['mean_pool_size']}, mean ground-truth kills {m['mean_ground_truth_kills']}, "
                  f"mean assertion-dependent kills {m['mean_assertion_dependent_kills']}, scorable instances "
                  f"{m['scorable_instances']}, fresh-process fallbacks {m['fresh_process_fallbacks']}")
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in card.stage_seconds.items())
    out.print(f"stage times: {stages}")
