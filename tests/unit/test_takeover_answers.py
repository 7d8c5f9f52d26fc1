"""Phase-A answers of the takeover task, scored on hand-computed cases."""

from __future__ import annotations

import pytest

from bench.history.answers import TakeoverAnswer, gold_answer, resolve_commits, score_answer, stated
from bench.history.atoms import AtomState, AtomStep
from bench.history.delivery import compile_errors, regression_selection
from bench.history.takeover import HistoryEntry, TakeoverGold, TakeoverTarget
from harness.takeover import parse_answer, render_history

A = "features/a.feature::Adds"
B = "features/a.feature::Keeps"
SHA1, SHA2 = "1" * 40, "2" * 40


def _atom(atom_id: str, steps: list[tuple[str, str]], deferred: bool = False) -> AtomState:
    return AtomState(atom_id=atom_id, feature_file="features/a.feature", scenario=atom_id.split("::")[1],
                     steps=[AtomStep(type=t, text=x) for t, x in steps], deferred=deferred)  # type: ignore[arg-type]


TARGET = TakeoverTarget(
    id="p@x", project="p", commit="3" * 40, parent=SHA2, date="2026-01-01", request="add it", history_end=2,
    relevant_commits=[SHA1], workspace="trees/x", dataset="datasets/x", features_dir="features", production=["src"],
    oracle_pre_state=[_atom(A, [("given", "a cart"), ("then", "it is empty")], deferred=True)],
    oracle_post_state=[_atom(A, [("given", "a cart"), ("when", "I add tea"), ("then", "it holds tea")]),
                       _atom(B, [("given", "a cart"), ("then", "it is kept")])])
GOLD = TakeoverGold(id="p@x", target_scenarios=["p/features/a.feature:3"], regression_scenarios=[],
                    relevant_atoms=[A, B], evidence_commits=[SHA1], affected={A: "resumed", B: "added"})
HISTORY = [HistoryEntry(index=0, sha=SHA1, date="2025", subject="one"),
           HistoryEntry(index=1, sha=SHA2, date="2025", subject="two")]


def test_the_gold_answer_scores_one_and_an_empty_answer_zero() -> None:
    perfect = score_answer(gold_answer(TARGET, GOLD), TARGET, GOLD, HISTORY)
    assert (perfect.relevant.f1, perfect.evidence.f1, perfect.attribute_reconstruction, perfect.post_state) == \
        (1.0, 1.0, 1.0, 1.0)
    assert perfect.exact_post_state
    empty = score_answer(TakeoverAnswer(target_id="p@x"), TARGET, GOLD, HISTORY)
    assert (empty.relevant.f1, empty.evidence.f1, empty.attribute_reconstruction, empty.post_state) == \
        (0.0, 0.0, 0.0, 0.0)
    unreadable = score_answer(TakeoverAnswer(target_id="p@x", error="no JSON object in the reply"), TARGET, GOLD,
                              HISTORY)
    assert not unreadable.decision_correct  # an answer that could not be read decided nothing


def test_a_partial_answer_by_hand() -> None:
    gold_a = stated(TARGET.oracle_post_state[0])
    assert gold_a.steps == ["Given a cart", "When I add tea", "Then it holds tea"]
    answer = TakeoverAnswer(
        target_id="p@x", relevant_atoms=[A, "features/a.feature::Other"], evidence_commits=["1111111", "deadbeef"],
        pre_state=[{"atom": A, "steps": ["Given a cart", "Then it is empty"], "deferred": False}],
        post_state=[gold_a])
    score = score_answer(answer, TARGET, GOLD, HISTORY)
    # relevant: {A, Other} vs {A, B}: P = R = 1/2; evidence: {SHA1, deadbeef} vs {SHA1}: P 1/2, R 1
    assert (score.relevant.precision, score.relevant.recall, score.relevant.f1) == (0.5, 0.5, 0.5)
    assert score.evidence.f1 == pytest.approx(2 / 3)
    # pre-state of A: steps, examples and tags right, deferred wrong: 3 of 4 attributes
    assert score.attribute_reconstruction == 0.75
    # post-state: A matched exactly (s = 1), B missing: 2·1 / (1 + 2)
    assert score.post_state == pytest.approx(2 / 3) and not score.exact_post_state
    clarifying = score_answer(answer.model_copy(update={"decision": "clarify"}), TARGET, GOLD, HISTORY)
    assert clarifying.post_state == 0.0 and not clarifying.decision_correct


def test_cited_commits_resolve_by_unique_prefix_only() -> None:
    assert resolve_commits(["1111111", "222222", "zzz"], HISTORY) == {SHA1, "222222", "zzz"}


def test_parse_answer_reads_the_first_json_object_or_says_why_not() -> None:
    answer = parse_answer("p@x", 'Sure.\n{"relevant_atoms": ["a"], "decision": "act"}\nDone.')
    assert answer.relevant_atoms == ["a"] and answer.error == ""
    assert parse_answer("p@x", "no json here").error == "no JSON object in the reply"
    assert parse_answer("p@x", '{"decision": "maybe"}').error.startswith("unreadable answer")


def test_history_keeps_the_newest_entries_within_the_budget() -> None:
    entries = [HistoryEntry(index=i, sha=f"{i:040d}", date="2025-01-01", subject=f"commit {i}",
                            events=[f"added features/a.feature::S{i}"]) for i in range(50)]
    text = render_history(entries, budget=400)
    assert "commit 49" in text and "commit 0 " not in text and text.startswith("[")
    assert "older commits omitted" in text


def test_compile_errors_and_a_content_seeded_regression_sample() -> None:
    assert compile_errors({"src/a.py": "x = 1\n"}) == []
    assert compile_errors({"src/a.py": "def (:\n"})[0].startswith("src/a.py: SyntaxError")
    regression = [f"p/features/f{i}.feature:3" for i in range(30)] + ["p/features/a.feature:9"]
    one = regression_selection(TARGET, regression, {"src/x.py": "1"}, {"features/a.feature"}, 5)
    again = regression_selection(TARGET, regression, {"src/x.py": "1"}, {"features/a.feature"}, 5)
    other = regression_selection(TARGET, regression, {"src/x.py": "2"}, {"features/a.feature"}, 5)
    assert one == again and len(one) == 6 and "p/features/a.feature:9" in one  # the same feature: always
    assert one != other  # another delivery, another sample (with overwhelming probability)
    assert regression_selection(TARGET, regression, {}, set(), 0) == regression
