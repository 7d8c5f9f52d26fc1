"""Both real corpora, sliced to CI size: python-docx 1.2.0 from PyPI and py-algorand-sdk at its
pinned commits, each with most of its feature files removed, built **with mutants** through the
whole pipeline, then calibrated, attacked and run through suite mode's documentation ablation.

The full builds (every feature file: 15–30 minutes each on two cores) are in test_python_docx.py
and test_py_algorand_sdk.py, marked ``heavy``: CI runs these slices instead, so the real corpora
are exercised on every push and the run fits its time budget.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.project import default_cache_dir, fetch_sdist
from tests.integration.corpus_checks import assemble_py_algorand_sdk, assert_generic_attacks_defeated
from tests.integration.readable_files import assert_nothing_to_steal

pytestmark = pytest.mark.slow


DOCX_FEATURES = {"api-open-document", "blk-add-paragraph", "blk-add-table", "doc-add-comment", "par-set-text",
                 "run-add-content", "sty-latent-props", "tbl-cell-text", "txt-add-break"}
ALGORAND_FEATURES = {"algodclient_paths", "program_sanity_check", "sourcemap", "rekey", "feetest"}


def keep_only(features: Path, keep: set[str]) -> int:
    """Remove every feature file under ``features`` whose stem is not in ``keep``; the kept count."""
    kept = 0
    for path in sorted(features.rglob("*.feature")):
        if path.stem in keep:
            kept += 1
        else:
            path.unlink()
    return kept


@pytest.fixture(scope="module")
def docx_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("docx-slice")
    tree, _ = fetch_sdist("python-docx", "1.2.0", default_cache_dir())
    project = base / "python-docx"
    shutil.copytree(tree, project)
    assert keep_only(project / "features", DOCX_FEATURES) == len(DOCX_FEATURES)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(install_deps=True))
    return out


@pytest.fixture(scope="module")
def algorand_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("algorand-slice")
    project = assemble_py_algorand_sdk(base / "py-algorand-sdk")
    assert keep_only(project / "tests" / "features" / "unit", ALGORAND_FEATURES) == len(ALGORAND_FEATURES)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(install_deps=True))
    return out


def _calibrate(dataset_dir: Path, tmp_path: Path, names: tuple[str, ...], size: int) -> dict[str, dict]:
    sets = calibration_predictions(dataset_dir)
    gold = load_dataset(dataset_dir).load_gold()
    ids = sorted(p.instance_id for p in sets["oracle"] if gold[p.instance_id].kills)
    sample = sorted(random.Random(0).sample(ids, min(size, len(ids))))
    summaries = {}
    for name in names:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in sample))
        summaries[name] = evaluate(dataset_dir, path, tmp_path / name, EvaluateOptions(instances=sample, resamples=200))
    return summaries


def test_python_docx_slice_builds_with_mutants(docx_slice: Path) -> None:
    dataset = load_dataset(docx_slice)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.features_total) == ("python-docx", len(DOCX_FEATURES))
    assert project.instances == project.scenarios_total >= 15 and project.exclusions == {}
    example = dataset.instance("python-docx/features/sty-latent-props.feature:36")  # the paper's example
    assert [(g.declaring_type, d.qualname) for g in example.target_interfaces for d in g.declarations] == [
        ("docx.styles.latent._LatentStyle", "_LatentStyle.name")]
    gold = dataset.load_gold()
    assert {f.path for f in gold[example.id].closure} == {
        "features/steps/styles.py", "features/steps/helpers.py", "features/steps/test_files/sty-known-styles.docx"}
    for record in gold.values():
        assert record.validation.positive_runs == [True, True, True]
        assert record.validation.negative_runs == [False, False, False]
        assert set(record.kills) <= set(record.pool) and set(record.assertion_dependent) <= set(record.kills)
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 2000 and mutation["scorable_instances"] >= 0.9 * project.instances


def test_python_docx_slice_calibration_and_generic_attacks(docx_slice: Path, tmp_path: Path) -> None:
    summaries = _calibrate(docx_slice, tmp_path, ("oracle", "empty", "then-stripped"), 8)
    oracle, empty, stripped = summaries["oracle"], summaries["empty"], summaries["then-stripped"]
    assert oracle["pass_at_1"]["value"] == 1.0 and oracle["kill_complete_at_1"]["value"] == 1.0, \
        json.dumps(oracle["outcomes"])
    assert oracle["api_f1"]["value"] == 1.0 and oracle["coverage_jaccard"]["value"] == 1.0
    assert empty["mutant_recall"]["value"] == 0.0 and empty["kill_complete_at_1"]["value"] == 0.0
    assert stripped["kill_complete_at_1"]["value"] < 1.0
    # the attacks an agent needs no instance knowledge for: none may score KillComplete
    assert_generic_attacks_defeated(docx_slice, tmp_path, 1)
    # nothing to steal: no file readable inside an evaluation sandbox is a ground-truth file
    assert_nothing_to_steal(docx_slice, tmp_path / "readable")


def test_py_algorand_sdk_slice_builds_and_calibrates(algorand_slice: Path, tmp_path: Path) -> None:
    dataset = load_dataset(algorand_slice)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.features_dir, project.production) == ("py-algorand-sdk", "tests", ["algosdk"])
    assert project.instances >= 8 and set(project.exclusions) <= {"not_selected_by_tags"}, project.exclusions
    gold = dataset.load_gold()
    # step modules imported through the ``tests`` package: closures span several of them
    assert any(len({f.path for f in g.closure if f.path.endswith(".py")}) > 1 for g in gold.values())
    assert dataset.card.mutation["scorable_instances"] >= 0.8 * project.instances
    summaries = _calibrate(algorand_slice, tmp_path, ("oracle", "empty"), 8)
    assert summaries["oracle"]["pass_at_1"]["value"] == 1.0
    assert summaries["oracle"]["kill_complete_at_1"]["value"] == 1.0, json.dumps(summaries["oracle"]["outcomes"])
    assert summaries["empty"]["kill_complete_at_1"]["value"] == 0.0
    # nothing to steal: no file readable inside an evaluation sandbox is a ground-truth file
    assert_nothing_to_steal(algorand_slice, tmp_path / "readable")


@pytest.mark.parametrize("corpus", ["docx", "algorand"])
def test_documentation_ablation_on_the_real_corpora(corpus: str, request: pytest.FixtureRequest,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Suite mode with the documentation instead of the feature file, through ``req2test run``: the
    developers' feature written as the agent's own (oracle) kills every target; steps that do
    nothing kill none; nothing written leaves every target alive."""
    import yaml

    from bench.suite.instances import suite_instances
    from harness.experiment.runner import ExperimentRunner, prepare

    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))
    dataset_dir = request.getfixturevalue("docx_slice" if corpus == "docx" else "algorand_slice")
    suites = sorted((s for s in suite_instances(load_dataset(dataset_dir)) if s.targets),
                    key=lambda s: (-len(s.targets), s.id))[:2]
    docs = {"specification": "documentation"}
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "docs", "dataset": str(dataset_dir), "mode": "suite", "views": ["ah"],
        "instances": {"ids": [s.id for s in suites]}, "evaluation": {"workers": 2},
        "arms": [{"name": "oracle", "agent": "oracle", **docs}, {"name": "empty", "agent": "empty", **docs},
                 {"name": "none", "agent": "none", **docs}]}), encoding="utf-8")
    experiment, plan, dataset = prepare(path)
    outcome = ExperimentRunner(experiment, plan, dataset, tmp_path / "run").run(path.read_text(encoding="utf-8"))
    summaries = {s["config"]: s for s in outcome.suites}
    targets = sum(len(s.targets) for s in suites)
    scenarios = sum(len(s.scenarios) for s in suites)
    oracle, empty, none = summaries["oracle@ah"], summaries["empty@ah"], summaries["none@ah"]
    assert oracle["targets"] == targets and oracle["scenarios"] == scenarios
    assert oracle["validity_pooled"] == 1.0 and oracle["mutation_score_pooled"] == 1.0, oracle
    assert empty["validity_pooled"] == 1.0 and empty["mutation_score_pooled"] == 0.0
    assert none["scenarios"] == 0 and none["mutation_score_pooled"] == 0.0
    assert oracle["infrastructure_failures"] == 0 and oracle["flaky"] == 0
