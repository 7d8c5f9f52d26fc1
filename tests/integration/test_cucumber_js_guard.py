"""The runtime guard of cucumber-js verdict runs (``runner.run_cucumber(guard=True)``) on the
bundled example, with the machine's isolation (bubblewrap when installed): Node's permission
model refuses what a test could use to observe or forge a verdict, the report comes through a
pipe the judge reads while the run goes, and an honest run passes as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.frameworks.cucumber_js.runner import link_tree, run_cucumber
from bench.frameworks.cucumber_js.v8coverage import coverage_env
from bench.isolation import resolve_mode

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("node") is None, reason="no node")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cartjs"
STEPS = "features/step_definitions/cart_steps.js"
SCENARIO = ["features/cart.feature:4"]

PROBES = """'use strict';
const assert = require('node:assert');
const fs = require('node:fs');
const { Given, When, Then } = require('@cucumber/cucumber');
const { Cart } = require('../../src/cart');

function denied(what, probe) {
  try { probe(); } catch (error) {
    if (error.code === 'ERR_ACCESS_DENIED' || /restricted/.test(error.message)) { return; }
    throw new Error(`${what}: ${error.code} ${error.message}`);
  }
  throw new Error(`${what} was allowed`);
}

Given('an empty cart', function () { this.cart = new Cart(); });
When('I add {int} {string} at {int} cents', function (quantity, name, price) { this.cart.add(name, price, quantity); });
Then('the cart holds {int} items', function (count) {
  assert.strictEqual(this.cart.count(), count);
  const built = ['child', 'process'].join('_');
  denied('a child process', () => module.require(built).execFileSync('cat', ['src/cart.js']));
  denied('a worker thread', () => new (require('node:worker_threads').Worker)('1', { eval: true }));
  denied('the inspector', () => new (require('node:inspector').Session)().connect());
  denied('process.binding', () => require('node:process').binding('fs'));
  denied('a read outside the tree', () => fs.readFileSync('/proc/self/environ'));
  denied('a write into the tree', () => fs.writeFileSync('src/cart.js', '// gone'));
  denied('a symlink', () => fs.symlinkSync('/proc/self/environ', require('node:os').tmpdir() + '/link'));
  // what the run itself may do: read its tree, write its scratch directory
  assert.ok(fs.readFileSync(['src', 'cart.js'].join('/'), 'utf8').includes('class Cart'));
  fs.writeFileSync(require('node:os').tmpdir() + '/scratch.txt', 'ok');
});
Then('the subtotal is {int} cents', function (cents) { assert.strictEqual(this.cart.subtotal(), cents); });
"""

APPENDS = """'use strict';
const fs = require('node:fs');
const proc = require('node:process');
proc.on('exit', () => {
  const target = proc.argv.find((a) => a.startsWith('message:')).slice('message:'.length);
  fs.writeFileSync(target, JSON.stringify({ testRunFinished: { success: false } }) + '\\n', { flag: 'a' });
});
"""


@pytest.fixture(scope="module")
def isolation() -> str:
    return resolve_mode("auto")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not (EXAMPLE / "node_modules" / "@cucumber" / "cucumber").is_dir():
        pytest.fail("examples/cartjs has no node_modules: run bash scripts/install-node-deps.sh")
    work = tmp_path / "tree"
    link_tree(EXAMPLE, work, None, EXAMPLE / "node_modules")
    return work


def _replace(tree: Path, rel: str, text: str) -> None:
    path = tree / rel
    path.unlink()
    path.write_text(text)


def test_an_honest_run_passes_guarded_with_its_report_from_the_pipe(tree: Path, tmp_path: Path,
                                                                  isolation: str) -> None:
    run = run_cucumber(tree, SCENARIO, tmp_path / "out", isolation=isolation, guard=True)
    assert run.passed and run.guarded and run.problems == (), (run.stderr, run.problems)
    assert len(run.report.pickles) == 1 and run.report.finished and run.report.success
    assert run.stderr.strip() == ""  # the /dev/fd warning of the formatter's directory is expected and dropped
    assert not (tmp_path / "out" / "messages.ndjson").exists()


def test_the_guard_refuses_processes_threads_inspector_and_foreign_files(tree: Path, tmp_path: Path,
                                                                         isolation: str) -> None:
    _replace(tree, STEPS, PROBES)
    run = run_cucumber(tree, SCENARIO, tmp_path / "out", isolation=isolation, guard=True)
    failed = [s.message for p in run.report.pickles for s in p.steps if s.status != "PASSED"]
    assert run.passed, (failed, run.stderr[-2000:])
    assert (tree / "src" / "cart.js").read_text().startswith("'use strict';")
    unguarded = run_cucumber(tree, SCENARIO, tmp_path / "plain", isolation=isolation)
    assert not unguarded.passed  # the same probes find the doors open without the guard


def test_a_report_appended_to_after_the_run_is_not_the_formatters(tree: Path, tmp_path: Path,
                                                                  isolation: str) -> None:
    _replace(tree, "features/support/world.js", (tree / "features/support/world.js").read_text() + APPENDS)
    run = run_cucumber(tree, SCENARIO, tmp_path / "out", isolation=isolation, guard=True)
    assert not run.passed
    assert any("after testRunFinished" in p or "second 'testRunFinished'" in p for p in run.problems), run.problems


def test_node_20_writes_no_coverage_under_the_permission_model(tree: Path, tmp_path: Path, isolation: str) -> None:
    """Why the traced run is the one unguarded run (measured, Node 20.20): with
    ``--experimental-permission`` NODE_V8_COVERAGE gives nothing, whatever is allowed."""
    out = tmp_path / "traced"
    guarded = run_cucumber(tree, SCENARIO, out, isolation=isolation, guard=True, env=coverage_env(out))
    assert guarded.passed and not list((out / "v8").glob("coverage-*.json"))
    plain_out = tmp_path / "plain"
    plain = run_cucumber(tree, SCENARIO, plain_out, isolation=isolation, env=coverage_env(plain_out))
    assert plain.passed and list((plain_out / "v8").glob("coverage-*.json"))
