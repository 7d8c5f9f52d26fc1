"""V8 coverage mapped to source lines, JS/TS declarations and the API calls of a scenario,
on hand-computed cases."""

from __future__ import annotations

import json
from pathlib import Path

from bench.frameworks.cucumber_js.declarations import CallReader, ProductionDeclarations, scan_declarations
from bench.frameworks.cucumber_js.hiding import hide_js_bodies
from bench.frameworks.cucumber_js.interfaces import hidden_declarations, interface_groups, scenario_calls
from bench.frameworks.cucumber_js.testside import scan_source
from bench.frameworks.cucumber_js.v8coverage import (
    decode_mappings,
    identity_segments,
    innermost_counts,
    read_coverage,
    script_coverage,
)


def _encode(values: list[int]) -> str:
    """Base64 VLQ, as a source map writes it."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = []
    for value in values:
        vlq = (-value << 1) | 1 if value < 0 else value << 1
        while True:
            digit = vlq & 31
            vlq >>= 5
            out.append(alphabet[digit | (32 if vlq else 0)])
            if not vlq:
                break
    return "".join(out)


def test_source_map_segments_decode_to_absolute_positions() -> None:
    # "AAAA" = [0,0,0,0]; "CAAC" = [1,0,0,1]; next line "AACA" = [0,0,1,0]; "gBAAG" = 16 then 0,0,3
    assert decode_mappings("AAAA,CAAC;AACA;;gBAAG") == [(0, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 1), (3, 16, 0, 1)]
    for values in ([0, 0, 0, 0], [5, -1, 17, -300], [1000, 2, -2, 0]):
        assert decode_mappings(_encode(values))[0][1] == values[0]


def test_the_innermost_range_decides_the_count() -> None:
    ranges = [(0, 100, 1), (10, 20, 0), (12, 15, 3), (30, 40, 0)]
    counts = innermost_counts(ranges, [5, 11, 13, 16, 25, 35, 100, 150])
    assert counts == {5: 1, 11: 0, 13: 3, 16: 0, 25: 1, 35: 0, 100: 0, 150: 0}


SCRIPT = "function a() {\n  return 1;\n}\nfunction b() {\n  return 2;\n}\na();\n"


def _functions() -> list[dict]:
    # what V8 reports for SCRIPT after ``a()`` ran: the script, a (ran once), b (never)
    return [{"functionName": "", "ranges": [{"startOffset": 0, "endOffset": 63, "count": 1}]},
            {"functionName": "a", "ranges": [{"startOffset": 0, "endOffset": 28, "count": 1}]},
            {"functionName": "b", "ranges": [{"startOffset": 29, "endOffset": 57, "count": 0}]}]


def test_a_function_that_never_ran_leaves_its_lines_uncovered() -> None:
    segments, lengths = identity_segments(SCRIPT)
    covered, ran = script_coverage(_functions(), segments, lengths)
    assert covered == {1, 2, 3, 7}
    assert ran == {(1, "a")}


def test_coverage_files_are_read_relative_to_the_tree_as_the_process_saw_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "m.js").write_text(SCRIPT)
    out = tmp_path / "v8"
    out.mkdir()
    (out / "coverage-1-2-0.json").write_text(json.dumps({"result": [
        {"url": "file:///project/src/m.js", "functions": _functions()},
        {"url": "file:///project/node_modules/x/index.js", "functions": _functions()}]}))
    (out / "coverage-1-2-1.json").write_text("{ torn")  # a process killed while writing
    coverage = read_coverage(out, tree, {"src/m.js"})  # the sandbox's mount point, /project
    assert coverage.as_lists() == {"src/m.js": [1, 2, 3, 7]}
    assert coverage.functions == {("src/m.js", 1, "a")}


TS = """export class Cart extends Base {
  private items: Item[] = [];
  constructor(owner: string) {
    super();
  }
  get size(): number {
    return this.items.length;
  }
  static empty(): Cart {
    return new Cart('');
  }
  add(item: Item): void {
    this.items.push(item);
  }
  private _check(): void {
    const inner = () => { return 1; };
  }
}

export function total(cart: Cart): number {
  return cart.size;
}

