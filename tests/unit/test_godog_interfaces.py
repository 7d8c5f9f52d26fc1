"""Godog: production declarations, the calls step handlers make, target interfaces and the
target-hidden map (``bench.frameworks.godog.declarations`` / ``interfaces``) on a small Go module
written here (no Go toolchain), and a slow look at go-algorand-sdk's real step file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.godog.declarations import CallReader, GoProductionDeclarations
from bench.frameworks.godog.hiding import hide_go_bodies
from bench.frameworks.godog.interfaces import hidden_declarations, interface_groups, scenario_calls

MODULE = "example.com/shop"

CART = """package cart

import "strings"

// Cart holds items.
type Cart struct {
	owner string
	items []string
}

func NewCart(owner string) *Cart {
	return &Cart{owner: strings.TrimSpace(owner)}
}

func (c *Cart) Add(item string) {
	c.items = append(c.items, item)
}

func (c Cart) Total() int { return round(len(c.items)) }

func (c *Cart) check() error {
	return nil
}

func round(n int) int {
	return n
}

func Reset() error {
	return nil
}

type ledger struct{}

func (l *ledger) Total() int {
	return 0
}
"""

PRICING = """package pricing

type Rule struct{ Percent int }

func (r Rule) Apply(
	total int,
	extra int,
) int {
	return total * (100 - r.Percent) / 100
}

func Discount(n int) int {
	return n
}

func Max[T int | float64](a, b T) T {
	if a > b {
		return a
	}
	return b
}

func Ident[T any](a T) T {
	return a
}

type Basket struct{}

func (b *Basket) Total() int {
	return 1
}
"""

STEPS = """package features

import (
	"fmt"

	sh "example.com/shop/cart"
	"example.com/shop/pricing"
)

var c *sh.Cart

func aCart(owner string) error {
	c = sh.NewCart(owner)
	return nil
}

func iAdd(item string) error {
	c.Add(item)
	rule := pricing.Rule{Percent: 10}
	_ = rule.Apply(c.Total(), 0)
	_ = pricing.Max[int](1, 2)
	_ = pricing.Ident[int](3)
	helper()
	fmt.Println(item)
	return nil
}

func theTotalIs(n int) error {
	expected := sh.NewCart("x")
	if c.Total() != n || expected == nil {
		return fmt.Errorf("total %d", c.Total())
	}
	return nil
}

func helper() {
	_ = pricing.Discount(1)
}

func InitializeScenario(s interface{ Step(string, interface{}) }) {
	s.Step(`^a cart of "([^"]*)"$`, aCart)
	s.Step(`^I add "([^"]*)"$`, iAdd)
	s.Step(`^the total is (\\d+)$`, theTotalIs)
	s.Step(`^reset$`, func() error {
		return sh.Reset()
	})
}
"""

INTERNAL = """package cart

func givenInternal() error {
	c := NewCart("me")
	_ = round(1)
	c.check()
	return nil
}
"""

EXTERNAL = """package cart_test

import . "example.com/shop/pricing"

