"""Aggregate per-instance results into the headline metrics (docs/evaluation.md#results-metrics-and-aggregation)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from bench.model import InstanceResult, MetricSummary, Outcome, RunSummary, SubmissionReport
from bench.stats import cluster_bootstrap, cluster_count, project_average

Rows = list[dict[str, Any]]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _executed(rows: Rows) -> Rows:
    return [r for r in rows if r["outcome"] != Outcome.infrastructure_failure.value]


METRICS: dict[str, Callable[[Rows], float | None]] = {
    # Pass@1 = #pass / N_exec
    "pass_at_1": lambda rows: _mean([float(r["outcome"] == "pass") for r in _executed(rows)]),
    # KillComplete@1: denominator is the full planned N of the project
    "kill_complete_at_1": lambda rows: (sum(1 for r in rows if r["kill_complete"]) / len(rows)) if rows else None,
    "kill_complete_relaxed_at_1": lambda rows: (sum(1 for r in rows if r["kill_complete_relaxed"]) / len(rows))
    if rows else None,
    # end-to-end means: a non-passing test scores 0 (already 0 in its record)
    "api_f1": lambda rows: _mean([r["api_f1"] for r in rows if r["api_f1"] is not None]),
    "coverage_jaccard": lambda rows: _mean([r["coverage_jaccard"] for r in rows if r["coverage_jaccard"] is not None]),
    "mutant_recall": lambda rows: _mean([r["mutant_recall"] for r in rows if r["mutant_recall"] is not None]),
    "assertion_dependent_recall": lambda rows: _mean([r["assertion_dependent_recall"] for r in rows
                                                      if r["assertion_dependent_recall"] is not None]),
    "hidden_recall": lambda rows: _mean([r["hidden_recall"] for r in rows if r["hidden_recall"] is not None]),
}

_CONTRIBUTES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "pass_at_1": lambda r: r["outcome"] != Outcome.infrastructure_failure.value,
    "api_f1": lambda r: r["api_f1"] is not None,
    "coverage_jaccard": lambda r: r["coverage_jaccard"] is not None,
    "mutant_recall": lambda r: r["mutant_recall"] is not None,
    "assertion_dependent_recall": lambda r: r["assertion_dependent_recall"] is not None,
    "hidden_recall": lambda r: r["hidden_recall"] is not None,
}


def summarize_run(results: Sequence[InstanceResult], dataset_name: str, predictions_sha256: str,
                  resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    rows = [r.model_dump(mode="json") for r in results]
    metrics: dict[str, MetricSummary] = {}
    for name, metric in METRICS.items():
        value = project_average(rows, metric)
        counted = sum(1 for r in rows if _CONTRIBUTES.get(name, lambda _: True)(r))
        interval = cluster_bootstrap(rows, metric, resamples=resamples, seed=seed, bounded_n=counted) \
            if counted else None
        metrics[name] = MetricSummary(value=_round(value), ci_low=_round(interval and interval[0]),
                                      ci_high=_round(interval and interval[1]), n=counted)
    outcomes = Counter(r["outcome"] for r in rows)
    exclusions = Counter((r["detail"].split(":")[0] or "unknown") for r in rows
                         if r["outcome"] == Outcome.infrastructure_failure.value)
    per_project: dict[str, dict[str, float | None]] = {}
    by_project: dict[str, Rows] = defaultdict(list)
    for row in rows:
        by_project[row["project"]].append(row)
    for project, project_rows in sorted(by_project.items()):
        per_project[project] = {"n": float(len(project_rows)), "n_exec": float(len(_executed(project_rows)))}
        for name, metric in METRICS.items():
            value = metric(project_rows)
            per_project[project][name] = _round(value)  # None, not NaN: summary.json stays valid JSON
    summary = RunSummary(
        dataset=dataset_name, predictions_sha256=predictions_sha256,
        n=len(rows), n_exec=len(_executed(rows)),
        outcomes={o.value: outcomes.get(o.value, 0) for o in Outcome},
        exclusions=dict(exclusions), per_project=per_project,
        efficiency=_efficiency(rows),
        bootstrap={"resamples": resamples, "seed": seed, "cluster": "feature file within project"},
        submission=SubmissionReport.of(list(results)),
        warnings=_warnings(rows),
        **metrics,
    )
    return summary.model_dump(mode="json")


# Below this many feature files the bootstrap sees few distinct resamples (Davison & Hinkley
# suggest tens of independent units); intervals then lean on the Wilson floor.
FEW_CLUSTERS = 10


def _warnings(rows: Rows) -> list[str]:
    clusters = cluster_count(rows)
    if not rows:
        return ["no instances: every metric is undefined"]
    warnings = _unguarded(rows)
    if clusters == 1:
        warnings.append(f"1 feature-file cluster: the bootstrap cannot resample; the intervals are Wilson's over "
                        f"{len(rows)} instance(s), which assumes independent instances")
    elif clusters < FEW_CLUSTERS:
        warnings.append(f"only {clusters} feature-file clusters: the bootstrap sees few distinct resamples; "
                        "intervals are at least Wilson's over the instances and are approximate")
    return warnings


def _unguarded(rows: Rows) -> list[str]:
    """A judge that could not switch its in-process guard on says so per judgement
    (``confirmation.guard`` = ``"off…"``); one line here, so a whole dataset judged unguarded
    is not noticed only by reading results.jsonl (js-algorand-sdk was, for three stops)."""
    guards = [str((r.get("confirmation") or {}).get("guard", "")) for r in rows]
    off = [guard for guard in guards if guard.startswith("off")]
    if not off:
        return []
    reason = Counter(off).most_common(1)[0][0]
    return [(f"{len(off)} of {len(rows)} judgement(s) ran without the in-process guard ({reason}): the "
             "sandbox still held, but test code could reach what the guard refuses")]


def _round(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


def _efficiency(rows: Rows) -> dict[str, float | None]:
    def total(key: str) -> float | None:
        values = [r["metadata"].get(key) for r in rows if r["metadata"].get(key) is not None]
        return float(sum(values)) if values else None

    cost = total("cost_usd")
    passes = sum(1 for r in rows if r["outcome"] == "pass")
    complete = sum(1 for r in rows if r["kill_complete"])
    return {
        "generation_wall_seconds": total("wall_seconds"),
        "llm_calls": total("llm_calls"),
        "input_tokens": total("input_tokens"),
        "output_tokens": total("output_tokens"),
        "cost_usd": cost,
        "cost_per_pass_usd": cost / passes if cost is not None and passes else None,
        "cost_per_kill_complete_usd": cost / complete if cost is not None and complete else None,
        "evaluation_seconds": round(sum(r["evaluation_seconds"] for r in rows), 3),
        # what judging one prediction costs: every safeguard of a kill-complete claim (its
        # batches, reproductions and fresh-process replays) is paid by these
        "evaluation_seconds_median": _median([r["evaluation_seconds"] for r in rows]),
        "evaluation_seconds_median_kill_complete": _median([r["evaluation_seconds"] for r in rows
                                                           if r["kill_complete"]]),
    }


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    value = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return round(float(value), 3)
