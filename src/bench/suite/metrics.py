"""Suite-mode metrics, each small enough to check by hand (TestSuiteBench §2.6, §C, §A).

- **Validity**: the share of generated scenarios that pass on the real code in *all* of ``k``
  runs (3, as the paper runs the suite on the reference three times). A scenario that passes
  only sometimes is flaky, and a flaky test could "kill" any mutant by chance, so it is not valid.
- **Mutation score**: the share of the requirement-targeted mutants (``targets.select_targets``)
  that at least one *valid* generated scenario kills. Kills by invalid scenarios are reported
  apart, never counted: a test that fails on the real code fails on every mutant too.
- **Suite size ratio**: generated scenarios / reference scenarios (all generated, valid or not).
- **Spearman's rho** between per-feature specification length and a per-feature score (the
  paper's §A.2 correlation): the Pearson correlation of average ranks, so tied values share
  their rank.

Undefined values (no generated scenario, no target, no reference scenario, fewer than three
points, a constant variable) are None, never NaN: a report prints them as —.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal, cast

from pydantic import Field

from bench.model import Frozen

RUNS = 3


class Validity(Frozen):
    runs: int = Field(description="k: runs on the real code every scenario must pass")
    generated: int
    valid: int = Field(description="passed all k runs")
    flaky: int = Field(description="passed some runs, not all")
    failing: int = Field(description="passed no run")
    value: float | None = Field(description="valid / generated; None without generated scenarios")
    valid_ids: list[str] = Field(description="sorted")


class MutationScore(Frozen):
    targets: int
    killed: int = Field(description="targets at least one valid generated scenario kills")
    value: float | None = Field(description="killed / targets; None without targets")
    killed_ids: list[str]
    survived_ids: list[str]
    killed_only_by_invalid: list[str] = Field(
        description="surviving targets that an invalid (failing or flaky) scenario 'kills': not counted")


class SuiteSize(Frozen):
    generated: int
    reference: int
    ratio: float | None = Field(description="generated / reference; None without reference scenarios")


class Correlation(Frozen):
    n: int = Field(description="features with both a length and a score")
    rho: float | None = Field(description="Spearman's rho; None below 3 points or with a constant variable")
    skipped: list[str] = Field(default_factory=list, description="features missing a length or a score, sorted")


class SuiteScore(Frozen):
    validity: Validity
    mutation: MutationScore
    size: SuiteSize


def validity(runs: Mapping[str, Sequence[bool]], k: int = RUNS) -> Validity:
    """Validity of a generated suite from each scenario's pass/fail on the real code, k runs each.

    Every scenario must carry exactly ``k`` results: fewer would let an unrun scenario look
    stable, so a short (or long) record is the caller's error, not a verdict.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    wrong = sorted(s for s, results in runs.items() if len(results) != k)
    if wrong:
        raise ValueError(f"{len(wrong)} scenario(s) without exactly {k} runs: {', '.join(wrong[:5])}")
    passes = {s: sum(bool(r) for r in results) for s, results in runs.items()}
    return validity_of({s: "valid" if n == k else "failing" if n == 0 else "flaky" for s, n in passes.items()}, k)


Stability = Literal["valid", "flaky", "failing"]


def validity_of(labels: Mapping[str, Stability], k: int = RUNS) -> Validity:
    """Validity from each scenario's stability label, as a judge that made at least ``k`` clean
    runs per scenario decided it (``bench.frameworks.behave.verdict``: a pass needs the traced run and every null
    variant to agree, ``unstable`` is a disagreement)."""
    unknown = sorted(s for s, label in labels.items() if label not in ("valid", "flaky", "failing"))
    if unknown:
        raise ValueError(f"{len(unknown)} scenario(s) with an unknown label: {', '.join(unknown[:5])}")
    valid = sorted(s for s, label in labels.items() if label == "valid")
    failing = sum(1 for label in labels.values() if label == "failing")
    return Validity(runs=k, generated=len(labels), valid=len(valid), flaky=len(labels) - len(valid) - failing,
                    failing=failing, value=len(valid) / len(labels) if labels else None, valid_ids=valid)


