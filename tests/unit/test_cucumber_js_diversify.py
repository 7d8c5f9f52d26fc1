"""The cucumber-js judge's defences by construction (issue 25), without a dataset:

- ``diversify``: every function's text changes, no line moves, behaviour does not (the
  original and the rewrite run side by side in node), a seed of its own per session, every
  Stryker mutant of the example still applies;
- ``equivalents``: each family of equivalent variants is behaviourally equivalent on sample
  values (original and variant run in node) and its text differs;
- ``messages.report_problems``: a stream the formatter could not have written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.frameworks.cucumber_js.declarations import FUNCTION_NODES
from bench.frameworks.cucumber_js.diversify import apply_mutant, diversify_source, error_count, parse
from bench.frameworks.cucumber_js.equivalents import FAMILIES, equivalent_variants, family
from bench.frameworks.cucumber_js.language import TypeScriptLanguage
from bench.frameworks.cucumber_js.messages import report_problems

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cartjs"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

SAMPLE = """'use strict';
function plain(a, b) { return a + b; }
function multi(a) {
  'use strict';
  const x = a * 2;
  if (x > 3) {
    return x;
  }
  return -x;
}
const arrow = (a, b) => a * b;
const noArgs = () => 7;
const trailing = (a, b,) => a - b;
const single = x => x + 1;
const block = (a) => { return a - 1; };
function empty() {}
function onlyDirective() { 'use strict'; }
function withArgs() { return arguments.length; }
class Base { constructor(v) { this.v = v; } get value() { return this.v; } static make(v) { return new Base(v); } }
class Derived extends Base {
  constructor(v) {
    super(v);
    this.w = v + 1;
  }
  both() { return [this.v, this.w]; }
}
function* gen(n) { for (let i = 0; i < n; i++) { yield i; } }
async function later(v) { await null; return v; }
function loop(n) {
  let s = 0;
  outer: for (let i = 0; i < n; i++) { for (let j = 0; j < n; j++) { if (j > i) continue outer; s += j; } }
  return s;
}
function asi(a) {
  const b = a
  const c = b + 1
  return c
}
function unbraced(a) {
  if (a)
    return 1;
  else
    return 2;
}
function lengthOf(a, b = 2, ...rest) { return rest.length; }
function sw(k) { switch (k) { case 1: return 'one'; default: { const d = 'many'; return d; } } }
module.exports = { plain, multi, arrow, noArgs, trailing, single, block, empty, onlyDirective, withArgs, Base, Derived,
  gen, later, loop, asi, unbraced, lengthOf, sw };
"""

# every export called on sample arguments, and its length, name and source text
PROBE = """
const load = (f) => require(f);
const out = {};
for (const [tag, file] of [['orig', process.argv[2]], ['div', process.argv[3]]]) {
  const m = load(file);
  const r = {};
  r.calls = [m.plain(1, 2), m.multi(1), m.multi(5), m.arrow(3, 4), m.noArgs(), m.trailing(5, 2), m.single(1),
    m.block(3), m.empty(), m.onlyDirective(), m.withArgs(1, 2, 3), new m.Base(4).value, m.Base.make(2).v,
    new m.Derived(5).both(), [...m.gen(3)], m.loop(4), m.asi(1), m.unbraced(0), m.unbraced(1),
    m.lengthOf(1, 2, 3, 4), m.sw(1), m.sw(2), [1, 2].map(m.single), [4].map(m.arrow)];
  r.lengths = Object.fromEntries(Object.entries(m).map(([k, f]) => [k, f.length]));
  r.names = Object.fromEntries(Object.entries(m).map(([k, f]) => [k, f.name]));
  r.texts = Object.fromEntries(Object.entries(m).map(([k, f]) => [k, String(f)]));
  out[tag] = r;
}
m_later = load(process.argv[3]).later(3).then((v) => { out.later = v; console.log(JSON.stringify(out)); });
"""


def _functions(path: str, text: str) -> list[str]:
    found, stack = [], [parse(path, text).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in FUNCTION_NODES and node.child_count:
            found.append(node.text.decode())
    return sorted(found)


def test_the_rewrite_changes_every_function_and_moves_no_line() -> None:
    div = diversify_source("src/sample.js", SAMPLE, 11)
    assert error_count(parse("src/sample.js", div.text)) == 0
    old, new = SAMPLE.splitlines(), div.text.splitlines()
    assert len(new) == len(old) + 1  # one line appended, none moved
    # every insertion is where the map says, and taking them out gives the shipped line back
    for number, line in enumerate(old, 1):
        rewritten = new[number - 1]
        for at, length in sorted(div.positions.inserts.get(number, []), reverse=True):
            shifted = div.positions.column(number, at) - length
            rewritten = rewritten[:shifted] + rewritten[shifted + length:]
        assert rewritten == line, number
    before, after = _functions("a.js", SAMPLE), _functions("a.js", div.text)
    unchanged = set(before) & set(after)
    assert unchanged == {"x => x + 1"}, unchanged  # the one kind left as shipped (module docstring)
    # the directive prologue stays first; super(...) stays first in the derived constructor
    assert "function multi(a) {\n  'use strict';\n" in div.text
    assert "'use strict';" in div.text.splitlines()[0]
    derived = div.text.splitlines()[SAMPLE.splitlines().index("    super(v);")]
    assert derived.strip() == "super(v);"
    # ``if (a)\\n return 1;`` (a statement that is no block's) gets nothing in front of it
    assert div.text.splitlines()[SAMPLE.splitlines().index("    return 1;")].strip() == "return 1;"


def test_each_session_rewrites_differently_and_a_seed_fixes_it() -> None:
    texts = {diversify_source("src/sample.js", SAMPLE, seed).text for seed in range(6)}
    assert len(texts) == 6
    assert diversify_source("src/sample.js", SAMPLE, 3) == diversify_source("src/sample.js", SAMPLE, 3)


@needs_node
def test_the_rewrite_keeps_behaviour_and_changes_function_text(tmp_path: Path) -> None:
    for seed in range(4):
        (tmp_path / "orig.js").write_text(SAMPLE)
        (tmp_path / "div.js").write_text(diversify_source("src/sample.js", SAMPLE, seed).text)
        (tmp_path / "probe.js").write_text(PROBE)
        proc = subprocess.run(["node", "probe.js", str(tmp_path / "orig.js"), str(tmp_path / "div.js")],
                              cwd=tmp_path, capture_output=True, text=True, check=True)
        out = json.loads(proc.stdout)
        assert out["orig"]["calls"] == out["div"]["calls"]
        assert out["orig"]["lengths"] == out["div"]["lengths"]  # a default parameter does not count
        assert out["orig"]["names"] == out["div"]["names"]
        assert out["later"] == 3
        same = {k for k, text in out["orig"]["texts"].items() if out["div"]["texts"][k] == text}
        assert same == {"single"}, same


TS_SAMPLE = """import { Base } from './base';

