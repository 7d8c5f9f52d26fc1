"""A behaviour-preserving rewrite of JavaScript/TypeScript production, new for every judge session.

Why: a test that tells a mutant from the original by anything but behaviour — a function's
text (``fn.toString()``, a template literal ``${fn}``), the production file read as data, a
hash of it — compares what it sees with a copy of the *shipped* source it embedded. The judge
never shows the shipped source: each session runs production rewritten with a fresh seed, so
such a comparison already fails the test's own clean run, and the runs that stand where null
runs stood are equivalent variants (``equivalents``), so a comparison made modulo this rewrite
still "kills" a variant (``tampering``).

What is inserted, found with tree-sitter (never by running the code), and never a line break:

- in every function with a block body (declarations, expressions, arrows, methods,
  constructors, class static blocks), before its first statement after the directive
  prologue (``'use strict'`` stays a directive) — after ``super(...)`` in a constructor that
  calls it, and not at all where ``super`` is called in a nested statement — a declaration of a
  fresh name, ``let <name> = <constant>;`` or ``const …``, and at a few other statements of
  its blocks too; an empty body gets it before its ``}``. A declaration, not an expression
  statement: tsx (esbuild) drops ``void 0;``-like statements from the TypeScript it compiles,
  so ``fn.toString()`` of a TypeScript function would show nothing, while it keeps an unused
  ``let``. Only statements of a statement block are prefixed (never the body of an ``if``
  without braces), and what precedes the insertion always ended its statement (a ``;``, a
  ``{``/``}``, or a line break before a statement that begins its line), so automatic semicolon
  insertion reads every other statement as before;
- in an arrow function with an expression body and parenthesised parameters without a rest
  parameter, a last parameter ``<name> = <constant>`` (a parameter with a default counts
  neither in ``fn.length`` nor as an argument; an expression body has no directive a
  non-simple parameter list could break);
- one line at the end of the file, ``let <name> = <constant>;`` (the file's hash changes even
  without functions).

A fresh name is one no identifier of the file uses, so nothing can refer to it. A rewrite that
tree-sitter cannot parse as cleanly as the original loses the insertions that broke it; a
file that does not parse cleanly to begin with is left as it is.

The rewrite never moves a line (``bench.mutation.positions``): every insertion is recorded at
its (line, column) of the shipped file, and a Stryker mutant recorded against the shipped file
applies to the rewritten one at ``PositionMap.shift``'s span (``apply_mutant``). An insertion
strictly inside a mutant's span (e.g. a whole body replaced by ``{}``) goes with the span; one
at its start stays before it. Left as shipped: an arrow ``x => expr`` whose one parameter has
no parentheses (no insertion there survives both tsx and the mutant that replaces the whole
arrow), and module-level statements.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from functools import lru_cache

from bench.frameworks.cucumber_js.declarations import FUNCTION_NODES
from bench.model import Mutant
from bench.mutation.positions import PositionMap

_WORDS = ("acc", "aux", "base", "buf", "cur", "delta", "edge", "flag", "head", "idx", "item", "key", "last",
          "mark", "memo", "mode", "node", "part", "pos", "prev", "ref", "slot", "span", "step", "tag", "tail",
          "tmp", "unit", "val", "width", "count", "limit", "seen", "size", "spare", "state")
# words a fresh name must never be (reserved words, and what would read as one)
_RESERVED = {"let", "const", "var", "static", "yield", "await", "async", "of", "in", "new", "this", "super", "null",
             "true", "false", "undefined", "arguments", "eval", "enum", "type", "interface", "package", "private",
             "protected", "public", "implements"}
TYPESCRIPT_SUFFIXES = (".ts", ".mts", ".cts", ".tsx")
EXTRA_SHARE = 0.2  # other statements of a function's blocks that get a declaration too


@dataclass(frozen=True)
class DiversifiedFile:
    text: str
    positions: PositionMap


@lru_cache(maxsize=4)
def _parser(kind: str):
    import tree_sitter

    if kind == "tsx":
        import tree_sitter_typescript

        return tree_sitter.Parser(tree_sitter.Language(tree_sitter_typescript.language_tsx()))
    from bench.frameworks.cucumber_js.testside import js_parser

    return js_parser(kind == "ts")


def parse(path: str, text: str):
    """tree-sitter's tree of ``text`` with the grammar ``path``'s suffix asks for."""
    kind = "tsx" if path.endswith(".tsx") else "ts" if path.endswith(TYPESCRIPT_SUFFIXES) else "js"
    return _parser(kind).parse(text.encode("utf-8"))


def error_count(tree) -> int:
    """ERROR and MISSING nodes of a tree (0 for a file that parses cleanly)."""
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


class CharColumns:
    """tree-sitter's byte columns as the character columns mutants use."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self._ascii = text.isascii()

    def column(self, point: tuple[int, int]) -> int:
        row, byte_col = point
        if self._ascii or row >= len(self.lines):
            return byte_col
        return len(self.lines[row].encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def identifier_names(text: str) -> set[str]:
    """Every identifier-like word of a source (in code, strings and comments alike: a superset
    of the names the code uses, which is what a fresh name must avoid)."""
    return set(re.findall(r"[A-Za-z_$][\w$]*", text))


class _Names:
    """Fresh names and constants, drawn from the session's generator."""

    def __init__(self, rng: random.Random, taken: set[str]) -> None:
        self.rng = rng
        self.taken = set(taken) | _RESERVED

    def name(self) -> str:
        while True:
            word = self.rng.choice(_WORDS)
            candidate = self.rng.choice((f"{word}{self.rng.randrange(2, 99)}", f"_{word}",
                                         f"{word}_{self.rng.choice('abcdefghkmnpqrstuvwxyz')}",
                                         f"{word}{self.rng.choice(('A', 'B', 'N', 'X', 'Q'))}{self.rng.randrange(10)}"))
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate

    def constant(self) -> str:
        kind = self.rng.randrange(5)
        if kind == 0:
            return hex(self.rng.randrange(16, 1 << 16))
        if kind == 1:
            return str(self.rng.randrange(1, 100000))
        if kind == 2:
            quote = self.rng.choice("'\"")
            return quote + "".join(self.rng.choice("abcdefghijkmnopqrstuvwxyz") for _ in range(self.rng.randrange(1, 6))) + quote
        if kind == 3:
            return f"{self.rng.randrange(0, 1000)}.{self.rng.randrange(1, 100)}"
        return self.rng.choice(("true", "false", "null"))

    def declaration(self) -> str:
        keyword = self.rng.choice(("let", "const", "let"))
        return f"{keyword} {self.name()} = {self.constant()}; "


def _is_directive(statement) -> bool:
    if statement.type != "expression_statement":
        return False
    named = statement.named_children
    return len(named) == 1 and named[0].type == "string"


def _super_statement(statement) -> bool:
    if statement.type != "expression_statement" or not statement.named_children:
        return False
    call = statement.named_children[0]
    function = call.child_by_field_name("function") if call.type == "call_expression" else None
    return function is not None and function.type == "super"


def _calls_super(node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "super":
            return True
        if current is not node and current.type in FUNCTION_NODES and current.type != "arrow_function":
            continue  # a nested function's super is its own
        stack.extend(current.children)
    return False


def _statements(block) -> list:
    return [child for child in block.named_children if child.type != "comment"]


def _inner_blocks(body) -> list:
    """The statement blocks of a function body, the body included, without nested functions'."""
    found = []
    stack = [body]
    while stack:
        node = stack.pop()
        if node is not body and (node.type in FUNCTION_NODES or node.type in ("class_static_block", "class_body",
                                                                             "class", "class_declaration")):
            continue
        if node.type == "statement_block":
            found.append(node)
        stack.extend(node.children)
    return found


class _Planner:
    def __init__(self, path: str, text: str, tree, rng: random.Random) -> None:
        self.path, self.text, self.tree, self.rng = path, text, tree, rng
        self.columns = CharColumns(text)
        self.names = _Names(rng, identifier_names(text))
        self.inserts: dict[tuple[int, int], str] = {}  # (0-based row, char column) -> text

    def at(self, point: tuple[int, int], text: str) -> None:
        key = (point[0], self.columns.column(point))
        if key not in self.inserts:
            self.inserts[key] = text

    def plan(self) -> None:
        stack = [self.tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in FUNCTION_NODES or node.type == "class_static_block":
                body = node.child_by_field_name("body")
                if body is not None and body.type == "statement_block":
                    self._function_body(node, body)
                elif body is not None and node.type == "arrow_function":
                    self._expression_arrow(node)
            stack.extend(node.children)

    def _function_body(self, function, body) -> None:
        statements = _statements(body)
        first = 0
        while first < len(statements) and _is_directive(statements[first]):
            first += 1
        after = -1  # statements must start after this byte to be prefixed
        name = function.child_by_field_name("name")
        if function.type == "method_definition" and name is not None and name.text == b"constructor" \
                and _calls_super(body):
            supers = [k for k, s in enumerate(statements) if _super_statement(s)]
            if not supers:
                return  # super is called in a nested statement: leave this constructor as it is
            first = max(first, supers[0] + 1)
            after = statements[supers[0]].end_byte
        if first < len(statements):
            self.at(statements[first].start_point, self.names.declaration())
        else:
            closing = body.children[-1]
            before = [c for c in body.children[:-1] if c.type != "comment" or c.text.startswith(b"//")]
            previous = before[-1] if before else None
            if closing.type == "}" and previous is not None and (
                    previous.type == "{" or previous.end_point[0] < closing.start_point[0]
                    or previous.text.endswith((b";", b"}"))):
                self.at(closing.start_point, self.names.declaration())
        skipped = {s.start_byte for s in statements[:first]}  # the directives, what precedes super(...)
        for block in _inner_blocks(body):
            for statement in _statements(block):
                if statement.start_byte in skipped or statement.start_byte <= after:
                    continue
                if self.rng.random() < EXTRA_SHARE:
                    self.at(statement.start_point, self.names.declaration())

    def _expression_arrow(self, arrow) -> None:
        parameters = arrow.child_by_field_name("parameters")
        if parameters is None or parameters.type != "formal_parameters":
            return  # ``x => expr``: left as shipped
        if any(p.text.lstrip().startswith(b"...") or p.type == "rest_pattern" for p in parameters.named_children):
            return
        closing = parameters.children[-1]
        if closing.type != ")":
            return
        previous = parameters.children[-2] if len(parameters.children) >= 2 else None
        separator = "" if previous is None or previous.type in ("(", ",") else ", "
        self.at(closing.start_point, f"{separator}{self.names.name()} = {self.names.constant()}")


def _apply_inserts(text: str, inserts: dict[tuple[int, int], str]) -> str:
    lines = text.splitlines(keepends=True)
    by_row: dict[int, list[tuple[int, str]]] = {}
    for (row, col), piece in inserts.items():
        by_row.setdefault(row, []).append((col, piece))
    for row, pieces in by_row.items():
        line = lines[row]
        for col, piece in sorted(pieces, reverse=True):
            line = line[:col] + piece + line[col:]
        lines[row] = line
    return "".join(lines)


def session_seed(seed: int, path: str) -> int:
    """The seed of one file in a session (files do not share their draws)."""
    return int.from_bytes(hashlib.sha256(f"{seed}\0{path}".encode()).digest()[:8], "big")


def diversify_source(path: str, text: str, seed: int) -> DiversifiedFile:
    """``text`` (the file at ``path``) rewritten with ``seed``; unchanged, with an empty map,
    when it does not parse cleanly."""
    tree = parse(path, text)
    if error_count(tree) or not text.strip():
        return DiversifiedFile(text, PositionMap())
    rng = random.Random(session_seed(seed, path))
    planner = _Planner(path, text, tree, rng)
    planner.plan()
    inserts = dict(planner.inserts)
    rewritten = _apply_inserts(text, inserts)
    tail = ("" if rewritten.endswith("\n") else "\n") + planner.names.declaration().rstrip() + "\n"
    if error_count(parse(path, rewritten + tail)):
        kept: dict[tuple[int, int], str] = {}
        for key in sorted(inserts):  # one at a time: keep what still parses cleanly
            trial = {**kept, key: inserts[key]}
            if not error_count(parse(path, _apply_inserts(text, trial))):
                kept = trial
        inserts = kept
        rewritten = _apply_inserts(text, inserts)
        if not error_count(parse(path, rewritten + tail)):
            rewritten += tail
    else:
        rewritten += tail
    positions = PositionMap(inserts={row + 1: sorted((col, len(piece)) for (r, col), piece in inserts.items() if r == row)
                                     for row in sorted({r for r, _ in inserts})})
    return DiversifiedFile(rewritten, positions)


def diversify_files(sources: dict[str, str], seed: int) -> dict[str, DiversifiedFile]:
    return {path: diversify_source(path, text, seed) for path, text in sorted(sources.items())}


def _offset(lines: list[str], line: int, column: int) -> int:
    if not 1 <= line <= len(lines):
        raise ValueError(f"line {line} is outside the file")
    return sum(len(x) for x in lines[:line - 1]) + column


def apply_mutant(shipped: str, rewritten: str, positions: PositionMap, mutant: Mutant) -> str:
    """``mutant`` (recorded against ``shipped``) applied to ``rewritten`` at its shifted span."""
    lines = shipped.splitlines(keepends=True)
    if shipped[_offset(lines, mutant.line, mutant.col):_offset(lines, mutant.end_line, mutant.end_col)] \
            != mutant.original:
        raise ValueError(f"mutant {mutant.id} does not fit {mutant.file}:{mutant.line}")
    moved = positions.shift(mutant)
    new_lines = rewritten.splitlines(keepends=True)
    start = _offset(new_lines, moved.line, moved.col)
    end = _offset(new_lines, moved.end_line, moved.end_col)
    inside = sum(length for line, spans in positions.inserts.items() for at, length in spans
                 if (mutant.line, mutant.col) < (line, at) < (mutant.end_line, mutant.end_col))
    if end - start != len(mutant.original) + inside:
        raise ValueError(f"mutant {mutant.id} does not fit the rewritten {mutant.file}:{mutant.line}")
    return rewritten[:start] + mutant.replacement + rewritten[end:]
