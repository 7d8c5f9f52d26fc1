"""The run report: the paper's views of every configuration of a run, as markdown and as ONE
self-contained HTML file (inline CSS and SVG; no scripts, no external assets).

Views: headline metrics with 95% cluster-bootstrap CIs, per-project tables, the outcome-stage
ladder, efficiency (time, calls, tokens, money; cost per pass and per kill-complete pass), cost vs
KillComplete@1 with its Pareto frontier, and best-of-n vs single for arms with several candidates.
The output is deterministic: fixed bootstrap seeds, no timestamps.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from bench.formatting import num, pct, pp
from bench.model import Outcome
from bench.runs import ConfigData
from bench.stats import cluster_bootstrap, project_average
from bench.summary import METRICS

Rows = list[dict[str, Any]]
INFRA = Outcome.infrastructure_failure.value
STAGES = [o.value for o in Outcome]  # the ladder in order, infrastructure last
STAGE_COLORS = {"generation_failure": "#7f7f7f", "build_failure": "#d62728", "binding_failure": "#ff7f0e",
                "execution_failure": "#bcbd22", "assertion_failure": "#9467bd", "pass": "#2ca02c",
                "tampering": "#8c564b", "unstable": "#e377c2", "infrastructure_failure": "#c7c7c7"}
KC_COLOR, OTHER_PASS_COLOR = "#1b7837", "#a6dba0"


# ----------------------------------------------------------------------------- model
class Estimate(BaseModel):
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class ProjectMetrics(BaseModel):
    project: str
    n: int
    n_exec: int
    pass_at_1: float | None
    kill_complete_at_1: float | None
    api_f1: float | None
    coverage_jaccard: float | None
    mutant_recall: float | None


class Efficiency(BaseModel):
    generations: int
    cost_known: int = Field(description="generations whose metadata carries cost_usd")
    source: str = Field(description="where the metadata came from: predictions, results, mixed or none")
    wall_seconds: float | None = Field(description="mean generation wall time")
    llm_calls: float | None
    input_tokens: float | None
    output_tokens: float | None
    cost_per_generation: float | None
    cost_total: float | None
    cost_per_pass: float | None
    cost_per_kill_complete: float | None


class ConfigSummary(BaseModel):
    name: str
    run: str
    arm: str
    base: str
    view: str | None
    role: str
    selector: str | None
    candidates: int
    agent: str | None
    model: str | None
    paragraphs: list[str]
    submission_refusals: list[str]
    n: int
    n_exec: int
    passes: int
    kill_complete_passes: int
    pass_at_1: Estimate
    kc_part_of_pass: float | None = Field(description="kill-complete passes / N_exec, project-averaged")
    kill_complete_at_1: Estimate
    api_f1: float | None
    coverage_jaccard: float | None
    mutant_recall: float | None
    outcomes: dict[str, int]
    projects: list[ProjectMetrics]
    efficiency: Efficiency


class BestOfRow(BaseModel):
    name: str
    kind: str = Field(description="single, or the selector that picked among the n candidates")
    candidates: int
    pass_at_1: float | None
    kill_complete_at_1: float | None
    kc_delta_vs_single: float | None
    pass_delta_vs_single: float | None
    cost_per_generation: float | None


class BestOfGroup(BaseModel):
    base: str
    rows: list[BestOfRow]


class PairedRow(BaseModel):
    """One paired comparison: an A/B arm against the view's first arm, or a selector's pick
    against its arm's first candidate (single)."""

    a: str
    b: str
    n_paired: int
    pass_difference: Estimate = Field(description="Pass@1 of B - A, 95% cluster-bootstrap CI")
    kc_difference: Estimate
    pass_b_over_a: int
    pass_a_over_b: int
    pass_p: float = Field(description="exact one-sided McNemar, H1: B passes more often")
    kc_b_over_a: int
    kc_a_over_b: int
    kc_p: float
    recall_difference: float | None
    recall_p: float | None = Field(description="paired sign-flip, H1: B's mutant recall is higher")


