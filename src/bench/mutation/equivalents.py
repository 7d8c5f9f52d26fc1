"""Equivalent variants: real mutation sites, rewritten so that behaviour cannot change.

The verdict process mixes these into every batch where it used to mix "null" runs (the
original code swapped in again). A null is identical to the original, so a test that compares
code with the original tells it from a mutant at no risk; an equivalent variant is a change at
a site where the mutant generator also changes something, in the same families of operators
(comparisons, boolean operators, negation, constants), swapped in through the same machinery,
so a test that reacts to *changed code* rather than to *changed behaviour* fails it — and a
failure of a behaviour-preserving variant is ``tampering``, never a kill.

Families (each keeps evaluation order and the number of evaluations of anything that could
have a side effect):

- ``mirror``: ``a < b`` → ``b > a`` (and ``<=``/``>=``, ``==``, ``!=``, ``is``, ``is not``),
  only when both operands are names, constants or attribute chains on a name;
- ``select``: ``a and b`` → ``(b) if a else a``, ``a or b`` → ``a if a else (b)``, ``a`` a name;
- ``negation``: ``not x`` → ``(False if (x) else True)``;
- ``constant``: an int or str literal ``k`` in a function body → ``int(k)`` / ``str(k)``.

A candidate is kept only if its scope still compiles and its code differs from the original's
in bytecode or constants (CPython folds some rewrites away; those would be nulls again).
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from collections.abc import Iterator

from bench import stopping
from bench.model import Mutant
from bench.mutation.generate import _functions, _header_span, _scope, _SourceFile, body_without_docstring, scope_source

_MIRROR = {ast.Lt: ">", ast.LtE: ">=", ast.Gt: "<", ast.GtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not"}


def equivalent_variants(rel: str, text: str) -> list[Mutant]:
    """Every equivalent variant of one production file, in a deterministic order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    src = _SourceFile(rel, text)
    # ``int(k)``/``str(k)`` only where nothing in the module rebinds those names
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | \
        {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | \
        {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    constants_ok = not bound & {"int", "str"}
    out: list[Mutant] = []
    seen: set[str] = set()
    originals: dict[tuple[int, int], tuple | None] = {}
    for function, qualname, top_level in _functions(tree):
        stopping.check()  # seconds of work on a large file: an interrupted run stops here
        for node, family, replacement, header in _candidates(function, src):
            if family == "constant" and not constants_ok:
                continue
            mutant = _variant(src, node, family, replacement, qualname, function, header, _scope(top_level))
            if mutant is None or mutant.id in seen:
                continue
            if _changes_code(src, mutant, originals):
                seen.add(mutant.id)
                out.append(mutant)
    return out


def _candidates(function: ast.FunctionDef | ast.AsyncFunctionDef,
                src: _SourceFile) -> Iterator[tuple[ast.AST, str, str, tuple[int, int]]]:
    for stmt in body_without_docstring(function):
        for inner in _statements(stmt):
            header = _header_span(inner)
            for expr in _expressions(inner):
                for node in _walk(expr):
                    found = _rewrite(node, src)
                    if found is not None:
                        yield node, found[0], found[1], header


def _statements(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """The statement and those nested in it (never a nested function's decorators/defaults:
    the nested body is walked, as the mutant generator does)."""
    yield stmt
    for name in ("body", "orelse", "finalbody"):
        for child in getattr(stmt, name, None) or []:
            yield from _statements(child)
    for handler in getattr(stmt, "handlers", None) or []:
        for child in handler.body:
            yield from _statements(child)
    for case in getattr(stmt, "cases", None) or []:
        for child in case.body:
            yield from _statements(child)


def _expressions(stmt: ast.stmt) -> Iterator[ast.expr]:
    """The statement's own expressions: not annotations, decorators, defaults, patterns or
    nested blocks (those are statements of their own)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for field_name, value in ast.iter_fields(stmt):
        if field_name in ("annotation", "returns", "type_comment", "decorator_list", "body", "orelse",
                          "finalbody", "handlers", "cases"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.expr):
                yield child
            elif isinstance(child, ast.withitem):
                yield child.context_expr


def _walk(expr: ast.expr) -> Iterator[ast.AST]:
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.JoinedStr, ast.Lambda)):
            continue
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node)
                     if isinstance(child, (ast.expr, ast.comprehension, ast.keyword)))


def _pure(node: ast.AST) -> bool:
    """Evaluating it twice, or in the other order, cannot change anything."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)


def _rewrite(node: ast.AST, src: _SourceFile) -> tuple[str, str] | None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _MIRROR \
            and _pure(node.left) and _pure(node.comparators[0]):
        return "mirror", f"{src.segment(node.comparators[0])} {_MIRROR[type(node.ops[0])]} {src.segment(node.left)}"
    if isinstance(node, ast.BoolOp) and len(node.values) == 2 and isinstance(node.values[0], ast.Name):
        first, second = node.values[0].id, src.segment(node.values[1])
        if isinstance(node.op, ast.And):
            return "select", f"(({second}) if {first} else {first})"
        return "select", f"({first} if {first} else ({second}))"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "negation", f"(False if ({src.segment(node.operand)}) else True)"
    if isinstance(node, ast.Constant) and type(node.value) in (int, str) and src.segment(node):
        return "constant", f"{type(node.value).__name__}({src.segment(node)})"
    return None


def _variant(src: _SourceFile, node: ast.AST, family: str, replacement: str, qualname: str, function: ast.AST,
             header: tuple[int, int], scope: tuple[int, int]) -> Mutant | None:
    if getattr(node, "end_lineno", None) is None:
        return None
    line, end_line = node.lineno, node.end_lineno  # type: ignore[attr-defined]
    if end_line != line:
        return None  # one-line sites only: a multi-line rewrite would move lines
    col = src.char_col(line, node.col_offset)  # type: ignore[attr-defined]
    end_col = src.char_col(end_line, node.end_col_offset)  # type: ignore[attr-defined]
    original = src.segment(node)
    if not original or replacement == original:
        return None
    first_line = min([function.lineno] + [d.lineno for d in function.decorator_list])  # type: ignore[attr-defined]
    identity = f"{src.rel}:{line}:{col}:{end_col}:equivalent:{family}:{replacement}"
    return Mutant(id="eq-" + hashlib.sha256(identity.encode()).hexdigest()[:13], file=src.rel, line=line, col=col,
                  end_line=end_line, end_col=end_col, operator=f"equivalent_{family}", original=original,
                  replacement=replacement, function=qualname, function_line=first_line,
                  lines=list(range(min(line, header[0]), max(end_line, header[1]) + 1)), scope=scope,
                  function_end=function.end_lineno or line)  # type: ignore[attr-defined]


def _changes_code(src: _SourceFile, mutant: Mutant, originals: dict[tuple[int, int], tuple | None]) -> bool:
    """The variant's scope compiles and its code differs from the original's (the original
    scope's fingerprint computed once per scope)."""
    if mutant.scope not in originals:
        blank = mutant.model_copy(update={"replacement": mutant.original})
        try:
            originals[mutant.scope] = _fingerprint(compile(scope_source(src.text, blank), src.rel, "exec",
                                                           dont_inherit=True))
        except (SyntaxError, ValueError):
            originals[mutant.scope] = None
    before = originals[mutant.scope]
    if before is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            after = compile(scope_source(src.text, mutant), src.rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return before != _fingerprint(after)


def _fingerprint(code: object) -> tuple:
    if not hasattr(code, "co_code"):
        return (repr(code),)
    return (code.co_code, code.co_names,  # type: ignore[attr-defined]
            tuple(_fingerprint(c) for c in code.co_consts))  # type: ignore[attr-defined]
