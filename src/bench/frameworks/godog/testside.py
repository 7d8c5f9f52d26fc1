"""The test side of a godog project at step-definition granularity (tree-sitter-go, never by
running or type-checking the code).

A godog suite registers its steps with ``X.Step(pattern, handler)`` call statements (also
``Given/When/Then``, godog v0.14/v0.15's ``ScenarioContext`` methods; ``StepContext`` only has
hooks) inside initializers such as ``func FeatureContext(s *godog.ScenarioContext)``. Unlike
cucumber-js the step function is usually *not* in the statement: it is a top-level function
named by the registration (often in another file, sometimes shared by several registrations),
a ``func`` literal, or a method value ``w.m``. So a test implementation here is:

- its **registration sites**: the call statements with a literal pattern (``RegistrationSite``);
- the **closure** of those sites: their handler functions and the package functions those call,
  transitively, by identifier (``helper(...)``; ``x.m`` reaches every method ``m`` of the
  package: no types here), never into another package, and stopping at **infrastructure**:
  whatever the suite runs without any step (TestMain, ``init``, plain Go tests, the initializers
  that hold registrations minus their registrations — hence their hooks — and package-level
  ``var``/``const`` initializers), plus everything those reach.

Text operations keep every other line where it was (a removed span becomes as many empty lines),
as the cucumber-js side does, so godog's ``BASENAME.go:LINE`` locations still point at the same
code. Go refuses an unused *import* (not an unused function or parameter), so a removal that
takes the last use of a package also removes that import (``_`` and ``.`` imports never).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter

from bench.frameworks.godog.cucumber_json import StepMatch
from bench.frameworks.godog.hiding import import_name
from bench.frameworks.godog.syntax import go_parser, receiver_type

REGISTRARS = ("Step", "Given", "When", "Then")  # godog's ScenarioContext registration methods
STEP_KINDS = {"Given": "given", "When": "when", "Then": "then"}  # ``Step`` takes any kind
# plain Go tests, benchmarks, fuzz targets and examples run whatever the scenario: infrastructure
_GO_TEST_FUNC = re.compile(r"^(Test|Benchmark|Fuzz|Example)([A-Z_0-9].*)?$")
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34}


# --------------------------------------------------------------------------- model
@dataclass(frozen=True)
class RegistrationSite:
    """One ``X.Step(pattern, handler)`` call statement with a literal pattern."""

    file: str  # relative to the project root
    method: str  # Step, Given, When or Then
    pattern: str  # the regexp's Go string value (as godog compiles it)
    handler: str  # the handler expression as written (``createWallet``, ``w.m``, ``func(...) {...}``)
    line: int  # 1-based first line of the statement
    end_line: int
    start_byte: int
    end_byte: int
    initializer: str  # qualname of the function the statement is in

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def qualname(self) -> str:
        return f"{self.method}({self.pattern!r})"

    @property
    def kind(self) -> str | None:
        """The step kind the registration requires (None: ``Step`` binds any)."""
        return STEP_KINDS.get(self.method)


@dataclass(frozen=True)
class GoDecl:
    """A function a site reaches: a top-level function or method, or a ``func`` literal handler."""

    file: str
    qualname: str  # ``helper``, ``World.method``, or ``<site qualname>.func`` for a literal
    kind: str  # "func", "method" or "literal"
    line: int  # of the ``func`` keyword (godog reports this line, or the body's first)
    end_line: int
    start_byte: int  # with its doc comment for a declaration (what a removal takes)
    end_byte: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Closure:
    """The test implementation of a set of sites."""

    sites: tuple[RegistrationSite, ...]
    functions: tuple[GoDecl, ...]  # handlers and helpers, infrastructure excluded, source order
    literals: tuple[GoDecl, ...]  # ``func`` literal handlers (inside their site's statement)

    @property
    def files(self) -> list[str]:
        return sorted({s.file for s in self.sites} | {f.file for f in self.functions})


@dataclass(eq=False)  # identity: a function is itself
class _Func:
    decl: GoDecl
    package: str
    name: str
    node: tree_sitter.Node
    refs: set[str]  # identifiers it names
    fields: set[str]  # selector fields it names (method candidates)


@dataclass
class _File:
    rel: str
    data: bytes
    tree: tree_sitter.Tree
    package: str
    funcs: list[_Func] = field(default_factory=list)
    sites: list[RegistrationSite] = field(default_factory=list)
    other_refs: set[str] = field(default_factory=set)  # package-level var/const/type declarations
    other_fields: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------- Go literals
def go_string_value(node: tree_sitter.Node) -> str | None:
    """The value of a Go string literal node (raw or interpreted), None for anything else."""
    text = node.text or b""
    if node.type == "raw_string_literal":
        return text[1:-1].replace(b"\r", b"").decode("utf-8", errors="replace")  # Go drops CRs of raw strings
    if node.type != "interpreted_string_literal":
        return None
    return unescape_go(text[1:-1].decode("utf-8", errors="replace"))


def unescape_go(body: str) -> str:
    """An interpreted string literal's body as Go reads it (``\\x``/octal are bytes, ``\\u`` runes)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
        elif e == "x":
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif e in "01234567":
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            out += chr(int(body[i + 2:i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        else:  # not valid Go; keep it as written
            out += ("\\" + e).encode("utf-8")
            i += 2
    return out.decode("utf-8", errors="replace")


def _text(node: tree_sitter.Node | None) -> str:
    return (node.text or b"").decode("utf-8", errors="replace") if node is not None else ""


# --------------------------------------------------------------------------- scanning
def _names(node: tree_sitter.Node, skip: Sequence[tuple[int, int]] = ()) -> tuple[set[str], set[str]]:
    """Identifiers and selector fields under ``node``, spans in ``skip`` left out (over-approximate:
    a local that shadows a package function still counts, which only ever keeps more)."""
    refs: set[str] = set()
    fields: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if any(start <= current.start_byte and current.end_byte <= end for start, end in skip):
            continue
        if current.type == "identifier":
            refs.add(_text(current))
        elif current.type == "field_identifier" and current.parent is not None \
                and current.parent.type == "selector_expression":
            fields.add(_text(current))
        stack.extend(current.children)
    return refs, fields


def _doc_start(node: tree_sitter.Node) -> int:
    """Start of the comment lines directly above a declaration (its doc comment)."""
    start, row = node.start_byte, node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None and sibling.type == "comment" and sibling.end_point[0] == row - 1:
        start, row = sibling.start_byte, sibling.start_point[0]
        sibling = sibling.prev_sibling
    return start


def _pattern(node: tree_sitter.Node, consts: Mapping[str, str]) -> str | None:
    """The pattern argument's string: a literal, ``regexp.MustCompile(literal)`` or a package const."""
    value = go_string_value(node)
    if value is not None:
        return value
    if node.type == "identifier":
        return consts.get(_text(node))
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if _text(function) in ("regexp.MustCompile", "regexp.MustCompilePOSIX") and arguments is not None \
                and len(arguments.named_children) == 1:
            return _pattern(arguments.named_children[0], consts)
    return None


def _consts(root: tree_sitter.Node) -> dict[str, str]:
    """Package-level ``const name = "literal"`` (patterns are sometimes named)."""
    found: dict[str, str] = {}
    for decl in root.named_children:
        if decl.type != "const_declaration":
            continue
        for spec in decl.named_children:
            if spec.type != "const_spec":
                continue
            names = [c for c in spec.children_by_field_name("name")]
            value = spec.child_by_field_name("value")
            if len(names) == 1 and value is not None and len(value.named_children) == 1:
                string = go_string_value(value.named_children[0])
                if string is not None:
                    found[_text(names[0])] = string
    return found


def _scan_sites(rel: str, function: tree_sitter.Node, qualname: str,
                consts: Mapping[str, str]) -> list[RegistrationSite]:
    sites: list[RegistrationSite] = []
    stack = [function]
    while stack:
        node = stack.pop()
        if node.type == "expression_statement" and node.named_children \
                and node.named_children[0].type == "call_expression":
            call = node.named_children[0]
            callee = call.child_by_field_name("function")
            arguments = call.child_by_field_name("arguments")
            method = _text(callee.child_by_field_name("field")) \
                if callee is not None and callee.type == "selector_expression" else ""
            args = arguments.named_children if arguments is not None else []
            args = [a for a in args if a.type != "comment"]
            if method in REGISTRARS and len(args) == 2:
                pattern = _pattern(args[0], consts)
                if pattern is not None:
                    sites.append(RegistrationSite(
                        file=rel, method=method, pattern=pattern, handler=_text(args[1]),
                        line=node.start_point[0] + 1, end_line=node.end_point[0] + 1,
                        start_byte=node.start_byte, end_byte=node.end_byte, initializer=qualname))
                    continue
        stack.extend(node.children)
    return sites


def _scan(rel: str, data: bytes, consts: Mapping[str, str]) -> _File:
    tree = go_parser().parse(data)
    root = tree.root_node
    package = next((_text(c.named_children[0]) for c in root.named_children
                    if c.type == "package_clause" and c.named_children), "")
    scanned = _File(rel, data, tree, package)
    for node in root.named_children:
        if node.type in ("function_declaration", "method_declaration"):
            name = _text(node.child_by_field_name("name"))
            receiver = node.child_by_field_name("receiver")
            is_method = node.type == "method_declaration" and receiver is not None
            qualname = f"{receiver_type(receiver)}.{name}" if is_method and receiver is not None else name
            sites = _scan_sites(rel, node, qualname, consts)
            refs, fields = _names(node, [(s.start_byte, s.end_byte) for s in sites])
            decl = GoDecl(rel, qualname, "method" if is_method else "func", node.start_point[0] + 1,
                          node.end_point[0] + 1, _doc_start(node), node.end_byte)
            scanned.funcs.append(_Func(decl, package, name, node, refs, fields))
            scanned.sites += sites
        elif node.type not in ("package_clause", "import_declaration", "comment"):
            refs, fields = _names(node)
            scanned.other_refs |= refs
            scanned.other_fields |= fields
    scanned.sites.sort(key=lambda s: s.start_byte)
    return scanned


# --------------------------------------------------------------------------- the test side
class TestSideGo:
    """The Go files of a godog suite's package directory and the registrations in them."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, root: Path, package_dir: str, tests_only: bool = False) -> None:
        """``tests_only``: the package is production too, its test side is its ``*_test.go`` files."""
        self.root = root
        self.package_dir = package_dir.strip("/")
        directory = root / self.package_dir if self.package_dir not in ("", ".") else root
        # the package is its directory's own .go files (subdirectories are other packages)
        suffix = "_test.go" if tests_only else ".go"
        self.files = sorted(p.relative_to(root).as_posix() for p in directory.glob(f"*{suffix}") if p.is_file())
        raw = {rel: (root / rel).read_bytes() for rel in self.files}
        consts: dict[str, str] = {}
        for data in raw.values():
            consts.update(_consts(go_parser().parse(data).root_node))
        self._files = {rel: _scan(rel, data, consts) for rel, data in raw.items()}
        self._funcs = [f for scanned in self._files.values() for f in scanned.funcs]
        self._by_name: dict[tuple[str, str], list[_Func]] = {}
        self._methods: dict[tuple[str, str], list[_Func]] = {}
        for func in self._funcs:
            index = self._methods if func.decl.kind == "method" else self._by_name
            index.setdefault((func.package, func.name), []).append(func)
        self._infrastructure = self._reach(self._infrastructure_roots(), frozenset())

    # ------------------------------------------------------------------ sites
    def sites(self) -> list[RegistrationSite]:
        return [s for rel in self.files for s in self._files[rel].sites]

    def site_for_pattern(self, pattern: str, match: StepMatch | None = None) -> RegistrationSite | None:
        """The site registering ``pattern`` (as ``--godog.definitions`` lists it). Several sites
        with one pattern: the one whose handler holds godog's ``match`` location, else the first."""
        candidates = [s for s in self.sites() if s.pattern == pattern]
        if len(candidates) > 1 and match is not None:
            at = self.decl_at(match)
            holding = [s for s in candidates if at is not None and at in self.handlers(s)]
            candidates = holding or candidates
        return candidates[0] if candidates else None

    def decl_at(self, match: StepMatch) -> GoDecl | None:
        """The function godog's ``BASENAME.go:LINE`` names: the innermost one whose lines hold it
        (a small leaf function is reported at its first body line)."""
        best: GoDecl | None = None
        for rel in self.files:
            if rel.rsplit("/", 1)[-1] != match.file:
                continue
            for decl in [f.decl for f in self._files[rel].funcs] + \
                    [d for s in self._files[rel].sites for d in self._literal(s)]:
                if decl.line <= match.line <= decl.end_line and (best is None or decl.line >= best.line):
                    best = decl
        return best

    # ------------------------------------------------------------------ handlers and closure
    def handlers(self, site: RegistrationSite) -> list[GoDecl]:
        """What the site's handler expression is: the top-level function it names, the methods
        named by a method value (every method of that name: no types), or the ``func`` literal."""
        literal = self._literal(site)
        if literal:
            return literal
        return [f.decl for f in self._site_targets(site)]

    def closure(self, sites: Iterable[RegistrationSite]) -> Closure:
        chosen = tuple(sorted(set(sites), key=lambda s: (s.file, s.start_byte)))
        reached = self._reach(self._site_roots(chosen), self._infrastructure)
        functions = tuple(sorted((f.decl for f in reached), key=lambda d: (d.file, d.start_byte)))
        literals = tuple(d for s in chosen for d in self._literal(s))
        return Closure(chosen, functions, literals)

    @property
    def infrastructure_functions(self) -> list[GoDecl]:
        """What the suite runs without any step: never part of a closure, never removed."""
        return sorted((f.decl for f in self._infrastructure), key=lambda d: (d.file, d.start_byte))

    # ------------------------------------------------------------------ workspace text
    def files_without(self, removed: Iterable[RegistrationSite], keep_lines: bool = True) -> dict[str, bytes]:
        """Every file that loses a registration, with those statements removed (negative
        validation). Their handlers stay, unused, which Go accepts."""
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        for site in removed:
            edits.setdefault(site.file, []).append((site.start_byte, site.end_byte, b""))
        return {rel: self._apply(rel, spans, keep_lines) for rel, spans in edits.items()}

    def files_keeping(self, kept: Iterable[RegistrationSite]) -> dict[str, bytes]:
        """Every registration but ``kept`` removed (positive validation)."""
        keep = set(kept)
        return self.files_without(s for s in self.sites() if s not in keep)

    def files_without_closure(self, sites: Iterable[RegistrationSite],
                              keep_lines: bool = True) -> tuple[dict[str, bytes], list[GoDecl]]:
        """The registrations removed and, with them, the functions of their closure that no
        remaining code names (a helper another step or the infrastructure still calls stays);
        imports left unused go too. Returns the rewritten files and the functions removed."""
        chosen = list(sites)
        candidates = {id(f) for f in self._reach(self._site_roots(chosen), self._infrastructure)}
        # what stays: every other function, the package-level declarations, the initializers
        # without the removed registrations, and the sites that stay
        removed_spans = {(s.file, s.start_byte) for s in chosen}
        kept_sites = [s for s in self.sites() if (s.file, s.start_byte) not in removed_spans]
        roots = [f for f in self._funcs if id(f) not in candidates]
        refs, fields = self._site_names(kept_sites)
        for scanned in self._files.values():
            refs[scanned.package] = refs.get(scanned.package, set()) | scanned.other_refs
            fields[scanned.package] = fields.get(scanned.package, set()) | scanned.other_fields
        kept = self._reach(roots + self._resolve(refs, fields), frozenset())
        kept_ids = {id(f) for f in kept}
        gone = [f for f in self._funcs if id(f) in candidates and id(f) not in kept_ids]
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        for site in chosen:
            edits.setdefault(site.file, []).append((site.start_byte, site.end_byte, b""))
        for func in gone:
            edits.setdefault(func.decl.file, []).append((func.decl.start_byte, func.decl.end_byte, b""))
        files = {rel: self._apply(rel, spans, keep_lines) for rel, spans in edits.items()}
        return files, sorted((f.decl for f in gone), key=lambda d: (d.file, d.start_byte))

    def files_isolating(self, kept: Iterable[RegistrationSite], keep_lines: bool = True) -> dict[str, bytes]:
        """Only ``kept`` and what they reach: every other registration and every function only
        those reach removed. A Go package may not declare a name twice, so a prediction written
        against the view (where every step function is gone) can only be laid over this, or the
        view itself, not over the snapshot with just the gold's closure removed."""
        keep = set(kept)
        return self.files_without_closure([s for s in self.sites() if s not in keep], keep_lines)[0]

    def view(self) -> tuple[dict[str, bytes], list[str], list[str]]:
        """A repository view's test side: every registration and every function only they
        reach removed (lines dropped, not blanked: an agent reads it). Returns the rewritten
        files, the removed ``FILE:LINE`` list, and the files kept as they are (infrastructure)."""
        sites = self.sites()
        files, gone = self.files_without_closure(sites, keep_lines=False)
        removed = sorted({s.key for s in sites} | {d.key for d in gone})
        return files, removed, [rel for rel in self.files if rel not in files]

    def strip_handlers(self, sites: Iterable[RegistrationSite], *,
                       only: Iterable[GoDecl] | None = None) -> dict[str, bytes]:
        """Files with each handler of ``sites`` (or just those in ``only``) reduced to a body
        that returns zero values: the step still matches and passes, and checks nothing. An
        import only the old bodies used goes."""
        wanted = None if only is None else set(only)
        edits: dict[str, list[tuple[int, int, bytes]]] = {}
        done: set[GoDecl] = set()
        for site in sites:
            for decl in self.handlers(site):
                if decl in done or (wanted is not None and decl not in wanted):
                    continue
                done.add(decl)
                node = self._node(decl)
                span = _empty_body(node, self._files[decl.file].data) if node is not None else None
                if span is not None:
                    edits.setdefault(decl.file, []).append(span)
        return {rel: self._apply(rel, spans, keep_lines=True) for rel, spans in edits.items()}

    # ------------------------------------------------------------------ internals
    def _infrastructure_roots(self) -> list[_Func]:
        holders = {(s.file, s.initializer) for s in self.sites()}
        roots = [f for f in self._funcs
                 if (f.decl.file, f.decl.qualname) in holders or f.decl.kind == "func"
                 and (f.name in ("TestMain", "init") or _GO_TEST_FUNC.match(f.name))]
        refs: dict[str, set[str]] = {}
        fields: dict[str, set[str]] = {}
        for scanned in self._files.values():
            refs.setdefault(scanned.package, set()).update(scanned.other_refs)
            fields.setdefault(scanned.package, set()).update(scanned.other_fields)
        return roots + self._resolve(refs, fields)

    def _site_names(self, sites: Iterable[RegistrationSite]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        refs: dict[str, set[str]] = {}
        fields: dict[str, set[str]] = {}
        for site in sites:
            scanned = self._files[site.file]
            arguments = _site_arguments(scanned, site)
            if arguments is None:
                continue
            r, f = _names(arguments)  # the arguments only: ``s.Step`` itself names no function of ours
            refs.setdefault(scanned.package, set()).update(r)
            fields.setdefault(scanned.package, set()).update(f)
        return refs, fields

    def _site_roots(self, sites: Iterable[RegistrationSite]) -> list[_Func]:
        refs, fields = self._site_names(sites)
        return self._resolve(refs, fields)

    def _site_targets(self, site: RegistrationSite) -> list[_Func]:
        package = self._files[site.file].package
        handler = site.handler.strip()
        if re.fullmatch(r"[A-Za-z_]\w*", handler):
            return list(self._by_name.get((package, handler), []))
        method = re.fullmatch(r"[\w.()*\s]+\.\s*([A-Za-z_]\w*)", handler)
        if method:
            return list(self._methods.get((package, method[1]), []))
        return []  # a call (a handler factory) or a literal: its names are reached by the closure

    def _resolve(self, refs: Mapping[str, set[str]], fields: Mapping[str, set[str]]) -> list[_Func]:
        found: list[_Func] = []
        for package, names in refs.items():
            for name in names:
                found += self._by_name.get((package, name), [])
        for package, names in fields.items():
            for name in names:
                found += self._methods.get((package, name), [])
        return found

    def _reach(self, start: Iterable[_Func], stop: Iterable[_Func]) -> list[_Func]:
        """Functions reachable from ``start`` by name, not entering ``stop``."""
        blocked = {id(f) for f in stop}
        seen: dict[int, _Func] = {}
        todo = [f for f in start if id(f) not in blocked]
        while todo:
            func = todo.pop()
            if id(func) in seen:
                continue
            seen[id(func)] = func
            nxt = self._resolve({func.package: func.refs}, {func.package: func.fields})
            todo.extend(f for f in nxt if id(f) not in blocked and id(f) not in seen)
        return list(seen.values())

    def _literal(self, site: RegistrationSite) -> list[GoDecl]:
        arguments = _site_arguments(self._files[site.file], site)
        args = [a for a in (arguments.named_children if arguments is not None else []) if a.type != "comment"]
        if len(args) == 2 and args[1].type == "func_literal":
            node = args[1]
            return [GoDecl(site.file, f"{site.qualname}.func", "literal", node.start_point[0] + 1,
                           node.end_point[0] + 1, node.start_byte, node.end_byte)]
        return []

    def _node(self, decl: GoDecl) -> tree_sitter.Node | None:
        scanned = self._files[decl.file]
        if decl.kind != "literal":
            return next((f.node for f in scanned.funcs if f.decl == decl), None)
        return scanned.tree.root_node.descendant_for_byte_range(decl.start_byte, decl.end_byte)

    def _apply(self, rel: str, spans: list[tuple[int, int, bytes]], keep_lines: bool) -> bytes:
        data = self._files[rel].data
        out = _splice(data, [_widen(data, s, keep_lines) for s in _outermost(spans)], tidy=not keep_lines)
        return prune_imports(data, out, keep_lines)


def _site_arguments(scanned: _File, site: RegistrationSite) -> tree_sitter.Node | None:
    """The argument list of a site's call (the deepest node of the statement's span is its call)."""
    node = scanned.tree.root_node.descendant_for_byte_range(site.start_byte, site.end_byte)
    while node is not None and node.type != "call_expression":
        node = node.named_children[0] if node.type == "expression_statement" and node.named_children else None
    return node.child_by_field_name("arguments") if node is not None else None


# --------------------------------------------------------------------------- text edits
def _outermost(spans: list[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    """Spans not inside another (a literal handler inside a removed statement, say)."""
    ordered = sorted(set(spans), key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int, bytes]] = []
    for span in ordered:
        if out and span[1] <= out[-1][1]:
            continue
        out.append(span)
    return out


def _widen(data: bytes, span: tuple[int, int, bytes], keep_lines: bool) -> tuple[int, int, bytes]:
    """A removal (empty replacement) over whole lines when nothing else shares them (a trailing
    ``//`` comment goes with its statement); ``keep_lines`` turns it into its line breaks."""
    start, end, text = span
    if text:
        return span
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end + 1
    rest = data[end:line_end].strip()
    if not data[line_start:start].strip() and (not rest or rest.startswith(b"//")):
        start, end = line_start, line_end
    if keep_lines:
        return start, end, b"\n" * data[start:end].count(b"\n")
    return start, end, b""


def _splice(data: bytes, spans: Iterable[tuple[int, int, bytes]], tidy: bool = False) -> bytes:
    """``data`` with each span replaced. ``tidy`` (lines dropped, not kept): the blank lines
    where something was removed shrink to what gofmt leaves: at most one, none just inside a
    block or group (only there: elsewhere a blank line may be inside a raw string)."""
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
    for joint in sorted(set(joints), reverse=True):
        out = _tidy_at(out, joint)
    return out


def _tidy_at(data: bytes, joint: int) -> bytes:
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
        return data
    before = data[:lines_start].rstrip()
    after = data[lines_end:].lstrip()
    keep = 0 if not before or not after or before.endswith((b"{", b"(")) or after.startswith((b"}", b")")) else 1
    return data[:lines_start] + b"\n" * keep + data[lines_end:]


def used_package_names(data: bytes) -> set[str]:
    """Names used as ``name.X`` in expressions and types: the candidates for an import's use."""
    names: set[str] = set()
    stack = [go_parser().parse(data).root_node]
    while stack:
        node = stack.pop()
        if node.type in ("selector_expression", "qualified_type"):
            first = node.named_children[0] if node.named_children else None
            if first is not None and first.type in ("identifier", "package_identifier"):
                names.add(_text(first))
        if node.type != "import_declaration":
            stack.extend(node.named_children)
    return names


def prune_imports(original: bytes, edited: bytes, keep_lines: bool = True) -> bytes:
    """``edited`` without the imports the edit left unused: an import whose name the original
    file uses and the edited one no longer does. The name is the alias, else Go's convention
    from the path (``hiding.import_name``); a guess the original never uses is left alone, so a
    wrong guess can only keep an import, never take a needed one. ``_`` and ``.`` imports (init
    side effects, unqualified names) and cgo's ``"C"`` are never removed."""
    before, after = used_package_names(original), used_package_names(edited)
    if not before - after:
        return edited
    tree = go_parser().parse(edited)
    spans: list[tuple[int, int, bytes]] = []
    for declaration in tree.root_node.named_children:
        if declaration.type != "import_declaration":
            continue
        specs = [c for c in declaration.named_children if c.type == "import_spec"]
        for group in (c for c in declaration.named_children if c.type == "import_spec_list"):
            specs += [c for c in group.named_children if c.type == "import_spec"]
        dropped = []
        for spec in specs:
            path_node = spec.child_by_field_name("path")
            name_node = spec.child_by_field_name("name")
            path = go_string_value(path_node) if path_node is not None else None
            if path is None or path == "C" or (name_node is not None and name_node.type in ("blank_identifier", "dot")):
                continue
            name = _text(name_node) if name_node is not None else import_name(path)
            if name in before and name not in after:
                dropped.append(spec)
        if dropped and len(dropped) == len(specs) and not any(c.type == "import_spec_list"
                                                              for c in declaration.named_children):
            spans.append((declaration.start_byte, declaration.end_byte, b""))  # ``import "x"`` alone
        else:
            spans += [(spec.start_byte, spec.end_byte, b"") for spec in dropped]
    return _splice(edited, [_widen(edited, s, keep_lines) for s in spans], tidy=not keep_lines)


# --------------------------------------------------------------------------- emptied handlers
def _zero(type_text: str, context_param: str | None) -> str:
    """The zero value of a result type, as Go source (a ``context.Context`` result returns the
    step's own context when it has one: godog carries it to the next step)."""
    t = type_text.strip()
    if t in ("context.Context",) and context_param:
        return context_param
    if t in ("error", "any", "interface{}", "context.Context") or t.startswith(("*", "[]", "map[", "chan ",
                                                                               "<-chan", "func(", "func (")):
        return "nil"
    if t == "string":
        return '""'
    if t == "bool":
        return "false"
    if re.fullmatch(r"u?int(8|16|32|64)?|uintptr|float(32|64)|complex(64|128)|byte|rune", t):
        return "0"
    return f"*new({t})"  # any other type (struct, array, named): its zero value, whatever it is


def _empty_body(node: tree_sitter.Node, data: bytes) -> tuple[int, int, bytes] | None:
    """The replacement of a function's body by ``{ return <zero values> }``, line breaks kept."""
    body = node.child_by_field_name("body")
    if body is None:
        return None
    context_param = None
    parameters = node.child_by_field_name("parameters")
    for param in (parameters.named_children if parameters is not None else []):
        if param.type == "parameter_declaration" and _text(param.child_by_field_name("type")) == "context.Context":
            names = param.children_by_field_name("name")
            if names and _text(names[0]) != "_":
                context_param = _text(names[0])
                break
    result = node.child_by_field_name("result")
    types: list[str] = []
    if result is not None and result.type == "parameter_list":
        for param in result.named_children:
            if param.type == "parameter_declaration":
                types += [_text(param.child_by_field_name("type"))] * max(1, len(param.children_by_field_name("name")))
    elif result is not None:
        types = [_text(result)]
    statement = (" return " + ", ".join(_zero(t, context_param) for t in types)) if types else ""
    breaks = data[body.start_byte:body.end_byte].count(b"\n")
    text = "{" + statement + ("\n" * breaks if breaks else (" " if statement else "")) + "}"
    return body.start_byte, body.end_byte, text.encode("utf-8")


def calibration_files(side: TestSideGo, sites: Iterable[RegistrationSite],
                      kinds: Mapping[str, Iterable[str]]) -> dict[str, dict[str, str]]:
    """The reference predictions of one scenario whose registrations are ``sites``:
    ``oracle`` (its files as written), ``empty`` (every handler returns zero values at once) and
    ``then-stripped`` (only the handlers every use of which is a Then step). ``kinds``: site key
    -> the kinds of the steps bound to it (``given``/``when``/``then``; ``Outcome`` and ``Then``
    are read as ``then``): ``s.Step`` does not say, the feature's keywords do. A handler shared
    with a Given/When step stays, so the then-stripped run still acts, only checks less."""
    chosen = list(sites)
    closure = side.closure(chosen)
    files = closure.files

    def is_then(kind: str) -> bool:
        return kind.lower() in ("then", "outcome")

    users: dict[GoDecl, list[RegistrationSite]] = {}
    for site in chosen:
        for decl in side.handlers(site):
            users.setdefault(decl, []).append(site)
    then_only = [decl for decl, using in users.items()
                 if all(kinds.get(s.key) and all(is_then(k) for k in kinds[s.key]) for s in using)]
    empty = side.strip_handlers(chosen)
    stripped = side.strip_handlers(chosen, only=then_only)
    out: dict[str, dict[str, str]] = {"oracle": {}, "empty": {}, "then-stripped": {}}
    for rel in sorted(set(files) | set(empty)):
        original = (side.root / rel).read_bytes()
        out["oracle"][rel] = original.decode("utf-8")
        out["empty"][rel] = empty.get(rel, original).decode("utf-8")
        out["then-stripped"][rel] = stripped.get(rel, original).decode("utf-8")
    return out
