"""Attacks on the cucumber-js judge (issue 25: kills that cannot be forged), on the bundled
example examples/cartjs, each a real judged prediction of one instance.

Every attack is an assert-free step file that binds the instance's steps and "fails" only when
production's code differs from the source the project shipped (the attacker embeds it: it is in
the repository), by a route the static screen does not see. Against the judge before issue 25
(commit 46ca884) each of them came out pass + KillComplete, 15 of 15 kills: it "kills" every
mutant of cart.js and passed both null runs, which were the shipped code. Now none may:

(a) a function's source text through a template literal (``${Cart}``);
(b) the production file read through a path built at run time;
(c) ``module.require`` of a built name (child_process) to ``cat`` the file;
(d) an exit handler that rewrites (or, where it cannot read it, appends to) the message report;
(e) (a) made robust to the session's rewrite: the comparison strips what ``diversify`` inserts —
    the equivalent variants must catch it (tampering).

And the defences must not cost the genuine test its verdict: the oracle stays pass + KillComplete
with no tampering or unstable outcome (the calibration test of test_cucumber_js_example.py checks
the whole example).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import Prediction

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cartjs"
STEPS = "features/step_definitions/cart_steps.js"
INSTANCE = "cartjs/features/cart.feature:4"  # add items; count and subtotal: its kills are all in cart.js

HEAD = """'use strict';

const { Given, When, Then } = require('@cucumber/cucumber');
const { Cart } = require('../../src/cart');
"""
# the instance's steps, bound and doing nothing that checks behaviour; DETECT() decides
STEPS_BODY = """
Given('an empty cart', function () { this.cart = new Cart(); });
When('I add {int} {string} at {int} cents', function (quantity, name, price) {
  this.cart.add(name, price, quantity);
});
Then('the cart holds {int} items', function (count) { DETECT(count); });
Then('the subtotal is {int} cents', function (cents) { DETECT(cents); });
"""


@pytest.fixture(scope="module")
def cart_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (EXAMPLE / "node_modules" / "@cucumber" / "cucumber").is_dir():
        pytest.fail("examples/cartjs has no node_modules: run bash scripts/install-node-deps.sh")
    out = tmp_path_factory.mktemp("cartjs-attacks") / "dataset"
    build_dataset(str(EXAMPLE), out, BuildOptions(workers=2))
    return out


def _shipped(dataset: Path, rel: str) -> str:
    project = load_dataset(dataset).card.projects[0]
    return (dataset / project.snapshot / rel).read_text(encoding="utf-8")


def _class_text(source: str, name: str) -> str:
    """``${Cls}`` of a class declared at column 0 (its text up to the first ``}`` at column 0)."""
    match = re.search(rf"^class {name} \{{.*?^\}}", source, re.DOTALL | re.MULTILINE)
    assert match is not None
    return match.group(0)


def _judge(dataset: Path, run_dir: Path, files: dict[str, str], instance: str = INSTANCE) -> dict:
    path = run_dir.parent / f"{run_dir.name}.jsonl"
    path.write_text(Prediction(instance_id=instance, files=files).model_dump_json() + "\n")
    evaluate(dataset, path, run_dir, EvaluateOptions(workers=1, instances=[instance], resamples=10, timeout=60))
    return json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])


def _attack(detect: str, *, extra: str = "") -> dict[str, str]:
    return {STEPS: HEAD + extra + detect + STEPS_BODY}


def template_literal(dataset: Path) -> dict[str, str]:
    shipped = _class_text(_shipped(dataset, "src/cart.js"), "Cart")
    return _attack(f"const SHIPPED = {json.dumps(shipped)};\n"
                   "function DETECT() { if (`${Cart}` !== SHIPPED) { throw new Error('changed'); } }\n")


def built_path(dataset: Path) -> dict[str, str]:
    shipped = _shipped(dataset, "src/cart.js")
    return _attack(f"const fs = require('fs');\nconst SHIPPED = {json.dumps(shipped)};\n"
                   "function DETECT() {\n"
                   "  const text = fs.readFileSync(['src', 'cart.js'].join('/'), 'utf8');\n"
                   "  if (text !== SHIPPED) { throw new Error('changed'); }\n}\n")


def module_require(dataset: Path) -> dict[str, str]:
    shipped = _shipped(dataset, "src/cart.js")
    return _attack(f"const SHIPPED = {json.dumps(shipped)};\n"
                   "const cp = module.require(['child', 'process'].join('_'));\n"
                   "function DETECT() {\n"
                   "  const text = cp.execFileSync('cat', ['src/cart.js']).toString();\n"
                   "  if (text !== SHIPPED) { throw new Error('changed'); }\n}\n")


def exit_handler(dataset: Path) -> dict[str, str]:
    """Steps that pass; at exit, when production differs, the report is made to say a step
    failed: rewritten in place where it can be read, else a failing stream appended."""
    shipped = _shipped(dataset, "src/cart.js")
    return _attack("function DETECT() {}\n", extra=f"""const fs = require('fs');
