"""Java mutant schemata (Cucumber-JVM): every mutant in one javac build, one selected per JVM
through fd 3, checked against plain rebuilds with the mutant on disk.

The tests marked ``needs_javac`` compile with the JDK (skipped without ``javac``); the slow one
compiles java-algorand-sdk's production (``-m slow``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.language import JavaLanguage, file_sites, site_mutants
from bench.frameworks.cucumber_jvm.schemata import (
    MAIN_CLASS,
    SCHEMA_DIR,
    Schemata,
    SchemataError,
    assign_numbers,
    compile_schemata,
    javac_flags,
    launch,
    render_file,
    selection,
    through_main,
)
from bench.model import Mutant

needs_javac = pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None,
                                 reason="no JDK (javac, java) on PATH")

CALC = textwrap.dedent('''\
    package demo;

    public class Calc {
        static final int LIMIT = 10 + 1;
        private int total;

        @SuppressWarnings("unused")
        public int add(int x) {
            total += x;
            return total;
        }

        public static long scale(long v, int k) {
            return v * k + 1;
        }

        public static boolean inRange(int v) {
            return v >= 0 && v < LIMIT || v == -1;
        }

        public static double half(double d) {
            return d / 2.0;
        }

        public static char grade(int score) {
            final int good = 8;
            switch (score / 10) {
                case 10:
                case 9:
                    return 'A';
                case good:
                    return 'B';
                default:
                    return score > 50 ? 'C' : 'F';
            }
        }

        public static byte low(int v) {
            byte b = 5;
            b += (byte) v;
            return b;
        }

        public static int bits(int v) {
            return (v << 2) >> 1 ^ v >>> 3 | v & 6;
        }

        public static int countdown(int n) {
            int steps = 0;
            while (true) {
                if (n <= 0) break;
                n -= 2;
                steps++;
            }
            return -steps;
        }
    }
    ''')

TEXT = textwrap.dedent('''\
    package demo;

    import java.util.ArrayList;
    import java.util.List;
    import java.util.function.Function;

    public class Text {
        private final List<String> log = new ArrayList<>();

        public String label(String name, int n) {
            String s = "n=" + n; // é€😀: columns are characters, javac counts UTF-16 units
            String t = name + n;
            if (!name.isEmpty())
                log.add(name);
            Function<Integer, Integer> twice = k -> k * 2;
            return s + "/" + t + "/" + twice.apply(n);
        }

        public int logged() {
            return log.size();
        }

        public boolean flag(boolean on) {
            return on != false;
        }

        public Object nothing() {
            return "x";
        }

        public float ratio(float a) {
            return a * 1.5f;
        }
    }
    ''')

APP = textwrap.dedent('''\
    package demo;

    public class App {
        public static void main(String[] args) {
            Calc c = new Calc();
            c.add(3);
            Text t = new Text();
            String label = t.label("ab", 4);
            System.out.println(c.add(4) + " " + Calc.scale(7L, 3) + " " + Calc.inRange(5) + " " + Calc.half(5.0)
                    + " " + (int) Calc.grade(85) + " " + Calc.low(2) + " " + Calc.bits(37) + " " + Calc.countdown(5));
            System.out.println(label + " " + t.logged() + " " + t.flag(true) + " " + t.nothing() + " " + t.ratio(2f));
        }
    }
    ''')

# test code: runs after production classes are loaded, with the schemata's Main as the launcher
PROBE = textwrap.dedent('''\
    package probe;

    import java.nio.file.Files;
    import java.nio.file.LinkOption;
    import java.nio.file.Path;
    import java.nio.file.Paths;

    public class Probe {
        public static void main(String[] args) throws Exception {
            Path fd3 = Paths.get("/proc/self/fd/3");
            String target = Files.exists(fd3, LinkOption.NOFOLLOW_LINKS) ? Files.readSymbolicLink(fd3).toString() : "-";
            System.out.println("fd3 selection: " + target.endsWith("selection") + " " + new demo.Text().flag(true));
        }
    }
    ''')

ORIGINAL_OUTPUT = "7 22 true 2.5 66 7 78 -3\nn=4/ab4/8 1 true x 3.0\n"
PRODUCTION = ["src/main/java"]


def _project(root: Path) -> None:
    package = root / "src" / "main" / "java" / "demo"
    package.mkdir(parents=True)
    (package / "Calc.java").write_text(CALC, encoding="utf-8")
    (package / "Text.java").write_text(TEXT, encoding="utf-8")
    (package / "App.java").write_text(APP, encoding="utf-8")
    probe = root / "src" / "test" / "java" / "probe"
    probe.mkdir(parents=True)
    (probe / "Probe.java").write_text(PROBE, encoding="utf-8")


def _javac(sources: list[Path], out: Path, classpath: str = "") -> None:
    argv = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(out)]
    proc = subprocess.run([*argv, *(["-cp", classpath] if classpath else []), *map(str, sources)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def _plain_output(original: Path, work: Path, mutant: Mutant | None) -> tuple[int, str]:
    """The reference: a plain javac build with the mutant on disk, run without the launcher."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(original / "src" / "main", work / "src" / "main")
    if mutant is not None:
        path = work / mutant.file
        path.write_text(JavaLanguage().apply_mutant(path.read_text(encoding="utf-8"), mutant), encoding="utf-8")
    _javac(sorted((work / "src" / "main" / "java").rglob("*.java")), work / "classes")
    proc = subprocess.run(["java", "-cp", str(work / "classes"), "demo.App"], capture_output=True, text=True,
                          check=False)
    return proc.returncode, proc.stdout


