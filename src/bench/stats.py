"""Statistics: cluster bootstrap CIs and paired tests (exact McNemar, sign-flip).

The cluster is the feature file, resampled within each project; project scores are
averaged with equal weight (SPEC §3 aggregation).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Row = dict  # one instance's record: needs "project", "feature_file" and the metric fields


def project_average(rows: Sequence[Row], metric: Callable[[list[Row]], float | None]) -> float | None:
    """Equal-weight mean over projects of ``metric`` computed within each project."""
    by_project: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_project[row["project"]].append(row)
    values = [v for rows_ in by_project.values() if (v := metric(rows_)) is not None]
    return sum(values) / len(values) if values else None


def cluster_bootstrap(rows: Sequence[Row], metric: Callable[[list[Row]], float | None],
                      resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of ``project_average(metric)`` resampling feature files within projects."""
    clusters: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        clusters[row["project"]][row["feature_file"]].append(row)
    if not rows:
        return (0.0, 0.0)
    rng = random.Random(seed)
    estimates: list[float] = []
    projects = {p: list(files.values()) for p, files in clusters.items()}
    for _ in range(resamples):
        sample: list[Row] = []
        for groups in projects.values():
            for _ in range(len(groups)):
                sample.extend(groups[rng.randrange(len(groups))])
        value = project_average(sample, metric)
        if value is not None:
            estimates.append(value)
    if not estimates:
        return (0.0, 0.0)
    estimates.sort()
    alpha = (1 - level) / 2
    low = estimates[max(0, int(math.floor(alpha * len(estimates))))]
    high = estimates[min(len(estimates) - 1, int(math.ceil((1 - alpha) * len(estimates))) - 1)]
    return (low, high)


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
