"""Requirement-targeted mutant selection on kill matrices small enough to solve by hand."""

from __future__ import annotations

import pytest

from bench.suite.targets import TargetPair, select_targets


def _pairs(selection, feature: str) -> list[tuple[str, str, int]]:
    [found] = [f for f in selection.features if f.feature_file == feature]
    return [(p.scenario, p.mutant, p.unrelated_kills) for p in found.targets]


def _counts(selection, feature: str) -> tuple[int, int, int, int]:
    [f] = [f for f in selection.features if f.feature_file == feature]
    return f.scenarios, f.candidates, f.dropped, f.eligible


# Three features, 7 scenarios. "Others" is 5 for A and B (20 % of 5 = 1 unrelated killer allowed)
# and 4 for C (20 % of 4 = 0.8: no unrelated killer allowed).
THREE_FEATURES = {"a1": "A.feature", "a2": "A.feature", "b1": "B.feature", "b2": "B.feature",
                  "c1": "C.feature", "c2": "C.feature", "c3": "C.feature"}
THREE_KILLS = {
    "a1": {"m1", "m2", "m6"},
    "a2": {"m2", "m3", "m4"},
    "b1": {"m3", "m4"},
    "b2": {"m8"},
    "c1": {"m4", "m5"},
    "c2": {"m6", "m7"},
    "c3": {"m7"},
}
# m1  a1            A: candidate of a1, 0 unrelated              -> eligible
# m2  a1 a2         A: two of A's scenarios kill it              -> no candidate
# m3  a2 b1         A: candidate of a2, 1/5 unrelated (not >20%) -> eligible; B: same for b1
# m4  a2 b1 c1      candidate in A (2/5), B (2/5), C (2/4)        -> dropped in all three
# m5  c1            C: candidate of c1, 0 unrelated              -> eligible
# m6  a1 c2         A: candidate of a1, 1/5 -> eligible;  C: candidate of c2, 1/4 = 25 % -> dropped
# m7  c2 c3         C: two of C's scenarios                      -> no candidate
# m8  b2            B: candidate of b2                           -> eligible


def test_three_features_by_hand() -> None:
    selection = select_targets(THREE_FEATURES, THREE_KILLS)
    assert selection.scenarios == 7 and selection.killed_mutants == 8
    assert [f.feature_file for f in selection.features] == ["A.feature", "B.feature", "C.feature"]
    # (scenarios, candidates, dropped, eligible)
    assert _counts(selection, "A.feature") == (2, 4, 1, 3)   # m1 m3 m4 m6; m4 dropped
    assert _counts(selection, "B.feature") == (2, 3, 1, 2)   # m3 m4 m8; m4 dropped
    assert _counts(selection, "C.feature") == (3, 3, 2, 1)   # m4 m5 m6; m4 m6 dropped
    # Eligible pairs: a1-m1 (0), a1-m6 (1), a2-m3 (1), b1-m3 (1), b2-m8 (0), c1-m5 (0).
    # m3 can be the target of only one of a2 / b1, so the most targets is 4 (a1, a2|b1, b2, c1)
    # at cost 1 (a1 takes m1, not m6). a2-m3 and b1-m3 tie on cost; b1-m3 sorts after a2-m3,
    # so the tie-break avoids it.
    assert _pairs(selection, "A.feature") == [("a1", "m1", 0), ("a2", "m3", 1)]
    assert _pairs(selection, "B.feature") == [("b2", "m8", 0)]
    assert _pairs(selection, "C.feature") == [("c1", "m5", 0)]
    assert selection.mutants == ["m1", "m3", "m5", "m8"]
    assert selection.mutants_by_feature() == {"A.feature": ["m1", "m3"], "B.feature": ["m8"],
                                              "C.feature": ["m5"]}
    assert selection.pairs[0] == TargetPair(scenario="a1", mutant="m1", unrelated_kills=0)


def test_threshold_is_a_parameter_and_exact_at_the_boundary() -> None:
    # at 25 % C keeps m6 (1/4 is not above 25 %) and c2 gets it; A then takes m1 for a1 anyway
    loose = select_targets(THREE_FEATURES, THREE_KILLS, max_unrelated_share=0.25)
    assert _counts(loose, "C.feature") == (3, 3, 1, 2)
    assert _pairs(loose, "C.feature") == [("c1", "m5", 0), ("c2", "m6", 1)]
    assert _pairs(loose, "A.feature") == [("a1", "m1", 0), ("a2", "m3", 1)]
    # at 0 % only mutants no other feature's scenario kills survive: m3 goes, A/B/C keep m1, m8, m5
    strict = select_targets(THREE_FEATURES, THREE_KILLS, max_unrelated_share=0.0)
    assert [_counts(strict, f)[2] for f in ("A.feature", "B.feature", "C.feature")] == [3, 2, 2]
    assert strict.mutants == ["m1", "m5", "m8"]