def _run(classpath: str, main: str, number: int | None, tmp: Path) -> tuple[int, str]:
    argv = ["java", "-cp", classpath, MAIN_CLASS, main]
    if number is None:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout
    selection_file = tmp / "selection"
    selection_file.write_bytes(selection(number))
    fd = os.open(selection_file, os.O_RDONLY)
    try:
        command, extra = launch(argv, fd)
        proc = subprocess.run(command, capture_output=True, text=True, check=False,
                              **extra)  # type: ignore[call-overload]
        return proc.returncode, proc.stdout
    finally:
        os.close(fd)


def test_rendering_keeps_lines_and_operands() -> None:
    source = (b"class R {\n  int f(int a, long b, boolean c) {\n    a += 1;\n    if (c && a < b || !c) return a\n"
              b"      - 2;\n    g(a == 0);\n    return a;\n  }\n}\n")
    sites = file_sites(source)
    numbers, next_number = [], 1
    for site in sites:
        count = len(site_mutants("R.java", source, site))
        numbers.append(list(range(next_number, next_number + count)))
        next_number += count
    rendered = render_file(source, sites, numbers)
    assert rendered.text.replace("req2test.schema.S.", "S.").splitlines() == [
        "class R {", "  int f(int a, long b, boolean c) {",
        "    if (S.on(1)) { a -= (S.on(2) ? 0 : 1); } else { a += (S.on(2) ? 0 : 1); }",
        # c && a < b: ((c) != on ? (a < b) : on), its || the same with == and !on; operands once
        ("    if (((((c) != S.on(4) ? (S.lt(5, 6, a , b)) : S.on(4))) == S.on(3) ? ((!c != S.on(7))) "
         ": !S.on(3))) { if (S.on(8)) return 0; return S.sub(9, a"),
        "      , (S.on(10) ? 3 : 2)); }",  # the line break between the operands stays
        "    if (!S.on(11)) { g(((a == (S.on(13) ? 1 : 0)) != S.on(12))); }",
        "    { if (S.on(14)) return 0; return a; }", "  }", "}"]
    # a span per site, two for the literal of x += 1 (written in both branches), nested sites
    # inside their parent's
    assert sorted(span[2] for span in rendered.spans) == [0, 1, 1, *range(2, len(sites))]
    outer = next(span for span in rendered.spans if span[2] == 2)
    assert all(outer[0] < span[0] and span[1] < outer[1] for span in rendered.spans if span[2] in (3, 4, 5))


