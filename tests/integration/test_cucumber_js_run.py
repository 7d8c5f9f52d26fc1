"""cucumber-js through the harness: views, the built-in agent in a bwrap sandbox and
``req2test run``, driven by the scripted provider on loopback (the real openai client via
litellm), on the bundled example examples/cartjs.

The script plays a model that first runs the scenario in the sandbox (node, cucumber-js: the
steps are undefined in the view), writes the step file, runs the scenario again, and submits.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset
from harness.experiment.runner import ExperimentRunner, prepare
from harness.views import materialize

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("node") is None, reason="no node")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cartjs"
STEPS = "features/step_definitions/cart_steps.js"
RUN = "node node_modules/@cucumber/cucumber/bin/cucumber.js --format summary {feature}"
INSTANCES = ["cartjs/features/cart.feature:4", "cartjs/features/discounts.feature:4"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def cart_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cartjs-run") / "dataset"
    build_dataset(str(EXAMPLE), out, BuildOptions(workers=2))
    return out


def test_views_remove_every_step_definition_and_hide_js_bodies(cart_dataset: Path, tmp_path: Path) -> None:
    th = materialize(cart_dataset, INSTANCES[0], "th", cache_dir=tmp_path / "v")
    steps = (th.root / STEPS).read_text()
    assert "Given(" not in steps and "require('../../src/cart')" in steps  # helpers and imports stay
    assert (th.root / "features/support/world.js").read_text() == (EXAMPLE / "features/support/world.js").read_text()
    assert len(th.manifest.removed_test_files) == 11
    # the target-hidden view hides the instance's targets (here add, count, subtotal) and
    # keeps the rest: remove() is not what this scenario is about
    spans = load_dataset(cart_dataset).instance(INSTANCES[0]).view.target_hidden
    assert th.manifest.hidden == sorted(f"{s.file}:{s.qualname}" for s in spans) and \
        "src/cart.js:Cart.subtotal" in th.manifest.hidden
    cart = (th.root / "src/cart.js").read_text()
    assert "sum + item.price" not in cart and "const before = this.items.length" in cart
    ah = materialize(cart_dataset, INSTANCES[0], "ah", cache_dir=tmp_path / "v")
    discounts = (ah.root / "src/discounts.js").read_text()
    assert 'throw new Error("implementation hidden")' in discounts and "Math.round" not in discounts
    assert "src/discounts.js:total" in ah.manifest.hidden and "src/cart.js:Cart.add" in ah.manifest.hidden
    assert discounts.count("\n") == (EXAMPLE / "src/discounts.js").read_text().count("\n")


def _script(path: Path) -> None:
    oracle = (EXAMPLE / STEPS).read_text(encoding="utf-8")
    turns = []
    for instance in INSTANCES:
        feature = instance.split("/", 1)[1]
        turns += [
            {"text": "First run the scenario as it is.", "tool_calls": [
                {"name": "run", "arguments": {"command": RUN.format(feature=feature)}}]},
            {"text": "The steps are undefined; writing them.", "tool_calls": [
                {"name": "write_file", "arguments": {"path": STEPS, "content": oracle}}]},
            {"tool_calls": [{"name": "run", "arguments": {"command": RUN.format(feature=feature)}}]},
            {"text": "It passes.", "tool_calls": [{"name": "submit", "arguments": {"summary": "steps written"}}]},
        ]
    path.write_text(yaml.safe_dump({"model": "scripted-cart", "turns": turns}), encoding="utf-8")


def test_req2test_run_with_the_builtin_agent_on_cucumber_js(cart_dataset: Path, tmp_path: Path) -> None:
    _script(tmp_path / "provider.yaml")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "cartjs", "dataset": str(cart_dataset), "instances": {"ids": INSTANCES}, "views": ["th"],
        "executor": "local", "provider": {"script": "provider.yaml"}, "limits": {"max_calls": 8},
        "evaluation": {"workers": 2},
        "arms": [{"name": "scripted", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    plan = prepare(experiment)
    outcome = ExperimentRunner(*plan, tmp_path / "run").run(experiment.read_text(encoding="utf-8"))
    assert outcome.generated == 2
    predictions = [json.loads(line) for line in
                   (tmp_path / "run/generations/scripted@th/c1/predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == INSTANCES
    assert all(list(p["files"]) == [STEPS] and p["metadata"]["extra"]["end_reason"] == "submitted"
               for p in predictions)
    # what the model saw of its own runs: node and cucumber-js ran inside the sandbox
    trajectory = min((tmp_path / "run/generations/scripted@th/c1/trajectories").rglob("*.jsonl"))
    outputs = [e["output"] for e in map(json.loads, trajectory.read_text().splitlines())
               if e.get("type") == "tool" and e.get("name") == "run"]
    # first undefined steps; then the steps are right, but what they test is hidden in this view
    assert "undefined" in outputs[0] and "implementation hidden" in outputs[1], outputs[1][-800:]
    results = {r["instance_id"]: r for r in map(json.loads, (tmp_path / "run/configs/scripted@th/results.jsonl")
                                                 .read_text().splitlines())}
    assert all(r["outcome"] == "pass" and r["kill_complete"] for r in results.values()), results
    assert (tmp_path / "run/report.md").is_file()
