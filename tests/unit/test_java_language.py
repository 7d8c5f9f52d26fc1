"""Java production (Cucumber-JVM): the mutant generator (tree-sitter-java, no JDK needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.language import JavaLanguage, file_mutants, file_sites, production_files
from bench.model import Mutant

SOURCE = textwrap.dedent('''\
    package demo;

    import java.util.List;

    @Service(name = "calc", size = 1 + 2)
    public class Calc {
        static final int LIMIT = 10 + 1;
        private int total = 3;
        private static final String NAME = "calc";

        static {
            System.out.println("loaded" + 1);
        }

        Calc(int start) {
            super();
            this.total = start + 1;
        }

        @Override
        public String toString() {
            return "Calc(" + total + ")";
        }

        public int add(int x) {
            total += x;
            return total;
        }

        long scale(long v, int k) {
            return v * k - 1;
        }

        boolean inRange(int v) {
            return v >= 0 && v < LIMIT || v == -1;
        }

        char grade(int score) {
            final int good = 8;
            switch (score / 10) {
                case 10:
                case 9:
                    return 'A';
                case good:
                    return 'B';
                default:
                    return !(score > 50) ? 'F' : 'C';
            }
        }

        int loop(List<String> items) {
            int n = 0;
            while (true) {
                if (n >= items.size()) break;
                items.remove(0);
                n++;
            }
            return -n;
        }

        Runnable task() {
            return () -> {
                total *= 2;
                System.gc();
            };
        }

        Object anonymous() {
            return new Object() {
                int value = 7;

                @Override
                public int hashCode() {
                    return value % 5;
                }
            };
        }

        int bits(int v) {
            return v << 20 >>> 1 ^ v;
        }

        void nothing() {
            return;
        }

        enum Kind {
            A(1), B(2);

            final int weight;

            Kind(int weight) {
                this.weight = weight;
            }

            double half() {
                return weight / 2.0;
            }
        }
    }
    ''')


def _by(mutants: list[Mutant], operator: str) -> set[tuple[str, str]]:
    return {(m.original, m.replacement) for m in mutants if m.operator == operator}


def _line(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def test_mutants_of_each_family() -> None:
    mutants = file_mutants("src/demo/Calc.java", SOURCE)
    assert _by(mutants, "conditional_boundary") == {("v >= 0", "(v > 0)"), ("v < LIMIT", "(v <= LIMIT)"),
                                                    ("score > 50", "(score >= 50)"), ("n >= items.size()",
                                                                                      "(n > items.size())")}
    assert {("v >= 0", "(v < 0)"), ("v == -1", "(v != -1)"), ("score > 50", "(score <= 50)")} <= _by(
        mutants, "negate_conditional")
    assert _by(mutants, "negation") == {("!(score > 50)", "((score > 50))")}
    arithmetic = _by(mutants, "arithmetic")
    assert {("total += x;", "total -= x;"), ("v * k", "(v / k)"), ("v * k - 1", "(v * k + 1)"), ("-n", "(n)"),
            ("start + 1", "(start - 1)"), ("score / 10", "(score * 10)"), ("value % 5", "(value * 5)"),
            ("total *= 2;", "total /= 2;"), ("v << 20 >>> 1 ^ v", "(v << 20 >>> 1 & v)"),
            ("v << 20 >>> 1", "(v << 20 << 1)"), ("v << 20", "(v >> 20)"), ("weight / 2.0", "(weight * 2.0)")} \
        <= arithmetic
    # a + with a string-literal operand is a concatenation: no arithmetic mutant
    assert not any('"' in original for original, _ in arithmetic)
    assert _by(mutants, "logical") == {("v >= 0 && v < LIMIT", "(v >= 0 || v < LIMIT)"),
                                       ("v >= 0 && v < LIMIT || v == -1", "(v >= 0 && v < LIMIT && v == -1)")}
    constants = _by(mutants, "constant")
    assert {('"Calc("', '""'), ('")"', '""'), ("1", "0"), ("0", "1"), ("50", "51"), ("20", "21"), ("2", "3"),
            ("2.0", "3.0"), ("5", "6")} <= constants
    returns = _by(mutants, "return_value")
    # a lambda and an anonymous class are references: null (written over several lines, none added)
    assert {r.split(";")[0] for o, r in returns if "\n" in o} == {"{ if (true) return null"}
    assert len([o for o, _ in returns if o.startswith(("return () ->", "return new Object()"))]) == 2
    assert {(o, r) for o, r in returns if "\n" not in o} == {
        ('return "Calc(" + total + ")";', '{ if (true) return null; return "Calc(" + total + ")"; }'),
        ("return total;", "{ if (true) return 0; return total; }"),
        ("return v * k - 1;", "{ if (true) return 0L; return v * k - 1; }"),
        ("return v >= 0 && v < LIMIT || v == -1;",
         "{ if (true) return false; return v >= 0 && v < LIMIT || v == -1; }"),
        ("return 'A';", "{ if (true) return '\\0'; return 'A'; }"),
        ("return 'B';", "{ if (true) return '\\0'; return 'B'; }"),
        ("return !(score > 50) ? 'F' : 'C';", "{ if (true) return '\\0'; return !(score > 50) ? 'F' : 'C'; }"),
        ("return -n;", "{ if (true) return 0; return -n; }"),
        ("return value % 5;", "{ if (true) return 0; return value % 5; }"),  # the anonymous class's own type
        ("return v << 20 >>> 1 ^ v;", "{ if (true) return 0; return v << 20 >>> 1 ^ v; }"),
        ("return weight / 2.0;", "{ if (true) return 0.0; return weight / 2.0; }")}
    assert _by(mutants, "call_removal") == {("items.remove(0);", "if (false) { items.remove(0); }"),
                                            ("System.gc();", "if (false) { System.gc(); }")}
    assert {m.function for m in mutants} == {"Calc.<init>", "Calc.toString", "Calc.add", "Calc.scale",
                                             "Calc.inRange", "Calc.grade", "Calc.loop", "Calc.task",
                                             "Calc.anonymous", "Calc.bits", "Calc.Kind.half"}


def test_constant_places_are_never_sites() -> None:
    mutants = file_mutants("Calc.java", SOURCE)
    lines = {m.line for m in mutants}
    # the annotation, the fields, the static initializer, super(), @Override, enum constants,
    # the final local (a case label uses it), the case labels, while (true)
    for text in ("@Service", "LIMIT = 10 + 1", "total = 3", 'NAME = "calc"', '"loaded" + 1', "super();",
                 "A(1), B(2)", "final int good = 8", "case 10:", "case 9:", "while (true)", "int value = 7"):
        assert _line(text) not in lines, text
    # literal-only expressions: v << 20 is a site, 20 >>> 1 is not an operand of its own
    assert not any(m.original == "20 >>> 1" for m in mutants)
    assert "Calc.<init>" in {m.function for m in mutants if m.line == _line("this.total = start + 1")}
    # Kind's constructor assigns a parameter: nothing to mutate, but it is Kind.<init>
    assert not any(m.function == "Calc.Kind.<init>" for m in mutants)


def test_return_defaults_of_every_type() -> None:
    source = textwrap.dedent('''\
        class R {
            byte b(byte x) { return x; }
            short s(short x) { return x; }
            char c(char x) { return x; }
            float f(float x) { return x; }
            double d(double x) { return x; }
            long l(long x) { return x; }
            int[] a(int[] x) { return x; }
            <T> T t(T x) { return x; }
            Integer boxed(Integer x) { return x; }
            int zero() { return 0; }
            boolean no() { return false; }
            Object none() { return null; }
            java.util.function.IntSupplier lambda(int x) { return () -> { return x; }; }
        }
        ''')
    by_function = {m.function: m.replacement for m in file_mutants("R.java", source) if m.operator == "return_value"}
    assert by_function == {
        "R.b": "{ if (true) return (byte) 0; return x; }", "R.s": "{ if (true) return (short) 0; return x; }",
        "R.c": "{ if (true) return '\\0'; return x; }", "R.f": "{ if (true) return 0.0f; return x; }",
        "R.d": "{ if (true) return 0.0; return x; }", "R.l": "{ if (true) return 0L; return x; }",
        "R.a": "{ if (true) return null; return x; }", "R.t": "{ if (true) return null; return x; }",
        "R.boxed": "{ if (true) return null; return x; }",
        "R.lambda": "{ if (true) return null; return () -> { return x; }; }"}  # not the lambda's own return


@pytest.mark.parametrize(("literal", "replacement"), [
    ("5", "6"), ("1", "0"), ("0", "1"), ("1_000", "1001"), ("7L", "8L"), ("0x1F", "0x20"), ("0xff", "0x100"),
    ("0xFFFFFFFF", "0x0"), ("0b101", "0b110"), ("017", "020"), ("00", "01"), ("2147483647", "0x80000000"),
    ("9223372036854775807L", "0x8000000000000000L"), ("0x7fffffffffffffffL", "0x8000000000000000L"),
    ("1.5f", "2.5f"), ("2.0", "3.0"), ("1e3", "1001.0"), (".5D", "1.5D"), ("3.", "4.0"),
    ('"x"', '""'), ('""', '"mutated"'), ("true", "false"), ("false", "true")])
def test_literal_successors(literal: str, replacement: str) -> None:
    source = f"class L {{ Object f(Object o) {{ return g({literal}); }} }}\n"
    (mutant,) = [m for m in file_mutants("L.java", source) if m.operator == "constant"]
    assert (mutant.original, mutant.replacement) == (literal, replacement)


def test_literals_left_alone() -> None:
    source = textwrap.dedent('''\
        class L {
            Object f(char c, boolean on) {
                g('x', 0x1p3, """
                    text block""");
                long min = -9223372036854775808L;
                int low = -2147483648;
                Object k = on ? 'a' : 0;
                return -2147483647;
            }
        }
        ''')
    mutants = file_mutants("L.java", source)
    assert {m.operator for m in mutants} <= {"call_removal", "return_value"}
    assert len([m for m in mutants if m.operator == "call_removal"]) == 1


def test_statements_outside_blocks_keep_their_else() -> None:
    source = textwrap.dedent('''\
        class B {
            void f(int x, StringBuilder out) {
                if (x > 0) out.append(x); else x -= 1;
                switch (x) { case 1 -> out.append(1); default -> { } }
                int y = switch (x) { case 2 -> out.length(); default -> 0; };
            }
        }
        ''')
    mutants = file_mutants("B.java", source)
    assert {("out.append(x);", "{ if (false) { out.append(x); } }"), ("x -= 1;", "x += 1;"),
            ("out.append(1);", "{ if (false) { out.append(1); } }")} <= \
        _by(mutants, "call_removal") | _by(mutants, "arithmetic")
    # the value of a switch expression's rule is not a statement
    assert not any(m.original == "out.length();" for m in mutants)
    sites = file_sites(source.encode())
    assert {s.node.text.decode(): s.braces for s in sites if s.kind in ("call", "aug_assign")} == {
        "out.append(x);": True, "x -= 1;": True, "out.append(1);": True}


def test_columns_count_characters_and_round_trip() -> None:
    source = 'class U {\n    String f(int n) { String s = "é€😀"; return s + (n - 1); }\n}\n'
    mutants = file_mutants("U.java", source)
    minus = next(m for m in mutants if m.original == "n - 1")
    line = source.splitlines()[1]
    assert minus.line == 2 and minus.col == line.index("n - 1") and minus.end_col == minus.col + 5
    language = JavaLanguage()
    for mutant in mutants:
        mutated = language.apply_mutant(source, mutant)
        assert mutated.count("\n") == source.count("\n")
        start = sum(len(x) for x in source.splitlines(keepends=True)[:mutant.line - 1]) + mutant.col
        assert mutated[start:start + len(mutant.replacement)] == mutant.replacement
        assert mutated[:start] + mutant.original + mutated[start + len(mutant.replacement):] == source


def test_mutant_ids_stable_and_apply_round_trip() -> None:
    language = JavaLanguage()
    first, second = file_mutants("src/demo/Calc.java", SOURCE), file_mutants("src/demo/Calc.java", SOURCE)
    assert [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == len(first)
    for mutant in first:
        mutated = language.apply_mutant(SOURCE, mutant)
        assert mutated.count("\n") == SOURCE.count("\n")  # no line moves
        assert mutant.replacement in mutated
        assert mutant.function_line <= mutant.line <= mutant.function_end
        assert mutant.scope == (mutant.function_line, mutant.function_end)
    add = next(m for m in first if m.original == "total += x;")
    assert (add.function, add.function_line, add.function_end) == ("Calc.add", _line("public int add"),
                                                                    _line("public int add") + 3)
    with pytest.raises(ValueError):
        language.apply_mutant(SOURCE.replace("total += x;", "total+=x;"), add)
    # a form feed is whitespace in Java, not a line break (tree-sitter's lines are language's)
    text = "class F {\f int f(int a) { return a + 1; }\n}\n"
    plus = next(m for m in file_mutants("F.java", text) if m.original == "a + 1")
    assert language.apply_mutant(text, plus) == text.replace("a + 1", "(a - 1)")


def test_production_files(tmp_path: Path) -> None:
    src = tmp_path / "src" / "main" / "java" / "demo"
    src.mkdir(parents=True)
    (src / "Calc.java").write_text(SOURCE)
    (src / "package-info.java").write_text("package demo;\n")
    (src / "notes.txt").write_text("1 + 1")
    (tmp_path / "module-info.java").write_text("module demo {}\n")
    assert production_files(tmp_path, ["src/main/java", "module-info.java"]) == ["src/main/java/demo/Calc.java"]
    mutants = JavaLanguage().generate_mutants(tmp_path, ["src/main/java"])
    assert mutants and {m.file for m in mutants} == {"src/main/java/demo/Calc.java"}
    assert JavaLanguage.name == "java" and JavaLanguage.source_suffixes == (".java",)