def test_numbers_are_stable_and_spread() -> None:
    mutants = _sample_mutants()
    plain = assign_numbers(mutants)
    assert sorted(plain.values()) == list(range(1, len(mutants) + 1))
    seeded = assign_numbers(mutants, order_seed=7)
    assert seeded == assign_numbers(reversed(mutants), order_seed=7)
    assert len(set(seeded.values())) == len(mutants) and max(seeded.values()) <= 2 * len(mutants)
    assert seeded != plain


def _sample_mutants() -> list[Mutant]:
    from bench.frameworks.cucumber_jvm.language import file_mutants

    return file_mutants("src/main/java/demo/Calc.java", CALC)


def test_javac_flags_from_the_pom(tmp_path: Path) -> None:
    assert javac_flags(tmp_path) == ["-encoding", "UTF-8"]
    (tmp_path / "pom.xml").write_text(textwrap.dedent('''\
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <properties>
            <java.release.version>8</java.release.version>
            <project.build.sourceEncoding>ISO-8859-1</project.build.sourceEncoding>
          </properties>
          <profiles>
            <profile>
              <id>default</id>
              <activation><activeByDefault>true</activeByDefault></activation>
              <build><plugins><plugin>
                <artifactId>maven-compiler-plugin</artifactId>
                <configuration><release>${java.release.version}</release></configuration>
              </plugin></plugins></build>
            </profile>
            <profile>
              <id>ide</id>
              <build><plugins><plugin>
                <artifactId>maven-compiler-plugin</artifactId>
                <configuration><release>11</release></configuration>
              </plugin></plugins></build>
            </profile>
          </profiles>
        </project>
        '''))
    assert javac_flags(tmp_path) == ["--release", "8", "-encoding", "ISO-8859-1"]
    (tmp_path / "pom.xml").write_text(
        "<project><properties><maven.compiler.source>1.8</maven.compiler.source>"
        "<maven.compiler.target>1.8</maven.compiler.target></properties></project>")
    assert javac_flags(tmp_path) == ["-source", "1.8", "-target", "1.8", "-encoding", "UTF-8"]


def test_launch_and_through_main() -> None:
    command, extra = launch(["java", "-cp", "x", MAIN_CLASS, "demo.App"], 7, memory_limit=512 << 20)
    assert command == ["/bin/bash", "-c", 'exec "$0" "$@" 3<&7 7<&-', "java", "-Xmx512m", "-cp", "x", MAIN_CLASS,
                       "demo.App"]
    assert extra == {"pass_fds": (7,)}
    with pytest.raises(ValueError):
        launch(["bash", "x"], 7, memory_limit=1 << 30)
    assert through_main(["java", "-Dx=1", "-cp", "cp", "io.cucumber.core.cli.Main", "--glue", "g"],
                        "io.cucumber.core.cli.Main") == ["java", "-Dx=1", "-cp", "cp", MAIN_CLASS,
                                                         "io.cucumber.core.cli.Main", "--glue", "g"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Mutant], Schemata]:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac, java) on PATH")
    base = tmp_path_factory.mktemp("javaschemata")
    original, tree = base / "orig", base / "tree"
    _project(original)
    shutil.copytree(original, tree)
    mutants = JavaLanguage().generate_mutants(original, PRODUCTION)
    schemata = compile_schemata(tree, mutants, original, [], production=PRODUCTION)
    return original, tree, mutants, schemata


@needs_javac
def test_schemata_compile_and_drop(built: tuple[Path, Path, list[Mutant], Schemata]) -> None:
    _, tree, mutants, schemata = built
    by_id = {m.id: m for m in mutants}
    # dropped: the string "-" (name + n has no numeric helper) and byte b = 5 (a switched literal
    # is no constant, so no implicit narrowing)
    assert {(by_id[i].original, by_id[i].line) for i in schemata.dropped} == {
        ("name + n", TEXT.splitlines().index('        String t = name + n;') + 1),
        ("5", CALC.splitlines().index("        byte b = 5;") + 1)}
    assert "add(int,String,int)" in " ".join(schemata.dropped.values())
    assert set(schemata.numbers) == {m.id for m in mutants} - set(schemata.dropped)
    assert schemata.builds == 2 and schemata.seconds > 0
    assert schemata.classes is not None and (schemata.classes / "demo" / "Calc.class").is_file()
    assert (schemata.classes / "req2test" / "schema" / "S.class").is_file()
    assert (tree / SCHEMA_DIR / "req2test" / "schema" / "Main.java").is_file()
    for name, text in (("Calc", CALC), ("Text", TEXT), ("App", APP)):  # no line moved
        rendered = (tree / "src" / "main" / "java" / "demo" / f"{name}.java").read_text(encoding="utf-8")
        assert rendered.count("\n") == text.count("\n") and rendered != text
        for new, old in zip(rendered.splitlines(), text.splitlines(), strict=True):
            assert new == old or "req2test.schema.S." in new


