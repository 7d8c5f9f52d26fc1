"""Equivalent variants of JavaScript/TypeScript production: where null runs used to be.

A null run (the original code again) lets a test that compares code with the original tell it
from a mutant at no risk. An equivalent variant is a change at a site where Stryker also
changes something, in the same families of operators, written to disk exactly as a mutant is
(its own tree, the file replaced, ``diversify.apply_mutant`` onto the session's rewritten
production), so it cannot be told from a mutant by how it arrives, only by what it does — and
it does what the original does. A test that "kills" one tells code apart by something other
than behaviour: ``tampering``.

Families (found with tree-sitter; each evaluates every operand that could have an effect as
often and in the same order as the original, except where it says so):

- ``mirror`` (EqualityOperator/relational sites): ``a === b`` → ``b === a`` (``!==``, ``==``,
  ``!=``), ``a < b`` → ``b > a`` (``<=``/``>=``, ``>``), ``a * b`` → ``b * a``, only when both
  operands are identifiers, literals, ``this`` or member chains of those (``this.items.length``):
  reading them has no effect, so the order does not matter. Assumed: no getter in a chain changes
  what the other operand reads, and no object operand's ``valueOf`` has an effect (relational
  operators and ``*`` convert their operands in order);
- ``negate`` (EqualityOperator sites): ``a === b`` → ``!(a !== b)`` (and ``!==``, ``==``,
  ``!=``), any operands: the language defines ``!==`` as the negation of ``===``;
- ``truthy`` (ConditionalExpression sites): the condition ``c`` of ``if``/``while``/``do``/
  ``for``/``?:`` → ``!!(c)``: a condition is read as ``ToBoolean(c)`` anyway;
- ``select`` (LogicalOperator sites): ``a && b`` → ``(a ? b : a)``, ``a || b`` → ``(a ? a : b)``,
  ``a ?? b`` → ``(a != null ? a : b)``, only when ``a`` is an identifier (read twice, without effect);
- ``boolean`` (BooleanLiteral sites): ``true`` → ``!0``, ``false`` → ``!1`` in expressions;
- ``concat`` (StringLiteral sites): ``'abc'`` → ``('ab' + 'c')`` in expressions (not in
  directives, keys, module specifiers or types), without escapes in it.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from bench.frameworks.cucumber_js.diversify import CharColumns, error_count, parse
from bench.model import Mutant

if TYPE_CHECKING:
    import tree_sitter

MIRRORED = {"===": "===", "!==": "!==", "==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=",
            "*": "*"}
NEGATED = {"===": "!==", "!==": "===", "==": "!=", "!=": "=="}
FAMILIES = ("mirror", "negate", "truthy", "select", "boolean", "concat")
OPERATOR_PREFIX = "Equivalent"

# where a literal stands as an expression (not a key, a type, a directive or a module specifier)
_EXPRESSION_PARENTS = {"arguments", "binary_expression", "variable_declarator", "return_statement",
                       "assignment_expression", "augmented_assignment_expression", "pair", "array",
                       "ternary_expression", "parenthesized_expression", "switch_case", "spread_element",
                       "arrow_function", "assignment_pattern", "yield_expression", "await_expression"}
_LITERALS = {"number", "string", "true", "false", "null", "undefined"}


def _pure(node) -> bool:
    """An operand whose reading has no effect: a name, a literal, ``this``, a member chain of those."""
    if node.type in ("identifier", "this", "number", "true", "false", "null", "undefined"):
        return True
    if node.type == "string":
        return True
    if node.type == "member_expression":
        prop = node.child_by_field_name("property")
        obj = node.child_by_field_name("object")
        return prop is not None and prop.type in ("property_identifier", "private_property_identifier") \
            and obj is not None and _pure(obj) and b"?." not in node.text
    if node.type == "parenthesized_expression" and len(node.named_children) == 1:
        return _pure(node.named_children[0])
    return False


def _expression_slot(node) -> bool:
    parent = node.parent
    if parent is None or parent.type not in _EXPRESSION_PARENTS:
        return False
    if parent.type == "pair" and parent.child_by_field_name("key") == node:
        return False
    if parent.type == "variable_declarator" and parent.child_by_field_name("value") != node:
        return False
    if parent.type in ("assignment_expression", "augmented_assignment_expression") \
            and parent.child_by_field_name("right") != node:
        return False
    if parent.type == "arrow_function" and parent.child_by_field_name("body") != node:
        return False
    if parent.type == "switch_case" and parent.child_by_field_name("value") != node:
        return False
    if parent.type == "arguments":
        call = parent.parent
        if call is not None and call.type == "new_expression":
            return True
        function = call.child_by_field_name("function") if call is not None else None
        if function is None or function.type == "import" or function.text in (b"require", b"import"):
            return False
    return True


def _candidates(text: str, tree) -> list[tuple[str, tree_sitter.Node, str]]:
    """(family, node, replacement text) for every site of the file."""
    found: list[tuple[str, tree_sitter.Node, str]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        kind = node.type
        if kind == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            operator = node.child_by_field_name("operator")
            if left is None or right is None or operator is None:
                continue
            op = operator.type
            before = text_between(node, left.end_byte, operator.start_byte)
            after = text_between(node, operator.end_byte, right.start_byte)
            left_text, right_text = _text(left), _text(right)
            if op in MIRRORED and _pure(left) and _pure(right):
                found.append(("mirror", node, f"{right_text}{before}{MIRRORED[op]}{after}{left_text}"))
            if op in NEGATED:
                found.append(("negate", node, f"!({left_text}{before}{NEGATED[op]}{after}{right_text})"))
            if op in ("&&", "||", "??") and left.type == "identifier" and left.text not in (b"undefined",):
                a, b = left_text, right_text
                replacement = {"&&": f"({a} ? {b} : {a})", "||": f"({a} ? {a} : {b})",
                               "??": f"({a} != null ? {a} : {b})"}[op]
                found.append(("select", node, replacement))
        elif kind in ("if_statement", "while_statement", "do_statement"):
            condition = node.child_by_field_name("condition")
            if condition is not None and condition.type == "parenthesized_expression" \
                    and len(condition.named_children) == 1 and condition.named_children[0].type != "sequence_expression":
                inner = condition.named_children[0]
                found.append(("truthy", inner, f"!!({_text(inner)})"))
        elif kind == "ternary_expression":
            condition = node.child_by_field_name("condition")
            if condition is not None:
                found.append(("truthy", condition, f"!!({_text(condition)})"))
        elif kind == "for_statement":
            condition = node.child_by_field_name("condition")
            if condition is not None and condition.type not in ("empty_statement", ";", "expression_statement",
                                                                "sequence_expression"):
                found.append(("truthy", condition, f"!!({_text(condition)})"))
        elif kind in ("true", "false") and _expression_slot(node):
            found.append(("boolean", node, "!0" if kind == "true" else "!1"))
        elif kind == "string" and _expression_slot(node) and not _directive(node):
            raw = _text(node)
            body = raw[1:-1]
            if len(raw) >= 4 and raw[0] == raw[-1] and raw[0] in "'\"" and "\\" not in body \
                    and "\n" not in body:
                cut = max(1, len(body) // 2)
                found.append(("concat", node, f"({raw[0]}{body[:cut]}{raw[0]} + {raw[0]}{body[cut:]}{raw[0]})"))
    return found


def _directive(node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "expression_statement"


def _text(node) -> str:
    return node.text.decode("utf-8")


def text_between(node, start: int, end: int) -> str:
    """The source between two byte offsets of ``node``'s tree (whitespace around an operator)."""
    data = node.text
    return data[start - node.start_byte:end - node.start_byte].decode("utf-8")


