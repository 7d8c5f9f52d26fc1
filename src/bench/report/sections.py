"""What the report says, independent of the format: titled sections of text, tables and chart
keys, with the numbers formatted once, so the markdown and the HTML cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.formatting import num, pct, pp
from bench.report.model import STAGES, Estimate, LanguageGroup, Report


def money_text(value: float | None) -> str:
    """Dollars: four decimals below $10 (per-generation costs are cents), two above."""
    if value is None:
        return "—"
    return f"${value:,.4f}" if abs(value) < 10 else f"${value:,.2f}"


def _count(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def est_text(e: Estimate) -> str:
    """A rate with its 95% CI, as percentages."""
    if e.value is None:
        return "—"
    return f"{pct(e.value)} [{pct(e.ci_low)}, {pct(e.ci_high)}]"


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    numeric_from: int = 1  # columns from here on are right-aligned
    links: dict[tuple[int, int], str] = field(default_factory=dict)  # (row, column) → href, HTML only


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    chart: str | None = None  # key of an SVG chart (HTML only)


def build_sections(report: Report, links: dict[tuple[str, str], str] | None = None) -> list[Section]:
    cs = report.configs
    sections = [Section("Configurations", tables=[Table(
        ["config", "arm", "view", "role", "n", "agent", "model", "paragraphs", "submittable"],
        [[c.name, c.arm, c.view or "—", c.role if c.role != "selector" else f"selector: {c.selector}",
          str(c.candidates), c.agent or "—", c.model or "—", ", ".join(c.paragraphs) or "—",
          "yes" if not c.submission_refusals else "no"] for c in cs], numeric_from=99)])]
    sections.append(Section(
        "Headline metrics",
        text=[("Project-averaged (equal weight per project; a non-passing test scores 0). Pass@1 over N_exec, "
              "KillComplete@1 over the full N; 95% cluster-bootstrap CIs (feature files within projects). "
              "\"KC part\" is the share of Pass@1 made of kill-complete passes.")],
        tables=[Table(["config", "N", "N_exec", "Pass@1 [95% CI]", "KC part", "other passes", "KC@1 [95% CI]",
                       "API F1", "coverage J", "mutant recall"],
                      [[c.name, str(c.n), str(c.n_exec), est_text(c.pass_at_1), pct(c.kc_part_of_pass),
                        pct(None if c.pass_at_1.value is None or c.kc_part_of_pass is None
                             else c.pass_at_1.value - c.kc_part_of_pass),
                        est_text(c.kill_complete_at_1), num(c.api_f1), num(c.coverage_jaccard), num(c.mutant_recall)]
                       for c in cs])],
        chart="pass"))
    sections.append(Section("KillComplete@1 with 95% CI", chart="kc"))
    sections.append(Section("Per project", tables=[Table(
        ["config", "project", "N", "N_exec", "Pass@1", "KC@1", "API F1", "coverage J", "mutant recall"],
        [[c.name, p.project, str(p.n), str(p.n_exec), pct(p.pass_at_1), pct(p.kill_complete_at_1),
          num(p.api_f1), num(p.coverage_jaccard), num(p.mutant_recall)] for c in cs for p in c.projects],
        numeric_from=2)]))
    if report.languages:
        sections.append(Section("Across languages (shared requirements)", text=[LANGUAGES_TEXT],
                                tables=[t for group in report.languages for t in language_tables(group)]))
    sections.append(Section(
        "Outcome stages",
        text=[("First failing stage of each instance (docs/evaluation.md#outcomes-the-first-failing-stage); infrastructure failures are counted apart and "
              "excluded from N_exec.")],
        tables=[Table(["config", *[s.replace("_", " ") for s in STAGES]],
                      [[c.name, *[str(c.outcomes[s]) for s in STAGES]] for c in cs])],
        chart="outcomes"))
    sections.append(Section(
        "Efficiency",
        text=[("Means per generation (a best-of-n configuration's generation is all n candidates plus selection). "
              "Cost per pass = total cost / passes; per kill-complete pass likewise. "
              "Evaluation cost is not included.")],
        tables=[Table(["config", "cost known", "wall s", "LLM calls", "input tokens", "output tokens", "$ / generation",
                       "$ total", "$ / pass", "$ / KC pass"],
                      [[c.name, f"{c.efficiency.cost_known}/{c.efficiency.generations}",
                        num(c.efficiency.wall_seconds, 1), _count(c.efficiency.llm_calls),
                        _count(c.efficiency.input_tokens), _count(c.efficiency.output_tokens),
                        money_text(c.efficiency.cost_per_generation), money_text(c.efficiency.cost_total),
                        money_text(c.efficiency.cost_per_pass), money_text(c.efficiency.cost_per_kill_complete)]
                       for c in cs])]))
    by_name = {c.name: c for c in cs}
    frontier_text = [(f"Pareto frontier (no other configuration is at most as costly and at least as kill-complete): "
                     f"{', '.join(report.frontier) if report.frontier else 'none (no configuration has a cost)'}.")]
    if report.unknown_cost:
        frontier_text.append(f"Left off (cost unknown): {', '.join(report.unknown_cost)}.")
    sections.append(Section(
        "Cost vs KillComplete@1", text=frontier_text,
        tables=[Table(["frontier config", "$ / generation", "KC@1", "Pass@1"],
                      [[n, money_text(by_name[n].efficiency.cost_per_generation),
                        pct(by_name[n].kill_complete_at_1.value), pct(by_name[n].pass_at_1.value)]
                       for n in report.frontier])] if report.frontier else [],
        chart="scatter"))
    if report.best_of_n:
        tables = [Table(["config", "pick", "candidates", "Pass@1", "Δ Pass vs single", "KC@1", "Δ KC vs single",
                         "$ / generation"],
                        [[r.name, r.kind, str(r.candidates), pct(r.pass_at_1), pp(r.pass_delta_vs_single),
                          pct(r.kill_complete_at_1), pp(r.kc_delta_vs_single), money_text(r.cost_per_generation)]
                         for r in g.rows], numeric_from=2) for g in report.best_of_n]
        sections.append(Section(
            "Best-of-n vs single",
            text=[("Arms with several candidates: candidate 1 alone (single) against the pick of each selector. "
                  "An oracle selector uses the evaluator and is an upper bound, not a harness result.")],
            tables=tables))
    if report.paired:
        sections.append(Section(
            "Paired tests (B against A)",
            text=[("Each arm against the baseline arm of its view (the experiment's `baseline:`, else its first arm; "
                  "`req2test report --baseline ARM` chooses another), and each pick among several candidates against "
                  "its arm's first candidate alone (single), on the instances both scored. B>A / A>B count the "
                  "discordant instances; p is one-sided (H1: B is better): exact McNemar for Pass and KillComplete, "
                  "paired sign-flip for mutant recall. Differences carry 95% cluster-bootstrap CIs."),
                  *report.baselines],
            tables=[Table(["A", "B", "pairs", "Δ Pass@1 [95% CI]", "B>A / A>B", "p", "Δ KC@1 [95% CI]", "B>A / A>B",
                           "p", "Δ recall", "p"],
                          [[r.a, r.b, str(r.n_paired), _diff(r.pass_difference), f"{r.pass_b_over_a} / {r.pass_a_over_b}",
                            _pvalue(r.pass_p), _diff(r.kc_difference), f"{r.kc_b_over_a} / {r.kc_a_over_b}",
                            _pvalue(r.kc_p), num(r.recall_difference), _pvalue(r.recall_p)] for r in report.paired],
                          numeric_from=2)]))
    if report.epochs:
        sections.append(Section(
            "Epochs",
            text=[("Configurations run as independent replicates (the experiment's epochs): each epoch's rate, the "
                  "mean over epochs and the sample standard deviation between them — the spread a single run "
                  "cannot show.")],
            tables=[Table(["config", "epochs", "Pass@1 per epoch", "mean", "sd", "KC@1 per epoch", "mean", "sd"],
                          [[r.name, str(r.epochs), " ".join(pct(v) for v in r.pass_at_1), pct(r.pass_mean),
                            pp(r.pass_sd).replace("+", "±") if r.pass_sd is not None else "—",
                            " ".join(pct(v) for v in r.kill_complete_at_1), pct(r.kc_mean),
                            pp(r.kc_sd).replace("+", "±") if r.kc_sd is not None else "—"] for r in report.epochs],
                          numeric_from=1)]))
    if report.instances:
        names = [c.name for c in cs]
        table = Table(["instance", *names], [[r.instance_id, *[r.cells.get(n, "—") for n in names]]
                                            for r in report.instances], numeric_from=99)
        table.links = {(i, j + 1): href for i, r in enumerate(report.instances) for j, n in enumerate(names)
                       if (href := (links or {}).get((n, r.instance_id)))}
        sections.append(Section(
            "Per instance",
            text=[("Each instance's outcome in each configuration (·KC: kill-complete). In the HTML report an outcome "
                  "opens the instance's page: the outcome ladder, the ground-truth kills the test missed as mutant "
                  "diffs, the prompt, the trajectory and the submitted files (also `req2test show RUN INSTANCE`).")],
            tables=[table]))
    if report.notes:
        sections.append(Section("Notes", text=list(report.notes)))
    return sections


LANGUAGES_TEXT = (
    "The same configuration scored on datasets of one requirement corpus in several languages (matched by "
    "configuration name), restricted to the requirements every one of those datasets has: the requirement family "
    "of an instance is its Feature title and scenario name (whitespace-normalised, case-folded) and its number of "
    "runnable rows, never its file path (bench.families). \"shared / scored\": shared requirements of the "
    "instances the configuration scored. Pass@1 over N_exec and KC@1 with 95% cluster-bootstrap CIs; pairs of "
    "languages requirement by requirement: B>A / A>B count the discordant requirements, p is the two-sided exact "
    "McNemar test, differences (B − A) carry 95% cluster-bootstrap CIs.")


def language_tables(group: LanguageGroup) -> list[Table]:
    """A group's per-language table and its table of paired languages (the terminal prints the same)."""
    rows = Table(["config", "language", "framework", "dataset", "shared / scored", "N_exec", "Pass@1 [95% CI]",
                  "KC@1 [95% CI]"],
                 [[r.config, r.label, r.framework, r.dataset, f"{r.n} / {r.results}", str(r.n_exec),
                   est_text(r.pass_at_1), est_text(r.kill_complete_at_1)] for r in group.rows], numeric_from=4)
    pairs = Table(["config", "A", "B", "pairs", "Δ Pass@1 [95% CI]", "B>A / A>B", "p", "Δ KC@1 [95% CI]",
                   "B>A / A>B", "p"],
                  [[group.config, r.a, r.b, str(r.n_paired), _diff(r.pass_difference),
                    f"{r.pass_b_over_a} / {r.pass_a_over_b}", _pvalue(r.pass_p), _diff(r.kc_difference),
                    f"{r.kc_b_over_a} / {r.kc_a_over_b}", _pvalue(r.kc_p)] for r in group.pairs], numeric_from=3)
    return [rows, pairs]


def _diff(e: Estimate) -> str:
    return "—" if e.value is None else f"{pp(e.value)} [{pp(e.ci_low)}, {pp(e.ci_high)}]"


def _pvalue(p: float | None) -> str:
    return "—" if p is None else f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"