def mutation_score(targets: Iterable[str], kills: Mapping[str, Iterable[str]], valid: Collection[str]) -> MutationScore:
    """Share of ``targets`` killed by a generated scenario in ``valid``.

    ``kills`` maps a generated scenario to the mutant ids it kills; kills of non-target
    mutants are ignored (they are not requirement-targeted).
    """
    target_set = set(targets)
    valid_set = set(valid)
    by_valid: set[str] = set()
    by_invalid: set[str] = set()
    for scenario, mutants in kills.items():
        (by_valid if scenario in valid_set else by_invalid).update(set(mutants) & target_set)
    killed = sorted(by_valid)
    return MutationScore(targets=len(target_set), killed=len(killed),
                         value=len(killed) / len(target_set) if target_set else None,
                         killed_ids=killed, survived_ids=sorted(target_set - by_valid),
                         killed_only_by_invalid=sorted(by_invalid - by_valid))


def feature_mutation_scores(targets_by_feature: Mapping[str, Iterable[str]], kills: Mapping[str, Iterable[str]],
                            valid: Collection[str]) -> dict[str, MutationScore]:
    """Per-feature mutation scores (e.g. ``TargetSelection.mutants_by_feature()``): any valid
    generated scenario may kill any feature's targets; the suite is scored as a whole."""
    return {feature: mutation_score(mutants, kills, valid) for feature, mutants in sorted(targets_by_feature.items())}


def suite_size(generated: int, reference: int) -> SuiteSize:
    if generated < 0 or reference < 0:
        raise ValueError("scenario counts cannot be negative")
    return SuiteSize(generated=generated, reference=reference, ratio=generated / reference if reference else None)


def score_suite(runs: Mapping[str, Sequence[bool]], kills: Mapping[str, Iterable[str]], targets: Iterable[str],
                reference_scenarios: int, k: int = RUNS) -> SuiteScore:
    """Validity, mutation score (valid scenarios only) and size ratio of one generated suite.

    Every scenario in ``runs`` counts as generated; a scenario with kills but no runs on the
    real code is not valid, so its kills do not count.
    """
    checked = validity(runs, k)
    return SuiteScore(validity=checked, mutation=mutation_score(targets, kills, checked.valid_ids),
                      size=suite_size(len(runs), reference_scenarios))


def word_count(text: str) -> int:
    """Specification length as the paper counts it: words (whitespace-separated tokens)."""
    return len(text.split())


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span: [10, 20, 20, 30] → [1, 2.5, 2.5, 4]."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho with average ranks for ties (Pearson on the ranks). None when fewer than
    3 points or when either variable is constant (its ranks have no variance)."""
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    if any(isinstance(v, float) and math.isnan(v) for v in (*xs, *ys)):
        raise ValueError("NaN cannot be ranked")
    if len(xs) < 3:
        return None
    rx, ry = average_ranks(xs), average_ranks(ys)
    mean = (len(xs) + 1) / 2  # the mean of average ranks is always (n + 1) / 2
    dx = [r - mean for r in rx]
    dy = [r - mean for r in ry]
    sxx = sum(d * d for d in dx)
    syy = sum(d * d for d in dy)
    if sxx == 0 or syy == 0:
        return None
    rho = sum(a * b for a, b in zip(dx, dy)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, rho))


def spec_length_correlation(lengths: Mapping[str, float], scores: Mapping[str, float | None]) -> Correlation:
    """Spearman's rho between per-feature specification length and per-feature score.

    Only features with both a length and a defined score enter; the others are listed as skipped.
    """
    both = sorted(f for f in lengths.keys() & scores.keys() if scores[f] is not None)
    skipped = sorted((lengths.keys() | scores.keys()) - set(both))
    # ``both`` holds only features whose score is not None
    return Correlation(n=len(both), rho=spearman([lengths[f] for f in both], [cast(float, scores[f]) for f in both]),
                       skipped=skipped)
