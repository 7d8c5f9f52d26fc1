"""``req2test show``: the results explorer in the terminal."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from bench.cli import fail
from bench.cli_options import json_option, quiet_option
from bench.console import console, out
from bench.dataset import DatasetError, load_dataset
from bench.explorer import InstancePage, dataset_of, instance_page
from bench.formatting import num
from bench.model import FailureDetail, Outcome
from bench.runs import ConfigData, RunsError, load_configs, select_config, split_selection

STATUS = {"passed": "[green]passed[/]", "failed": "[bold red]failed[/]", "not reached": "[dim]not reached[/]",
          "not judged": "[dim]not judged[/]"}


def show_command(
    run: Annotated[str, typer.Argument(help="A run directory, or RUN:CONFIG for one configuration of it.")],
    instance: Annotated[str | None, typer.Argument(help="An instance id: its whole page instead of the list.")] = None,
    trajectory: Annotated[bool, typer.Option(help="With INSTANCE: print the agent's trajectory too.")] = False,
    as_json: Annotated[bool, json_option("the instances (or the instance's pages)")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Why each instance came out as it did.

    Without INSTANCE: every instance of every configuration (or of RUN:CONFIG) with its
    outcome, kill-completeness and the ground-truth kills it missed. With INSTANCE: its
    outcome ladder, the evaluator's detail, why a failing test failed (the step, traceback and
    output of its clean run), what generating it cost, the missed kills as mutant diffs
    (file:line, original → replacement), the submitted files and the prompt (--trajectory for
    every step).
    The HTML report (`req2test report`) links the same page for each instance.

    Examples:

      req2test show runs/ab

      req2test show runs/ab:plain@th tinyshop/features/cart.feature:13 --trajectory

      req2test show runs/ab --json | jq '.[].instances[] | select(.outcome != "passed")'
    """
    try:
        path, name = split_selection(run)
        configs = [select_config(run)] if name is not None else load_configs(path)
    except RunsError as exc:
        raise fail(str(exc)) from None
    if instance is None and as_json:
        out.print_json(json.dumps([{"config": config.name, "instances": _rows(config)} for config in configs]))
        return
    if instance is None:
        for config in configs:
            table = Table(title=escape(config.name), title_justify="left")
            table.add_column("instance", overflow="fold")  # ids are what `show RUN INSTANCE` takes: never cut
            metadata = config.generation_metadata()
            # what generating each test cost, where the generator recorded it (calibrations record nothing)
            costs = any(m.llm_calls is not None or m.cost_usd is not None for m in metadata.values())
            for column in ("outcome", "KC", "recall", "kills", *(("calls", "USD") if costs else ())):
                table.add_column(column, no_wrap=True)
            table.add_column("detail", overflow="fold")
            for result in config.results:
                kills = f"{result.generated_kills}/{result.ground_truth_kills}" if result.outcome is Outcome.passed \
                    else f"—/{result.ground_truth_kills}"  # a test that did not pass never met a mutant
                spent = metadata[result.instance_id]
                table.add_row(escape(result.instance_id), escape(result.outcome.value),
                              "yes" if result.kill_complete else "no", num(result.mutant_recall, 2), kills,
                              *((str(spent.llm_calls) if spent.llm_calls is not None else "—",
                                 num(spent.cost_usd, 4)) if costs else ()),
                              escape(result.detail[:120]))
            out.print(table)
        return
    found = [(config, page) for config in configs if (page := _page(config, instance)) is not None]
    if not found:
        raise fail(f"no instance {instance!r} in {run} (req2test show {run} lists them)")
    if as_json:  # the trajectory only when asked for, as on the terminal
        out.print_json(json.dumps([{**page.model_dump(mode="json", exclude=set() if trajectory else {"trajectory"}),
                                    "family": _family(config, instance)} for config, page in found]))
        return
    for config, page in found:
        _print_page(page, trajectory, _family(config, instance), quiet)


def _page(config: ConfigData, instance_id: str) -> InstancePage | None:
    try:
        return instance_page(config, instance_id)
    except KeyError:  # not an instance of this configuration
        return None


