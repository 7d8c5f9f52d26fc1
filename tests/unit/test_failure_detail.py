"""Why did it fail? The failing step, the traceback and the clean run's output land in the
result (``InstanceResult.failure``), for every framework: behave on the bundled tinyshop and
cucumber-js on the bundled cartjs, each judging a prediction whose Then asserts a wrong value;
godog's and cucumber-jvm's extraction on captured report samples (``tests/unit/data``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.evaluate import EvaluateOptions, evaluate
from bench.failure import clip, failure_detail, relative
from bench.model import MAX_FAILURE_TEXT, FailingStep, InstanceResult, Prediction

DATA = Path(__file__).parent / "data"
CART = "tinyshop/features/cart.feature:13"  # ... Then the cart holds 2 of "TEA-001" / And the cart subtotal is 9.00
CART_STEPS = "features/steps/cart_steps.py"
WRONG_SUBTOTAL = '''
@then("the cart subtotal is {amount:Money}")
def step_cart_subtotal(context, amount):
    print("subtotal seen by the test:", context.cart.subtotal)
    import sys
    print("a warning of the test", file=sys.stderr)
    assert context.cart.subtotal == amount * 2, "subtotal"
'''


def _evaluate_one(dataset: Path, prediction: Prediction, run: Path) -> InstanceResult:
    path = run.parent / f"{run.name}.jsonl"
    path.write_text(prediction.model_dump_json() + "\n", encoding="utf-8")
    evaluate(dataset, path, run, EvaluateOptions(workers=1, instances=[prediction.instance_id], resamples=10))
    line = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return InstanceResult.model_validate_json(line)


# ----------------------------------------------------------------------------- the shared helpers
def test_texts_are_cut_with_their_start_and_end_kept_and_the_cut_counted() -> None:
    text = "first line\n" + "x" * (3 * MAX_FAILURE_TEXT) + "\nthe last line"
    kept, left_out = clip(text)
    assert len(kept) <= MAX_FAILURE_TEXT and left_out > 0
    assert kept.startswith("first line") and kept.endswith("the last line") and "characters cut" in kept
    assert clip(kept) == (kept, 0)  # cutting again changes nothing
    detail = failure_detail(stdout=text, stderr="\x1b[31mred\x1b[0m\x07", roots=["/tmp/run"],
                            step=FailingStep(keyword="Then ", text="x", location="/tmp/run/features/a.feature:3"))
    assert detail.cut == {"stdout": left_out} and detail.stderr == "red"
    assert detail.step is not None and detail.step.location == "features/a.feature:3" and detail.step.keyword == "Then"


def test_paths_under_the_run_directories_become_relative() -> None:
    text = 'File "/tmp/x/run/features/steps/a.py", line 3\n at file:///tmp/x/run/src/cart.js:4:5\n/usr/lib/x.py'
    assert relative(text, ["/tmp/x/run/", "/tmp/x"]) == \
        'File "features/steps/a.py", line 3\n at src/cart.js:4:5\n/usr/lib/x.py'


def test_old_results_without_the_field_still_load() -> None:
    row = {"instance_id": "a:1", "project": "a", "feature_file": "f.feature", "outcome": "assertion_failure",
           "detail": "features/cart.feature:72 AssertionError: ", "kill_complete": False,
           "kill_complete_relaxed": False, "ground_truth_kills": 3, "generated_kills": 0, "evaluation_seconds": 1.0}
    assert InstanceResult.model_validate(row).failure is None


# ----------------------------------------------------------------------------- behave
@pytest.mark.integration
def test_behave_records_the_failing_step_its_traceback_and_the_output(example_dataset: Path,
                                                                      tmp_path: Path) -> None:
    oracle = next(p for p in calibration_predictions(example_dataset, ("oracle",))["oracle"] if p.instance_id == CART)
    steps = oracle.files[CART_STEPS]
    original = '@then("the cart subtotal is {amount:Money}")\ndef step_cart_subtotal(context, amount):\n' \
               '    assert_equal(context.cart.subtotal, amount, "subtotal")\n'
    assert original in steps
    files = {**oracle.files, CART_STEPS: steps.replace(original, WRONG_SUBTOTAL.lstrip("\n"))}
    result = _evaluate_one(example_dataset, Prediction(instance_id=CART, files=files), tmp_path / "run")
    assert result.outcome.value == "assertion_failure", result.detail
    failure = result.failure
    assert failure is not None
    assert failure.step is not None
    assert (failure.step.keyword, failure.step.text) == ("And", "the cart subtotal is 9.00")
    assert failure.step.location == "features/cart.feature:17"
    assert failure.error.startswith("AssertionError: subtotal")
    # the traceback: from the step's own frame on, the failing line shown, paths relative
    assert failure.traceback.startswith("Traceback (most recent call last):")
    assert f'File "{CART_STEPS}", line' in failure.traceback and "amount * 2" in failure.traceback
    assert "behave/model.py" not in failure.traceback and "frames of the runner left out" in failure.traceback
    assert "subtotal seen by the test: 9.00" in failure.stdout
    assert "a warning of the test" in failure.stderr
    text = failure.model_dump_json()
    assert "/tmp" not in text and str(tmp_path) not in text and "inst-" not in text
    # only the clean run's: no mutant was run (the run stopped at the ladder)
    assert "mutant" not in text.lower()


@pytest.mark.integration
def test_behave_binding_failure_names_the_undefined_step(example_dataset: Path, tmp_path: Path) -> None:
    oracle = next(p for p in calibration_predictions(example_dataset, ("oracle",))["oracle"] if p.instance_id == CART)
    files = {**oracle.files, CART_STEPS: oracle.files[CART_STEPS].replace(
        '@then("the cart subtotal is {amount:Money}")', '@then("the basket subtotal is {amount:Money}")')}
    result = _evaluate_one(example_dataset, Prediction(instance_id=CART, files=files), tmp_path / "run")
    assert result.outcome.value == "binding_failure", result.detail
    assert result.failure is not None and result.failure.step is not None
    assert result.failure.step.text == "the cart subtotal is 9.00"
    assert result.failure.step.location == "features/cart.feature:17"


# ----------------------------------------------------------------------------- cucumber-js
CARTJS = Path(__file__).resolve().parents[2] / "examples" / "cartjs"
JS_STEPS = "features/step_definitions/cart_steps.js"


@pytest.fixture(scope="module")
def cart_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled cucumber-js example, built (as tests/integration/test_cucumber_js_example.py builds it)."""
    if shutil.which("node") is None or not (CARTJS / "node_modules" / "@cucumber" / "cucumber").is_dir():
        pytest.skip("node or examples/cartjs/node_modules missing (scripts/install-node-deps.sh)")
    from bench.builder.pipeline import BuildOptions, build_dataset

    out = tmp_path_factory.mktemp("cartjs") / "dataset"
    build_dataset(str(CARTJS), out, BuildOptions(workers=2))
    return out


