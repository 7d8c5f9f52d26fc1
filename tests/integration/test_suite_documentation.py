"""Suite mode's documentation ablation end to end on the example (``specification: documentation``).

The agent is given the docstrings of the feature's target interfaces instead of the feature file
(withheld from its workspace too), writes its own scenarios under features/authored/ with their
steps, and each authored scenario is judged on the real code and on the feature's
requirement-targeted mutants. The built-in agent runs through the scripted provider and the real
openai client; the calibration agents write the developers' feature as their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.experiment.config import ExperimentError
from harness.experiment.runner import ExperimentRunner, prepare

pytestmark = pytest.mark.integration

TAX = "tinyshop/features/tax.feature"
CART = "tinyshop/features/cart.feature"

WRONG_EXPECTATION = """
  Scenario: Germany's standard rate, expected wrongly
    Given the tax rates from "tax_rates.json"
    When I compute the tax on 100.00 of "standard" goods in "EU-DE"
    Then the tax is 99.00
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))


def _script(dataset_dir: Path) -> dict:
    """The scripted model: on the tax documentation it looks for the feature file, then writes the
    developers' four tax scenarios as its own plus one with a wrong expectation, and the developers'
    step files; on any other documentation it submits nothing."""
    from bench.dataset import load_dataset
    from bench.suite.calibration import suite_calibration_files
    from bench.suite.instances import suite_instances

    dataset = load_dataset(dataset_dir)
    suite = next(s for s in suite_instances(dataset) if s.id == TAX)
    steps = suite_calibration_files(dataset, suite, dataset.load_gold())["oracle"]
    own = (dataset.root / dataset.project("tinyshop").snapshot / "features/tax.feature").read_text() + WRONG_EXPECTATION
    writes = [{"name": "write_file", "arguments": {"path": path, "content": text}} for path, text in sorted(steps.items())]
    writes.append({"name": "write_file", "arguments": {"path": "features/authored/tax_rules.feature", "content": own}})
    tax_docs = r"# Documentation[\s\S]*tinyshop\.tax\.TaxTable"
    # each generation's turns match only its own conversation: the order the two run in is free
    return {"turns": [
        {"when": tax_docs, "tool_calls": [{"name": "run", "arguments": {"command": "ls features"}}], "cost": 0.01},
        {"when": tax_docs + r"[\s\S]*cart\.feature", "tool_calls": writes, "cost": 0.02},
        {"when": tax_docs + r"[\s\S]*tax_rules\.feature", "cost": 0.01,
         "tool_calls": [{"name": "submit", "arguments": {"summary": "five scenarios"}}]},
        {"when": r"# Documentation[\s\S]*tinyshop\.cart\.Cart", "cost": 0.01,
         "tool_calls": [{"name": "submit", "arguments": {"summary": "nothing"}}]},
    ]}


def test_documentation_ablation_end_to_end(example_dataset: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(_script(example_dataset)), encoding="utf-8")
    path = tmp_path / "experiment.yaml"
    documentation = {"specification": "documentation"}
    path.write_text(yaml.safe_dump({
        "name": "docs", "dataset": str(example_dataset), "mode": "suite", "views": ["ah"],
        "instances": {"ids": [TAX, CART]}, "evaluation": {"workers": 2}, "provider": {"script": str(script)},
        "arms": [{"name": "oracle", "agent": "oracle", **documentation},
                 {"name": "empty", "agent": "empty", **documentation},
                 {"name": "none", "agent": "none", **documentation},
                 {"name": "scripted", "agent": "builtin", "model": "openai/scripted", **documentation}]}),
        encoding="utf-8")
    experiment, plan, dataset = prepare(path)
    outcome = ExperimentRunner(experiment, plan, dataset, tmp_path / "run").run(path.read_text(encoding="utf-8"))
    summaries = {s["config"]: s for s in outcome.suites}
    assert sorted(summaries) == ["empty@ah", "none@ah", "oracle@ah", "scripted@ah"]
    assert all(s["specification"] == "documentation" for s in summaries.values())
    oracle, empty, none, scripted = (summaries[f"{n}@ah"] for n in ("oracle", "empty", "none", "scripted"))
    # the developers' scenarios, written as the agent's own: every one valid, every target killed
    assert oracle["scenarios"] == 11 and oracle["targets"] == 6
    assert oracle["validity_pooled"] == 1.0 and oracle["mutation_score_pooled"] == 1.0
    assert oracle["size_ratio_mean"] == 1.0 and oracle["infrastructure_failures"] == 0
    assert empty["validity_pooled"] == 1.0 and empty["mutation_score_pooled"] == 0.0
    # nothing written: no authored scenario, validity undefined, every target survives
    assert none["scenarios"] == 0 and none["validity_mean"] is None and none["mutation_score_pooled"] == 0.0
    assert none["suites_without_scenarios"] == 2
    results = {json.loads(line)["suite_id"]: json.loads(line) for line in
               (tmp_path / "run/suites/scripted@ah/suite_results.jsonl").read_text().splitlines()}
    tax, cart = results[TAX], results[CART]
    # four of its five scenarios pass on the real code; the fifth expects the wrong tax
    assert tax["validity"]["generated"] == 5 and tax["validity"]["valid"] == 4 and tax["validity"]["failing"] == 1
    assert tax["mutation"]["killed"] == tax["mutation"]["targets"] == 2 and tax["size"]["ratio"] == 1.25
    failing = next(v for v in tax["scenarios"] if v["stability"] == "failing")
    assert failing["instance_id"].startswith(TAX + "::features/authored/tax_rules.feature:")
    assert failing["outcome"] == "assertion_failure"
    assert cart["scenarios"] == [] and cart["mutation"]["value"] == 0.0 and "no usable test code" in cart["detail"]
    assert scripted["cost_usd"] == pytest.approx(0.01 + 0.02 + 0.01 + 0.01)
    # what the agent was told and what it could see: the documentation, never the feature file
    requests = (tmp_path / "run/provider-requests.jsonl").read_text()
    assert "# Documentation" in requests
    trajectory = next((tmp_path / "run/generations/scripted@ah/c1/trajectories").glob("*tax*/1.jsonl"))
    listed = next(json.loads(line) for line in trajectory.read_text().splitlines()
                  if '"ls features"' in line and '"tool"' in line)
    assert "cart.feature" in listed["output"] and "tax.feature" not in listed["output"]
    report = (tmp_path / "run/report.md").read_text()
    assert "| oracle@ah | documentation | 2 | 11 | 1.000 | 1.000 |" in report
    with pytest.raises(ExperimentError, match="suite-mode ablation"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(path.read_text().replace("mode: suite", "mode: reverse"), encoding="utf-8")
        prepare(bad)
