"""Production declarations of a JavaScript/TypeScript project, and the names a step calls.

The walk the harness's body hider makes (``bench.frameworks.cucumber_js.hiding`` uses ``FUNCTION_NODES`` and
``function_name`` from here; a test holds the two walks together): the *outermost*
function bodies — declarations, class methods, functions or arrows bound to a name — with
``name`` for a function and ``Class.method`` for a method, at the declaration's first line.
A body a view can hide is exactly a declaration here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench.builder.interfaces import DeclarationRecord

FUNCTION_NODES = {"function_declaration", "generator_function_declaration", "method_definition",
                  "function_expression", "arrow_function", "function", "generator_function"}
_CLASSES = ("class_declaration", "class", "abstract_class_declaration")

Kind = Literal["function", "method", "property", "classmethod", "staticmethod", "constructor"]


class JsDeclaration(DeclarationRecord, BaseModel):
    """One production function or method whose body a view can hide."""

    model_config = ConfigDict(frozen=True)

    file: str
    qualname: str
    name: str
    owner: str  # the class, "" for a free function
    line: int  # 1-based line of the declaration
    body_start: int  # 1-based line of ``{``
    body_end: int  # 1-based line of ``}``
    kind: Kind
    signature: str
    public: bool


def function_name(node) -> str:
    """A function's own name, else the name it is bound to (``const f = () => …``, a field,
    a pair, an assignment); '' for an anonymous one."""
    name = node.child_by_field_name("name")
    if name is not None:
        return name.text.decode("utf-8", errors="replace")
    parent = node.parent
    if parent is not None and parent.type in ("variable_declarator", "public_field_definition",
                                              "field_definition", "pair", "assignment_expression"):
        target = parent.child_by_field_name("name") or parent.child_by_field_name("key") \
            or parent.child_by_field_name("property") or parent.child_by_field_name("left")
        if target is not None:
            return target.text.decode("utf-8", errors="replace").split(".")[-1]
    return ""


def _kind(node, name: str) -> Kind:
    if node.type != "method_definition":
        return "function"
    if name == "constructor":
        return "constructor"
    words = {child.type for child in node.children}
    if "get" in words or "set" in words:
        return "property"
    if "static" in words:
        return "staticmethod"
    return "method"


def _public(node, name: str) -> bool:
    if name.startswith(("_", "#")):
        return False
    return not any(child.type == "accessibility_modifier" and child.text.decode() in ("private", "protected")
                   for child in node.children)


def scan_declarations(file: str, source: bytes) -> list[JsDeclaration]:
    from bench.frameworks.cucumber_js.testside import js_parser

    tree = js_parser(not file.endswith((".js", ".cjs", ".mjs", ".jsx"))).parse(source)
    found: list[JsDeclaration] = []
    stack: list[tuple[object, str]] = [(tree.root_node, "")]
    while stack:
        node, owner = stack.pop()
        if node.type in _CLASSES:  # type: ignore[attr-defined]
            name_node = node.child_by_field_name("name")  # type: ignore[attr-defined]
            owner = name_node.text.decode() if name_node is not None else owner
        if node.type in FUNCTION_NODES:  # type: ignore[attr-defined]
            body = node.child_by_field_name("body")  # type: ignore[attr-defined]
            name = function_name(node)
            if body is not None and body.type == "statement_block" and name:
                method = node.type == "method_definition"  # type: ignore[attr-defined]
                qualname = f"{owner}.{name}" if owner and method else name
                header = source[node.start_byte:body.start_byte].decode("utf-8", errors="replace")  # type: ignore[attr-defined]
                found.append(JsDeclaration(
                    file=file, qualname=qualname, name=name, owner=owner if method else "",
                    line=node.start_point[0] + 1, body_start=body.start_point[0] + 1,  # type: ignore[attr-defined]
                    body_end=body.end_point[0] + 1, kind=_kind(node, name),
                    signature=" ".join(header.split())[:300], public=_public(node, name)))
                continue  # outermost bodies only, as the hider
        stack.extend((child, owner) for child in reversed(node.children))  # type: ignore[attr-defined]
    return found


class ProductionDeclarations:
    """Every declaration of the production files, looked up by name and by line."""

    def __init__(self, root: Path, files: list[str]) -> None:
        self.by_file: dict[str, list[JsDeclaration]] = {
            f: scan_declarations(f, (root / f).read_bytes()) for f in files}
        self.by_name: dict[str, list[JsDeclaration]] = {}
        for declarations in self.by_file.values():
            for declaration in declarations:
                self.by_name.setdefault(declaration.name, []).append(declaration)
                if declaration.kind == "constructor" and declaration.owner:
                    self.by_name.setdefault(declaration.owner, []).append(declaration)  # ``new Owner(...)``

    def ran(self, functions: set[tuple[str, int, str]]) -> set[JsDeclaration]:
        """The declarations V8 saw run: a function that ran starts within a declaration's
        header (its first line up to the line of ``{``)."""
        starts: dict[str, set[int]] = {}
        for file, line, _name in functions:
            starts.setdefault(file, set()).add(line)
        return {d for f, lines in starts.items() for d in self.by_file.get(f, [])
                if any(d.line <= line <= d.body_start for line in lines)}


def called_names(tree, start_byte: int, end_byte: int) -> set[str]:
    """Names the code between two offsets of a parsed file calls or constructs: ``f(...)``
    and ``a.b.f(...)`` give ``f``, ``new A.B(...)`` gives ``B``."""
    names: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte <= start_byte or node.start_byte >= end_byte:
            continue
        if node.type in ("call_expression", "new_expression"):
            callee = node.child_by_field_name("function" if node.type == "call_expression" else "constructor")
            if callee is not None and callee.type == "member_expression":
                callee = callee.child_by_field_name("property")
            if callee is not None and callee.type in ("identifier", "property_identifier"):
                names.add(callee.text.decode("utf-8", errors="replace"))
        stack.extend(node.children)
    return names


def named_functions(tree) -> dict[str, list[tuple[int, int]]]:
    """Every named function of a parsed test-side file, at any depth (js-algorand-sdk's
    helpers live inside ``module.exports = function getSteps() {...}``): name → spans."""
    found: dict[str, list[tuple[int, int]]] = {}
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in FUNCTION_NODES:
            name = function_name(node)
            if name:
                found.setdefault(name, []).append((node.start_byte, node.end_byte))
        stack.extend(node.children)
    return found


class CallReader:
    """The names a step-definition site calls, its own code and the test-side helpers it
    calls (transitively: a helper is test code too, as behave counts calls from any step
    module), one parse per file of a tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._parsed: dict[str, tuple[object, dict[str, list[tuple[int, int]]]]] = {}

    def calls(self, file: str, start_byte: int, end_byte: int) -> set[str]:
        from bench.frameworks.cucumber_js.testside import js_parser

        if file not in self._parsed:
            tree = js_parser(file.endswith((".ts", ".cts", ".mts"))).parse((self.root / file).read_bytes())
            self._parsed[file] = (tree, named_functions(tree))
        tree, helpers = self._parsed[file]
        names = called_names(tree, start_byte, end_byte)
        done: set[str] = set()
        todo = [n for n in names if n in helpers]
        while todo:
            helper = todo.pop()
            if helper in done:
                continue
            done.add(helper)
            for span in helpers[helper]:
                more = called_names(tree, *span)
                names |= more
                todo += [n for n in more if n in helpers and n not in done]
        return names
