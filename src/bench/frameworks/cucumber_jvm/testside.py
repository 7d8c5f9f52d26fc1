"""The test side of a Cucumber-JVM project at step-method granularity (tree-sitter-java, never
by compiling or running the code).

Cucumber-JVM's glue is the classes of the glue packages (and their subpackages) under the test
source root; a step definition is a method annotated ``@Given/@When/@Then/@And/@But``
(``io.cucumber.java.en``, any other language's ``io.cucumber.java.<lang>`` keywords, the older
``cucumber.api.java.<lang>``), its pattern the annotation's compile-time constant. Step classes
keep scenario state in fields and get shared state objects through their constructors
(cucumber-picocontainer), call private helpers, static utilities of other test classes and the
methods of the injected objects. So a test implementation here is:

- its **step sites**: the annotated methods (``StepSite``; a method with two step annotations is
  two sites on one method, removed together);
- the **closure** of those sites: every member they reach, transitively: methods and
  constructors called (by name and argument count; the receiver's declared type when the
  scanner can tell it — a local, parameter or field of a test class's type, ``this``, a class
  name — else every test-side method of that name: overloads and unknown receivers are resolved
  conservatively), fields read or written (with their initializers), the step class's
  instantiation (cucumber creates the object to call a step: its constructors, instance
  initializers and initialized fields), nested types named, overriding methods of test-side
  subclasses; stopping at **infrastructure**: whatever the suite runs without any step — hook
  methods (``@Before``, ``@After``, ``@BeforeStep``, ``@ParameterType``, ``@DataTableType``...)
  and JUnit methods (``@Test``, ``@BeforeEach``...) with their classes' instantiation, ``main``,
  static initializers, the members a top-level type cannot lose (below), and the **shared state
  holders**: every test class picocontainer injects into a step or hook class's constructor (and
  transitively into theirs) — its instantiation and its non-private instance fields, the state
  the step classes share — plus everything all of these reach.

Only members of files under the glue directories are ever part of a closure or removed; the
rest of the test sources (JUnit tests, other suites, shared utilities outside the glue) is parsed
so that what it uses stays. A removal never takes a member something kept still reaches
(``files_without_closure``): the candidates are the sites' closure, the roots of what stays are
every other member, and only candidates no root reaches go (an object's construction is no
root: a class whose steps all went loses its constructors unless something kept creates it). A
step method something kept still calls stays as a plain method without its step annotation (the
step is undefined all the same). What compiling needs beyond calls and field uses is modelled as
reachability too: a kept member keeps its nested type; a type keeps its abstract methods, its
``@Override`` methods, the methods that override a test-side supertype's, every non-private
instance method when a supertype is not a test class (it may implement an interface method),
and its constructors when it is an enum, a record or extends a class (a subclass's default
constructor would need its superclass's no-argument one); a blank ``final`` field keeps its
class's constructors; an ``@Override`` method keeps the method it overrides. Those members of a
top-level glue type are infrastructure (a top-level type always stays). Top-level types and
files are never removed (a view may leave an empty class). An import that names a removed member
(``import static x.Steps.helper;``, ``import x.Steps.Inner;``) goes with it, in whatever file;
unused imports are otherwise fine in Java and stay.

What the scan cannot see, it over-approximates (a helper only reflection or a string names is
not seen at all): a receiver of unknown type (a chained call, ``var``, a lambda parameter)
reaches every test-side method or field of that name, a local that shadows a field still counts
as a use of it. A closure may hold a little more than runs; a removal keeps more than needed,
never less. Lambda glue (``io.cucumber.java8``: steps registered in a constructor) is not
scanned: its steps are no sites and stay in every view.

Text operations keep every other line where it was (``keep_lines``: a removed span becomes as
many empty lines), as the godog and cucumber-js sides do; a view drops the lines instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import tree_sitter

from bench.frameworks.cucumber_jvm.cucumber_json import JavaMethod as ReportedMethod
from bench.frameworks.cucumber_jvm.syntax import METHOD_DECLARATIONS, TYPE_DECLARATIONS, java_parser, package_name

STEP_KEYWORDS = {"Given": "given", "When": "when", "Then": "then", "And": "and", "But": "but"}  # English
# io.cucumber.java.<lang>.Keyword (cucumber-jvm >= 5), cucumber.api.java.<lang>.Keyword (before)
_STEP_PACKAGE = re.compile(r"^(?:io\.cucumber\.java|cucumber\.api\.java)\.(\w+)$")
HOOK_ANNOTATIONS = frozenset({
    "Before", "After", "BeforeStep", "AfterStep", "BeforeAll", "AfterAll", "ParameterType", "DataTableType",
    "DocStringType", "DefaultParameterTransformer", "DefaultDataTableEntryTransformer",
    "DefaultDataTableCellTransformer"})
# JUnit 4/5 tests and fixtures in a glue package run whatever the scenario: infrastructure
TEST_ANNOTATIONS = frozenset({
    "Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate", "BeforeEach", "AfterEach",
    "BeforeClass", "AfterClass"})
_COMMENTS = ("line_comment", "block_comment")
_JAVA_LANG = frozenset({
    "String", "Object", "Integer", "Long", "Short", "Byte", "Character", "Boolean", "Double", "Float", "Number",
    "CharSequence", "Iterable", "Class", "Enum", "Void", "Comparable", "Runnable", "StringBuilder", "Throwable",
    "Exception", "RuntimeException", "Error", "Thread", "Math", "System"})
_T = TypeVar("_T")
_PRIMITIVE_TYPES = ("integral_type", "floating_point_type", "boolean_type", "void_type")
_DESCRIPTOR_PRIMITIVES = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long",
                          "F": "float", "D": "double"}
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "s": " ", '"': '"', "'": "'",
                   "\\": "\\"}
# where an identifier is a name being declared or a label, not a use
_NAME_FIELDS = ("name", "field", "key", "parameters", "label")
_NAME_PARENTS = ("scoped_identifier", "labeled_statement", "break_statement", "continue_statement",
                 "inferred_parameters", "package_declaration", "import_declaration", "module_declaration",
                 "type_parameter")


# --------------------------------------------------------------------------- model
@dataclass(frozen=True)
class StepSite:
    """One step annotation of a method of the glue (the method is what a removal takes)."""

    file: str  # relative to the project root
    kind: str | None  # the annotation's keyword: given/when/then/and/but (None: a language not known here);
    # cucumber-jvm binds a step of any keyword to it, the feature's keywords say what a step is
    annotation: str  # as written: ``Given``, ``io.cucumber.java.en.Then``, ``Dado``
    pattern: str | None  # the annotation's value (None: not a constant this scanner folds)
    line: int  # 1-based first line of the method (its first annotation or modifier: ``JavaMethod.line``)
    end_line: int
    start_byte: int  # the method declaration, annotations included (its Javadoc is not)
    end_byte: int
    qualname: str  # ``Steps.method``, ``Outer.Inner.method``
    class_name: str  # binary name, as cucumber reports it: ``com.x.Outer$Inner``
    method: str
    parameter_types: tuple[str, ...]  # erased, ``Class.getTypeName`` style: ``java.lang.String``, ``byte[]``
    annotation_line: int
    annotation_start: int  # the annotation itself (what goes when the method must stay)
    annotation_end: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def signature(self) -> str:
        """``com.x.Steps.method(java.lang.String,int)``: the JSON formatter's ``match.location``."""
        return f"{self.class_name}.{self.method}({','.join(self.parameter_types)})"

    @property
    def regex(self) -> bool:
        """cucumber-jvm reads the pattern as a regular expression (else a Cucumber expression)."""
        return self.pattern is not None and (self.pattern.startswith("^") or self.pattern.endswith("$"))


@dataclass(frozen=True)
class JavaDecl:
    """A member a closure holds or a removal takes."""

    file: str
    qualname: str  # ``Steps.helper``, ``Steps.<init>``, ``Steps.total`` (a field; ``Steps.a,b`` for ``int a, b;``),
    # ``Steps.<clinit>`` / ``Steps.<instance-init>`` (initializer blocks), ``Steps.Inner`` (a nested type)
    kind: str  # "method", "constructor", "field", "initializer" or "type"
    line: int  # first line of the declaration (its first annotation or modifier)
    end_line: int
    start_byte: int  # with its doc comment (what a removal takes)
    end_byte: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Closure:
    """The test implementation of a set of sites."""

    sites: tuple[StepSite, ...]
    functions: tuple[JavaDecl, ...]  # the step methods and the methods, constructors, fields and initializers
    # they reach, infrastructure excluded, source order (spans never overlap)
    types: tuple[JavaDecl, ...] = ()  # nested types they name (spans holding members)

    @property
    def decls(self) -> tuple[JavaDecl, ...]:
        return self.functions

    @property
    def files(self) -> list[str]:
        return sorted({s.file for s in self.sites} | {f.file for f in self.functions} | {t.file for t in self.types})


