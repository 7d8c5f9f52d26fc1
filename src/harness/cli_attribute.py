"""``req2test attribute``: why a suite-mode configuration's tests failed and its targets survived,
and what its agent's turns were spent on."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from bench.cli import fail
from bench.cli_options import quiet_option, workers_option
from bench.console import console, out
from bench.cores import per_core


def attribute_command(
    run: Annotated[Path, typer.Argument(help="A run directory of a `mode: suite` experiment.")],
    config: Annotated[str, typer.Option("--config", "-c", help="The configuration, e.g. plain@ah.")],
    model: Annotated[str | None, typer.Option(help="The judge model (litellm name); without it every label "
                                                   "is unknown and only the replays run.")] = None,
    api_base: Annotated[str | None, typer.Option(help="The provider's base URL (default $REQ2TEST_API_BASE).")] = None,
    workers: Annotated[int, workers_option("Evaluator workers for the replays")] = 0,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Label each failing scenario and each surviving requirement-targeted mutant of a suite
    configuration: test / spec_underspecified / spec_contradiction / error / unknown.

    A judge model gives the label; a replay through the evaluator must reproduce the failure (or
    the survival), else the label is unknown. Also counts the agent's actions per suite: read,
    search, write, execute. Writes suites/<config>/attribution.jsonl.

    Examples:

      req2test attribute runs/suites -c plain@ah --model openai/gpt-5-mini

      req2test attribute runs/suites -c oracle@ah          # replays only, no judge model
    """
    from bench.runs import config_dir_name
    from harness.attribution import action_profile, attribute_config, summarize_attributions
    from harness.generate import safe_name
    from harness.llm import Ledger, Limits, Model, ModelConfig

    if not (run / "plan.json").is_file():
        raise fail(f"{run}: not a run directory (no plan.json)")
    judge = None
    if model is not None:
        ledger = Ledger(run / "suites" / config_dir_name(config) / "attribution-ledger.jsonl", {"step": "attribution"})
        judge = Model(ModelConfig(model=model, api_base=api_base or os.environ.get("REQ2TEST_API_BASE")),
                      Limits(max_calls=10_000), ledger)
    try:
        labels = attribute_config(run, config, judge, workers=per_core(workers))
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    summary = summarize_attributions(labels)
    table = Table(title=f"{run}:{config} — attribution", title_justify="left")
    table.add_column("subject")
    for label in ("test", "spec_underspecified", "spec_contradiction", "error", "unknown"):
        table.add_column(label, justify="right")
    for kind, counts in summary.items():
        table.add_row(kind.replace("_", " "), *(str(v) for v in counts.values()))
    out.print(table)
    actions = Table(title="agent actions per suite", title_justify="left")
    actions.add_column("suite", overflow="fold")
    for column in ("read", "search", "write", "execute", "other"):
        actions.add_column(column, justify="right")
    generations = run / "generations" / config / "c1" / "trajectories"
    results = run / "suites" / config_dir_name(config) / "suite_results.jsonl"
    for line in results.read_text(encoding="utf-8").splitlines():
        suite_id = json.loads(line)["suite_id"]
        files = sorted((generations / safe_name(suite_id)).glob("*.jsonl"))
        profile = action_profile(files[-1]) if files else {}
        actions.add_row(suite_id, *(str(profile.get(k, 0)) for k in ("read", "search", "write", "execute", "other")))
    out.print(actions)
    if quiet:
        return
    replayed = sum(1 for a in labels if a.replay != "not_run")
    console.print(f"{len(labels)} subject(s) labelled, {replayed} replayed; "
                  f"{run / 'suites' / config_dir_name(config) / 'attribution.jsonl'}")
