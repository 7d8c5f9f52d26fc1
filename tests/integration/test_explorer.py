"""The results explorer: `req2test show` and the report's per-instance pages, checked in a
real headless browser (Debian's chromium) in the slow suite."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import yaml

from harness.experiment.runner import ExperimentRunner, prepare

pytestmark = pytest.mark.integration

IDS = ["tinyshop/features/cart.feature:13", "tinyshop/features/tax.feature:9"]


@pytest.fixture(scope="module")
def run_dir(example_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """then-stripped tests pass and miss kills; the scripted builtin agent leaves a trajectory."""
    base = tmp_path_factory.mktemp("explorer")
    (base / "provider.yaml").write_text(yaml.safe_dump(
        {"loop": True, "turns": [{"tool_calls": [{"name": "list_files", "arguments": {"path": "features"}}]},
                                 {"tool_calls": [{"name": "submit", "arguments": {"summary": "nothing"}}]}]}),
        encoding="utf-8")
    path = base / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "explore", "dataset": str(example_dataset), "instances": {"ids": IDS}, "cache": False,
        "provider": {"script": "provider.yaml"}, "limits": {"max_calls": 4},
        "arms": [{"name": "stripped", "agent": "then-stripped"},
                 {"name": "talk", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    experiment, plan, dataset = prepare(path)
    ExperimentRunner(experiment, plan, dataset, base / "run").run(path.read_text(encoding="utf-8"))
    return base / "run"


def test_show_lists_instances_and_explains_one(run_dir: Path) -> None:
    listing = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(run_dir)], capture_output=True,
                             text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"})
    assert listing.returncode == 0, listing.stderr
    assert all(i in listing.stdout for i in IDS) and "stripped@th" in listing.stdout
    page = subprocess.run([sys.executable, "-m", "harness.cli", "show", f"{run_dir}:stripped@th", IDS[0]],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert page.returncode == 0, page.stderr
    result = json.loads((run_dir / "configs/stripped@th/results.jsonl").read_text().splitlines()[0])
    assert result["outcome"] == "pass" and result["surviving_kills"]
    assert f"missed ground-truth kills: {len(result['surviving_kills'])}" in page.stdout
    assert " → " in page.stdout and "src/tinyshop/" in page.stdout  # mutant diffs: where, original → replacement
    assert "ladder: generation passed → build passed" in page.stdout
    talk = subprocess.run([sys.executable, "-m", "harness.cli", "show", f"{run_dir}:talk@th", IDS[0], "--trajectory"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert "prompt: system" in talk.stdout and "prompt: user" in talk.stdout and "tool list_files" in talk.stdout
    assert "generation: agent builtin" in talk.stdout and "LLM calls" in talk.stdout  # what generating it cost
    missing = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(run_dir), "nope:1"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "no instance 'nope:1'" in missing.stderr and "Traceback" not in missing.stderr


def test_the_report_links_a_page_per_instance(run_dir: Path) -> None:
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<h2>Per instance</h2>" in report
    for config in ("stripped@th", "talk@th"):
        for instance in IDS:
            page = run_dir / "instances" / config / (instance.replace("/", "_").replace(":", "_") + ".html")
            assert page.is_file(), page
            assert f'href="{page.relative_to(run_dir).as_posix()}"' in report


FAILING = "tinyshop/features/cart.feature:13"
STEPS = "features/steps/cart_steps.py"
TAX = "tinyshop/features/tax.feature:9"
TAX_STEPS = "features/steps/tax_steps.py"
NO_HELPERS = '''"""Tax steps that import the ground truth's helper module (absent where a prediction runs)."""

from behave import given, when

from helpers import fixture_path
from tinyshop.tax import TaxTable


@given('the tax rates from "{filename}"')
def step_tax_rates(context, filename):
    context.tax_table = TaxTable.load_json(fixture_path(filename))


