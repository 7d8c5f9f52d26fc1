"""The Java body hider (``bench.frameworks.cucumber_jvm.hiding``): what it hides and keeps on an
inline file of every kind of member, and — with the JDK's ``javac``/``java`` — that the hidden
source compiles and that calling a hidden method or constructor throws
``UnsupportedOperationException("implementation hidden")``."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.hiding import PLACEHOLDER, JavaHider, hide_java_bodies
from bench.frameworks.protocol import HIDDEN_MESSAGE

needs_javac = pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None,
                                 reason="no JDK (javac/java) on PATH")

SOURCE = textwrap.dedent('''\
    package p;

    import java.util.List;
    import java.util.function.Supplier;

    /** A shape. */
    public class Shapes {
        private final int sides;
        private final String name;
        static int made;

        /**
         * Builds one.
         */
        @Deprecated
        public Shapes(int sides,
                      String name) {
            this.sides = sides;
            this.name = name;
        }

        public Shapes(int sides) {
            this(sides, "shape" + sides);
            made++;
        }

        Shapes() { this(0); }

        public static <T extends Comparable<T>> T largest(List<T> items) throws IllegalStateException {
            T best = null;
            for (T item : items) {
                if (best == null || item.compareTo(best) > 0) {
                    best = item;
                }
            }
            return best;
        }

        public int sides() { return sides; }

        public void nothing() {
        }

        public void onlyComment() {
            // nothing yet
        }

        Supplier<String> namer() {
            return new Supplier<String>() {
                @Override
                public String get() { return name; }
            };
        }

        native long address();

        static abstract class Base {
            abstract int area();

            int twice() { return area() * 2; }
        }

        static class Square extends Base {
            final int side;

            Square(int side) {
                super();
                this.side = side;
            }

            @Override
            int area() { return side * side; }
        }

        class Inner {
            int outerSides() { return sides + 1; }
        }

        interface Named {
            String name();

            default String shout() { return name().toUpperCase(); }

            static Named of(String n) { return () -> n; }
        }

        enum Color {
            RED(1), GREEN(2);

            private final int code;

            Color(int code) { this.code = code; }

            int code() { return code; }
        }

        record Point(int x, int y) {
            Point {
                if (x < 0) throw new IllegalArgumentException("x");
            }

            int sum() { return x + y; }
        }

        @interface Marker {
            String value() default "";
        }
    }
''')

# every method and constructor syntax.methods finds, with its declaration's first line
MEMBERS = [
    ("Shapes.<init>", 15), ("Shapes.<init>", 22), ("Shapes.<init>", 27), ("Shapes.largest", 29),
    ("Shapes.sides", 39), ("Shapes.nothing", 41), ("Shapes.onlyComment", 44), ("Shapes.namer", 48),
    ("Shapes.address", 55), ("Shapes.Base.area", 58), ("Shapes.Base.twice", 60), ("Shapes.Square.<init>", 66),
    ("Shapes.Square.area", 71), ("Shapes.Inner.outerSides", 76), ("Shapes.Named.name", 80),
    ("Shapes.Named.shout", 82), ("Shapes.Named.of", 84), ("Shapes.Color.<init>", 92), ("Shapes.Color.code", 94),
    ("Shapes.Point.<init>", 98), ("Shapes.Point.sum", 102),
]


def test_hider_protocol() -> None:
    hider = JavaHider()
    assert hider.language == "java" and hider.source_suffixes == (".java",) and hider.test_suffixes == ()
    assert PLACEHOLDER == f'{{ throw new UnsupportedOperationException("{HIDDEN_MESSAGE}"); }}'
    out, report = hider.hide_bodies(SOURCE, lambda q, line: False)
    assert out == SOURCE and report.hidden == []


def test_qualnames_and_lines_given_to_should_hide() -> None:
    seen: list[tuple[str, int]] = []
    hide_java_bodies(SOURCE, lambda q, line: seen.append((q, line)) or False)
    stubs = {"Shapes.<init>", "Shapes.nothing", "Shapes.address", "Shapes.Base.area", "Shapes.Named.name"}
    assert seen == [(q, line) for q, line in MEMBERS if (q, line) not in
                    {("Shapes.<init>", 27), ("Shapes.nothing", 41), ("Shapes.address", 55), ("Shapes.Base.area", 58),
                     ("Shapes.Named.name", 80)}]
    _, report = hide_java_bodies(SOURCE, lambda q, line: False)
    # no body (native, abstract, an interface's), an empty one, or a constructor that only delegates
    assert sorted(report.kept_stubs) == sorted(stubs)


def test_hide_everything_keeps_declarations_and_lines() -> None:
    out, report = hide_java_bodies(SOURCE, lambda q, line: True)
    original, hidden = SOURCE.splitlines(), out.splitlines()
    assert len(hidden) == len(original)
    assert len(report.hidden) == len(MEMBERS) - 5 and "Shapes.onlyComment" in report.hidden  # a comment is a body
    assert out.count(HIDDEN_MESSAGE) == len(report.hidden)
    # declarations, annotations, Javadoc, parameters and throws clauses verbatim
    for number in (12, 13, 14, 15, 16, 17, 29, 57, 58, 80, 81, 84):
        assert hidden[number - 1].startswith(original[number - 1].split("{")[0].rstrip()), number
    assert hidden[16] == "                  String name) " + PLACEHOLDER
    assert hidden[28].endswith("throws IllegalStateException " + PLACEHOLDER)
    # this(...)/super(...) stay first, then the throw
    assert hidden[21] == "    public Shapes(int sides) {"
    assert hidden[22] == "        this(sides, \"shape\" + sides); " + PLACEHOLDER[2:]
    assert hidden[66].strip() == "super(); " + PLACEHOLDER[2:]
    assert hidden[26] == original[26]  # ``Shapes() { this(0); }``: nothing to hide
    # fields, the enum's constants, the record's header and the annotation type stay
    for number in (8, 9, 10, 88, 90, 97, 106):
        assert hidden[number - 1] == original[number - 1], number
    # the anonymous class and the lambda went with their bodies
    assert hidden[48:53] == [""] * 5 and "() -> n" not in out
    # a later body keeps its line
    assert hidden[101] == "        int sum() " + PLACEHOLDER


def test_selective_hiding_by_qualname_and_line() -> None:
    out, report = hide_java_bodies(SOURCE, lambda q, line: (q, line) in {("Shapes.<init>", 15), ("Shapes.Point.sum", 102)})
    assert report.hidden == ["Shapes.<init>", "Shapes.Point.sum"]
    lines = out.splitlines()
    assert lines[16].endswith(PLACEHOLDER) and "this(sides, \"shape\" + sides);" == lines[22].strip()
    assert "return x + y" not in out and "return side * side" in out


def test_unicode_and_no_methods() -> None:
    source = 'class É { String s() { return "ü→ß"; }\n  int t() { return 1; } }\n'
    out, report = hide_java_bodies(source, lambda q, line: q == "É.s")
    assert out == 'class É { String s() ' + PLACEHOLDER + '\n  int t() { return 1; } }\n' and report.hidden == ["É.s"]
    out, report = hide_java_bodies("package p;\n", lambda q, line: True)
    assert out == "package p;\n" and report.hidden == report.kept_stubs == []


MAIN = textwrap.dedent('''\
    package p;

    import java.util.Arrays;

    public class Main {
        interface Call { Object run() throws Exception; }

        static void attempt(String what, Call call) {
            try {
                System.out.println(what + " returned " + call.run());
            } catch (Throwable t) {  // a hidden enum constructor fails the enum's initialization
                Throwable e = t instanceof ExceptionInInitializerError ? t.getCause() : t;
                System.out.println(what + " threw " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }

        public static void main(String[] args) {
            attempt("ctor", () -> new Shapes(3, "tri"));
            attempt("delegating ctor", () -> new Shapes(4));
            attempt("largest", () -> Shapes.largest(Arrays.asList(1, 5, 2)));
            attempt("square", () -> new Shapes.Square(2));
            attempt("area", () -> new Shapes.Square(2).area());
            attempt("twice", () -> new Shapes.Square(2).twice());
            attempt("enum", () -> Shapes.Color.RED.code());
            attempt("record", () -> new Shapes.Point(1, 2));
            attempt("default", () -> Shapes.Named.of("x").shout());
            attempt("static interface", () -> Shapes.Named.of("x"));
        }
    }
''')


def _javac(directory: Path, sources: dict[str, str]) -> subprocess.CompletedProcess:
    for name, text in sources.items():
        (directory / "p").mkdir(parents=True, exist_ok=True)
        (directory / "p" / name).write_text(text, encoding="utf-8")
    out = directory / "classes"
    return subprocess.run(["javac", "-encoding", "UTF-8", "-d", str(out), *[str(directory / "p" / n) for n in sources]],
                          check=False, capture_output=True, text=True, timeout=300)


@needs_javac
def test_hidden_source_compiles_and_throws(tmp_path: Path) -> None:
    original = _javac(tmp_path / "original", {"Shapes.java": SOURCE, "Main.java": MAIN})
    assert original.returncode == 0, original.stderr
    hidden, _ = hide_java_bodies(SOURCE, lambda q, line: True)
    compiled = _javac(tmp_path / "hidden", {"Shapes.java": hidden, "Main.java": MAIN})
    assert compiled.returncode == 0, compiled.stderr
    run = subprocess.run(["java", "-cp", str(tmp_path / "hidden" / "classes"), "p.Main"], check=False,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    outcomes = {}
    for line in run.stdout.splitlines():
        what, verb, rest = line.partition(" threw ") if " threw " in line else line.partition(" returned ")
        outcomes[what] = verb.strip() + " " + rest
    thrown = f"threw UnsupportedOperationException: {HIDDEN_MESSAGE}"
    for what in ("ctor", "delegating ctor", "largest", "square", "area", "enum", "record", "default",
                 "static interface"):
        assert outcomes[what] == thrown, (what, run.stdout)
    # ``new Square(2)`` throws before ``area``/``twice`` could run: hidden either way
    assert outcomes["twice"] == thrown


@needs_javac
def test_partly_hidden_source_runs_the_rest(tmp_path: Path) -> None:
    """Hiding one constructor of a class with a blank final field compiles (the throw completes
    abruptly); the other members still run."""
    hidden, report = hide_java_bodies(SOURCE, lambda q, line: q in ("Shapes.Square.area", "Shapes.Named.shout")
                                      or (q, line) == ("Shapes.<init>", 22))
    assert report.hidden == ["Shapes.<init>", "Shapes.Square.area", "Shapes.Named.shout"]
    compiled = _javac(tmp_path, {"Shapes.java": hidden, "Main.java": MAIN})
    assert compiled.returncode == 0, compiled.stderr
    run = subprocess.run(["java", "-cp", str(tmp_path / "classes"), "p.Main"], check=False, capture_output=True,
                         text=True, timeout=120)
    out = run.stdout.splitlines()
    assert "ctor returned p.Shapes@" in out[0]
    assert out[1] == f"delegating ctor threw UnsupportedOperationException: {HIDDEN_MESSAGE}"
    assert out[2] == "largest returned 5" and out[3].startswith("square returned")
    assert out[4] == f"area threw UnsupportedOperationException: {HIDDEN_MESSAGE}"
    assert out[6] == "enum returned 1" and out[8].endswith(HIDDEN_MESSAGE)
