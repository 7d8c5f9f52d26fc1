"""Degraded variants of a test implementation, for measuring selectors offline.

Each turns a (ground-truth) test into a plausible but weaker one, the way generated tests go
wrong (failure modes: docs/experiments.md#strategies):

- ``then_stripped``: Then-step bodies emptied (bench.testimpl's own transformation);
- ``weakened_checks``: Then-step asserts reduced to truthiness or dropped comparisons;
- ``constructed_state``: Given steps construct a fresh object instead of loading the
  project's fixture (paper Fig. 4), where the code shows how;
- ``broad_except``: every step body wrapped in ``try: ... except Exception: pass``.

Signature of each: ``(files, instance, features_dir) -> files | None``; ``None`` when the
variant cannot be derived or would not differ. Only the step definitions the instance's
effective steps bind to (statically, see ``selectors.analyze``) are changed; results
always parse.
"""

from __future__ import annotations

import ast
import re
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import cast

import libcst as cst

from bench.model import GoldTest, Instance
from bench.registry import Registry, UnknownName
from bench.testimpl import strip_step_bodies, then_step_targets
from harness.strategies.selectors import Analysis, StepDef, analyze

Files = dict[str, str]

# Constructors known to build a fresh, empty object when called without arguments; callees
# the test itself calls with no arguments somewhere count too.
FRESH_CONSTRUCTORS = frozenset({"Document"})
# A call to one of these (or to a test helper whose name says so) loads a fixture.
_LOADER_NAME = re.compile(r"(^test_(docx|file)$|fixture|_file$|_path$|^load_|^open_)", re.IGNORECASE)
_FILE_LITERAL = re.compile(r"[\w./-]+\.[A-Za-z0-9]{2,5}$")


def then_stripped(files: Files, instance: Instance, features_dir: str, gold: GoldTest | None = None) -> Files | None:
    """Then-only step bodies become ``pass``; with ``gold``, its runtime bindings pick them."""
    analysis = analyze(files, instance, features_dir)
    if not analysis.valid:
        return None
    targets = then_step_targets(gold) if gold is not None else {(d.file, d.line) for d in analysis.only("then")}
    code = sorted(analysis.files)
    with tempfile.TemporaryDirectory(prefix="req2test-variant-") as tmp:
        root = Path(tmp)
        for rel in code:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(files[rel], encoding="utf-8")
        stripped = strip_step_bodies(root, code, targets)
    return _finish(files, stripped)


def weakened_checks(files: Files, instance: Instance, features_dir: str) -> Files | None:
    analysis = analyze(files, instance, features_dir)
    if not analysis.valid:
        return None
    return _rewrite(files, analysis, analysis.only("then"), lambda: _WeakenAsserts())


def constructed_state(files: Files, instance: Instance, features_dir: str) -> Files | None:
    analysis = analyze(files, instance, features_dir)
    if not analysis.valid:
        return None
    zero_arg = {name for tree in analysis.files.values() for node in ast.walk(tree)
                if isinstance(node, ast.Call) and not node.args and not node.keywords
                and (name := _ast_call_name(node))}
    # a test's own helpers that reach the fixture tree, e.g. ``test_docx(name)``
    loaders = {name for name in analysis.helpers if _LOADER_NAME.search(name)}
    return _rewrite(files, analysis, analysis.only("given"),
                    lambda: _ConstructFresh(FRESH_CONSTRUCTORS | zero_arg, loaders))


def broad_except(files: Files, instance: Instance, features_dir: str) -> Files | None:
    analysis = analyze(files, instance, features_dir)
    if not analysis.valid:
        return None
    defs = [d for t in ("given", "when", "then") for d in analysis.bound(t)]
    return _rewrite(files, analysis, list(dict.fromkeys(defs)), lambda: _WrapBroad())


Variant = Callable[..., Files | None]

# The built-ins, iterated as a table by benchmarks/selectors_offline.py.
VARIANTS: dict[str, Variant] = {
    "then_stripped": then_stripped, "weakened_checks": weakened_checks,
    "constructed_state": constructed_state, "broad_except": broad_except,
}


class UnknownVariant(UnknownName, ValueError):
    """No variant of that name."""


# By name, as every pluggable kind. No entry point group: only the offline selector benchmark in this
# source tree asks for variants, so an installed package would have nowhere to be named; code may
# still ``REGISTRY.register`` one.
REGISTRY: Registry[Variant] = Registry(
    "variant", None, {name: f"{__name__}:{fn.__name__}" for name, fn in VARIANTS.items()}, None,
    error=UnknownVariant)


# --------------------------------------------------------------------------- plumbing
def _finish(original: Files, changed: Files) -> Files | None:
    out = dict(original)
    out.update(changed)
    if out == original:
        return None
    for path, text in out.items():
        if path.endswith(".py"):
            try:
                ast.parse(text)
            except SyntaxError:
                return None
    return out


