"""Suite scoring from hand-made scenario verdicts (bench.suite.evaluate.score_suite_result,
summarize_suites) and the validity labels (bench.suite.metrics.validity_of)."""

from __future__ import annotations

import pytest

from bench.model import Outcome
from bench.suite.evaluate import ScenarioVerdict, score_suite_result, summarize_suites
from bench.suite.instances import SuiteInstance
from bench.suite.metrics import validity_of
from bench.suite.report import render_suite_report
from bench.suite.targets import TargetPair


def _suite(name: str, scenarios: list[str], targets: dict[str, str], words: int = 100) -> SuiteInstance:
    return SuiteInstance(id=f"p/{name}", project="p", feature_file=name, scenarios=scenarios,
                         specification_words=words, reference_step_definitions=[],
                         targets=[TargetPair(scenario=s, mutant=m, unrelated_kills=0) for m, s in targets.items()],
                         candidates=len(targets), dropped=0)


def _verdict(instance_id: str, outcome: Outcome, kills: list[str] = (), detail: str = "") -> ScenarioVerdict:
    stability = "valid" if outcome is Outcome.passed else "flaky" if outcome is Outcome.unstable else "failing"
    return ScenarioVerdict(instance_id=instance_id, outcome=outcome, stability=stability, detail=detail,
                           unimplemented=outcome is Outcome.binding_failure and "undefined" in detail,
                           kills=list(kills) if stability == "valid" else [])


def test_validity_of_labels() -> None:
    checked = validity_of({"a": "valid", "b": "flaky", "c": "failing", "d": "valid"})
    assert (checked.generated, checked.valid, checked.flaky, checked.failing) == (4, 2, 1, 1)
    assert checked.value == 0.5 and checked.valid_ids == ["a", "d"]
    assert validity_of({}).value is None
    with pytest.raises(ValueError):
        validity_of({"a": "passed"})  # type: ignore[dict-item]


def test_unimplemented_scenarios_count_as_generated_and_failing() -> None:
    """4 scenarios, one left undefined, one flaky: validity 2/4 (not 2/3); the flaky scenario's
    'kill' never counts; size 3 implemented of 4."""
    suite = _suite("f.feature", ["s1", "s2", "s3", "s4"], {"m1": "s1", "m2": "s2", "m3": "s3"})
    verdicts = [_verdict("s1", Outcome.passed, ["m1", "m3"]),
                _verdict("s2", Outcome.unstable),
                _verdict("s3", Outcome.binding_failure, detail="undefined step: Given x"),
                _verdict("s4", Outcome.passed)]
    result = score_suite_result(suite, verdicts, "", 1.0, None)
    assert result.validity.value == 0.5 and result.validity.flaky == 1 and result.validity.failing == 1
    assert result.unimplemented == ["s3"]
    assert result.mutation.killed_ids == ["m1", "m3"] and result.mutation.value == pytest.approx(2 / 3)
    assert result.size.generated == 3 and result.size.ratio == 0.75


def test_without_mutant_runs_the_mutation_score_is_undefined() -> None:
    suite = _suite("f.feature", ["s1"], {"m1": "s1"})
    result = score_suite_result(suite, [_verdict("s1", Outcome.passed)], "", 0.0, None, mutants=False)
    assert result.mutation.targets == 0 and result.mutation.value is None


def test_summary_pools_and_correlates() -> None:
    a = score_suite_result(_suite("a.feature", ["a1", "a2"], {"m1": "a1", "m2": "a2"}, words=50),
                           [_verdict("a1", Outcome.passed, ["m1"]), _verdict("a2", Outcome.passed)], "", 1.0, None)
    b = score_suite_result(_suite("b.feature", ["b1"], {"m3": "b1"}, words=80),
                           [_verdict("b1", Outcome.assertion_failure)], "", 1.0, None)
    c = score_suite_result(_suite("c.feature", ["c1", "c2"], {"m4": "c1"}, words=120),
                           [_verdict("c1", Outcome.passed, ["m4"]), _verdict("c2", Outcome.passed)], "", 1.0, None)
    summary = summarize_suites([a, b, c], dataset_name="d", predictions_sha256="x")
    assert summary["scenarios"] == 5 and summary["validity_pooled"] == 0.8
    assert summary["validity_mean"] == pytest.approx(round((1 + 0 + 1) / 3, 4))
    assert summary["mutation_score_pooled"] == 0.5  # m1, m4 of m1..m4
    assert summary["mutation_score_mean"] == pytest.approx(round((0.5 + 0 + 1) / 3, 4))
    # lengths 50, 80, 120 against mutation scores 0.5, 0, 1: ranks (1,2,3) vs (2,1,3) -> rho 0.5
    assert summary["spearman_length_mutation"]["rho"] == pytest.approx(0.5)


def test_report_renders_each_configuration(tmp_path) -> None:
    import json

    result = score_suite_result(_suite("a.feature", ["a1"], {"m1": "a1"}), [_verdict("a1", Outcome.passed, ["m1"])],
                                "", 1.0, None)
    config = tmp_path / "oracle@ah"
    config.mkdir()
    summary = summarize_suites([result], dataset_name="d", predictions_sha256="x")
    (config / "suite_summary.json").write_text(json.dumps({**summary, "config": "oracle@ah"}))
    (config / "suite_results.jsonl").write_text(result.model_dump_json() + "\n")
    text = render_suite_report(tmp_path, "t")
    assert "| oracle@ah | feature | 1 | 1 | 1.000 | 1.000 | 0 | 0 | 1.000 | 1.000 | 1 |" in text
    assert "| p/a.feature | 100 | 1 | 1 | 0 | 0 | 1/1 | 1.000 | 1.000 |" in text