@needs_javac
def test_schemata_select_like_plain_rebuilds(built: tuple[Path, Path, list[Mutant], Schemata],
                                             tmp_path: Path) -> None:
    original, _, mutants, schemata = built
    classes = str(schemata.classes)
    assert _plain_output(original, tmp_path / "plain", None) == (0, ORIGINAL_OUTPUT)
    unused = next(n for n in range(1, 1000) if n not in set(schemata.numbers.values()))
    for number in (None, 0, unused):  # no fd 3, the original's number, a number no site uses
        assert _run(classes, "demo.App", number, tmp_path) == (0, ORIGINAL_OUTPUT)
    chosen = [("total += x;", "arithmetic"), ("v * k", "arithmetic"), ("v >= 0", "conditional_boundary"),
              ("v < LIMIT", "negate_conditional"), ("v >= 0 && v < LIMIT || v == -1", "logical"),
              ("(v << 2) >> 1 ^ v >>> 3 | v & 6", "arithmetic"), ("-steps", "arithmetic"),
              ("return 'B';", "return_value"), ("!name.isEmpty()", "negation"), ("log.add(name);", "call_removal"),
              ("k * 2", "arithmetic"), ('"/"', "constant"), ("return on != false;", "return_value"),
              ("1.5f", "constant"), ("b += (byte) v;", "arithmetic"), ("score / 10", "arithmetic")]
    seen, changed = set(), 0
    for text, operator in chosen:
        mutant = next(m for m in mutants if m.original == text and m.operator == operator)
        assert mutant.id in schemata.numbers, mutant
        expected = _plain_output(original, tmp_path / "plain", mutant)
        changed += expected != (0, ORIGINAL_OUTPUT)
        assert _run(classes, "demo.App", schemata.numbers[mutant.id], tmp_path) == expected, mutant
        seen.add(operator)
    assert changed >= len(chosen) - 3  # v >= 0 → v > 0 at v = 5, and 'B', are not observable here
    assert seen == {"arithmetic", "conditional_boundary", "negate_conditional", "logical", "return_value",
                    "negation", "call_removal", "constant"}


@needs_javac
def test_fd3_is_closed_before_test_code_runs(built: tuple[Path, Path, list[Mutant], Schemata],
                                             tmp_path: Path) -> None:
    original, _, mutants, schemata = built
    assert schemata.classes is not None
    probe_classes = tmp_path / "probe"
    _javac([original / "src" / "test" / "java" / "probe" / "Probe.java"], probe_classes, str(schemata.classes))
    classpath = os.pathsep.join([str(probe_classes), str(schemata.classes)])
    flag = next(m for m in mutants if m.original == "return on != false;")
    assert _run(classpath, "probe.Probe", schemata.numbers[flag.id], tmp_path) == (0, "fd3 selection: false false\n")
    assert _run(classpath, "probe.Probe", 0, tmp_path) == (0, "fd3 selection: false true\n")


@needs_javac
def test_an_error_outside_every_site_fails(tmp_path: Path) -> None:
    original, tree = tmp_path / "orig", tmp_path / "tree"
    _project(original)
    (original / "src" / "main" / "java" / "demo" / "Broken.java").write_text(
        "package demo;\n\nclass Broken {\n    static final String X = 1;\n}\n")
    shutil.copytree(original, tree)
    mutants = JavaLanguage().generate_mutants(original, PRODUCTION)
    with pytest.raises(SchemataError, match="outside every mutation site"):
        compile_schemata(tree, mutants, original, [], production=PRODUCTION)