def _greedy(selection_input: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """Cheapest pair first, ids breaking ties, each scenario and mutant once: the baseline."""
    used: set[str] = set()
    taken = []
    for scenario, mutant, cost in sorted(selection_input, key=lambda p: (p[2], p[0], p[1])):
        if scenario not in used and mutant not in used:
            used |= {scenario, mutant}
            taken.append((scenario, mutant, cost))
    return taken


def test_optimum_beats_greedy_on_cost() -> None:
    # Features A {a1}, B {b1}, C {c1..c4} (C only adds unrelated kills); no threshold.
    features = {"a1": "A", "b1": "B", "c1": "C", "c2": "C", "c3": "C", "c4": "C"}
    kills = {"a1": {"mS", "mA"}, "b1": {"mS", "mB"},
             "c1": {"mA", "mB"}, "c2": {"mA", "mB"}, "c3": {"mB"}, "c4": {"mB"}}
    # eligible: a1-mS 1 (b1), a1-mA 2 (c1 c2), b1-mS 1 (a1), b1-mB 4 (c1..c4); C kills mA, mB
    # twice or more, so C has no candidate.
    selection = select_targets(features, kills, max_unrelated_share=1.0)
    eligible = [("a1", "mA", 2), ("a1", "mS", 1), ("b1", "mB", 4), ("b1", "mS", 1)]
    # greedy takes a1-mS (1) first, leaving b1 only mB (4): total 5
    assert sum(cost for *_, cost in _greedy(eligible)) == 5
    # the optimum gives the shared mutant to b1: a1-mA (2) + b1-mS (1) = 3
    assert _pairs(selection, "A") == [("a1", "mA", 2)]
    assert _pairs(selection, "B") == [("b1", "mS", 1)]
    assert _pairs(selection, "C") == []
    assert sum(p.unrelated_kills for p in selection.pairs) == 3


def test_optimum_beats_greedy_on_count() -> None:
    # A {a1}, B {b1 b2}: a1 can take mS or mA, b1 only mS. Greedy's cheapest pair is a1-mS
    # (1 unrelated killer: b1), which leaves b1 nothing; max flow places both.
    features = {"a1": "A", "b1": "B", "b2": "B"}
    kills = {"a1": {"mS", "mA"}, "b1": {"mS", "mA"}, "b2": {"mA"}}
    selection = select_targets(features, kills, max_unrelated_share=1.0)
    assert len(_greedy([("a1", "mA", 2), ("a1", "mS", 1), ("b1", "mS", 1)])) == 1
    assert _pairs(selection, "A") == [("a1", "mA", 2)]
    assert _pairs(selection, "B") == [("b1", "mS", 1)]
    assert _counts(selection, "B") == (2, 1, 0, 1)  # mA: two of B's scenarios kill it


def test_cap_per_feature_and_max_flow_across_features() -> None:
    # A: a1..a8 each kill their own m1..m8. B: b1..b10; b1 kills m1, m2 and its own mb; b2 kills
    # m1; b3 kills m8. Others: 10 for A, 8 for B; 20 % of 10 = 2 unrelated killers allowed.
    features = {f"a{i}": "A" for i in range(1, 9)} | {f"b{i}": "B" for i in range(1, 11)}
    kills = {f"a{i}": {f"m{i}"} for i in range(1, 9)} | {"b1": {"m1", "m2", "mb"}, "b2": {"m1"}, "b3": {"m8"}}
    selection = select_targets(features, kills)
    # A: m1 (2 of 10: kept), m2 (1), m8 (1), m3..m7 (0): 8 candidates, none dropped
    assert _counts(selection, "A") == (8, 8, 0, 8)
    # B: m2 for b1 (1 of 8), mb for b1 (0), m8 for b3 (1 of 8); b1 and b2 both kill m1
    assert _counts(selection, "B") == (10, 3, 0, 3)
    # Most targets: A its cap of 6, B b1 and b3 (8 in all) -- only if b3 gets m8, so A's sixth
    # target is the cheaper of a1-m1 (2) and a2-m2 (1); b1 takes mb (0) over m2 (1).
    assert _pairs(selection, "A") == [("a2", "m2", 1), ("a3", "m3", 0), ("a4", "m4", 0), ("a5", "m5", 0),
                                      ("a6", "m6", 0), ("a7", "m7", 0)]
    assert _pairs(selection, "B") == [("b1", "mb", 0), ("b3", "m8", 1)]
    capped = select_targets(features, kills, max_targets_per_feature=2)
    assert len(_pairs(capped, "A")) == 2 and all(cost == 0 for *_, cost in _pairs(capped, "A"))
    # ties among A's five free pairs: the ones sorting last are avoided
    assert _pairs(capped, "A") == [("a3", "m3", 0), ("a4", "m4", 0)]
    assert select_targets(features, kills, max_targets_per_feature=0).mutants == []


def test_single_feature_drops_nothing_and_is_order_independent() -> None:
    features = {"s2": "F", "s1": "F", "s3": "F"}
    kills = {"s2": ["m9", "m2"], "s1": ["m1"], "s3": []}
    selection = select_targets(features, kills)
    assert _counts(selection, "F") == (3, 3, 0, 3)
    # one mutant per scenario: s2 keeps m2 (m9 sorts after it)
    assert _pairs(selection, "F") == [("s1", "m1", 0), ("s2", "m2", 0)]
    reordered = select_targets(dict(reversed(features.items())),
                               {s: list(reversed(m)) for s, m in reversed(kills.items())})
    assert reordered == selection
    assert select_targets(dict(reversed(THREE_FEATURES.items())), THREE_KILLS) == \
        select_targets(THREE_FEATURES, THREE_KILLS)


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no feature"):
        select_targets({"s1": "F"}, {"s1": {"m1"}, "ghost": {"m1"}})
    with pytest.raises(ValueError):
        select_targets({"s1": "F"}, {}, max_unrelated_share=1.5)
    with pytest.raises(ValueError):
        select_targets({"s1": "F"}, {}, max_targets_per_feature=-1)
    empty = select_targets({"s1": "F"}, {})
    assert empty.killed_mutants == 0 and _counts(empty, "F") == (1, 0, 0, 0) and empty.mutants == []
