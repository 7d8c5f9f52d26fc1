"""Replace function bodies with an "implementation hidden" placeholder (libcst).

libcst, not ast+unparse: the declaration must stay byte-for-byte what the developers
wrote — signature, decorators, annotations, docstring, the comments around it — while
only the statements of the body go (DESIGN.md "Body hiding": ast.unparse rewrote 116
lines of font.py and lost its comments). A hidden generator keeps an unreachable
``yield`` so callers still get a generator object; stubs that are only ``...``/``pass``
and ``@overload``/``@abstractmethod`` declarations have nothing to hide and stay.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from bench.frameworks.protocol import HidingReport

PLACEHOLDER = 'raise NotImplementedError("implementation hidden")'

_KEEP_DECORATORS = {"overload", "abstractmethod", "abstractproperty", "abc.abstractmethod", "typing.overload"}


def hide_bodies(source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
    """Hide every function for which ``should_hide(qualname, def_line)`` holds.

    Qualnames follow Python's ``__qualname__`` (``Class.method``, ``outer.<locals>.inner``);
    ``def_line`` is the line of the ``def`` keyword, as the dataset records it.
    """
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    transformer = _Hider(should_hide)
    new_module = wrapper.visit(transformer)
    return new_module.code, transformer.report


class PythonHider:
    """``BodyHider`` of Python (``PythonLanguage.hider``)."""

    language = "python"
    source_suffixes: tuple[str, ...] = (".py",)
    test_suffixes: tuple[str, ...] = ()

    def hide_bodies(self, source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
        return hide_bodies(source, should_hide)


class _Hider(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, should_hide: Callable[[str, int], bool]) -> None:
        super().__init__()
        self.should_hide = should_hide
        self.report = HidingReport()
        # (name, is_function) of the enclosing scopes, for qualnames
        self.scopes: list[tuple[str, bool]] = []

    def _qualname(self, name: str) -> str:
        parts: list[str] = []
        for scope, is_function in self.scopes:
            parts.append(scope)
            if is_function:
                parts.append("<locals>")
        return ".".join([*parts, name])

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.scopes.append((node.name.value, False))
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.scopes.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.scopes.append((node.name.value, True))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        qualname = self._qualname(original_node.name.value)
        def_line = self.get_metadata(PositionProvider, original_node.name).start.line
        if not self.should_hide(qualname, def_line):
            return updated_node
        if _is_stub(original_node):
            self.report.kept_stubs.append(qualname)
            return updated_node
        self.report.hidden.append(qualname)
        return updated_node.with_changes(body=_placeholder_body(original_node))


def _decorator_name(decorator: cst.Decorator) -> str:
    node = decorator.decorator
    if isinstance(node, cst.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
    return ".".join(reversed(parts))


def _statements(body: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return list(body.body)  # SimpleStatementSuite: small statements


def _docstring(body: cst.BaseSuite) -> cst.BaseStatement | None:
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    first = body.body[0]
    if (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
            and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        return first
    return None


def _is_stub(node: cst.FunctionDef) -> bool:
    if any(_decorator_name(d) in _KEEP_DECORATORS for d in node.decorators):
        return True
    statements = _statements(node.body)
    doc = _docstring(node.body)
    rest = statements[1:] if doc is not None else statements
    if not rest:
        return True

    def trivial(stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, cst.SimpleStatementLine):
            return all(trivial(s) for s in stmt.body)
        if isinstance(stmt, cst.Pass):
            return True
        return isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Ellipsis)

    return all(trivial(s) for s in rest)


class _YieldFinder(cst.CSTVisitor):
    """Does this function's own body yield (nested functions and lambdas do not count)?"""

    def __init__(self) -> None:
        self.found = False

    def visit_Yield(self, node: cst.Yield) -> bool:
        self.found = True
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _is_generator(node: cst.FunctionDef) -> bool:
    finder = _YieldFinder()
    node.body.visit(finder)
    return finder.found


def _placeholder_body(node: cst.FunctionDef) -> cst.IndentedBlock:
    statements: list[cst.BaseStatement] = []
    doc = _docstring(node.body)
    if doc is not None:
        statements.append(doc)
    statements.append(cst.parse_statement(PLACEHOLDER + "\n"))
    if _is_generator(node):
        # unreachable, but keeps it a generator: callers still get a generator object
        statements.append(cst.parse_statement("yield  # noqa: unreachable, keeps this a generator\n"))
    header = node.body.header if isinstance(node.body, cst.IndentedBlock) else cst.TrailingWhitespace()
    indent = node.body.indent if isinstance(node.body, cst.IndentedBlock) else None
    return cst.IndentedBlock(body=statements, header=header, indent=indent)
