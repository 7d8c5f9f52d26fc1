"""Cucumber-JVM: production declarations, the calls step methods make, target interfaces and the
target-hidden map (``bench.frameworks.cucumber_jvm.declarations`` / ``interfaces``) on a small
Maven-layout Java project written here (no JDK), and a look at java-algorand-sdk v2.10.1's real
sources and step classes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.declarations import (
    CallReader,
    HandlerSpan,
    JavaProductionDeclarations,
)
from bench.frameworks.cucumber_jvm.interfaces import (
    declaring_type,
    hidden_declarations,
    interface_groups,
    scenario_calls,
)
from bench.frameworks.cucumber_jvm.syntax import java_parser, methods

MAIN = "src/main/java/com/shop"
TEST = "src/test/java/com/shop"

CART = """package com.shop;

import java.util.ArrayList;
import java.util.List;

/** A cart. */
public class Cart {
    private final String owner;
    private final List<String> items = new ArrayList<>();

    public Cart(String owner) {
        this.owner = owner;
    }

    Cart() {
        this("nobody");
    }

    public void add(String item) {
        items.add(item);
    }

    public void add(String item, int quantity) {
        for (int i = 0; i < quantity; i++) {
            add(item);
        }
    }

    public void addAll(String... more) {
        for (String item : more) add(item);
    }

    public int total() { return items.size(); }

    public static Cart empty() {
        return new Cart("");
    }

    @Override
    public String toString()
            throws IllegalStateException {
        return owner + items;
    }

    private void check() {
    }

    public static class Line {
        private final String sku;

        public Line(String sku) {
            this.sku = sku;
        }

        public int total() {
            return sku.length();
        }
    }

    private static class Hidden {
        public void secret() {
        }
    }
}
"""

LEDGER = """package com.shop;

class Ledger {
    public int total() {
        return 0;
    }
}
"""

PRICING = """package com.shop;

public interface Pricing {
    int price(String sku);

    default int discount(int total) {
        return total - helper();
    }

    static Pricing flat(int amount) {
        return sku -> amount;
    }

    private int helper() {
        return 1;
    }
}
"""

MONEY = """package com.shop;

public record Money(long cents, String currency) {
    public Money {
        if (cents < 0) throw new IllegalArgumentException();
    }

    public static Money of(long cents) {
        return new Money(cents, "EUR");
    }
}
"""

SIZE = """package com.shop;

public enum Size {
    SMALL, LARGE;

    Size() {
    }

    public int weight() {
        return ordinal();
    }
}
"""

SPECIAL = """package com.shop;

public class SpecialCart extends Cart {
    public SpecialCart() {
        super("special");
    }
}
"""

FIXTURE = """package com.shop;

public class Fixture {
    protected void reset() {
        Cart.empty();
    }

    public static Fixture seed() {
        return new Fixture();
    }
}
"""

FORMAT = """package com.shop.util;

public final class Format {
    private Format() {
    }

    public static String money(long cents) {
        return money(cents, "EUR");
    }

    public static String money(long cents, String currency) {
        return cents + " " + currency;
    }

    public String price() {
        return "";
    }
}
"""

CART_STEPS = """package com.shop.steps;

import static com.shop.util.Format.money;
import static org.junit.Assert.assertEquals;

import com.shop.*;
import com.shop.Cart.Line;
import io.cucumber.java.en.Given;
import io.cucumber.java.en.Then;
import io.cucumber.java.en.When;
import java.util.List;

public class CartSteps extends Fixture {
    private static final Pricing PRICING = Pricing.flat(3);
    private Cart cart;

    @Given("a cart of {string}")
    public void aCart(String owner) {
        cart = new Cart(owner);
        reset();
    }

    @When("I add {string}")
    public void iAdd(String item) {
        cart.add(item);
        this.cart.add(item, 2);
        cart.addAll();
        Line line = new Line(item);
        new Cart.Line(item).total();
        List.of(item).forEach(cart::add);
        helper(item);
        Integer.valueOf(money(5L).length());
        "x".equals(item);
    }

    @Then("the total is {int}")
    public void theTotalIs(int n) {
        Cart expected = new Cart("x");
        assertEquals(expected.total(), n);
        Money m = Money.of(n);
        SpecialCart.empty();
        com.shop.util.Format.money(1L, "EUR");
        List.of("a").stream().map(Cart::new);
        Size.SMALL.weight();
        super.reset();
        seed();
    }