@dataclass(eq=False)  # identity: a member is itself
class _Unit:
    kind: str  # method, constructor, field, initializer, static-initializer, type, or new (virtual: instantiation)
    cls: _Class
    name: str
    node: tree_sitter.Node | None
    decl: JavaDecl | None = None
    names: tuple[str, ...] = ()  # a field declaration's names
    values: dict[str, tree_sitter.Node] = field(default_factory=dict)  # a field's initializers by name
    static: bool = False
    private: bool = False
    final: bool = False
    arity: int = 0
    varargs: bool = False
    annotations: tuple[str, ...] = ()  # simple names
    sites: list[StepSite] = field(default_factory=list)
    edges: list[_Unit] | None = None
    fixture_sites: list[StepSite] = field(default_factory=list)  # a companion scenario's step method

    @property
    def glue_method(self) -> bool:
        """Cucumber or JUnit calls it (a step, a hook, a test, a companion scenario's step)."""
        return bool(self.sites) or bool(self.fixture_sites) or \
            bool(set(self.annotations) & (HOOK_ANNOTATIONS | TEST_ANNOTATIONS))


@dataclass(eq=False)
class _Class:
    file: _File
    node: tree_sitter.Node
    owner: str  # dotted type path, ``Outer.Inner``
    name: str
    outer: _Class | None
    type_unit: _Unit = field(init=False)
    new_unit: _Unit = field(init=False)
    members: list[_Unit] = field(default_factory=list)
    methods: dict[str, list[_Unit]] = field(default_factory=dict)
    ctors: list[_Unit] = field(default_factory=list)
    fields: dict[str, _Unit] = field(default_factory=dict)
    field_types: dict[str, tree_sitter.Node | None] = field(default_factory=dict)
    nested: dict[str, _Class] = field(default_factory=dict)
    type_params: dict[str, tree_sitter.Node | None] = field(default_factory=dict)
    supers: list[_Class] = field(default_factory=list)
    subs: list[_Class] = field(default_factory=list)
    external_super: bool = False
    has_superclass: bool = False

    @property
    def kind(self) -> str:
        return self.node.type

    @property
    def qualified(self) -> str:
        return f"{self.file.package}.{self.owner}" if self.file.package else self.owner

    @property
    def binary(self) -> str:
        return f"{self.file.package}.{self.owner.replace('.', '$')}" if self.file.package \
            else self.owner.replace(".", "$")


@dataclass(frozen=True)
class _Import:
    node: tree_sitter.Node
    path: str
    static: bool
    asterisk: bool


@dataclass(eq=False)
class _File:
    rel: str
    data: bytes
    tree: tree_sitter.Tree
    package: str
    glue: bool
    imports: list[_Import] = field(default_factory=list)
    classes: list[_Class] = field(default_factory=list)  # top-level
    single: dict[str, str] = field(default_factory=dict)  # simple name -> imported type
    demand: list[str] = field(default_factory=list)  # ``import p.*;`` packages (or types)
    static_single: dict[str, list[str]] = field(default_factory=dict)  # member name -> its types
    static_demand: list[str] = field(default_factory=list)  # ``import static p.T.*;`` types


# --------------------------------------------------------------------------- Java literals
def step_matches(site: StepSite, text: str) -> bool:
    """Whether cucumber-jvm would bind a step with ``text`` to ``site``: its pattern as a
    regular expression when it reads as one (``^...``/``...$``), else as a Cucumber expression
    (the ``cucumber-expressions`` package, built-in parameter types; without it, or for a
    custom parameter type, equal text only)."""
    pattern = site.pattern
    if pattern is None:
        return False
    if site.regex:
        try:
            return re.search(pattern, text) is not None
        except re.error:
            return False
    try:
        from cucumber_expressions.expression import CucumberExpression
        from cucumber_expressions.parameter_type_registry import ParameterTypeRegistry

        return CucumberExpression(pattern, ParameterTypeRegistry()).match(text) is not None
    except Exception:  # noqa: BLE001 - not installed, or a parameter type only the project defines
        return pattern == text


def unescape_java(body: str) -> str:
    """A string literal's body as javac reads it (``\\uXXXX``, octal and the simple escapes)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e == "u":
            j = i + 1
            while j < len(body) and body[j] == "u":
                j += 1
            digits = body[j:j + 4]
            if re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                out.append(chr(int(digits, 16)))
                i = j + 4
                continue
            out.append("\\u")
            i += 2
        elif e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
        elif e in "01234567":
            octal = re.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", body[i + 1:])
            assert octal is not None
            out.append(chr(int(octal[0], 8)))
            i += 1 + len(octal[0])
        elif e == "\n":  # a text block's line continuation
            i += 2
        else:  # not valid Java; keep it as written
            out.append("\\" + e)
            i += 2
    text = "".join(out)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")  # \uD83D\uDE00 pairs


def _text_block(raw: str) -> str:
    """A text block's content (between the delimiters), incidental white space stripped (JLS 3.10.6)."""
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    newline = raw.find("\n")
    lines = raw[newline + 1:].split("\n") if newline >= 0 else [""]
    significant = [line for line in lines[:-1] if line.strip()] + [lines[-1]]
    indent = min(len(line) - len(line.lstrip(" \t\f")) for line in significant)
    return "\n".join(line[indent:].rstrip(" \t\f") if line.strip() else "" for line in lines)


def java_string_value(node: tree_sitter.Node) -> str | None:
    """The value of a Java string literal or text block node, None for anything else."""
    if node.type != "string_literal":
        return None
    text = _text(node)
    if text.startswith('"""'):
        return unescape_java(_text_block(text[3:-3]))
    return unescape_java(text[1:-1])


def _text(node: tree_sitter.Node | None) -> str:
    return (node.text or b"").decode("utf-8", errors="replace") if node is not None else ""


@lru_cache(maxsize=1)
def _language_keywords() -> dict[str, dict[str, str]]:
    """language package -> annotation name -> kind, as cucumber-java names its annotations (the
    keyword without white space, apostrophes, commas and exclamation marks: ``Etantdonné``)."""
    try:
        from importlib.resources import files

        text = files("gherkin").joinpath("gherkin-languages.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return {"en": dict(STEP_KEYWORDS)}
    found: dict[str, dict[str, str]] = {}
    for language, keywords in json.loads(text).items():
        names: dict[str, str] = {}
        for kind in ("given", "when", "then", "and", "but"):
            for keyword in keywords.get(kind, []):
                name = re.sub(r"[\s',!]", "", keyword)
                if name and name != "*":
                    names.setdefault(name, kind)
        found[language.replace("-", "_").lower()] = names
    return found


def _step_kind(qualified: str) -> tuple[bool, str | None]:
    """Whether an annotation type is a step keyword of cucumber-java, and its kind."""
    package, _, name = qualified.rpartition(".")
    match = _STEP_PACKAGE.match(package)
    if match is None:
        return False, None
    keywords = _language_keywords().get(match[1].lower())
    if keywords is None:
        return True, None  # a language this table does not know: a step all the same
    if name in keywords:
        return True, keywords[name]
    return False, None


# --------------------------------------------------------------------------- reported types
def normalize_type(text: str) -> str:
    """A parameter type as cucumber may report it, erased and in ``getTypeName`` form:
    ``[Ljava.lang.String;`` / ``java.lang.String...`` -> ``java.lang.String[]``,
    ``java.util.List<java.lang.String>`` -> ``java.util.List``, ``[B`` -> ``byte[]``."""
    text = text.strip()
    dims = 0
    if text.startswith("["):
        dims = len(text) - len(text.lstrip("["))
        rest = text[dims:]
        text = rest[1:-1] if rest.startswith("L") and rest.endswith(";") else _DESCRIPTOR_PRIMITIVES.get(rest, rest)
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"<[^<>]*>", "", text)
    text = text.replace(" ", "")
    if text.endswith("..."):
        text, dims = text[:-3], dims + 1
    while text.endswith("[]"):
        text, dims = text[:-2], dims + 1
    return text + "[]" * dims


def _simple_type(text: str) -> str:
    normal = normalize_type(text)
    return re.split(r"[.$]", normal)[-1]


def _rejoin(parameters: Iterable[str]) -> list[str]:
    """Parameter types split at every comma, generic arguments' commas included, put back together."""
    out: list[str] = []
    depth = 0
    for part in parameters:
        if depth > 0 and out:
            out[-1] += "," + part
        else:
            out.append(part)
        depth += part.count("<") - part.count(">")
    return out


# --------------------------------------------------------------------------- scanning
def _modifiers(node: tree_sitter.Node) -> tree_sitter.Node | None:
    return next((c for c in node.children if c.type == "modifiers"), None)


