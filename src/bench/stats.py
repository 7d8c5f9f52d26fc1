"""Statistics: cluster bootstrap (BCa) CIs and paired tests (exact McNemar, sign-flip).

The cluster is the feature file, resampled within each project; project scores are
averaged with equal weight (docs/evaluation.md#results-metrics-and-aggregation).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

Row = dict  # one instance's record: needs "project", "feature_file" and the metric fields


def project_average(rows: Sequence[Row], metric: Callable[[list[Row]], float | None]) -> float | None:
    """Equal-weight mean over projects of ``metric`` computed within each project."""
    by_project: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_project[row["project"]].append(row)
    values = [v for rows_ in by_project.values() if (v := metric(rows_)) is not None]
    return sum(values) / len(values) if values else None


def cluster_bootstrap(rows: Sequence[Row], metric: Callable[[list[Row]], float | None],
                      resamples: int = 2000, seed: int = 0, level: float = 0.95,
                      bounded_n: int | None = None) -> tuple[float, float] | None:
    """BCa interval of ``project_average(metric)``, resampling feature files within projects.

    Bias-corrected and accelerated (Efron 1987): the acceleration is the jackknife skew over
    leave-one-cluster-out estimates, so the interval follows a skewed or bounded metric instead
    of the raw percentiles. A bootstrap cannot see more spread than its clusters show: with one
    cluster, or every instance alike (2/2 pass), it collapses to a point. For a metric in [0, 1]
    over ``bounded_n`` instances the interval is therefore never narrower than Wilson's score
    interval at that n (a [0, 1] variable with mean p has variance at most p(1 - p)). None when
    the metric is undefined on ``rows``.
    """
    theta = project_average(rows, metric)
    if theta is None:
        return None
    clusters: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        clusters[row["project"]][row["feature_file"]].append(row)
    projects = {p: list(files.values()) for p, files in clusters.items()}
    rng = random.Random(seed)
    estimates: list[float] = []
    for _ in range(resamples):
        sample: list[Row] = []
        for groups in projects.values():
            for _ in range(len(groups)):
                sample.extend(groups[rng.randrange(len(groups))])
        value = project_average(sample, metric)
        if value is not None:
            estimates.append(value)
    low, high = _bca(sorted(estimates), theta, _jackknife(projects, metric), level) if estimates else (theta, theta)
    if bounded_n:
        wilson_low, wilson_high = wilson(theta, bounded_n, level)
        low, high = min(low, wilson_low), max(high, wilson_high)
    return (low, high)


def _jackknife(projects: dict[str, list[list[Row]]], metric: Callable[[list[Row]], float | None]) -> list[float]:
    """The estimate with each cluster left out in turn (clusters of single-cluster projects stay)."""
    values = []
    for name, groups in projects.items():
        if len(groups) < 2:
            continue
        others = [row for other, g in projects.items() if other != name for group in g for row in group]
        for index in range(len(groups)):
            kept = others + [row for j, group in enumerate(groups) if j != index for row in group]
            value = project_average(kept, metric)
            if value is not None:
                values.append(value)
    return values


def _bca(estimates: list[float], theta: float, jackknife: list[float], level: float) -> tuple[float, float]:
    normal = NormalDist()
    below = sum(1 for e in estimates if e < theta) + 0.5 * sum(1 for e in estimates if e == theta)
    share = below / len(estimates)
    alpha = (1 - level) / 2
    if not 0 < share < 1:  # every resample on one side: no bias estimate, plain percentiles
        return _quantile(estimates, alpha), _quantile(estimates, 1 - alpha)
    z0 = normal.inv_cdf(share)
    acceleration = 0.0
    if len(jackknife) >= 2:
        mean = sum(jackknife) / len(jackknife)
        squares = sum((mean - v) ** 2 for v in jackknife)
        if squares > 0:
            acceleration = sum((mean - v) ** 3 for v in jackknife) / (6 * squares ** 1.5)

    def adjusted(q: float) -> float:
        z = normal.inv_cdf(q)
        return normal.cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))

    return _quantile(estimates, adjusted(alpha)), _quantile(estimates, adjusted(1 - alpha))


def _quantile(ordered: list[float], q: float) -> float:
    q = min(1.0, max(0.0, q))
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def wilson(p: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion p observed over n trials."""
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def cluster_count(rows: Sequence[Row]) -> int:
    """Feature-file clusters the bootstrap resamples."""
    return len({(row["project"], row["feature_file"]) for row in rows})


@dataclass(frozen=True)
class PairedTest:
    statistic: float
    p_value: float
    n: int
    detail: str


def mcnemar_exact_one_sided(a: Sequence[bool], b: Sequence[bool]) -> PairedTest:
    """H1: configuration A succeeds more often than B on the same instances.

    Only discordant pairs count: b10 = A yes / B no, b01 = A no / B yes.
    p = P(X >= b10) for X ~ Binomial(b10 + b01, 1/2).
    """
    if len(a) != len(b):
        raise ValueError("paired verdicts must have the same length")
    b10 = sum(1 for x, y in zip(a, b) if x and not y)
    b01 = sum(1 for x, y in zip(a, b) if y and not x)
    n = b10 + b01
    p = sum(math.comb(n, k) for k in range(b10, n + 1)) / (2 ** n) if n else 1.0
    return PairedTest(statistic=float(b10 - b01), p_value=min(1.0, p), n=n, detail=f"b10={b10} b01={b01}")


def sign_flip_one_sided(a: Sequence[float], b: Sequence[float], resamples: int = 20000,
                        seed: int = 0) -> PairedTest:
    """H1: mean(A - B) > 0. Exact over all 2^n flips when n <= 16, Monte Carlo otherwise."""
    if len(a) != len(b):
        raise ValueError("paired scores must have the same length")
    diffs = [x - y for x, y in zip(a, b) if x != y]
    n = len(diffs)
    observed = sum(diffs)
    if n == 0:
        return PairedTest(statistic=0.0, p_value=1.0, n=0, detail="no differing pairs")
    eps = 1e-12
    if n <= 16:
        count = 0
        for mask in range(2 ** n):
            total = sum(d if not (mask >> i) & 1 else -d for i, d in enumerate(diffs))
            count += total >= observed - eps
        p = count / 2 ** n
    else:
        rng = random.Random(seed)
        count = 1  # the observed assignment itself
        for _ in range(resamples):
            total = sum(d if rng.random() < 0.5 else -d for d in diffs)
            count += total >= observed - eps
        p = count / (resamples + 1)
    return PairedTest(statistic=observed / len(a), p_value=p, n=n, detail=f"mean difference over {len(a)} pairs")
