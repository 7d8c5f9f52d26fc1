"""Our own mutant generator (stdlib ``ast``): source transformations in function bodies.

Why our own (DESIGN.md): mutmut skips every decorated function (all @property),
cosmic-ray mutates annotations. Here, only expressions inside function bodies are
mutated — never decorators, annotations, docstrings or f-string internals — and a
multi-line original is replaced by a parenthesised replacement padded with the same
number of newlines, so no line number in the file moves. That keeps every other code
object of the module identical, which lets the executor swap one function's code.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from bench.model import Mutant

GENERATOR_VERSION = "1"

OPERATOR_FAMILIES = (
    "conditional_boundary",
    "negate_conditional",
    "negation",
    "arithmetic",
    "logical",
    "constant",
    "return_value",
    "call_removal",
)

_BOUNDARY = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
_NEGATE = {ast.Eq: "!=", ast.NotEq: "==", ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<",
           ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}
_ARITH = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.FloorDiv: "*", ast.Mod: "*",
          ast.Pow: "*", ast.BitAnd: "|", ast.BitOr: "&", ast.LShift: ">>", ast.RShift: "<<"}


@dataclass(frozen=True)
class _Site:
    node: ast.AST
    operator: str
    replacement: str


class _SourceFile:
    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.byte_lines = [line.encode("utf-8") for line in self.lines]

    def char_col(self, lineno: int, byte_col: int) -> int:
        return len(self.byte_lines[lineno - 1][:byte_col].decode("utf-8", errors="replace"))

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def apply(self, line: int, col: int, end_line: int, end_col: int, replacement: str) -> str:
        before = "".join(self.lines[: line - 1]) + self.lines[line - 1][:col]
        after = self.lines[end_line - 1][end_col:] + "".join(self.lines[end_line:])
        return before + replacement + after


def generate_mutants(root: Path, production: list[str]) -> list[Mutant]:
    mutants: list[Mutant] = []
    for scope in production:
        base = root / scope
        paths = [base] if base.is_file() else sorted(base.rglob("*.py"))
        for path in paths:
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            mutants.extend(mutate_source(rel, text))
    return mutants


def mutate_source(rel: str, text: str) -> list[Mutant]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    src = _SourceFile(rel, text)
    out: list[Mutant] = []
    seen: set[str] = set()
    for function, qualname, top_level in _functions(tree):
        for site, header in _sites(function, src):
            mutant = _make(src, site, qualname, function, header, _scope(top_level))
            if mutant is None or mutant.id in seen:
                continue
            if _compiles(src, top_level, mutant):
                seen.add(mutant.id)
                out.append(mutant)
    return out


def _functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, ast.stmt]]:
    """Non-nested functions and methods (nested ones are mutated as part of them)."""

    def visit(node: ast.AST, prefix: str, top: ast.stmt | None) -> Iterator:
        for child in ast.iter_child_nodes(node):
            top_level = top or cast(ast.stmt, child)  # top is None only for the module, whose children are statements
            if isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.", top_level)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, f"{prefix}{child.name}", top_level
            elif isinstance(child, (ast.If, ast.Try, ast.With)):
                # functions defined conditionally at module/class level
                yield from visit(child, prefix, top_level)

    yield from visit(tree, "", None)


def _sites(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _SourceFile) -> Iterator[tuple[_Site, tuple[int, int]]]:
    for stmt in body_without_docstring(function):
        yield from _stmt_sites(stmt, src)


def body_without_docstring(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The function's body statements, its docstring left out (never mutated or rewritten)."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _header_span(stmt: ast.stmt) -> tuple[int, int]:
    """Lines that coverage attributes to a statement's own code (not its nested block)."""
    blocks = [getattr(stmt, name) for name in ("body", "orelse", "finalbody", "handlers") if getattr(stmt, name, None)]
    if blocks:
        first_child = min(block[0].lineno for block in blocks)
        return stmt.lineno, max(stmt.lineno, first_child - 1)
    return stmt.lineno, stmt.end_lineno or stmt.lineno


def _stmt_sites(stmt: ast.stmt, src: _SourceFile) -> Iterator[tuple[_Site, tuple[int, int]]]:
    header = _header_span(stmt)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # nested definitions: their bodies, never their decorators/annotations/defaults
        inner = list(stmt.body)
        if inner and isinstance(inner[0], ast.Expr) and isinstance(getattr(inner[0], "value", None), ast.Constant):
            inner = inner[1:]
        for child in inner:
            yield from _stmt_sites(child, src)
        return
    if isinstance(stmt, ast.Return) and stmt.value is not None and not (
            isinstance(stmt.value, ast.Constant) and stmt.value.value is None):
        yield _Site(stmt.value, "return_value", "None"), header
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        yield _Site(stmt, "call_removal", "None"), header
    if isinstance(stmt, ast.AugAssign) and type(stmt.op) in _ARITH:
        replacement = f"{src.segment(stmt.target)} {_ARITH[type(stmt.op)]}= {src.segment(stmt.value)}"
        yield _Site(stmt, "arithmetic", replacement), header
    for field_name, value in ast.iter_fields(stmt):
        if field_name in ("annotation", "returns", "type_comment", "decorator_list"):
            continue
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, ast.stmt):
                yield from _stmt_sites(child, src)
            elif isinstance(child, ast.excepthandler):
                for handler_stmt in cast(ast.ExceptHandler, child).body:  # excepthandler's only kind
                    yield from _stmt_sites(handler_stmt, src)
            elif isinstance(child, ast.expr):
                for site in _expr_sites(child, src):
                    yield site, header
            elif isinstance(child, (ast.withitem, ast.match_case, ast.comprehension, ast.keyword)):
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.stmt):
                        yield from _stmt_sites(sub, src)
                    elif isinstance(sub, ast.expr):
                        for site in _expr_sites(sub, src):
                            yield site, header