class EpochRow(BaseModel):
    """One configuration over an experiment's epochs: each replicate's rate, their mean and spread."""

    name: str = Field(description="the configuration without its #eK")
    epochs: int
    pass_at_1: list[float | None]
    kill_complete_at_1: list[float | None]
    pass_mean: float | None
    pass_sd: float | None
    kc_mean: float | None
    kc_sd: float | None


class InstanceRow(BaseModel):
    """One instance across the configurations: its outcome in each (``pass·KC`` when kill-complete)."""

    instance_id: str
    cells: dict[str, str] = Field(default_factory=dict, description="config name → outcome")


class Report(BaseModel):
    title: str
    runs: list[str]
    configs: list[ConfigSummary]
    frontier: list[str] = Field(description="configs on the cost vs KC@1 Pareto frontier, by cost")
    unknown_cost: list[str] = Field(description="configs left off the frontier: no cost recorded")
    best_of_n: list[BestOfGroup]
    paired: list[PairedRow] = Field(default_factory=list, description="B against A on the instances both scored")
    instances: list[InstanceRow] = Field(default_factory=list)
    epochs: list[EpochRow] = Field(default_factory=list)
    bootstrap: dict[str, Any]
    notes: list[str]


# ----------------------------------------------------------------------------- computing
def _kc_part(rows: Rows) -> float | None:
    executed = [r for r in rows if r["outcome"] != INFRA]
    return sum(1 for r in executed if r["outcome"] == "pass" and r["kill_complete"]) / len(executed) \
        if executed else None


