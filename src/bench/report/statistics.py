"""Computing the report: per-configuration estimates with cluster-bootstrap CIs, efficiency, the
Pareto frontier, best-of-n groups, paired tests, epochs and the per-instance grid."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from bench.compare import compare
from bench.report.model import (
    INFRA,
    STAGES,
    BestOfGroup,
    BestOfRow,
    ConfigSummary,
    Efficiency,
    EpochRow,
    Estimate,
    InstanceRow,
    PairedRow,
    ProjectMetrics,
    Report,
)
from bench.runs import ConfigData
from bench.stats import cluster_bootstrap, project_average
from bench.summary import METRICS

Rows = list[dict[str, Any]]


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

