"""Mutant schemata for Go: every mutant of the production in one compiled build, one of them
selected per process, so a mutant run costs a process start instead of a compile.

**The rewrite.** Every mutation site of ``language.file_sites`` is replaced, in place and on
its own lines (no line of any file moves: coverage and stack traces stay the original's), by
code that runs the original unless the process's selected mutant is one of the site's:

- ``a < b`` → ``req2testSchema.Lt(nb, nn, a, b)``: generic helpers (``[T cmp.Ordered]``,
  ``[T number]``, ``[T integer]``) for ``< <= > >= + - * / % & | << >>`` and unary ``-``;
- ``a == b``, ``!x``, ``true`` → ``((a == b) != req2testSchema.On(n))``: a negation is an
  exclusive or;
- a literal ``5`` → ``req2testSchema.C(n, 5, 6)``; a literal right operand of an operator site
  (``x == 0``, ``n + 1``) joins the operator's helper, ``EqK(n, k, x, 0, 1)``, so it takes
  ``x``'s type as in Go (``C`` alone makes it an ``int``);
- ``a && b`` → ``func() bool { req2testL := a; if req2testL == On(n) { return req2testL };
  return (b) }()``: one copy of each operand, Go's short-circuit kept;
- ``x += y`` (one-line statements only) → ``if On(n) { x -= y } else { x += y }``, and
  ``x += 1`` gets an ``else if On(k) { x += 2 }`` branch for its literal;
- ``return x`` → ``if On(n) { return <zero> }; return x``; a call statement ``f(x)`` →
  ``if !On(n) { f(x) }``.

Without types, Go's own type inference does the typing: the generic helpers are instantiated
at each site with the operands' types, each operand is evaluated once and in order. What that
cannot express does not compile — ``+`` on strings (``number`` excludes strings), an untyped
constant whose type comes from its context (``var x uint64 = 5`` makes ``C(n, 5, 6)`` an
``int``), a named bool type — and ``compile_schemata`` drops those sites: it builds the
production packages with ``go build -gcflags=-e``, maps each error's file:line:col through the
rendered spans to the innermost site, drops it and builds again until the build succeeds. A
dropped site loses all its mutants; a kept mutant compiles as source too (its replacement text
is the schema's with the switch fixed). Expressions of literals alone (``1 << 20``) are never
sites: Go folds them exactly at compile time, a helper would compute them in ``int``. What
remains different from the source mutant: an untyped constant expression that mixes named
constants (``K * 4 / 8``) is computed in the inferred type at run time, not exactly — only an
intermediate overflow would tell them apart. The fresh-process check (a plain rebuild with the
mutant on disk) is the reference for every verdict.

**The switch, and what the test can reach (the trust rule).** The selected mutant is a number
(``numbers`` maps mutant ids to it; 0 runs the original) read by ``init()`` of the generated
package ``<module>/internal/req2testschema`` from **file descriptor 3**: a regular file the
judge opens read-only for the process (content ``req2test-mutant N``), read with ``pread``
and closed at once. It is no environment variable, argument or file the test can open. Go
initialises a package after everything it imports and the schema package imports only
``cmp`` and ``syscall``, every mutated production package imports it, and the test package
imports production: by the time any test-side ``init``, ``TestMain`` or step runs, fd 3 is
closed (a later ``open`` may reuse the number, but not the content). The number then lives in
the unexported ``active`` of the schema package. What can still reach it, and what closes it:

- importing the schema package and calling ``On(n)`` for every n: an import path is a string
  literal, so the judge's static screen rejects any test file that imports
  ``.../internal/req2testschema`` — complete, and Go's ``internal`` rule already keeps every
  package outside the module away;
- ``//go:linkname`` to ``req2testschema.active`` or ``unsafe`` pointer arithmetic: the screen
  rejects ``go:linkname`` and ``unsafe`` in submitted Go (``reflect`` cannot enumerate package
  variables);
- reading the process's own memory: ``/proc/self/mem`` at the address of the symbol
  ``req2testschema.active`` from ``/proc/self/exe``'s symbol table. Closed by running the test
  binary without ``/proc`` (bubblewrap without ``--proc``) and linking it with
  ``-ldflags=-s -w`` (no symbol table, no DWARF); the screen also rejects ``debug/elf``,
  ``debug/gosym``, ``syscall``, ``os.NewFile`` and paths under ``/proc`` and ``/dev/fd``;
- a test-side package initialised before the schema package (Go orders independent packages
  by import path): only a package that imports no mutated production could be, and it could
  only read fd 3 through ``syscall`` or ``os.NewFile``, both screened. The test area of a
  Godog project is one package that imports production.
- The binary holds the table of sites and numbers (it is the switch), so the code of every
  mutant is in it, but which one runs is only the number above.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter

from bench.frameworks.godog.language import AUG_ASSIGN, Site, file_sites, site_mutants
from bench.frameworks.godog.syntax import go_parser, node_bytes
from bench.frameworks.godog.toolchain import GoToolchain, module_path
from bench.model import Mutant

SCHEMA_DIR = "internal/req2testschema"
SCHEMA_NAME = "req2testSchema"  # the import name in mutated files (unlikely to collide)
FD = 3
MAGIC = "req2test-mutant"
_ERROR = re.compile(r"^(?P<file>[^\s:]+\.go):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>.*)$")
_CMP = {"<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge"}
_ARITH = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Quo", "%": "Rem", "&": "And", "|": "Or", "<<": "Shl",
          ">>": "Shr"}

RUNTIME = '''// Code generated by req2test: the mutant switch of a mutant schemata build. DO NOT EDIT.

// Package req2testschema selects the one mutant a process runs (0: none). The number is read
// from file descriptor 3 before any code that imports production runs, and fd 3 is closed.
package req2testschema

import (
	"cmp"
	"syscall"
)

type number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

type integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

var active int32

func init() {
	var st syscall.Stat_t
	if syscall.Fstat(@FD@, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return
	}
	var buf [64]byte
	n, err := syscall.Pread(@FD@, buf[:], 0)
	magic := "@MAGIC@ "
	if err != nil || n <= len(magic) || string(buf[:len(magic)]) != magic {
		return // not ours: left open and unread
	}
	syscall.Close(@FD@)
	var v int32
	for _, c := range buf[len(magic):n] {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int32(c-'0')
	}
	active = v
}

// On reports whether mutant n is the one this process runs.
func On(n int32) bool { return active == n }

func Lt[T cmp.Ordered](b, n int32, x, y T) bool {
	switch active {
	case b:
		return x <= y
	case n:
		return x >= y
	}
	return x < y
}

func Le[T cmp.Ordered](b, n int32, x, y T) bool {
	switch active {
	case b:
		return x < y
	case n:
		return x > y
	}
	return x <= y
}

func Gt[T cmp.Ordered](b, n int32, x, y T) bool {
	switch active {
	case b:
		return x >= y
	case n:
		return x <= y
	}
	return x > y
}

func Ge[T cmp.Ordered](b, n int32, x, y T) bool {
	switch active {
	case b:
		return x > y
	case n:
		return x < y
	}
	return x >= y
}

func Add[T number](n int32, x, y T) T {
	if active == n {
		return x - y
	}
	return x + y
}

func Sub[T number](n int32, x, y T) T {
	if active == n {
		return x + y
	}
	return x - y
}

func Mul[T number](n int32, x, y T) T {
	if active == n {
		return x / y
	}
	return x * y
}

func Quo[T number](n int32, x, y T) T {
	if active == n {
		return x * y
	}
	return x / y
}

func Rem[T integer](n int32, x, y T) T {
	if active == n {
		return x * y
	}
	return x % y
}

func And[T integer](n int32, x, y T) T {
	if active == n {
		return x | y
	}
	return x & y
}

func Or[T integer](n int32, x, y T) T {
	if active == n {
		return x & y
	}
	return x | y
}

func Shl[T, U integer](n int32, x T, s U) T {
	if active == n {
		return x >> s
	}
	return x << s
}

func Shr[T, U integer](n int32, x T, s U) T {
	if active == n {
		return x << s
	}
	return x >> s
}

func Neg[T number](n int32, x T) T {
	if active == n {
		return x
	}
	return -x
}

func C[T any](n int32, x, y T) T {
	if active == n {
		return y
	}
	return x
}

func Eq[T comparable](n int32, x, y T) bool { return (x == y) != (active == n) }

func Ne[T comparable](n int32, x, y T) bool { return (x != y) != (active == n) }
'''.replace("@FD@", str(FD)).replace("@MAGIC@", MAGIC)

# A binary operator whose right operand is a mutated literal (``x == 0``, ``n + 1``): the
# literal's mutant is an argument of the operator's helper, so the literal takes the other
# operand's type as it does in Go (``C(k, 0, 1)`` alone would be an int, and ``b == 0`` with a
# uint64 b would not compile). ``<Op>K(numbers..., k, x, y, y2)`` runs ``<Op>`` on y2 when k is
# selected.
_K_HELPERS = [("Lt", "cmp.Ordered", "b, n int32", "b, n", "bool"), ("Le", "cmp.Ordered", "b, n int32", "b, n", "bool"),
              ("Gt", "cmp.Ordered", "b, n int32", "b, n", "bool"), ("Ge", "cmp.Ordered", "b, n int32", "b, n", "bool"),
              ("Eq", "comparable", "n int32", "n", "bool"), ("Ne", "comparable", "n int32", "n", "bool"),
              *((name, "integer" if name in ("Rem", "And", "Or") else "number", "n int32", "n", "T")
                for name in ("Add", "Sub", "Mul", "Quo", "Rem", "And", "Or"))]
RUNTIME += "".join(f"""
func {name}K[T {constraint}]({params}, k int32, x, y, y2 T) {result} {{
	if active == k {{
		y = y2
	}}
	return {name}({args}, x, y)
}}
""" for name, constraint, params, args, result in _K_HELPERS)


class SchemataError(Exception):
    """The schemata build failed for a reason no site explains; one line."""


@dataclass
class Schemata:
    """A schemata build's layout: which mutants it holds and the number that selects each."""

    numbers: dict[str, int]  # mutant id -> the number fd 3 selects it with (1..)
    dropped: dict[str, str] = field(default_factory=dict)  # mutant id -> the compile error that dropped it
    builds: int = 0  # go build invocations until it compiled
    seconds: float = 0.0  # their wall time


