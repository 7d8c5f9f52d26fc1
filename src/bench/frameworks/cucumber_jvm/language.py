"""Java as a production language: mutants as source transformations (tree-sitter-java).

The operator families are Python's and Go's (docs/building.md#mutants-and-ground-truth-kills,
PIT's names), found syntactically inside method and constructor bodies (lambdas, anonymous and
local classes included) — never where Java needs a constant or a declaration: annotations,
``case`` labels (constants that must stay distinct), field declarations and initializer
blocks (a ``static final`` constant may be a case label elsewhere), enum constants, the
initializer of a ``final`` local that may be a constant variable (a case label may use it),
expressions of literals alone (``1 << 20``, ``"a" + "b"``: folded at compile time), and the
``true`` of ``while (true)`` / ``do ... while (true)`` (reachability: a method ending in such a
loop needs no ``return``):

=====================  ===========================================================
conditional_boundary   ``<``↔``<=``, ``>``↔``>=``
negate_conditional     ``==``↔``!=``, ``<``→``>=``, ``<=``→``>``, ``>``→``<=``, ``>=``→``<``
negation               ``!x`` → ``(x)``
arithmetic             ``+``↔``-``, ``*``↔``/``, ``%``→``*``, ``&``↔``|``, ``^``→``&``, ``<<``↔``>>``,
                       ``>>>``→``<<``, the same in ``op=`` statements, ``-x`` → ``(x)``
logical                ``&&``↔``||``
constant               int n → n+1 (1 → 0, 0 → 1; ``L`` suffix and radix kept), float/double
                       +1.0 (``f``/``d`` kept), ``true``↔``false``, ``"x"`` → ``""``,
                       ``""`` → ``"mutated"`` (char literals and text blocks are not mutated)
return_value           ``return x;`` in a method with a declared non-void type → the type's
                       default (``0``, ``0L``, ``0.0f``, ``0.0``, ``false``, ``'\\0'``,
                       ``(byte) 0``, ``(short) 0``, else ``null``); not in lambdas (no
                       declared type), an anonymous or local class's method by its own type
call_removal           a method-call statement ``f(x);`` → not run (never ``super(...)`` or
                       ``this(...)``)
=====================  ===========================================================

A binary replacement is parenthesised (``(a <= b)``) and keeps the text between the operands,
so no line moves; an operand that would bind differently to the new operator is parenthesised
too (``a ^ b | c`` → ``((a ^ b) & c)``), so the source mutant is the schema's tree. The two
statement families are written the way the schemata build runs them with the switch fixed:
``if (false) { f(x); }``, ``{ if (true) return 0; return x; }`` (Java's reachability rules
treat ``if`` specially, so both compile wherever the original does and the statements after
them stay reachable); a statement that is not directly in a block (the body of a brace-less
``if``) gets braces around it, so an ``else`` still binds as before.

Which mutants are kept is decided by compiling them (``schemata.py``): tree-sitter has no
types, so ``-`` of a string concatenation with no string literal among its operands
(``name + n``) or a switched ``5`` assigned to a ``byte`` are generated here and dropped there
(a ``+`` with a string-literal operand is recognised as a concatenation and never generated; a
literal beside a ``char`` literal or a ``(byte)`` cast in a conditional is not a site).
``generate_mutants`` therefore lists *candidates*; the builder keeps those of the compiled
schemata build.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import tree_sitter

from bench.frameworks.cucumber_jvm.syntax import JavaMethod, java_parser, methods
from bench.frameworks.protocol import BodyHider, Language
from bench.model import Mutant
from bench.mutation.node_mutants import node_mutants

BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
NEGATE = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "&": "|", "|": "&", "^": "&", "<<": ">>", ">>": "<<",
         ">>>": "<<"}
LOGICAL = {"&&": "||", "||": "&&"}
AUG_ASSIGN = {f"{op}=": f"{new}=" for op, new in ARITH.items()}

INT_LITERALS = ("decimal_integer_literal", "hex_integer_literal", "octal_integer_literal", "binary_integer_literal")
FLOAT_LITERALS = ("decimal_floating_point_literal", "hex_floating_point_literal")
LITERALS = (*INT_LITERALS, *FLOAT_LITERALS, "string_literal", "character_literal", "true", "false", "null_literal")
# subtrees never mutated: annotations, case labels, declarations of fields and parameters, types
_SKIPPED = {"annotation", "marker_annotation", "modifiers", "switch_label", "field_declaration",
            "constant_declaration", "static_initializer", "formal_parameters", "formal_parameter",
            "catch_formal_parameter", "type_arguments", "type_parameters", "dimensions", "line_comment",
            "block_comment", "integral_type", "floating_point_type", "boolean_type", "void_type",
            "type_identifier", "scoped_type_identifier", "generic_type", "array_type", "annotated_type",
            "enum_constant", "annotation_type_declaration", "class_literal"}
_TYPE_BODIES = ("class_body", "interface_body", "enum_body", "enum_body_declarations")
_LOCAL_TYPES = ("class_declaration", "record_declaration", "interface_declaration", "enum_declaration")
_MEMBER_METHODS = ("method_declaration", "constructor_declaration", "compact_constructor_declaration")
# statements whose parent may hold several (an ``if`` can replace one without braces)
_BLOCKS = ("block", "constructor_body", "switch_block_statement_group")
# what a constant expression is made of (JLS 15.29), types aside: a ``final`` local initialised
# with nothing else may be a constant variable
_CONSTANT_PARTS = {*LITERALS, "string_fragment", "escape_sequence", "multiline_string_fragment", "identifier",
                   "field_access", "scoped_identifier", "parenthesized_expression", "binary_expression",
                   "unary_expression", "ternary_expression", "cast_expression", "integral_type",
                   "floating_point_type", "boolean_type", "type_identifier", "scoped_type_identifier"}
_DEFAULTS = {"int": "0", "long": "0L", "float": "0.0f", "double": "0.0", "boolean": "false", "char": "'\\0'",
             "byte": "(byte) 0", "short": "(short) 0"}
# a returned number that already is its type's default (the mutant would be equivalent)
_NUMERIC_ZEROS = {"0", "0L", "0l", "0.0", "0.0f", "0.0F", "0.0d", "0.0D", "0f", "0F", "0d", "0D", "0.f", "0.",
                  "'\\0'", "(byte) 0", "(short) 0", "(char) 0"}
_COMMENTS = ("line_comment", "block_comment")
# Java's binary operators, tighter first
_PRECEDENCE = {op: rank for rank, ops in enumerate(
    (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>", ">>>"),
     ("+", "-"), ("*", "/", "%")), start=3) for op in ops}


@dataclass(frozen=True)
class Site:
    """One place of a method body with its mutants; the schemata build switches them all at
    once, so a site is the unit a compile error drops."""

    node: tree_sitter.Node  # the expression or statement replaced
    kind: str  # compare, equality, binary, logical, not, neg, literal, bool, aug_assign, return, call
    mutants: tuple[tuple[str, str], ...]  # (operator family, source replacement) per mutant
    method: JavaMethod  # the named type's method (or constructor) the site is in
    default: str = ""  # return: the default value of the declared type
    op: str = ""  # compare/equality/binary/logical/aug_assign: the original operator
    braces: bool = False  # aug_assign/call: the statement is not directly in a block


class JavaLanguage(Language):
    name: ClassVar[str] = "java"
    source_suffixes: ClassVar[tuple[str, ...]] = (".java",)

    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        out: list[Mutant] = []
        for rel in production_files(root, production):
            out.extend(file_mutants(rel, (root / rel).read_text(encoding="utf-8")))
        return out

    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        lines = source.split("\n")  # tree-sitter's lines: a form feed or U+2028 is no line break
        start, end = _offset(lines, mutant.line, mutant.col), _offset(lines, mutant.end_line, mutant.end_col)
        if source[start:end] != mutant.original:
            raise ValueError(f"mutant {mutant.id} does not fit {mutant.file}:{mutant.line}")
        return source[:start] + mutant.replacement + source[end:]

    def hider(self) -> BodyHider:
        from bench.frameworks.cucumber_jvm.hiding import JavaHider

        return JavaHider()


def production_files(root: Path, production: list[str]) -> list[str]:
    """The production ``.java`` files under the given directories or files, without
    ``package-info.java`` and ``module-info.java`` (no method bodies), sorted."""
    found: set[str] = set()
    for entry in production:
        path = root / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*.java")) if path.is_dir() else []
        for file in paths:
            if file.suffix == ".java" and file.is_file() and file.name not in ("package-info.java", "module-info.java"):
                found.add(file.relative_to(root).as_posix())
    return sorted(found)


def file_mutants(rel: str, text: str) -> list[Mutant]:
    data = text.encode("utf-8")
    mutants = {m.id: m for site in file_sites(data) for m in site_mutants(rel, data, site)}
    return sorted(mutants.values(), key=lambda m: (m.line, m.col, m.end_line, m.end_col, m.operator, m.id))


def site_mutants(rel: str, data: bytes, site: Site) -> list[Mutant]:
    method = site.method
    return node_mutants(rel, data, site.node, site.mutants, method.qualname, method.line,
                        method.node.end_point[0] + 1)


def file_sites(data: bytes) -> list[Site]:
    """The mutation sites of a Java file, in source order within each method (outer types'
    methods before inner ones, as ``syntax.methods`` lists them)."""
    tree = java_parser().parse(data)
    return [site for method in methods(tree.root_node) if method.body is not None
            for child in method.body.named_children for site in _walk(child, method, method.node)]


def _walk(node: tree_sitter.Node, method: JavaMethod, owner: tree_sitter.Node) -> Iterator[Site]:
    """Sites at and under ``node``; ``owner`` is the innermost method declaration or lambda
    (what a ``return`` returns from)."""
    kind = node.type
    if kind in _SKIPPED:
        return
    if kind in _TYPE_BODIES:  # an anonymous or local class: its methods' bodies, nothing else
        for member in node.named_children:
            if member.type in _MEMBER_METHODS:
                body = member.child_by_field_name("body")
                if body is not None:
                    for child in body.named_children:
                        yield from _walk(child, method, member)
            elif member.type in _LOCAL_TYPES or member.type in _TYPE_BODIES:
                yield from _walk(member, method, owner)
        return
    if kind in _LOCAL_TYPES:
        body = node.child_by_field_name("body")
        if body is not None:
            yield from _walk(body, method, owner)
        return
    if kind == "lambda_expression":
        body = node.child_by_field_name("body")
        if body is not None:
            yield from _walk(body, method, node)
        return
    if kind == "local_variable_declaration" and _is_final(node):
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                continue
            value = declarator.child_by_field_name("value")
            if value is not None and not _maybe_constant(value):
                yield from _walk(value, method, owner)
        return
    site = _site(node, method, owner)
    if site is not None:
        yield site
    for child in node.named_children:
        yield from _walk(child, method, owner)


def _site(node: tree_sitter.Node, method: JavaMethod, owner: tree_sitter.Node) -> Site | None:
    kind = node.type
    if kind == "binary_expression":
        return _binary(node, method)
    if kind == "unary_expression":
        op = node.child_by_field_name("operator")
        operand = node.child_by_field_name("operand")
        if op is None or operand is None or _literal_only(node):
            return None
        if op.type == "!":
            return Site(node, "not", (("negation", f"({_text(operand)})"),), method)
        if op.type == "-":
            return Site(node, "neg", (("arithmetic", f"({_text(operand)})"),), method)
        return None
    if kind in INT_LITERALS or kind in FLOAT_LITERALS or kind == "string_literal":
        if _in_literal_expression(node) or _beside_char(node):
            return None
        replacement = _constant(node)
        return Site(node, "literal", (("constant", replacement),), method) if replacement else None
    if kind in ("true", "false"):
        if _in_literal_expression(node) or _loop_condition(node):
            return None
        return Site(node, "bool", (("constant", "false" if kind == "true" else "true"),), method)
    if kind == "expression_statement":
        return _statement(node, method)
    if kind == "return_statement":
        return _return(node, method, owner)
    return None


def _binary(node: tree_sitter.Node, method: JavaMethod) -> Site | None:
    op = node.child_by_field_name("operator")
    if op is None or _literal_only(node):
        return None
    sym = op.type
    mutants: list[tuple[str, str]] = []
    if sym in BOUNDARY:
        mutants.append(("conditional_boundary", "(" + _swap_operator(node, op, BOUNDARY[sym]) + ")"))
    if sym in NEGATE:
        mutants.append(("negate_conditional", "(" + _swap_operator(node, op, NEGATE[sym]) + ")"))
    if sym in ARITH and not (sym == "+" and _stringy(node)):
        mutants.append(("arithmetic", "(" + _swap_operator(node, op, ARITH[sym]) + ")"))
    if sym in LOGICAL:
        mutants.append(("logical", "(" + _swap_operator(node, op, LOGICAL[sym]) + ")"))
    if not mutants:
        return None
    kind = "compare" if sym in BOUNDARY else "equality" if sym in ("==", "!=") else \
        "logical" if sym in LOGICAL else "binary"
    return Site(node, kind, tuple(mutants), method, op=sym)


def _statement(node: tree_sitter.Node, method: JavaMethod) -> Site | None:
    """A compound assignment or a method call written as a statement."""
    children = [c for c in node.named_children if c.type not in _COMMENTS]
    if len(children) != 1 or not _statement_context(node):
        return None
    expression = children[0]
    braces = node.parent is not None and node.parent.type not in _BLOCKS
    if expression.type == "method_invocation":
        text = _text(node)
        replacement = f"if (false) {{ {text} }}"
        return Site(node, "call", (("call_removal", f"{{ {replacement} }}" if braces else replacement),), method,
                    braces=braces)
    if expression.type == "assignment_expression":
        op = expression.child_by_field_name("operator")
        right = expression.child_by_field_name("right")
        # one line only: the schema writes the statement twice (both operators), which must not
        # add lines; a string on the right is a concatenation (no other operator applies)
        if op is None or op.type not in AUG_ASSIGN or b"\n" in _bytes(node) or right is None or \
                (op.type == "+=" and _stringy(right)):
            return None
        data = _bytes(node)
        start, end = op.start_byte - node.start_byte, op.end_byte - node.start_byte
        replacement = (data[:start] + AUG_ASSIGN[op.type].encode() + data[end:]).decode("utf-8")
        return Site(node, "aug_assign", (("arithmetic", replacement),), method, op=op.type, braces=braces)
    return None


def _return(node: tree_sitter.Node, method: JavaMethod, owner: tree_sitter.Node) -> Site | None:
    value = node.named_children[0] if node.named_children else None
    if value is None or owner.type != "method_declaration" or not _statement_context(node):
        return None
    default = _default_value(owner)
    text = _text(value)
    if default is None or text == default or (default not in ("null", "false") and text in _NUMERIC_ZEROS):
        return None
    return Site(node, "return", (("return_value", f"{{ if (true) return {default}; {_text(node)} }}"),), method,
                default=default)


def _default_value(declaration: tree_sitter.Node) -> str | None:
    """The default value of a method's declared return type; None for ``void``."""
    result = declaration.child_by_field_name("type")
    if result is None or result.type == "void_type":
        return None
    if any(c.type == "dimensions" for c in declaration.named_children):  # ``int f()[]``
        return "null"
    if result.type in ("integral_type", "floating_point_type", "boolean_type"):
        return _DEFAULTS.get(_text(result), "null")
    return "null"


