"""Go production (Godog): body hiding, mutants, mutant schemata.

The tests marked ``needs_go`` build with the Go toolchain (skipped without ``go``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.godog.hiding import hide_go_bodies, import_name
from bench.frameworks.godog.language import GoLanguage, file_mutants
from bench.frameworks.godog.schemata import SCHEMA_DIR, compile_schemata, go_env, launch, selection
from bench.frameworks.protocol import HIDDEN_MESSAGE

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="the Go toolchain is not installed")

HIDING_SOURCE = textwrap.dedent('''\
    package shapes

    import (
    	"fmt"
    	"strings"
    )

    type List[T any] struct{ items []T }

    // Push appends.
    func (l *List[T]) Push(v T) {
    	l.items = append(l.items, v)
    }

    func (l List[T]) Len() (n int) {
    	n = len(l.items)
    	return
    }

    func Describe(name string) (string, error) {
    	f := func(s string) string { return strings.ToUpper(s) }
    	return fmt.Sprintf("<%s>", f(name)), nil
    }

    func Keep() string {
    	return strings.TrimSpace(" x ")
    }

    func Empty() {}

    func asmStub(x int) int
    ''')


def test_hider_qualnames_placeholder_and_lines() -> None:
    out, report = hide_go_bodies(HIDING_SOURCE, lambda q, line: q != "Keep")
    assert report.hidden == ["List.Push", "List.Len", "Describe"]
    assert report.kept_stubs == ["Empty", "asmStub"]
    assert out.count("\n") == HIDING_SOURCE.count("\n")
    lines, original = out.splitlines(), HIDING_SOURCE.splitlines()
    assert lines[10] == f'func (l *List[T]) Push(v T) {{ panic("{HIDDEN_MESSAGE}") }}'
    assert lines[14] == f'func (l List[T]) Len() (n int) {{ panic("{HIDDEN_MESSAGE}") }}'
    # declarations, doc comments and every line after a hidden body keep their place
    for i, line in enumerate(original):
        if line.startswith(("func Keep", "func Empty", "func asmStub", "// Push", "type List")):
            assert lines[i] == line
    # fmt was used only in hidden bodies: blank import, same line; strings is still used
    assert lines[3] == '\t_ "fmt"' and lines[4] == '\t"strings"'


def test_hider_selects_by_qualname_and_line() -> None:
    seen: list[tuple[str, int]] = []
    hide_go_bodies(HIDING_SOURCE, lambda q, line: seen.append((q, line)) or False)
    assert ("List.Push", 11) in seen and ("Describe", 20) in seen
    out, report = hide_go_bodies(HIDING_SOURCE, lambda q, line: False)
    assert out == HIDING_SOURCE and report.hidden == []


def test_import_name_guess() -> None:
    assert import_name("github.com/algorand/go-codec/codec") == "codec"
    assert import_name("github.com/cucumber/godog/v2") == "godog"
    assert import_name("gopkg.in/yaml.v3") == "yaml"
    assert import_name("github.com/x/go-querystring") == "querystring"


MUTANT_SOURCE = textwrap.dedent('''\
    package calc

    import "strings"

    const Limit = 10 + 1

    type Acc struct {
    	N int `json:"n"`
    }

    func (a *Acc) Add(x int) {
    	a.N += x
    }

    func Max[T int | float64](a, b T) T {
    	if a > b || a == b {
    		return a
    	}
    	return b
    }

    func Label(n int, loud bool) string {
    	s := "n=" + strings.Repeat("*", n)
    	if !loud && n%2 == 0 {
    		s = strings.ToLower(s)
    	}
    	switch n {
    	case 3:
    		s += "!"
    	}
    	return s
    }

    func Clamp(v int) (out int) {
    	out = v * 3
    	if v < 0 {
    		return 0
    	}
    	return -out + 1<<2
    }

    func Use(a *Acc, on bool) bool {
    	a.Add(1)
    	return on
    }

    func Bits(v uint32) uint32 {
    	var n uint32
    	n += 11
    	return n & v
    }
    ''')


def _by(mutants, operator):
    return {(m.original, m.replacement) for m in mutants if m.operator == operator}


def test_mutants_of_each_family() -> None:
    mutants = file_mutants("calc/calc.go", MUTANT_SOURCE)
    assert ("a > b", "(a >= b)") in _by(mutants, "conditional_boundary")
    assert ("v < 0", "(v <= 0)") in _by(mutants, "conditional_boundary")
    assert {("a == b", "(a != b)"), ("a > b", "(a <= b)"), ("n%2 == 0", "(n%2 != 0)")} <= _by(
        mutants, "negate_conditional")
    assert _by(mutants, "negation") == {("!loud", "(loud)")}
    arithmetic = _by(mutants, "arithmetic")
    assert {("a.N += x", "a.N -= x"), ("v * 3", "(v / 3)"), ("n%2", "(n*2)"), ("-out", "(out)")} <= arithmetic
    assert ("a > b || a == b", "(a > b && a == b)") in _by(mutants, "logical")
    assert ("!loud && n%2 == 0", "(!loud || n%2 == 0)") in _by(mutants, "logical")
    constants = _by(mutants, "constant")
    assert {('"n="', '""'), ('"*"', '""'), ("2", "3"), ("0", "1"), ("3", "4")} <= constants
    assert _by(mutants, "return_value") == {
        ("return a", "if true { return *new(T) }; return a"), ("return b", "if true { return *new(T) }; return b"),
        ("return s", 'if true { return "" }; return s'),
        ("return -out + 1<<2", "if true { return 0 }; return -out + 1<<2"),
        ("return on", "if true { return false }; return on"), ("return n & v", "if true { return 0 }; return n & v")}
    assert _by(mutants, "call_removal") == {("a.Add(1)", "if false { a.Add(1) }")}
    # a divisor never becomes the constant 0 (Go refuses a division by constant zero)
    divisions = file_mutants("d.go", "package d\n\nfunc D(x int) int {\n\tx /= 1\n\treturn x % 1 + x / 1 * 1\n}\n")
    assert not any(m.operator == "constant" and m.replacement == "0" and m.original == "1" and m.col != 24
                   for m in divisions)
    assert any(m.operator == "constant" and m.replacement == "0" and m.col == 24 for m in divisions)
    lines = {m.line for m in mutants}
    # never: the const block, the struct tag, the case label 3, a literal-only expression (1<<2)
    assert 5 not in lines and 8 not in lines
    assert not any(m.line == 28 and m.operator == "constant" for m in mutants)
    assert not any(m.original in ("1<<2", "1", "2") and m.line == 39 for m in mutants)
    assert {m.function for m in mutants} == {"Acc.Add", "Max", "Label", "Clamp", "Use", "Bits"}


def test_mutant_ids_stable_and_apply_round_trip() -> None:
    language = GoLanguage()
    first, second = file_mutants("calc/calc.go", MUTANT_SOURCE), file_mutants("calc/calc.go", MUTANT_SOURCE)
    assert [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == len(first)
    for mutant in first:
        mutated = language.apply_mutant(MUTANT_SOURCE, mutant)
        assert mutated.count("\n") == MUTANT_SOURCE.count("\n")  # no line moves
        assert mutant.replacement in mutated
        lines = MUTANT_SOURCE.splitlines(keepends=True)
        start = sum(len(x) for x in lines[:mutant.line - 1]) + mutant.col
        assert mutated[:start] + mutant.original + mutated[start + len(mutant.replacement):] == MUTANT_SOURCE
    with pytest.raises(ValueError):
        language.apply_mutant(MUTANT_SOURCE.replace("a > b", "a>b"), next(m for m in first if m.original == "a > b"))


def test_schema_rendering_keeps_lines_and_types_literals() -> None:
    from bench.frameworks.godog.language import file_sites, site_mutants
    from bench.frameworks.godog.schemata import render_file

    source = (b"package p\n\nfunc F(a []uint32, i int) uint32 {\n\tvar n uint32\n\tn += 11\n\ta[i+1] -= n\n"
              b"\treturn n\n}\n")
    sites = file_sites(source)
    numbers, next_number = [], 1
    for site in sites:
        count = len(site_mutants("p.go", source, site))
        numbers.append(list(range(next_number, next_number + count)))
        next_number += count
    text = render_file(source, sites, numbers, '"m/internal/req2testschema"').text
    assert text.splitlines() == [
        'package p; import req2testSchema "m/internal/req2testschema"', "",
        "func F(a []uint32, i int) uint32 {", "\tvar n uint32",
        "\tif req2testSchema.On(1) { n -= 11 } else if req2testSchema.On(2) { n += 12 } else { n += 11 }",
        ("\tif req2testSchema.On(3) { a[req2testSchema.AddK(4, 5, i,1, 0)] += n } "
         "else { a[req2testSchema.AddK(4, 5, i,1, 0)] -= n }"),
        "\tif req2testSchema.On(6) { return 0 }; return n", "}"]


def test_generate_mutants_skips_tests_and_testdata(tmp_path: Path) -> None:
    (tmp_path / "calc" / "testdata").mkdir(parents=True)
    (tmp_path / "calc" / "calc.go").write_text(MUTANT_SOURCE)
    (tmp_path / "calc" / "calc_test.go").write_text(MUTANT_SOURCE)
    (tmp_path / "calc" / "testdata" / "x.go").write_text(MUTANT_SOURCE)
    mutants = GoLanguage().generate_mutants(tmp_path, ["calc"])
    assert mutants and {m.file for m in mutants} == {"calc/calc.go"}


MAIN = textwrap.dedent('''\
    package main

    import (
    	"fmt"

    	"example.com/r2t/calc"
    )

    func main() {
    	a := &calc.Acc{}
    	fmt.Println(calc.Max(2, 5), calc.Label(4, false), calc.Clamp(7), calc.Use(a, true), a.N)
    }
    ''')


PROBE = textwrap.dedent('''\
    package main

    import (
    	"fmt"
    	"syscall"

    	"example.com/r2t/calc"
    )

    var fd3 string

    // runs after every package main imports: the schema package has read and closed fd 3
    func init() {
    	var st syscall.Stat_t
    	fd3 = fmt.Sprint(syscall.Fstat(3, &st) == nil)
    }

    func main() {
    	fmt.Println("fd3 open:", fd3, calc.Use(&calc.Acc{}, true))
    }
    ''')


def _module(root: Path) -> None:
    (root / "calc").mkdir(parents=True)
    (root / "cmd").mkdir()
    (root / "probe").mkdir()
    (root / "probe" / "main.go").write_text(PROBE)
    (root / "go.mod").write_text("module example.com/r2t\n\ngo 1.22\n")
    (root / "calc" / "calc.go").write_text(MUTANT_SOURCE)
    (root / "cmd" / "main.go").write_text(MAIN)


def _run(binary: Path, number: int | None, tmp: Path) -> str:
    if number is None:
        return subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    sel = tmp / "selection"
    sel.write_bytes(selection(number))
    fd = os.open(sel, os.O_RDONLY)
    try:
        command, extra = launch([str(binary)], fd)
        return subprocess.run(command, capture_output=True, text=True, check=False,
                              **extra).stdout  # type: ignore[call-overload]
    finally:
        os.close(fd)


@needs_go
def test_schemata_compile_and_select(tmp_path: Path) -> None:
    original, tree = tmp_path / "orig", tmp_path / "tree"
    _module(original)
    shutil.copytree(original, tree)
    mutants = GoLanguage().generate_mutants(original, ["calc"])
    schemata = compile_schemata(tree, mutants, original)
    by_id = {m.id: m for m in mutants}
    # dropped: string concatenation ("n=" + ..., s += "!") has no "-"
    assert {by_id[i].original for i in schemata.dropped} == {'"n=" + strings.Repeat("*", n)', 's += "!"'}
    assert set(schemata.numbers) == {m.id for m in mutants} - set(schemata.dropped)
    # a literal operand takes its operator's type (n is a uint32: C(k, 11, 12) alone is an int)
    line = MUTANT_SOURCE.splitlines().index("\tn += 11") + 1
    assert {(m.original, m.replacement) for m in mutants if m.line == line and m.id in schemata.numbers} == {
        ("n += 11", "n -= 11"), ("11", "12")}
    assert (tree / SCHEMA_DIR / "schema.go").is_file()
    text = (tree / "calc" / "calc.go").read_text()
    assert text.count("\n") == MUTANT_SOURCE.count("\n")
    binary = tmp_path / "prog"
    subprocess.run(["go", "build", "-o", str(binary), "./cmd"], cwd=tree, env=go_env(), check=True)
    plain = subprocess.run(["go", "run", "./cmd"], cwd=original, env=go_env(), capture_output=True, text=True,
                           check=True).stdout
    assert plain == "5 n=**** -17 true 1\n"
    assert _run(binary, None, tmp_path) == plain and _run(binary, 0, tmp_path) == plain

    def number(original_text: str, operator: str) -> int:
        return schemata.numbers[next(m.id for m in mutants if m.original == original_text and m.operator == operator)]

    assert _run(binary, number("v * 3", "arithmetic"), tmp_path) == "5 n=**** 2 true 1\n"
    assert _run(binary, number("a.Add(1)", "call_removal"), tmp_path) == "5 n=**** -17 true 0\n"
    assert _run(binary, number("return on", "return_value"), tmp_path) == "5 n=**** -17 false 1\n"
    assert _run(binary, number("a > b", "negate_conditional"), tmp_path) == "2 n=**** -17 true 1\n"

    # the trust rule: code that imports production starts after fd 3 was read and closed
    probe = tmp_path / "probe"
    subprocess.run(["go", "build", "-o", str(probe), "./probe"], cwd=tree, env=go_env(), check=True)
    assert _run(probe, number("return on", "return_value"), tmp_path) == "fd3 open: false false\n"
    assert _run(probe, 0, tmp_path) == "fd3 open: false true\n"


@needs_go
def test_kept_mutants_compile_as_source(tmp_path: Path) -> None:
    """Each family's kept mutants written to disk build (the fresh-process check's reference)."""
    original, tree = tmp_path / "orig", tmp_path / "tree"
    _module(original)
    shutil.copytree(original, tree)
    language = GoLanguage()
    mutants = language.generate_mutants(original, ["calc"])
    kept = set(compile_schemata(tree, mutants, original).numbers)
    one_per_family = {m.operator: m for m in mutants if m.id in kept}
    assert len(one_per_family) == 8
    work = tmp_path / "work"
    shutil.copytree(original, work)
    for mutant in one_per_family.values():
        (work / mutant.file).write_text(language.apply_mutant(MUTANT_SOURCE, mutant))
        proc = subprocess.run(["go", "build", "./..."], cwd=work, env=go_env(), capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, (mutant, proc.stderr)