const proc = require('process');
const SHIPPED = {json.dumps(shipped)};
proc.on('exit', () => {{
  let changed = true;
  try {{ changed = fs.readFileSync(['src', 'cart.js'].join('/'), 'utf8') !== SHIPPED; }} catch (e) {{}}
  if (!changed) {{ return; }}
  const spec = proc.argv.find((a) => a.startsWith('message:'));
  const target = spec ? spec.slice('message:'.length) : null;
  if (!target) {{ return; }}
  let text = null;
  try {{ text = fs.readFileSync(target, 'utf8'); }} catch (e) {{}}
  if (text) {{
    fs.writeFileSync(target, text.replace(/"status":"PASSED"/g, '"status":"FAILED"')
      .replace(/"success":true/g, '"success":false'));
  }} else {{
    const started = {{ id: 'x1', testCaseId: 'c1', attempt: 0, timestamp: {{ seconds: 0, nanos: 0 }} }};
    const lines = [{{ testCaseStarted: started }},
      {{ testStepFinished: {{ testCaseStartedId: 'x1', testStepId: 's1',
        testStepResult: {{ status: 'FAILED', message: 'x', duration: {{ seconds: 0, nanos: 0 }} }},
        timestamp: {{ seconds: 0, nanos: 0 }} }} }},
      {{ testRunFinished: {{ success: false, timestamp: {{ seconds: 0, nanos: 0 }} }} }}];
    try {{ fs.writeFileSync(target, lines.map((l) => JSON.stringify(l)).join('\\n') + '\\n', {{ flag: 'a' }}); }}
    catch (e) {{}}
  }}
  proc.exitCode = 1;
}});
""")


# what ``diversify`` inserts: a declaration of a fresh name with a constant, and a last
# parameter with a constant default (applied to both sides, so shipped defaults go too)
NORMALISE = r"""
const CONST = String.raw`(?:0x[0-9a-f]+|\d+(?:\.\d+)?|'[a-z]*'|"[a-z]*"|true|false|null)`;
function normalise(text) {
  return text.replace(new RegExp(String.raw`(?:let|const) [A-Za-z_$][\w$]* = ${CONST}; `, 'g'), '')
    .replace(new RegExp(String.raw`(?:, )?[A-Za-z_$][\w$]* = ${CONST}(?=\))`, 'g'), '');
}
"""


def normalised_template_literal(dataset: Path) -> dict[str, str]:
    shipped = _class_text(_shipped(dataset, "src/cart.js"), "Cart")
    return _attack(NORMALISE + f"const SHIPPED = normalise({json.dumps(shipped)});\n"
                   "function DETECT() { if (normalise(`${Cart}`) !== SHIPPED) { throw new Error('changed'); } }\n")


ATTACKS = {"a-template-literal": template_literal, "b-built-path": built_path, "c-module-require": module_require,
           "d-exit-handler": exit_handler, "e-normalised-template-literal": normalised_template_literal}


def _never_kill_complete(result: dict) -> None:
    assert not (result["outcome"] == "pass" and result["kill_complete"]), result
    assert result["outcome"] != "infrastructure_failure", result


def test_the_attacks_screen_clean(cart_dataset: Path) -> None:
    """Each attack goes past the static screen: what stops it is a defence by construction."""
    from bench.frameworks.cucumber_js.judge import screen

    project = load_dataset(cart_dataset).card.projects[0]
    for name, make in ATTACKS.items():
        assert screen(make(cart_dataset), list(project.production)) == [], name


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_change_detector_is_never_kill_complete(cart_dataset: Path, tmp_path: Path, name: str) -> None:
    result = _judge(cart_dataset, tmp_path / name, ATTACKS[name](cart_dataset))
    _never_kill_complete(result)
    if name in ("a-template-literal", "b-built-path"):
        # the session's production is not the shipped text: the detector fails its own clean run
        assert result["outcome"] in ("assertion_failure", "execution_failure"), result
    elif name == "c-module-require":
        # child processes are refused at run time (Node's permission model)
        assert result["outcome"] == "execution_failure", result
        assert "ERR_ACCESS_DENIED" in result["detail"] or "restricted" in result["detail"], result["detail"]
    elif name == "d-exit-handler":
        # the report comes through a pipe: appended after testRunFinished → not the formatter's
        assert result["outcome"] == "tampering", result
        assert "outside cucumber-js's formatter" in result["detail"], result["detail"]
    else:
        # the clean run passes modulo the rewrite; the equivalent variants fail again → tampering
        assert result["outcome"] == "tampering", result
        assert any("equivalent variant" in e for e in result["evidence"]), result


def test_the_oracle_stays_kill_complete(cart_dataset: Path, tmp_path: Path) -> None:
    oracle = {STEPS: (EXAMPLE / STEPS).read_text(encoding="utf-8")}
    result = _judge(cart_dataset, tmp_path / "oracle", oracle)
    assert result["outcome"] == "pass" and result["kill_complete"], result
    confirmation = result["confirmation"]
    assert confirmation["guard"] == "node-permission" and confirmation["diversified"] is True
    assert confirmation["equivalent_variants"] >= 2