def _statement_context(node: tree_sitter.Node) -> bool:
    """A statement an ``if`` or a block may replace: not the value of a switch *expression*'s
    rule (``case 1 -> f(x);`` there is an expression)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type != "switch_rule":
        return True
    switch = parent.parent.parent if parent.parent is not None else None
    return switch is not None and switch.parent is not None and \
        switch.parent.type in (*_BLOCKS, "labeled_statement", "if_statement", "while_statement", "for_statement",
                               "enhanced_for_statement", "do_statement", "switch_rule")


def _swap_operator(node: tree_sitter.Node, op: tree_sitter.Node, new: str) -> str:
    """The binary expression with ``new`` for its operator; an operand that would bind
    differently to it is parenthesised (``a ^ b | c`` → ``(a ^ b) & c``, not ``a ^ b & c``)."""
    data = _bytes(node)
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        start, end = op.start_byte - node.start_byte, op.end_byte - node.start_byte
        return (data[:start] + new.encode() + data[end:]).decode("utf-8")
    rank = _PRECEDENCE[new]

    def operand(child: tree_sitter.Node, weaker: bool) -> str:
        text = _text(child)
        inner = _precedence(child)
        return f"({text})" if inner is not None and (inner < rank or (weaker and inner == rank)) else text

    base = node.start_byte
    return (operand(left, False) + data[left.end_byte - base:op.start_byte - base].decode("utf-8") + new
            + data[op.end_byte - base:right.start_byte - base].decode("utf-8") + operand(right, True))


def _precedence(node: tree_sitter.Node) -> int | None:
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator")
        return _PRECEDENCE.get(op.type) if op is not None else None
    return {"instanceof_expression": 9, "ternary_expression": 2, "assignment_expression": 1,
            "lambda_expression": 1}.get(node.type)


def _constant(node: tree_sitter.Node) -> str | None:
    text = _text(node)
    if node.type in INT_LITERALS:
        return _int_successor(text, negated=_negated(node))
    if node.type == "decimal_floating_point_literal":
        suffix = text[-1] if text[-1] in "fFdD" else ""
        try:
            value = float(text[:len(text) - len(suffix)].replace("_", ""))
        except ValueError:
            return None
        new = value + 1.0
        if not math.isfinite(new) or new == value:
            return None
        return repr(new) + suffix
    if node.type == "string_literal":
        if text.startswith('"""'):  # text blocks: multi-line, not mutated
            return None
        return '""' if text != '""' else '"mutated"'
    return None


