"""The Cucumber-JVM test side (``bench.frameworks.cucumber_jvm.testside``): step sites, the Java
methods cucumber reports, closures, the workspace text operations and the calibration bodies,
on a small inline glue (stand-ins for cucumber's annotations live in the test sources, so the
``needs_javac`` tests compile every result with the JDK alone, no Maven); the recorded probe
run of ``tests/unit/data/cucumber_jvm``; and java-algorand-sdk at /work/corpora when present
(parsed; the ``slow`` test compiles its results against the corpus's own built classes)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.cucumber_json import JavaMethod, parse_location, read_report
from bench.frameworks.cucumber_jvm.definitions import read_messages
from bench.frameworks.cucumber_jvm.syntax import java_parser
from bench.frameworks.cucumber_jvm.testside import (
    StepSite,
    TestSideJava,
    calibration_files,
    java_string_value,
    normalize_type,
    unescape_java,
)

needs_javac = pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK (javac) on PATH")
DATA = Path(__file__).parent / "data" / "cucumber_jvm"
CORPUS = Path("/work/corpora/java-algorand-sdk")
CORPUS_GLUE = ["src/test/java/com/algorand/algosdk/unit", "src/test/java/com/algorand/algosdk/cucumber/shared"]

ANNOTATION = textwrap.dedent('''\
    package {package};

    import java.lang.annotation.*;

    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    public @interface {name} {{
        String value(){default};
    }}
''')

WORLD = textwrap.dedent('''\
    package com.acme.steps;

    import java.util.ArrayList;
    import java.util.List;

    /** State every step class shares. */
    public class World {
        public final List<String> log = new ArrayList<>();
        public int total;
        private int secret;

        public World() {
            log.add("new");
        }

        public void record(String entry) {
            log.add(entry);
        }
    }
''')

HOOKS = textwrap.dedent('''\
    package com.acme.steps;

    import io.cucumber.java.After;
    import io.cucumber.java.Before;
    import io.cucumber.java.ParameterType;

    public class Hooks {
        private final World world;

        public Hooks(World world) {
            this.world = world;
        }

        @Before
        public void reset() {
            world.total = 0;
            Util.clear();
        }

        @After("@slow")
        public void report() {
            world.record("done");
        }

        @ParameterType("red|green")
        public String color(String name) {
            return name;
        }
    }
''')

CART = textwrap.dedent('''\
    package com.acme.steps;

    import static com.acme.steps.Util.twice;

    import io.cucumber.java.en.*;
    import java.util.List;

    public class CartSteps {
        static final String ITEMS = "I have (\\\\d+) items";
        private final World world;
        private int count;
        private int unused = Util.seed();
        private Cart cart; // made on first use

        public CartSteps(World world) {
            this.world = world;
        }

        @Given("^" + ITEMS + "$")
        public void iHave(int n) {
            count = n;
            world.record("have " + n);
        }

        /** Adds twice as many. */
        @When("I add {int} more")
        public void iAdd(int n) {
            count += twice(n);
            cart().add(n);
        }

        @Then("the total is {int}")
        public void theTotalIs(int expected) {
            check(expected, count);
        }

        @And("the log says \\"{word}\\"\\t")
        public void theLogSays(String word) {
            check(1, world.log.contains(word) ? 1 : 0);
        }

        @But(value = """
                nothing is "left"
                """)
        public boolean nothingLeft() {
            return count == 0;
        }

        @Given("an overload {int}")
        public void overload(int n) { count = n; }

        @Given("an overload {string}")
        public void overload(String s) { count = s.length(); }

        @Given("a list")
        public void aList(List<String> items, String... rest) {
            count = items.size() + rest.length;
        }

        private void check(int expected, int actual) {
            if (expected != actual) {
                throw new AssertionError(expected + " != " + actual);
            }
        }

        private Cart cart() {
            if (cart == null) {
                cart = new Cart();
            }
            return cart;
        }

        static class Cart {
            int items;

            void add(int n) { items += n; }
        }
    }
''')

MORE = textwrap.dedent('''\
    package com.acme.steps.more;

    import com.acme.steps.Util;
    import com.acme.steps.World;
    import io.cucumber.java.fr.Soit;

    public class MoreSteps {
        private final World world;

        public MoreSteps(World world) { this.world = world; }

        @io.cucumber.java.en.Given("a greeting")
        public void greeting() {
            greetingTo("world");
        }

        @io.cucumber.java.en.Given("a greeting to {string}")
        public void greetingTo(String name) {
            world.record(Util.greet(name));
        }

        @Soit("un compte")
        public void unCompte() {
            world.total = Util.shared();
        }
    }
''')

UTIL = textwrap.dedent('''\
    package com.acme.steps;

    import java.util.HashMap;
    import java.util.Map;

    public final class Util {
        private static int cleared;
        private static final Map<String, String> CACHE = new HashMap<>();

        private Util() {}

        static {
            cleared = -1;
        }

        public static int twice(int n) { return n * 2; }

        public static int seed() { return 7; }

        public static void clear() {
            cleared++;
            CACHE.clear();
        }

        public static String greet(String name) { return "hello " + name; }

        public static int shared() { return 42; }

        // nobody calls it: dead code stays in a view
        public static int dead() { return 0; }
    }
''')

OTHER = textwrap.dedent('''\
    package com.acme.other;

    import com.acme.steps.Util;

    /** A plain test outside the glue: what it uses stays. */
    public class OtherTest {
        public void test() {
            if (Util.shared() != 42) {
                throw new AssertionError();
            }
        }
    }
''')

GLUE = "src/test/java/com/acme/steps"
SOURCES = {
    f"{GLUE}/World.java": WORLD, f"{GLUE}/Hooks.java": HOOKS, f"{GLUE}/CartSteps.java": CART,
    f"{GLUE}/more/MoreSteps.java": MORE, f"{GLUE}/Util.java": UTIL, "src/test/java/com/acme/other/OtherTest.java": OTHER,
}
CART_FILE = f"{GLUE}/CartSteps.java"
MORE_FILE = f"{GLUE}/more/MoreSteps.java"
UTIL_FILE = f"{GLUE}/Util.java"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    stubs = {("io.cucumber.java.en", n, "") for n in ("Given", "When", "Then", "And", "But")}
    stubs |= {("io.cucumber.java", "Before", ' default ""'), ("io.cucumber.java", "After", ' default ""'),
              ("io.cucumber.java", "ParameterType", ""), ("io.cucumber.java.fr", "Soit", "")}
    for package, name, default in stubs:
        path = tmp_path / "src/test/java" / package.replace(".", "/") / f"{name}.java"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ANNOTATION.format(package=package, name=name, default=default))
    for rel, text in SOURCES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _side(project: Path) -> TestSideJava:
    return TestSideJava(project, [GLUE])


def _site(side: TestSideJava, method: str, index: int = 0) -> StepSite:
    return [s for s in side.sites() if s.method == method][index]


# --------------------------------------------------------------------------- sites
def test_sites_patterns_kinds_and_signatures(project: Path) -> None:
    side = _side(project)
    assert side.test_sources == "src/test/java"
    assert side.files == sorted(f for f in SOURCES if f.startswith(GLUE))
    assert len(side.source_files) == len(SOURCES) + 9  # the annotation stand-ins are parsed too
    sites = side.sites()
    assert [(s.method, s.kind, s.pattern) for s in sites] == [
        ("iHave", "given", r"^I have (\d+) items$"),  # a constant concatenated, through ``import ...en.*``
        ("iAdd", "when", "I add {int} more"),
        ("theTotalIs", "then", "the total is {int}"),
        ("theLogSays", "and", 'the log says "{word}"\t'),  # escapes read as javac reads them
        ("nothingLeft", "but", 'nothing is "left"\n'),  # a text block, ``value =``
        ("overload", "given", "an overload {int}"),
        ("overload", "given", "an overload {string}"),
        ("aList", "given", "a list"),
        ("greeting", "given", "a greeting"),  # a fully qualified annotation
        ("greetingTo", "given", "a greeting to {string}"),
        ("unCompte", "given", "un compte"),  # French: ``Soit`` is a Given keyword
    ]
    have = sites[0]
    assert have.regex and not sites[1].regex
    assert have.file == CART_FILE and have.line == 19 and have.end_line == 23 and have.key == f"{CART_FILE}:19"
    assert have.qualname == "CartSteps.iHave" and have.annotation == "Given" and have.annotation_line == 19
    assert have.class_name == "com.acme.steps.CartSteps" and have.parameter_types == ("int",)
    assert have.signature == "com.acme.steps.CartSteps.iHave(int)"
    add = sites[1]
    assert add.line == 26 and add.start_byte == CART.encode().index(b"@When")  # the Javadoc is not the method's
    assert sites[7].signature == "com.acme.steps.CartSteps.aList(java.util.List,java.lang.String[])"
    assert sites[6].parameter_types == ("java.lang.String",)
    assert sites[9].signature == "com.acme.steps.more.MoreSteps.greetingTo(java.lang.String)"
    assert sites[8].annotation == "io.cucumber.java.en.Given"
    # hooks and parameter types are infrastructure, never sites
    assert not any(s.file.endswith("Hooks.java") for s in sites)
    assert side.handlers(have)[0].qualname == "CartSteps.iHave" and side.handlers(have)[0].line == 19


def test_site_for_method_and_pattern(project: Path) -> None:
    side = _side(project)
    by_int = side.site_for_method(JavaMethod("com.acme.steps.CartSteps", "overload", ("int",)))
    by_string = side.site_for_method(JavaMethod("com.acme.steps.CartSteps", "overload", ("java.lang.String",)))
    assert by_int is not None and by_int.pattern == "an overload {int}"
    assert by_string is not None and by_string.pattern == "an overload {string}"
    # the forms cucumber writes: toGenericString (generics, varargs), Class.getName (descriptors)
    for location in ("com.acme.steps.CartSteps.aList(java.util.List<java.lang.String>,java.lang.String...)",
                     "com.acme.steps.CartSteps.aList(java.util.List,[Ljava.lang.String;)"):
        reported = parse_location(location)
        assert reported is not None and side.site_for_method(reported) == _site(side, "aList")
    assert side.site_for_method(JavaMethod("com.acme.steps.CartSteps", "missing", ())) is None
    assert side.site_for_method(JavaMethod("com.acme.steps.Other", "iHave", ("int",))) is None
    for site in side.sites():
        reported = parse_location(site.signature)
        assert reported is not None and side.site_for_method(reported) == site
    assert side.site_for_pattern("a greeting") == _site(side, "greeting")
    assert side.site_for_pattern("nope") is None
    decl = side.decl_at(JavaMethod("com.acme.steps.Hooks", "reset", ()))
    assert decl is not None and decl.qualname == "Hooks.reset" and decl.kind == "method"


def test_shared_state_and_infrastructure(project: Path) -> None:
    side = _side(project)
    assert side.shared_classes == ["com.acme.steps.World"]  # injected into every step and hook class
    infrastructure = {d.qualname for d in side.infrastructure_functions}
    assert infrastructure == {
        "Hooks.world", "Hooks.<init>", "Hooks.reset", "Hooks.report", "Hooks.color",  # hooks and their class
        "World.log", "World.total", "World.<init>", "World.record",  # the shared state (and what hooks call)
        "Util.cleared", "Util.CACHE", "Util.<clinit>", "Util.clear",  # a static initializer, what hooks call
    }


def test_closure_follows_helpers_fields_and_instantiation(project: Path) -> None:
    side = _side(project)
    add = side.closure([_site(side, "iAdd")])
    assert [d.qualname for d in add.functions] == [
        "CartSteps.world", "CartSteps.count", "CartSteps.unused", "CartSteps.cart", "CartSteps.<init>",
        "CartSteps.iAdd", "CartSteps.cart", "CartSteps.Cart.items", "CartSteps.Cart.add", "Util.twice", "Util.seed"]
    assert [(d.kind, d.line) for d in add.functions][5:7] == [("method", 26), ("method", 66)]
    assert [t.qualname for t in add.types] == ["CartSteps.Cart"] and add.decls == add.functions
    assert add.files == [CART_FILE, UTIL_FILE]
    total = side.closure([_site(side, "theTotalIs")])
    assert "CartSteps.check" in [d.qualname for d in total.functions] and total.types == ()
    # a step calling another step reaches it; the shared World is never part of a closure
    greeting = side.closure([_site(side, "greeting")])
    assert [d.qualname for d in greeting.functions] == [
        "Util.greet", "MoreSteps.world", "MoreSteps.<init>", "MoreSteps.greeting", "MoreSteps.greetingTo"]
    everything = side.closure(side.sites())
    assert not {d.qualname for d in everything.functions} & {d.qualname for d in side.infrastructure_functions}


# --------------------------------------------------------------------------- workspace text
def test_files_without_keeps_lines_and_what_is_still_called(project: Path) -> None:
    side = _side(project)
    files = side.files_without([_site(side, "theTotalIs"), _site(side, "overload", 0)])
    text = files[CART_FILE].decode()
    assert set(files) == {CART_FILE} and len(text.splitlines()) == len(CART.splitlines())
    assert "theTotalIs" not in text and "an overload {int}" not in text and "an overload {string}" in text
    assert "private void check" in text  # a helper stays (unused is fine in Java)
    # a step another kept step calls stays as a plain method, without its annotation
    files = side.files_without([_site(side, "greetingTo")])
    lines = files[MORE_FILE].decode().splitlines()
    assert len(lines) == len(MORE.splitlines()) and lines[16] == "" and "public void greetingTo" in lines[17]
    both = side.files_without([_site(side, "greeting"), _site(side, "greetingTo")])[MORE_FILE].decode()
    assert "greeting" not in both and "unCompte" in both
    kept = side.files_keeping([_site(side, "iHave")])
    cart = kept[CART_FILE].decode()
    assert len(cart.splitlines()) == len(CART.splitlines())
    assert re.findall(r"@(?:Given|When|Then|And|But)\b", cart) == ["@Given"] and "public void iHave" in cart
    assert "public void greetingTo" not in kept[MORE_FILE].decode()


def test_closure_removal_keeps_what_others_reach(project: Path) -> None:
    side = _side(project)
    files, gone = side.files_without_closure([_site(side, "iAdd")])
    assert [d.qualname for d in gone] == ["CartSteps.cart", "CartSteps.iAdd", "CartSteps.cart", "CartSteps.Cart",
                                          "CartSteps.Cart.items", "CartSteps.Cart.add", "Util.twice"]
    cart = files[CART_FILE].decode()
    assert len(cart.splitlines()) == len(CART.splitlines())
    assert "import static com.acme.steps.Util.twice;" not in cart  # it named a removed method
    assert "/** Adds twice as many. */" not in cart and "static class Cart" not in cart and "// made on" not in cart
    assert "private int count;" in cart and "public CartSteps(World world)" in cart  # other steps use them
    assert "public static int twice" not in files[UTIL_FILE].decode()
    # every step of the class: its construction goes too, the shared World stays
    cart_sites = [s for s in side.sites() if s.file == CART_FILE]
    files, gone = side.files_without_closure(cart_sites)
    assert {"CartSteps.<init>", "CartSteps.world", "CartSteps.ITEMS", "Util.seed"} <= {d.qualname for d in gone}
    assert set(files) == {CART_FILE, UTIL_FILE}
    # Util.greet goes with MoreSteps; Util.shared stays: OtherTest (outside the glue) calls it
    files, gone = side.files_without_closure([s for s in side.sites() if s.file == MORE_FILE])
    assert [d.qualname for d in gone if d.file == UTIL_FILE] == ["Util.greet"]


def test_files_isolating_keeps_only_what_the_sites_reach(project: Path) -> None:
    side = _side(project)
    files = side.files_isolating([_site(side, "theTotalIs")])
    cart = files[CART_FILE].decode()
    assert "public void theTotalIs" in cart and "private void check" in cart and "private int count;" in cart
    for gone in ("iHave", "iAdd", "static class Cart", "overload", "nothingLeft", "Util.twice;"):
        assert gone not in cart, gone
    assert "public class MoreSteps {" in files[MORE_FILE].decode() and "greeting" not in files[MORE_FILE].decode()


def test_view_removes_every_step_and_keeps_infrastructure(project: Path) -> None:
    side = _side(project)
    files, removed, infrastructure = side.view()
    assert infrastructure == [f"{GLUE}/Hooks.java", f"{GLUE}/World.java"]
    assert set(files) == {CART_FILE, MORE_FILE, UTIL_FILE}
    assert {s.key for s in side.sites()} <= set(removed)
    assert f"{UTIL_FILE}:16" in removed and f"{CART_FILE}:73" in removed  # Util.twice, the nested Cart
    cart = files[CART_FILE].decode()
    assert cart.endswith("public class CartSteps {\n}\n")  # an empty shell: classes and files stay
    assert "import static" not in cart and "import io.cucumber.java.en.*;" in cart
    more = files[MORE_FILE].decode()
    assert more.endswith("public class MoreSteps {\n}\n")
    util = files[UTIL_FILE].decode()
    for kept in ("static {", "public static void clear", "public static int shared", "public static int dead",
                 "// nobody calls it", "private Util() {}", "CACHE"):
        assert kept in util, kept
    for gone in ("twice", "seed", "greet"):
        assert gone not in util, gone
    for text in files.values():
        assert b"\n\n\n" not in text and b"{\n\n" not in text  # no gaps left where things went


def test_calibration_bodies(project: Path) -> None:
    side = _side(project)
    chosen = [_site(side, "iHave"), _site(side, "iAdd"), _site(side, "theTotalIs"), _site(side, "nothingLeft")]
    kinds = {chosen[0].key: {"given"}, chosen[1].key: {"when"}, chosen[2].key: {"then"}}
    files = calibration_files(side, chosen, kinds)
    assert set(files) == {"oracle", "empty", "then-stripped"}
    assert set(files["oracle"]) == {CART_FILE, UTIL_FILE} and files["oracle"][CART_FILE] == CART
    empty = files["empty"][CART_FILE]
    assert len(empty.splitlines()) == len(CART.splitlines())
    assert "public void iHave(int n) {\n\n\n    }" in empty and "count += twice(n)" not in empty
    assert "public boolean nothingLeft() { return false;\n\n    }" in empty  # a result: its default
    assert "count = s.length()" in empty  # not this scenario's
    stripped = files["then-stripped"][CART_FILE]
    assert "public void theTotalIs(int expected) {\n\n    }" in stripped
    assert "count = n;" in stripped and "return count == 0;" in stripped  # @But, bound to no Then step
    # a method bound to a Then and a When step stays whole; an unnamed site reads its annotation
    both = calibration_files(side, chosen[2:3], {chosen[2].key: {"then", "when"}})
    assert both["then-stripped"][CART_FILE] == CART
    fallback = calibration_files(side, chosen[2:3], {})
    assert "check(expected, count)" not in fallback["then-stripped"][CART_FILE]


def test_java_literals_and_reported_types() -> None:
    assert unescape_java(r'a\"b\\c\td\101\0\u00e9\uuu0041\uD83D\uDE00\s') == 'a"b\\c\tdA\x00éA😀 '
    source = b'class A { String a = """\n    one\n      two \\\n    three\n    """; String b = """\n  x"""; }'
    tree = java_parser().parse(source)
    literals = [n for n in _nodes(tree.root_node) if n.type == "string_literal"]
    assert [java_string_value(n) for n in literals] == ["one\n  two three\n", "x"]
    assert normalize_type("java.util.Map<java.lang.String, java.util.List<java.lang.Integer>>") == "java.util.Map"
    assert normalize_type("[[I") == "int[][]" and normalize_type("[Lcom.x.A$B;") == "com.x.A$B[]"
    assert normalize_type("java.lang.String...") == "java.lang.String[]" and normalize_type(" byte[] ") == "byte[]"


def _nodes(node):
    yield node
    for child in node.children:
        yield from _nodes(child)


def _javac(root: Path, files: dict[str, bytes], out: Path) -> str:
    """Lay ``files`` over a copy of ``root``'s test sources and compile them all: the errors, or ""."""
    tree = out / "tree"
    shutil.copytree(root / "src", tree / "src")
    for rel, data in files.items():
        (tree / rel).write_bytes(data)
    sources = [str(p) for p in (tree / "src").rglob("*.java")]
    proc = subprocess.run(["javac", "-proc:none", "-encoding", "UTF-8", "-d", str(out / "classes"), *sources],
                          check=False, capture_output=True, text=True, timeout=600)
    return "" if proc.returncode == 0 else proc.stderr[-3000:]


