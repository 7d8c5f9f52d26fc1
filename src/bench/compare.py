"""Paired comparison of two configurations on the instances both scored (docs/experiments.md#comparing-and-reporting).

Binary verdicts (Pass, KillComplete): one-sided exact McNemar, H1 "B succeeds more often than A".
Continuous scores (API F1, coverage Jaccard, mutant recall): one-sided paired sign-flip, H1
"mean(B - A) > 0", over the instances where both have the value. A non-passing test's scores are
already 0 in its record, which is how bench.summary aggregates them too.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from bench.formatting import num, pct, pp
from bench.model import Outcome
from bench.runs import ConfigData, RunsError
from bench.stats import cluster_bootstrap, mcnemar_exact_one_sided, project_average, sign_flip_one_sided

ALPHA = 0.05
INFRA = Outcome.infrastructure_failure.value
CONTINUOUS = ("api_f1", "coverage_jaccard", "mutant_recall")
LABELS = {"pass": "Pass", "kill_complete": "KillComplete", "api_f1": "API F1",
          "coverage_jaccard": "coverage Jaccard", "mutant_recall": "mutant recall"}


class BinaryTest(BaseModel):
    metric: str
    n: int = Field(description="paired instances the test saw")
    a_successes: int
    b_successes: int
    b_over_a: int = Field(description="discordant: B succeeds, A does not")
    a_over_b: int = Field(description="discordant: A succeeds, B does not")
    p_value: float = Field(description="exact McNemar, H1: B better than A")
    p_value_reverse: float = Field(description="exact McNemar, H1: A better than B")
    significant: bool = Field(description="p_value < alpha")


class ContinuousTest(BaseModel):
    metric: str
    n: int = Field(description="paired instances where both configurations have the value")
    differing: int
    mean_a: float | None
    mean_b: float | None
    mean_difference: float | None = Field(description="mean of B - A over the pairs")
    p_value: float = Field(description="paired sign-flip, H1: mean(B - A) > 0")
    p_value_reverse: float
    significant: bool


class Interval(BaseModel):
    value: float | None
    ci_low: float | None
    ci_high: float | None


class ProjectRow(BaseModel):
    project: str
    n: int
    pass_a: float | None
    pass_b: float | None
    kc_a: float
    kc_b: float
    pass_b_over_a: int
    pass_a_over_b: int
    kc_b_over_a: int
    kc_a_over_b: int


class Comparison(BaseModel):
    a: str
    b: str
    alpha: float = ALPHA
    n_a: int
    n_b: int
    n_paired: int
    only_a: int = Field(description="instances A scored that B did not (dropped)")
    only_b: int = Field(description="instances B scored that A did not (dropped)")
    infrastructure_pairs: int = Field(description="pairs with an infrastructure failure on either side; "
                                      "left out of the Pass test (not executed), kept in the others")
    binary: list[BinaryTest]
    continuous: list[ContinuousTest]
    pass_at_1: dict[str, Interval] = Field(description="a, b and difference (b - a), project-averaged")
    kill_complete_at_1: dict[str, Interval]
    projects: list[ProjectRow]
    bootstrap: dict[str, Any]
    verdict: str


def _pass_rate(rows: list[dict[str, Any]], side: str) -> float | None:
    executed = [r for r in rows if r[f"{side}_outcome"] != INFRA]
    return sum(r[f"{side}_outcome"] == "pass" for r in executed) / len(executed) if executed else None


def _kc_rate(rows: list[dict[str, Any]], side: str) -> float | None:
    return sum(bool(r[f"{side}_kc"]) for r in rows) / len(rows) if rows else None


def _difference(metric_b: Any, metric_a: Any) -> Any:
    def diff(rows: list[dict[str, Any]]) -> float | None:
        b, a = metric_b(rows), metric_a(rows)
        return b - a if a is not None and b is not None else None
    return diff


def _interval(rows: list[dict[str, Any]], metric: Any, resamples: int, seed: int,
              rate: bool = True) -> Interval:
    """``rate``: a [0, 1] rate over the rows (never narrower than Wilson's); else a difference."""
    value = project_average(rows, metric)
    interval = cluster_bootstrap(rows, metric, resamples=resamples, seed=seed, bounded_n=len(rows) if rate else None)
    return Interval(value=_round(value), ci_low=_round(interval and interval[0]),
                    ci_high=_round(interval and interval[1]))


def _binary(metric: str, a: list[bool], b: list[bool]) -> BinaryTest:
    forward = mcnemar_exact_one_sided(b, a)  # the helper's H1 is "first argument better"
    reverse = mcnemar_exact_one_sided(a, b)
    return BinaryTest(metric=metric, n=len(a), a_successes=sum(a), b_successes=sum(b),
                      b_over_a=sum(1 for x, y in zip(a, b) if y and not x),
                      a_over_b=sum(1 for x, y in zip(a, b) if x and not y),
                      p_value=forward.p_value, p_value_reverse=reverse.p_value,
                      significant=forward.p_value < ALPHA)


def _continuous(metric: str, a: list[float], b: list[float], resamples: int, seed: int) -> ContinuousTest:
    forward = sign_flip_one_sided(b, a, resamples=resamples, seed=seed)
    reverse = sign_flip_one_sided(a, b, resamples=resamples, seed=seed)
    n = len(a)
    mean_a = sum(a) / n if n else None
    mean_b = sum(b) / n if n else None
    return ContinuousTest(metric=metric, n=n, differing=forward.n,
                          mean_a=round(mean_a, 6) if mean_a is not None else None,
                          mean_b=round(mean_b, 6) if mean_b is not None else None,
                          mean_difference=round(mean_b - mean_a, 6) if n else None,  # type: ignore[operator]
                          p_value=forward.p_value, p_value_reverse=reverse.p_value,
                          significant=forward.p_value < ALPHA)


def compare(a: ConfigData, b: ConfigData, resamples: int = 2000, seed: int = 0,
            sign_flip_resamples: int = 20000) -> Comparison:
    """Paired tests and cluster-bootstrap CIs of B against A over the instances both scored."""
    by_a = {r.instance_id: r for r in a.results}
    by_b = {r.instance_id: r for r in b.results}
    common = [i for i in by_a if i in by_b]  # A's order: deterministic
    if not common:
        raise RunsError(f"{a.name} and {b.name} have no scored instance in common")
    rows: list[dict[str, Any]] = []
    for instance_id in common:
        ra, rb = by_a[instance_id], by_b[instance_id]
        rows.append({"instance_id": instance_id, "project": ra.project, "feature_file": ra.feature_file,
                     "a_outcome": ra.outcome.value, "b_outcome": rb.outcome.value,
                     "a_kc": ra.kill_complete, "b_kc": rb.kill_complete,
                     **{f"a_{m}": getattr(ra, m) for m in CONTINUOUS},
                     **{f"b_{m}": getattr(rb, m) for m in CONTINUOUS}})

    executed = [r for r in rows if r["a_outcome"] != INFRA and r["b_outcome"] != INFRA]
    binary = [
        _binary("pass", [r["a_outcome"] == "pass" for r in executed], [r["b_outcome"] == "pass" for r in executed]),
        _binary("kill_complete", [bool(r["a_kc"]) for r in rows], [bool(r["b_kc"]) for r in rows]),
    ]
    continuous = []
    for metric in CONTINUOUS:
        pairs = [(r[f"a_{metric}"], r[f"b_{metric}"]) for r in rows
                 if r[f"a_{metric}"] is not None and r[f"b_{metric}"] is not None]
        continuous.append(_continuous(metric, [p[0] for p in pairs], [p[1] for p in pairs],
                                      sign_flip_resamples, seed))

    def pass_a(rs: list[dict[str, Any]]) -> float | None:
        return _pass_rate(rs, "a")

    def pass_b(rs: list[dict[str, Any]]) -> float | None:
        return _pass_rate(rs, "b")

    def kc_a(rs: list[dict[str, Any]]) -> float | None:
        return _kc_rate(rs, "a")

    def kc_b(rs: list[dict[str, Any]]) -> float | None:
        return _kc_rate(rs, "b")

    pass_at_1 = {"a": _interval(rows, pass_a, resamples, seed), "b": _interval(rows, pass_b, resamples, seed),
                 "difference": _interval(rows, _difference(pass_b, pass_a), resamples, seed, rate=False)}
    kc_at_1 = {"a": _interval(rows, kc_a, resamples, seed), "b": _interval(rows, kc_b, resamples, seed),
               "difference": _interval(rows, _difference(kc_b, kc_a), resamples, seed, rate=False)}

    by_project: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_project[row["project"]].append(row)
    projects = []
    for project, prow in sorted(by_project.items()):
        ex = [r for r in prow if r["a_outcome"] != INFRA and r["b_outcome"] != INFRA]
        projects.append(ProjectRow(
            project=project, n=len(prow),
            pass_a=_round(pass_a(prow)), pass_b=_round(pass_b(prow)),
            kc_a=round(kc_a(prow) or 0.0, 6), kc_b=round(kc_b(prow) or 0.0, 6),
            pass_b_over_a=sum(1 for r in ex if r["b_outcome"] == "pass" and r["a_outcome"] != "pass"),
            pass_a_over_b=sum(1 for r in ex if r["a_outcome"] == "pass" and r["b_outcome"] != "pass"),
            kc_b_over_a=sum(1 for r in prow if r["b_kc"] and not r["a_kc"]),
            kc_a_over_b=sum(1 for r in prow if r["a_kc"] and not r["b_kc"])))

    comparison = Comparison(
        a=a.name, b=b.name, n_a=len(by_a), n_b=len(by_b), n_paired=len(rows),
        only_a=len(by_a) - len(rows), only_b=len(by_b) - len(rows),
        infrastructure_pairs=len(rows) - len(executed), binary=binary, continuous=continuous,
        pass_at_1=pass_at_1, kill_complete_at_1=kc_at_1, projects=projects,
        bootstrap={"resamples": resamples, "seed": seed, "cluster": "feature file within project",
                   "sign_flip_resamples": sign_flip_resamples},
        verdict="")
    comparison.verdict = _verdict(comparison)
    return comparison


def _round(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


def _verdict(c: Comparison) -> str:
    parts = []
    for test in c.binary:
        label = LABELS[test.metric]
        if test.significant:
            parts.append(f"B better on {label} (p={_p(test.p_value)} < {c.alpha:g})")
        elif test.p_value_reverse < c.alpha:
            parts.append(f"B not better on {label}; A better (p={_p(test.p_value_reverse)} < {c.alpha:g})")
        else:
            parts.append(f"no significant {label} difference (p={_p(test.p_value)})")
    return f"{c.b} vs {c.a}: " + "; ".join(parts)


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"




def _ci(interval: Interval, signed: bool = False) -> str:
    fmt = pp if signed else pct
    return f"{fmt(interval.value)} [{fmt(interval.ci_low)}, {fmt(interval.ci_high)}]"


def render_comparison_markdown(c: Comparison) -> str:
    """The comparison as a markdown document (tables + p-values + verdict)."""
    lines = [f"# {c.b} (B) vs {c.a} (A)", "",
             (f"Paired over **{c.n_paired}** instances scored by both "
             f"(dropped: {c.only_a} only in A, {c.only_b} only in B; "
             f"{c.infrastructure_pairs} pair(s) with an infrastructure failure left out of the Pass test). "
             f"One-sided tests, H1: B better than A; significance at alpha = {c.alpha:g}."), "",
             f"**Verdict:** {c.verdict}", "",
             "## Headline metrics (project-averaged, 95% cluster-bootstrap CI)", "",
             "| metric | A | B | B − A |", "|---|---|---|---|",
             f"| Pass@1 | {_ci(c.pass_at_1['a'])} | {_ci(c.pass_at_1['b'])} | {_ci(c.pass_at_1['difference'], True)} |",
             (f"| KillComplete@1 | {_ci(c.kill_complete_at_1['a'])} | {_ci(c.kill_complete_at_1['b'])} | "
             f"{_ci(c.kill_complete_at_1['difference'], True)} |"), "",
             "## Binary verdicts (exact McNemar)", "",
             "| verdict | N | A yes | B yes | B>A | A>B | p (B better) | p (A better) | significant |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t in c.binary:
        lines.append(f"| {LABELS[t.metric]} | {t.n} | {t.a_successes} | {t.b_successes} | {t.b_over_a} | "
                     f"{t.a_over_b} | {_p(t.p_value)} | {_p(t.p_value_reverse)} | {'yes' if t.significant else 'no'} |")
    lines += ["", "## Continuous scores (paired sign-flip, instance means)", "",
              ("| score | N pairs | differing | mean A | mean B | mean B − A | p (B better) | p (A better) "
              "| significant |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for ct in c.continuous:
        lines.append(f"| {LABELS[ct.metric]} | {ct.n} | {ct.differing} | {num(ct.mean_a)} | {num(ct.mean_b)} | "
                     f"{'—' if ct.mean_difference is None else f'{ct.mean_difference:+.3f}'} | {_p(ct.p_value)} | "
                     f"{_p(ct.p_value_reverse)} | {'yes' if ct.significant else 'no'} |")
    lines += ["", "## Per project", "",
              "| project | N | Pass@1 A | Pass@1 B | Pass B>A | Pass A>B | KC@1 A | KC@1 B | KC B>A | KC A>B |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for p in c.projects:
        lines.append(f"| {p.project} | {p.n} | {pct(p.pass_a)} | {pct(p.pass_b)} | {p.pass_b_over_a} | "
                     f"{p.pass_a_over_b} | {pct(p.kc_a)} | {pct(p.kc_b)} | {p.kc_b_over_a} | {p.kc_a_over_b} |")
    lines += ["", (f"Bootstrap: {c.bootstrap['resamples']} resamples, seed {c.bootstrap['seed']}, "
              f"clusters = {c.bootstrap['cluster']}."), ""]
    return "\n".join(lines)