@when('I compute the tax on {amount:Money} of "{tax_class}" goods in "{region}"')
def step_tax_on_amount(context, amount, tax_class, region):
    context.tax = context.tax_table.tax_on(amount, region, tax_class)
'''
WRONG_SUBTOTAL = ('@then("the cart subtotal is {amount:Money}")\ndef step_cart_subtotal(context, amount):\n'
                  '    print("subtotal seen by the test:", context.cart.subtotal)\n'
                  '    assert context.cart.subtotal == amount * 2, "subtotal"\n')


@pytest.fixture(scope="module")
def failing_run(example_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `req2test evaluate` run of a prediction whose Then asserts a wrong value (with the cost
    its generator reported) and of one that does not load, and its report's pages."""
    from bench.calibrate import calibration_predictions
    from bench.model import GenerationMetadata, Prediction

    oracle = next(p for p in calibration_predictions(example_dataset, ("oracle",))["oracle"] if p.instance_id == FAILING)
    right = '@then("the cart subtotal is {amount:Money}")\ndef step_cart_subtotal(context, amount):\n' \
            '    assert_equal(context.cart.subtotal, amount, "subtotal")\n'
    assert right in oracle.files[STEPS]
    prediction = Prediction(instance_id=FAILING, files={**oracle.files, STEPS: oracle.files[STEPS].replace(
        right, WRONG_SUBTOTAL)}, metadata=GenerationMetadata(agent="by-hand", model="openai/scripted", llm_calls=3,
                                                              input_tokens=1200, output_tokens=340, cost_usd=0.0042))
    base = tmp_path_factory.mktemp("failing")
    unbuilt = Prediction(instance_id=TAX, files={TAX_STEPS: NO_HELPERS})
    (base / "predictions.jsonl").write_text(prediction.model_dump_json() + "\n" + unbuilt.model_dump_json() + "\n",
                                            encoding="utf-8")
    run = base / "wrong-then"
    for argv in (["evaluate", str(example_dataset), "-p", str(base / "predictions.jsonl"), "-o", str(run),
                  "-i", FAILING, "-i", TAX, "-q", "--workers", "1"], ["report", str(run)]):
        done = subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True,
                              timeout=600, check=False, env={**os.environ, "COLUMNS": "200"})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return run


def test_show_explains_why_a_test_failed(failing_run: Path) -> None:
    """The failing step, the traceback and the output of the clean run; kills not measured (never
    "0 missed"); the submitted file of an evaluate run; what generating the test cost."""
    page = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(failing_run), FAILING],
                          capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"})
    assert page.returncode == 0, page.stderr
    text = page.stdout
    assert "failing step: And the cart subtotal is 9.00 (features/cart.feature:17)" in text
    assert f'File "{STEPS}", line' in text and "amount * 2" in text and "AssertionError: subtotal" in text
    assert "subtotal seen by the test: 9.00" in text
    assert "missed ground-truth kills: not measured: the test did not pass its clean run" in text
    assert "missed ground-truth kills: 0" not in text
    assert f"file {STEPS}" in text and "No files" not in text  # the evaluate run kept its predictions
    assert "generation: agent by-hand" in text and "LLM calls 3" in text and "cost USD 0.0042" in text


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, offset = b"", 8
    while offset < len(data):
        length = struct.unpack(">I", data[offset:offset + 4])[0]
        kind = data[offset + 4:offset + 8]
        if kind == b"IDAT":
            idat += data[offset + 8:offset + 8 + length]
        offset += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (scripts/install-system-deps.sh)")
def test_pages_render_in_a_real_headless_browser(run_dir: Path, tmp_path: Path) -> None:
    def chromium(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp_path / 'profile'}", *args], capture_output=True, text=True,
                              timeout=120, check=False)

    page = run_dir / "instances" / "stripped@th" / (IDS[0].replace("/", "_").replace(":", "_") + ".html")
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert f'<h1 id="instance">{IDS[0]}</h1>' in dom
    assert '<b class="outcome-pass" id="outcome">pass</b>' in dom
    assert dom.count("<del>") >= 1 and dom.count("<ins>") >= 1  # the missed mutants, rendered as diffs
    report_dom = chromium("--dump-dom", (run_dir / "report.html").as_uri()).stdout
    assert "Per instance" in report_dom and "instances/stripped@th/" in report_dom
    for target, name in ((page, "page.png"), (run_dir / "report.html", "report.png")):
        shot = tmp_path / name
        done = chromium(f"--screenshot={shot}", "--window-size=1280,1600", target.as_uri())
        assert shot.is_file(), done.stderr[-2000:]
        width, height, colours = _png_size_and_colours(shot)
        assert (width, height) == (1280, 1600)
        assert colours > 30  # text, tables and coloured rungs, not a blank page


SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# the screenshots in docs/ are refreshed only when asked: a test run leaves the checkout as it was
REFRESH_SCREENSHOTS = os.environ.get("REQ2TEST_REFRESH_SCREENSHOTS") == "1"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (scripts/install-system-deps.sh)")
def test_a_failing_instance_page_in_a_real_headless_browser(failing_run: Path, tmp_path: Path) -> None:
    """The failing instance's page of an evaluate run, as a browser renders it: why it failed
    (the step, the traceback, the output), kills not measured, the submitted files, the cost.
    ``REQ2TEST_REFRESH_SCREENSHOTS=1`` copies the screenshots to docs/screenshots/."""
    def chromium(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp_path / 'profile'}", *args], capture_output=True, text=True,
                              timeout=120, check=False)

    page = failing_run / "instances" / failing_run.name / (FAILING.replace("/", "_").replace(":", "_") + ".html")
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert '<b class="outcome-fail" id="outcome">assertion_failure</b>' in dom
    assert '<code id="failing-step">And the cart subtotal is 9.00</code>' in dom
    assert '<code id="failing-location">features/cart.feature:17</code>' in dom
    traceback = dom.split('<pre id="failure-traceback">', 1)[1].split("</pre>", 1)[0]
    assert f'File "{STEPS}", line' in traceback and "AssertionError: subtotal" in traceback
    assert "subtotal seen by the test: 9.00" in dom.split('<pre id="failure-stdout">', 1)[1].split("</pre>", 1)[0]
    assert 'id="kills-note">Not measured: the test did not pass its clean run' in dom
    assert "Ground-truth kills this test missed (0)" not in dom
    assert f"<h3>{STEPS}</h3>" in dom and "No files." not in dom  # the evaluate run's submitted file
    assert '<h2 id="generation">Generation</h2>' in dom and "<th>cost USD</th><td>0.0042</td>" in dom
    # an evaluate run's page shows the files that were submitted (it said "No files." before
    # evaluate kept a copy of the predictions beside its results)
    tax_page = failing_run / "instances" / failing_run.name / (TAX.replace("/", "_").replace(":", "_") + ".html")
    tax_dom = chromium("--dump-dom", tax_page.as_uri()).stdout
    assert '<b class="outcome-fail" id="outcome">build_failure</b>' in tax_dom
    assert f"<h3>{TAX_STEPS}</h3>" in tax_dom and "def step_tax_on_amount(context, amount, tax_class, region):" in tax_dom
    assert "No files." not in tax_dom
    load = tax_dom.split('<pre id="failure-traceback">', 1)[1].split("</pre>", 1)[0]
    assert f'File "{TAX_STEPS}", line 5' in load and "No module named 'helpers'" in load and "/work" not in load
    for target, name in ((page, "failing-instance.png"), (tax_page, "evaluate-submitted-files.png")):
        shot = tmp_path / name
        done = chromium(f"--screenshot={shot}", "--window-size=1280,1600", target.as_uri())
        assert shot.is_file(), done.stderr[-2000:]
        width, height, colours = _png_size_and_colours(shot)
        assert (width, height) == (1280, 1600) and colours > 30
        if REFRESH_SCREENSHOTS:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, SCREENSHOTS / name)