@needs_javac
def test_inline_results_compile(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    side = _side(project)
    sites = side.sites()
    chosen = [_site(side, "iHave"), _site(side, "theTotalIs"), _site(side, "nothingLeft")]
    kinds = {chosen[1].key: {"then"}}
    variants = {
        "original": {}, "view": side.view()[0], "without-all": side.files_without(sites),
        "without-closure-all": side.files_without_closure(sites)[0],
        "without-closure-some": side.files_without_closure(random.Random(3).sample(sites, 4))[0],
        "isolating": side.files_isolating([_site(side, "iAdd"), _site(side, "greeting")]),
        "keeping": side.files_keeping([_site(side, "greeting")]), "strip": side.strip_handlers(sites),
        **{name: {k: v.encode() for k, v in texts.items()}
           for name, texts in calibration_files(side, chosen, kinds).items()},
    }
    for name, files in variants.items():
        assert _javac(project, files, tmp_path_factory.mktemp(name)) == "", name


# --------------------------------------------------------------------------- inheritance and nesting
BASE = textwrap.dedent("""\
    package x.glue;

    public abstract class BaseSteps implements Named {
        protected final World world;
        protected int base;

        protected BaseSteps(World world) { this.world = world; }

        protected void helper(String s) { world.add(prefix() + s); }

        protected String prefix() { return "b:"; }

        abstract int weight();
    }
""")

NAMED = textwrap.dedent("""\
    package x.glue;

    public interface Named {
        String name();

        default String greet() { return "hi " + name(); }
    }
""")

A_STEPS = textwrap.dedent("""\
    package x.glue;

    import static x.glue.Helpers.Fmt.fmt;

    import io.cucumber.java.en.*;
    import java.util.*;
    import java.util.function.*;
    import x.glue.Helpers.Kind;

    public class ASteps extends BaseSteps {
        private final List<Integer> seen = new ArrayList<>();
        private Kind kind = Kind.A;
        private final int fixed;
        private Holder<World> holder;

        public ASteps(World world) { super(world); fixed = 3; }

        @Given("a {int}")
        public void a(int n) { helper("a" + n); seen.add(n); holder = new Holder<>(world); }

        @When("b")
        public void b() {
            seen.forEach(this::note);
            Function<String, String> f = Helpers::wrap;
            world.add(f.apply(fmt(kind)));
        }

        @Then("c")
        public void c() { var w = world; w.add("c"); if (holder != null) holder.poke(); Helpers.Nested.deep(); }

        @Then("d {string}")
        public void d(String s) {
            Runnable r = new Runnable() { @Override public void run() { helper(s); } };
            r.run();
        }

        @When("e")
        public void e() { Counter counter = new Counter(); counter.bump(); world.counts.put("e", counter.value); }

        private void note(Integer i) { base += i; }

        @Override
        int weight() { return fixed; }

        @Override
        public String name() { return "a"; }

        @Override
        protected String prefix() { return "A:"; }

        static class Counter { int value; void bump() { value++; } }

        static class Holder<T extends World> {
            final T t;
            Holder(T t) { this.t = t; }
            void poke() { t.add("poke"); }
        }
    }
""")

B_STEPS = textwrap.dedent("""\
    package x.glue;

    import io.cucumber.java.Before;
    import io.cucumber.java.en.Given;
    import io.cucumber.java.en.Then;

    public class BSteps implements Comparable<BSteps> {
        private final World world;
        private ASteps.Counter counter;
        private static final String PAT = "b2 " + "{int}";

        public BSteps(World world) { this.world = world; }

        @Before
        public void setUp() { world.add(Helpers.stamp()); }

        @Given(PAT)
        public void b2(int n) { counter = new ASteps.Counter(); for (int i = 0; i < n; i++) counter.bump(); }

        @Then("b3")
        public void b3() { world.add(String.valueOf(counter.value) + compareTo(this)); }

        public int compareTo(BSteps other) { return 0; }

        enum Mode { X, Y; int code() { return ordinal(); } }

        @Given("mode")
        public void mode() { world.add("" + Mode.X.code()); }
    }
""")

HELPERS = textwrap.dedent("""\
    package x.glue;

    public class Helpers {
        public enum Kind { A, B }

        public static String wrap(String s) { return "[" + s + "]"; }

        public static String stamp() { return "t"; }

        public static class Fmt {
            public static String fmt(Kind k) { return k.name(); }

            public static String unused() { return ""; }
        }

        public static class Nested { static void deep() { Fmt.unused(); } }
    }
""")

NESTED_SOURCES = {
    "src/test/java/x/glue/World.java": "package x.glue;\n\nimport java.util.*;\n\npublic class World {\n"
    "    public final List<String> log = new ArrayList<>();\n    Map<String, Integer> counts = new HashMap<>();\n\n"
    "    public void add(String s) { log.add(s); }\n}\n",
    "src/test/java/x/glue/BaseSteps.java": BASE, "src/test/java/x/glue/Named.java": NAMED,
    "src/test/java/x/glue/ASteps.java": A_STEPS, "src/test/java/x/glue/BSteps.java": B_STEPS,
    "src/test/java/x/glue/Helpers.java": HELPERS,
    "src/test/java/x/other/Plain.java": "package x.other;\n\nimport x.glue.Helpers;\n\n"
    "public class Plain { void t() { Helpers.wrap(\"z\"); } }\n",
}


@pytest.fixture
def nested(project: Path) -> Path:
    for rel, text in NESTED_SOURCES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    return project


def test_inheritance_and_nesting(nested: Path) -> None:
    side = TestSideJava(nested, ["src/test/java/x/glue"])
    closures = {s.method: side.closure([s]) for s in side.sites()}
    names = {method: [d.qualname for d in c.functions] for method, c in closures.items()}
    assert names["b"] == ["ASteps.b", "ASteps.note", "BaseSteps.base", "Helpers.wrap", "Helpers.Fmt.fmt"]  # refs
    assert names["c"] == ["ASteps.holder", "ASteps.c", "ASteps.Holder.t", "ASteps.Holder.<init>",
                          "ASteps.Holder.poke", "Helpers.Fmt.unused", "Helpers.Nested.deep"]  # a bounded type variable
    assert names["d"] == ["ASteps.d", "BaseSteps.helper"]  # from an anonymous class's method
    assert names["mode"] == ["BSteps.Mode.code", "BSteps.mode"]  # an enum constant's method
    assert names["b2"] == ["ASteps.Counter.value", "ASteps.Counter.bump", "BSteps.counter", "BSteps.PAT", "BSteps.b2"]
    assert [t.qualname for t in closures["e"].types] == ["ASteps.Counter"]
    assert side.site_for_pattern("b2 {int}") == closures["b2"].sites[0]
    # what a type cannot lose: overrides, the abstract method, the constructors of a subclass,
    # the external Comparable's method; the hook and what it calls
    infrastructure = {d.qualname for d in side.infrastructure_functions}
    assert {"ASteps.<init>", "ASteps.weight", "ASteps.name", "ASteps.prefix", "BaseSteps.weight",
            "BaseSteps.prefix", "BSteps.compareTo", "BSteps.setUp", "Helpers.stamp", "Named.name"} <= infrastructure
    files, _, _ = side.view()
    helpers = files["src/test/java/x/glue/Helpers.java"].decode()
    assert "Fmt" not in helpers and "Nested" not in helpers and "public static String wrap" in helpers  # Plain uses it
    steps = files["src/test/java/x/glue/ASteps.java"].decode()
    assert "import static" not in steps and "import x.glue.Helpers.Kind;" in steps and "class Counter" not in steps
    assert "public ASteps(World world)" in steps and "protected String prefix()" in steps
    assert "enum Mode" not in files["src/test/java/x/glue/BSteps.java"].decode()


@needs_javac
def test_inheritance_and_nesting_results_compile(nested: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    side = TestSideJava(nested, ["src/test/java/x/glue"])
    sites = side.sites()
    variants = {"view": side.view()[0], "without": side.files_without(sites),
                "isolating-c": side.files_isolating([s for s in sites if s.method == "c"]),
                "isolating-b2": side.files_isolating([s for s in sites if s.method == "b2"])}
    for seed in range(3):
        chosen = random.Random(seed).sample(sites, random.Random(seed).randint(2, len(sites) - 1))
        variants[f"closure-{seed}"] = side.files_without_closure(chosen)[0]
    for name, files in variants.items():
        assert _javac(nested, files, tmp_path_factory.mktemp(name)) == "", name


# --------------------------------------------------------------------------- recorded runs
def test_probe_definitions_map_to_sites(tmp_path: Path) -> None:
    """The recorded cucumber-jvm 6.6.0 probe run: every step definition its message stream lists
    and every step its JSON report matched is a site, found by method and by pattern."""
    source = tmp_path / "src/test/java/probe/ProbeSteps.java"
    source.parent.mkdir(parents=True)
    source.write_text((DATA / "ProbeSteps.java.txt").read_text())
    side = TestSideJava(tmp_path, ["src/test/java/probe"])
    assert [s.method for s in side.sites()] == ["aStartOf", "iAdd", "theTotalIs", "notYet", "hidden", "twiceA",
                                                "twiceB", "nestedStep"]  # the @Before hook is not one
    assert [d.qualname for d in side.infrastructure_functions] == ["ProbeSteps.hookSaysNo"]
    run = read_messages(DATA / "probe_row_messages.ndjson")
    assert len(run.definitions) == 8
    for definition in run.definitions:
        assert definition.method is not None
        site = side.site_for_method(definition.method)
        assert site is not None and site.pattern == definition.pattern and site.regex == definition.regex
        assert side.site_for_pattern(definition.pattern, definition.method) == site
    nested = side.site_for_method(JavaMethod("probe.ProbeSteps$Nested", "nestedStep", ()))
    assert nested is not None and nested.qualname == "ProbeSteps.Nested.nestedStep"
    report = read_report(DATA / "probe_cucumber.json")
    matched = [step for scenario in report.scenarios for step in scenario.steps if step.match is not None]
    assert matched and all(side.site_for_method(step.match) is not None for step in matched)


# --------------------------------------------------------------------------- the real corpus
needs_corpus = pytest.mark.skipif(not (CORPUS / "src/test/java").is_dir(), reason="no java-algorand-sdk corpus")


@needs_corpus
def test_corpus_sites_closures_and_view() -> None:
    side = TestSideJava(CORPUS, CORPUS_GLUE)
    sites = side.sites()
    assert len(sites) == 184 and len({s.class_name for s in sites}) == 14 and len(side.files) == 17
    assert all(s.pattern for s in sites) and {s.kind for s in sites} == {"given", "when", "then"}
    assert len({s.key for s in sites}) == len(sites)  # one annotation per method here
    for site in sites:
        reported = parse_location(site.signature)
        assert reported is not None and side.site_for_method(reported) == site
    signing = side.site_for_pattern("a signing account with address {string} and mnemonic {string}")
    assert signing is not None and signing.signature == (
        "com.algorand.algosdk.unit.Base.a_signing_account_with_address_and_mnemonic(java.lang.String,java.lang.String)")
    # the recorded run of responses.feature:12: its three steps' methods
    report = read_report(DATA / "sdk_row_cucumber.json")
    steps = [step for scenario in report.scenarios for step in scenario.steps]
    assert [side.site_for_method(step.match).method for step in steps if step.match] == [  # type: ignore[union-attr]
        "mockResponseWithStatus", "we_make_any_call_to", "the_parsed_response_should_equal"]
    assert side.shared_classes == [
        "com.algorand.algosdk.cucumber.shared.TransactionSteps", "com.algorand.algosdk.unit.ABIJson",
        "com.algorand.algosdk.unit.Base", "com.algorand.algosdk.unit.PathsShared",
        "com.algorand.algosdk.unit.Rekeying", "com.algorand.algosdk.unit.ResponsesShared"]
    teal = side.closure([side.site_for_pattern("I perform tealsign")])  # type: ignore[list-item]
    assert [d.qualname for d in teal.functions] == [
        "TealSign.shared", "TealSign.data", "TealSign.contractAddress", "TealSign.sig", "TealSign.<init>",
        "TealSign.perform_teal_sign"]
    mock = side.closure([side.site_for_pattern("mock http responses in {string} loaded from {string}")])  # type: ignore[list-item]
    assert [d.qualname for d in mock.functions] == [
        "ResponsesShared.mockResponse", "ResponsesShared.mockResponseWithStatus", "ClientMocker.oneResponse"]
    files, removed, infrastructure = side.view()
    assert {s.key for s in sites} <= set(removed) and len(removed) == 250
    assert infrastructure == ["src/test/java/com/algorand/algosdk/unit/RunCucumberUnitTest.java"]
    for rel, text in files.items():
        assert not re.search(rb"@(Given|When|Then)\(", text), rel
    shared = files["src/test/java/com/algorand/algosdk/unit/ResponsesShared.java"].decode()
    assert "public ResponsesShared() {" in shared and "ClientMocker.infect(algod);" in shared
    assert "public Map<String, Account> signingAccounts" in files["src/test/java/com/algorand/algosdk/unit/Base.java"].decode()
    infrastructure_names = {d.qualname for d in side.infrastructure_functions}
    assert {"ResponsesShared.<init>", "ClientMocker.infect", "TestingUtils.<clinit>", "TransactionSteps.<init>",
            "Base.signingAccounts"} <= infrastructure_names


@pytest.mark.slow
@needs_javac
@needs_corpus
def test_corpus_results_compile(tmp_path: Path) -> None:
    """The view, the negative validation, 20 random sites' closures removed, the isolation of 5
    and every step method emptied compile against the corpus's own built classes and class path
    (``target/classes`` and the ``target/req2test-classpath.txt`` a build writes; no Maven here)."""
    classpath = CORPUS / "target/req2test-classpath.txt"
    if not (CORPUS / "target/classes").is_dir() or not classpath.is_file():
        pytest.skip("the corpus has no built classes and class path")
    side = TestSideJava(CORPUS, CORPUS_GLUE)
    sites = side.sites()
    chosen = random.Random(0).sample(sites, 20)
    variants = {"view": side.view()[0], "without": side.files_without(sites),
                "closure": side.files_without_closure(chosen)[0], "isolating": side.files_isolating(chosen[:5]),
                "strip": side.strip_handlers(sites)}
    cp = f"{CORPUS / 'target/classes'}:{classpath.read_text().strip()}"
    for name, files in variants.items():
        tree = tmp_path / name
        shutil.copytree(CORPUS / "src/test/java", tree / "src/test/java")
        for rel, data in files.items():
            (tree / rel).write_bytes(data)
        proc = subprocess.run(["javac", "-nowarn", "-proc:none", "-encoding", "UTF-8", "-d", str(tree / "classes"),
                               "-cp", cp, *[str(p) for p in (tree / "src/test/java").rglob("*.java")]],
                              check=False, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (name, proc.stderr[-3000:])