def _expr_sites(expr: ast.expr, src: _SourceFile) -> Iterator[_Site]:
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.JoinedStr, ast.Lambda)):
            continue  # f-string internals have unreliable offsets; lambdas may be annotations-free but skip
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = src.segment(node.left), src.segment(node.comparators[0]), type(node.ops[0])
            if op in _BOUNDARY:
                yield _Site(node, "conditional_boundary", f"{left} {_BOUNDARY[op]} {right}")
            if op in _NEGATE:
                yield _Site(node, "negate_conditional", f"{left} {_NEGATE[op]} {right}")
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            yield _Site(node, "arithmetic",
                        f"{src.segment(node.left)} {_ARITH[type(node.op)]} {src.segment(node.right)}")
        elif isinstance(node, ast.BoolOp):
            other = " or " if isinstance(node.op, ast.And) else " and "
            yield _Site(node, "logical", other.join(f"({src.segment(v)})" for v in node.values))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield _Site(node, "negation", f"({src.segment(node.operand)})")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            yield _Site(node, "arithmetic", f"({src.segment(node.operand)})")
        elif isinstance(node, ast.Constant):
            replacement = _constant_replacement(node.value)
            if replacement is not None:
                yield _Site(node, "constant", replacement)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                stack.append(child)
            elif isinstance(child, ast.comprehension):
                stack.extend([child.target, child.iter, *child.ifs])
            elif isinstance(child, ast.keyword):
                stack.append(child.value)


def _constant_replacement(value: object) -> str | None:
    if isinstance(value, bool):
        return "False" if value else "True"
    if isinstance(value, int):
        return "0" if value == 1 else "1" if value == 0 else repr(value + 1)
    if isinstance(value, float):
        return repr(value + 1.0)
    if isinstance(value, str):
        return '""' if value else '"mutated"'
    return None


def _scope(top_level: ast.stmt) -> tuple[int, int]:
    start = min([top_level.lineno] + [d.lineno for d in getattr(top_level, "decorator_list", [])])
    return start, top_level.end_lineno or top_level.lineno


def _make(src: _SourceFile, site: _Site, qualname: str, function: ast.AST,
          header: tuple[int, int], scope: tuple[int, int]) -> Mutant | None:
    node = site.node
    if not hasattr(node, "lineno") or node.end_lineno is None:  # type: ignore[attr-defined]
        return None
    line, end_line = node.lineno, node.end_lineno  # type: ignore[attr-defined]
    col = src.char_col(line, node.col_offset)  # type: ignore[attr-defined]
    end_col = src.char_col(end_line, node.end_col_offset)  # type: ignore[attr-defined]
    original = src.segment(node)
    replacement = site.replacement
    if not original or replacement == original:
        return None
    # no line of the file may move (the warm executor recompiles the mutated function from
    # its original line span): a multi-line original gets a parenthesised replacement padded
    # with the newlines its own text lacks; the replacement of an operator between operands
    # keeps their source text, newlines included, so only the difference is padding
    missing = (end_line - line) - replacement.count("\n")
    if missing < 0 or (end_line == line and missing != 0):
        return None  # more lines than the original: it would move the rest of the file
    if end_line > line:
        replacement = "(" + replacement + "\n" * missing + ")"
    first_line = min([function.lineno] + [d.lineno for d in function.decorator_list])  # type: ignore[attr-defined]
    identity = f"{src.rel}:{line}:{col}:{end_line}:{end_col}:{site.operator}:{replacement}"
    return Mutant(
        id=hashlib.sha256(identity.encode()).hexdigest()[:16],
        file=src.rel, line=line, col=col, end_line=end_line, end_col=end_col,
        operator=site.operator, original=original, replacement=replacement,
        function=qualname, function_line=first_line,
        lines=list(range(min(line, header[0]), max(end_line, header[1]) + 1)),
        scope=scope,
        function_end=function.end_lineno or line,  # type: ignore[attr-defined]
    )


def _compiles(src: _SourceFile, top_level: ast.stmt, mutant: Mutant) -> bool:
    """Compile the mutated top-level definition only (cheap; line numbers do not move)."""
    try:
        compile(scope_source(src.text, mutant), src.rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def scope_source(text: str, mutant: Mutant) -> str:
    """The mutated module-level statement alone, at its original line numbers."""
    mutated = apply_mutant(text, mutant).splitlines(keepends=True)
    start, end = mutant.scope
    return "\n" * (start - 1) + textwrap.dedent("".join(mutated[start - 1: end]))


def apply_mutant(text: str, mutant: Mutant) -> str:
    """The whole file with the mutant applied."""
    return _SourceFile(mutant.file, text).apply(mutant.line, mutant.col, mutant.end_line, mutant.end_col,
                                                mutant.replacement)
