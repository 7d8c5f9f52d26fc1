"""Computing the report: per-configuration estimates with cluster-bootstrap CIs, efficiency, the
Pareto frontier, best-of-n groups, paired tests, epochs, the per-instance grid and, for configurations
scored on several datasets of one requirement corpus, the per-language table."""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.compare import compare
from bench.dataset import Dataset, DatasetError, load_dataset
from bench.families import language, shared_families, unique_families
from bench.model import InstanceResult
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
    LanguageGroup,
    LanguagePair,
    LanguageRow,
    PairedRow,
    ProjectMetrics,
    Report,
)
from bench.runlog import ArmOrder, arm_order, dataset_dir
from bench.runs import ConfigData, RunsError
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
    groups: dict[tuple[str, str], list[ConfigSummary]] = defaultdict(list)
    for s in summaries:
        groups[(s.run, s.base)].append(s)  # the same arm in two runs reported together is two groups
    out = []
    for (_, base), members in sorted(groups.items()):
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


def build_report(configs: list[ConfigData], title: str, resamples: int = 2000, seed: int = 0,
                 baseline: str | None = None) -> Report:
    """Every view of the report, computed once (render_markdown / render_html only format).

    ``baseline``: the arm the paired tests compare every other arm against, instead of the one each run
    directory records (``bench.runlog.arm_order``); an arm no configuration has is a one-line RunsError."""
    arms = list(dict.fromkeys(c.record.arm for c in configs if c.record.role == "arm"))
    if baseline is not None and baseline not in arms:
        raise RunsError(f"baseline {baseline!r} is not an arm of the report; arms: {', '.join(arms)}")
    summaries = [_summarize(c, resamples, seed) for c in configs]
    datasets = {c.name: _resolved(dataset_dir(c)) for c in configs}
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
    languages: list[LanguageGroup] = []
    if len({d for d in datasets.values() if d is not None}) > 1:  # a report of one dataset has no such table
        languages = language_groups(configs, datasets, resamples, seed, notes)
    pairs, baselines = paired_configs(configs, datasets, baseline, notes)
    return Report(title=title, runs=sorted({c.run for c in configs}), configs=summaries,
                  frontier=pareto_frontier(points),  # type: ignore[arg-type]
                  unknown_cost=unknown, best_of_n=_best_of_n(summaries),
                  paired=_paired(pairs, resamples, seed, notes), baselines=baselines,
                  instances=_instance_rows(configs),
                  epochs=_epochs(summaries, configs), languages=languages,
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


Group = tuple[Path | None, str | None, int | None]  # the arms compared with each other: per dataset, view, epoch


def paired_configs(configs: list[ConfigData], datasets: dict[str, Path | None] | None = None,
                   baseline: str | None = None, notes: list[str] | None = None,
                   ) -> tuple[list[tuple[ConfigData, ConfigData]], list[str]]:
    """Which configurations the report pairs (A, B), and each group's baseline as the report says it.

    Every arm against its group's baseline arm (within a dataset, view and epoch; ``datasets`` maps a
    configuration to the dataset it was scored on when several runs are reported together), in the
    experiment's arm order; then every pick among several candidates (an arm's first selector, each further
    selector) against its arm's first candidate alone (``/single``). The baseline is ``baseline`` (an arm's
    name) where given, else the arm the run records (``bench.runlog.arm_order``: the experiment's ``baseline:``
    or first arm), else — a directory that records none, e.g. evaluate outputs passed by hand — the group's
    first configuration, a fallback the notes name."""
    notes = notes if notes is not None else []
    orders: dict[str, ArmOrder | None] = {}

    def order(config: ConfigData) -> ArmOrder | None:
        if config.run not in orders:
            orders[config.run] = arm_order(Path(config.run))
        return orders[config.run]

    def rank(config: ConfigData) -> int:
        known = order(config)
        if known is None:
            return 0  # no recorded order: the configurations' own
        return known.arms.index(config.record.arm) if config.record.arm in known.arms else len(known.arms)

    groups: dict[Group, list[ConfigData]] = defaultdict(list)
    for config in configs:
        if config.record.role == "arm":
            record = config.record
            groups[((datasets or {}).get(config.name), record.view, record.epoch)].append(config)
    pairs: list[tuple[ConfigData, ConfigData]] = []
    baselines: list[str] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members = sorted(members, key=rank)  # stable: configurations of one arm keep their order
        chosen, why, fallback = _baseline_of(members, baseline, order)
        baselines.append(f"baseline: {chosen.name} — {why}")
        if fallback:
            notes.append(f"Paired tests compare against {chosen.name}: {why}.")
        pairs.extend((chosen, other) for other in members if other is not chosen)
    singles = {(c.run, c.record.arm, c.record.view, c.record.epoch): c for c in configs if c.record.role == "single"}
    for config in configs:
        record = config.record
        picked = record.role == "selector" or (record.role == "arm" and record.selector is not None)
        if picked and (key := (config.run, record.arm, record.view, record.epoch)) in singles:
            pairs.append((singles[key], config))
    return pairs, baselines


def _baseline_of(members: list[ConfigData], baseline: str | None,
                 order: Callable[[ConfigData], ArmOrder | None]) -> tuple[ConfigData, str, bool]:
    """A group's baseline configuration (members in arm order), why it is that one, and whether that is a
    fallback (the notes say so)."""
    if baseline is not None:
        chosen = next((m for m in members if m.record.arm == baseline), None)
        if chosen is not None:
            return chosen, "chosen for this report (--baseline)", False
    for member in members:
        known = order(member)
        if known is not None and known.baseline == member.record.arm:
            return member, known.reason, False
    first, known = members[0], order(members[0])
    if baseline is not None:
        return first, f"first in arm order: arm {baseline} has no configuration in this group", True
    if known is None:
        return first, (f"the first configuration (by name; runs in the order given): {first.run} records no arm "
                       f"order (no plan.json) — --baseline ARM chooses another"), True
    return first, f"first in the experiment's arm order: its baseline {known.baseline} has no results here", True


def _paired(pairs: list[tuple[ConfigData, ConfigData]], resamples: int, seed: int,
            notes: list[str] | None = None) -> list[PairedRow]:
    """The paired tests of ``pairs`` (B against A) on the instances both scored."""
    if len(pairs) > MAX_PAIRS and notes is not None:
        notes.append(f"Paired tests: the first {MAX_PAIRS} of {len(pairs)} pairs are shown.")
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


# ----------------------------------------------------------------------------- across languages
def _resolved(path: Path | None) -> Path | None:
    return path.resolve() if path is not None else None


def _two_sided(one_sided: float, reverse: float) -> float:
    return round(min(1.0, 2 * min(one_sided, reverse)), 6)


def language_groups(configs: list[ConfigData], datasets: dict[str, Path | None], resamples: int, seed: int,
                    notes: list[str] | None = None) -> list[LanguageGroup]:
    """Each configuration name scored on two or more datasets: per dataset (language), Pass@1 and KC@1 on the
    requirement families (``bench.families.family_key``) every one of them scored, and each pair of languages
    compared requirement by requirement (exact McNemar, two-sided; cluster-bootstrap CIs of the differences).

    ``datasets``: configuration name → the dataset directory it was scored on (None: unknown, left out).
    A family a dataset holds twice (a repeated scenario) pairs nothing there and is left out."""
    notes = notes if notes is not None else []
    loaded: dict[Path, Dataset | None] = {}
    by_name: dict[str, list[ConfigData]] = defaultdict(list)
    for config in configs:
        by_name[config.record.name].append(config)
    groups = []
    for name, members in by_name.items():
        chosen: list[tuple[ConfigData, Dataset]] = []
        for config in members:
            path = datasets.get(config.name)
            if path is None or any(ds.root == path for _, ds in chosen):
                continue  # a dataset reported twice under one name: its first configuration stands for it
            if path not in loaded:
                try:
                    loaded[path] = load_dataset(path)  # its root is ``path``: resolved, as the keys
                except DatasetError as exc:
                    loaded[path] = None
                    notes.append(f"{config.name}: its dataset cannot be read ({exc}); left out of the "
                                 f"per-language table.")
            if loaded[path] is not None:
                chosen.append((config, loaded[path]))  # type: ignore[arg-type]
        if len(chosen) < 2:
            continue
        by_family: list[dict[str, InstanceResult]] = []
        for config, dataset in chosen:
            family_of = {instance_id: key for key, instance_id in unique_families(dataset.instances).items()}
            by_family.append({family_of[r.instance_id]: r for r in config.results if r.instance_id in family_of})
        shared = shared_families({c.name: f.keys() for (c, _), f in zip(chosen, by_family)})
        if not shared:
            notes.append(f"{name} was scored on {len(chosen)} datasets that share no requirement "
                         f"({', '.join(ds.card.name for _, ds in chosen)}): no per-language table.")
            continue
        labels = _labels([ds for _, ds in chosen])
        restricted = [config.model_copy(update={"results": [f[key].model_copy(update={"instance_id": key})
                                                            for key in shared]})
                      for (config, _), f in zip(chosen, by_family)]
        rows = []
        for (config, dataset), label, member in zip(chosen, labels, restricted):
            data = member.rows()
            projects = dataset.card.projects
            rows.append(LanguageRow(
                label=label, language=" + ".join(dict.fromkeys(language(p) for p in projects)),
                framework=" + ".join(dict.fromkeys(p.runner.strip() or p.framework for p in projects)),
                dataset=dataset.card.name, config=config.name, results=len(config.results), n=len(data),
                n_exec=sum(1 for r in data if r["outcome"] != INFRA),
                passes=sum(1 for r in data if r["outcome"] == "pass"),
                kill_complete_passes=sum(1 for r in data if r["outcome"] == "pass" and r["kill_complete"]),
                pass_at_1=_estimate(data, METRICS["pass_at_1"], resamples, seed),
                kill_complete_at_1=_estimate(data, METRICS["kill_complete_at_1"], resamples, seed)))
        pairs = []
        for i, j in itertools.combinations(range(len(restricted)), 2):
            c = compare(restricted[i], restricted[j], resamples=resamples, seed=seed)
            passes, kcs = (next(t for t in c.binary if t.metric == m) for m in ("pass", "kill_complete"))
            pairs.append(LanguagePair(
                a=labels[i], b=labels[j], n_paired=c.n_paired,
                pass_difference=Estimate(**c.pass_at_1["difference"].model_dump()),
                pass_b_over_a=passes.b_over_a, pass_a_over_b=passes.a_over_b,
                pass_p=_two_sided(passes.p_value, passes.p_value_reverse),
                kc_difference=Estimate(**c.kill_complete_at_1["difference"].model_dump()),
                kc_b_over_a=kcs.b_over_a, kc_a_over_b=kcs.a_over_b,
                kc_p=_two_sided(kcs.p_value, kcs.p_value_reverse)))
        groups.append(LanguageGroup(config=name, shared=len(shared), rows=rows, pairs=pairs))
    return groups


def _labels(datasets: list[Dataset]) -> list[str]:
    """Each dataset's language; where two share one, the dataset's name beside it."""
    names = [" + ".join(dict.fromkeys(language(p) for p in ds.card.projects)) for ds in datasets]
    return [f"{n} ({ds.card.name})" if names.count(n) > 1 else n for n, ds in zip(names, datasets)]
