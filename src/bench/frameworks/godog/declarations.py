"""Production declarations of a Go module, and the production functions a step handler calls.

Declarations are the top-level functions and methods of the production packages' non-test
``.go`` files with a body, as ``syntax.functions`` walks them — the walk the body hider makes,
so a declaration is exactly a body a view can hide (``Func``, ``Type.Method``; the line is the
``func`` keyword's). Public means in the package's API as godoc shows it: an exported name, and
for a method an exported receiver type too.

Calls are read with tree-sitter, without types (``CallReader``):

- ``pkg.F(...)`` (also ``pkg.F[T](...)``) where ``pkg`` names an import of a production package
  in the handler's file (alias or package name): the function ``F`` of that package;
- ``F(...)`` where the handler's file is itself in a production package (a godog suite inside
  the package it tests, as coddy-agent's) or dot-imports one: that package's function ``F``;
- ``x.M(...)`` for any other operand (a value, ``pkg.Var``, a method expression ``pkg.T.M``):
  every production method named ``M`` — the receiver's type is unknown; the caller keeps those
  that ran (``ran``), as cucumber-js matches names against what V8 saw run.

Composite literals (``types.Transaction{...}``) and conversions (``types.Address(b)``) have no
body to hide and are no declarations; Go has no constructors.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import tree_sitter

from bench.builder.interfaces import DeclarationRecord
from bench.frameworks.call_reader import SyntaxCallReader
from bench.frameworks.godog.hiding import import_name
from bench.frameworks.godog.language import production_files
from bench.frameworks.godog.syntax import functions, go_parser, node_bytes
from bench.frameworks.godog.toolchain import module_path

_FUNCTION_NODES = ("function_declaration", "method_declaration", "func_literal")


def _exported(name: str) -> bool:
    return name[:1].isupper()


@dataclass(frozen=True)
class GoDeclaration(DeclarationRecord):
    """One production function or method whose body a view can hide."""

    file: str  # relative to the module root
    package: str  # import path of its package
    qualname: str  # ``Func`` or ``Type.Method``
    name: str
    owner: str  # the receiver's type, "" for a function
    line: int  # 1-based line of ``func``
    body_start: int  # 1-based line of ``{``
    body_end: int  # 1-based line of ``}``
    signature: str  # the declaration up to its body, verbatim
    public: bool

    @property
    def kind(self) -> Literal["function", "method"]:
        return "method" if self.owner else "function"


def _package_name(root: tree_sitter.Node) -> str:
    for node in root.named_children:
        if node.type == "package_clause":
            return node_bytes(node.named_children[0]).decode() if node.named_children else ""
    return ""


def scan_declarations(file: str, package: str, source: bytes) -> list[GoDeclaration]:
    found: list[GoDeclaration] = []
    for function in functions(go_parser().parse(source).root_node):
        body = function.body
        if body is None:  # assembly stub or linkname: nothing to hide, nothing covered
            continue
        name = function.qualname.rsplit(".", 1)[-1]
        owner = function.qualname.rsplit(".", 1)[0] if "." in function.qualname else ""
        header = source[function.node.start_byte:body.start_byte].decode("utf-8", errors="replace").rstrip()
        found.append(GoDeclaration(
            file=file, package=package, qualname=function.qualname, name=name, owner=owner, line=function.line,
            body_start=body.start_point[0] + 1, body_end=body.end_point[0] + 1, signature=header,
            public=_exported(name) and (not owner or _exported(owner))))
    return found


class GoProductionDeclarations:
    """Every declaration of the production packages, by package and function, by method name,
    and by line. ``root`` is the module root (go.mod's directory: coverage profiles name
    files relative to it)."""

    def __init__(self, root: Path, production_dirs: list[str]) -> None:
        self.root = root
        self.module = module_path(root)
        self.by_file: dict[str, list[GoDeclaration]] = {}
        self.package_names: dict[str, set[str]] = {}  # import path -> package clause names of its files
        self.functions: dict[tuple[str, str], list[GoDeclaration]] = {}  # (import path, name) -> declarations
        self.methods: dict[str, list[GoDeclaration]] = {}  # method name -> declarations
        for file in production_files(root, production_dirs):
            package = self.import_path(file)
            data = (root / file).read_bytes()
            self.package_names.setdefault(package, set()).add(_package_name(go_parser().parse(data).root_node))
            self.by_file[file] = scan_declarations(file, package, data)
            for declaration in self.by_file[file]:
                if declaration.owner:
                    self.methods.setdefault(declaration.name, []).append(declaration)
                else:  # several files of one package may declare it under different build tags
                    self.functions.setdefault((package, declaration.name), []).append(declaration)

    def import_path(self, file: str) -> str:
        """The import path of the package a module file belongs to."""
        directory = PurePosixPath(file).parent.as_posix()
        return self.module if directory in ("", ".") else f"{self.module}/{directory}"

    def __iter__(self) -> Iterator[GoDeclaration]:
        return (d for declarations in self.by_file.values() for d in declarations)

    def ran(self, covered_lines: Mapping[str, Iterable[int]]) -> set[GoDeclaration]:
        """The declarations whose body holds a covered line (``CoverProfile.lines(module,
        production)[0]``: lines per file relative to the module root). Each block of Go's
        coverage lies in one function, so a covered line in a body means the function ran. Pass
        the run's own lines, not less what loading covers: a function that runs at load and
        again in the scenario ran."""
        found: set[GoDeclaration] = set()
        for file, lines in covered_lines.items():
            declarations = self.by_file.get(file)
            if not declarations:
                continue
            hit = sorted(set(lines))
            for declaration in declarations:
                if _any_between(hit, declaration.body_start, declaration.body_end):
                    found.add(declaration)
        return found


def _any_between(sorted_lines: list[int], low: int, high: int) -> bool:
    k = bisect_left(sorted_lines, low)
    return k < len(sorted_lines) and sorted_lines[k] <= high


# --------------------------------------------------------------------------- calls
@dataclass
class _TestFile:
    tree: tree_sitter.Tree
    imports: dict[str, str]  # name in this file -> import path (dot and blank imports left out)
    dot_imports: list[str]  # import paths imported with ``.``
    own_package: str | None  # the production package this file belongs to, if any
    functions: list[tree_sitter.Node] = field(default_factory=list)


class CallReader(SyntaxCallReader[_TestFile, GoDeclaration]):
    """The production declarations a handler's code calls directly (candidates by name; the
    caller keeps those that ran), one parse per file. Test-side helpers are not followed:
    pass their spans too (the test side's closure of a registration)."""

    def __init__(self, root: Path, declarations: GoProductionDeclarations) -> None:
        super().__init__(root)
        self.declarations = declarations

    def _callee(self, parsed: _TestFile, node: tree_sitter.Node) -> list[GoDeclaration]:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            while callee is not None and callee.type in ("parenthesized_expression", "index_expression"):
                callee = (callee.child_by_field_name("operand") if callee.type == "index_expression"
                          else callee.named_children[0] if callee.named_children else None)
        elif node.type == "type_conversion_expression":  # ``pkg.F[T](x)`` parses as a generic conversion
            generic = node.child_by_field_name("type")
            callee = generic.child_by_field_name("type") if generic is not None and generic.type == "generic_type" \
                else None
        else:
            return []
        if callee is None:
            return []
        if callee.type in ("identifier", "type_identifier"):
            return self._unqualified(parsed, node_bytes(callee).decode())
        if callee.type == "selector_expression":
            operand, name = callee.child_by_field_name("operand"), callee.child_by_field_name("field")
            if operand is None or name is None:
                return []
            if operand.type == "identifier" and node_bytes(operand).decode() in parsed.imports:
                path = parsed.imports[node_bytes(operand).decode()]
                return list(self.declarations.functions.get((path, node_bytes(name).decode()), ()))
            return list(self.declarations.methods.get(node_bytes(name).decode(), ()))
        if callee.type == "qualified_type":
            package, name = callee.child_by_field_name("package"), callee.child_by_field_name("name")
            imported = parsed.imports.get(node_bytes(package).decode()) if package is not None else None
            if imported is None or name is None:
                return []
            return list(self.declarations.functions.get((imported, node_bytes(name).decode()), ()))
        return []

    def _unqualified(self, parsed: _TestFile, name: str) -> list[GoDeclaration]:
        found: list[GoDeclaration] = []
        for path in ([parsed.own_package] if parsed.own_package else []) + parsed.dot_imports:
            found += self.declarations.functions.get((path, name), ())
        return found

    def _parse(self, file: str) -> _TestFile:
        tree = go_parser().parse((self.root / file).read_bytes())
        imports: dict[str, str] = {}
        dots: list[str] = []
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type == "import_spec":
                path_node, name_node = node.child_by_field_name("path"), node.child_by_field_name("name")
                if path_node is None:
                    continue
                path = node_bytes(path_node).decode()[1:-1]
                if name_node is None:
                    names = self.declarations.package_names.get(path) or {import_name(path)}
                    imports.update((name, path) for name in names)
                elif name_node.type == "dot":
                    dots.append(path)
                elif name_node.type != "blank_identifier":
                    imports[node_bytes(name_node).decode()] = path
            elif node.type in ("source_file", "import_declaration", "import_spec_list"):
                stack.extend(node.named_children)
        package = self.declarations.import_path(file)
        own = package if _package_name(tree.root_node) in self.declarations.package_names.get(package, set()) \
            else None
        parsed = _TestFile(tree, imports, dots, own)
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in _FUNCTION_NODES:
                parsed.functions.append(node)
            stack.extend(node.named_children)
        parsed.functions.sort(key=lambda n: n.start_byte)  # outermost first among equal lines
        return parsed