def _r(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


def _estimate(rows: Rows, metric: Callable[[Rows], float | None], resamples: int, seed: int) -> Estimate:
    value = project_average(rows, metric)
    if value is None:
        return Estimate(value=None)
    interval = cluster_bootstrap(rows, metric, resamples=resamples, seed=seed, bounded_n=len(rows))
    return Estimate(value=_r(value), ci_low=_r(interval and interval[0]), ci_high=_r(interval and interval[1]))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _efficiency(config: ConfigData, passes: int, kc: int) -> Efficiency:
    metas = config.generation_metadata()
    from_predictions = sum(1 for r in config.results if r.instance_id in config.predictions)
    source = ("none" if not metas else "predictions" if from_predictions == len(metas)
              else "results" if from_predictions == 0 else "mixed")

    def values(key: str) -> list[float]:
        return [float(v) for m in metas.values() if (v := getattr(m, key)) is not None]

    costs = values("cost_usd")
    total = sum(costs) if costs else None
    return Efficiency(
        generations=len(metas), cost_known=len(costs), source=source,
        wall_seconds=_r(_mean(values("wall_seconds"))), llm_calls=_r(_mean(values("llm_calls"))),
        input_tokens=_r(_mean(values("input_tokens"))), output_tokens=_r(_mean(values("output_tokens"))),
        cost_per_generation=_r(_mean(costs)), cost_total=_r(total),
        cost_per_pass=_r(total / passes) if total is not None and passes else None,
        cost_per_kill_complete=_r(total / kc) if total is not None and kc else None)


def _summarize(config: ConfigData, resamples: int, seed: int) -> ConfigSummary:
    rows = config.rows()
    record = config.record
    by_project: dict[str, Rows] = defaultdict(list)
    for row in rows:
        by_project[row["project"]].append(row)
    projects = []
    for project, prow in sorted(by_project.items()):
        projects.append(ProjectMetrics(
            project=project, n=len(prow), n_exec=sum(1 for r in prow if r["outcome"] != INFRA),
            **{key: _r(METRICS[key](prow)) for key in ("pass_at_1", "kill_complete_at_1", "api_f1",
                                                        "coverage_jaccard", "mutant_recall")}))
    passes = sum(1 for r in rows if r["outcome"] == "pass")
    kc = sum(1 for r in rows if r["outcome"] == "pass" and r["kill_complete"])
    return ConfigSummary(
        name=config.name, run=config.run, arm=record.arm, base=record.base, view=record.view, role=record.role,
        selector=record.selector, candidates=record.n, agent=record.agent, model=record.model,
        paragraphs=list(record.paragraphs), submission_refusals=list(record.submission_refusals),
        n=len(rows), n_exec=sum(1 for r in rows if r["outcome"] != INFRA), passes=passes,
        kill_complete_passes=kc,
        pass_at_1=_estimate(rows, METRICS["pass_at_1"], resamples, seed),
        kc_part_of_pass=_r(project_average(rows, _kc_part)),
        kill_complete_at_1=_estimate(rows, METRICS["kill_complete_at_1"], resamples, seed),
        api_f1=_r(project_average(rows, METRICS["api_f1"])),
        coverage_jaccard=_r(project_average(rows, METRICS["coverage_jaccard"])),
        mutant_recall=_r(project_average(rows, METRICS["mutant_recall"])),
        outcomes={stage: sum(1 for r in rows if r["outcome"] == stage) for stage in STAGES},
        projects=projects, efficiency=_efficiency(config, passes, kc))


def pareto_frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names not dominated in (cost: lower is better, score: higher is better), sorted by cost then name.
    Y dominates X when cost_Y <= cost_X and score_Y >= score_X with one of them strict."""
    frontier = []
    for name, (cost, score) in points.items():
        dominated = any(oc <= cost and os_ >= score and (oc < cost or os_ > score)
                        for other, (oc, os_) in points.items() if other != name)
        if not dominated:
            frontier.append(name)
    return sorted(frontier, key=lambda n: (points[n][0], -points[n][1], n))


def _best_of_n(summaries: list[ConfigSummary]) -> list[BestOfGroup]:
    groups: dict[str, list[ConfigSummary]] = defaultdict(list)
    for s in summaries:
        groups[s.base].append(s)
    out = []
    for base, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        order = {"single": 0, "arm": 1, "selector": 2}
        members.sort(key=lambda s: (order.get(s.role, 3), s.name))
        single = next((s for s in members if s.role == "single"), None)
        group_n = max(s.candidates for s in members)  # a selector's config.json may omit n; the arm's holds it
        rows = []
        for s in members:
            kind = "single" if s.role == "single" else (s.selector or ("primary" if s.role == "arm" else s.role))
            kc, ps = s.kill_complete_at_1.value, s.pass_at_1.value
            rows.append(BestOfRow(
                name=s.name, kind=kind, candidates=1 if s.role == "single" else group_n,
                pass_at_1=ps, kill_complete_at_1=kc,
                kc_delta_vs_single=_r(kc - single.kill_complete_at_1.value)
                if single and kc is not None and single.kill_complete_at_1.value is not None else None,
                pass_delta_vs_single=_r(ps - single.pass_at_1.value)
                if single and ps is not None and single.pass_at_1.value is not None else None,
                cost_per_generation=s.efficiency.cost_per_generation))
        out.append(BestOfGroup(base=base, rows=rows))
    return out


def build_report(configs: list[ConfigData], title: str, resamples: int = 2000, seed: int = 0) -> Report:
    """Every view of the report, computed once (render_markdown / render_html only format)."""
    summaries = [_summarize(c, resamples, seed) for c in configs]
    points = {s.name: (s.efficiency.cost_per_generation, s.kill_complete_at_1.value) for s in summaries
              if s.efficiency.cost_per_generation is not None and s.kill_complete_at_1.value is not None}
    unknown = [s.name for s in summaries if s.efficiency.cost_per_generation is None]
    notes = []
    if unknown:
        notes.append(f"No cost recorded for {', '.join(unknown)}: shown as — and left off the Pareto frontier.")
    partial = [s for s in summaries if 0 < s.efficiency.cost_known < s.efficiency.generations]
    for s in partial:
        notes.append(f"{s.name}: cost recorded for {s.efficiency.cost_known} of {s.efficiency.generations} "
                     f"generations; cost figures cover those only.")
    from_results = [s.name for s in summaries if s.efficiency.source == "results"]
    if from_results:
        notes.append(f"No predictions.jsonl beside {', '.join(from_results)}: generation metadata read from the "
                     f"copy `req2test evaluate` stores in each result.")
    refused = [s for s in summaries if s.submission_refusals]
    for s in refused:
        notes.append(f"{s.name} may not be submitted: {'; '.join(s.submission_refusals)}.")
    return Report(title=title, runs=sorted({c.run for c in configs}), configs=summaries,
                  frontier=pareto_frontier(points),  # type: ignore[arg-type]
                  unknown_cost=unknown, best_of_n=_best_of_n(summaries),
                  paired=_paired(configs, resamples, seed), instances=_instance_rows(configs),
                  epochs=_epochs(summaries, configs),
                  bootstrap={"resamples": resamples, "seed": seed, "cluster": "feature file within project",
                             "level": 0.95},
                  notes=notes)


MAX_PAIRS = 24


def _epochs(summaries: list[ConfigSummary], configs: list[ConfigData]) -> list[EpochRow]:
    families: dict[str, list[ConfigSummary]] = defaultdict(list)
    for summary, config in zip(summaries, configs):
        if config.record.epoch is not None:
            families[re.sub(r"#e\d+", "", summary.name)].append(summary)
    rows = []
    for name, members in families.items():
        passes = [m.pass_at_1.value for m in members]
        kcs = [m.kill_complete_at_1.value for m in members]
        rows.append(EpochRow(name=name, epochs=len(members), pass_at_1=passes, kill_complete_at_1=kcs,
                             pass_mean=_mean_of(passes), pass_sd=_sd_of(passes), kc_mean=_mean_of(kcs),
                             kc_sd=_sd_of(kcs)))
    return rows


def _mean_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return _r(sum(known) / len(known)) if known else None


def _sd_of(values: list[float | None]) -> float | None:
    """Sample standard deviation across epochs (None below two)."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return None
    mean = sum(known) / len(known)
    return _r(math.sqrt(sum((v - mean) ** 2 for v in known) / (len(known) - 1)))


def _instance_rows(configs: list[ConfigData]) -> list[InstanceRow]:
    rows: dict[str, InstanceRow] = {}
    for config in configs:
        for result in config.results:
            row = rows.setdefault(result.instance_id, InstanceRow(instance_id=result.instance_id))
            row.cells[config.name] = result.outcome.value + ("·KC" if result.kill_complete else "")
    return list(rows.values())


def _paired(configs: list[ConfigData], resamples: int, seed: int) -> list[PairedRow]:
    """A/B arms against the first arm of their view; selectors against their arm's single."""
    from bench.compare import compare

    pairs: list[tuple[ConfigData, ConfigData]] = []
    first_arm: dict[tuple[str | None, int | None], ConfigData] = {}  # per view and epoch
    singles = {(c.record.arm, c.record.view, c.record.epoch): c for c in configs if c.record.role == "single"}
    for config in configs:
        record = config.record
        if record.role == "arm":
            if (record.view, record.epoch) in first_arm:
                pairs.append((first_arm[(record.view, record.epoch)], config))
            else:
                first_arm[(record.view, record.epoch)] = config
        elif record.role == "selector" and (record.arm, record.view, record.epoch) in singles:
            pairs.append((singles[(record.arm, record.view, record.epoch)], config))
    rows = []
    for a, b in pairs[:MAX_PAIRS]:
        if not {r.instance_id for r in a.results} & {r.instance_id for r in b.results}:
            continue
        c = compare(a, b, resamples=resamples, seed=seed)
        passes, kcs = (next(t for t in c.binary if t.metric == m) for m in ("pass", "kill_complete"))
        recall = next((t for t in c.continuous if t.metric == "mutant_recall"), None)
        rows.append(PairedRow(
            a=a.name, b=b.name, n_paired=c.n_paired,
            pass_difference=Estimate(**c.pass_at_1["difference"].model_dump()),
            kc_difference=Estimate(**c.kill_complete_at_1["difference"].model_dump()),
            pass_b_over_a=passes.b_over_a, pass_a_over_b=passes.a_over_b, pass_p=passes.p_value,
            kc_b_over_a=kcs.b_over_a, kc_a_over_b=kcs.a_over_b, kc_p=kcs.p_value,
            recall_difference=recall.mean_difference if recall is not None and recall.n else None,
            recall_p=recall.p_value if recall is not None and recall.n else None))
    return rows


# ----------------------------------------------------------------------------- formatting


def _money(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:,.4f}" if abs(value) < 10 else f"${value:,.2f}"


def _count(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _est(e: Estimate) -> str:
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


def _sections(report: Report, links: dict[tuple[str, str], str] | None = None) -> list[Section]:
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
                      [[c.name, str(c.n), str(c.n_exec), _est(c.pass_at_1), pct(c.kc_part_of_pass),
                        pct(None if c.pass_at_1.value is None or c.kc_part_of_pass is None
                             else c.pass_at_1.value - c.kc_part_of_pass),
                        _est(c.kill_complete_at_1), num(c.api_f1), num(c.coverage_jaccard), num(c.mutant_recall)]
                       for c in cs])],
        chart="pass"))
    sections.append(Section("KillComplete@1 with 95% CI", chart="kc"))
    sections.append(Section("Per project", tables=[Table(
        ["config", "project", "N", "N_exec", "Pass@1", "KC@1", "API F1", "coverage J", "mutant recall"],
        [[c.name, p.project, str(p.n), str(p.n_exec), pct(p.pass_at_1), pct(p.kill_complete_at_1),
          num(p.api_f1), num(p.coverage_jaccard), num(p.mutant_recall)] for c in cs for p in c.projects],
        numeric_from=2)]))
    sections.append(Section(
        "Outcome stages",
        text=[("First failing stage of each instance (SPEC §3); infrastructure failures are counted apart and "
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
                        _money(c.efficiency.cost_per_generation), _money(c.efficiency.cost_total),
                        _money(c.efficiency.cost_per_pass), _money(c.efficiency.cost_per_kill_complete)]
                       for c in cs])]))
    by_name = {c.name: c for c in cs}
    frontier_text = [(f"Pareto frontier (no other configuration is at most as costly and at least as kill-complete): "
                     f"{', '.join(report.frontier) if report.frontier else 'none (no configuration has a cost)'}.")]
    if report.unknown_cost:
        frontier_text.append(f"Left off (cost unknown): {', '.join(report.unknown_cost)}.")
    sections.append(Section(
        "Cost vs KillComplete@1", text=frontier_text,
        tables=[Table(["frontier config", "$ / generation", "KC@1", "Pass@1"],
                      [[n, _money(by_name[n].efficiency.cost_per_generation),
                        pct(by_name[n].kill_complete_at_1.value), pct(by_name[n].pass_at_1.value)]
                       for n in report.frontier])] if report.frontier else [],
        chart="scatter"))
    if report.best_of_n:
        tables = [Table(["config", "pick", "candidates", "Pass@1", "Δ Pass vs single", "KC@1", "Δ KC vs single",
                         "$ / generation"],
                        [[r.name, r.kind, str(r.candidates), pct(r.pass_at_1), pp(r.pass_delta_vs_single),
                          pct(r.kill_complete_at_1), pp(r.kc_delta_vs_single), _money(r.cost_per_generation)]
                         for r in g.rows], numeric_from=2) for g in report.best_of_n]
        sections.append(Section(
            "Best-of-n vs single",
            text=[("Arms with several candidates: candidate 1 alone (single) against the pick of each selector. "
                  "An oracle selector uses the evaluator and is an upper bound, not a harness result.")],
            tables=tables))
    if report.paired:
        sections.append(Section(
            "Paired tests (B against A)",
            text=[("Each A/B arm against the first arm of its view, and each selector's pick against its arm's first "
                  "candidate, on the instances both scored. B>A / A>B count the discordant instances; p is one-sided "
                  "(H1: B is better): exact McNemar for Pass and KillComplete, paired sign-flip for mutant recall. "
                  "Differences carry 95% cluster-bootstrap CIs.")],
            tables=[Table(["A", "B", "pairs", "Δ Pass@1 [95% CI]", "B>A / A>B", "p", "Δ KC@1 [95% CI]", "B>A / A>B",
                           "p", "Δ recall", "p"],
                          [[r.a, r.b, str(r.n_paired), _diff(r.pass_difference), f"{r.pass_b_over_a} / {r.pass_a_over_b}",
                            _pvalue(r.pass_p), _diff(r.kc_difference), f"{r.kc_b_over_a} / {r.kc_a_over_b}",
                            _pvalue(r.kc_p), num(r.recall_difference), _pvalue(r.recall_p)] for r in report.paired],
                          numeric_from=2)]))
    if report.epochs:
        sections.append(Section(
            "Epochs",
            text=["Configurations run as independent replicates (the experiment's epochs): each epoch's rate, the "
                  "mean over epochs and the sample standard deviation between them — the spread a single run "
                  "cannot show."],
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
            text=["Each instance's outcome in each configuration (·KC: kill-complete). In the HTML report an outcome "
                  "opens the instance's page: the outcome ladder, the ground-truth kills the test missed as mutant "
                  "diffs, the prompt, the trajectory and the submitted files (also `req2test show RUN INSTANCE`)."],
            tables=[table]))
    if report.notes:
        sections.append(Section("Notes", text=list(report.notes)))
    return sections