export class Account extends Base {
  private total = 0;
  constructor(public readonly owner: string, private limit?: number) {
    super(owner);
    this.total = 1;
  }

  deposit<T extends number>(amount: T): number {
    if (amount <= 0) { throw new Error('positive'); }
    return (this.total += amount);
  }

  get balance(): number { return this.total; }
}

export const double = (n: number): number => n * 2;
export function assertNever(x: never): never { throw new Error(`unexpected ${x as string}`); }
declare function external(a: number): void;
export abstract class Shape { abstract area(): number; describe(): string { return `${this.area()}`; } }
"""


def test_typescript_rewrites_parse_and_keep_super_first() -> None:
    for seed in range(5):
        div = diversify_source("src/account.ts", TS_SAMPLE, seed)
        assert error_count(parse("src/account.ts", div.text)) == 0
        lines = div.text.splitlines()
        assert lines[5].strip() == "super(owner);"
        assert "declare function external(a: number): void;" in div.text
        assert len(lines) == len(TS_SAMPLE.splitlines()) + 1
        assert _functions("a.ts", div.text) != _functions("a.ts", TS_SAMPLE)


def test_a_file_that_does_not_parse_is_left_as_shipped() -> None:
    broken = "function f( {\n  return 1;\n}\n"
    div = diversify_source("src/broken.js", broken, 1)
    assert div.text == broken and div.positions.inserts == {}


@needs_node
def test_every_stryker_mutant_of_the_example_applies_to_the_rewrite(tmp_path: Path) -> None:
    if not (EXAMPLE / "node_modules" / "@stryker-mutator").is_dir():
        pytest.skip("examples/cartjs has no node_modules: bash scripts/install-node-deps.sh")
    language = TypeScriptLanguage()
    mutants = language.generate_mutants(EXAMPLE, ["src"])
    assert len(mutants) > 40
    sources = {m.file: (EXAMPLE / m.file).read_text() for m in mutants}
    for seed in range(3):
        rewritten = {f: diversify_source(f, text, seed) for f, text in sources.items()}
        checked = []
        for n, mutant in enumerate(mutants):
            div = rewritten[mutant.file]
            text = apply_mutant(sources[mutant.file], div.text, div.positions, mutant)
            reference = language.apply_mutant(sources[mutant.file], mutant)
            assert error_count(parse(mutant.file, text)) == error_count(parse(mutant.file, reference)), mutant
            assert mutant.replacement in text
            path = tmp_path / f"m{seed}-{n}.js"
            path.write_text(text)
            checked.append(str(path))
        check = "for (const f of process.argv.slice(1)) require('vm').compileFunction(require('fs').readFileSync(f, 'utf8'))"
        subprocess.run(["node", "-e", check, *checked], check=True, capture_output=True)


EQ_SAMPLE = """'use strict';
function eq(a, b) { return a === b; }
function ne(a, b) { return a !== b; }
function leq(a, b) { return a == b; }
function lne(a, b) { return a != b; }
function lt(a, b) { return a < b; }
function le(a, b) { return a <= b; }
function gt(a, b) { return a > b; }
function ge(a, b) { return a >= b; }
function mul(a, b) { return a * b; }
function memb(a, b) { const o = { x: { y: a } }; return o.x.y < b; }
function lit(a) { return a === 'k' ? 1 : 10 > a; }
function cond(a, b) { if (a) { return 1; } return b ? 2 : 3; }
function wh(a, b) { let n = 0; while (a && n < 2) { n++; } do { n++; } while (b && n < 5); for (; n < 7 && b;) { n++; } return n; }
function and(a, b) { return a && b; }
function or(a, b) { return a || b; }
function nul(a, b) { return a ?? b; }
function bool(a) { return [true, false, a === true]; }
function str(a) { return 'hello' + a + "wide world"; }
module.exports = { eq, ne, leq, lne, lt, le, gt, ge, mul, memb, lit, cond, wh, and, or, nul, bool, str };
"""

EQ_PROBE = """
const VALUES = [0, -0, 1, -1, 2, 1.5, NaN, Infinity, -Infinity, '', '0', '1', 'a', 'k', 'b', null, undefined, true,
  false, [], [1], {}, 10n, 3n];
