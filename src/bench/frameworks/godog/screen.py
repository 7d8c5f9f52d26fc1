"""The static screen of submitted Go test code: what a step definition has no use for, and what
it would need to reach the selected mutant or the judge's machinery.

The screen is the second line, not the first. By construction (``judge``) the variant a run
executes is a number read from fd 3 into an unexported variable before any test code runs, the
run sees no ``.go`` file and no ``/proc``, and the binary has no symbol table: a test can only
tell a mutant from the original by behaviour. The screen refuses the routes around Go's memory
safety and package boundaries that would make that false — and never an ordinary test idiom
(``reflect.DeepEqual``, ``os.ReadFile`` of a fixture, ``runtime.GOOS``, starting ``git``): no
oracle of our corpora is flagged (the calibrations check it). Where the construction already
makes a route useless, there is no pattern for it: a test may start processes (a child has the
test's own powers in the same sandbox, and fd 3 is closed before either runs) and may name
``.go`` files (coddy-agent's tests write fixtures called ``react.go``; the sandbox holds no Go
source to read).
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from bench.frameworks.godog.syntax import go_parser

# import path -> why a test has no business importing it
FORBIDDEN_IMPORTS = {
    "unsafe": "reads or writes memory around Go's type system",
    "C": "links C code (cgo)",
    "syscall": "makes system calls directly (file descriptors, memory)",
    "golang.org/x/sys/unix": "makes system calls directly (file descriptors, memory)",
    "plugin": "loads code at run time",
    "runtime/debug": "reads runtime internals",
    "runtime/pprof": "reads runtime internals",
    "runtime/trace": "reads runtime internals",
    "debug/elf": "reads an executable's symbols",
    "debug/gosym": "reads an executable's symbols",
    "debug/dwarf": "reads an executable's symbols",
    "debug/buildinfo": "reads an executable's build information",
    "runtime/coverage": "reads the coverage instrumentation (tells the traced run from a verdict run)",
}
FORBIDDEN_PREFIXES = ("golang.org/x/sys/", "github.com/cucumber/godog/internal")
# package selector -> names a step has no use for
FORBIDDEN_SELECTORS = {
    "runtime": {"Callers", "Caller", "CallersFrames", "FuncForPC", "Stack", "SetFinalizer", "Breakpoint",
                "Goexit", "LockOSThread"},
    "reflect": {"NewAt"},
    # the command line and the build mode are the only things that tell the traced run (a
    # coverage build given -test.coverprofile) from a verdict run; a step has no use for them
    "os": {"NewFile", "Getpid", "Getppid", "Executable", "StartProcess", "FindProcess", "Args"},
    "flag": {"Lookup", "CommandLine", "Args", "Arg", "NArg", "Visit", "VisitAll"},
    "testing": {"CoverMode", "Coverage"},
}
DIRECTIVES = {"//go:linkname": "links to another package's unexported symbol (go:linkname)",
              "//go:embed": "embeds files into the binary at compile time (go:embed)",
              "//go:cgo_": "passes directives to cgo",
              "//go:uintptrescapes": "uses a compiler directive for unsafe pointers"}
STRING_MARKERS = {"/proc/": "names the process file system", "/proc\"": "names the process file system",
                  "/dev/fd": "names the process's file descriptors", "/dev/mem": "names memory devices"}


def screen(files: dict[str, str], schema_import: str = "internal/req2testschema",
           shipped: dict[str, str] | None = None) -> list[str]:
    """Findings (``path:line: why (what)``); empty when nothing was found.

    ``shipped``: the test packages' files as the project ships them. A finding inside a
    top-level declaration that is, token for token, one the project shipped is the project's
    own infrastructure (go-algorand-sdk's ``TestMain`` binds godog's flags with
    ``flag.CommandLine`` in the same file as its steps) and is not the submission's doing; an
    import the shipped test files make too is allowed, and each use of it outside such a
    declaration is a finding instead."""
    parser = go_parser()
    trusted: set[str] = set()
    shipped_imports: set[str] = set()
    for text in (shipped or {}).values():
        root = parser.parse(text.encode("utf-8")).root_node
        trusted |= {_normal(decl) for decl in root.named_children
                    if decl.type in ("function_declaration", "method_declaration", "var_declaration")}
        shipped_imports |= _imports(root)
    findings: list[str] = []
    for path, text in sorted(files.items()):
        if not path.endswith(".go"):
            continue
        root = parser.parse(text.encode("utf-8")).root_node
        for node, finding in _findings(path, root, schema_import, shipped_imports):
            top = _top_level(node)
            if top is not None and _normal(top) in trusted:
                continue
            findings.append(finding)
    return findings


def _imports(root: tree_sitter.Node) -> set[str]:
    found: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "import_spec":
            target = node.child_by_field_name("path")
            if target is not None:
                found.add(_string_value(target))
        elif node.type in ("source_file", "import_declaration", "import_spec_list"):
            stack.extend(node.children)
    return found


def _top_level(node: tree_sitter.Node) -> tree_sitter.Node | None:
    while node.parent is not None and node.parent.type != "source_file":
        node = node.parent
    return node if node.parent is not None and node.type != "import_declaration" else None


def _normal(node: tree_sitter.Node) -> str:
    return " ".join(_text(node).split())


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""


def _string_value(node: tree_sitter.Node) -> str:
    raw = _text(node)
    return raw[1:-1] if len(raw) >= 2 else raw


def _findings(path: str, root: tree_sitter.Node, schema_import: str,
              shipped_imports: set[str]) -> Iterator[tuple[tree_sitter.Node, str]]:
    aliases: dict[str, str] = {}  # local package name -> import path
    allowed: dict[str, str] = {}  # local name of a forbidden import the project's tests make -> why
    stack = [root]
    while stack:
        node = stack.pop()
        line = node.start_point[0] + 1
        kind = node.type
        if kind == "import_spec":
            target = node.child_by_field_name("path")
            name = node.child_by_field_name("name")
            imported = _string_value(target) if target is not None else ""
            local = _text(name) if name is not None else imported.rsplit("/", 1)[-1]
            aliases[local] = imported
            why = FORBIDDEN_IMPORTS.get(imported)
            if why is None and imported.startswith(FORBIDDEN_PREFIXES):
                why = "makes system calls or reaches godog's internals"
            if why is None and schema_import.strip("/") in imported:
                why = "imports the mutant switch"
            if why is not None and imported in shipped_imports and "mutant switch" not in why:
                allowed[local] = why  # the project's tests import it: each use is screened instead
            elif why is not None:
                yield node, f"{path}:{line}: {why} (import {imported!r})"
        elif kind == "comment":
            comment = _text(node)
            for directive, why in DIRECTIVES.items():
                if comment.startswith(directive):
                    yield node, f"{path}:{line}: {why}"
        elif kind == "selector_expression":
            operand = node.child_by_field_name("operand")
            field = node.child_by_field_name("field")
            if operand is not None and field is not None and operand.type == "identifier":
                if _text(operand) in allowed:
                    yield node, f"{path}:{line}: {allowed[_text(operand)]} ({_text(operand)}.{_text(field)})"
                package = aliases.get(_text(operand), _text(operand))
                names = FORBIDDEN_SELECTORS.get(package, set())
                if _text(field) in names:
                    yield node, f"{path}:{line}: reaches into the process or the runtime ({_text(operand)}.{_text(field)})"
        elif kind in ("interpreted_string_literal", "raw_string_literal") and (
                node.parent is None or node.parent.type != "import_spec"):
            value = _string_value(node)
            for marker, why in STRING_MARKERS.items():
                if marker in value + '"':
                    yield node, f"{path}:{line}: {why} ({value[:60]!r})"
        stack.extend(reversed(node.children))


__all__ = ["screen"]