def _diff(e: Estimate) -> str:
    return "—" if e.value is None else f"{pp(e.value)} [{pp(e.ci_low)}, {pp(e.ci_high)}]"


def _pvalue(p: float | None) -> str:
    return "—" if p is None else f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    lines = [f"# {report.title}", "", (f"Runs: {', '.join(report.runs)}. Bootstrap: {report.bootstrap['resamples']} "
             f"resamples, seed {report.bootstrap['seed']}, clusters = {report.bootstrap['cluster']}."), ""]
    for section in _sections(report):
        if section.chart and not section.tables and not section.text:
            continue  # chart-only sections exist in the HTML
        lines += [f"## {section.title}", ""]
        for text in section.text:
            lines += [text, ""]
        for table in section.tables:
            lines.append("| " + " | ".join(_md_cell(h) for h in table.headers) + " |")
            lines.append("|" + "|".join("---:" if i >= table.numeric_from else "---"
                                        for i in range(len(table.headers))) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# ----------------------------------------------------------------------------- SVG
def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}"


def _label_width(names: list[str]) -> int:
    return min(400, 16 + int(7.5 * max((len(n) for n in names), default=4)))


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{_e(label)}">' + "".join(body) + "</svg>")


def _percent_axis(x0: float, width: float, y: float, top: float) -> list[str]:
    out = []
    for tick in (0, 25, 50, 75, 100):
        x = x0 + width * tick / 100
        out.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(y)}" class="grid"/>')
        out.append(f'<text x="{_f(x)}" y="{_f(y + 14)}" class="tick" text-anchor="middle">{tick}%</text>')
    return out