    private void helper(String item) {
        PRICING.discount(item.length());
    }
}
"""

INTERNAL_STEPS = """package com.shop;

import static com.shop.TestData.*;
import static com.shop.util.Format.*;

import io.cucumber.java8.En;

public class InternalSteps implements En {
    public InternalSteps() {
        Given("^an empty cart$", () -> {
            Cart.empty();
        });
    }

    public int ledger() {
        TestData.make();
        make();
        return new Ledger().total() + money(1L).length();
    }
}
"""

TEST_DATA = """package com.shop;

public class TestData {
    public static Cart make() {
        return new Cart("test");
    }
}
"""


def _project(tmp_path: Path) -> Path:
    files = {
        f"{MAIN}/Cart.java": CART, f"{MAIN}/Ledger.java": LEDGER, f"{MAIN}/Pricing.java": PRICING,
        f"{MAIN}/Money.java": MONEY, f"{MAIN}/Size.java": SIZE, f"{MAIN}/SpecialCart.java": SPECIAL,
        f"{MAIN}/Fixture.java": FIXTURE, f"{MAIN}/util/Format.java": FORMAT,
        f"{MAIN}/package-info.java": "/** The shop. */\npackage com.shop;\n",
        f"{TEST}/steps/CartSteps.java": CART_STEPS, f"{TEST}/InternalSteps.java": INTERNAL_STEPS,
        f"{TEST}/TestData.java": TEST_DATA,
    }  # fmt: skip
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _short(key_or_file: str) -> str:
    return key_or_file.removeprefix(f"{MAIN}/")


def _names(found) -> set[str]:
    """``File.java:Qual.name@line`` of declarations, relative to the production package."""
    return {f"{_short(d.file)}:{d.qualname}@{d.line}" for d in found}


def _span(root: Path, file: str, method: str) -> HandlerSpan:
    """A test-side method's span, from its first annotation's line as the test side gives it."""
    tree = java_parser().parse((root / file).read_bytes())
    found = next(m for m in methods(tree.root_node) if m.name == method)
    return HandlerSpan(file, found.line, found.node.end_point[0] + 1)


def test_production_files_skip_package_info_and_tests(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert sorted(JavaProductionDeclarations(root, ["src/main/java"]).by_file) == [
        f"{MAIN}/{name}.java"
        for name in ("Cart", "Fixture", "Ledger", "Money", "Pricing", "Size", "SpecialCart", "util/Format")
    ]
    only = JavaProductionDeclarations(root, [f"{MAIN}/Cart.java", "missing"])
    assert list(only.by_file) == [f"{MAIN}/Cart.java"] and len(list(only)) == 12


def test_declarations_qualnames_kinds_visibility_and_spans(tmp_path: Path) -> None:
    declarations = JavaProductionDeclarations(_project(tmp_path), ["src/main/java"])
    every = list(declarations)
    assert _names(every) == {
        "Cart.java:Cart.<init>@11", "Cart.java:Cart.<init>@15", "Cart.java:Cart.add@19", "Cart.java:Cart.add@23",
        "Cart.java:Cart.addAll@29", "Cart.java:Cart.total@33", "Cart.java:Cart.empty@35",
        "Cart.java:Cart.toString@39", "Cart.java:Cart.check@45", "Cart.java:Cart.Line.<init>@51",
        "Cart.java:Cart.Line.total@55", "Cart.java:Cart.Hidden.secret@61", "Ledger.java:Ledger.total@4",
        "Pricing.java:Pricing.discount@6", "Pricing.java:Pricing.flat@10", "Pricing.java:Pricing.helper@14",
        "Money.java:Money.<init>@4", "Money.java:Money.of@8", "Size.java:Size.<init>@6", "Size.java:Size.weight@9",
        "SpecialCart.java:SpecialCart.<init>@4", "Fixture.java:Fixture.reset@4", "Fixture.java:Fixture.seed@8",
        "util/Format.java:Format.<init>@4", "util/Format.java:Format.money@7", "util/Format.java:Format.money@11",
        "util/Format.java:Format.price@15",
    }  # fmt: skip
    # Pricing.price is abstract: no body, nothing to hide, nothing covered
    assert len(every) == 27 and not [d for d in every if d.name == "price" and d.owner == "Pricing"]
    # package-private constructor and class, private method and enclosing class, private interface
    # method, enum constructor, protected method, private constructor
    assert _names(d for d in every if not d.public) == {
        "Cart.java:Cart.<init>@15", "Cart.java:Cart.check@45", "Cart.java:Cart.Hidden.secret@61",
        "Ledger.java:Ledger.total@4", "Pricing.java:Pricing.helper@14", "Size.java:Size.<init>@6",
        "Fixture.java:Fixture.reset@4", "util/Format.java:Format.<init>@4",
    }  # fmt: skip
    by_name = {f"{_short(d.file)}:{d.qualname}@{d.line}": d for d in every}
    assert {k.split(":")[1] for k, d in by_name.items() if d.kind == "staticmethod"} == {
        "Cart.empty@35", "Pricing.flat@10", "Money.of@8", "Fixture.seed@8", "Format.money@7", "Format.money@11"}  # fmt: skip
    assert {k.split(":")[1] for k, d in by_name.items() if d.kind == "constructor"} == {
        "Cart.<init>@11", "Cart.<init>@15", "Cart.Line.<init>@51", "Money.<init>@4", "Size.<init>@6",
        "SpecialCart.<init>@4", "Format.<init>@4"}  # fmt: skip
    assert by_name["Pricing.java:Pricing.discount@6"].kind == "method"  # a default method
    line = by_name["Cart.java:Cart.Line.<init>@51"]
    assert (line.package, line.owner, line.name, line.type_name, line.key) == (
        "com.shop", "Cart.Line", "<init>", "com.shop.Cart.Line", f"{MAIN}/Cart.java:Cart.Line.<init>")  # fmt: skip
    assert line.signature == "public Line(String sku)"
    # annotations included, continuation lines dedented by the declaration's indent
    to_string = by_name["Cart.java:Cart.toString@39"]
    assert to_string.signature == "@Override\npublic String toString()\n        throws IllegalStateException"
    assert (to_string.line, to_string.body_start, to_string.body_end) == (39, 41, 43)
    total = by_name["Cart.java:Cart.total@33"]
    assert (total.body_start, total.body_end, total.parameters, total.varargs) == (33, 33, 0, False)
    add_all = by_name["Cart.java:Cart.addAll@29"]
    assert (add_all.parameters, add_all.varargs) == (1, True)
    assert [add_all.accepts(n) for n in range(4)] == [True, True, True, True]
    assert [by_name["Cart.java:Cart.add@23"].accepts(n) for n in range(4)] == [False, False, True, False]
    compact = by_name["Money.java:Money.<init>@4"]  # a record's compact constructor takes its components
    assert (compact.parameters, compact.signature, compact.public) == (2, "public Money", True)
    model = to_string.declaration()
    assert (model.file, model.qualname, model.line, model.kind) == (f"{MAIN}/Cart.java", "Cart.toString", 39, "method")
    span = by_name["Cart.java:Cart.add@23"].body_span()
    assert (span.qualname, span.def_line, span.body_start, span.body_end) == ("Cart.add", 23, 23, 27)
    assert declarations.supertypes("com.shop.SpecialCart") == ["com.shop.SpecialCart", "com.shop.Cart"]


def test_declarations_are_exactly_the_methods_with_a_body(tmp_path: Path) -> None:
    root = _project(tmp_path)
    declarations = JavaProductionDeclarations(root, ["src/main/java"])
    for file, found in declarations.by_file.items():
        tree = java_parser().parse((root / file).read_bytes())
        expected = [(m.qualname, m.line) for m in methods(tree.root_node) if m.body is not None]
        assert [(d.qualname, d.line) for d in found] == expected


def test_ran_reads_covered_body_lines(tmp_path: Path) -> None:
    declarations = JavaProductionDeclarations(_project(tmp_path), ["src/main/java"])
    ran = declarations.ran({
        f"{MAIN}/Cart.java": {7, 12, 33, 40, 56},  # 7: the class line; 40: toString's signature, not its body
        f"{MAIN}/Pricing.java": [4, 11],  # 4: the abstract method; 11: a lambda's line inside flat
        "src/main/java/com/elsewhere/Other.java": {1},
    })  # fmt: skip
    assert _names(ran) == {"Cart.java:Cart.<init>@11", "Cart.java:Cart.total@33", "Cart.java:Cart.Line.total@55",
                           "Pricing.java:Pricing.flat@10"}  # fmt: skip
    assert declarations.ran({}) == set()


def test_calls_through_imports_receivers_arity_and_inheritance(tmp_path: Path) -> None:
    root = _project(tmp_path)
    reader = CallReader(root, JavaProductionDeclarations(root, ["src/main/java"]))
    steps = f"{TEST}/steps/CartSteps.java"

    def calls(span: HandlerSpan) -> set[str]:
        return _names(reader.calls(span))

    # ``new Cart(owner)``: the 1-argument constructor; ``reset()``: inherited from the production Fixture
    assert calls(_span(root, steps, "aCart")) == {"Cart.java:Cart.<init>@11", "Fixture.java:Fixture.reset@4"}
    # the span may start at the name's line instead of the annotation's
    given = _span(root, steps, "aCart")
    assert calls(HandlerSpan(steps, given.start_line + 1, given.end_line)) == calls(given)
    assert calls(_span(root, steps, "iAdd")) == {
        "Cart.java:Cart.add@19",  # cart.add(item): by name and arity
        "Cart.java:Cart.add@23",  # this.cart.add(item, 2); and cart::add (no arity) gives both
        "Cart.java:Cart.addAll@29",  # varargs, no argument
        "Cart.java:Cart.Line.<init>@51",  # new Line(...) via ``import com.shop.Cart.Line``, new Cart.Line(...)
        # ``new Cart.Line(item).total()``: every production ``total()``, package-private Ledger's too
        "Cart.java:Cart.total@33", "Cart.java:Cart.Line.total@55", "Ledger.java:Ledger.total@4",
        "util/Format.java:Format.money@7",  # money(5L) through ``import static ...Format.money``
    }  # fmt: skip
    # helper(item) is test-side (its own span); Integer.valueOf, List.of, "x".equals, .length() are no production's
    assert calls(_span(root, steps, "helper")) == {"Pricing.java:Pricing.discount@6"}  # a constant's method
    # assertEquals is statically imported from JUnit: no production's
    assert calls(_span(root, steps, "theTotalIs")) == {
        "Cart.java:Cart.<init>@11", "Cart.java:Cart.<init>@15",  # new Cart("x"); Cart::new (no arity)
        "Cart.java:Cart.total@33", "Cart.java:Cart.Line.total@55", "Ledger.java:Ledger.total@4",  # expected.total()
        "Money.java:Money.of@8",  # Money.of(n): static, through ``import com.shop.*``
        "Cart.java:Cart.empty@35",  # SpecialCart.empty(): a static method inherited from its superclass
        "util/Format.java:Format.money@11",  # com.shop.util.Format.money(1L, "EUR"): fully qualified, 2 arguments
        "Size.java:Size.weight@9",  # Size.SMALL.weight(): an enum constant is a value
        "Fixture.java:Fixture.reset@4", "Fixture.java:Fixture.seed@8",  # super.reset(); seed() inherited
    }  # fmt: skip

    internal = f"{TEST}/InternalSteps.java"
    # a Java 8 lambda step: its body only, not the ``Given(...)`` around it
    lines = (root / internal).read_text().splitlines()
    start = next(n for n, text in enumerate(lines, 1) if "Given(" in text)
    assert calls(HandlerSpan(internal, start, start + 2)) == {"Cart.java:Cart.empty@35"}
    # the constructor holding it: ``Given`` is En's (not production), the on-demand static imports have none
    assert calls(_span(root, internal, "<init>")) == {"Cart.java:Cart.empty@35"}
    # same-package production type without import (Ledger), a same-package test type (TestData) and
    # its on-demand static import are test-side; ``money(1L)`` through ``import static ...Format.*``
    assert calls(_span(root, internal, "ledger")) == {
        "Cart.java:Cart.total@33", "Cart.java:Cart.Line.total@55", "Ledger.java:Ledger.total@4",
        "util/Format.java:Format.money@7"}  # fmt: skip
    # a span that is no method's: every node inside it
    assert calls(HandlerSpan(internal, start + 1, start + 1)) == {"Cart.java:Cart.empty@35"}


def test_calls_inside_an_anonymous_subclass(tmp_path: Path) -> None:
    base = """package p;

