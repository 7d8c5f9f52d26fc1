"""The metric formulas on hand-computed cases."""

from __future__ import annotations

import pytest

from bench.evaluate import f1, jaccard, recall
from bench.model import InstanceResult, Outcome
from bench.stats import cluster_bootstrap, mcnemar_exact_one_sided, project_average, sign_flip_one_sided
from bench.summary import summarize_run


def test_set_metrics() -> None:
    assert f1({"a", "b"}, {"b", "c", "d"}) == pytest.approx(2 * 1 / 5)
    assert f1(set(), {"a"}) == 0.0
    assert jaccard({("f", 1), ("f", 2)}, {("f", 2), ("f", 3)}) == pytest.approx(1 / 3)
    assert recall({"m1", "m3"}, {"m1", "m2"}) == 0.5
    assert recall({"m1"}, set()) is None


def _result(project: str, feature: str, outcome: str, kc: bool, recall_: float | None, api: float | None,
            cov: float) -> InstanceResult:
    return InstanceResult(instance_id=f"{project}/{feature}:{id(object())}", project=project, feature_file=feature,
                          outcome=Outcome(outcome), coverage_jaccard=cov, mutant_recall=recall_, api_f1=api,
                          kill_complete=kc, kill_complete_relaxed=kc, ground_truth_kills=3, generated_kills=0,
                          evaluation_seconds=0.0)


def test_aggregation_by_hand() -> None:
    results = [
        # project p: 4 planned, 1 infrastructure failure
        _result("p", "a.feature", "pass", True, 1.0, 1.0, 1.0),
        _result("p", "a.feature", "pass", False, 0.5, 0.5, 0.5),
        _result("p", "b.feature", "assertion_failure", False, 0.0, 0.0, 0.0),
        _result("p", "b.feature", "infrastructure_failure", False, 0.0, None, 0.0),
        # project q: 2 planned
        _result("q", "c.feature", "pass", True, 1.0, None, 0.8),
        _result("q", "c.feature", "build_failure", False, 0.0, None, 0.0),
    ]
    summary = summarize_run(results, "d", "sha", resamples=200)
    # Pass@1 = #pass / N_exec per project: p 2/3, q 1/2 -> equal-weight mean
    assert summary["pass_at_1"]["value"] == pytest.approx((2 / 3 + 1 / 2) / 2, abs=1e-6)
    # KillComplete@1 over the full planned N: p 1/4, q 1/2
    assert summary["kill_complete_at_1"]["value"] == pytest.approx((1 / 4 + 1 / 2) / 2, abs=1e-6)
    # API F1 only where the ground truth calls production: p (1 + .5 + 0) / 3, q has none
    assert summary["api_f1"]["value"] == pytest.approx(0.5, abs=1e-6)
    assert summary["coverage_jaccard"]["value"] == pytest.approx(((1 + .5) / 4 + .8 / 2) / 2, abs=1e-6)
    assert summary["n"] == 6 and summary["n_exec"] == 5
    assert summary["outcomes"]["infrastructure_failure"] == 1
    low, high = summary["kill_complete_at_1"]["ci_low"], summary["kill_complete_at_1"]["ci_high"]
    assert low <= summary["kill_complete_at_1"]["value"] <= high


def test_cluster_bootstrap_resamples_feature_files() -> None:
    rows = [{"project": "p", "feature_file": "a", "x": 1.0}, {"project": "p", "feature_file": "a", "x": 1.0},
            {"project": "p", "feature_file": "b", "x": 0.0}]
    metric = lambda rs: sum(r["x"] for r in rs) / len(rs)
    assert project_average(rows, metric) == pytest.approx(2 / 3)
    low, high = cluster_bootstrap(rows, metric, resamples=500, seed=1)
    # whole files are drawn: possible means are 0, 2/3 (a+b) and 1 (a+a)
    assert low == 0.0 and high == 1.0


def test_mcnemar_exact() -> None:
    # 6 discordant pairs, all in favour of A: p = 1/64
    a = [True] * 6 + [True, False]
    b = [False] * 6 + [True, False]
    test = mcnemar_exact_one_sided(a, b)
    assert test.n == 6 and test.p_value == pytest.approx(1 / 64)
    same = mcnemar_exact_one_sided(a, a)
    assert same.p_value == 1.0 and same.n == 0
    # 5 vs 1: P(X >= 5 | n=6) = (6 + 1) / 64
    assert mcnemar_exact_one_sided([True] * 5 + [False], [False] * 5 + [True]).p_value == pytest.approx(7 / 64)


