"""ReqMemBench diagnostics on hand-computed cases (bench.history.diagnostics)."""

from __future__ import annotations

import itertools
import random

import pytest

from bench.history.diagnostics import attribute_reconstruction, post_state_score, set_score, token_jaccard


def test_set_scores() -> None:
    s = set_score(["a", "b", "c"], ["b", "c", "d", "e"])
    assert (s.correct, s.precision, s.recall) == (2, 2 / 3, 0.5)
    assert s.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))  # 4/7
    assert s.f1 == pytest.approx(4 / 7)
    assert set_score([], ["a"]).precision is None and set_score([], ["a"]).recall == 0.0
    assert set_score([], ["a"]).f1 == 0.0  # an empty answer found nothing: F1 0, not undefined
    assert set_score(["a"], []).recall is None and set_score(["a"], []).f1 is None
    assert set_score(["x"], ["y"]).f1 == 0.0


def test_attribute_reconstruction() -> None:
    gold = {"A": {"steps": ["s1"], "examples": [], "tags": ["@wip"], "deferred": True},
            "B": {"steps": ["s2"], "examples": [["1"]], "tags": [], "deferred": False}}
    predicted = {"A": {"steps": ["s1"], "examples": [], "tags": [], "deferred": True},  # 3 of 4
                 "C": {"steps": ["s3"]}}  # not a gold atom; B left out: 0
    assert attribute_reconstruction(predicted, gold) == pytest.approx((3 / 4 + 0) / 2)
    assert attribute_reconstruction({}, {}) is None


def test_token_jaccard() -> None:
    assert token_jaccard("Given a table with 2 rows", "given a TABLE, 3 rows") == pytest.approx(4 / 7)
    assert token_jaccard("", "") == 1.0 and token_jaccard("a", "") == 0.0


def test_post_state_score_matches_one_to_one() -> None:
    gold = ["add a row to the table", "delete a column"]
    # a duplicate cannot be matched twice: (1 + 0) ... the second copy pairs with the other statement
    dup = post_state_score(["add a row to the table", "add a row to the table"], gold)
    assert dup.score == pytest.approx(2 * (1.0 + 0.125) / 4)  # "a" shared with "delete a column": 1/8
    exact = post_state_score(list(reversed(gold)), gold)
    assert exact.score == 1.0 and sorted((i, j) for i, j, _ in exact.pairs) == [(0, 1), (1, 0)]
    assert post_state_score(["add a row to the table"], gold).score == pytest.approx(2 * 1.0 / 3)
    assert post_state_score([], gold).score == 0.0 and post_state_score([], []).score is None


def test_post_state_matching_is_optimal_against_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n, m = rng.randint(1, 5), rng.randint(1, 5)
        sims = [[rng.choice([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]) for _ in range(m)] for _ in range(n)]
        predicted, gold = [str(i) for i in range(n)], [str(j) for j in range(m)]
        got = post_state_score(predicted, gold, lambda p, g, sims=sims: sims[int(p)][int(g)])
        best = max(sum(sims[i][j] for i, j in zip(rows, cols))
                   for k in [min(n, m)] for rows in itertools.permutations(range(n), k)
                   for cols in itertools.permutations(range(m), k))
        assert got.score == pytest.approx(2 * best / (n + m))