@dataclass
class _Rendered:
    text: str
    spans: list[tuple[int, int, int]]  # (start byte, end byte, site index or -1 - merged literal's index)


def selection(number: int) -> bytes:
    """The content of the file a process gets as fd 3 to run mutant ``number``."""
    return f"{MAGIC} {number}\n".encode()


def _key(node: tree_sitter.Node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def render_file(data: bytes, sites: list[Site], numbers: list[list[int]], import_line: str) -> _Rendered:
    """The file with every site of ``sites`` switched (``numbers[i]``: the numbers of site i's
    mutants, -1 for one not in the build); sites with no number stay as written."""
    tree = go_parser().parse(data)
    # keyed by span and type: ``sites`` come from another parse of the same bytes
    live = {_key(site.node): i for i, site in enumerate(sites) if any(n > 0 for n in numbers[i])}
    spans: list[tuple[int, int, int]] = []
    out: list[bytes] = []
    length = 0

    def emit(text: bytes) -> None:
        nonlocal length
        out.append(text)
        length += len(text)

    def copy(node: tree_sitter.Node) -> None:
        """The node's text with every site under it switched."""
        index = live.get(_key(node))
        if index is not None:
            start = length
            merged.clear()
            _switch(node, sites[index], numbers[index])
            spans.append((start, length, index))
            # a merged literal shares its operator's span, marked by a negative index: an error
            # there drops the operator's site, and the literal is written on its own next round
            spans.extend((start, length, -1 - i) for i in merged)
            merged.clear()
            return
        pos = node.start_byte
        for child in node.children:
            emit(data[pos:child.start_byte])
            copy(child)
            pos = child.end_byte
        emit(data[pos:node.end_byte])

    merged: list[int] = []  # literal sites written as part of the current site

    def merged_literal(node: tree_sitter.Node | None) -> tuple[int, Site, list[int]] | None:
        """A live literal site at ``node`` (a binary operator's right operand)."""
        index = live.get(_key(node)) if node is not None else None
        if index is None or sites[index].kind != "literal":
            return None
        return index, sites[index], numbers[index]

    def assign(node: tree_sitter.Node, left: tree_sitter.Node, right: tree_sitter.Node, op: str,
               value: bytes | None) -> None:
        """``left op right``, right as ``value`` when given."""
        operator = node.child_by_field_name("operator")
        assert operator is not None
        copy(left)
        emit(data[left.end_byte:operator.start_byte] + op.encode() + data[operator.end_byte:right.start_byte])
        if value is None:
            copy(right)
        else:
            emit(value)

    def between(node: tree_sitter.Node, left: tree_sitter.Node, right: tree_sitter.Node, sep: bytes,
                raw_right: bool = False) -> None:
        """left, the text up to right with the operator replaced by ``sep``, right (as written
        when it is a merged literal)."""
        op = node.child_by_field_name("operator")
        assert op is not None
        copy(left)
        emit(data[left.end_byte:op.start_byte] + sep + data[op.end_byte:right.start_byte])
        if raw_right:
            emit(data[right.start_byte:right.end_byte])
        else:
            copy(right)

    def _switch(node: tree_sitter.Node, site: Site, nums: list[int]) -> None:
        s = SCHEMA_NAME
        # BINARY_FIELDS: None unless the site is a binary expression (binary, logical) or an assignment
        # (aug_assign), where tree-sitter-go's grammar requires both (a missing one is a MISSING node)
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        literal = merged_literal(right) if site.kind == "binary" and site.op not in ("<<", ">>") else None
        if literal is not None:
            assert left is not None and right is not None  # BINARY_FIELDS
            index, lit_site, lit_nums = literal
            name = _CMP.get(site.op) or _ARITH.get(site.op) or ("Eq" if site.op == "==" else "Ne")
            emit(f"{s}.{name}K({', '.join(map(str, nums))}, {lit_nums[0]}, ".encode())
            between(node, left, right, b",", raw_right=True)
            emit(b", " + lit_site.mutants[0][1].encode() + b")")
            merged.append(index)
        elif site.kind == "binary" and site.op in _CMP:
            assert left is not None and right is not None  # BINARY_FIELDS
            boundary, negate = nums
            emit(f"{s}.{_CMP[site.op]}({boundary}, {negate}, ".encode())
            between(node, left, right, b",")
            emit(b")")
        elif site.kind == "binary" and site.op in ("==", "!="):
            emit(b"((")
            copy_plain(node)
            emit(f") != {s}.On({nums[0]}))".encode())
        elif site.kind == "binary":
            assert left is not None and right is not None  # BINARY_FIELDS
            emit(f"{s}.{_ARITH[site.op]}({nums[0]}, ".encode())
            between(node, left, right, b",")
            emit(b")")
        elif site.kind == "logical":
            assert left is not None and right is not None  # BINARY_FIELDS
            test = "==" if site.op == "&&" else "!="
            emit(b"func() bool { req2testL := ")
            copy(left)
            emit(f"; if req2testL {test} {s}.On({nums[0]}) {{ return req2testL }}; return (".encode())
            op = node.child_by_field_name("operator")
            assert op is not None  # a logical site's operator was found when it was made (language._binary)
            # the text after the operator may hold a line break: after "(" Go inserts no semicolon
            emit(data[op.end_byte:right.start_byte])
            copy(right)
            emit(b") }()")
        elif site.kind in ("not", "bool"):
            emit(b"(")
            copy_plain(node)
            emit(f" != {s}.On({nums[0]}))".encode())
        elif site.kind == "neg":
            operand = node.child_by_field_name("operand")
            assert operand is not None  # a neg site's operand was found when it was made (language._site)
            emit(f"{s}.Neg({nums[0]}, ".encode())
            copy(operand)
            emit(b")")
        elif site.kind == "literal":
            emit(f"{s}.C({nums[0]}, ".encode() + node_bytes(node) + b", " + site.mutants[0][1].encode() + b")")
        elif site.kind == "aug_assign":
            assert left is not None and right is not None  # BINARY_FIELDS
            literal = merged_literal(right.named_children[0]) if len(right.named_children) == 1 else None
            # x += 1: the literal's mutant is a branch of its own (x += 2), so it stays typed as x
            value = None if literal is None else data[right.start_byte:right.end_byte]
            emit(f"if {s}.On({nums[0]}) {{ ".encode())
            assign(node, left, right, AUG_ASSIGN[site.op], value)
            if literal is not None:
                index, lit_site, lit_nums = literal
                emit(f" }} else if {s}.On({lit_nums[0]}) {{ ".encode())
                assign(node, left, right, site.op, lit_site.mutants[0][1].encode())
                merged.append(index)
            emit(b" } else { ")
            assign(node, left, right, site.op, value)
            emit(b" }")
        elif site.kind == "return":
            emit(f"if {s}.On({nums[0]}) {{ return {site.zero} }}; ".encode())
            copy_plain(node)
        elif site.kind == "call":
            emit(f"if !{s}.On({nums[0]}) {{ ".encode())
            copy_plain(node)
            emit(b" }")
        else:
            raise AssertionError(site.kind)

    def copy_plain(node: tree_sitter.Node) -> None:
        """The node itself as written, sites beneath it switched."""
        pos = node.start_byte
        for child in node.children:
            emit(data[pos:child.start_byte])
            copy(child)
            pos = child.end_byte
        emit(data[pos:node.end_byte])

    root = tree.root_node
    package = next((c for c in root.named_children if c.type == "package_clause"), None)
    if live and package is not None:  # the import joins the package clause's line: no line moves
        live_package = package.id
        pos = 0
        for child in root.children:
            emit(data[pos:child.start_byte])
            copy(child)
            if child.id == live_package:
                emit(f"; import {SCHEMA_NAME} {import_line}".encode())
            pos = child.end_byte
        emit(data[pos:])
    else:
        emit(data[:root.start_byte])
        copy(root)
        emit(data[root.end_byte:])
    return _Rendered(b"".join(out).decode("utf-8"), spans)


def write_schemata(tree: Path, mutants: Iterable[Mutant], exclude: frozenset[str] = frozenset(),
                   order_seed: int | None = None) -> tuple[dict[str, int], dict[str, tuple[list[list[str]], _Rendered]]]:
    """Write the schemata of ``mutants`` (minus ``exclude``) into ``tree`` — a copy of the
    project the caller owns; each rewritten file is a new inode, so a hard-linked copy never
    changes the original — and the switch package. Returns the numbers and, per file, its
    sites' mutant ids and its rendering (for error mapping). ``order_seed``: the numbers are a
    permutation drawn with it (a judge session's own), else in source order."""
    by_file: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        by_file.setdefault(mutant.file, []).append(mutant)
    ordered = sorted((m for ms in by_file.values() for m in ms), key=lambda m: (m.file, m.line, m.col, m.id))
    if order_seed is not None:
        random.Random(order_seed).shuffle(ordered)
    numbers = {m.id: i + 1 for i, m in enumerate(ordered) if m.id not in exclude}
    import_line = f'"{module_path(tree)}/{SCHEMA_DIR}"'
    rendered: dict[str, tuple[list[list[str]], _Rendered]] = {}
    for rel in sorted(by_file):
        path = tree / rel
        data = path.read_bytes()
        sites = file_sites(data)
        site_ids = [[m.id for m in site_mutants(rel, data, site)] for site in sites]
        site_numbers = [[numbers.get(i, -1) for i in ids] for ids in site_ids]
        result = render_file(data, sites, site_numbers, import_line)
        _replace(path, result.text)
        rendered[rel] = (site_ids, result)
    schema = tree / SCHEMA_DIR
    schema.mkdir(parents=True, exist_ok=True)
    _replace(schema / "schema.go", RUNTIME)
    return numbers, rendered


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".req2test-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def go_env() -> dict[str, str]:
    """The environment of the schemata builds: the toolchain's (``toolchain.GoToolchain.env``),
    so they share the module and build caches of the suite's test binary."""
    return GoToolchain.find().env()


def compile_schemata(tree: Path, mutants: list[Mutant], original: Path, max_builds: int = 30, *,
                     go: str = "go", env: dict[str, str] | None = None,
                     flags: tuple[str, ...] = ("-trimpath", "-buildvcs=false"),
                     order_seed: int | None = None) -> Schemata:
    """Write and build the schemata of ``mutants`` in ``tree``, dropping the sites the
    compiler refuses until the production packages build; ``original`` holds the unmodified
    files (each round rewrites from them). ``go``/``env`` are the toolchain's (default: ``go``
    on PATH with ``go_env()``); ``flags`` should be the test binary's own, so its build reuses
    the dependency packages this one cached."""
    sources = {m.file for m in mutants}
    packages = sorted({"./" + str(Path(f).parent.as_posix()) for f in sources})
    dropped: dict[str, str] = {}
    result = Schemata(numbers={})
    started = time.monotonic()
    while True:
        for rel in sources:
            _replace(tree / rel, (original / rel).read_text(encoding="utf-8"))
        numbers, rendered = write_schemata(tree, mutants, frozenset(dropped), order_seed)
        proc = subprocess.run([go, "build", *flags, "-gcflags=-e", *packages], cwd=tree, env=env or go_env(),
                              capture_output=True, text=True, check=False)
        result.builds += 1
        if proc.returncode == 0:
            result.numbers, result.dropped = numbers, dropped
            result.seconds = time.monotonic() - started
            return result
        newly = _blame(proc.stderr, rendered, tree, numbers)
        if not newly:
            raise SchemataError("the schemata build failed outside every mutation site: "
                                + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        dropped.update(newly)
        if result.builds >= max_builds:
            raise SchemataError(f"the schemata build still fails after {max_builds} builds")


def _blame(stderr: str, rendered: dict[str, tuple[list[list[str]], _Rendered]], tree: Path,
           numbers: dict[str, int]) -> dict[str, str]:
    """Mutant id -> error, for the innermost site under each compile error."""
    blamed: dict[str, str] = {}
    for line in stderr.splitlines():
        match = _ERROR.match(line.strip())
        if not match:
            continue
        path = (tree / match["file"]).resolve()
        try:
            rel = path.relative_to(tree.resolve()).as_posix()
        except ValueError:
            continue
        if rel not in rendered:
            continue
        site_ids, result = rendered[rel]
        data = result.text.encode("utf-8")
        lineno = int(match["line"])
        starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
        if lineno > len(starts):
            continue
        # (an error Go reports without a column, as some instantiation errors are: the whole line)
        offset = starts[lineno - 1] + int(match["col"]) - 1 if match["col"] else -1
        inside = [s for s in result.spans if s[0] <= offset < s[1]]
        if inside:
            size = min(s[1] - s[0] for s in inside)  # the innermost site
            chosen = [s[2] for s in inside if s[1] - s[0] == size and s[2] >= 0]
        else:  # the error is beside the sites (e.g. at the end of a function): all on its line
            line_end = starts[lineno] if lineno < len(starts) else len(data)
            chosen = [s[2] for s in result.spans if s[0] < line_end and s[1] > starts[lineno - 1] and s[2] >= 0]
        for index in chosen:
            for mutant_id in site_ids[index]:
                if mutant_id in numbers:
                    blamed.setdefault(mutant_id, f"{rel}:{lineno}: {match['msg']}")
    return blamed



BASH = "/bin/bash"


def launch(argv: list[str], fd: int | None, memory_limit: int | None = None) -> tuple[list[str], dict[str, object]]:
    """The command and ``subprocess`` keyword arguments that start ``argv`` with ``fd`` (an open
    selection file, see ``selection``) as its fd 3 and nothing else of ours: bash moves the
    file to 3 (``3<&N N<&-``) and ``exec``s the binary, which therefore sees only its own argv.
    ``close_fds`` stays on (``pass_fds`` keeps the file alone open across ``exec``), and nothing
    runs in the forked child before ``exec`` (no ``preexec_fn``: the callers are threads).
    ``memory_limit``: the address space in bytes (``ulimit -v``): a mutant that allocates without
    end fails at it instead of taking the machine's memory before its timeout (Go reserves no
    large address range up front)."""
    script = []
    if memory_limit is not None:
        script.append(f"ulimit -v {max(1, memory_limit // 1024)}")
    redirect = f" {FD}<&{fd} {fd}<&-" if fd is not None and fd != FD else ""
    script.append('exec "$0" "$@"' + redirect)
    # bash, not sh: dash refuses a descriptor above 9 in a redirection ("Bad fd number")
    return [BASH, "-c", "; ".join(script), *argv], {"pass_fds": (fd,) if fd is not None else ()}