def _int_successor(text: str, negated: bool = False) -> str | None:
    """n → n+1 (1 → 0, 0 → 1) in the literal's own radix and type; the result stays a valid
    literal of that type (``0xFFFFFFFF``, i.e. -1, → ``0x0``; ``2147483647`` → ``0x80000000``)."""
    suffix = text[-1] if text[-1] in "lL" else ""
    body = text[:len(text) - len(suffix)].replace("_", "")
    bits = 64 if suffix else 32
    lower = body.lower()
    if lower.startswith("0x"):
        prefix, radix, digits = body[:2], 16, body[2:]
    elif lower.startswith("0b"):
        prefix, radix, digits = body[:2], 2, body[2:]
    elif len(body) > 1 and body.startswith("0"):
        prefix, radix, digits = "0", 8, body[1:]
    else:
        prefix, radix, digits = "", 10, body
    try:
        unsigned = int(digits, radix)
    except ValueError:
        return None
    if unsigned >= 1 << bits or (radix == 10 and unsigned > (1 << (bits - 1)) - 1):
        return None  # 2147483648 (only legal after a unary minus) or out of range
    value = unsigned - (1 << bits) if unsigned >> (bits - 1) else unsigned
    new = 0 if value == 1 else 1 if value == 0 else value + 1
    if negated and new == 1 << (bits - 1):
        return None  # -(2147483647) → -(0x80000000) would be 2147483648 positive in the source mutant
    if radix == 10 and new <= (1 << (bits - 1)) - 1:
        return f"{new}{suffix}"
    new &= (1 << bits) - 1
    if radix == 10:  # 2147483647 + 1: the int's bits in hex
        return f"0x{new:X}{suffix}"
    formatted = format(new, {16: "x", 2: "b", 8: "o"}[radix])
    if radix == 16 and any(c.isupper() for c in digits):
        formatted = formatted.upper()
    return f"{prefix}{formatted}{suffix}"


