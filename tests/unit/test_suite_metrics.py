"""Suite-mode metrics on hand-computed cases."""

from __future__ import annotations

import pytest

from bench.suite.metrics import (
    average_ranks,
    feature_mutation_scores,
    mutation_score,
    score_suite,
    spearman,
    spec_length_correlation,
    suite_size,
    validity,
    word_count,
)

# g1, g4 pass all three runs; g2 is flaky (fails the second run); g3 always fails
RUNS = {"g1": [True, True, True], "g2": [True, False, True], "g3": [False, False, False], "g4": [True, True, True]}
# g1 kills target m1 and a non-target m9; the flaky g2 "kills" m2; g3 fails everywhere; g4 kills m1, m3
KILLS = {"g1": {"m1", "m9"}, "g2": {"m2"}, "g3": {"m1", "m2", "m3", "m4"}, "g4": {"m1", "m3"}}
TARGETS = ["m1", "m2", "m3", "m4"]


def test_validity_counts_a_flaky_scenario_as_invalid() -> None:
    result = validity(RUNS)
    assert result.runs == 3 and result.generated == 4
    assert (result.valid, result.flaky, result.failing) == (2, 1, 1)
    assert result.value == 0.5
    assert result.valid_ids == ["g1", "g4"]
    # with one run only, g2's lucky first run makes it valid: 3 of 4
    assert validity({s: r[:1] for s, r in RUNS.items()}, k=1).value == 0.75


def test_validity_undefined_and_malformed() -> None:
    empty = validity({})
    assert empty.value is None and empty.generated == 0
    with pytest.raises(ValueError, match="exactly 3 runs"):
        validity({"g1": [True, True]})
    with pytest.raises(ValueError):
        validity({"g1": [True]}, k=0)


def test_mutation_score_counts_only_valid_scenarios() -> None:
    result = mutation_score(TARGETS, KILLS, valid=["g1", "g4"])
    # valid kills of targets: m1 (g1, g4), m3 (g4); m9 is no target; g2, g3 are invalid
    assert result.targets == 4 and result.killed == 2
    assert result.value == 0.5
    assert result.killed_ids == ["m1", "m3"]
    assert result.survived_ids == ["m2", "m4"]
    assert result.killed_only_by_invalid == ["m2", "m4"]
    # every scenario valid: g3 kills all four
    assert mutation_score(TARGETS, KILLS, valid=KILLS.keys()).value == 1.0
    assert mutation_score(TARGETS, KILLS, valid=[]).value == 0.0
    undefined = mutation_score([], KILLS, valid=["g1"])
    assert undefined.value is None and undefined.targets == 0


def test_feature_scores_share_the_whole_suite() -> None:
    scores = feature_mutation_scores({"b.feature": ["m3", "m4"], "a.feature": ["m1", "m2"], "c.feature": []},
                                     KILLS, valid=["g1", "g4"])
    assert list(scores) == ["a.feature", "b.feature", "c.feature"]
    assert scores["a.feature"].value == 0.5      # m1 killed, m2 not
    assert scores["b.feature"].value == 0.5      # m3 killed (by g4, whichever feature it was written for)
    assert scores["c.feature"].value is None


def test_suite_size_and_score_suite() -> None:
    assert suite_size(3, 4).ratio == 0.75
    assert suite_size(6, 4).ratio == 1.5
    assert suite_size(2, 0).ratio is None
    with pytest.raises(ValueError):
        suite_size(-1, 3)
    # "g5" kills m4 but never ran on the real code: it is neither generated nor valid
    score = score_suite(RUNS, KILLS | {"g5": {"m4"}}, TARGETS, reference_scenarios=8)
    assert score.validity.value == 0.5
    assert score.mutation.value == 0.5 and score.mutation.killed_ids == ["m1", "m3"]
    assert score.size.generated == 4 and score.size.ratio == 0.5


def test_average_ranks_with_ties() -> None:
    assert average_ranks([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    assert average_ranks([5, 5, 5]) == [2.0, 2.0, 2.0]
    assert average_ranks([3, 1, 2]) == [3.0, 1.0, 2.0]


def test_spearman_hand_ranked_with_ties() -> None:
    # feature:   A    B    C    D    E
    lengths = [100, 250, 250, 400, 900]  # ranks 1, 2.5, 2.5, 4, 5
    scores = [0.9, 0.5, 0.7, 0.5, 0.1]   # ranks 5, 2.5, 4, 2.5, 1
    # deviations from the mean rank 3: dx = -2, -.5, -.5, 1, 2; dy = 2, -.5, 1, -.5, -2
    # sum dx*dy = -4 + .25 - .5 - .5 - 4 = -8.75; sum dx^2 = sum dy^2 = 9.5 -> rho = -8.75 / 9.5
    assert spearman(lengths, scores) == pytest.approx(-35 / 38)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # no ties: 1 - 6 * sum(d^2) / (n (n^2 - 1)); d = 0, 1, -1, 0 -> 1 - 12 / 60 = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_spearman_undefined() -> None:
    assert spearman([1, 2], [2, 1]) is None           # fewer than 3 points
    assert spearman([], []) is None
    assert spearman([1, 2, 3], [0.5, 0.5, 0.5]) is None  # constant score
    assert spearman([7, 7, 7], [1, 2, 3]) is None        # constant length
    with pytest.raises(ValueError):
        spearman([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        spearman([1, 2, float("nan")], [1, 2, 3])


def test_spec_length_correlation_pairs_features() -> None:
    lengths = {"A": 100, "B": 250, "C": 250, "D": 400, "E": 900, "F": 50}
    scores = {"A": 0.9, "B": 0.5, "C": 0.7, "D": 0.5, "E": 0.1, "F": None, "G": 0.3}
    result = spec_length_correlation(lengths, scores)
    assert result.n == 5
    assert result.rho == pytest.approx(-35 / 38)
    assert result.skipped == ["F", "G"]  # F has no score, G no length
    assert spec_length_correlation({"A": 1, "B": 2}, {"A": 0.1, "B": 0.2}).rho is None


def test_word_count() -> None:
    # "Feature: Cart" 2 + "Scenario: add an item" 4 + "Given an empty cart" 4
    assert word_count("Feature: Cart\n  Scenario: add an item\n    Given an empty cart\n") == 10
    assert word_count("") == 0
