"""The second real behave corpus: py-algorand-sdk, whose Gherkin lives in another repository
(algorand-sdk-testing, copied into tests/features as its test-harness.sh does), whose behave
base dir is ``tests/`` and whose step modules import each other through the ``tests`` package
(slow: assembled at pinned commits, built with mutants, calibrated on a sample).

The corpus is assembled from the fetched
mirrors by a recipe kept outside the repository (tests/integration/recipes.py); the test is
skipped, saying why, when the recipe or the mirrors are absent.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from tests.integration.corpus_checks import assemble_py_algorand_sdk

# heavy: a full build with mutants (15–30 min on two cores); CI runs test_corpus_slices.py instead
pytestmark = [pytest.mark.slow, pytest.mark.heavy]



@pytest.fixture(scope="module")
def algorand_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("algorand")
    project = assemble_py_algorand_sdk(base / "py-algorand-sdk")
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(install_deps=True))
    return out


def test_the_second_behave_layout_builds(algorand_dataset: Path) -> None:
    dataset = load_dataset(algorand_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.version, project.features_dir) == ("py-algorand-sdk", "2.11.1", "tests")
    assert project.production == ["algosdk"]
    # the package-imported sibling step module no longer makes every scenario ambiguous
    assert "validation_positive_failed" not in project.exclusions, project.exclusions
    # every selected scenario, 121 at the pinned commits: 22 of them read the mock server's status
    # file, which the corpus script seeds with the default the suite itself restores (before, only
    # a scenario that ran earlier created it, and they failed alone, upstream too)
    assert project.instances >= 121, project.exclusions
    assert set(project.exclusions) == {"not_selected_by_tags"}, project.exclusions
    # only the project's unit tags are its suite (integration scenarios need a live network)
    assert project.exclusions.get("not_selected_by_tags", 0) > 0
    gold = dataset.load_gold()
    # a test implementation that spans step modules imported through the package
    assert any(len({f.path for f in g.closure if f.path.endswith(".py")}) > 1 for g in gold.values())
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 1000
    assert mutation["scorable_instances"] >= 0.8 * project.instances


def test_calibration_is_exact_on_a_sample(algorand_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(algorand_dataset)
    gold = load_dataset(algorand_dataset).load_gold()
    ids = sorted(p.instance_id for p in sets["oracle"] if gold[p.instance_id].kills)
    sample = sorted(random.Random(0).sample(ids, min(20, len(ids))))
    summaries = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in sample))
        summaries[name] = evaluate(algorand_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=sample, resamples=200))
    oracle, empty = summaries["oracle"], summaries["empty"]
    assert oracle["pass_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert empty["kill_complete_at_1"]["value"] == 0.0 and empty["mutant_recall"]["value"] == 0.0