def _inside_function(node) -> bool:
    from bench.frameworks.cucumber_js.declarations import FUNCTION_NODES

    current = node.parent
    while current is not None:
        if current.type in FUNCTION_NODES or current.type == "class_static_block":
            return True
        current = current.parent
    return False


def equivalent_variants(file: str, text: str) -> list[Mutant]:
    """Every equivalent variant of one production file (positions of ``text``), in file order.
    Only sites inside functions (what runs when a test calls production, as Stryker's mutants
    the ground truth kills); each checked to parse as cleanly as the original."""
    tree = parse(file, text)
    if error_count(tree):
        return []
    columns = CharColumns(text)
    out: dict[str, Mutant] = {}
    for family, node, replacement in _candidates(text, tree):
        if not _inside_function(node) or replacement == _text(node):
            continue
        # the replacement stands where an expression of at least its precedence stood (by
        # construction); it must parse as an expression by itself
        if error_count(parse(file, f"async function* f() {{ void ({replacement}); }}\n")):
            continue
        line, col = node.start_point[0] + 1, columns.column(node.start_point)
        end_line, end_col = node.end_point[0] + 1, columns.column(node.end_point)
        operator = f"{OPERATOR_PREFIX}:{family}"
        digest = hashlib.sha256(f"{file}\0{line}:{col}-{end_line}:{end_col}\0{operator}\0{replacement}".encode())
        mutant = Mutant(id=digest.hexdigest()[:16], file=file, line=line, col=col, end_line=end_line, end_col=end_col,
                        operator=operator, original=_text(node), replacement=replacement, function="",
                        function_line=line, lines=list(range(line, end_line + 1)), scope=(line, end_line),
                        function_end=end_line)
        out[mutant.id] = mutant
    return sorted(out.values(), key=lambda m: (m.line, m.col, m.operator))


def family(mutant: Mutant) -> str:
    return mutant.operator.split(":", 1)[-1]
