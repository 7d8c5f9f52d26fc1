"""The real corpus: python-docx 1.2.0's own behave suite, from PyPI (slow: a full build with
mutants, then calibration on a sample of its instances)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from tests.integration.corpus_checks import assert_generic_attacks_defeated

# heavy: a full build with mutants (15–30 min on two cores); CI runs test_corpus_slices.py instead
pytestmark = [pytest.mark.slow, pytest.mark.heavy]


@pytest.fixture(scope="module")
def docx_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docx") / "dataset"
    build_dataset("python-docx==1.2.0", out, BuildOptions(install_deps=True))
    return out


def test_python_docx_dataset(docx_dataset: Path) -> None:
    dataset = load_dataset(docx_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.version, project.features_total) == ("python-docx", "1.2.0", 67)
    assert project.source_sha256 == "7bc9d7b7d8a69c9c02ca09216118c86552704edc23bac179283f2e38f86220ce"
    # every scenario of the suite passes upstream, so every one must validate
    assert project.instances == project.scenarios_total > 200
    assert project.exclusions == {}

    # the paper's example requirement
    example = dataset.instance("python-docx/features/sty-latent-props.feature:36")
    declarations = [(g.declaring_type, d.qualname, d.signature)
                    for g in example.target_interfaces for d in g.declarations]
    assert declarations == [("docx.styles.latent._LatentStyle", "_LatentStyle.name", "@property\ndef name(self):")]
    assert "Scenario: Get latent style name" in example.requirement.gherkin

    gold = dataset.load_gold()
    example_gold = gold[example.id]
    assert {f.path for f in example_gold.closure} == {
        "features/steps/styles.py", "features/steps/helpers.py", "features/steps/test_files/sty-known-styles.docx"}
    assert "src/docx/api.py:Document" in example_gold.api_calls       # setup call, all steps
    assert "src/docx/api.py:Document" not in example_gold.target_calls  # not a When/Then call
    for record in gold.values():
        assert record.validation.positive_runs == [True, True, True]
        assert record.validation.negative_runs == [False, False, False]
        assert record.covered_lines, record.instance_id
    # outlines are one instance whose rows all run
    outline = dataset.instance("python-docx/features/sty-latent-props.feature:7")
    assert outline.requirement.run_lines == [13, 14, 15, 16, 17, 18]
    assert {b.scenario_line for b in gold[outline.id].bindings} == {13, 14, 15, 16, 17, 18}
    assert sum(1 for i in dataset.instances if i.target_interfaces) >= 0.95 * project.instances

    # stage IV: pools, kills, assertion-dependent subsets
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 2000
    assert set(mutation["mutants_per_operator"]) == set(mutation["operator_families"])
    assert all(set(record.kills) <= set(record.pool) for record in gold.values())
    assert all(set(record.assertion_dependent) <= set(record.kills) for record in gold.values())
    assert mutation["scorable_instances"] >= 0.95 * project.instances
    assert 20 < mutation["mean_ground_truth_kills"] < mutation["mean_pool_size"]


def test_calibration_on_a_sample(docx_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(docx_dataset)
    ids = sorted(p.instance_id for p in sets["oracle"])
    sample = sorted(random.Random(0).sample(ids, 40))
    summaries = {}
    for name, predictions in sets.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in predictions if p.instance_id in sample))
        summaries[name] = evaluate(docx_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=sample, resamples=500))
    oracle, empty, stripped = summaries["oracle"], summaries["empty"], summaries["then-stripped"]
    assert oracle["pass_at_1"]["value"] == 1.0
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["api_f1"]["value"] == 1.0 and oracle["coverage_jaccard"]["value"] == 1.0
    assert empty["mutant_recall"]["value"] == 0.0 and empty["kill_complete_at_1"]["value"] == 0.0
    assert 0.0 < stripped["mutant_recall"]["value"] < 1.0
    assert stripped["kill_complete_at_1"]["value"] < oracle["kill_complete_at_1"]["value"]


def test_generic_attacks_are_defeated_on_the_real_corpus(docx_dataset: Path, tmp_path: Path) -> None:
    """The attacks an agent needs no instance knowledge for (tests/adversarial/generic.py) each
    scored KillComplete everywhere before the trust boundary; on python-docx none may."""
    assert_generic_attacks_defeated(docx_dataset, tmp_path, 3, resamples=100)