@pytest.mark.integration
def test_cucumber_js_records_the_failing_step_its_stack_and_the_output(cart_dataset: Path, tmp_path: Path) -> None:
    head = (CARTJS / JS_STEPS).read_text(encoding="utf-8").split("Given('an empty cart'")[0]
    steps = head + (
        "Given('an empty cart', function () { this.cart = new Cart(); });\n"
        "When('I add {int} {string} at {int} cents', function (q, n, p) { this.cart.add(n, p, q); });\n"
        "Then('the cart holds {int} items', function (c) {\n"
        "  console.log('count seen by the test', this.cart.count());\n"
        "  console.error('a warning of the test');\n"
        "  assert.strictEqual(this.cart.count(), c + 1);\n"
        "});\n"
        "Then('the subtotal is {int} cents', function () {});\n")
    prediction = Prediction(instance_id="cartjs/features/cart.feature:4", files={JS_STEPS: steps})
    result = _evaluate_one(cart_dataset, prediction, tmp_path / "run")
    assert result.outcome.value == "assertion_failure", result.detail
    failure = result.failure
    assert failure is not None and failure.step is not None
    assert (failure.step.keyword, failure.step.text) == ("Then", "the cart holds 3 items")
    assert failure.step.location == "features/cart.feature:8"
    assert failure.error.startswith("AssertionError") and "3 !== 4" in failure.traceback
    assert f"({JS_STEPS}:" in failure.traceback  # the step's frame, relative to the run's tree
    assert "count seen by the test 3" in failure.stdout and "a warning of the test" in failure.stderr
    text = failure.model_dump_json()
    assert "/project/" not in text and str(tmp_path) not in text and "req2test-cjs-" not in text


