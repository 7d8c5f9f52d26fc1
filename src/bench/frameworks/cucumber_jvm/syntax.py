"""tree-sitter-java: the parser and the methods of a Java file (shared by the hider, the mutant
generator and the test side, so a mutant's ``function`` is exactly a body the hider can hide
and a step definition is exactly a method the test side can remove).

A *method* here is anything with a body a caller enters: a method, a constructor, a record's
compact constructor, at any nesting of classes, interfaces, enums and records (members of
anonymous classes and lambdas are part of the enclosing method's body, not methods of their
own). Qualnames are the dotted type path plus the name, ``Outer.Inner.method``, constructors
``Outer.Inner.<init>`` (the JVM's name); overloads share a qualname and are told apart by
their line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter

TYPE_DECLARATIONS = ("class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                     "annotation_type_declaration")
METHOD_DECLARATIONS = ("method_declaration", "constructor_declaration", "compact_constructor_declaration")


@lru_cache(maxsize=1)
def java_parser() -> tree_sitter.Parser:
    import tree_sitter_java

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_java.language()))


@dataclass(frozen=True)
class JavaMethod:
    """A method or constructor declared in a (possibly nested) named type."""

    node: tree_sitter.Node  # the declaration, annotations and modifiers included
    qualname: str  # ``Type.method``, ``Outer.Inner.<init>``
    owner: str  # the dotted type path, ``Outer.Inner``
    name: str  # ``method`` or ``<init>``
    line: int  # 1-based line where the declaration starts (its first annotation or modifier)
    name_line: int  # 1-based line of the name (what a stack trace's method line is near)
    body: tree_sitter.Node | None  # the ``block`` / ``constructor_body``; None: abstract or native

    @property
    def is_constructor(self) -> bool:
        return self.name == "<init>"

    def annotations(self) -> list[tree_sitter.Node]:
        """The declaration's annotations (``@Given("...")``, ``@Override``), in order."""
        for child in self.node.children:
            if child.type == "modifiers":
                return [a for a in child.named_children if a.type in ("annotation", "marker_annotation")]
        return []


def type_name(node: tree_sitter.Node) -> str:
    name = node.child_by_field_name("name")
    return name.text.decode() if name is not None and name.text is not None else ""


def methods(root: tree_sitter.Node) -> Iterator[JavaMethod]:
    """Every method and constructor of the named types of a compilation unit, outer before
    inner, in source order."""
    for node in root.named_children:
        if node.type in TYPE_DECLARATIONS:
            yield from _type_methods(node, type_name(node))


def _type_methods(declaration: tree_sitter.Node, owner: str) -> Iterator[JavaMethod]:
    body = declaration.child_by_field_name("body")
    if body is None:
        return
    for member in _members(body):
        if member.type in TYPE_DECLARATIONS:
            yield from _type_methods(member, f"{owner}.{type_name(member)}")
        elif member.type in METHOD_DECLARATIONS:
            constructor = member.type != "method_declaration"
            name_node = member.child_by_field_name("name")
            name = "<init>" if constructor else (name_node.text.decode() if name_node and name_node.text else "")
            yield JavaMethod(member, f"{owner}.{name}", owner, name, member.start_point[0] + 1,
                             (name_node or member).start_point[0] + 1, member.child_by_field_name("body"))


def _members(body: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The members of a class/interface/enum/record/annotation body (an enum's members after
    its constants sit in an ``enum_body_declarations``)."""
    for child in body.named_children:
        if child.type == "enum_body_declarations":
            yield from child.named_children
        else:
            yield child


def package_name(root: tree_sitter.Node) -> str:
    """The compilation unit's package (``""`` for the default package)."""
    for node in root.named_children:
        if node.type == "package_declaration":
            for child in node.named_children:
                if child.type in ("scoped_identifier", "identifier"):
                    return child.text.decode() if child.text is not None else ""
    return ""


__all__ = ["JavaMethod", "java_parser", "methods", "package_name", "type_name"]