def _chart_pass(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 28
    height = top + rh * len(cs) + 24
    body = [(f'<rect x="{lw}" y="4" width="12" height="12" fill="{KC_COLOR}"/>'
            f'<text x="{lw + 16}" y="14" class="tick">kill-complete passes</text>'
            f'<rect x="{lw + 170}" y="4" width="12" height="12" fill="{OTHER_PASS_COLOR}"/>'
            f'<text x="{lw + 186}" y="14" class="tick">other passes</text>')]
    body += _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 4
        total = c.pass_at_1.value or 0.0
        kc = min(c.kc_part_of_pass or 0.0, total)
        body.append(f'<text x="{lw - 6}" y="{_f(y + 12)}" text-anchor="end" class="label">{_e(c.name)}</text>')
        body.append(f'<rect x="{lw}" y="{_f(y)}" width="{_f(bw * kc)}" height="16" fill="{KC_COLOR}">'
                    f'<title>{_e(c.name)}: kill-complete passes {pct(kc)}</title></rect>')
        body.append(f'<rect x="{_f(lw + bw * kc)}" y="{_f(y)}" width="{_f(bw * (total - kc))}" height="16" '
                    f'fill="{OTHER_PASS_COLOR}"><title>{_e(c.name)}: other passes {pct(total - kc)}</title></rect>')
        body.append(f'<text x="{_f(lw + bw * total + 4)}" y="{_f(y + 12)}" class="tick">{pct(c.pass_at_1.value)}'
                    f'</text>')
    return _svg(lw + bw + 60, height, body, "Pass@1 split into kill-complete and other passes")


def _chart_kc(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 10
    body = _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 12
        body.append(f'<text x="{lw - 6}" y="{_f(y + 4)}" text-anchor="end" class="label">{_e(c.name)}</text>')
        e = c.kill_complete_at_1
        if e.value is None:
            continue
        lo, hi = e.ci_low or 0.0, e.ci_high or 0.0
        body.append(f'<line x1="{_f(lw + bw * lo)}" y1="{_f(y)}" x2="{_f(lw + bw * hi)}" y2="{_f(y)}" '
                    f'stroke="#333" stroke-width="2"/>')
        body.append(f'<circle cx="{_f(lw + bw * e.value)}" cy="{_f(y)}" r="5" fill="{KC_COLOR}">'
                    f'<title>{_e(c.name)}: {_est(e)}</title></circle>')
        body.append(f'<text x="{_f(lw + bw * hi + 6)}" y="{_f(y + 4)}" class="tick">{_est(e)}</text>')
    return _svg(lw + bw + 170, top + rh * len(cs) + 24, body, "KillComplete@1 with 95% CI")


def _chart_outcomes(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 48
    body = []
    for i, stage in enumerate(STAGES):
        lx, ly = 8 + (i % 4) * 140, 4 + (i // 4) * 18
        body.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{STAGE_COLORS[stage]}"/>'
                    f'<text x="{lx + 16}" y="{ly + 10}" class="tick">{_e(stage.replace("_", " "))}</text>')
    body += _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 4
        body.append(f'<text x="{lw - 6}" y="{_f(y + 12)}" text-anchor="end" class="label">{_e(c.name)}</text>')
        x = float(lw)
        total = sum(c.outcomes.values())
        for stage in STAGES:
            count = c.outcomes[stage]
            if not count or not total:
                continue
            w = bw * count / total
            body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="16" fill="{STAGE_COLORS[stage]}">'
                        f'<title>{_e(c.name)}: {_e(stage)} {count}</title></rect>')
            x += w
    return _svg(max(lw + bw + 20, 8 + 4 * 140), top + rh * len(cs) + 24, body, "Outcome stages per configuration")


def _nice_step(value: float) -> tuple[float, int]:
    """Smallest 1/2/5 x 10^k at or above value (an axis tick step), and the decimals it needs."""
    if value <= 0:
        return 1.0, 0
    exp = math.floor(math.log10(value))
    for mantissa in (1, 2, 5, 10):
        if mantissa * 10.0 ** exp >= value:
            step_exp = exp + 1 if mantissa == 10 else exp
            return round(mantissa * 10.0 ** exp, 12), max(0, -step_exp)
    raise AssertionError("unreachable")


def _place(label: str, x: float, y: float, placed: list[tuple[float, float, float]]) -> float:
    """A y for a point label that does not overlap the labels already placed (12 px lines)."""
    width = 6.5 * len(label)
    while any(abs(y - py) < 12 and x < px + pw and px < x + width for px, py, pw in placed):
        y += 12
    placed.append((x, y, width))
    return y


def _chart_scatter(report: Report) -> str:
    points = [(c.name, c.efficiency.cost_per_generation, c.kill_complete_at_1.value) for c in report.configs
              if c.efficiency.cost_per_generation is not None and c.kill_complete_at_1.value is not None]
    if not points:
        return ""
    left, top, pw, ph = 70, 16, 460, 280
    xstep, xdigits = _nice_step(max(p[1] for p in points) * 1.1 / 4)  # type: ignore[operator]
    ystep, _ = _nice_step(max(p[2] for p in points) * 1.1 / 4)  # type: ignore[operator]
    xmax = 4 * xstep
    ymax = min(1.0, 4 * ystep)

    def sx(v: float) -> float:
        return left + pw * v / xmax

    def sy(v: float) -> float:
        return top + ph - ph * v / ymax

    body = [f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for k in range(5):
        xv, yv = xmax * k / 4, ymax * k / 4
        body.append(f'<line x1="{_f(sx(xv))}" y1="{top}" x2="{_f(sx(xv))}" y2="{top + ph}" class="grid"/>')
        body.append(f'<text x="{_f(sx(xv))}" y="{top + ph + 14}" text-anchor="middle" class="tick">'
                    f'${xv:,.{max(2, xdigits)}f}</text>')
        body.append(f'<line x1="{left}" y1="{_f(sy(yv))}" x2="{left + pw}" y2="{_f(sy(yv))}" class="grid"/>')
        body.append(f'<text x="{left - 4}" y="{_f(sy(yv) + 4)}" text-anchor="end" class="tick">{pct(yv)}</text>')
    body.append(f'<text x="{left + pw / 2}" y="{top + ph + 32}" text-anchor="middle" class="label">'
                f'cost per generation (USD)</text>')
    body.append(f'<text x="14" y="{top + ph / 2}" text-anchor="middle" class="label" '
                f'transform="rotate(-90 14 {top + ph / 2})">KillComplete@1</text>')
    by_name = {p[0]: p for p in points}
    front = [by_name[n] for n in report.frontier if n in by_name]
    if front:
        # staircase: what is reachable for a budget is the best KC at or below it
        coords = [(sx(front[0][1]), sy(front[0][2]))]  # type: ignore[arg-type]
        for prev, cur in itertools.pairwise(front):
            coords.append((sx(cur[1]), sy(prev[2])))  # type: ignore[arg-type]
            coords.append((sx(cur[1]), sy(cur[2])))  # type: ignore[arg-type]
        body.append('<polyline fill="none" stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3" points="'
                    + " ".join(f"{_f(x)},{_f(y)}" for x, y in coords) + '"/>')
    on_front = set(report.frontier)
    placed: list[tuple[float, float, float]] = []
    for name, cost, kc in sorted(points, key=lambda p: (-p[2], p[1], p[0])):  # type: ignore[operator]
        x, y = sx(cost), sy(kc)  # type: ignore[arg-type]
        fill = "#d62728" if name in on_front else "#1f77b4"
        body.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="5" fill="{fill}"><title>{_e(name)}: '
                    f'{_e(_money(cost))} per generation, KC@1 {pct(kc)}</title></circle>')
        label_y = _place(name, x + 7, y - 6, placed)
        body.append(f'<text x="{_f(x + 7)}" y="{_f(label_y)}" class="tick">{_e(name)}</text>')
    body.append(f'<text x="{left + pw + 12}" y="{top + 12}" class="tick"><tspan fill="#d62728">●</tspan> '
                f'on the frontier</text><text x="{left + pw + 12}" y="{top + 28}" class="tick">'
                f'<tspan fill="#1f77b4">●</tspan> dominated</text>')
    return _svg(left + pw + 200, top + ph + 44, body, "Cost per generation vs KillComplete@1 with Pareto frontier")


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
color:#222;padding:0 1rem;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}
svg{display:block;margin:.5rem 0;max-width:100%;height:auto}
svg .label{font-size:12px;fill:#222}svg .tick{font-size:11px;fill:#444}svg .grid{stroke:#e4e4e4}
p.meta{color:#666;font-size:.85rem}
""".strip()


def render_html(report: Report, links: dict[tuple[str, str], str] | None = None) -> str:
    """``links``: (config, instance) → href of the instance's explorer page (write_instance_pages)."""
    charts = {"pass": _chart_pass, "kc": _chart_kc, "outcomes": _chart_outcomes, "scatter": _chart_scatter}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{_e(report.title)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>{_e(report.title)}</h1>",
             (f'<p class="meta">Runs: {_e(", ".join(report.runs))}. Bootstrap: {report.bootstrap["resamples"]} '
             f'resamples, seed {report.bootstrap["seed"]}, clusters = {_e(report.bootstrap["cluster"])}.</p>')]
    for section in _sections(report, links):
        parts.append(f"<h2>{_e(section.title)}</h2>")
        for text in section.text:
            parts.append(f"<p>{_e(text)}</p>")
        if section.chart:
            svg = charts[section.chart](report)
            if svg:
                parts.append(svg)
        for table in section.tables:
            parts.append("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in table.headers)
                         + "</tr></thead><tbody>")
            for r, row in enumerate(table.rows):
                cells = [f'<a href="{_e(table.links[(r, i)])}">{_e(c)}</a>' if (r, i) in table.links else _e(c)
                         for i, c in enumerate(row)]
                parts.append("<tr>" + "".join(
                    f'<td class="num">{c}</td>' if i >= table.numeric_from else f"<td>{c}</td>"
                    for i, c in enumerate(cells)) + "</tr>")
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
