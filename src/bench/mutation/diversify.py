"""A behaviour-preserving rewrite of Python production, new for every evaluation session.

Why: a test that tells a mutant from the original by anything but behaviour — comparing a
function's source text, bytecode or code object, or a file's hash, with a copy of the shipped
source it embedded — must *lose* by doing so. The evaluator therefore never shows the shipped
source: each session sees production rewritten with a fresh seed, so every such comparison
already differs on the clean runs (the test fails its own clean run), and the null variants are
equivalent variants at real mutation sites (``bench.mutation.equivalents``), so a comparison
against the session's own production "kills" them (``tampering``). Honest tests see identical
behaviour: only dead stores of fresh local names and a fresh module global are added.

The rewrite never moves a line (``bench.mutation.positions``): in every function (methods and
nested functions included) one or two statements that begin their line get a prefix
``<fresh name> = <constant>; `` and the module gets one line appended, so coverage lines,
traceback lines and every mutant's ``lines``/``scope`` stay as built, and a mutant's span moves
by the shift its ``PositionMap`` records. Docstrings, ``from __future__`` imports, class bodies
and module-level statements are never touched.
"""

from __future__ import annotations

import ast
import dis
import random
import secrets
import types
from dataclasses import dataclass

from bench.mutation.generate import body_without_docstring
from bench.mutation.positions import PositionMap

# plain words, so an added name does not stand out from the project's own by its shape
_WORDS = ("acc", "aux", "base", "buf", "cur", "delta", "edge", "flag", "head", "idx", "item", "key", "last",
          "mark", "memo", "mode", "node", "part", "pos", "prev", "ref", "slot", "span", "step", "tag", "tail",
          "tmp", "unit", "val", "width")
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Pass,
           ast.Break, ast.Continue, ast.Delete, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)


@dataclass(frozen=True)
class Diversified:
    text: str
    positions: PositionMap
    # the first line the rewrite appended (the shipped file's line count + 1): a line from here
    # on is the rewrite's own, so coverage drops it (None: nothing appended)
    appended_from: int | None = None


def session_seed(seed: int | None) -> int:
    """The rewrite's seed for one evaluation session: fresh randomness, or one derived from a
    fixed evaluation ``seed`` (reproducible runs) that is not the run order's own."""
    return secrets.randbits(63) if seed is None else seed * 7919 + 17


def diversify_python(text: str, seed: int) -> Diversified:
    """``text`` rewritten with ``seed``; the text itself (and an empty map) when it does not parse.

    Every function whose rewrite would move a line event (CPython attributes a location-less
    instruction to the one before it: in ``def f(): return "%s" % x`` 3.11's format optimisation
    reports the ``def``/decorator line, and a prefix statement takes that away) gets another
    choice of statements, and keeps its shipped code when none is free of it: coverage of the
    session's production must be the coverage the ground truth was measured with."""
    try:
        tree = ast.parse(text)
        shipped_events = _line_events(compile(text, "<shipped>", "exec"))
    except (SyntaxError, ValueError):
        return Diversified(text, PositionMap())
    rng = random.Random(seed)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | \
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    lines = text.splitlines(keepends=True)
    # function (its code object's first line and name) -> its candidate statements, in the rng's order
    choices: dict[tuple[int, str], list[ast.stmt]] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        candidates = [s for s in _own_statements(function) if _starts_its_line(s, lines)]
        if candidates:
            choices[(_first_line(function), function.name)] = rng.sample(candidates, len(candidates))
    chosen = {key: order[:rng.choice((1, 1, 2))] for key, order in choices.items()}
    untried = {key: len(order) for key, order in chosen.items()}  # index of the next candidate
    prefixes = {id(stmt): f"{_fresh(rng, taken)} = {_constant(rng)}; " for order in choices.values() for stmt in order}
    for attempt in range(4):
        rewritten, inserts = _apply(lines, chosen, prefixes)
        try:
            events = _line_events(compile(rewritten, "<rewritten>", "exec"))
        except (SyntaxError, ValueError):
            return Diversified(text, PositionMap())
        moved = [key for key, order in chosen.items() if order and events.get(key) != shipped_events.get(key)]
        if not moved:
            break
        for key in moved:  # another statement of that function, else none (after three tries)
            index = untried[key]
            chosen[key] = choices[key][index:index + 1] if attempt < 2 else []
            untried[key] = index + 1
    tail = rewritten
    if tail and not tail.endswith("\n"):
        tail += "\n"
    tail += f"{_fresh(rng, taken, private=True)} = {_constant(rng)}\n"
    positions = PositionMap(inserts={line: sorted((col, len(prefix)) for col, prefix in items)
                                     for line, items in inserts.items()})
    return Diversified(tail, positions, appended_from=len(lines) + 1)