@needs_javac
def test_a_constant_made_variable_is_blamed_in_its_method(tmp_path: Path) -> None:
    """Definite assignment through a constant condition: javac reports the variable's use,
    outside every site; the method's literals are dropped, its other sites stay."""
    original, tree = tmp_path / "orig", tmp_path / "tree"
    package = original / "src" / "main" / "java" / "demo"
    package.mkdir(parents=True)
    (package / "Flow.java").write_text(textwrap.dedent('''\
        package demo;

        class Flow {
            static int f(int a) {
                int x;
                if (true) {
                    x = a + 1;
                }
                int y = x;
                return y;
            }
        }
        '''))
    shutil.copytree(original, tree)
    mutants = JavaLanguage().generate_mutants(original, PRODUCTION)
    schemata = compile_schemata(tree, mutants, original, [], production=PRODUCTION)
    by_id = {m.id: m for m in mutants}
    assert {by_id[i].original for i in schemata.dropped} == {"true", "1"}
    assert {by_id[i].original for i in schemata.numbers} == {"a + 1", "return y;"}


@pytest.mark.slow
def test_java_algorand_sdk_schemata(tmp_path: Path) -> None:
    """The real corpus: java-algorand-sdk's 333 production files with their compile classpath
    (from the req2test Maven repository, offline), every mutant in one build."""
    import time

    from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain, build_classpath

    corpus = Path("/work/corpora/java-algorand-sdk")
    if not (corpus / "pom.xml").is_file():
        pytest.skip("the java-algorand-sdk corpus is not at /work/corpora/java-algorand-sdk")
    try:
        toolchain = JavaToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(corpus / "pom.xml", project / "pom.xml")
    result, classpath = build_classpath(project, tmp_path / "classpath.txt", toolchain, offline=True)
    if not result.ok:
        pytest.skip(f"the compile classpath is not in the req2test Maven repository: {result.output[-300:]}")
    original, tree = tmp_path / "orig", tmp_path / "tree"
    shutil.copytree(corpus / "src" / "main" / "java", original / "src" / "main" / "java")
    shutil.copy(corpus / "pom.xml", original / "pom.xml")
    shutil.copytree(original, tree)
    started = time.monotonic()
    mutants = JavaLanguage().generate_mutants(original, PRODUCTION)
    generated = time.monotonic() - started
    schemata = compile_schemata(tree, mutants, original, classpath, toolchain, production=PRODUCTION)
    files = {m.file for m in mutants}
    kept_files = {m.file for m in mutants if m.id in schemata.numbers}
    print(f"\njava-algorand-sdk: {len(files)} files with mutants, {len(mutants)} mutants generated in "
          f"{generated:.1f} s; {len(schemata.numbers)} kept, {len(schemata.dropped)} dropped; "
          f"{schemata.builds} javac builds, {schemata.seconds:.0f} s; files with kept mutants {len(kept_files)}",
          file=sys.stderr)
    by_operator: dict[str, list[int]] = {}
    for mutant in mutants:
        counts = by_operator.setdefault(mutant.operator, [0, 0])
        counts[0] += 1
        counts[1] += mutant.id in schemata.numbers
    print("  " + ", ".join(f"{op} {kept}/{total}" for op, (total, kept) in sorted(by_operator.items())),
          file=sys.stderr)
    reasons: dict[str, int] = {}
    for message in schemata.dropped.values():
        key = message.split(": ", 1)[1].split(":")[0][:60]
        reasons[key] = reasons.get(key, 0) + 1
    for key, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  dropped {count}: {key}", file=sys.stderr)
    assert schemata.classes is not None
    assert (schemata.classes / "com" / "algorand" / "algosdk" / "account" / "Account.class").is_file()
    assert (schemata.classes / "req2test" / "schema" / "S.class").is_file()
    assert len(mutants) > 5000 and len(schemata.numbers) > 0.9 * len(mutants)
    for rel in sorted(files)[:: max(1, len(files) // 25)]:  # no line moved
        assert (tree / rel).read_text(encoding="utf-8").count("\n") == \
            (original / rel).read_text(encoding="utf-8").count("\n")
