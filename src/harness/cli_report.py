"""``req2test compare`` and ``req2test report``: read scored configurations from run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from bench.cli import fail
from bench.cli_options import json_option, old_spelling, quiet_option, renamed
from bench.compare import LABELS, compare, render_comparison_markdown
from bench.console import console, out
from bench.explorer import write_instance_pages
from bench.formatting import pct, pp
from bench.report import Report, build_report, render_html, render_markdown
from bench.report.sections import language_tables
from bench.runlog import read_runs
from bench.runs import RunsError, select_config


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"


def compare_command(
    a: Annotated[str, typer.Argument(help="Configuration A (the baseline) as RUN:CONFIG, or RUN when it holds one.")],
    b: Annotated[str, typer.Argument(help="Configuration B (tested as better than A) as RUN:CONFIG.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the comparison as markdown here.")]
    = None,
    as_json: Annotated[bool, json_option("the comparison")] = False,
    resamples: Annotated[int, typer.Option(help="Cluster-bootstrap resamples for the 95% CIs.", min=100)] = 2000,
    bootstrap_seed: Annotated[int | None, typer.Option(
        "--bootstrap-seed", help="Seed of the bootstrap and of Monte Carlo sign-flips (default 0).")] = None,
    old_seed: Annotated[int | None, old_spelling("--seed", "--bootstrap-seed")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Compare two configurations on the instances both scored: one-sided exact McNemar on the
    Pass and KillComplete verdicts (H1: B better than A, with the discordant counts), paired
    sign-flip tests on API F1, coverage Jaccard and mutant recall, 95% cluster-bootstrap CIs of
    Pass@1, KC@1 and their differences, and a per-project table. Significance at alpha 0.05.

    A configuration is RUN:CONFIG (a `req2test run` directory and one of its configs/, names
    like arm@th, arm@th/single) or a plain `req2test evaluate` run directory.

    Examples:

      req2test compare runs/exp1:baseline@th runs/exp1:grounded@th

      req2test compare runs/exp1:best3@th/single runs/exp1:best3@th -o best3-vs-single.md

      req2test compare runs/mini runs/mini-grounded --json
    """
    seed = renamed(bootstrap_seed, old_seed, "--seed", "--bootstrap-seed")
    try:
        config_a, config_b = select_config(a), select_config(b)
        result = compare(config_a, config_b, resamples=resamples, seed=seed or 0)
    except RunsError as exc:
        raise fail(str(exc)) from None
    if output is not None:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(render_comparison_markdown(result), encoding="utf-8")
        except OSError as exc:
            raise fail(f"{output}: cannot write ({exc.strerror})") from None
    if as_json:
        out.print_json(result.model_dump_json())
    else:
        title = (f"B = {result.b}  vs  A = {result.a}   ({result.n_paired} paired; dropped {result.only_a} only-A, "
                 f"{result.only_b} only-B)")
        table = Table("metric", "A", "B", "B − A", "B>A", "A>B", "p (B better)", "sig.", title=escape(title))
        for test in result.binary:
            interval = result.pass_at_1 if test.metric == "pass" else result.kill_complete_at_1
            label = "Pass@1" if test.metric == "pass" else "KillComplete@1"

            diff = interval["difference"]
            table.add_row(
                label, f"{pct(interval['a'].value)} [{pct(interval['a'].ci_low)}, {pct(interval['a'].ci_high)}]",
                f"{pct(interval['b'].value)} [{pct(interval['b'].ci_low)}, {pct(interval['b'].ci_high)}]",
                f"{pp(diff.value)} [{pp(diff.ci_low)}, {pp(diff.ci_high)}]",
                str(test.b_over_a), str(test.a_over_b), _p(test.p_value), "yes" if test.significant else "no")
        for cont in result.continuous:
            table.add_row(
                LABELS[cont.metric], "—" if cont.mean_a is None else f"{cont.mean_a:.3f}",
                "—" if cont.mean_b is None else f"{cont.mean_b:.3f}",
                "—" if cont.mean_difference is None else f"{cont.mean_difference:+.3f}",
                "", "", _p(cont.p_value), "yes" if cont.significant else "no")
        out.print(table)
        projects = Table("project", "N", "Pass@1 A", "Pass@1 B", "Pass B>A", "Pass A>B", "KC@1 A", "KC@1 B",
                         "KC B>A", "KC A>B", title="per project")
        for p in result.projects:
            projects.add_row(escape(p.project), str(p.n), *(f"{100 * v:.1f}%" if v is not None else "—"
                                                    for v in (p.pass_a, p.pass_b)),
                             str(p.pass_b_over_a), str(p.pass_a_over_b), f"{100 * p.kc_a:.1f}%",
                             f"{100 * p.kc_b:.1f}%", str(p.kc_b_over_a), str(p.kc_a_over_b))
        out.print(projects)
        out.print("Pass / KillComplete: one-sided exact McNemar; scores: one-sided paired sign-flip "
                  f"(instance means); alpha {result.alpha:g}.", highlight=False)
        out.print(f"[bold]verdict:[/] {escape(result.verdict)}", highlight=False)
    if output is not None and not quiet:
        console.print(f"wrote {output}")