public abstract class Base {
    public Base(int x) {
        go();
    }

    protected void go() {
        run();
    }

    public static int run() {
        return 1;
    }
}
"""
    steps = """package t;

import p.Base;

public class S {
    void a() {
        new Base(run()) {
            void b() { go(); }
        };
    }
}
"""
    (tmp_path / "src/main/java/p").mkdir(parents=True)
    (tmp_path / "src/test/java/t").mkdir(parents=True)
    (tmp_path / "src/main/java/p/Base.java").write_text(base)
    (tmp_path / "src/test/java/t/S.java").write_text(steps)
    reader = CallReader(tmp_path, JavaProductionDeclarations(tmp_path, ["src/main/java"]))
    # the anonymous class's constructor call, and ``go()`` its body inherits from Base; ``run()`` in
    # the arguments is S's to resolve (S neither inherits nor imports it)
    found = reader.calls(_span(tmp_path, "src/test/java/t/S.java", "a"))
    assert {(d.qualname, d.line) for d in found} == {("Base.<init>", 4), ("Base.go", 8)}


def test_api_targets_groups_and_hidden_map(tmp_path: Path) -> None:
    root = _project(tmp_path)
    declarations = JavaProductionDeclarations(root, ["src/main/java"])
    by_name = {f"{_short(d.file)}:{d.qualname}@{d.line}": d for d in declarations}
    ran = {by_name[k] for k in (
        "Cart.java:Cart.<init>@11", "Cart.java:Cart.add@19", "Cart.java:Cart.Line.<init>@51", "Cart.java:Cart.total@33",
        "Cart.java:Cart.empty@35", "Cart.java:Cart.check@45", "Money.java:Money.<init>@4", "Money.java:Money.of@8",
        "util/Format.java:Format.money@7", "Pricing.java:Pricing.discount@6", "Fixture.java:Fixture.reset@4",
        "Ledger.java:Ledger.total@4")}  # fmt: skip
    steps = f"{TEST}/steps/CartSteps.java"
    sites = [(_span(root, steps, "aCart"), "given"), (_span(root, steps, "iAdd"), "when"),
             (_span(root, steps, "helper"), "when"), (_span(root, steps, "theTotalIs"), "then")]  # fmt: skip
    calls = scenario_calls(ran, CallReader(root, declarations), sites)
    # public, ran and called: not Fixture.reset (protected), Ledger.total (package-private class),
    # Money.<init> (ran, inside Money.of, but no step calls it), Cart.check
    assert _names(calls.api) == {
        "Cart.java:Cart.<init>@11", "Cart.java:Cart.add@19", "Cart.java:Cart.Line.<init>@51",
        "Cart.java:Cart.total@33", "Cart.java:Cart.empty@35", "Money.java:Money.of@8",
        "util/Format.java:Format.money@7", "Pricing.java:Pricing.discount@6"}  # fmt: skip
    assert [(d.file, d.line) for d in calls.api] == sorted((d.file, d.line) for d in calls.api)
    # the Then step's ``new Cart("x")`` builds an expected value: the When steps construct no Cart
    assert _names(calls.targets) == _names(calls.api) - {"Cart.java:Cart.<init>@11"}
    assert calls.ran == frozenset(ran)
    # once a When step constructs a Cart, the constructor is a target
    when_cart = scenario_calls(ran, CallReader(root, declarations), [(sites[0][0], "when"), sites[3]])
    assert "Cart.java:Cart.<init>@11" in _names(when_cart.targets)
    only_given = scenario_calls(ran, CallReader(root, declarations), sites[:1])
    assert (_names(only_given.api), only_given.targets) == ({"Cart.java:Cart.<init>@11"}, [])

    assert declaring_type(by_name["Cart.java:Cart.Line.<init>@51"]) == "com.shop.Cart.Line"
    groups = interface_groups(calls.targets)
    assert [(g.declaring_type, _short(g.file), [(d.qualname, d.kind) for d in g.declarations]) for g in groups] == [
        ("com.shop.Cart", "Cart.java", [("Cart.add", "method"), ("Cart.total", "method"),
                                        ("Cart.empty", "staticmethod")]),
        ("com.shop.Cart.Line", "Cart.java", [("Cart.Line.<init>", "constructor")]),
        ("com.shop.Money", "Money.java", [("Money.of", "staticmethod")]),
        ("com.shop.Pricing", "Pricing.java", [("Pricing.discount", "method")]),
        ("com.shop.util.Format", "util/Format.java", [("Format.money", "staticmethod")]),
    ]  # fmt: skip
    assert groups[0].declarations[2].signature == "public static Cart empty()"
    cart = f"{MAIN}/Cart.java"
    hidden = hidden_declarations(calls, shared={f"{cart}:Cart.check", f"{cart}:Cart.add"},
                                 load_time={f"{MAIN}/Pricing.java:Pricing.discount"})  # fmt: skip
    # targets even when shared, never load-time code; every other body that ran unless shared
    assert [(_short(d.file), d.qualname, d.line) for d in hidden] == [
        ("Cart.java", "Cart.<init>", 11), ("Cart.java", "Cart.add", 19), ("Cart.java", "Cart.total", 33),
        ("Cart.java", "Cart.empty", 35), ("Cart.java", "Cart.Line.<init>", 51), ("Fixture.java", "Fixture.reset", 4),
        ("Ledger.java", "Ledger.total", 4), ("Money.java", "Money.<init>", 4), ("Money.java", "Money.of", 8),
        ("util/Format.java", "Format.money", 7),
    ]  # fmt: skip


# --------------------------------------------------------------------------- real corpus
CORPUS = Path("/work/corpora/java-algorand-sdk")
UNIT = "src/test/java/com/algorand/algosdk/unit"


def test_java_algorand_sdk_declarations_and_step_calls() -> None:
    if not (CORPUS / "src/main/java/com/algorand/algosdk/crypto/Address.java").is_file():
        pytest.skip(f"no java-algorand-sdk checkout at {CORPUS}")
    started = time.perf_counter()
    declarations = JavaProductionDeclarations(CORPUS, ["src/main/java"])
    scanned = time.perf_counter() - started
    every = list(declarations)
    # v2.10.1: 333 production files, 2260 bodies (255 constructors), 2028 public; overloads share keys
    assert (len(declarations.by_file), len(every), sum(d.public for d in every)) == (333, 2260, 2028)
    assert sum(d.kind == "constructor" for d in every) == 255 and len({d.key for d in every}) == 1939
    assert scanned < 10  # ~0.2 s here
    address = "src/main/java/com/algorand/algosdk/crypto/Address.java"
    found = {(d.qualname, d.line): d for d in declarations.by_file[address]}
    assert {line for (q, line) in found if q == "Address.<init>"} == {57, 69, 85}
    assert all(d.public for d in found.values())
    assert found[("Address.<init>", 57)].signature == "@JsonCreator\npublic Address(final byte[] bytes)"
    assert found[("Address.encodeAsString", 116)].kind == "method"
    value_of = next(d for d in every if d.type_name == "com.algorand.algosdk.abi.ABIType" and d.name == "valueOf")
    assert (value_of.public, value_of.kind, value_of.parameters) == (True, "staticmethod", 1)

    reader = CallReader(CORPUS, declarations)
    abi = f"{UNIT}/ABIJson.java"

    def calls(file: str, method: str) -> set[str]:
        return {f"{d.type_name.removeprefix('com.algorand.algosdk.')}.{d.name}@{d.line}"
                for d in reader.calls(_span(CORPUS, file, method))}  # fmt: skip

    # ``new Method.Arg(null, string2, null)``, ``new Method.Returns(string4, null)`` and the 4-argument
    # ``new Method(...)``; ArrayList, Arrays.asList are no production's
    assert calls(abi, "i_create_the_method_object_with_name_first_argument_type_second_argument_type_and_return_type") \
        == {"abi.Method.<init>@78", "abi.Method.Arg.<init>@257", "abi.Method.Returns.<init>@222"}  # fmt: skip
    # ``new Method(string)``: both 1-argument constructors (types are not compared)
    assert calls(abi, "i_create_the_method_object_from_method_signature") == {"abi.Method.<init>@94",
                                                                              "abi.Method.<init>@110"}  # fmt: skip
    assert calls(abi, "the_method_selector_should_be") == {"abi.Method.getSelector@157"}  # Hex.decodeHex is not
    assert calls(abi, "i_serialize_the_method_object_into_json") == set()  # ObjectMapper's only
    # ``this.interfaceObj.getMethodByName(name)``: by name (Contract's too), and ``e.getMessage()``'s
    by_name = calls(abi, "i_get_the_method_from_the_interface_by_name")
    assert {"abi.Interface.getMethodByName@47", "abi.Contract.getMethodByName@58"} <= by_name
    assert all(k.split("@")[0].endswith((".getMethodByName", ".getMessage")) for k in by_name)
    teal = f"{UNIT}/TealSign.java"
    decode = next(d for d in every if d.qualname == "Encoder.decodeFromBase64")
    assert calls(teal, "data_to_sign") == {f"util.Encoder.decodeFromBase64@{decode.line}"}
    assert {"crypto.Address.<init>@57", "crypto.Address.<init>@85"} == calls(teal, "program_hash")
