"""Body hiding for Go production code (views of Godog projects).

tree-sitter-go finds the top-level function and method declarations; each selected body
becomes ``{ panic("implementation hidden") }`` padded with its own line breaks, so the
declaration (receiver, type parameters, parameters, results, doc comment) stays verbatim and
every later line keeps its number — the convention of the Python and JavaScript hiders.
``panic`` is a terminating statement, so functions with results (named or not) still
compile. A declaration without a body (assembly stub, ``//go:linkname``) and an empty body
have nothing to hide (``kept_stubs``). Qualnames: ``Func``, ``Type.Method`` for value and
pointer receivers alike (type arguments dropped: ``(l *List[T]) Push`` is ``List.Push``); the
line is the ``func`` keyword's.

Go refuses an import that nothing uses, and hiding can remove the last use. An import whose
package name is used in the original file but no longer in the hidden one becomes a blank
import (``_ "path"``, same line; it is still initialised exactly as before). The package name
of an unnamed import is guessed from its path (``.../v2`` and ``gopkg.in/x.v3`` handled); a
guess that the original file never uses is left alone, so a wrong guess never blanks an import
that is still needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bench.frameworks.godog.syntax import functions, go_parser, node_bytes
from bench.frameworks.protocol import HIDDEN_MESSAGE, HidingReport

PLACEHOLDER = f'{{ panic("{HIDDEN_MESSAGE}") }}'


class GoHider:
    """``BodyHider`` of Go (``GoLanguage.hider``)."""

    language = "go"
    source_suffixes: tuple[str, ...] = (".go",)
    # Go tests live beside the code they test (``x_test.go``): never production, never hidden
    test_suffixes: tuple[str, ...] = ("_test.go",)

    def hide_bodies(self, source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
        return hide_go_bodies(source, should_hide)


def hide_go_bodies(source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
    data = source.encode("utf-8")
    tree = go_parser().parse(data)
    report = HidingReport()
    spans: list[tuple[int, int, bytes]] = []
    for function in functions(tree.root_node):
        body = function.body
        if body is None or not data[body.start_byte + 1:body.end_byte - 1].strip():
            report.kept_stubs.append(function.qualname)
            continue
        if should_hide(function.qualname, function.line):
            breaks = data[body.start_byte:body.end_byte].count(b"\n")
            spans.append((body.start_byte, body.end_byte, PLACEHOLDER.encode() + b"\n" * breaks))
            report.hidden.append(function.qualname)
    if not spans:
        return source, report
    hidden = _splice(data, spans)
    spans.extend(_blanked_imports(tree.root_node, data, hidden))
    return _splice(data, spans).decode("utf-8"), report


def _splice(data: bytes, spans: list[tuple[int, int, bytes]]) -> bytes:
    out = data
    for start, end, text in sorted(spans, reverse=True):
        out = out[:start] + text + out[end:]
    return out


def import_name(path: str) -> str:
    """The package name Go's convention gives an import path (``github.com/a/go-b/v2`` → ``b``)."""
    parts = path.split("/")
    last = parts[-1]
    if re.fullmatch(r"v\d+", last) and len(parts) > 1:
        last = parts[-2]
    last = re.sub(r"\.v\d+$", "", last)
    last = re.sub(r"^go-", "", last)
    last = re.sub(r"[-.]go$", "", last)
    return re.sub(r"\W", "_", last)


def _used_names(data: bytes) -> set[str]:
    """Identifiers used as ``name.`` selectors, comments and strings left out."""
    tree = go_parser().parse(data)
    names: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in ("selector_expression", "qualified_type"):
            first = node.named_children[0] if node.named_children else None
            if first is not None and first.type in ("identifier", "package_identifier"):
                names.add(node_bytes(first).decode())
        stack.extend(node.named_children)
    return names


def _blanked_imports(root, original: bytes, hidden: bytes) -> list[tuple[int, int, bytes]]:
    before, after = _used_names(original), _used_names(hidden)
    edits: list[tuple[int, int, bytes]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type != "import_spec":
            stack.extend(c for c in node.named_children if c.type in ("import_declaration", "import_spec_list",
                                                                       "import_spec"))
            continue
        path_node = node.child_by_field_name("path")
        name_node = node.child_by_field_name("name")
        if path_node is None or path_node.text == b'"C"':  # cgo's pseudo-package must stay as written
            continue
        if name_node is not None and name_node.type in ("blank_identifier", "dot"):
            continue
        name = (node_bytes(name_node).decode() if name_node is not None
                else import_name(node_bytes(path_node).decode()[1:-1]))
        if name in before and name not in after:
            if name_node is not None:
                edits.append((name_node.start_byte, name_node.end_byte, b"_"))
            else:
                edits.append((path_node.start_byte, path_node.start_byte, b"_ "))
    return edits