func givenExternal() error {
	_ = NewCart("me")
	_ = Discount(2)
	return nil
}
"""


def _module(tmp_path: Path) -> Path:
    files = {"go.mod": f"module {MODULE}\n\ngo 1.22\n", "cart/cart.go": CART, "pricing/pricing.go": PRICING,
             "features/steps_test.go": STEPS, "cart/bdd_internal_test.go": INTERNAL,
             "cart/bdd_external_test.go": EXTERNAL}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _span(root: Path, file: str, function: str) -> HandlerSpan:
    lines = (root / file).read_text().splitlines()
    start = next(n for n, line in enumerate(lines, 1) if line.startswith(f"func {function}("))
    end = next(n for n, line in enumerate(lines, 1) if n > start and line == "}")
    return HandlerSpan(file, start, end)


def test_declarations_package_signature_visibility_and_body(tmp_path: Path) -> None:
    declarations = GoProductionDeclarations(_module(tmp_path), ["cart", "pricing"])
    assert sorted(declarations.by_file) == ["cart/cart.go", "pricing/pricing.go"]  # no _test.go
    found = {d.key: d for d in declarations}
    assert set(found) == {f"cart/cart.go:{q}" for q in ("NewCart", "Cart.Add", "Cart.Total", "Cart.check", "round",
                                                        "Reset", "ledger.Total")} | \
        {f"pricing/pricing.go:{q}" for q in ("Rule.Apply", "Discount", "Max", "Ident", "Basket.Total")}
    add, apply = found["cart/cart.go:Cart.Add"], found["pricing/pricing.go:Rule.Apply"]
    assert (add.package, add.owner, add.kind, add.line, add.body_start, add.body_end) == \
        (f"{MODULE}/cart", "Cart", "method", 15, 15, 17)
    assert add.signature == "func (c *Cart) Add(item string)"
    assert apply.signature == "func (r Rule) Apply(\n\ttotal int,\n\textra int,\n) int"  # verbatim
    assert (apply.line, apply.body_start, apply.body_end) == (5, 8, 10)
    public = {d.qualname for d in declarations if d.public}
    assert {"Cart.check", "round", "ledger.Total"}.isdisjoint(public)  # unexported name or receiver type
    assert {"NewCart", "Cart.Total", "Rule.Apply", "Max"} <= public
    assert found["cart/cart.go:Cart.Total"].declaration().kind == "method"
    span = found["cart/cart.go:Cart.Total"].body_span()
    assert (span.def_line, span.body_start, span.body_end) == (19, 19, 19)


def test_declarations_are_exactly_the_bodies_the_views_hide(tmp_path: Path) -> None:
    root = _module(tmp_path)
    declarations = GoProductionDeclarations(root, ["cart", "pricing"])
    for file, found in declarations.by_file.items():
        seen: list[tuple[str, int]] = []
        # the hider calls it while it runs, in this iteration
        hide_go_bodies((root / file).read_text(), lambda q, line: seen.append((q, line)) is None)  # noqa: B023
        assert sorted(seen) == sorted((d.qualname, d.line) for d in found)


def test_ran_reads_covered_body_lines(tmp_path: Path) -> None:
    declarations = GoProductionDeclarations(_module(tmp_path), ["cart", "pricing"])
    ran = declarations.ran({"cart/cart.go": {11, 12, 19, 4}, "pricing/pricing.go": {9}, "elsewhere.go": {1}})
    assert sorted(d.qualname for d in ran) == ["Cart.Total", "NewCart", "Rule.Apply"]  # line 4: a comment
    assert declarations.ran({}) == set()


def test_calls_by_package_alias_method_name_generics_and_own_package(tmp_path: Path) -> None:
    root = _module(tmp_path)
    declarations = GoProductionDeclarations(root, ["cart", "pricing"])
    reader = CallReader(root, declarations)
    steps = "features/steps_test.go"

    def keys(span: HandlerSpan) -> set[str]:
        return {d.key for d in reader.calls(span)}

    assert keys(_span(root, steps, "aCart")) == {"cart/cart.go:NewCart"}
    # a method name is every production method of that name (no types); a composite literal is no call
    assert keys(_span(root, steps, "iAdd")) == {
        "cart/cart.go:Cart.Add", "pricing/pricing.go:Rule.Apply", "cart/cart.go:Cart.Total",
        "cart/cart.go:ledger.Total", "pricing/pricing.go:Basket.Total", "pricing/pricing.go:Max",
        "pricing/pricing.go:Ident"}  # helper() is test-side: its calls come with its own span
    assert keys(_span(root, steps, "helper")) == {"pricing/pricing.go:Discount"}
    # a ``func`` literal handler: its body only, not the ``s.Step`` call around it
    lines = (root / steps).read_text().splitlines()
    start = next(n for n, line in enumerate(lines, 1) if "`^reset$`" in line)
    assert keys(HandlerSpan(steps, start, start + 2)) == {"cart/cart.go:Reset"}
    # a suite inside the production package calls its functions unqualified (unexported too);
    # an external test package does not, a dot import does
    internal = _span(root, "cart/bdd_internal_test.go", "givenInternal")
    assert keys(internal) == {"cart/cart.go:NewCart", "cart/cart.go:round", "cart/cart.go:Cart.check"}
    assert keys(_span(root, "cart/bdd_external_test.go", "givenExternal")) == {"pricing/pricing.go:Discount"}


def test_api_targets_groups_and_hidden_map(tmp_path: Path) -> None:
    root = _module(tmp_path)
    declarations = GoProductionDeclarations(root, ["cart", "pricing"])
    steps = "features/steps_test.go"
    by_key = {d.key: d for d in declarations}
    ran = {by_key[f"cart/cart.go:{q}"] for q in ("NewCart", "Cart.Add", "Cart.Total", "round", "Reset")} | \
        {by_key["pricing/pricing.go:Rule.Apply"], by_key["pricing/pricing.go:Discount"]}
    sites = [(_span(root, steps, "aCart"), "given"), (_span(root, steps, "iAdd"), "when"),
             (_span(root, steps, "helper"), "when"), (_span(root, steps, "theTotalIs"), "then")]
    calls = scenario_calls(ran, CallReader(root, declarations), sites)
    # Basket.Total and ledger.Total share the name but did not run (ledger's is unexported anyway);
    # round ran but only production calls it
    assert calls.api_keys == ["cart/cart.go:Cart.Add", "cart/cart.go:Cart.Total", "cart/cart.go:NewCart",
                              "pricing/pricing.go:Discount", "pricing/pricing.go:Rule.Apply"]
    # NewCart in the Then step stays a target: Go has no constructors
    assert calls.target_keys == calls.api_keys
    only_given = scenario_calls(ran, CallReader(root, declarations), sites[:1])
    assert (only_given.api_keys, only_given.target_keys) == (["cart/cart.go:NewCart"], [])
    groups = interface_groups(calls.targets)
    assert [(g.declaring_type, g.file, [d.qualname for d in g.declarations]) for g in groups] == [
        (f"{MODULE}/cart", "cart/cart.go", ["NewCart"]),
        (f"{MODULE}/cart.Cart", "cart/cart.go", ["Cart.Add", "Cart.Total"]),
        (f"{MODULE}/pricing", "pricing/pricing.go", ["Discount"]),
        (f"{MODULE}/pricing.Rule", "pricing/pricing.go", ["Rule.Apply"])]
    hidden = hidden_declarations(calls, shared={"cart/cart.go:Reset", "cart/cart.go:Cart.Add"},
                                 load_time={"cart/cart.go:NewCart"})
    # targets even when shared, never load-time code; every other body that ran unless shared
    assert [d.key for d in hidden] == ["cart/cart.go:Cart.Add", "cart/cart.go:Cart.Total", "cart/cart.go:round",
                                       "pricing/pricing.go:Rule.Apply", "pricing/pricing.go:Discount"]
    assert [s.def_line for s in (d.body_span() for d in hidden)] == [15, 19, 25, 5, 12]


# --------------------------------------------------------------------------- real corpus
MIRROR = Path("/work/.mirror/algorand+go-algorand-sdk")


@pytest.mark.slow
def test_go_algorand_sdk_declarations_and_handler_calls(tmp_path: Path) -> None:
    if not MIRROR.exists():
        pytest.skip(f"no mirror of go-algorand-sdk at {MIRROR}")
    from tests.integration.recipes import recipe

    corpus = recipe("go_algorand_sdk")

    try:
        root = corpus.assemble(tmp_path / "sdk", corpus.default_source("go-algorand-sdk"),
                               corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the go-algorand-sdk corpus cannot be assembled here: {exc}")
    declarations = GoProductionDeclarations(root, corpus.PRODUCTION)
    every = list(declarations)
    # 228 production files (134 of them declare types and constants only), 539 bodies, 474 public
    assert (len(declarations.by_file), len(every), sum(d.public for d in every)) == (228, 539, 474)
    assert len({d.key for d in every}) == len(every)  # keys are unique on this corpus
    reader = CallReader(root, declarations)
    steps = "test/steps_test.go"

    def calls(function: str) -> set[str]:
        return {d.key for d in reader.calls(_span(root, steps, function))}

    # ``When I generate a key``: crypto.GenerateAccount, then ``a.String()`` on a types.Address
    assert calls("genKey") == {"crypto/account.go:GenerateAccount", "types/address.go:Address.String"}
    assert calls("skToMn") == {"mnemonic/helpers.go:FromPrivateKey"}
    assert calls("encDecBid") == {"encoding/msgpack/msgpack.go:Encode", "encoding/msgpack/msgpack.go:Decode"}
    assert calls("checkMethodSelector") == {"abi/interactions.go:Method.GetSelector"}  # hex.EncodeToString is not
    # aliases (``indexerV2``, ``algodV2``) resolve to their package, not to kmd's or the other's MakeClient
    assert calls("indexerClientV2") == {"client/v2/indexer/indexer.go:MakeClient"}
    # ``aclv2.StatusAfterBlock(1).Do(...)``: the one method of that name, and every ``Do`` (61 request
    # builders; coverage keeps the one that ran)
    algod = calls("algodClientV2")
    named = {"client/v2/algod/algod.go:MakeClient", "client/v2/algod/algod.go:Client.StatusAfterBlock"}
    assert named | {"client/v2/algod/waitForBlock.go:StatusAfterBlock.Do"} <= algod
    assert len(algod - named) == 61 and all(k.endswith(".Do") for k in algod - named)
    assert calls("txnParams") == set()  # base64.StdEncoding.DecodeString only
