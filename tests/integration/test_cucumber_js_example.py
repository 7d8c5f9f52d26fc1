"""cucumber-js end to end on the bundled example (examples/cartjs, its packages installed by
scripts/install-node-deps.sh): a real node, cucumber-js 12.9.0 and Stryker 9.6.1, bubblewrap.

Build (isolation runs, positive/negative validation at step-definition granularity, Stryker's
kill matrix checked against fresh processes), calibration (oracle kill-complete, empty kills
nothing) and the evaluator's answers to hostile and broken predictions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildError, BuildOptions, build_dataset
from bench.builder.schemata_stage import UNREACHED_SAMPLE
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import Prediction

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cartjs"
STEPS = "features/step_definitions/cart_steps.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def cart_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (EXAMPLE / "node_modules" / "@cucumber" / "cucumber").is_dir():
        pytest.fail("examples/cartjs has no node_modules: run bash scripts/install-node-deps.sh")
    out = tmp_path_factory.mktemp("cartjs") / "dataset"
    build_dataset(str(EXAMPLE), out, BuildOptions(workers=2))
    return out


def test_the_example_builds_at_step_definition_granularity(cart_dataset: Path) -> None:
    dataset = load_dataset(cart_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert project.runner == "cucumber-js 12.9.0" and project.framework == "cucumber-js"
    assert project.instances == 5 and project.exclusions == {}, project.exclusions
    assert not (cart_dataset / project.snapshot / "node_modules").exists()  # provisioned from the lockfile
    gold = dataset.load_gold()
    outline = gold["cartjs/features/discounts.feature:4"]
    assert {d.qualname for d in outline.step_definitions} == {
        "Given('an empty cart')", "Given('I add {int} {string} at {int} cents')",
        "When('I check out with code {string}')", "Then('the total is {int} cents')"}
    assert {b.scenario_line for b in outline.bindings} == {12, 13, 14, 15}  # every Examples row ran
    assert all(g.kills and set(g.kills) <= set(g.pool) for g in gold.values())
    fresh = dataset.card.mutation["fresh_check"]
    assert fresh["sampled"] >= 40 and fresh["kills_sampled"] >= 20
    assert fresh["agree"] == fresh["sampled"], fresh["disagreements"]


def test_the_example_has_target_interfaces_api_calls_and_coverage(cart_dataset: Path) -> None:
    """From V8's coverage of the traced run and the names the step definitions call."""
    dataset = load_dataset(cart_dataset)
    gold = dataset.load_gold()
    removal = dataset.instance("cartjs/features/cart.feature:18")
    assert [(g.declaring_type, [d.qualname for d in g.declarations]) for g in removal.target_interfaces] == \
        [("Cart", ["Cart.remove", "Cart.count"])]
    assert gold[removal.id].api_calls == ["src/cart.js:Cart.add", "src/cart.js:Cart.constructor",
                                          "src/cart.js:Cart.count", "src/cart.js:Cart.remove"]
    # remove() ran, subtotal() did not: its body's lines are not covered
    cart = (cart_dataset / dataset.card.projects[0].snapshot / "src" / "cart.js").read_text().splitlines()
    covered = set(gold[removal.id].covered_lines["src/cart.js"])
    remove_body = next(n for n, line in enumerate(cart, 1) if "const before" in line)
    subtotal_body = next(n for n, line in enumerate(cart, 1) if "sum + item.price" in line)
    assert remove_body in covered and subtotal_body not in covered
    # the target-hidden view: the targets; add() and the constructor run in most instances (shared)
    assert [s.qualname for s in removal.view.target_hidden] == ["Cart.remove", "Cart.count"]
    discounts = dataset.instance("cartjs/features/discounts.feature:4")
    assert [d.qualname for g in discounts.target_interfaces for d in g.declarations] == ["total"]


