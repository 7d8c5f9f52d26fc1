"""The cucumber-js corpus: js-algorand-sdk v3.5.2 with the Gherkin of algorand-sdk-testing at
the commit the py-algorand-sdk corpus uses (slow: assembled at pinned commits, its packages
installed from npm, built with Stryker's mutants, calibrated on a sample).

One requirement, two frameworks: the same feature files are the py-algorand-sdk behave corpus.
The corpus is assembled from the fetched
mirrors by a recipe kept outside the repository (tests/integration/recipes.py); the test is
skipped, saying why, when the recipe or the mirrors are absent.
"""

from __future__ import annotations

import hashlib
import json
import random
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

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]

ROOT = Path(__file__).resolve().parents[2]
corpus = recipe("js_algorand_sdk")


@pytest.fixture(scope="module")
def js_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("jsalgorand")
    try:
        project = corpus.assemble(base / "js-algorand-sdk", corpus.default_source("js-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
        corpus.install(project)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the js-algorand-sdk corpus cannot be fetched or installed here: {exc}")
    # CI's time: Stryker over the whole SDK takes ~40 min on two cores (the generated model
    # classes alone are half of it); here it mutates a slice (ABI, mnemonics, source maps,
    # addresses), the full scope is docs/measured.md's figure
    # and builds the scenarios of the features that exercise that slice (CI_TAGS): the whole unit
    # suite gives 114 instances from 190 scenarios (docs/measured.md), ~25 min of CI's 90 alone
    settings = project / "req2test.toml"
    text = settings.read_text().replace('production = ["src"]', f"production = {json.dumps(SLICE)}")
    text = re.sub(r"(?m)^tags = \[.*\]$", f"tags = {json.dumps(CI_TAGS)}", text)
    assert f"tags = {json.dumps(CI_TAGS)}" in text
    settings.write_text(text)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(name="js-algorand-sdk"))
    return out


SLICE = ["src/abi", "src/mnemonic", "src/logic", "src/encoding/address.ts"]
CI_TAGS = ["unit.abijson", "unit.abijson.byname", "unit.offline", "unit.atomic_transaction_composer",
           "unit.atc_method_args", "unit.tealsign", "unit.sourcemapv2", "unit.transactions",
           "unit.transactions.keyreg", "unit.transactions.payment", "unit.feetest", "unit.rekey"]


def test_js_algorand_sdk_builds_with_mutants_and_fresh_agreement(js_dataset: Path) -> None:
    dataset = load_dataset(js_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.version, project.runner) == ("js-algorand-sdk", "3.5.2", "cucumber-js 12.9.0")
    assert project.instances >= 30, project.exclusions
    gold = dataset.load_gold()
    # all 335 step definitions live in one steps.js: test implementations are statements of it
    assert {f.path for g in gold.values() for f in g.closure} == {"tests/cucumber/steps/steps.js"}
    assert project.production == SLICE
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 500
    assert mutation["scorable_instances"] >= 10
    fresh = mutation["fresh_check"]
    assert fresh["sampled"] >= 50 and fresh["agree"] == fresh["sampled"], fresh["disagreements"]
    # V8 coverage and the names the steps call: many scenarios have target interfaces in the
    # slice and cover its lines (the others test transactions, mostly outside it)
    instances = dataset.instances
    assert sum(1 for i in instances if gold[i.id].covered_lines) >= len(instances) // 2
    with_targets = [i for i in instances if i.target_interfaces]
    assert len(with_targets) >= len(instances) // 3, len(with_targets)
    assert all(gold[i.id].target_calls and set(gold[i.id].target_calls) <= set(gold[i.id].api_calls)
               for i in with_targets)
    assert all({f"{d.file}:{d.qualname}" for g in i.target_interfaces for d in g.declarations}
               <= {f"{s.file}:{s.qualname}" for s in i.view.target_hidden} for i in with_targets)


def test_calibration_is_exact_on_a_sample(js_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(js_dataset)
    gold = load_dataset(js_dataset).load_gold()
    # every verdict run is a fresh node process (~0.7 s): CI judges six instances with at most
    # 30 kills; docs/measured.md has the full calibration
    ids = sorted(p.instance_id for p in sets["oracle"] if 0 < len(gold[p.instance_id].kills) <= 30)
    sample = sorted(random.Random(0).sample(ids, min(6, len(ids))))
    summaries = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in sample))
        summaries[name] = evaluate(js_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=sample, resamples=200, workers=2))
    oracle, empty = summaries["oracle"], summaries["empty"]
    assert oracle["pass_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    # empty step functions may pass (they check nothing) and must kill nothing
    assert empty["kill_complete_at_1"]["value"] == 0.0 and empty["mutant_recall"]["value"] == 0.0
    # the prediction's calls and coverage, measured as the ground truth's were
    rows = [json.loads(line) for line in (tmp_path / "oracle" / "results.jsonl").read_text().splitlines()]
    assert all(r["coverage_jaccard"] == 1.0 and r["api_f1"] in (1.0, None) for r in rows), rows
    assert empty["coverage_jaccard"]["value"] < 0.5
    # every verdict run under Node's permission model: the suite loads guarded (it did not while the
    # compile cache held only the coverage run's entries, and every js-algorand-sdk run went unguarded)
    assert all(r["confirmation"]["guard"] == "node-permission" for r in rows), rows[0]["confirmation"]


def test_views_and_req2test_run_with_the_builtin_agent(js_dataset: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness on the real corpus: both views, and a scripted model that writes the
    developers' steps.js into the target-hidden view of two instances and submits."""
    import yaml

    from harness.experiment.runner import ExperimentRunner, prepare
    from harness.views import materialize

    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))
    dataset = load_dataset(js_dataset)
    gold = dataset.load_gold()
    ids = sorted(i for i, g in gold.items() if g.kills)[:2]
    th = materialize(js_dataset, ids[0], "th", cache_dir=tmp_path / "views")
    steps = (th.root / "tests/cucumber/steps/steps.js").read_text()
    assert "Given('" not in steps and "module.exports = function getSteps" in steps
    assert len(th.manifest.removed_test_files) >= 300 and "tests/cucumber/steps/index.js" in th.manifest.kept_infrastructure
    spans = dataset.instance(ids[0]).view.target_hidden
    # (an empty body among them stays as it is: nothing to hide)
    assert spans and th.manifest.hidden and set(th.manifest.hidden) <= {f"{s.file}:{s.qualname}" for s in spans}
    assert 'throw new Error("implementation hidden")' in (th.root / spans[0].file).read_text()
    ah = materialize(js_dataset, ids[0], "ah", cache_dir=tmp_path / "views")
    assert len(ah.manifest.hidden) > 50 and 'throw new Error("implementation hidden")' in \
        (ah.root / "src/encoding/address.ts").read_text()

    snapshot = js_dataset / dataset.card.projects[0].snapshot
    oracle = (snapshot / "tests/cucumber/steps/steps.js").read_text(encoding="utf-8")
    turns = []
    for _ in ids:
        turns += [{"tool_calls": [{"name": "write_file", "arguments": {"path": "tests/cucumber/steps/steps.js",
                                                                       "content": oracle}}]},
                  {"tool_calls": [{"name": "submit", "arguments": {"summary": "done"}}]}]
    (tmp_path / "provider.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "jsalgo", "dataset": str(js_dataset), "instances": {"ids": ids}, "views": ["th"],
        "executor": "local", "provider": {"script": "provider.yaml"}, "limits": {"max_calls": 6},
        "arms": [{"name": "scripted", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    outcome = ExperimentRunner(*prepare(experiment), tmp_path / "run").run(experiment.read_text(encoding="utf-8"))
    assert outcome.generated == 2
    results = [json.loads(line) for line in (tmp_path / "run/configs/scripted@th/results.jsonl").read_text().splitlines()]
    assert sorted(r["instance_id"] for r in results) == ids
    assert all(r["outcome"] == "pass" and r["kill_complete"] for r in results), results


# change detectors in the steps file, with no assertion of their own: the empty prediction's
# steps plus a Before hook that fails when production is not the shipped source — by the
# SHA-256 of each production file, or by the text of a production function (``${fn}``, what
# tsx compiled). Without the session's rewrite they would "kill" every mutant of the slice
# they reach; with it, they fail their own clean run (issue 25)
DETECTOR_HEAD = """
const __cdFs = require('fs');
const __cdCrypto = require('crypto');
const { Before: __cdBefore } = require('@cucumber/cucumber');
"""
DETECTORS = {
    "file_hash": """
const __cdHashes = %(hashes)s;
__cdBefore(function () {
  for (const [rel, digest] of Object.entries(__cdHashes)) {
    const got = __cdCrypto.createHash('sha256').update(__cdFs.readFileSync(rel)).digest('hex');
    if (got !== digest) { throw new Error('changed: ' + rel); }
  }
});
""",
    "function_text": """
const __cdFunctionText = %(function_text)s;
__cdBefore(function () {
  const mnemonic = require('../../../src/mnemonic/mnemonic');
  if (`${mnemonic.mnemonicFromSeed}` !== __cdFunctionText) { throw new Error('changed: mnemonicFromSeed'); }
});
""",
}


def test_change_detectors_are_never_kill_complete(js_dataset: Path, tmp_path: Path) -> None:
    dataset = load_dataset(js_dataset)
    project = dataset.card.projects[0]
    snapshot = js_dataset / project.snapshot
    files = sorted(p for scope in project.production for p in
                   ([snapshot / scope] if (snapshot / scope).is_file() else (snapshot / scope).rglob("*.ts")))
    hashes = {p.relative_to(snapshot).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    # the function's text as the project's own tsx compiles the shipped source (in the project
    # the dataset was built from: the snapshot has no node_modules)
    probe = subprocess.run(["node", "-r", "tsx/cjs", "-e",
                            "process.stdout.write(String(require('./src/mnemonic/mnemonic').mnemonicFromSeed))"],
                           cwd=js_dataset.parent / "js-algorand-sdk", capture_output=True, text=True, timeout=120,
                           check=False)
    assert probe.returncode == 0 and "function" in probe.stdout, probe.stderr[-500:]
    gold = dataset.load_gold()
    empty = {p.instance_id: p for p in calibration_predictions(js_dataset)["empty"]}
    sample = sorted(i for i, g in gold.items() if g.kills and i in empty)[:2]
    values = {"hashes": json.dumps(hashes), "function_text": json.dumps(probe.stdout)}
    for name, body in DETECTORS.items():
        detector = DETECTOR_HEAD + body % values
        lines = []
        for instance_id in sample:
            prediction = empty[instance_id]
            files_ = {rel: (detector + text if rel.endswith("steps.js") else text)
                      for rel, text in prediction.files.items()}
            assert files_ != prediction.files
            lines.append(prediction.model_copy(update={"files": files_}).model_dump_json() + "\n")
        (tmp_path / f"{name}.jsonl").write_text("".join(lines))
        evaluate(js_dataset, tmp_path / f"{name}.jsonl", tmp_path / name,
                 EvaluateOptions(instances=sample, resamples=50, workers=2))
        rows = [json.loads(line) for line in (tmp_path / name / "results.jsonl").read_text().splitlines()]
        for row in rows:
            assert row["outcome"] != "infrastructure_failure", (name, row)
            assert not row["kill_complete"] and not (row["outcome"] == "pass" and row["generated_kills"]), (name, row)
        # the rewrite is what beats them: the clean run already differs from the shipped source
        assert {r["outcome"] for r in rows} <= {"assertion_failure", "execution_failure", "tampering"}, (name, rows)
        assert all("changed:" in r["detail"] for r in rows), (name, [r["detail"] for r in rows])
