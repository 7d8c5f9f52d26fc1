"""``req2test run``, ``req2test submit`` and ``req2test demo``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from bench.cli import fail
from bench.cli_options import quiet_option, workers_option
from bench.console import console, out
from bench.dataset import DatasetError
from bench.evaluate import EvaluationError
from bench.formatting import num
from bench.journal import JournalError
from bench.judging import UnsupportedByFramework
from harness.experiment.config import ExperimentError
from harness.generate import GenerateError
from harness.llm import ProviderRefused
from harness.prompts import PromptError
from harness.sandbox.base import SandboxError
from harness.views import ViewError

USER_ERRORS = (ExperimentError, DatasetError, EvaluationError, GenerateError, SandboxError, ViewError, PromptError,
               ProviderRefused, JournalError, UnsupportedByFramework)  # a task a framework does not offer (yet)


def _user_errors() -> tuple[type[BaseException], ...]:
    from harness.experiment.executors import ExecutorError

    return (*USER_ERRORS, ExecutorError)


def print_suite_outcome(outcome) -> None:
    if outcome.suites and outcome.suites[0].get("mode") == "takeover":
        table = Table(title=f"{outcome.run_dir} (takeover: done = complete delivery, F1 = relevant atoms)",
                      show_lines=False)
        table.add_column("arm", no_wrap=True)
        # narrow headers: the table must fit 80 columns (a log is not a terminal)
        for column in ("n", "build", "target", "regr.", "done", "F1", "post", "$"):
            table.add_column(column, justify="right", no_wrap=True)
        for s in outcome.suites:
            phase_a = s.get("phase_a") or {}
            table.add_row(s["config"], str(s["targets"]), num(s["build_rate"]), num(s["target_rate"]),
                          num(s["regression_rate"]), num(s["complete_rate"]), num(phase_a.get("relevant_f1")),
                          num(phase_a.get("post_state")), f"{s['cost_usd']:.2f}")
        out.print(table)
        return
    if outcome.suites and outcome.suites[0].get("mode") == "reverse":
        table = Table(title=f"{outcome.run_dir} (reverse task)", show_lines=False)
        table.add_column("configuration", no_wrap=True)
        for column in ("suites", "scenarios", "score", "all passing", "$"):
            table.add_column(column, justify="right", no_wrap=True)
        for s in outcome.suites:
            table.add_row(s["config"], str(s["suites"]), str(s["scenarios"]), num(s["score_mean"]),
                          str(s["suites_all_passing"]), f"{s['cost_usd']:.4f}")
        out.print(table)
        return
    table = Table(title=f"{outcome.run_dir} (suite mode)", show_lines=False)
    table.add_column("configuration", no_wrap=True)
    for column in ("suites", "validity", "unimpl.", "mutation", "targets", "size", "$"):
        table.add_column(column, justify="right", no_wrap=True)
    for s in outcome.suites:
        table.add_row(s["config"], str(s["suites"]), num(s["validity_mean"]), str(s["unimplemented"]),
                      num(s["mutation_score_mean"]), str(s["targets"]), num(s["size_ratio_mean"]),
                      f"{s['cost_usd']:.4f}")
    out.print(table)


def print_outcome(outcome, quiet: bool = False) -> None:
    """The run's table on stdout; with ``quiet``, not its notes (counts, report paths) on stderr."""
    if outcome.suites:
        print_suite_outcome(outcome)
        if not quiet:
            print_outcome_notes(outcome)
        return
    table = Table(title=f"{outcome.run_dir}", show_lines=False)
    width = max((len(row["config"]) for row in outcome.configs), default=10)
    table.add_column("configuration", min_width=min(width, 40), overflow="fold")
    for column in ("N", "Pass@1", "KC@1", "95% CI", "recall", "$/gen"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in outcome.configs:
        s = row["summary"]
        kc = s["kill_complete_at_1"]
        eff = s.get("efficiency") or {}
        cost = eff["cost_usd"] / s["n"] if eff.get("cost_usd") is not None and s["n"] else None
        table.add_row(row["config"], str(s["n"]), num(s["pass_at_1"]["value"]), num(kc["value"]),
                      "—" if kc["ci_low"] is None else f"{kc['ci_low']:.2f}-{kc['ci_high']:.2f}",
                      num(s["mutant_recall"]["value"]),
                      "—" if cost is None else f"{cost:.4f}")
    out.print(table)
    if not quiet:
        print_outcome_notes(outcome)


def print_outcome_notes(outcome) -> None:
    console.print(f"{outcome.generated} generation(s) run, {outcome.cached} from the cache, {outcome.seconds} s")
    for path in outcome.report:
        console.print(f"report: {path}")


def run_command(
    experiment: Annotated[Path, typer.Argument(help="An experiment file (YAML).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Run directory (resumed if it exists; "
                                                                       "default `runs/<name>`).")] = None,
    executor: Annotated[str | None, typer.Option(help="local, local:N, ray, ray:auto or ray:HOST:PORT "
                                                      "(overrides the file).")] = None,
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Only these of the file's "
                                                                          "instances (repeat).")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N of the file's instances.", min=1)] = None,
    workers: Annotated[int | None, workers_option(
        "Generations and evaluations at a time (the local executor's units) and evaluator workers",
        "the file's executor and evaluation.workers; recorded in plan.json")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Run an experiment: arms × views × instances × n candidates → generation → evaluation → report.

    The run directory gets one `configs/<arm>@<view>/` per reported configuration (best-of-n arms also
    `/single` and one per extra selector), report.md and report.html. With `mode: suite` a generation writes
    the steps of a whole feature file (instances are suite ids, `req2test suites` lists them) and each
    arm's `suites/<arm>@ah/` holds validity, mutation score on requirement-targeted mutants and suite size. Interrupt it any time: a rerun
    resumes, and finished generations and evaluations are cached by content hash.

    Example experiment file:

    ```yaml
    name: paragraph-ab
    dataset: datasets/tinyshop
    instances: {sample: 20, seed: 1}     # or all | {project: P} | {ids: [...]} | {file: ids.txt}
    views: [th]
    arms:
      - {name: plain, model: openai/gpt-5-mini}
      - {name: grounded, model: openai/gpt-5-mini, paragraphs: [grounding]}
      - {name: best3, model: openai/gpt-5-mini, paragraphs: [grounding], n: 3, selectors: [static, oracle]}
    ```

    Examples:

      req2test run experiment.yaml -o runs/ab

      req2test run experiment.yaml -o runs/smoke --limit 3   # a first look before the whole run

      req2test run experiment.yaml -o runs/ab --workers 4   # 4 generations at a time, 4 evaluator workers

      req2test compare runs/ab:plain@th runs/ab:grounded@th
    """
    from harness.experiment.runner import RunProgress, run_experiment

    progress = RunProgress(enabled=not quiet, lines=not sys.stderr.isatty())
    try:
        outcome = run_experiment(experiment, output, executor, progress, instances=instance, limit=limit,
                                 workers=workers)
    except _user_errors() as exc:
        progress.close()
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        progress.close()
        raise fail("interrupted; finished work is kept and a rerun resumes", 130) from None
    print_outcome(outcome, quiet)


def submit_command(
    run: Annotated[Path, typer.Argument(help="A run directory written by `req2test run`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Bundle directory to create.")],
    config: Annotated[list[str] | None, typer.Option("--config", "-c", help="Configurations to include (repeat); "
                                                                            "default: every arm's own.")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Package a run for benchmark submission: predictions, metadata, trajectories, ledger and results.

    Refused, with the reasons, for configurations that used the oracle selector, evaluator feedback,
    a ground-truth calibration agent or the local (non-isolating) sandbox. The bundle's manifest.json
    is validated against manifest.schema.json beside it (docs/submission.md describes every file).

    Example:

      req2test submit runs/ab -o submissions/ab
    """
    from harness.submit import SubmissionError, build_bundle

    try:
        manifest = build_bundle(run, output, config)
    except SubmissionError as exc:
        raise fail(str(exc)) from None
    if quiet:  # the bundle is the result: nothing else to say
        return
    console.print(f"bundle {output}: {len(manifest.configurations)} configuration(s), "
                  f"{sum(c.predictions for c in manifest.configurations)} prediction(s); manifest.json validated")


def demo_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Where the demo writes its dataset and runs.")]
    = Path("runs/demo"),
    dataset: Annotated[Path | None, typer.Option(help="An already built tinyshop dataset (default: build one "
                                                      "into OUTPUT/dataset, ~1 min).")] = None,
    workers: Annotated[int, workers_option(
        "Warm runners of the build and evaluator workers (generations stay one at a time: the scripted "
        "provider answers in request order)")] = 0,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Run the whole pipeline offline on the bundled example and end with the report.

    Builds the tinyshop dataset, starts a scripted model provider on loopback, and runs two
    experiments with the built-in agent in bubblewrap sandboxes: a paragraph A/B (plain vs
    grounded, plus a best-of-3 arm with static, consensus and oracle selectors beside the single
    candidate) and a control whose script ignores the paragraph. Then compares the arms with
    paired tests and writes report.md / report.html. A rerun resumes; cached work is reused.

    Example:

      req2test demo -o runs/demo && xdg-open runs/demo/ab/report.html
    """
    from bench.builder.pipeline import BuildError
    from bench.console import progress_for
    from harness.demo import run_demo
    from harness.experiment.runner import RunProgress

    progress, build_progress = RunProgress(not quiet, lines=not sys.stderr.isatty()), progress_for(quiet)
    try:
        outcome = run_demo(output, dataset, progress, build_progress, workers=workers)
    except _user_errors() + (BuildError,) as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail("interrupted; finished work is kept and a rerun resumes", 130) from None
    finally:
        progress.close()
        build_progress.close()
    print_outcome(outcome.ab, quiet)
    print_outcome(outcome.control, quiet)
    out.print(outcome.ab_comparison, markup=False, highlight=False)
    out.print(outcome.control_comparison, markup=False, highlight=False)
    if not quiet:
        console.print(f"demo summary: {outcome.summary_path}")