def _negated(node: tree_sitter.Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "unary_expression" and \
        (op := parent.child_by_field_name("operator")) is not None and op.type == "-"


def _literal_only(node: tree_sitter.Node) -> bool:
    """An expression of literals alone (``1 << 20``, ``-1``, ``"a" + "b"``): a constant
    expression Java folds at compile time (and may need as a constant), left alone."""
    if node.type in LITERALS:
        return True
    if node.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
        return all(_literal_only(c) for c in node.named_children)
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        return value is not None and _literal_only(value)
    return False


def _in_literal_expression(node: tree_sitter.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type in ("parenthesized_expression", "unary_expression", "cast_expression"):
        parent = parent.parent
    return parent is not None and parent.type == "binary_expression" and _literal_only(parent)


def _beside_char(node: tree_sitter.Node) -> bool:
    """A literal branch of ``c ? 'a' : 0`` or ``c ? (byte) 1 : 0``: with both branches
    constant the conditional is a ``char`` (a ``byte``, a ``short``), with the literal switched
    it would be an ``int`` (``println`` would print 97; ``byte b = c ? (byte) 1 : 0`` would not
    compile, and javac reports it outside every site)."""
    parent = node.parent
    if parent is None or parent.type != "ternary_expression":
        return False
    for branch in parent.named_children[1:]:
        while branch.type == "parenthesized_expression" and branch.named_children:
            branch = branch.named_children[0]
        if branch.type == "character_literal":
            return True
        cast = branch.child_by_field_name("type") if branch.type == "cast_expression" else None
        if cast is not None and _text(cast) in ("byte", "short", "char"):
            return True
    return False


def _loop_condition(node: tree_sitter.Node) -> bool:
    """The ``true`` of ``while (true)``, ``do ... while (true)``, ``for (;true;)``: a constant
    condition makes the loop's end unreachable, which javac relies on (no ``return`` after it)."""
    parent = node.parent
    if parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is None:
        return False
    if parent.type in ("while_statement", "do_statement"):
        return True
    condition = parent.child_by_field_name("condition") if parent.type == "for_statement" else None
    return condition is not None and condition.id == node.id


def _stringy(node: tree_sitter.Node) -> bool:
    """Certainly a ``String``: a string literal, or a ``+`` with such an operand (Java's
    concatenation: ``"a" + x`` whatever x is)."""
    if node.type == "string_literal":
        return True
    if node.type == "parenthesized_expression":
        return len(node.named_children) == 1 and _stringy(node.named_children[0])
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator")
        return op is not None and op.type == "+" and any(_stringy(c) for c in node.named_children)
    return False


def _is_final(declaration: tree_sitter.Node) -> bool:
    return any(c.type == "modifiers" and any(m.type == "final" for m in c.children) for c in declaration.children)


def _maybe_constant(node: tree_sitter.Node) -> bool:
    """Made of what a constant expression is made of (no call, no ``new``, no array access):
    the initializer may make a ``final`` local a constant variable, which a case label can use."""
    if node.type not in _CONSTANT_PARTS:
        return False
    return all(_maybe_constant(c) for c in node.named_children)


def _text(node: tree_sitter.Node) -> str:
    return _bytes(node).decode("utf-8")


def _bytes(node: tree_sitter.Node) -> bytes:
    text = node.text
    return text if text is not None else b""


def _offset(lines: list[str], line: int, column: int) -> int:
    """The offset of (1-based line, character column) in the text split at its ``\\n``."""
    if not 1 <= line <= len(lines):
        raise ValueError(f"line {line} is outside the file")
    return sum(len(x) + 1 for x in lines[:line - 1]) + column


__all__ = ["ARITH", "AUG_ASSIGN", "BOUNDARY", "LOGICAL", "NEGATE", "JavaLanguage", "Site", "file_mutants", "file_sites",
           "production_files", "site_mutants"]
