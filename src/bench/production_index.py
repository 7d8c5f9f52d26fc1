"""An index of every function declared in the production scope (stdlib ``ast``).

Runtime tracing reports code objects as (file, co_firstlineno, co_qualname); this
index maps them back to declarations with their signature text and body span, which
target interfaces, the target-hidden map and the views need.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from bench.model import BodySpan, Declaration


@dataclass(frozen=True)
class FunctionInfo:
    file: str
    qualname: str
    name: str
    first_line: int  # co_firstlineno: first decorator, else the def line
    def_line: int
    body_start: int
    body_end: int
    signature: str
    kind: str
    enclosing_class: str | None
    nested: bool  # defined inside another function

    @property
    def key(self) -> str:
        return f"{self.file}:{self.qualname}"

    @property
    def is_public(self) -> bool:
        """Private by the method's own name, not its class's (public API returns `_Header`)."""
        if self.nested:
            return False
        if self.name.startswith("__") and self.name.endswith("__"):
            return True
        return not self.name.startswith("_")

    def declaration(self, kind: str | None = None) -> Declaration:
        return Declaration(file=self.file, qualname=self.qualname, line=self.def_line,
                           signature=self.signature, kind=kind or self.kind)  # type: ignore[arg-type]

    def body_span(self) -> BodySpan:
        return BodySpan(file=self.file, qualname=self.qualname, def_line=self.def_line,
                        body_start=self.body_start, body_end=self.body_end)


class ProductionIndex:
    """All functions of the production files under ``root``."""

    def __init__(self, root: Path, production: list[str]) -> None:
        self.root = root
        self.by_first_line: dict[tuple[str, int], FunctionInfo] = {}
        self.by_key: dict[str, FunctionInfo] = {}
        self.files: list[str] = []
        self.lines_of_code = 0
        for scope in production:
            base = root / scope
            paths = [base] if base.is_file() else sorted(base.rglob("*.py"))
            for path in paths:
                rel = path.relative_to(root).as_posix()
                self.files.append(rel)
                source = path.read_text(encoding="utf-8", errors="replace")
                self.lines_of_code += source.count("\n")
                try:
                    tree = ast.parse(source, filename=rel)
                except SyntaxError:
                    continue
                for info in _functions(rel, source, tree):
                    self.by_first_line[(rel, info.first_line)] = info
                    self.by_first_line.setdefault((rel, info.def_line), info)
                    self.by_key[info.key] = info

    def lookup(self, file: str, first_line: int, qualname: str) -> FunctionInfo | None:
        info = self.by_first_line.get((file, first_line))
        if info is not None:
            return info
        return self.by_key.get(f"{file}:{qualname}")

    def module_name(self, file: str, python_path: list[str]) -> str:
        for entry in sorted(python_path, key=len, reverse=True):
            prefix = entry.rstrip("/") + "/" if entry not in ("", ".") else ""
            if file.startswith(prefix):
                dotted = file[len(prefix):].removesuffix(".py").replace("/", ".")
                return dotted.removesuffix(".__init__")
        return file.removesuffix(".py").replace("/", ".")


def _functions(rel: str, source: str, tree: ast.Module) -> list[FunctionInfo]:
    lines = source.splitlines()
    found: list[FunctionInfo] = []

    def visit(node: ast.AST, prefix: str, enclosing_class: str | None, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", child.name if not in_function else None, in_function)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{child.name}"
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                body = child.body
                # The body span starts after the docstring: views keep docstrings.
                start_node = body[1] if (len(body) > 1 and _is_docstring(body[0])) else body[0]
                found.append(FunctionInfo(
                    file=rel, qualname=qualname, name=child.name, first_line=first,
                    def_line=child.lineno, body_start=start_node.lineno,
                    body_end=child.end_lineno or child.lineno,
                    signature=_signature(lines, child, first),
                    kind=_kind(child, enclosing_class), enclosing_class=enclosing_class,
                    nested=in_function))
                visit(child, f"{qualname}.<locals>.", None, True)
            else:
                visit(child, prefix, enclosing_class, in_function)

    visit(tree, "", None, False)
    return found


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _signature(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef, first: int) -> str:
    """Decorators and the full def header, verbatim, dedented."""
    header_end = node.body[0].lineno - 1
    # A one-line def ("def f(): return 1") has its body on the same line.
    if header_end < node.lineno:
        text = lines[node.lineno - 1]
        cut = text.find(":", text.rfind(")"))
        chunk = [*lines[first - 1: node.lineno - 1], text[: cut + 1] if cut >= 0 else text]
    else:
        chunk = lines[first - 1: header_end]
        # trim trailing comment/blank lines between the header and the body
        while chunk and not chunk[-1].rstrip().endswith(":"):
            chunk.pop()
    indent = min((len(line) - len(line.lstrip()) for line in chunk if line.strip()), default=0)
    return "\n".join(line[indent:] for line in chunk).strip()


def _kind(node: ast.FunctionDef | ast.AsyncFunctionDef, enclosing_class: str | None) -> str:
    names = {_decorator_name(d) for d in node.decorator_list}
    if enclosing_class is None:
        return "function"
    if node.name in ("__init__", "__new__"):
        return "constructor"
    if "staticmethod" in names:
        return "staticmethod"
    if "classmethod" in names:
        return "classmethod"
    if names & {"property", "lazyproperty", "cached_property", "setter", "getter", "deleter"}:
        return "property"
    return "method"


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""