def report_command(
    runs: Annotated[list[Path], typer.Argument(
        help="A `req2test run` directory (configs/*/) or a `req2test evaluate` one; several are reported together "
             "(e.g. one experiment per dataset of one requirement corpus).")],
    output_dir: Annotated[Path | None, typer.Option("--output", "-o",
                                                    help="Where report.md and report.html go (default: RUN; "
                                                         "needed with several runs).")]
    = None,
    title: Annotated[str | None, typer.Option(help="Report title (default: the run directory's name).")] = None,
    resamples: Annotated[int, typer.Option(help="Cluster-bootstrap resamples for the 95% CIs.", min=100)] = 2000,
    bootstrap_seed: Annotated[int, typer.Option(
        "--bootstrap-seed", help="Seed of the bootstrap and of Monte Carlo sign-flips.")] = 0,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", metavar="ARM",
        help="The arm every other arm is paired against (default: the experiment's `baseline:`, else its first "
             "arm).")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Write RUN/report.md and RUN/report.html: per configuration and project N, N_exec, Pass@1
    with its kill-complete part, KillComplete@1 with 95% CI, API F1, coverage Jaccard, mutant
    recall; the outcome stages; efficiency (time, calls, tokens, money, cost per pass and per
    kill-complete pass); cost vs KillComplete@1 with its Pareto frontier; best-of-n vs single; paired
    tests of every arm against the baseline arm (the experiment's `baseline:`, else its first arm, or
    --baseline) and of every pick among candidates against the arm's single candidate.
    The HTML is one self-contained file (inline CSS and SVG).

    Several runs are reported together, their configurations named RUN:CONFIG. Where a configuration
    of one name was scored on several datasets of one requirement corpus (the algorand SDK scenarios
    in Python, TypeScript, Go, Java), the report adds a table per language on the requirements every
    one of those datasets has, with paired tests between the languages.

    Examples:

      req2test report runs/exp1

      req2test report runs/mini -o reports/mini --title "gpt-5-mini, target-hidden"

      req2test report runs/ab --baseline grounded

      req2test report runs/cal-py runs/cal-go runs/cal-java -o reports/algorand-languages
    """
    if len(runs) > 1 and output_dir is None:
        raise fail(f"{len(runs)} runs: give --output/-o, the directory their report goes to")
    default_title = "req2test report: " + " + ".join(run.resolve().name for run in runs)
    try:
        configs = [config for run in read_runs(runs) for config in run.configs]
        report = build_report(configs, title or default_title, resamples=resamples, seed=bootstrap_seed,
                              baseline=baseline)
    except RunsError as exc:
        raise fail(str(exc)) from None
    target = output_dir if output_dir is not None else runs[0]
    try:
        target.mkdir(parents=True, exist_ok=True)
        md, page = target / "report.md", target / "report.html"
        md.write_text(render_markdown(report), encoding="utf-8")
        page.write_text(render_html(report, write_instance_pages(configs, target)), encoding="utf-8")
    except OSError as exc:
        raise fail(f"{target}: cannot write the report ({exc.strerror})") from None
    if not quiet:
        console.print(f"{len(configs)} configuration(s); frontier: {', '.join(report.frontier) or '—'}",
                      highlight=False)
    print_languages(report)
    # paths are for scripts: never wrapped at the terminal's width
    out.print(str(md), highlight=False, soft_wrap=True)
    out.print(str(page), highlight=False, soft_wrap=True)


def print_languages(report: Report) -> None:
    """The per-language tables of the report (nothing for a report of one dataset)."""
    for group in report.languages:
        titles = (f"{group.config}: {group.shared} shared requirements, per language",
                  f"{group.config}: languages paired (B − A; two-sided exact McNemar)")
        for title, section_table in zip(titles, language_tables(group)):
            table = Table(*section_table.headers[1:], title=escape(title), title_justify="left")
            for row in section_table.rows:
                table.add_row(*(escape(cell) for cell in row[1:]))
            out.print(table)
