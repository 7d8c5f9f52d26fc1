"""Production declarations of a Java project, and the production methods a step method calls.

Declarations are the methods and constructors with a body of the production ``.java`` files
(``package-info.java`` and ``module-info.java`` left out), as ``syntax.methods`` walks them —
the walk the body hider makes, so a declaration is exactly a body a view can hide
(``Type.method``, ``Outer.Inner.<init>``; the line is the declaration's first, its first
annotation's); the hider keeps an empty body and a constructor's lone ``this(...)`` /
``super(...)`` as stubs (``HidingReport.kept_stubs``): declarations still, with nothing to hide. Members of anonymous classes, enum constants' bodies and local classes belong to
the enclosing method's body. Overloads share a qualname (and so a key) and are told apart by
their line. Public means in the API as javadoc shows it to another package: a ``public`` method
(in an interface or an annotation type, any not ``private``) or ``public`` constructor, in a type
that is ``public`` (or a member of an interface) and whose enclosing types all are.

Calls are read with tree-sitter, without types (``CallReader``). Type names are resolved as
javac resolves them in the step's file: the types the file declares (never production), its
single-type imports, production types of its own package (a sibling ``X.java`` of the test
sources is a test-side type), then its on-demand imports (``import com.x.*;`` and the nested
types of ``import com.x.Outer.*;``); ``Outer.Inner`` and fully qualified names too.

- ``new T(...)`` (also ``new T<>(...)``, ``new T(...) {...}``) where ``T`` is a production type:
  its constructors; ``T::new``: the same;
- ``T.m(...)`` where ``T`` is a production type: its static methods named ``m``, or its
  production superclasses' (static methods are inherited from classes, not interfaces); ``T``
  any other type (imported from elsewhere, declared in the test side, or unresolved and
  capitalised, such as ``java.lang``'s ``Integer.valueOf``): nothing;
- ``x.m(...)`` for any other receiver — a field, a local, a parameter (a name the file declares
  as a variable is one even when capitalised; an unresolved all-capitals name is taken for a
  constant), ``T.FIELD``, ``this.x``, a call ``a.b().c()``, ``new T().m()``: every production
  method named ``m`` — the receiver's type is unknown; the caller keeps those that ran
  (``ran``), as godog and cucumber-js do. A literal receiver (``"abc".equals(x)``,
  ``Foo.class.getName()``) calls no production method;
- ``T::m``: the methods named ``m`` of ``T`` and its production supertypes (static or not:
  ``Type::instanceMethod`` is a reference too); ``x::m``: every production method named ``m``;
- ``m(...)`` and ``this.m(...)``, unqualified: a method the enclosing test classes declare is
  test-side (its calls come with its own span); else the methods named ``m`` the enclosing
  classes inherit from production supertypes (a step class extending a production class, an
  anonymous ``new T() {...}``); else the static import of ``m`` (``import static
  com.x.Util.m;``) or, failing one, the on-demand static imports (``import static
  com.x.Util.*;``); else nothing. ``super.m(...)`` and ``super(...)``: the production
  supertypes' methods named ``m`` and superclass constructors.

Arity narrows every candidate set: a call with ``n`` arguments keeps the declarations with ``n``
parameters, or at least ``n - 1`` for varargs (``JavaDeclaration.accepts``); a method reference
has no argument list and keeps them all. Argument types are not compared (overloads of one
arity stay candidates together).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import tree_sitter

from bench.builder.interfaces import DeclarationRecord
from bench.frameworks.call_reader import HandlerSpan, SyntaxCallReader
from bench.frameworks.cucumber_jvm.language import production_files
from bench.frameworks.cucumber_jvm.syntax import (
    TYPE_DECLARATIONS,
    java_parser,
    methods,
    package_name,
    type_name,
)

_INTERFACES = ("interface_declaration", "annotation_type_declaration")
_COMMENTS = ("line_comment", "block_comment")
_LITERALS = ("string_literal", "text_block", "class_literal", "character_literal", "decimal_integer_literal",
             "hex_integer_literal", "octal_integer_literal", "binary_integer_literal", "decimal_floating_point_literal",
             "hex_floating_point_literal", "true", "false", "null_literal")  # fmt: skip
_FUNCTION_NODES = ("method_declaration", "constructor_declaration", "compact_constructor_declaration",
                   "lambda_expression")  # fmt: skip
# declarations that bind a variable's name in their ``name`` field
_VARIABLE_BINDERS = ("variable_declarator", "formal_parameter", "catch_formal_parameter", "resource",
                     "enhanced_for_statement", "instanceof_expression")  # fmt: skip


@dataclass(frozen=True)
class JavaDeclaration(DeclarationRecord):
    """One production method or constructor whose body a view can hide."""

    file: str  # relative to the project root
    package: str  # the Java package ("" for the default package)
    qualname: str  # ``Type.method``, ``Outer.Inner.<init>``
    name: str  # ``method`` or ``<init>``
    owner: str  # the dotted type path within the file, ``Outer.Inner``
    line: int  # 1-based first line of the declaration, its annotations included (``JavaMethod.line``)
    body_start: int  # 1-based line of the body's ``{``
    body_end: int  # 1-based line of the body's ``}``
    signature: str  # the declaration up to its body, annotations included, verbatim (continuation lines dedented)
    public: bool
    static: bool
    parameters: int  # formal parameters (a compact constructor: the record's components)
    varargs: bool  # the last parameter is ``T...``

    @property
    def kind(self) -> Literal["method", "staticmethod", "constructor"]:
        if self.name == "<init>":
            return "constructor"
        return "staticmethod" if self.static else "method"

    @property
    def type_name(self) -> str:
        """The declaring type's canonical name, ``com.x.Outer.Inner``."""
        return f"{self.package}.{self.owner}" if self.package else self.owner

    def accepts(self, arguments: int) -> bool:
        """Whether a call with this many arguments may call it (types aside)."""
        return arguments == self.parameters or (self.varargs and arguments >= self.parameters - 1)