export const helper = (x: number) => {
  return x + 1;
};
"""


def test_declarations_name_kind_and_visibility() -> None:
    found = {d.qualname: d for d in scan_declarations("src/cart.ts", TS.encode())}
    assert set(found) == {"Cart.constructor", "Cart.size", "Cart.empty", "Cart.add", "Cart._check", "total", "helper"}
    assert (found["Cart.constructor"].kind, found["Cart.size"].kind, found["Cart.empty"].kind,
            found["Cart.add"].kind, found["total"].kind) == ("constructor", "property", "staticmethod", "method",
                                                             "function")
    assert not found["Cart._check"].public and found["Cart.add"].public
    assert (found["Cart.add"].line, found["Cart.add"].body_start, found["Cart.add"].body_end) == (12, 12, 14)
    assert found["total"].signature == "export function total(cart: Cart): number" or \
        found["total"].signature == "function total(cart: Cart): number"


def test_declarations_are_exactly_the_bodies_the_views_hide() -> None:
    # the hider walks with the same names; its own rewrite must pick exactly these bodies
    _, report = hide_js_bodies(TS, lambda qualname, line: True)
    assert sorted(report.hidden) == sorted(d.qualname for d in scan_declarations("src/cart.ts", TS.encode()))


STEPS = """const { Given, When, Then } = require('@cucumber/cucumber');
const sdk = require('../../src/cart');
Given('a cart', function () {
  this.cart = new sdk.Cart('me');
});
When('I add {string}', function (name) {
  this.cart.add({ name });
  helperOfTheTests();
});
Then('the total is {int}', function (n) {
  const expected = new sdk.Cart('x');
  assert.equal(sdk.total(this.cart), n);
  assert.equal(this.cart._check(), undefined);
});
"""


def test_api_calls_are_named_by_the_steps_and_seen_running(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "cart.ts").write_text(TS)
    (tmp_path / "steps.js").write_text(STEPS)
    declarations = ProductionDeclarations(tmp_path, ["src/cart.ts"])
    by_name = {d.qualname: d for d in declarations.by_file["src/cart.ts"]}
    sites = scan_source("steps.js", STEPS.encode())
    roles = dict(zip(("given", "when", "then"), sites))
    # V8 saw these run: the constructor, add, total, _check (private); never empty or helper
    ran = declarations.ran({("src/cart.ts", by_name[q].line, q.split(".")[-1])
                            for q in ("Cart.constructor", "Cart.add", "total", "Cart._check", "Cart.size")})
    calls = scenario_calls(declarations, ran, CallReader(tmp_path), [(site, role) for role, site in roles.items()])
    assert calls.api_keys == ["src/cart.ts:Cart.add", "src/cart.ts:Cart.constructor", "src/cart.ts:total"]
    # the constructor the Then step calls builds an expected value: not a target; _check is private
    assert calls.target_keys == ["src/cart.ts:Cart.add", "src/cart.ts:total"]
    assert [(g.declaring_type, [d.qualname for d in g.declarations]) for g in interface_groups(calls.targets)] == \
        [("Cart", ["Cart.add"]), ("cart", ["total"])]
    hidden = hidden_declarations(calls, shared={"src/cart.ts:Cart.size"}, load_time={"src/cart.ts:Cart.constructor"})
    assert [d.qualname for d in hidden] == ["Cart.add", "Cart._check", "total"]  # by line


HELPERS = """module.exports = function getSteps() {
  function makeCart(owner) {
    return new sdk.Cart(owner);
  }
  const addAll = (cart, items) => { items.forEach((i) => cart.add(i)); };
  When('I start', function () {
    this.cart = makeCart('me');
    addAll(this.cart, []);
  });
  Then('nothing', function () {});
};
"""


def test_calls_through_test_side_helpers_count(tmp_path: Path) -> None:
    (tmp_path / "steps.js").write_text(HELPERS)
    when, then = scan_source("steps.js", HELPERS.encode())
    reader = CallReader(tmp_path)
    assert {"Cart", "add", "forEach", "makeCart", "addAll"} <= reader.calls("steps.js", when.start_byte, when.end_byte)
    assert reader.calls("steps.js", then.start_byte, then.end_byte) == {"Then"}


def test_what_loading_covers_is_taken_away() -> None:
    from bench.frameworks.cucumber_js.v8coverage import RunCoverage

    run = RunCoverage(lines={"a.js": {1, 2, 3, 7}, "b.js": {1}}, functions={("a.js", 1, "a")})
    left = run.without({"a.js": {1, 7}, "b.js": {1}})
    assert left.as_lists() == {"a.js": [2, 3]} and left.functions == run.functions