function outcome(f, a, b) {
  try { const v = f(a, b); return { v: typeof v === 'bigint' ? `${v}n` : v, neg0: Object.is(v, -0) }; }
  catch (e) { return { error: e.constructor.name, message: e.message }; }
}
const original = require(process.argv[2]);
const report = {};
for (const file of process.argv.slice(3)) {
  const variant = require(file);
  let differs = 0;
  for (const name of Object.keys(original)) {
    for (const a of VALUES) for (const b of VALUES) {
      const x = JSON.stringify(outcome(original[name], a, b)), y = JSON.stringify(outcome(variant[name], a, b));
      if (x !== y) { differs += 1; }
    }
  }
  report[file] = differs;
}
console.log(JSON.stringify(report));
"""


@needs_node
def test_every_family_of_equivalent_variants_keeps_behaviour(tmp_path: Path) -> None:
    variants = equivalent_variants("src/eq.js", EQ_SAMPLE)
    assert {family(v) for v in variants} == set(FAMILIES)
    language = TypeScriptLanguage()
    (tmp_path / "orig.js").write_text(EQ_SAMPLE)
    files = []
    for n, variant in enumerate(variants):
        assert variant.replacement != variant.original and variant.id
        text = language.apply_mutant(EQ_SAMPLE, variant)
        assert text != EQ_SAMPLE
        path = tmp_path / f"v{n}.js"
        path.write_text(text)
        files.append(str(path))
    (tmp_path / "probe.js").write_text(EQ_PROBE)
    proc = subprocess.run(["node", "probe.js", str(tmp_path / "orig.js"), *files], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    report = json.loads(proc.stdout)
    wrong = {variants[files.index(f)].replacement: n for f, n in report.items() if n}
    assert not wrong, wrong


def test_equivalent_variants_stay_out_of_keys_types_directives_and_module_names() -> None:
    source = """'use strict';
const fs = require('fs');
const table = { 'key': 1 };
type Mode = 'a' | 'b';
function f(m: Mode, flag: true): string {
  'use strict';
  return table['key'] === 1 ? 'yes' : import('mod').then(() => 'no');
}
"""
    variants = equivalent_variants("src/x.ts", source)
    originals = {(v.original, family(v)) for v in variants}
    assert ("'fs'", "concat") not in originals and ("'mod'", "concat") not in originals
    assert not any(v.original == "'use strict'" for v in variants)
    assert not any(v.original in ("'a'", "'b'") for v in variants)  # a literal type
    assert ("'yes'", "concat") in originals
    assert not any(v.line <= 4 for v in variants)  # module level: not where a test's calls run


def _stream(*extra: dict) -> list[str]:
    messages = [{"meta": {"protocolVersion": "32"}}, {"testRunStarted": {"id": "r"}},
                {"testCase": {"id": "c", "pickleId": "p", "testSteps": [{"id": "s"}]}},
                {"testCaseStarted": {"id": "x", "testCaseId": "c"}},
                {"testStepStarted": {"testCaseStartedId": "x", "testStepId": "s"}},
                {"testStepFinished": {"testCaseStartedId": "x", "testStepId": "s",
                                      "testStepResult": {"status": "PASSED"}}},
                {"testCaseFinished": {"testCaseStartedId": "x"}}, {"testRunFinished": {"success": True}}, *extra]
    return [json.dumps(m) for m in messages]


def test_a_report_the_formatter_could_not_have_written_shows() -> None:
    assert report_problems(_stream()) == []
    appended = _stream({"testStepFinished": {"testCaseStartedId": "x", "testStepId": "s",
                                             "testStepResult": {"status": "FAILED"}}})
    assert any("after testRunFinished" in p for p in report_problems(appended))
    twice = _stream()
    twice.insert(6, twice[5])
    assert any("twice" in p for p in report_problems(twice))
    assert any("second 'testRunFinished'" in p or "after testRunFinished" in p
               for p in report_problems(_stream({"testRunFinished": {"success": False}})))
    assert report_problems(["not json", *_stream()])
    torn = [*_stream()[:-1], '{"testRunFin']
    assert report_problems(torn, torn_tail=True) == [] and report_problems(torn)
