"""The cucumber-js corpus: js-algorand-sdk v3.5.2 with the Gherkin of algorand-sdk-testing at
the commit the py-algorand-sdk corpus uses (slow: assembled at pinned commits, its packages
installed from npm, built with Stryker's mutants, calibrated on a sample).

One requirement, two frameworks: the same feature files are the py-algorand-sdk behave corpus.
The corpus comes from the fetched mirrors under /work/.mirror when present, else GitHub; the
test is skipped, saying why, when neither can be reached.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.build.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "corpora"))
import js_algorand_sdk as corpus  # noqa: E402


@pytest.fixture(scope="module")
def js_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("jsalgorand")
    try:
        project = corpus.assemble(base / "js-algorand-sdk", corpus.default_source("js-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
        corpus.install(project)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the js-algorand-sdk corpus cannot be fetched or installed here: {exc}")
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(name="js-algorand-sdk"))
    return out


def test_js_algorand_sdk_builds_with_mutants_and_fresh_agreement(js_dataset: Path) -> None:
    dataset = load_dataset(js_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.version, project.runner) == ("js-algorand-sdk", "3.5.2", "cucumber-js 12.9.0")
    assert project.instances >= 100, project.exclusions
    gold = dataset.load_gold()
    # all 335 step definitions live in one steps.js: test implementations are statements of it
    assert {f.path for g in gold.values() for f in g.closure} == {"tests/cucumber/steps/steps.js"}
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 5000
    assert mutation["scorable_instances"] >= 0.8 * project.instances
    fresh = mutation["fresh_check"]
    assert fresh["sampled"] >= 50 and fresh["agree"] == fresh["sampled"], fresh["disagreements"]


def test_calibration_is_exact_on_a_sample(js_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(js_dataset)
    gold = load_dataset(js_dataset).load_gold()
    ids = sorted(p.instance_id for p in sets["oracle"] if gold[p.instance_id].kills)
    sample = sorted(random.Random(0).sample(ids, min(12, len(ids))))
    summaries = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in sample))
        summaries[name] = evaluate(js_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=sample, resamples=200))
    oracle, empty = summaries["oracle"], summaries["empty"]
    assert oracle["pass_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    # empty step functions may pass (they check nothing) and must kill nothing
    assert empty["kill_complete_at_1"]["value"] == 0.0 and empty["mutant_recall"]["value"] == 0.0