def test_calibration_is_exact(cart_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(cart_dataset)
    results = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name]))
        summary = evaluate(cart_dataset, path, tmp_path / name, EvaluateOptions(workers=2, resamples=100))
        results[name] = summary
    assert results["oracle"]["pass_at_1"]["value"] == 1.0, results["oracle"]["outcomes"]
    assert results["oracle"]["kill_complete_at_1"]["value"] == 1.0
    assert results["empty"]["pass_at_1"]["value"] == 1.0, results["empty"]["outcomes"]
    assert results["empty"]["mutant_recall"]["value"] == 0.0
    assert results["empty"]["kill_complete_at_1"]["value"] == 0.0
    for name in ("oracle", "empty"):  # the defences of issue 25 cost no honest prediction its verdict
        outcomes = results[name]["outcomes"]
        assert outcomes["tampering"] == 0 and outcomes["unstable"] == 0, (name, outcomes)
    rows = [json.loads(line) for line in (tmp_path / "oracle" / "results.jsonl").read_text().splitlines()]
    assert all(r["confirmation"]["reproduced_kills"] == min(5, r["generated_kills"]) for r in rows)
    # every verdict run guarded, production rewritten for the session, equivalent variants mixed in
    assert all(r["confirmation"]["guard"] == "node-permission" and r["confirmation"]["diversified"] for r in rows)
    assert all(r["confirmation"]["equivalent_variants"] == 2 + r["ground_truth_kills"] // 20 for r in rows)
    # calls and coverage measured as the builder measured the ground truth's
    assert all(r["api_f1"] == 1.0 and r["coverage_jaccard"] == 1.0 for r in rows), rows
    assert results["empty"]["api_f1"]["value"] == 0.0
    # empty steps run no production code (what loading the suite covers is taken away on both sides)
    assert results["empty"]["coverage_jaccard"]["value"] == 0.0
    # so none of its kills is reached: a sample of 8 runs, the rest only had one of those failed
    assert all(r["confirmation"]["unreached_not_run"] == 0 for r in rows)
    empty_rows = [json.loads(line) for line in (tmp_path / "empty" / "results.jsonl").read_text().splitlines()]
    for row in empty_rows:
        assert row["confirmation"]["unreached_kills"] == row["ground_truth_kills"], row
        assert row["confirmation"]["unreached_not_run"] == max(0, row["ground_truth_kills"] - UNREACHED_SAMPLE), row



def test_verdict_runs_side_by_side_change_no_verdict(cart_dataset: Path, tmp_path: Path) -> None:
    """Two verdict runs of one judgement at once (issue 31: both cores on one prediction) judge as
    one at a time does, seed for seed: the same outcome, kills and confirmation (the oracle's
    predictions kill, the empty ones pass and kill nothing)."""
    sets = calibration_predictions(cart_dataset)
    sets = {"oracle": sets["oracle"][:3], "empty": sets["empty"][:2]}
    rows = {}
    for slots in (1, 2):
        for name in ("oracle", "empty"):
            path = tmp_path / f"{name}.jsonl"
            path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name]))
            out = tmp_path / f"{name}-{slots}"
            evaluate(cart_dataset, path, out, EvaluateOptions(workers=1, resamples=10, seed=7, run_slots=slots,
                                                              instances=[p.instance_id for p in sets[name]]))
            rows[name, slots] = {r["instance_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    for name in ("oracle", "empty"):
        one, two = rows[name, 1], rows[name, 2]
        assert one.keys() == two.keys() and len(one) == len(sets[name])
        for instance, row in one.items():
            other = two[instance]
            for key in ("outcome", "generated_kills", "surviving_kills", "kill_complete", "mutant_recall", "confirmation"):
                assert row.get(key) == other.get(key), (name, instance, key, row.get(key), other.get(key))

def _judge(cart_dataset: Path, tmp_path: Path, files: dict[str, str]) -> dict:
    instance = "cartjs/features/cart.feature:4"
    path = tmp_path / "p.jsonl"
    path.write_text(Prediction(instance_id=instance, files=files).model_dump_json() + "\n")
    evaluate(cart_dataset, path, tmp_path / "run", EvaluateOptions(instances=[instance], resamples=10))
    return json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])


ORACLE_HEAD = (EXAMPLE / STEPS).read_text().split("Given('an empty cart'")[0]


@pytest.mark.parametrize(("files", "outcome", "detail"), [
    # reads the production source to tell a mutant from the original
    ({STEPS: ORACLE_HEAD + "const fs = require('fs');\nconst src = fs.readFileSync('src/cart.js', 'utf8');\n"},
     "tampering", "reads a file near the production code"),
    ({STEPS: ORACLE_HEAD + "if (process.env.MUTANT) { throw new Error('x'); }\n"}, "tampering", "process"),
    ({"cucumber.json": "{}"}, "generation_failure", "runner configuration"),
    ({"features/support/world.js": "// mine\n"}, "generation_failure", "shared test infrastructure"),
    ({STEPS: ORACLE_HEAD}, "binding_failure", "undefined step"),
    ({STEPS: ORACLE_HEAD + "Given('an empty cart', function () { this.cart = new Cart(); });\n"
             "When('I add {int} {string} at {int} cents', function (q, n, p) { this.cart.add(n, p, q); });\n"
             "Then('the cart holds {int} items', function (c) { assert.strictEqual(this.cart.count(), c + 1); });\n"
             "Then('the subtotal is {int} cents', function () {});\n"}, "assertion_failure", "the cart holds"),
    ({STEPS: ORACLE_HEAD + "Given('an empty cart', function () { this.cart.add('x', 1); });\n"
             "When('I add {int} {string} at {int} cents', function () {});\n"
             "Then('the cart holds {int} items', function () {});\n"
             "Then('the subtotal is {int} cents', function () {});\n"}, "execution_failure", "an empty cart"),
])
def test_the_evaluator_answers_broken_and_hostile_predictions(cart_dataset: Path, tmp_path: Path,
                                                              files: dict[str, str], outcome: str,
                                                              detail: str) -> None:
    result = _judge(cart_dataset, tmp_path, files)
    assert result["outcome"] == outcome, result
    assert detail in result["detail"], result["detail"]


def test_a_project_without_the_pinned_runner_is_refused_in_one_line(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("node_modules"))
    with pytest.raises(BuildError, match=r"@cucumber/cucumber is not installed; req2test runs @cucumber/cucumber@12\.9\.0"):
        build_dataset(str(project), tmp_path / "ds", BuildOptions(workers=1))