def _apply(lines: list[str], chosen: dict[tuple[int, str], list[ast.stmt]],
           prefixes: dict[int, str]) -> tuple[str, dict[int, list[tuple[int, str]]]]:
    """The text with each chosen statement's prefix inserted before it, and the insertions."""
    inserts: dict[int, list[tuple[int, str]]] = {}
    for stmt in (s for order in chosen.values() for s in order):
        col = _char_col(lines[stmt.lineno - 1], stmt.col_offset)
        if any(at == col for at, _ in inserts.get(stmt.lineno, ())):
            continue
        inserts.setdefault(stmt.lineno, []).append((col, prefixes[id(stmt)]))
    out = list(lines)
    for line_no, items in inserts.items():
        line = out[line_no - 1]
        for col, prefix in sorted(items, reverse=True):
            line = line[:col] + prefix + line[col:]
        out[line_no - 1] = line
    return "".join(out), inserts


# instructions that never report a line event of their own
_SILENT = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "RETURN_GENERATOR", "NOP", "CACHE"})


def _line_events(module: types.CodeType) -> dict[tuple[int, str], frozenset[int]]:
    """Code objects (by first line and name) -> the lines their instructions report."""
    found: dict[tuple[int, str], frozenset[int]] = {}
    stack = [module]
    while stack:
        code = stack.pop()
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        if code is module:
            continue
        found[(code.co_firstlineno, code.co_name)] = frozenset(
            i.positions.lineno for i in dis.get_instructions(code)
            if i.positions is not None and i.positions.lineno and i.opname not in _SILENT)
    return found


def _first_line(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line CPython gives the function's code object: its first decorator's, else its def's."""
    return min([function.lineno, *(d.lineno for d in function.decorator_list)])


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """Simple statements of the function's own body, at any block depth, never in a nested
    function or class (those are functions of their own, or class bodies, never touched)."""
    found: list[ast.stmt] = []
    stack: list[ast.stmt] = list(reversed(body_without_docstring(function)))  # the docstring stays one
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, _SIMPLE):
            found.append(stmt)
            continue
        for name in ("body", "orelse", "finalbody"):
            stack.extend(reversed(getattr(stmt, name, None) or []))
        for handler in getattr(stmt, "handlers", None) or []:
            stack.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", None) or []:
            stack.extend(reversed(case.body))
    return found


def _starts_its_line(stmt: ast.stmt, lines: list[str]) -> bool:
    """Only a statement with nothing but indentation before it on its line (``a = 1; b = 2``'s
    second statement, or a body on its ``def``/``if`` line, is left alone)."""
    line = lines[stmt.lineno - 1] if stmt.lineno - 1 < len(lines) else ""
    return line.encode("utf-8")[:stmt.col_offset].strip() == b""


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _fresh(rng: random.Random, taken: set[str], private: bool = False) -> str:
    while True:
        name = f"{'_' if private else ''}{rng.choice(_WORDS)}{rng.choice(('', '_'))}{rng.randrange(2, 99)}"
        if name not in taken:
            taken.add(name)
            return name


def _constant(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return str(rng.randrange(2, 1 << 16))
    if kind == 1:
        return hex(rng.randrange(1 << 8, 1 << 24))
    if kind == 2:
        return repr("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9))))
    return f"({rng.randrange(0, 99)}, {rng.randrange(0, 99)})"
