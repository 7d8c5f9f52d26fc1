"""Body hiding for JavaScript/TypeScript production code (views of cucumber-js projects).

tree-sitter finds the outermost function bodies — declarations, class methods, and
functions or arrows bound to a name — and each selected body becomes
``{ throw new Error("implementation hidden"); }`` padded with its own line breaks, so the
declaration (name, parameters, types, modifiers) stays verbatim and every later line keeps
its number. Qualnames: ``name`` for a function or bound function, ``Class.method`` for a
method; the line is the declaration's first line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from bench.frameworks.cucumber_js.declarations import FUNCTION_NODES, function_name
from bench.frameworks.cucumber_js.testside import js_parser
from bench.frameworks.protocol import HIDDEN_MESSAGE, HidingReport

if TYPE_CHECKING:
    import tree_sitter


class JsHider:
    """``BodyHider`` of JavaScript/TypeScript (``TypeScriptLanguage.hider``)."""

    language = "typescript"
    source_suffixes: tuple[str, ...] = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
    test_suffixes: tuple[str, ...] = ()

    def hide_bodies(self, source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
        return hide_js_bodies(source, should_hide, typescript=True)


def hide_js_bodies(source: str, should_hide: Callable[[str, int], bool],
                   typescript: bool = True) -> tuple[str, HidingReport]:
    data = source.encode("utf-8")
    tree = js_parser(typescript).parse(data)
    report = HidingReport()
    spans: list[tuple[int, int]] = []
    stack: list[tuple[tree_sitter.Node, str]] = [(tree.root_node, "")]
    while stack:
        node, owner = stack.pop()
        if node.type in ("class_declaration", "class", "abstract_class_declaration"):
            class_name = node.child_by_field_name("name")
            # a node's text is None only in a tree parsed from a callback: this one is parsed from ``data``
            owner = cast(bytes, class_name.text).decode() if class_name is not None else owner
        if node.type in FUNCTION_NODES:
            body = node.child_by_field_name("body")
            name = function_name(node)
            if body is not None and body.type == "statement_block" and name:
                qualname = f"{owner}.{name}" if owner and node.type == "method_definition" else name
                line = node.start_point[0] + 1
                inner = data[body.start_byte + 1:body.end_byte - 1]
                if not inner.strip():
                    report.kept_stubs.append(qualname)
                elif should_hide(qualname, line):
                    spans.append((body.start_byte, body.end_byte))
                    report.hidden.append(qualname)
                continue  # outermost bodies only: what is nested goes with them
        stack.extend((child, owner) for child in reversed(node.children))
    out = data
    for start, end in sorted(spans, reverse=True):
        breaks = out[start:end].count(b"\n")
        placeholder = f'{{ throw new Error("{HIDDEN_MESSAGE}"); }}'.encode() + b"\n" * breaks
        out = out[:start] + placeholder + out[end:]
    return out.decode("utf-8"), report
