"""Go as a production language: mutants as source transformations (tree-sitter-go).

The operator families are Python's (docs/building.md#mutants-and-ground-truth-kills), found
syntactically inside function and method bodies (closures included) — never in declarations,
parameter or result lists, types (struct tags, array lengths), ``const`` declarations, switch
case labels or composite-literal keys (constants there must stay constant or distinct):

=====================  ===========================================================
conditional_boundary   ``<``↔``<=``, ``>``↔``>=``
negate_conditional     ``==``↔``!=``, ``<``→``>=``, ``<=``→``>``, ``>``→``<=``, ``>=``→``<``
negation               ``!x`` → ``(x)``
arithmetic             ``+``↔``-``, ``*``↔``/``, ``%``→``*``, ``&``↔``|``, ``<<``↔``>>``, the same
                       in ``op=`` assignments, ``-x`` → ``(x)``
logical                ``&&``↔``||``
constant               int n → n+1 (1 → 0, 0 → 1), float +1.0, ``true``↔``false``,
                       ``"x"`` → ``""``, ``""`` → ``"mutated"`` (Python's values)
return_value           ``return x`` in a one-result function → its zero value, written
                       from the declared result type (``0``, ``""``, ``false``, ``nil``, else
                       ``*new(T)``, the zero value of any type T, generics included)
call_removal           a call statement (not ``panic``, a terminating statement) → not run
=====================  ===========================================================

A binary replacement is parenthesised (``&`` and ``|`` bind differently in Go) and keeps the
text between the operands, so no line moves. The two statement families are written the way
the schemata build runs them, with the switch fixed (``if false { f(x) }``,
``if true { return 0 }; return x``): Go refuses an unused variable or import, and a removed
call or returned value is often the last use of one; written this way every reference stays
and a mutant compiles exactly when its schema does.

Which mutants are kept is decided by compiling them (``schemata.py``): tree-sitter has no
types, so e.g. ``+`` on strings is generated here and dropped there. ``generate_mutants``
therefore lists *candidates*; the builder keeps those of the compiled schemata build.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import tree_sitter

from bench.frameworks.godog.syntax import GoFunction, functions, go_parser, node_bytes
from bench.frameworks.protocol import BodyHider, Language
from bench.model import Mutant
from bench.mutation.node_mutants import node_mutants

BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
NEGATE = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "&": "|", "|": "&", "<<": ">>", ">>": "<<"}
LOGICAL = {"&&": "||", "||": "&&"}
AUG_ASSIGN = {f"{op}=": f"{new}=" for op, new in ARITH.items()}

LITERALS = ("int_literal", "float_literal", "interpreted_string_literal", "raw_string_literal")
# subtrees never mutated: types (struct tags, array lengths, type arguments), signatures, constants
_SKIPPED = {"parameter_list", "type_arguments", "type_parameter_list", "const_declaration", "type_declaration",
            "field_declaration_list", "interface_type", "struct_type", "array_type", "map_type", "slice_type",
            "pointer_type", "channel_type", "function_type", "generic_type", "qualified_type", "type_identifier",
            "comment"}
_ZERO_NUMERIC = {"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
                 "uintptr", "byte", "rune", "float32", "float64", "complex64", "complex128"}
_NIL_TYPES = ("pointer_type", "slice_type", "map_type", "channel_type", "function_type", "interface_type")


@dataclass(frozen=True)
class Site:
    """One place of a function body with its mutants; the schemata build switches them all
    at once, so a site is the unit a compile error drops."""

    node: tree_sitter.Node  # the expression or statement replaced
    kind: str  # binary, aug_assign, not, neg, literal, bool, logical, return, call
    mutants: tuple[tuple[str, str], ...]  # (operator family, source replacement) per mutant
    function: GoFunction
    zero: str = ""  # return: the zero value of the result type
    op: str = ""  # binary/aug_assign/logical: the original operator


class GoLanguage(Language):
    name: ClassVar[str] = "go"
    source_suffixes: ClassVar[tuple[str, ...]] = (".go",)

    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        out: list[Mutant] = []
        for rel in production_files(root, production):
            out.extend(file_mutants(rel, (root / rel).read_text(encoding="utf-8")))
        return out

    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        lines = source.splitlines(keepends=True)
        start, end = _offset(lines, mutant.line, mutant.col), _offset(lines, mutant.end_line, mutant.end_col)
        if source[start:end] != mutant.original:
            raise ValueError(f"mutant {mutant.id} does not fit {mutant.file}:{mutant.line}")
        return source[:start] + mutant.replacement + source[end:]

    def hider(self) -> BodyHider:
        from bench.frameworks.godog.hiding import GoHider

        return GoHider()


def production_files(root: Path, production: list[str]) -> list[str]:
    """The production ``.go`` files (tests, ``testdata`` and ``vendor`` left out), sorted."""
    found: set[str] = set()
    for entry in production:
        path = root / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*.go")) if path.is_dir() else []
        for file in paths:
            rel = file.relative_to(root)
            if file.suffix == ".go" and not file.name.endswith("_test.go") \
                    and not {"testdata", "vendor"} & set(rel.parts):
                found.add(rel.as_posix())
    return sorted(found)


def file_mutants(rel: str, text: str) -> list[Mutant]:
    data = text.encode("utf-8")
    mutants = {m.id: m for site in file_sites(data) for m in site_mutants(rel, data, site)}
    return sorted(mutants.values(), key=lambda m: (m.line, m.col, m.end_line, m.end_col, m.operator, m.id))


def site_mutants(rel: str, data: bytes, site: Site) -> list[Mutant]:
    function = site.function
    return node_mutants(rel, data, site.node, site.mutants, function.qualname, function.line,
                        function.node.end_point[0] + 1)


def file_sites(data: bytes) -> list[Site]:
    tree = go_parser().parse(data)
    return [site for function in functions(tree.root_node) if function.body is not None
            for site in _sites(function.body, function, function.node)]


def _sites(node: tree_sitter.Node, function: GoFunction, owner: tree_sitter.Node) -> Iterator[Site]:
    """Sites under ``node``; ``owner`` is the innermost function (declaration or literal) for
    return types."""
    for child in node.named_children:
        if child.type in _SKIPPED:
            continue
        if child.type == "func_literal":
            body = child.child_by_field_name("body")
            if body is not None:
                yield from _sites(body, function, child)
            continue
        if child.type == "expression_case":  # case labels stay: duplicates are compile errors
            yield from _case_body(child, function, owner)
            continue
        if child.type == "keyed_element" and len(child.named_children) == 2:
            yield from _sites(child.named_children[1], function, owner)  # the key stays
            continue
        site = _site(child, function, owner)
        if site is not None:
            yield site
        yield from _sites(child, function, owner)


def _case_body(case: tree_sitter.Node, function: GoFunction, owner: tree_sitter.Node) -> Iterator[Site]:
    value = case.child_by_field_name("value")
    for child in case.named_children:
        if value is not None and child.id == value.id:
            continue
        site = _site(child, function, owner)
        if site is not None:
            yield site
        yield from _sites(child, function, owner)


def _site(node: tree_sitter.Node, function: GoFunction, owner: tree_sitter.Node) -> Site | None:
    kind = node.type
    if kind == "binary_expression":
        return _binary(node, function)
    if kind == "unary_expression":
        op = node.child_by_field_name("operator")
        operand = node.child_by_field_name("operand")
        if op is None or operand is None:
            return None
        if op.type == "!":
            return Site(node, "not", (("negation", f"({node_bytes(operand).decode()})"),), function)
        if op.type == "-" and not _literal_only(node):
            return Site(node, "neg", (("arithmetic", f"({node_bytes(operand).decode()})"),), function)
        return None
    if kind in LITERALS and not _in_literal_expression(node):
        replacement = _constant(node)
        if replacement == "0" and _divisor(node):  # x / 1 -> x / 0 is a compile error, not a mutant
            return None
        return Site(node, "literal", (("constant", replacement),), function) if replacement else None
    if kind in ("true", "false"):
        return Site(node, "bool", (("constant", "false" if kind == "true" else "true"),), function)
    if kind == "assignment_statement":
        op = node.child_by_field_name("operator")
        # one line only: the schema writes the statement twice (both operators), which must
        # not add lines
        if op is not None and op.type in AUG_ASSIGN and _in_block(node) and b"\n" not in node_bytes(node):
            return Site(node, "aug_assign", (("arithmetic", _swap_operator(node, op, AUG_ASSIGN[op.type])),),
                        function, op=op.type)
        return None
    if kind == "return_statement":
        return _return(node, function, owner)
    if kind == "expression_statement" and _in_block(node):
        call = node.named_children[0] if node.named_children else None
        callee = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
        if callee is not None and callee.text != b"panic":
            return Site(node, "call", (("call_removal", f"if false {{ {node_bytes(node).decode()} }}"),), function)
    return None


def _binary(node: tree_sitter.Node, function: GoFunction) -> Site | None:
    op = node.child_by_field_name("operator")
    if op is None:
        return None
    sym = op.type
    mutants: list[tuple[str, str]] = []
    if sym in BOUNDARY:
        mutants.append(("conditional_boundary", "(" + _swap_operator(node, op, BOUNDARY[sym]) + ")"))
    if sym in NEGATE:
        mutants.append(("negate_conditional", "(" + _swap_operator(node, op, NEGATE[sym]) + ")"))
    if sym in ARITH and not _literal_only(node):
        right = node.child_by_field_name("right")
        if not (sym == "*" and right is not None and right.type == "int_literal" and _int_value(right) == 0):
            mutants.append(("arithmetic", "(" + _swap_operator(node, op, ARITH[sym]) + ")"))
    if sym in LOGICAL:
        if b"recover()" in node_bytes(node):  # the schema's closure would make recover() return nil
            return None
        mutants.append(("logical", "(" + _swap_operator(node, op, LOGICAL[sym]) + ")"))
    kind = "logical" if sym in LOGICAL else "binary"
    return Site(node, kind, tuple(mutants), function, op=sym) if mutants else None


def _return(node: tree_sitter.Node, function: GoFunction, owner: tree_sitter.Node) -> Site | None:
    values = node.named_children[0] if node.named_children else None
    if values is None or values.type != "expression_list" or len(values.named_children) != 1:
        return None
    zero = _zero_value(owner.child_by_field_name("result"))
    value = node_bytes(values.named_children[0]).decode()
    if zero is None or value == zero or (zero == "nil" and value == "nil"):
        return None
    return Site(node, "return", (("return_value", f"if true {{ return {zero} }}; {node_bytes(node).decode()}"),),
                function, zero=zero)


def _zero_value(result: tree_sitter.Node | None) -> str | None:
    """The zero value of a one-result signature's type, or None."""
    if result is None:
        return None
    if result.type == "parameter_list":
        params = [p for p in result.named_children if p.type == "parameter_declaration"]
        if len(params) != 1 or len([c for c in params[0].named_children if c.type == "identifier"]) > 1:
            return None
        result = params[0].child_by_field_name("type")
        if result is None:
            return None
    text = node_bytes(result).decode()
    if "\n" in text:
        return None
    if text in _ZERO_NUMERIC:
        return "0"
    if text == "string":
        return '""'
    if text == "bool":
        return "false"
    if result.type in _NIL_TYPES or text in ("error", "any"):
        return "nil"
    return f"*new({text})"