class _FunctionTransformer(cst.CSTTransformer):
    """Base: visits one selected step function at a time (never the whole module: libcst is slow)."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = 0
        self._top: cst.FunctionDef | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self._top is None:
            self._top = node
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        return self.rewrite_function(updated) if original is self._top else updated

    def rewrite_function(self, node: cst.FunctionDef) -> cst.FunctionDef:
        return node


def _rewrite(files: Files, analysis: Analysis, defs: list[StepDef],
             make: Callable[[], _FunctionTransformer]) -> Files | None:
    by_file: dict[str, set[int]] = {}
    for d in defs:
        by_file.setdefault(d.file, set()).add(d.ordinal)
    changed: Files = {}
    for path, ordinals in sorted(by_file.items()):
        module = _parse(files[path])
        body = list(module.body)
        # ordinals count the module's top-level functions, as selectors.analyze does
        positions = [i for i, stmt in enumerate(body) if isinstance(stmt, cst.FunctionDef)]
        count = 0
        for ordinal in sorted(ordinals):
            if ordinal >= len(positions):
                continue
            transformer = make()
            # a FunctionDef: leave_FunctionDef returns one
            body[positions[ordinal]] = cast(cst.FunctionDef, body[positions[ordinal]].visit(transformer))
            count += transformer.changed
        if count:
            changed[path] = module.with_changes(body=body).code
    return _finish(files, changed) if changed else None


@lru_cache(maxsize=64)
def _parse(text: str) -> cst.Module:
    """libcst trees are immutable, so the variants of one test can share its parse (the slow part)."""
    return cst.parse_module(text)


def _ast_call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _cst_call_name(node: cst.Call) -> str | None:
    if isinstance(node.func, cst.Name):
        return node.func.value
    if isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return all(isinstance(e, cst.Element) and _is_literal(e.value) for e in node.elements)
    return False


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _not_none(expr: cst.BaseExpression) -> cst.Assert:
    return cst.Assert(test=cst.Comparison(left=expr, comparisons=[
        cst.ComparisonTarget(operator=cst.IsNot(), comparator=cst.Name("None"))]))


# --------------------------------------------------------------------------- weakened_checks
class _WeakenAsserts(_FunctionTransformer):
    """``assert x == "v"`` → ``assert x is not None``; ``assert x == y`` / ``x is None`` → ``x`` (comparison dropped);
    ``assert isinstance(x, T)`` → ``assert x is not None``. Truthiness checks stay as they are."""

    def leave_Assert(self, original: cst.Assert, updated: cst.Assert) -> cst.BaseSmallStatement:
        test = updated.test
        if isinstance(test, cst.Comparison):
            operands = [test.left, *(c.comparator for c in test.comparisons)]
            subject = next((o for o in operands if not _is_literal(o)), None)
            if subject is None:
                return updated
            self.changed += 1
            expected = [o for o in operands if o is not subject]
            if expected and all(_is_literal(o) and not _is_none(o) for o in expected):
                return _not_none(subject)
            return cst.Expr(value=subject)  # the value is still computed, nothing is compared
        if isinstance(test, cst.Call) and _cst_call_name(test) == "isinstance" and test.args:
            self.changed += 1
            return _not_none(test.args[0].value)
        return updated


# --------------------------------------------------------------------------- constructed_state
class _ConstructFresh(_FunctionTransformer):
    """``Document(test_docx("x"))`` → ``Document()`` inside Given steps."""

    def __init__(self, constructors: frozenset[str] | set[str], loaders: set[str]) -> None:
        super().__init__()
        self.constructors = constructors
        self.loaders = loaders

    def _loads_fixture(self, node: cst.BaseExpression) -> bool:
        for sub in _walk(node):
            if isinstance(sub, cst.Call) and ((_cst_call_name(sub) or "") in self.loaders
                                              or _LOADER_NAME.search(_cst_call_name(sub) or "")):
                return True
            if isinstance(sub, cst.SimpleString):
                try:
                    value = ast.literal_eval(sub.value)
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, str) and _FILE_LITERAL.fullmatch(value):
                    return True
        return False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not updated.args or (_cst_call_name(updated) or "") not in self.constructors:
            return updated
        if not any(self._loads_fixture(arg.value) for arg in updated.args):
            return updated
        self.changed += 1
        return updated.with_changes(args=[])


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


# --------------------------------------------------------------------------- broad_except
class _WrapBroad(_FunctionTransformer):
    def rewrite_function(self, node: cst.FunctionDef) -> cst.FunctionDef:
        body = node.body
        # a suite is an indented block or, on the def's own line, a SimpleStatementSuite
        statements: list[cst.BaseStatement] = list(body.body) if isinstance(body, cst.IndentedBlock) else [
            cst.SimpleStatementLine(body=list(cast(cst.SimpleStatementSuite, body).body))]
        docstring: list[cst.BaseStatement] = []
        if statements and isinstance(statements[0], cst.SimpleStatementLine) and len(statements[0].body) == 1 \
                and isinstance(statements[0].body[0], cst.Expr) \
                and isinstance(statements[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            docstring, statements = statements[:1], statements[1:]
        if not statements or all(isinstance(s, cst.SimpleStatementLine)
                                 and all(isinstance(x, cst.Pass) for x in s.body) for s in statements):
            return node  # nothing to hedge
        self.changed += 1
        handler = cst.ExceptHandler(type=cst.Name("Exception"),
                                    body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])]))
        wrapped = cst.Try(body=cst.IndentedBlock(body=statements), handlers=[handler])
        return node.with_changes(body=cst.IndentedBlock(body=[*docstring, wrapped]))