def _rows(config: ConfigData) -> list[dict[str, Any]]:
    """Each instance's line of the list, as data (--json)."""
    metadata = config.generation_metadata()
    return [{"instance_id": r.instance_id, "outcome": r.outcome.value, "kill_complete": r.kill_complete,
             "mutant_recall": r.mutant_recall, "ground_truth_kills": r.ground_truth_kills,
             # a test that did not pass never met a mutant: its kills are unknown, not 0
             "generated_kills": r.generated_kills if r.outcome is Outcome.passed else None,
             "llm_calls": metadata[r.instance_id].llm_calls, "cost_usd": metadata[r.instance_id].cost_usd,
             "detail": r.detail} for r in config.results]


def _family(config: ConfigData, instance_id: str) -> str | None:
    """The instance's requirement family (bench.families), when its dataset is where the run says."""
    path = dataset_of(config)
    try:
        return load_dataset(path).family(instance_id) if path is not None else None
    except DatasetError:
        return None


def _print_failure(failure: FailureDetail) -> None:
    """The clean run's failing step, error, traceback and output, each under a rule of its own."""
    if failure.step is not None:
        out.print(f"failing step: [bold]{escape(f'{failure.step.keyword} {failure.step.text}'.strip())}[/] "
                  f"({escape(failure.step.location)})", soft_wrap=True, highlight=False)
    for name in ("error", "traceback", "stdout", "stderr"):
        text = getattr(failure, name)
        if text:
            cut = failure.cut.get(name, 0)
            out.rule(f"{name} of the clean run" + (f" ({cut} characters cut)" if cut else ""), style="dim")
            out.print(text, markup=False, highlight=False)
    if failure.output_note and (failure.stdout or failure.stderr):
        out.print(f"[dim]{escape(failure.output_note)}[/]", soft_wrap=True)


def _print_page(page, trajectory: bool, family: str | None = None, quiet: bool = False) -> None:
    out.rule(f"{escape(page.instance_id)} · {escape(page.config)}")
    if family is not None:
        out.print(f"requirement family: {escape(family)}", soft_wrap=True, highlight=False)
    out.print(f"outcome: [bold]{escape(page.outcome)}[/]" + (f" (agent ended: {escape(page.end_reason)})"
                                                             if page.end_reason else ""))
    out.print("ladder: " + " → ".join(f"{r.stage} {STATUS[r.status]}" for r in page.ladder))
    if page.detail:
        out.print(f"detail: {escape(page.detail)}", soft_wrap=True)
    for item in page.evidence:
        out.print(f"evidence: {escape(item)}", soft_wrap=True)
    if page.failure is not None:
        _print_failure(page.failure)
    out.print("scores: " + ", ".join(f"{k} {'—' if v is None else v}" for k, v in page.metrics.items()))
    if page.generation:
        out.print("generation: " + ", ".join(f"{k} {v}" for k, v in page.generation.items()), soft_wrap=True,
                  markup=False, highlight=False)
    if page.kills_note:  # a test that did not pass never met a mutant: "0 missed" would be a false count
        out.print(f"[bold]missed ground-truth kills:[/] {escape(page.kills_note)}")
    else:
        out.print(f"[bold]missed ground-truth kills: {len(page.missed) + page.missed_unknown}[/]")
    for m in page.missed:
        out.print(f"  {m.location} in {escape(m.function)} ({m.operator}): [red]{escape(m.original)}[/] → "
                  f"[green]{escape(m.replacement)}[/]", soft_wrap=True, highlight=False)
    for path, text in sorted(page.files.items()):
        out.rule(f"file {escape(path)}", style="dim")
        out.print(text, markup=False, highlight=False)
    if not page.files and page.files_note:
        out.print(f"submitted files: {escape(page.files_note)}", soft_wrap=True)
    for event in page.prompt:
        out.rule(f"prompt: {event.kind}", style="dim")
        out.print(event.text, markup=False, highlight=False)
    if trajectory:
        for event in page.trajectory:
            out.rule(escape(event.kind), style="dim")
            out.print(event.text, markup=False, highlight=False)
    elif page.trajectory and not quiet:  # a hint, not the page: stderr
        console.print(f"[dim]{len(page.trajectory)} trajectory events: add --trajectory ({page.trajectory_file})[/]",
                      highlight=False, soft_wrap=True)