def _swap_operator(node: tree_sitter.Node, op: tree_sitter.Node, new: str) -> str:
    data = node_bytes(node)
    start, end = op.start_byte - node.start_byte, op.end_byte - node.start_byte
    return (data[:start] + new.encode() + data[end:]).decode("utf-8")


def _constant(node: tree_sitter.Node) -> str | None:
    text = node_bytes(node).decode("utf-8")
    if node.type == "int_literal":
        value = _int_value(node)
        return None if value is None else "0" if value == 1 else "1" if value == 0 else str(value + 1)
    if node.type == "float_literal":
        try:
            return repr(float(text.replace("_", "")) + 1.0)
        except ValueError:  # hex floats
            return None
    if node.type == "interpreted_string_literal":
        return '""' if text != '""' else '"mutated"'
    if node.type == "raw_string_literal":
        return '""' if text != "``" else '"mutated"'
    return None


def _int_value(node: tree_sitter.Node) -> int | None:
    text = node_bytes(node).decode().replace("_", "").lower()
    if re.fullmatch(r"0[0-7]+", text):  # legacy octal
        text = "0o" + text[1:]
    try:
        return int(text, 0)
    except ValueError:
        return None


def _literal_only(node: tree_sitter.Node) -> bool:
    """An expression of literals alone (``1 << 20``, ``-1``): Go evaluates it exactly at
    compile time, a schema at run time in ``int`` — not the same program, so left alone."""
    if node.type in LITERALS:
        return True
    if node.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
        return all(_literal_only(c) for c in node.named_children)
    return False


def _in_literal_expression(node: tree_sitter.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type in ("parenthesized_expression", "unary_expression"):
        parent = parent.parent
    return parent is not None and parent.type == "binary_expression" and _literal_only(parent)


def _divisor(node: tree_sitter.Node) -> bool:
    parent = node.parent
    if parent is not None and parent.type == "expression_list":  # x /= 1
        parent = parent.parent
    op = parent.child_by_field_name("operator") if parent is not None else None
    right = parent.child_by_field_name("right") if parent is not None else None
    return op is not None and op.type in ("/", "%", "/=", "%=") and right is not None \
        and node.start_byte >= right.start_byte


def _in_block(node: tree_sitter.Node) -> bool:
    """A statement of a block (an ``if`` can replace it; not a for clause or an if's init)."""
    parent = node.parent
    return parent is not None and parent.type in ("statement_list", "block", "expression_case",
                                                  "default_case", "communication_case", "type_case")


def _offset(lines: list[str], line: int, column: int) -> int:
    if not 1 <= line <= len(lines):
        raise ValueError(f"line {line} is outside the file")
    return sum(len(x) for x in lines[:line - 1]) + column