def _annotation_nodes(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    modifiers = _modifiers(node)
    return [a for a in modifiers.named_children if a.type in ("annotation", "marker_annotation")] \
        if modifiers is not None else []


def _keywords(node: tree_sitter.Node) -> set[str]:
    modifiers = _modifiers(node)
    return {c.type for c in modifiers.children if not c.is_named} if modifiers is not None else set()


def _doc_start(node: tree_sitter.Node) -> int:
    """Start of the comments directly above a declaration (its Javadoc)."""
    start, row = node.start_byte, node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None and sibling.type in _COMMENTS and sibling.end_point[0] in (row, row - 1):
        before = sibling.prev_sibling
        if before is not None and before.end_point[0] == sibling.start_point[0]:
            break  # a trailing comment of what precedes it
        start, row = sibling.start_byte, sibling.start_point[0]
        sibling = before
    return start


def _parameters(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    parameters = node.child_by_field_name("parameters")
    return [p for p in parameters.named_children if p.type in ("formal_parameter", "spread_parameter")] \
        if parameters is not None else []


def _parameter_type(parameter: tree_sitter.Node) -> tree_sitter.Node | None:
    if parameter.type == "formal_parameter":
        return parameter.child_by_field_name("type")
    return next((c for c in parameter.named_children if c.type not in ("modifiers", "variable_declarator")), None)


def _type_name(node: tree_sitter.Node | None) -> str | None:
    """The dotted name of a class type node (generics, arrays and annotations dropped; None: primitive)."""
    if node is None:
        return None
    if node.type == "type_identifier":
        return _text(node)
    if node.type == "scoped_type_identifier":
        return ".".join(_text(c) for c in node.named_children if c.type == "type_identifier")
    if node.type == "generic_type":
        return _type_name(node.named_children[0]) if node.named_children else None
    if node.type == "array_type":
        return _type_name(node.child_by_field_name("element"))
    if node.type == "annotated_type":
        return _type_name(node.named_children[-1]) if node.named_children else None
    return None


def _dimensions(node: tree_sitter.Node | None) -> int:
    if node is None or node.type != "array_type":
        return 0
    dims = node.child_by_field_name("dimensions")
    return _text(dims).count("[") + _dimensions(node.child_by_field_name("element"))


def _walk(node: tree_sitter.Node, skip: tuple[tuple[int, int], ...] = ()) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if skip and any(start <= current.start_byte and current.end_byte <= end and current is not node
                        for start, end in skip):
            continue
        yield current
        stack.extend(reversed(current.children))


def _locals(node: tree_sitter.Node) -> dict[str, tree_sitter.Node | None]:
    """Names a member declares (parameters, locals, resources, catch and lambda parameters,
    patterns) with their declared types (None: not written, ``var``, a lambda's)."""
    found: dict[str, tree_sitter.Node | None] = {}
    for current in _walk(node):
        kind = current.type
        if kind in ("formal_parameter", "enhanced_for_statement", "resource", "instanceof_expression"):
            name = current.child_by_field_name("name")
            type_node = current.child_by_field_name("right" if kind == "instanceof_expression" else "type")
            if name is not None and name.type == "identifier":
                found[_text(name)] = type_node
        elif kind == "spread_parameter":
            declarator = next((c for c in current.named_children if c.type == "variable_declarator"), None)
            name = declarator.child_by_field_name("name") if declarator is not None else None
            if name is not None:
                found[_text(name)] = _parameter_type(current)
        elif kind == "local_variable_declaration":
            type_node = current.child_by_field_name("type")
            for declarator in current.children_by_field_name("declarator"):
                name = declarator.child_by_field_name("name")
                if name is not None:
                    found[_text(name)] = None if _text(type_node) == "var" else type_node
        elif kind == "catch_formal_parameter":
            name = current.child_by_field_name("name")
            catch_type = next((c for c in current.named_children if c.type == "catch_type"), None)
            types = [c for c in catch_type.named_children] if catch_type is not None else []
            if name is not None:
                found[_text(name)] = types[0] if len(types) == 1 else None
        elif kind == "lambda_expression":
            parameters = current.child_by_field_name("parameters")
            if parameters is not None and parameters.type == "identifier":
                found[_text(parameters)] = None
            elif parameters is not None and parameters.type == "inferred_parameters":
                for parameter in parameters.named_children:
                    found[_text(parameter)] = None
    for declared_name, type_node in list(found.items()):
        if type_node is not None and _text(type_node) == "var":
            found[declared_name] = None
    return found


def _is_use(node: tree_sitter.Node) -> bool:
    """Whether an identifier is a use of a name (not a declaration, a label or part of a qualified name)."""
    parent = node.parent
    if parent is None or parent.type in _NAME_PARENTS:
        return False
    for index in range(parent.child_count):
        if parent.child(index) == node:
            return parent.field_name_for_child(index) not in _NAME_FIELDS
    return True


def _arguments(node: tree_sitter.Node) -> int:
    arguments = node.child_by_field_name("arguments")
    return len([a for a in arguments.named_children if a.type not in _COMMENTS]) if arguments is not None else 0


# --------------------------------------------------------------------------- the test side
class TestSideJava:
    """The Java files of a Cucumber-JVM project's test sources, its glue's step methods, and what
    they reach."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, root: Path, glue_dirs: Iterable[str], test_sources: str | None = None,
                 fixture_steps: Iterable[str] = ()) -> None:
        """``glue_dirs``: the glue packages' source directories (relative to ``root``; their
        subpackages are glue too, as cucumber scans them); ``test_sources``: the test source root
        (default: the one the glue files' package declarations imply, else ``src/test/java``).
        ``fixture_steps``: the step texts of the suite's companion scenarios (Kapua's ``@setup``
        and ``@teardown``, ``settings.setup_tags``): the step methods they match are
        infrastructure like hooks — no site, never removed, in every workspace and view."""
        self.root = root
        self.glue_dirs = [d.strip("/") for d in glue_dirs]
        glue: set[str] = set()
        for directory in self.glue_dirs:
            base = root / directory
            if base.is_dir():
                glue |= {p.relative_to(root).as_posix() for p in base.rglob("*.java") if p.is_file()}
        self.files = sorted(glue)  # the glue's files: what closures and removals may touch
        raw = {rel: (root / rel).read_bytes() for rel in self.files}
        self.test_sources = (test_sources or self._source_root(raw)).strip("/")
        base = root / self.test_sources
        others = {p.relative_to(root).as_posix() for p in base.rglob("*.java") if p.is_file()} \
            if self.test_sources and base.is_dir() else set()
        self.source_files = sorted(glue | others)  # every file parsed: what keeps members alive
        self._files: dict[str, _File] = {}
        self._classes: list[_Class] = []
        for rel in self.source_files:
            data = raw[rel] if rel in raw else (root / rel).read_bytes()
            self._files[rel] = self._parse(rel, data, rel in glue)
        self._by_qualified = {c.qualified: c for c in self._classes}
        self._by_simple: dict[str, list[_Class]] = {}
        self._methods: dict[str, list[_Unit]] = {}
        self._fields: dict[str, list[_Unit]] = {}
        self._units: list[_Unit] = []
        self._type_cache: dict[tuple[int, str], list[_Class]] = {}
        for cls in self._classes:
            self._by_simple.setdefault(cls.name, []).append(cls)
            self._units += [cls.type_unit, cls.new_unit, *cls.members]
            for unit in cls.members:
                if unit.kind == "method":
                    self._methods.setdefault(unit.name, []).append(unit)
                elif unit.kind == "field":
                    for name in unit.names:
                        self._fields.setdefault(name, []).append(unit)
        for cls in self._classes:
            self._link_supertypes(cls)
        self._type_cache.clear()  # lookups made while linking saw partial lineages
        self._sites: list[StepSite] = []
        self._site_units: dict[StepSite, _Unit] = {}
        for rel in self.files:
            for cls in self._all_classes(self._files[rel]):
                for unit in cls.members:
                    if unit.kind == "method":
                        self._scan_sites(unit)
        self._sites.sort(key=lambda s: (s.file, s.start_byte, s.annotation_start))
        self._fixtures = self._take_fixtures(list(fixture_steps))
        self._shared = self._shared_holders()
        self._infrastructure = self._reach(self._infrastructure_roots(), ())
        self._infrastructure_ids = {id(u) for u in self._infrastructure}

    # ------------------------------------------------------------------ sites
    def sites(self) -> list[StepSite]:
        return list(self._sites)

    @property
    def fixture_sites(self) -> list[StepSite]:
        """The step annotations of the methods companion scenarios run (``fixture_steps``)."""
        return [site for unit in self._fixtures for site in unit.fixture_sites]

    def _take_fixtures(self, texts: list[str]) -> list[_Unit]:
        """The methods with a site matching one of ``texts``: out of the sites, infrastructure."""
        if not texts:
            return []
        units: dict[int, _Unit] = {}
        for site in self._sites:
            if any(step_matches(site, text) for text in texts):
                unit = self._site_units[site]
                units[id(unit)] = unit
        for unit in units.values():
            unit.fixture_sites, unit.sites = list(unit.sites), []
        gone = {id(site) for unit in units.values() for site in unit.fixture_sites}
        self._sites = [site for site in self._sites if id(site) not in gone]
        return list(units.values())

    def site_for_method(self, method: ReportedMethod, pattern: str | None = None) -> StepSite | None:
        """The site of the Java method cucumber reports (the JSON formatter's ``match.location``,
        the message stream's ``javaMethod``): class and method name, overloads told apart by their
        parameter types (erased and normalized; simple names when a type's package is a guess
        here). A method with several step annotations: the one with ``pattern``, else the first."""
        candidates = [s for s in self._sites if s.class_name == method.class_name and s.method == method.method]
        if len({(s.file, s.start_byte) for s in candidates}) > 1:
            candidates = self._by_parameters(candidates, method.parameter_types, lambda s: s.parameter_types)
        if pattern is not None and len(candidates) > 1:
            candidates = [s for s in candidates if s.pattern == pattern] or candidates
        return candidates[0] if candidates else None

    def site_for_pattern(self, pattern: str, method: ReportedMethod | None = None) -> StepSite | None:
        """The site annotated with ``pattern`` (as the message stream's ``pattern.source`` has it).
        Several: the one on cucumber's reported ``method``, else the first."""
        candidates = [s for s in self._sites if s.pattern == pattern]
        if len(candidates) > 1 and method is not None:
            at = self.site_for_method(method, pattern)
            candidates = [at] if at is not None and at in candidates else candidates
        return candidates[0] if candidates else None

    def decl_at(self, method: ReportedMethod) -> JavaDecl | None:
        """The method or constructor (``<init>``) cucumber reports, step, hook or helper."""
        units = [u for c in self._classes if c.binary == method.class_name
                 for u in c.members if u.kind in ("method", "constructor") and u.name == method.method]
        if len(units) > 1:
            units = self._by_parameters(units, method.parameter_types, self._unit_parameters)
        return units[0].decl if units else None

    @staticmethod
    def _by_parameters(candidates: list[_T], reported: Iterable[str], types_of: Callable[[_T], Sequence[str]]) -> list[_T]:
        """The candidates whose parameter types are the reported ones: exactly (normalized), by
        simple names, by count, else all."""
        wanted = [normalize_type(t) for t in _rejoin(reported)]
        exact = [c for c in candidates if [normalize_type(t) for t in types_of(c)] == wanted]
        if exact:
            return exact
        simple = [c for c in candidates if [_simple_type(t) for t in types_of(c)] == [_simple_type(t) for t in wanted]]
        if simple:
            return simple
        return [c for c in candidates if len(types_of(c)) == len(wanted)] or candidates

    # ------------------------------------------------------------------ handlers and closure
    def handlers(self, site: StepSite) -> list[JavaDecl]:
        """The method a site annotates (one: the step is the method)."""
        decl = self._site_units[site].decl
        return [decl] if decl is not None else []

    def closure(self, sites: Iterable[StepSite]) -> Closure:
        chosen = tuple(sorted(set(sites), key=lambda s: (s.file, s.start_byte, s.annotation_start)))
        reached = self._reach([self._site_units[s] for s in chosen], self._infrastructure_ids)
        members: list[JavaDecl] = []
        types: list[JavaDecl] = []
        for unit in reached:
            if unit.decl is not None and unit.cls.file.glue:
                (types if unit.kind == "type" else members).append(unit.decl)
        members.sort(key=lambda d: (d.file, d.start_byte))
        types.sort(key=lambda d: (d.file, d.start_byte))
        return Closure(chosen, tuple(members), tuple(types))

    @property
    def infrastructure_functions(self) -> list[JavaDecl]:
        """What the suite runs without any step (hooks, JUnit methods, static initializers, the
        shared state holders' construction and fields, and what they reach) in the glue: never
        part of a closure, never removed."""
        return sorted((u.decl for u in self._infrastructure if u.decl is not None and u.cls.file.glue),
                      key=lambda d: (d.file, d.start_byte))

    @property
    def shared_classes(self) -> list[str]:
        """The qualified names of the shared state holders (what picocontainer injects)."""
        return sorted(c.qualified for c in self._shared)

    # ------------------------------------------------------------------ workspace text
    def files_without(self, removed: Iterable[StepSite], keep_lines: bool = True) -> dict[str, bytes]:
        """Every file that loses a step method (negative validation): each site's method removed,
        or, when something kept still calls it, only its step annotation. Their helpers stay,
        unused, which Java accepts."""
        chosen = list(dict.fromkeys(removed))
        return self._remove(chosen, self._site_methods(chosen), keep_lines)[0]

    def files_keeping(self, kept: Iterable[StepSite]) -> dict[str, bytes]:
        """Every step method but ``kept``'s removed (positive validation)."""
        keep = set(kept)
        return self.files_without(s for s in self._sites if s not in keep)

    def files_without_closure(self, sites: Iterable[StepSite],
                              keep_lines: bool = True) -> tuple[dict[str, bytes], list[JavaDecl]]:
        """The sites' methods removed and, with them, the members of their closure that nothing
        remaining reaches (a helper another step, a hook or any other test code still uses
        stays). Returns the rewritten files and the members removed."""
        chosen = list(dict.fromkeys(sites))
        movable = {id(u) for u in self._site_methods(chosen)}
        wanted = set(chosen)
        kept_sites = {id(self._site_units[s]) for s in self._sites if s not in wanted}
        candidates = [u for u in self._reach([self._site_units[s] for s in chosen], self._infrastructure_ids)
                      if u.cls.file.glue and id(u) not in kept_sites
                      and (not u.sites or id(u) in movable)]
        return self._remove(chosen, candidates, keep_lines)

    def files_isolating(self, kept: Iterable[StepSite], keep_lines: bool = True) -> dict[str, bytes]:
        """Only ``kept`` and what they reach: every other step method and every member only those
        reach removed."""
        keep = set(kept)
        return self.files_without_closure([s for s in self._sites if s not in keep], keep_lines)[0]

    def view(self) -> tuple[dict[str, bytes], list[str], list[str]]:
        """A repository view's test side: every step method and every member only step methods
        reach removed (lines dropped, not blanked: an agent reads it). Returns the rewritten
        files, the removed ``FILE:LINE`` list, and the glue files kept as they are."""
        sites = self.sites()
        files, gone = self.files_without_closure(sites, keep_lines=False)
        removed = sorted({s.key for s in sites} | {d.key for d in gone})
        return files, removed, [rel for rel in self.files if rel not in files]

    def strip_handlers(self, sites: Iterable[StepSite], *,
                       only: Iterable[JavaDecl] | None = None) -> dict[str, bytes]:
        """Files with each site's method (or just those in ``only``) reduced to a body that does
        nothing (``{}``, or ``{ return <default>; }`` for a method with a result): the step still
        matches and passes, and checks nothing. Line numbers kept."""
        wanted = None if only is None else set(only)
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        done: set[int] = set()
        for site in sites:
            unit = self._site_units[site]
            if id(unit) in done or unit.decl is None or (wanted is not None and unit.decl not in wanted):
                continue
            done.add(id(unit))
            span = _empty_body(unit)
            if span is not None:
                edits.setdefault(unit.decl.file, []).append(span)
        return {rel: self._apply(rel, spans, keep_lines=True) for rel, spans in edits.items()}

    # ------------------------------------------------------------------ removal
    def _site_methods(self, chosen: list[StepSite]) -> list[_Unit]:
        """The methods of ``chosen`` all of whose sites are chosen (only those may go)."""
        wanted = set(chosen)
        units: dict[int, _Unit] = {}
        for site in chosen:
            unit = self._site_units[site]
            if all(s in wanted for s in unit.sites):
                units[id(unit)] = unit
        return list(units.values())

    def _remove(self, chosen: list[StepSite], candidates: list[_Unit],
                keep_lines: bool) -> tuple[dict[str, bytes], list[JavaDecl]]:
        movable = {id(u) for u in candidates}
        # every other member stays and keeps what it reaches (a top-level type always stays); an
        # instantiation is no member: something that stays creates the object, or nothing does
        roots = [u for u in self._units if (id(u) not in movable and u.kind != "new")
                 or (u.kind == "type" and u.cls.outer is None)]
        kept = {id(u) for u in self._reach(roots, ())}
        gone = [u for u in candidates if id(u) not in kept and u.decl is not None]
        gone_ids = {id(u) for u in gone}
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        for site in chosen:
            unit = self._site_units[site]
            if id(unit) not in gone_ids:  # still called: the method stays, the step goes
                edits.setdefault(site.file, []).append((site.annotation_start, site.annotation_end, b""))
        for unit in gone:
            assert unit.decl is not None
            edits.setdefault(unit.decl.file, []).append((unit.decl.start_byte, unit.decl.end_byte, b""))
        for rel, spans in self._import_edits(gone_ids).items():
            edits.setdefault(rel, []).extend(spans)
        files = {rel: self._apply(rel, spans, keep_lines) for rel, spans in edits.items()}
        decls = sorted((u.decl for u in gone if u.decl is not None), key=lambda d: (d.file, d.start_byte))
        return files, decls

    def _import_edits(self, gone: set[int]) -> dict[str, list[tuple[int, int, bytes]]]:
        """Imports naming only removed members (a single static import, a nested type's import)."""
        if not gone:
            return {}
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        for rel, scanned in self._files.items():
            for imported in scanned.imports:
                drop = False
                if imported.static and not imported.asterisk:
                    owner, _, member = imported.path.rpartition(".")
                    cls = self._by_qualified.get(owner)
                    if cls is not None:
                        named = [u for c in self._lineage(cls) for u in self._named_members(c, member)]
                        drop = bool(named) and all(id(u) in gone for u in named)
                else:
                    cls = self._by_qualified.get(imported.path)
                    drop = cls is not None and cls.outer is not None and id(cls.type_unit) in gone
                if drop:
                    edits.setdefault(rel, []).append((imported.node.start_byte, imported.node.end_byte, b""))
        return edits

    @staticmethod
    def _named_members(klass: _Class, name: str) -> list[_Unit]:
        members = list(klass.methods.get(name, []))
        if name in klass.fields:
            members.append(klass.fields[name])
        if name in klass.nested:
            members.append(klass.nested[name].type_unit)
        return members

    def _apply(self, rel: str, spans: list[tuple[int, int, bytes]], keep_lines: bool) -> bytes:
        data = self._files[rel].data
        return _splice(data, [_widen(data, s, keep_lines) for s in _outermost(spans)], tidy=not keep_lines)

    # ------------------------------------------------------------------ parsing
    def _source_root(self, raw: Mapping[str, bytes]) -> str:
        for rel, data in raw.items():
            package = package_name(java_parser().parse(data).root_node)
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            suffix = package.replace(".", "/")
            if package and (parent == suffix or parent.endswith("/" + suffix)):
                return parent[:len(parent) - len(suffix)].rstrip("/")
        return "src/test/java"

    def _parse(self, rel: str, data: bytes, glue: bool) -> _File:
        tree = java_parser().parse(data)
        root = tree.root_node
        scanned = _File(rel, data, tree, package_name(root), glue)
        for node in root.named_children:
            if node.type == "import_declaration":
                static = any(c.type == "static" for c in node.children)
                asterisk = any(c.type == "asterisk" for c in node.children)
                name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
                if name is None:
                    continue
                path = re.sub(r"\s", "", _text(name))
                scanned.imports.append(_Import(node, path, static, asterisk))
                if static and asterisk:
                    scanned.static_demand.append(path)
                elif static:
                    owner, _, member = path.rpartition(".")
                    scanned.static_single.setdefault(member, []).append(owner)
                elif asterisk:
                    scanned.demand.append(path)
                else:
                    scanned.single[path.rsplit(".", 1)[-1]] = path
            elif node.type in TYPE_DECLARATIONS:
                scanned.classes.append(self._parse_class(scanned, node, None))
        return scanned

    def _parse_class(self, scanned: _File, node: tree_sitter.Node, outer: _Class | None) -> _Class:
        name = _text(node.child_by_field_name("name"))
        owner = f"{outer.owner}.{name}" if outer is not None else name
        cls = _Class(scanned, node, owner, name, outer)
        self._classes.append(cls)
        rel = scanned.rel
        cls.type_unit = _Unit("type", cls, name, node, JavaDecl(
            rel, owner, "type", node.start_point[0] + 1, node.end_point[0] + 1, _doc_start(node), node.end_byte)
            if outer is not None else None, static=True)
        cls.new_unit = _Unit("new", cls, "<new>", None)
        parameters = node.child_by_field_name("type_parameters")
        for parameter in (parameters.named_children if parameters is not None else []):
            children = parameter.named_children
            bound = next((c for c in children if c.type == "type_bound"), None)
            cls.type_params[_text(children[0]) if children else ""] = \
                bound.named_children[0] if bound is not None and bound.named_children else None
        body = node.child_by_field_name("body")
        members: list[tree_sitter.Node] = []
        for child in (body.named_children if body is not None else []):
            members += child.named_children if child.type == "enum_body_declarations" else [child]
        for member in members:
            kind = member.type
            line, end_line = member.start_point[0] + 1, member.end_point[0] + 1
            keywords = _keywords(member)
            if kind in TYPE_DECLARATIONS:
                inner = self._parse_class(scanned, member, cls)
                cls.nested[inner.name] = inner
                cls.members.append(inner.type_unit)
            elif kind in METHOD_DECLARATIONS:
                constructor = kind != "method_declaration"
                member_name = "<init>" if constructor else _text(member.child_by_field_name("name"))
                params = _parameters(member)
                unit = _Unit(
                    "constructor" if constructor else "method", cls, member_name, member,
                    JavaDecl(rel, f"{owner}.{member_name}", "constructor" if constructor else "method", line, end_line,
                             _doc_start(member), member.end_byte),
                    static="static" in keywords, private="private" in keywords, arity=len(params),
                    varargs=bool(params) and params[-1].type == "spread_parameter",
                    annotations=tuple(_text(a.child_by_field_name("name")).rsplit(".", 1)[-1]
                                      for a in _annotation_nodes(member)))
                cls.members.append(unit)
                (cls.ctors if constructor else cls.methods.setdefault(member_name, [])).append(unit)
            elif kind in ("field_declaration", "constant_declaration"):
                declarators = member.children_by_field_name("declarator")
                names = tuple(_text(d.child_by_field_name("name")) for d in declarators)
                static = "static" in keywords or cls.kind in ("interface_declaration", "annotation_type_declaration")
                unit = _Unit("field", cls, ",".join(names), member,
                             JavaDecl(rel, f"{owner}.{','.join(names)}", "field", line, end_line, _doc_start(member),
                                      member.end_byte),
                             names=names, static=static, private="private" in keywords, final="final" in keywords,
                             values={_text(d.child_by_field_name("name")): v for d in declarators
                                     if (v := d.child_by_field_name("value")) is not None})
                cls.members.append(unit)
                for field_name in names:
                    cls.fields[field_name] = unit
                    cls.field_types[field_name] = member.child_by_field_name("type")
            elif kind in ("static_initializer", "block"):
                static = kind == "static_initializer"
                qualname = f"{owner}.<clinit>" if static else f"{owner}.<instance-init>"
                cls.members.append(_Unit(
                    "static-initializer" if static else "initializer", cls, qualname, member,
                    JavaDecl(rel, qualname, "initializer", line, end_line, _doc_start(member), member.end_byte),
                    static=static))
        if node.type == "record_declaration":  # the components are fields (and accessors, not units)
            for parameter in _parameters(node):
                cls.field_types[_text(parameter.child_by_field_name("name"))] = _parameter_type(parameter)
        return cls

    def _all_classes(self, scanned: _File) -> list[_Class]:
        out: list[_Class] = []
        todo = list(scanned.classes)
        while todo:
            cls = todo.pop(0)
            out.append(cls)
            todo.extend(cls.nested.values())
        return out

    def _link_supertypes(self, cls: _Class) -> None:
        node = cls.node
        clauses = [c for c in node.children if c.type in ("superclass", "super_interfaces", "extends_interfaces")]
        for clause in clauses:
            types = [t for c in clause.named_children
                     for t in (c.named_children if c.type == "type_list" else [c])]
            for type_node in types:
                name = _type_name(type_node)
                found = self._lookup_type(cls.file, cls.outer or cls, name) if name else []
                found = [c for c in found if c is not cls]
                if clause.type == "superclass":
                    cls.has_superclass = True
                if found:
                    for parent in found:
                        if parent not in cls.supers:
                            cls.supers.append(parent)
                            parent.subs.append(cls)
                elif name not in ("Object", "java.lang.Object"):
                    cls.external_super = True

    # ------------------------------------------------------------------ sites
    def _scan_sites(self, unit: _Unit) -> None:
        cls = unit.cls
        assert unit.node is not None and unit.decl is not None
        types = tuple(self._binary_type(cls, unit, _parameter_type(p), p.type == "spread_parameter")
                      for p in _parameters(unit.node))
        for annotation in _annotation_nodes(unit.node):
            name_node = annotation.child_by_field_name("name")
            written = re.sub(r"\s", "", _text(name_node))
            qualified = self._annotation_type(cls.file, written)
            is_step, kind = _step_kind(qualified) if qualified else (False, None)
            if not is_step:
                continue
            value = _annotation_value(annotation)
            site = StepSite(
                file=cls.file.rel, kind=kind, annotation=written,
                pattern=self._constant(value, cls, unit) if value is not None else None,
                line=unit.decl.line, end_line=unit.decl.end_line, start_byte=unit.node.start_byte,
                end_byte=unit.node.end_byte, qualname=unit.decl.qualname, class_name=cls.binary, method=unit.name,
                parameter_types=types, annotation_line=annotation.start_point[0] + 1,
                annotation_start=annotation.start_byte, annotation_end=annotation.end_byte)
            unit.sites.append(site)
            self._sites.append(site)
            self._site_units[site] = unit

    def _annotation_type(self, scanned: _File, written: str) -> str | None:
        if "." in written:
            return written
        if written in scanned.single:
            return scanned.single[written]
        if any(c.name == written for c in self._all_classes(scanned)) \
                or f"{scanned.package}.{written}".lstrip(".") in self._by_qualified:
            return None  # a test-side annotation type
        for package in scanned.demand:
            if _step_kind(f"{package}.{written}")[0]:
                return f"{package}.{written}"
        return None

    def _constant(self, node: tree_sitter.Node, cls: _Class, unit: _Unit | None, depth: int = 0) -> str | None:
        """A compile-time constant string: literals, ``+``, parentheses, constants of test classes."""
        if depth > 32:
            return None
        kind = node.type
        if kind == "string_literal":
            return java_string_value(node)
        if kind == "parenthesized_expression" and node.named_children:
            return self._constant(node.named_children[0], cls, unit, depth + 1)
        if kind == "binary_expression" and _text(node.child_by_field_name("operator")) == "+":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if left is None or right is None:
                return None
            a = self._constant(left, cls, unit, depth + 1)
            b = self._constant(right, cls, unit, depth + 1)
            return a + b if a is not None and b is not None else None
        if kind in ("decimal_integer_literal",):
            return _text(node).rstrip("lL").replace("_", "")
        if kind == "character_literal":
            return unescape_java(_text(node)[1:-1])
        if kind in ("identifier", "field_access"):
            if kind == "identifier":
                name = _text(node)
                fields = self._scope_fields(cls, name) or self._static_import_fields(cls.file, name)
            else:
                owner = node.child_by_field_name("object")
                name = _text(node.child_by_field_name("field"))
                classes = self._lookup_type(cls.file, cls, re.sub(r"\s", "", _text(owner))) if owner else []
                fields = [c.fields[name] for k in classes for c in self._lineage(k) if name in c.fields]
            for unit_field in fields:
                value = unit_field.values.get(name)
                if unit_field.final and value is not None:
                    return self._constant(value, unit_field.cls, None, depth + 1)
        return None

    # ------------------------------------------------------------------ types
    def _lookup_type(self, scanned: _File, ctx: _Class | None, name: str) -> list[_Class]:
        """The test classes a (simple or dotted) type name names from ``ctx`` ([]: none, external)."""
        key = (id(ctx) if ctx is not None else id(scanned), name)
        if key not in self._type_cache:
            self._type_cache[key] = self._lookup_uncached(scanned, ctx, name)
        return self._type_cache[key]

    def _lookup_uncached(self, scanned: _File, ctx: _Class | None, name: str) -> list[_Class]:
        parts = name.split(".")
        base = self._lookup_simple(scanned, ctx, parts[0])
        if not base and len(parts) > 1:
            for cut in range(len(parts), 0, -1):
                cls = self._by_qualified.get(".".join(parts[:cut]))
                if cls is not None:
                    base, parts = [cls], [cls.name, *parts[cut:]]
                    break
        for part in parts[1:]:
            base = [n for c in base for n in [self._nested_in(c, part)] if n is not None]
        return base

    def _lookup_simple(self, scanned: _File, ctx: _Class | None, name: str) -> list[_Class]:
        current = ctx
        while current is not None:
            if current.name == name:
                return [current]
            nested = self._nested_in(current, name)
            if nested is not None:
                return [nested]
            if name in current.type_params:
                return []
            current = current.outer
        for cls in scanned.classes:
            if cls.name == name:
                return [cls]
        if name in scanned.single:
            found = self._by_qualified.get(scanned.single[name])
            return [found] if found is not None else []
        same = self._by_qualified.get(f"{scanned.package}.{name}" if scanned.package else name)
        if same is not None:
            return [same]
        for package in scanned.demand:
            found = self._by_qualified.get(f"{package}.{name}")
            if found is not None:
                return [found]
        return []

    def _nested_in(self, cls: _Class, name: str) -> _Class | None:
        for klass in self._lineage(cls):
            if name in klass.nested:
                return klass.nested[name]
        return None

    def _type_classes(self, cls: _Class, unit: _Unit | None, type_node: tree_sitter.Node | None) -> list[_Class]:
        name = _type_name(type_node)
        if name is None:
            return []
        bound = self._type_parameter(cls, unit, name)
        if bound is not False:
            return self._type_classes(cls, None, bound) if bound is not None else []  # type: ignore[arg-type]
        return self._lookup_type(cls.file, cls, name)

    def _type_parameter(self, cls: _Class, unit: _Unit | None, name: str) -> tree_sitter.Node | None | bool:
        """A type variable's bound (None: Object), False when ``name`` is no type variable."""
        if unit is not None and unit.node is not None:
            parameters = unit.node.child_by_field_name("type_parameters")
            for parameter in (parameters.named_children if parameters is not None else []):
                children = parameter.named_children
                if children and _text(children[0]) == name:
                    bound = next((c for c in children if c.type == "type_bound"), None)
                    return bound.named_children[0] if bound is not None and bound.named_children else None
        current: _Class | None = cls
        while current is not None:
            if name in current.type_params:
                return current.type_params[name]
            current = current.outer
        return False

    def _binary_type(self, cls: _Class, unit: _Unit, type_node: tree_sitter.Node | None, varargs: bool) -> str:
        """A parameter's erased type as ``Class.getTypeName`` writes it (a guess for an external
        type imported on demand: its simple name)."""
        dims = _dimensions(type_node) + (1 if varargs else 0)
        base = type_node.child_by_field_name("element") if type_node is not None and type_node.type == "array_type" \
            else type_node
        while base is not None and base.type == "array_type":
            base = base.child_by_field_name("element")
        if base is not None and base.type in _PRIMITIVE_TYPES:
            return _text(base) + "[]" * dims
        name = _type_name(base) or _text(base)
        bound = self._type_parameter(cls, unit, name)
        if bound is not False:
            erased = self._binary_type(cls, unit, bound, False) if bound is not None else "java.lang.Object"  # type: ignore[arg-type]
            return erased + "[]" * dims
        found = self._lookup_type(cls.file, cls, name)
        if found:
            return found[0].binary + "[]" * dims
        scanned = cls.file
        first = name.split(".")[0]
        if first in scanned.single:
            qualified = scanned.single[first] + name[len(first):]
        elif "." in name:
            qualified = name
        elif name in _JAVA_LANG:
            qualified = f"java.lang.{name}"
        else:
            qualified = name
        return qualified + "[]" * dims

    def _unit_parameters(self, unit: _Unit) -> list[str]:
        assert unit.node is not None
        return [self._binary_type(unit.cls, unit, _parameter_type(p), p.type == "spread_parameter")
                for p in _parameters(unit.node)]

    # ------------------------------------------------------------------ class relations
    def _lineage(self, cls: _Class) -> list[_Class]:
        """``cls`` and its test-side supertypes, nearest first."""
        out = [cls]
        index = 0
        while index < len(out):
            for parent in out[index].supers:
                if parent not in out:
                    out.append(parent)
            index += 1
        return out

    def _descendants(self, cls: _Class) -> list[_Class]:
        out: list[_Class] = []
        todo = list(cls.subs)
        while todo:
            sub = todo.pop()
            if sub not in out:
                out.append(sub)
                todo.extend(sub.subs)
        return out

    def _scope(self, cls: _Class) -> list[_Class]:
        """What an unqualified name may name a member of: the class, its supertypes, its
        enclosing classes and theirs."""
        out: list[_Class] = []
        current: _Class | None = cls
        while current is not None:
            out += [c for c in self._lineage(current) if c not in out]
            current = current.outer
        return out

    def _scope_fields(self, cls: _Class, name: str) -> list[_Unit]:
        return [c.fields[name] for c in self._scope(cls) if name in c.fields]

    def _static_import_fields(self, scanned: _File, name: str) -> list[_Unit]:
        owners = [c for path in scanned.static_single.get(name, []) for c in [self._by_qualified.get(path)] if c]
        owners += [c for path in scanned.static_demand for c in [self._by_qualified.get(path)] if c]
        return [k.fields[name] for c in owners for k in self._lineage(c) if name in k.fields]

    def _static_import_methods(self, scanned: _File, name: str) -> list[_Unit]:
        owners = [c for path in scanned.static_single.get(name, []) for c in [self._by_qualified.get(path)] if c]
        owners += [c for path in scanned.static_demand for c in [self._by_qualified.get(path)] if c]
        return [u for c in owners for k in self._lineage(c) for u in k.methods.get(name, [])]

    def _shared_holders(self) -> list[_Class]:
        """The test classes picocontainer builds for the glue's step and hook classes: the types of
        their constructors' parameters, transitively."""
        todo = [c for c in self._classes if c.file.glue and any(u.glue_method for u in c.members)]
        shared: list[_Class] = []
        seen = {id(c) for c in todo}
        while todo:
            cls = todo.pop()
            for ctor in cls.ctors:
                assert ctor.node is not None
                for parameter in _parameters(ctor.node):
                    for found in self._type_classes(cls, ctor, _parameter_type(parameter)):
                        if found not in shared:
                            shared.append(found)
                        if id(found) not in seen:
                            seen.add(id(found))
                            todo.append(found)
        return shared

    # ------------------------------------------------------------------ reachability
    def _infrastructure_roots(self) -> list[_Unit]:
        roots: list[_Unit] = []
        for cls in self._classes:
            if not cls.file.glue:
                continue
            if cls.outer is None:
                roots.append(cls.type_unit)
            for unit in cls.members:
                if unit.kind == "static-initializer" or (unit.kind == "method" and not unit.sites and (
                        unit.glue_method or (unit.name == "main" and unit.static))):
                    roots.append(unit)
        for cls in self._shared:
            roots.append(cls.new_unit)
            roots += [u for u in cls.members if u.kind == "field" and not u.static and not u.private]
        for unit in self._fixtures:  # a companion scenario's step method, and its class's construction
            roots += [unit, unit.cls.new_unit]
        return roots

    def _reach(self, start: Iterable[_Unit], stop: Iterable[int]) -> list[_Unit]:
        """Members reachable from ``start``, not entering ``stop`` (ids)."""
        blocked = set(stop)
        seen: dict[int, _Unit] = {}
        todo = [u for u in start if id(u) not in blocked]
        while todo:
            unit = todo.pop()
            if id(unit) in seen:
                continue
            seen[id(unit)] = unit
            todo.extend(u for u in self._edges(unit) if id(u) not in blocked and id(u) not in seen)
        return list(seen.values())

    def _edges(self, unit: _Unit) -> list[_Unit]:
        if unit.edges is None:
            unit.edges = self._compute_edges(unit)
        return unit.edges

    def _compute_edges(self, unit: _Unit) -> list[_Unit]:
        cls = unit.cls
        out: list[_Unit] = []
        if unit.kind == "new":
            out += cls.ctors
            out += [u for u in cls.members if u.kind == "initializer"
                    or (u.kind == "field" and not u.static and (u.values or u.final))]
            out += [s.new_unit for s in cls.supers if s.kind != "interface_declaration"]
            out.append(cls.type_unit)
            return out
        if cls.outer is not None:
            out.append(cls.outer.type_unit if unit.kind == "type" else cls.type_unit)
        elif unit.kind != "type":
            out.append(cls.type_unit)
        if unit.kind == "type":
            out += self._tied(cls)
            assert unit.node is not None
            skip = tuple((m.node.start_byte, m.node.end_byte) for m in cls.members if m.node is not None)
            out += self._uses(unit, unit.node, skip)
            return out
        assert unit.node is not None
        out += self._uses(unit, unit.node)
        if unit.kind == "method" and unit.glue_method and not unit.static:
            out.append(cls.new_unit)  # cucumber (or JUnit) creates the object to call it
        if unit.kind == "field" and unit.final and not unit.static and len(unit.values) < len(unit.names):
            out.append(cls.new_unit)  # a blank final: the constructors assign it
        if unit.kind == "constructor":
            out += [s.new_unit for s in cls.supers if s.kind != "interface_declaration"]  # super(...), implicit or not
        if unit.kind == "method" and not unit.static:
            if "Override" in unit.annotations:  # keeps the method it overrides (else javac refuses the annotation)
                out += [m for s in self._lineage(cls)[1:] for m in s.methods.get(unit.name, [])
                        if m.arity == unit.arity]
            out += [m for s in self._descendants(cls) for m in s.methods.get(unit.name, [])
                    if m.arity == unit.arity and not m.static]  # dispatch
        return out

    def _tied(self, cls: _Class) -> list[_Unit]:
        """The members a type cannot lose while it exists."""
        out: list[_Unit] = []
        inherited = {(m.name, m.arity) for s in self._lineage(cls)[1:] for ms in s.methods.values() for m in ms}
        for unit in cls.members:
            if unit.kind != "method":
                continue
            if unit.node is not None and unit.node.child_by_field_name("body") is None:
                out.append(unit)  # abstract, native, an interface's
            elif "Override" in unit.annotations or (unit.name, unit.arity) in inherited:
                out.append(unit)
            elif cls.external_super and not unit.static and not unit.private and not unit.sites:
                out.append(unit)  # may implement a method of a supertype this scan does not see
        if cls.kind in ("enum_declaration", "record_declaration") or cls.has_superclass:
            out.append(cls.new_unit)
        return out

    def _uses(self, unit: _Unit, node: tree_sitter.Node, skip: tuple[tuple[int, int], ...] = ()) -> list[_Unit]:
        """The members ``node`` names (calls, field uses, instantiations, nested types)."""
        cls = unit.cls
        names = _locals(node) if unit.kind != "type" else {}
        out: list[_Unit] = []
        for current in _walk(node, skip):
            kind = current.type
            if kind == "method_invocation":
                out += self._call(unit, current, names)
            elif kind == "field_access":
                out += self._field_access(unit, current, names)
            elif kind == "identifier":
                if _is_use(current):
                    name = _text(current)
                    out += self._scope_fields(cls, name) or self._static_import_fields(cls.file, name)
                    out += [c.type_unit for c in self._by_simple.get(name, []) if c.outer is not None]
            elif kind == "type_identifier":
                out += [c.type_unit for c in self._by_simple.get(_text(current), []) if c.outer is not None]
            elif kind == "object_creation_expression":
                out += [c.new_unit for c in self._type_classes(cls, unit, current.child_by_field_name("type"))]
            elif kind == "method_reference":
                out += self._method_reference(unit, current, names)
            elif kind == "explicit_constructor_invocation":
                target = current.child_by_field_name("constructor")
                if target is not None and target.type == "this":
                    out += cls.ctors
                else:
                    out += [s.new_unit for s in cls.supers if s.kind != "interface_declaration"]
        return out

    def _call(self, unit: _Unit, node: tree_sitter.Node, names: Mapping[str, tree_sitter.Node | None],
              fallback: bool = True) -> list[_Unit]:
        name = _text(node.child_by_field_name("name"))
        count = _arguments(node)
        receiver = node.child_by_field_name("object")
        cls = unit.cls
        if receiver is None:
            found = [m for c in self._scope(cls) for m in c.methods.get(name, [])]
            found = found or self._static_import_methods(cls.file, name)
        elif receiver.type == "this":
            found = [m for c in self._lineage(cls) for m in c.methods.get(name, [])]
        elif receiver.type == "super":
            found = [m for c in self._lineage(cls)[1:] for m in c.methods.get(name, [])]
        else:
            classes = self._receiver(unit, receiver, names)
            if classes is None:
                found = list(self._methods.get(name, [])) if fallback else []
            else:
                found = [m for k in classes for c in self._lineage(k) for m in c.methods.get(name, [])]
        return [m for m in found if m.arity == count or (m.varargs and count >= m.arity - 1)]

    def _field_access(self, unit: _Unit, node: tree_sitter.Node,
                      names: Mapping[str, tree_sitter.Node | None]) -> list[_Unit]:
        name = _text(node.child_by_field_name("field"))
        receiver = node.child_by_field_name("object")
        cls = unit.cls
        nested = [c.type_unit for c in self._by_simple.get(name, []) if c.outer is not None]
        if receiver is None:
            return nested
        if receiver.type == "this":
            return [c.fields[name] for c in self._lineage(cls) if name in c.fields] + nested
        if receiver.type == "super":
            return [c.fields[name] for c in self._lineage(cls)[1:] if name in c.fields] + nested
        classes = self._receiver(unit, receiver, names)
        if classes is None:
            return list(self._fields.get(name, [])) + nested
        return [c.fields[name] for k in classes for c in self._lineage(k) if name in c.fields] + nested

    def _method_reference(self, unit: _Unit, node: tree_sitter.Node,
                          names: Mapping[str, tree_sitter.Node | None]) -> list[_Unit]:
        children = node.named_children
        if not children:
            return []
        target = node.children[-1]
        receiver = children[0]
        cls = unit.cls
        if receiver.type in ("this", "super"):
            classes: list[_Class] | None = self._lineage(cls) if receiver.type == "this" else self._lineage(cls)[1:]
        else:
            written = re.sub(r"\s", "", _text(receiver))
            classes = self._lookup_type(cls.file, cls, re.sub(r"<.*>", "", written)) \
                if receiver.type in ("identifier", "type_identifier", "scoped_type_identifier", "generic_type",
                                     "field_access", "scoped_identifier") else None
            if not classes:
                classes = self._receiver(unit, receiver, names)
        if target.type == "new":
            return [c.new_unit for c in classes or []]
        name = _text(target)
        if classes is None:
            return list(self._methods.get(name, []))
        return [m for k in classes for c in self._lineage(k) for m in c.methods.get(name, [])]

    def _receiver(self, unit: _Unit, node: tree_sitter.Node,
                  names: Mapping[str, tree_sitter.Node | None]) -> list[_Class] | None:
        """The test classes an expression's value may be of ([]: not a test class; None: unknown)."""
        cls = unit.cls
        kind = node.type
        if kind == "identifier":
            name = _text(node)
            if name in names:
                declared = names[name]
                return None if declared is None else self._type_classes(cls, unit, declared)
            owners = [c for c in self._scope(cls) if name in c.field_types]
            if owners:
                return [k for c in owners for k in self._type_classes(c, None, c.field_types[name])]
            imported = self._static_import_fields(cls.file, name)
            if imported:
                return [k for f in imported for k in self._type_classes(f.cls, None, f.cls.field_types.get(name))]
            classes = self._lookup_type(cls.file, cls, name)
            if classes:
                return classes
            return [] if name[:1].isupper() else None  # a class outside the test sources, or unknown
        if kind == "this":
            return [cls]
        if kind == "field_access":
            written = re.sub(r"\s", "", _text(node))
            qualified = self._by_qualified.get(written)
            if qualified is not None:
                return [qualified]
            inner = node.child_by_field_name("object")
            name = _text(node.child_by_field_name("field"))
            if inner is None:
                return None
            receivers = self._lineage(cls) if inner.type == "this" else self._receiver(unit, inner, names)
            if receivers is None:
                return None
            typed = [c for k in receivers for c in self._lineage(k) if name in c.field_types]
            if typed:
                return [k for c in typed for k in self._type_classes(c, None, c.field_types[name])]
            constants = [k for k in receivers if name in _enum_constants(k.node)]  # ``Color.RED.code()``
            return constants or [n for k in receivers for n in [self._nested_in(k, name)] if n is not None]
        if kind == "object_creation_expression":
            return self._type_classes(cls, unit, node.child_by_field_name("type"))
        if kind == "cast_expression":
            return self._type_classes(cls, unit, node.child_by_field_name("type"))
        if kind == "parenthesized_expression" and node.named_children:
            return self._receiver(unit, node.named_children[0], names)
        if kind in ("string_literal", "class_literal", "array_creation_expression"):
            return []
        if kind == "method_invocation":
            called = self._call(unit, node, names, fallback=False)
            if not called:
                return None
            out: list[_Class] = []
            for method in called:
                assert method.node is not None
                for found in self._type_classes(method.cls, method, method.node.child_by_field_name("type")):
                    if found not in out:
                        out.append(found)
            return out
        return None


def _enum_constants(node: tree_sitter.Node) -> set[str]:
    if node.type != "enum_declaration":
        return set()
    body = node.child_by_field_name("body")
    return {_text(c.child_by_field_name("name")) for c in (body.named_children if body is not None else [])
            if c.type == "enum_constant"}


def _annotation_value(annotation: tree_sitter.Node) -> tree_sitter.Node | None:
    """The ``value`` of ``@Given("...")`` / ``@Given(value = "...")``."""
    arguments = annotation.child_by_field_name("arguments")
    if arguments is None:
        return None
    elements = [c for c in arguments.named_children if c.type not in _COMMENTS]
    for element in elements:
        if element.type == "element_value_pair":
            if _text(element.child_by_field_name("key")) == "value":
                return element.child_by_field_name("value")
        elif len(elements) == 1:
            return element
    return None


# --------------------------------------------------------------------------- text edits
def _outermost(spans: list[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    """Spans not inside another (a member of a removed nested type, say)."""
    ordered = sorted(set(spans), key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int, bytes]] = []
    for span in ordered:
        if out and span[1] <= out[-1][1]:
            continue
        out.append(span)
    return out


def _widen(data: bytes, span: tuple[int, int, bytes], keep_lines: bool) -> tuple[int, int, bytes]:
    """A removal (empty replacement) over whole lines when nothing else shares them (a trailing
    ``//`` comment goes with it); ``keep_lines`` turns it into its line breaks."""
    start, end, text = span
    if text:
        return span
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end + 1
    rest = data[end:line_end].strip()
    if not data[line_start:start].strip() and (not rest or rest.startswith(b"//")):
        start, end = line_start, line_end
    elif not keep_lines:  # an annotation before its method on one line: the space after it goes too
        while end < len(data) and data[end:end + 1] in (b" ", b"\t"):
            end += 1
    if keep_lines:
        return start, end, b"\n" * data[start:end].count(b"\n")
    return start, end, b""


def _splice(data: bytes, spans: Iterable[tuple[int, int, bytes]], tidy: bool = False) -> bytes:
    """``data`` with each span replaced. ``tidy`` (lines dropped, not kept): the blank lines where
    something was removed shrink to at most one, none just inside a block (only there: elsewhere
    a blank line may be inside a text block)."""
    out = data
    joints: list[int] = []
    for start, end, text in sorted(spans, key=lambda s: s[0], reverse=True):
        out = out[:start] + text + out[end:]
        shift = len(text) - (end - start)
        joints = [j + shift for j in joints]
        if not text:
            joints.append(start)
    if not tidy:
        return out
    pending = sorted(set(joints))
    while pending:
        out, start = _tidy_at(out, pending.pop())
        pending = sorted({min(j, start) for j in pending})  # a joint inside the collapsed gap is its start
    return out


def _tidy_at(data: bytes, joint: int) -> tuple[bytes, int]:
    """``data`` with the blank lines around ``joint`` collapsed, and where the gap starts."""
    lines_start, lines_end = joint, joint
    while lines_start > 0:  # blank lines just before the joint
        previous = data.rfind(b"\n", 0, lines_start - 1) + 1
        if data[previous:lines_start].strip():
            break
        lines_start = previous
    while lines_end < len(data):  # and just after it
        following = data.find(b"\n", lines_end)
        following = len(data) if following < 0 else following + 1
        if data[lines_end:following].strip():
            break
        lines_end = following
    if lines_end == lines_start:
        return data, lines_start
    before = data[:lines_start].rstrip()
    after = data[lines_end:].lstrip()
    keep = 0 if not before or not after or before.endswith((b"{", b"(")) or after.startswith((b"}", b")")) else 1
    return data[:lines_start] + b"\n" * keep + data[lines_end:], lines_start


# --------------------------------------------------------------------------- emptied step methods
def default_value(type_node: tree_sitter.Node | None) -> str | None:
    """What an emptied method with this result type returns (None: ``void``)."""
    if type_node is None or type_node.type == "void_type":
        return None
    if type_node.type in ("integral_type", "floating_point_type"):
        return "0"  # a constant 0 converts to every numeric type, char included
    if type_node.type == "boolean_type":
        return "false"
    return "null"


def _empty_body(unit: _Unit) -> tuple[int, int, bytes] | None:
    """The replacement of a method's body by ``{}`` / ``{ return <default>; }``, line breaks kept."""
    node = unit.node
    body = node.child_by_field_name("body") if node is not None else None
    if node is None or body is None:
        return None
    value = default_value(node.child_by_field_name("type")) if unit.kind == "method" else None
    statement = f" return {value};" if value is not None else ""
    text = _text(body)
    breaks = text.count("\n")
    indent = text[text.rfind("\n") + 1:-1] if breaks else ""  # the closing brace stays where it was
    out = "{" + statement + ("\n" * breaks + indent if breaks else (" " if statement else "")) + "}"
    return body.start_byte, body.end_byte, out.encode("utf-8")


def calibration_files(side: TestSideJava, sites: Iterable[StepSite],
                      kinds: Mapping[str, Iterable[str]]) -> dict[str, dict[str, str]]:
    """The reference predictions of one scenario whose step methods are ``sites``: ``oracle``
    (its files as written), ``empty`` (every step method does nothing) and ``then-stripped``
    (only the step methods every use of which is a Then step). ``kinds``: site key -> the kinds of
    the steps bound to it (``given``/``when``/``then``, an ``And``/``But`` step already read as
    the kind of the step it follows; ``Outcome`` is read as ``then``): the annotation's keyword
    does not restrict what cucumber-jvm binds, the feature's keywords do. A site ``kinds`` does
    not name falls back to its annotation's keyword (``@Then`` only). A method also bound to a
    Given/When step stays whole, so the then-stripped run still acts, only checks less."""
    chosen = list(sites)
    closure = side.closure(chosen)

    def is_then(kind: str) -> bool:
        return kind.lower() in ("then", "outcome")

    def then_only(site: StepSite) -> bool:
        used = list(kinds.get(site.key) or ([site.kind] if site.kind else []))
        return bool(used) and all(is_then(k) for k in used)

    users: dict[JavaDecl, list[StepSite]] = {}
    for site in chosen:
        for decl in side.handlers(site):
            users.setdefault(decl, []).append(site)
    stripped_decls = [decl for decl, using in users.items() if all(then_only(s) for s in using)]
    empty = side.strip_handlers(chosen)
    stripped = side.strip_handlers(chosen, only=stripped_decls)
    out: dict[str, dict[str, str]] = {"oracle": {}, "empty": {}, "then-stripped": {}}
    for rel in sorted(set(closure.files) | set(empty)):
        original = (side.root / rel).read_bytes()
        out["oracle"][rel] = original.decode("utf-8")
        out["empty"][rel] = empty.get(rel, original).decode("utf-8")
        out["then-stripped"][rel] = stripped.get(rel, original).decode("utf-8")
    return out
