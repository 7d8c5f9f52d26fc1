"""The bundled example (examples/tinyshop) built end to end, checked against its answer key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.dataset import load_dataset
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.integration

EXPECTED = (EXAMPLE / "EXPECTED.md").read_text(encoding="utf-8")


def _section(title: str, end: str) -> str:
    return EXPECTED[EXPECTED.index(title): EXPECTED.index(end)]


def _short(instance_id: str) -> str:
    return instance_id.split("/", 1)[1]


def test_counts_and_exclusions(example_dataset: Path) -> None:
    dataset = load_dataset(example_dataset)
    project = dataset.card.projects[0]
    assert (project.features_total, project.scenarios_total, project.instances) == (11, 57, 55)
    reasons = {_short(e.id): e.reason for e in dataset.card.exclusions}
    assert reasons == {"features/draft.feature": "feature_empty",
                       "features/checkout.feature:57": "step_undefined",
                       "features/order_lifecycle.feature:44": "needs_browser_or_live_service"}
    assert dataset.verify() == []
    assert len(dataset.card.scored_instances) == project.groups < project.instances


def test_test_levels_match_the_answer_key(example_dataset: Path) -> None:
    expected = dict(re.findall(r"\| (features/\S+:\d+) \| (?:scenario|outline) \| [^|]+ \| (\w+) \|", EXPECTED))
    dataset = load_dataset(example_dataset)
    got = {_short(i.id): i.test_level.value for i in dataset.instances}
    assert got == {k: v for k, v in expected.items() if k in got}
    assert set(got.values()) == {"component", "integration", "system"}


def test_depends_on_pairs_match_the_answer_key(example_dataset: Path) -> None:
    table = _section("## 3.", "## 4.")
    expected = set(re.findall(r"^\| (features/\S+:\d+) \| [^|]+ \| (features/\S+:\d+) \|", table, re.MULTILINE))
    dataset = load_dataset(example_dataset)
    got = {(_short(i.id), _short(b)) for i in dataset.instances for b in i.depends_on}
    assert got == expected
    # pairs through nested context.execute_steps() are found: bindings include nested steps
    assert ("features/order_lifecycle.feature:30", "features/checkout.feature:15") in got


def test_variant_groups_match_the_answer_key(example_dataset: Path) -> None:
    dataset = load_dataset(example_dataset)
    for group in re.findall(r"### V\d.*?\n(.*?)(?=\n### |\nOutline rows)", _section("## 4.", "## 5."), re.DOTALL):
        members = sorted(set(re.findall(r"\| (features/\S+:\d+) \|", group)))
        for member in members:
            inst = dataset.instance(f"tinyshop/{member}")
            assert sorted(_short(v) for v in inst.variant_of) == [m for m in members if m != member]


def test_fixture_loading_and_whole_response_scenarios(example_dataset: Path) -> None:
    dataset = load_dataset(example_dataset)
    gold = dataset.load_gold()
    fixture = gold["tinyshop/features/catalog.feature:6"]
    assert "features/fixtures/catalog.json" in fixture.data_files
    assert {f.role for f in fixture.closure} == {"step_definitions", "helper", "data"}
    whole = gold["tinyshop/features/api.feature:9"]
    assert "features/fixtures/expected_get_products_tea-001.json" in whole.data_files
    api = dataset.instance("tinyshop/features/api.feature:9")
    assert [d.qualname for g in api.target_interfaces for d in g.declarations] == ["Api.handle"]
    # the step text names one field; the binding is the whole-response check
    then = [b for b in whole.bindings if b.step_type == "then"]
    assert then and then[0].step_text == "the response status is 200"


def test_every_instance_has_a_validated_closure_and_hidden_targets(example_dataset: Path) -> None:
    dataset = load_dataset(example_dataset)
    gold = dataset.load_gold()
    for inst in dataset.instances:
        record = gold[inst.id]
        assert record.validation.positive_runs == [True] * 3, inst.id
        assert record.validation.negative_runs == [False] * 3, inst.id
        assert any(f.role == "step_definitions" for f in record.closure)
        assert not any(f.path.endswith("environment.py") for f in record.closure)  # infrastructure
        hidden = {(h.file, h.qualname) for h in inst.view.target_hidden}
        targets = {(d.file, d.qualname) for g in inst.target_interfaces for d in g.declarations}
        assert hidden, inst.id
        # every target interface is hidden, unless its body runs at import time
        import_time = set(dataset.card.projects[0].import_time_bodies)
        assert {t for t in targets if f"{t[0]}:{t[1]}" not in import_time} <= hidden, inst.id


def test_suite_instances_cover_every_scenario_once_with_narrow_targets(example_dataset: Path) -> None:
    """Suite mode (seed 002): one suite per feature file; its targets are mutants exactly one
    of its scenarios kills, at most 6 per feature and one per scenario."""
    from bench.dataset import load_dataset
    from bench.suite.instances import suite_instances

    dataset = load_dataset(example_dataset)
    gold = dataset.load_gold()
    suites = suite_instances(dataset)
    features = {i.requirement.feature_file for i in dataset.instances}
    assert [s.feature_file for s in suites] == sorted(features)
    assert sorted(i for s in suites for i in s.scenarios) == sorted(i.id for i in dataset.instances)
    assert sum(len(s.targets) for s in suites) > 0
    for suite in suites:
        assert len(suite.targets) <= 6 and len({t.scenario for t in suite.targets}) == len(suite.targets)
        for target in suite.targets:
            killers = [i for i in suite.scenarios if target.mutant in gold[i].kills]
            assert killers == [target.scenario]
        assert {(d.file, d.line) for i in suite.scenarios for d in gold[i].step_definitions} == \
            {(d.file, d.line) for d in suite.reference_step_definitions}


def test_scratch_files_shared_by_forked_mutant_runs_do_not_fake_kills(example_dataset: Path, tmp_path: Path) -> None:
    """configuration.feature's inline scenarios write the configuration into a scratch directory
    that before_scenario creates and after_scenario deletes. The builder forks mutant runs after
    the Given step (split stream); the first child's after_scenario deleted the directory every
    later child and the driver still needed, so the build recorded almost the whole pool as
    killed (69 of 70) and the developers' own test then failed its oracle calibration. The
    driver's clean run now vouches for its children: the oracle is kill-complete again."""
    import json

    from bench.calibrate import calibration_predictions
    from bench.evaluate import EvaluateOptions, evaluate

    dataset = load_dataset(example_dataset)
    assert dataset.card.mutation["split_stream_discarded"] >= 1
    inline = [i.id for i in dataset.instances if i.requirement.feature_file == "features/configuration.feature"
              and i.requirement.scenario_line in (25, 40)]
    assert len(inline) == 2
    gold = dataset.load_gold()
    for instance_id in inline:
        assert 0 < len(gold[instance_id].kills) < len(gold[instance_id].pool) * 0.8
    oracle = [p for p in calibration_predictions(example_dataset)["oracle"] if p.instance_id in inline]
    path = tmp_path / "oracle.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in oracle), encoding="utf-8")
    evaluate(example_dataset, path, tmp_path / "run", EvaluateOptions(workers=2, instances=inline, resamples=100))
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [(r["outcome"], r["kill_complete"]) for r in rows] == [("pass", True)] * 2