def test_sign_flip_exact() -> None:
    a = [0.9, 0.8, 0.7, 0.6]
    b = [0.1, 0.2, 0.3, 0.4]
    # all four differences positive: only the identity assignment reaches the observed sum
    assert sign_flip_one_sided(a, b).p_value == pytest.approx(1 / 16)
    assert sign_flip_one_sided(b, a).p_value == pytest.approx(1.0)
    assert sign_flip_one_sided(a, a).p_value == 1.0


def test_evaluation_cost_per_prediction_is_reported_as_medians() -> None:
    from bench.summary import _efficiency

    rows = [{"metadata": {}, "outcome": "pass", "kill_complete": True, "evaluation_seconds": 8.0},
            {"metadata": {}, "outcome": "pass", "kill_complete": True, "evaluation_seconds": 12.0},
            {"metadata": {}, "outcome": "pass", "kill_complete": False, "evaluation_seconds": 3.0},
            {"metadata": {}, "outcome": "assertion_failure", "kill_complete": False, "evaluation_seconds": 0.5}]
    efficiency = _efficiency(rows)
    assert efficiency["evaluation_seconds"] == 23.5
    assert efficiency["evaluation_seconds_median"] == 5.5
    assert efficiency["evaluation_seconds_median_kill_complete"] == 10.0
    assert _efficiency(rows[2:])["evaluation_seconds_median_kill_complete"] is None


def test_intervals_do_not_collapse_at_small_n_and_warn_on_few_clusters() -> None:
    """2 passing instances in 1 feature file: the percentile bootstrap said [1, 1]."""
    both = [_result("p", "a.feature", "pass", True, 1.0, 1.0, 1.0) for _ in range(2)]
    summary = summarize_run(both, "d", "sha", resamples=200)
    kc = summary["kill_complete_at_1"]
    assert kc["value"] == 1.0 and kc["ci_high"] == 1.0
    assert 0.1 < kc["ci_low"] < 0.5  # Wilson's 95% interval for 2/2 is [0.342, 1]
    assert any("1 feature-file cluster" in w for w in summary["warnings"])
    few = [_result("p", f"{i}.feature", "pass", i % 2 == 0, 1.0, 1.0, 1.0) for i in range(4)]
    assert any("only 4 feature-file clusters" in w for w in summarize_run(few, "d", "sha", resamples=200)["warnings"])
    many = [_result("p", f"{i}.feature", "pass", i % 3 == 0, 1.0, 1.0, 1.0) for i in range(30)]
    assert summarize_run(many, "d", "sha", resamples=200)["warnings"] == []


def test_undefined_metrics_are_none_not_zero() -> None:
    """No ground-truth API calls anywhere: API F1 is undefined, not 0 with a [0, 0] interval."""
    rows = [_result("p", "a.feature", "pass", True, 1.0, None, 1.0)]
    api = summarize_run(rows, "d", "sha", resamples=100)["api_f1"]
    assert api == {"value": None, "ci_low": None, "ci_high": None, "n": 0}


def test_bca_matches_scipy_on_unclustered_data() -> None:
    """One instance per feature file and one project: our BCa is scipy's BCa on the same data."""
    import numpy as np
    from scipy.stats import bootstrap

    values = [0.0, 0.1, 0.15, 0.2, 0.2, 0.3, 0.35, 0.5, 0.6, 0.9, 1.0, 0.05, 0.12, 0.4, 0.25, 0.33, 0.8, 0.07]
    rows = [{"project": "p", "feature_file": f"f{i}", "x": v} for i, v in enumerate(values)]
    ours = cluster_bootstrap(rows, lambda rs: sum(r["x"] for r in rs) / len(rs), resamples=20000, seed=3)
    theirs = bootstrap((np.array(values),), np.mean, n_resamples=20000, method="BCa", random_state=3).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.01) and ours[1] == pytest.approx(theirs.high, abs=0.01)


def test_a_run_judged_without_the_guard_says_so_in_its_summary() -> None:
    """js-algorand-sdk was judged unguarded for three stops and only results.jsonl said so."""
    guarded = [_result("p", f"{i}.feature", "pass", True, 1.0, 1.0, 1.0).model_copy(
        update={"confirmation": {"guard": "node-permission"}}) for i in range(30)]
    assert summarize_run(guarded, "d", "sha", resamples=200)["warnings"] == []
    reason = "off: the suite does not load under Node's permission model (ERR_ACCESS_DENIED)"
    mixed = [r.model_copy(update={"confirmation": {"guard": reason}}) if i < 7 else r for i, r in enumerate(guarded)]
    warnings = summarize_run(mixed, "d", "sha", resamples=200)["warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("7 of 30 judgement(s) ran without the in-process guard") and reason in warnings[0]
