"""The Godog corpus: go-algorand-sdk v2.12.0 with the Gherkin of algorand-sdk-testing 7c67284
(slow: assembled at pinned commits, its modules from the Go module proxy, built with mutant
schemata, calibrated).

One requirement, three languages: the same feature files are the py-algorand-sdk (behave) and
js-algorand-sdk (cucumber-js) corpora. The corpus is assembled from the fetched
mirrors by a recipe kept outside the repository (tests/integration/recipes.py); the test is
skipped, saying why, when the recipe or the mirrors are absent, or the module proxy cannot be reached.

CI's slice: the scenarios of the ABI, offline (mnemonic, addresses, signing) and TEAL-signing
features, with mutants in the packages they exercise; docs/measured.md has the whole unit suite.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from tests.integration.recipes import recipe

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("go") is None and not Path("/usr/local/go/bin/go")
                                                   .is_file(), reason="Go is not installed")]

ROOT = Path(__file__).resolve().parents[2]
corpus = recipe("go_algorand_sdk")

SLICE = ["abi", "mnemonic", "logic"]
CI_TAGS = ["unit.abijson", "unit.abijson.byname", "unit.offline", "unit.tealsign", "unit.program_sanity_check"]


@pytest.fixture(scope="module")
def go_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.frameworks.godog.toolchain import GoToolchain, download_modules

    base = tmp_path_factory.mktemp("goalgorand")
    try:
        project = corpus.assemble(base / "go-algorand-sdk", corpus.default_source("go-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the go-algorand-sdk corpus cannot be fetched here: {exc}")
    if not download_modules(project, GoToolchain.find()).ok:
        pytest.skip("go-algorand-sdk's modules are neither cached nor downloadable")
    settings = project / "req2test.toml"
    text = re.sub(r"(?m)^production = \[.*\]$", f"production = {json.dumps(SLICE)}", settings.read_text())
    text = re.sub(r"(?m)^tags = \[.*\]$", f"tags = {json.dumps(CI_TAGS)}", text)
    assert f"tags = {json.dumps(CI_TAGS)}" in text and f"production = {json.dumps(SLICE)}" in text
    settings.write_text(text)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(name="go-algorand-sdk", workers=2, runs=2))
    return out


def test_go_algorand_sdk_builds_with_mutants_and_fresh_agreement(go_dataset: Path) -> None:
    dataset = load_dataset(go_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.runner) == ("go-algorand-sdk", "godog 0.14.1")
    assert project.instances >= 15, project.exclusions
    # every selected scenario is an instance or excluded with a reason
    assert all(e.reason and e.detail for e in dataset.card.exclusions)
    gold = dataset.load_gold()
    assert {f.path.split("/")[0] for g in gold.values() for f in g.closure} == {"test"}
    mutation = dataset.card.mutation
    # mutants of the files some instance covers (4 files of the slice: ~130)
    assert mutation["mutants"] > 100 and mutation["scorable_instances"] >= 10
    fresh = mutation["fresh_check"]
    assert fresh["sampled"] >= 60 and fresh["agree"] == fresh["sampled"], fresh["disagreements"]


def test_calibration_is_exact(go_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(go_dataset, ("oracle", "empty"))
    gold = load_dataset(go_dataset).load_gold()
    scored = sorted(i for i, g in gold.items() if g.kills)
    summaries = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in scored))
        summaries[name] = evaluate(go_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=scored, resamples=200, workers=2))
    oracle, empty = summaries["oracle"], summaries["empty"]
    assert oracle["pass_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert empty["kill_complete_at_1"]["value"] == 0.0 and empty["mutant_recall"]["value"] == 0.0
    rows = [json.loads(line) for line in (tmp_path / "oracle" / "results.jsonl").read_text().splitlines()]
    assert all(r["coverage_jaccard"] == 1.0 and r["api_f1"] in (1.0, None) for r in rows), rows
    assert all(r["confirmation"]["sandbox"] == "bwrap-no-proc" for r in rows)


def test_views_and_req2test_run_with_the_builtin_agent(go_dataset: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness on the real corpus: both views, and a scripted model that writes the
    developers' step file into the target-hidden view of two instances and submits."""
    import yaml

    from harness.experiment.runner import ExperimentRunner, prepare
    from harness.views import materialize

    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))
    dataset = load_dataset(go_dataset)
    gold = dataset.load_gold()
    ids = sorted(i for i, g in gold.items() if g.kills)[:2]
    th = materialize(go_dataset, ids[0], "th", cache_dir=tmp_path / "views")
    step_files = sorted({f.path for f in gold[ids[0]].closure if f.role == "step_definitions"})
    for rel in step_files:
        assert ".Step(`" not in (th.root / rel).read_text()
    spans = dataset.instance(ids[0]).view.target_hidden
    assert spans and th.manifest.hidden
    assert 'panic("implementation hidden")' in (th.root / spans[0].file).read_text()
    ah = materialize(go_dataset, ids[0], "ah", cache_dir=tmp_path / "views")
    # every production body of the slice, never a Go test beside it (abi/abi_test.go)
    assert len(ah.manifest.hidden) > 20 and not any("_test.go:" in h for h in ah.manifest.hidden)

    snapshot = go_dataset / dataset.card.projects[0].snapshot
    turns = []
    for instance_id in ids:
        written = sorted({f.path for f in gold[instance_id].closure if f.role == "step_definitions"})
        turns += [{"tool_calls": [{"name": "write_file", "arguments": {
            "path": rel, "content": (snapshot / rel).read_text(encoding="utf-8")}} for rel in written]},
                  {"tool_calls": [{"name": "submit", "arguments": {"summary": "done"}}]}]
    (tmp_path / "provider.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "goalgo", "dataset": str(go_dataset), "instances": {"ids": ids}, "views": ["th"],
        "executor": "local", "provider": {"script": "provider.yaml"}, "limits": {"max_calls": 6},
        "arms": [{"name": "scripted", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    outcome = ExperimentRunner(*prepare(experiment), tmp_path / "run").run(experiment.read_text(encoding="utf-8"))
    assert outcome.generated == 2
    results = [json.loads(line) for line in (tmp_path / "run/configs/scripted@th/results.jsonl").read_text().splitlines()]
    assert sorted(r["instance_id"] for r in results) == ids
    assert all(r["outcome"] == "pass" and r["kill_complete"] for r in results), results