# ----------------------------------------------------------------------------- godog (captured sample)
def test_godog_failure_from_a_captured_report_and_output() -> None:
    """godog v0.14.1's cucumber JSON and the process's output of a failing Then
    (data/godog/failing_then_test.go.txt on failing_then.feature, built with ``go test -c``)."""
    from bench.frameworks.godog.cucumber_json import read_report
    from bench.frameworks.godog.failure import clean_run_failure
    from bench.frameworks.godog.runner import GodogRun

    report = read_report(DATA / "godog" / "failing_then_cucumber.json")
    output = (DATA / "godog" / "failing_then_output.txt").read_text(encoding="utf-8")
    # as a clean run of the judge sees it: one row, and a goroutine dump naming the mutant switch
    output += ("goroutine 1 [running]:\nexample.com/probe/internal/req2testschema.On(0x0)\n"
               "\t/tmp/x/verdict/internal/req2testschema/schema.go:3\nexample.com/probe/shop.(*Cart).Add(...)\n"
               "\t/tmp/x/verdict/shop/cart.go:9\n")
    run = GodogRun(feature="features/cart.feature", line=3, report=report, exit_code=1, elapsed=0.1,
                   timed_out=False, output=output, argv=())
    failure = clean_run_failure([run], ["/tmp/x/verdict"])
    assert failure is not None and failure.step is not None
    assert (failure.step.keyword, failure.step.text, failure.step.location) == \
        ("Then", "the cart holds 3 items", "features/cart.feature:6")
    assert failure.error == "expected 4 items, the cart holds 3"
    assert "items seen by the test: 3" in failure.stdout and "a warning of the test" in failure.stdout
    assert "interleaved" in failure.output_note
    assert "req2testschema" not in failure.model_dump_json().lower()  # nothing of the mutant switch
    assert "\tshop/cart.go:9" in failure.stdout and "/tmp/x" not in failure.stdout  # relative to the run's tree


# ----------------------------------------------------------------------------- cucumber-jvm (captured sample)
def test_cucumber_jvm_failure_from_a_captured_report_and_output(tmp_path: Path) -> None:
    """cucumber-jvm 6.11.0's JSON report and the JVM's output of a failing Then
    (data/cucumber_jvm/CartSteps.java.txt on failing_then.feature, ``io.cucumber.core.cli.Main``)."""
    from dataclasses import replace

    from bench.frameworks.cucumber_jvm.cucumber_json import parse_report
    from bench.frameworks.cucumber_jvm.failure import clean_run_failure
    from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun

    text = (DATA / "cucumber_jvm" / "failing_then_cucumber.json").read_text(encoding="utf-8")
    # as a clean run of the judge sees it: the tree at /tmp/x/data, a frame of the schemata helpers
    text = text.replace("file:///tmp/fd/jv/", "file:///tmp/x/data/").replace(
        "\\tat probe.CartSteps.theCartHolds", "\\tat req2test.schema.S.add(S.java:3)\\n\\tat probe.CartSteps.theCartHolds")
    report = parse_report(text)
    assert report.written and len(report.scenarios) == 1
    output = (DATA / "cucumber_jvm" / "failing_then_output.txt").read_text(encoding="utf-8")
    output = output.replace("/tmp/fd/jv/", "/tmp/x/data/") + "\tat req2test.schema.Main.main(Main.java:9)\n"
    run = CucumberJvmRun(feature="features/cart.feature", line=3, report=report, exit_code=1, elapsed=1.0, cpu=1.0,
                         timed_out=False, output=output, argv=())
    run = replace(run, report=replace(report, scenarios=tuple(replace(s, uri="features/cart.feature")
                                                              for s in report.scenarios)))
    failure = clean_run_failure([run], ["/tmp/x/data"])
    assert failure is not None and failure.step is not None
    assert (failure.step.keyword, failure.step.text, failure.step.location) == \
        ("Then", "the cart holds 3 items", "features/cart.feature:6")
    assert failure.error == "java.lang.AssertionError: expected 4 items but the cart holds 3"
    assert "at probe.CartSteps.theCartHolds(CartSteps.java:26)" in failure.traceback
    assert "the cart holds 3 items(features/cart.feature:6)" in failure.traceback  # relative to the tree
    assert "items seen by the test: 3" in failure.stdout and "a warning of the test" in failure.stdout
    assert "req2test.schema" not in failure.model_dump_json()  # nothing of the mutant switch
    assert "launcher left out" in failure.traceback and "/tmp/x" not in failure.model_dump_json()
