"""Derived test implementations: the ground truth with step bodies emptied.

- *then-stripped*: the bodies of step definitions bound to the scenario's Then steps
  become ``pass`` (definitions also used by its Given/When steps are left alone, or the
  setup itself would break). Used for the assertion-dependent subset and calibration.
- *empty*: every step definition body in the step files becomes ``pass``.
Helpers are untouched; docstrings stay.
"""

from __future__ import annotations

import ast
from pathlib import Path

from bench.model import GoldTest

STEP_DECORATORS = frozenset({"given", "when", "then", "step", "Given", "When", "Then", "Step"})


def then_step_targets(gold: GoldTest) -> set[tuple[str, int]]:
    then = {(b.binding.file, b.binding.line) for b in gold.bindings if b.depth == 0 and b.step_type == "then"}
    other = {(b.binding.file, b.binding.line) for b in gold.bindings if b.role != "then"}
    return then - other


def strip_step_bodies(root: Path, files: list[str], targets: set[tuple[str, int]] | None) -> dict[str, str]:
    """Contents of ``files`` with the selected step-definition bodies replaced by ``pass``.

    ``targets``: (file, decorator line) pairs to strip; ``None`` strips every step definition.
    """
    out: dict[str, str] = {}
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8")
        wanted = None if targets is None else {line for f, line in targets if f == rel}
        out[rel] = _strip(text, wanted)
    return out


def _strip(text: str, lines_wanted: set[int] | None) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    spans: list[tuple[int, int, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        decorator_lines = {d.lineno for d in node.decorator_list if _is_step_decorator(d)}
        if not decorator_lines:
            continue
        if lines_wanted is not None and not (decorator_lines & lines_wanted):
            continue
        body = list(node.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        if not body:
            continue
        spans.append((body[0].lineno, node.end_lineno or body[-1].lineno, body[0].col_offset))
    lines = text.splitlines(keepends=True)
    for start, end, indent in sorted(spans, reverse=True):
        lines[start - 1: end] = [" " * indent + "pass\n"]
    return "".join(lines)


def _is_step_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr in STEP_DECORATORS
    return isinstance(target, ast.Name) and target.id in STEP_DECORATORS