# --------------------------------------------------------------------------- scanning
def _modifiers(node: tree_sitter.Node) -> set[str]:
    """The keyword modifiers of a declaration (``public``, ``static``...), annotations aside."""
    for child in node.children:
        if child.type == "modifiers":
            return {m.type for m in child.children if m.type not in ("annotation", "marker_annotation")}
    return set()


def _enclosing_type(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The type declaration a member (method or type) is declared in, None at top level."""
    parent = node.parent
    while parent is not None and parent.type not in TYPE_DECLARATIONS:
        if parent.type in ("program", "object_creation_expression", "enum_constant", "block"):
            return None  # not a member of a named type
        parent = parent.parent
    return parent


def _accessible(declaration: tree_sitter.Node) -> bool:
    """A type another package can name: ``public``, or a non-private member of an interface,
    and each of its enclosing types too."""
    current: tree_sitter.Node | None = declaration
    while current is not None:
        outer = _enclosing_type(current)
        modifiers = _modifiers(current)
        if "public" not in modifiers and not (
            outer is not None and outer.type in _INTERFACES and "private" not in modifiers
        ):
            return False
        current = outer
    return True


def _is_public(method: tree_sitter.Node) -> bool:
    owner = _enclosing_type(method)
    if owner is None:
        return False
    modifiers = _modifiers(method)
    own = "public" in modifiers or (
        owner.type in _INTERFACES and "private" not in modifiers and method.type == "method_declaration"
    )
    return own and _accessible(owner)


def _parameters(method: tree_sitter.Node) -> tuple[int, bool]:
    params = method.child_by_field_name("parameters")
    if params is None and method.type == "compact_constructor_declaration":
        record = _enclosing_type(method)
        params = record.child_by_field_name("parameters") if record is not None else None
    if params is None:
        return 0, False
    formal = [p for p in params.named_children if p.type in ("formal_parameter", "spread_parameter")]
    return len(formal), bool(formal) and formal[-1].type == "spread_parameter"


def _header(source: bytes, node: tree_sitter.Node, body: tree_sitter.Node) -> str:
    """The declaration's text up to its body; its continuation lines lose the declaration's indent."""
    text = source[node.start_byte : body.start_byte].decode("utf-8", errors="replace").replace("\r\n", "\n").rstrip()
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    indent = source[line_start : node.start_byte].decode("utf-8", errors="replace")
    if not indent or indent.strip():
        return text
    first, *rest = text.split("\n")
    return "\n".join([first, *(line.removeprefix(indent) for line in rest)])


def scan_declarations(file: str, source: bytes, tree: tree_sitter.Tree | None = None) -> list[JavaDeclaration]:
    """The declarations of one compilation unit (``file`` relative to the project root)."""
    root = (tree or java_parser().parse(source)).root_node
    package = package_name(root)
    found: list[JavaDeclaration] = []
    for method in methods(root):
        body = method.body
        if body is None:  # abstract, native or an interface's abstract method: nothing to hide
            continue
        count, varargs = _parameters(method.node)
        found.append(
            JavaDeclaration(
                file=file,
                package=package,
                qualname=method.qualname,
                name=method.name,
                owner=method.owner,
                line=method.line,
                body_start=body.start_point[0] + 1,
                body_end=body.end_point[0] + 1,
                signature=_header(source, method.node, body),
                public=_is_public(method.node),
                static="static" in _modifiers(method.node),
                parameters=count,
                varargs=varargs,
            )
        )
    return found


# --------------------------------------------------------------------------- names
def _type_parts(node: tree_sitter.Node | None) -> list[str] | None:
    """``Outer.Inner`` of a type (generic arguments dropped) or of a name expression; None for
    anything else (``this.x``, a call, an array type)."""
    if node is None:
        return None
    if node.type == "generic_type":
        return _type_parts(node.named_children[0] if node.named_children else None)
    if node.type in ("identifier", "type_identifier"):
        return [node.text.decode()] if node.text is not None else None
    if node.type in ("scoped_type_identifier", "scoped_identifier", "field_access"):
        named = [c for c in node.named_children if c.type not in _COMMENTS and c.type != "annotation"]
        if len(named) < 2:
            return None
        head, last = _type_parts(named[0]), named[-1]
        if head is None or last.type not in ("identifier", "type_identifier") or last.text is None:
            return None
        return [*head, last.text.decode()]
    return None


def _super_nodes(declaration: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The types a type declaration extends and implements, as written."""
    found: list[tree_sitter.Node] = []
    for child in declaration.children:
        if child.type == "superclass":
            found += [c for c in child.named_children if c.type not in _COMMENTS]
        elif child.type in ("super_interfaces", "extends_interfaces"):
            for type_list in child.named_children:
                found += [c for c in type_list.named_children if c.type not in _COMMENTS]
    return found


def _named_types(root: tree_sitter.Node) -> Iterator[tuple[tree_sitter.Node, str]]:
    """Every named member type of a compilation unit with its dotted path, outer first."""
    stack = [(node, type_name(node)) for node in reversed(root.named_children) if node.type in TYPE_DECLARATIONS]
    while stack:
        node, path = stack.pop()
        yield node, path
        body = node.child_by_field_name("body")
        members = []
        for child in body.named_children if body is not None else []:
            members += child.named_children if child.type == "enum_body_declarations" else [child]
        stack += [(m, f"{path}.{type_name(m)}") for m in reversed(members) if m.type in TYPE_DECLARATIONS]


def _looks_like_type(name: str) -> bool:
    """An unresolved capitalised name (``Integer``, ``UUID`` aside) is a type; ``MAX``, ``x``: a value."""
    return name[:1].isupper() and any(c.islower() for c in name)


@dataclass
class _Scope:
    """The type names a compilation unit sees, as written in it."""

    package: str
    own: dict[str, str]  # simple name -> canonical name of the types the file declares
    single: dict[str, str]  # ``import a.b.C;``: C -> a.b.C
    on_demand: list[str]  # ``import a.b.*;``: a.b (a package or a type)
    static_single: dict[str, list[str]]  # ``import static a.b.C.m;``: m -> [a.b.C]
    static_on_demand: list[str]  # ``import static a.b.C.*;``: a.b.C
    siblings: frozenset[str] = frozenset()  # a test file's sibling ``X.java`` files: same-package test types


def _scope(root: tree_sitter.Node, siblings: frozenset[str] = frozenset()) -> _Scope:
    package = package_name(root)
    own: dict[str, str] = {}
    for _node, path in _named_types(root):
        own.setdefault(path.rsplit(".", 1)[-1], f"{package}.{path}" if package else path)
    scope = _Scope(package, own, {}, [], {}, [], siblings)
    for node in root.named_children:
        if node.type != "import_declaration":
            continue
        is_static = any(c.type == "static" for c in node.children)
        wildcard = any(c.type == "asterisk" for c in node.children)
        name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        if name is None or name.text is None:
            continue
        dotted = name.text.decode()
        if wildcard:
            (scope.static_on_demand if is_static else scope.on_demand).append(dotted)
        elif is_static and "." in dotted:
            holder, member = dotted.rsplit(".", 1)
            scope.static_single.setdefault(member, []).append(holder)
            scope.single.setdefault(member, dotted)  # a static import may import a member type too
        elif not is_static:
            scope.single[dotted.rsplit(".", 1)[-1]] = dotted
    return scope


@dataclass
class _JavaType:
    name: str  # canonical name, ``com.x.Outer.Inner``
    file: str
    kind: str  # the tree-sitter declaration type
    scope: _Scope  # of its file: how its supertypes' names resolve
    supers: list[list[str]]  # the names it extends and implements, as written


# --------------------------------------------------------------------------- the index
class JavaProductionDeclarations:
    """Every declaration of the production sources, by file, by declaring type and by method
    name, with the production types and their supertypes. ``root`` is the project root (JaCoCo's
    source paths are made relative to it, ``src/main/java/com/x/A.java``)."""

    def __init__(self, root: Path, production_dirs: list[str]) -> None:
        self.root = root
        self.by_file: dict[str, list[JavaDeclaration]] = {}
        self.types: dict[str, _JavaType] = {}  # canonical name -> type
        self.by_type: dict[str, list[JavaDeclaration]] = {}  # canonical name -> its declarations
        self.methods: dict[str, list[JavaDeclaration]] = {}  # method name -> declarations (no constructors)
        self._supertypes: dict[str, list[str]] = {}
        for file in production_files(root, production_dirs):
            source = (root / file).read_bytes()
            tree = java_parser().parse(source)
            scope = _scope(tree.root_node)
            prefix = f"{scope.package}." if scope.package else ""
            for node, path in _named_types(tree.root_node):
                supers = [parts for parts in map(_type_parts, _super_nodes(node)) if parts]
                self.types.setdefault(prefix + path, _JavaType(prefix + path, file, node.type, scope, supers))
            self.by_file[file] = scan_declarations(file, source, tree)
            for declaration in self.by_file[file]:
                self.by_type.setdefault(declaration.type_name, []).append(declaration)
                if declaration.kind != "constructor":
                    self.methods.setdefault(declaration.name, []).append(declaration)

    def __iter__(self) -> Iterator[JavaDeclaration]:
        return (d for declarations in self.by_file.values() for d in declarations)

    def ran(self, covered_lines: Mapping[str, Iterable[int]]) -> set[JavaDeclaration]:
        """The declarations whose body holds a covered line (``LineCoverage.under(source
        root)[0]``: lines per file relative to the project root). A line of a body is the
        method's own or a lambda's, an anonymous or a local class's inside it, so a covered line
        in a body means the method ran (its lambdas may run later, as callbacks: it ran before).
        Pass the run's own lines, not less what loading covers: a method that runs at load and
        again in the scenario ran."""
        found: set[JavaDeclaration] = set()
        for file, lines in covered_lines.items():
            declarations = self.by_file.get(file)
            if not declarations:
                continue
            hit = sorted(set(lines))
            for declaration in declarations:
                if _any_between(hit, declaration.body_start, declaration.body_end):
                    found.add(declaration)
        return found

    # ------------------------------------------------------------------ type names
    def resolve(self, scope: _Scope, parts: list[str]) -> str | None:
        """The canonical name of a type name as the file of ``scope`` sees it (a production type
        or not), None when it names no type the reader can see (``java.lang``'s, a variable's
        field)."""
        head = self._simple(scope, parts[0])
        if head is not None:
            name = ".".join([head, *parts[1:]])
            return name if len(parts) == 1 or name in self.types or head not in self.types else None
        qualified = ".".join(parts)  # ``com.x.Outer.Inner``
        return qualified if qualified in self.types else None

    def _simple(self, scope: _Scope, name: str) -> str | None:
        if name in scope.own:
            return scope.own[name]
        if name in scope.single:
            return scope.single[name]
        same = f"{scope.package}.{name}" if scope.package else name
        if same in self.types or name in scope.siblings:
            return same
        for holder in scope.on_demand:
            if f"{holder}.{name}" in self.types:
                return f"{holder}.{name}"
        return None

    def supertypes(self, name: str) -> list[str]:
        """A production type and its production supertypes, transitively, itself first (a
        supertype outside production ends its branch)."""
        if name in self._supertypes:
            return self._supertypes[name]
        found: list[str] = []
        todo = [name]
        while todo:
            current = todo.pop(0)
            if current in found or current not in self.types:
                continue
            found.append(current)
            java_type = self.types[current]
            for parts in java_type.supers:
                resolved = self.resolve(java_type.scope, parts)
                if resolved is not None:
                    todo.append(resolved)
        self._supertypes[name] = found
        return found

    def constructors(self, name: str) -> list[JavaDeclaration]:
        return [d for d in self.by_type.get(name, ()) if d.kind == "constructor"]

    def members(self, name: str, method: str, static_only: bool = False) -> list[JavaDeclaration]:
        """The methods named ``method`` of a production type and of its production supertypes
        (``static_only``: the static ones a class has and inherits from its superclasses)."""
        found: list[JavaDeclaration] = []
        for holder in self.supertypes(name):
            if static_only and holder != name and self.types[holder].kind in _INTERFACES:
                continue
            found += [
                d
                for d in self.by_type.get(holder, ())
                if d.name == method and d.kind != "constructor" and (d.static or not static_only)
            ]
        return found


def _any_between(sorted_lines: list[int], low: int, high: int) -> bool:
    k = bisect_left(sorted_lines, low)
    return k < len(sorted_lines) and sorted_lines[k] <= high


# --------------------------------------------------------------------------- calls
@dataclass
class _Frame:
    """An enclosing class of a call in the test file: what it declares and extends."""

    methods: set[str]  # names of the methods it declares
    supers: list[str]  # the production types it extends or implements, canonical


@dataclass
class _TestFile:
    tree: tree_sitter.Tree
    scope: _Scope
    variables: set[str]  # every name the file declares as a field, local, parameter...
    functions: list[tree_sitter.Node] = field(default_factory=list)
    frames: dict[tuple[int, int], _Frame] = field(default_factory=dict)  # by the class node's byte span


class CallReader(SyntaxCallReader[_TestFile, JavaDeclaration]):
    """The production declarations a step method's code calls directly (candidates by name and
    arity; the caller keeps those that ran), one parse per file. Test-side helpers are not
    followed: pass their spans too (the test side's closure of a step)."""

    def __init__(self, root: Path, declarations: JavaProductionDeclarations) -> None:
        super().__init__(root)
        self.declarations = declarations

    def _callee(self, parsed: _TestFile, node: tree_sitter.Node) -> list[JavaDeclaration]:
        if node.type == "method_invocation":
            return self._invocation(parsed, node)
        if node.type == "object_creation_expression":
            created = self._production_type(parsed, node.child_by_field_name("type"))
            return _fitting(self.declarations.constructors(created), node) if created else []
        if node.type == "method_reference":
            return self._reference(parsed, node)
        if node.type == "explicit_constructor_invocation":
            keyword = node.child_by_field_name("constructor")
            if keyword is None or keyword.type != "super":
                return []
            return _fitting(
                [
                    c
                    for s in self._frames(parsed, node)[:1]
                    for t in s.supers
                    for c in self.declarations.constructors(t)
                ],
                node,
            )
        return []

    def _invocation(self, parsed: _TestFile, node: tree_sitter.Node) -> list[JavaDeclaration]:
        name_node, receiver = node.child_by_field_name("name"), node.child_by_field_name("object")
        if name_node is None or name_node.text is None:
            return []
        name = name_node.text.decode()
        if receiver is None or receiver.type == "this":
            return _fitting(self._unqualified(parsed, node, name, static_imports=receiver is None), node)
        if receiver.type == "super":
            return _fitting(self._inherited(parsed, node, name, direct_only=True), node)
        if receiver.type in _LITERALS:
            return []
        kind, type_ = self._receiver(parsed, receiver)
        if kind == "type":
            return _fitting(self.declarations.members(type_, name, static_only=True), node) if type_ else []
        return _fitting(self.declarations.methods.get(name, []), node)

    def _reference(self, parsed: _TestFile, node: tree_sitter.Node) -> list[JavaDeclaration]:
        named = [c for c in node.children if c.type not in _COMMENTS]
        if len(named) < 3:
            return []
        receiver, member = named[0], named[-1]
        if member.type == "new":
            created = self._production_type(parsed, receiver)
            return self.declarations.constructors(created) if created else []
        if member.type != "identifier" or member.text is None:
            return []
        name = member.text.decode()
        if receiver.type == "this":
            return self._unqualified(parsed, node, name, static_imports=False)
        if receiver.type == "super":
            return self._inherited(parsed, node, name, direct_only=True)
        if receiver.type in _LITERALS:
            return []
        kind, type_ = self._receiver(parsed, receiver)
        if kind == "type":
            return self.declarations.members(type_, name) if type_ else []
        return list(self.declarations.methods.get(name, ()))

    def _receiver(self, parsed: _TestFile, node: tree_sitter.Node) -> tuple[Literal["type", "value"], str | None]:
        """Whether a receiver names a type (with its canonical name if a production one) or a value."""
        if node.type == "generic_type":  # ``List<String>::new``, ``Foo<T>::m``
            parts = _type_parts(node)
            resolved = self.declarations.resolve(parsed.scope, parts) if parts else None
            return "type", resolved if resolved in self.declarations.types else None
        parts = _type_parts(node)
        if parts is None or parts[0] in parsed.variables:
            return "value", None
        resolved = self.declarations.resolve(parsed.scope, parts)
        if resolved is not None:  # a production type, else one of the test side or a library...
            if resolved in self.declarations.types or len(parts) == 1:
                return "type", resolved if resolved in self.declarations.types else None
            # ... and ``Lib.Nested`` or ``Lib.FIELD`` after it
            return ("type", None) if _looks_like_type(parts[-1]) else ("value", None)
        if self.declarations.resolve(parsed.scope, parts[:1]) is not None:
            return "value", None  # ``ProductionType.FIELD``
        if len(parts) == 1:
            return ("type", None) if _looks_like_type(parts[0]) else ("value", None)
        # ``java.util.Arrays``, ``System.out``, ``Color.RED``: a type when every segment after a
        # lower-case package prefix is a type's
        rest = [p for p in parts if not p[:1].islower()]
        if parts[0][:1].islower() and rest and parts[-len(rest) :] == rest and all(map(_looks_like_type, rest)):
            return "type", None
        if _looks_like_type(parts[0]) and all(map(_looks_like_type, parts)):
            return "type", None
        return "value", None

    def _production_type(self, parsed: _TestFile, node: tree_sitter.Node | None) -> str | None:
        parts = _type_parts(node)
        resolved = self.declarations.resolve(parsed.scope, parts) if parts else None
        return resolved if resolved in self.declarations.types else None

    def _unqualified(
        self, parsed: _TestFile, node: tree_sitter.Node, name: str, static_imports: bool = True
    ) -> list[JavaDeclaration]:
        frames = self._frames(parsed, node)
        if any(name in frame.methods for frame in frames):
            return []  # the test side's own method: its span brings its calls
        inherited = self._inherited(parsed, node, name)
        if inherited or not static_imports:
            return inherited
        holders = parsed.scope.static_single.get(name) or parsed.scope.static_on_demand
        found: list[JavaDeclaration] = []
        for holder in holders:
            resolved = holder if holder in self.declarations.types else None
            if resolved is not None:
                found += self.declarations.members(resolved, name, static_only=True)
        return found

    def _inherited(
        self, parsed: _TestFile, node: tree_sitter.Node, name: str, direct_only: bool = False
    ) -> list[JavaDeclaration]:
        """Methods named ``name`` the enclosing test classes inherit from production types
        (``direct_only``: the innermost class's, for ``super``)."""
        frames = self._frames(parsed, node)
        found: list[JavaDeclaration] = []
        for frame in frames[:1] if direct_only else frames:
            for holder in frame.supers:
                found += self.declarations.members(holder, name)
        return found

    def _frames(self, parsed: _TestFile, node: tree_sitter.Node) -> list[_Frame]:
        """The classes enclosing a node in the test file, innermost first."""
        frames: list[_Frame] = []
        inner, current = node, node.parent
        while current is not None:
            body = None
            if current.type in TYPE_DECLARATIONS:
                body, supers = current.child_by_field_name("body"), _super_nodes(current)
            elif current.type == "object_creation_expression" and inner.type == "class_body":
                body = inner  # inside an anonymous class's body, not in its arguments
                supers = [t for t in [current.child_by_field_name("type")] if t is not None]
            if body is not None:
                key = (current.start_byte, current.end_byte)
                if key not in parsed.frames:
                    declared = {
                        m.child_by_field_name("name") for m in _body_members(body) if m.type == "method_declaration"
                    }
                    production = [self._production_type(parsed, s) for s in supers]
                    parsed.frames[key] = _Frame(
                        {n.text.decode() for n in declared if n is not None and n.text}, [p for p in production if p]
                    )
                frames.append(parsed.frames[key])
            inner, current = current, current.parent
        return frames

    def _parse(self, file: str) -> _TestFile:
        tree = java_parser().parse((self.root / file).read_bytes())
        directory = (self.root / file).parent
        scope = _scope(tree.root_node, frozenset(p.stem for p in directory.glob("*.java")))
        variables: set[str] = set()
        functions: list[tree_sitter.Node] = []
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in _VARIABLE_BINDERS:  # ``T... xs`` too: its declarator names it
                name = node.child_by_field_name("name")
                if name is not None and name.type == "identifier" and name.text is not None:
                    variables.add(name.text.decode())
            elif node.type == "lambda_expression":
                params = node.child_by_field_name("parameters")
                if params is not None:
                    variables.update(
                        p.text.decode()
                        for p in [params, *params.named_children]
                        if p.type == "identifier" and p.text is not None
                    )
            if node.type in _FUNCTION_NODES:
                functions.append(node)
            stack.extend(node.named_children)
        functions.sort(key=lambda n: n.start_byte)  # outermost first among equal lines
        parsed = _TestFile(tree, scope, variables, functions)
        return parsed


def _body_members(body: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    for child in body.named_children:
        if child.type == "enum_body_declarations":
            yield from child.named_children
        else:
            yield child


def _fitting(candidates: Iterable[JavaDeclaration], call: tree_sitter.Node) -> list[JavaDeclaration]:
    """The candidates a call's argument count allows."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return list(candidates)
    count = sum(1 for a in arguments.named_children if a.type not in _COMMENTS)
    return [d for d in candidates if d.accepts(count)]


__all__ = [
    "CallReader",
    "HandlerSpan",
    "JavaDeclaration",
    "JavaProductionDeclarations",
    "scan_declarations",
]
