"""tree-sitter-go: the parser and the functions of a Go file (shared by the hider and the
mutant generator, so a mutant's ``function`` is exactly a body the hider can hide)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import tree_sitter


@lru_cache(maxsize=1)
def go_parser() -> tree_sitter.Parser:
    import tree_sitter_go

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_go.language()))


def node_bytes(node: tree_sitter.Node) -> bytes:
    """``node.text``, typed ``bytes | None`` by tree-sitter: None only for a tree parsed from a read
    callback, and every Go tree here is parsed from the file's bytes (``go_parser().parse(data)``)."""
    return cast(bytes, node.text)  # see the docstring: never None for a tree parsed from bytes


@dataclass(frozen=True)
class GoFunction:
    """A top-level function or method declaration."""

    node: tree_sitter.Node
    qualname: str  # ``Func`` or ``Type.Method`` (pointer and type arguments of the receiver dropped)
    line: int  # 1-based line of the ``func`` keyword (a doc comment is not part of it)
    body: tree_sitter.Node | None  # None: declared without a body (assembly stub, linkname)


def receiver_type(receiver: tree_sitter.Node) -> str:
    """``T`` of a receiver ``(t *T)``, ``(T)``, ``(t *T[K, V])``."""
    for param in receiver.named_children:
        node = param.child_by_field_name("type")
        while node is not None and node.type in ("pointer_type", "parenthesized_type", "generic_type"):
            node = node.child_by_field_name("type") if node.type == "generic_type" else node.named_children[0]
        if node is not None:
            return node_bytes(node).decode()
    return ""


def functions(root: tree_sitter.Node) -> Iterator[GoFunction]:
    for node in root.named_children:
        if node.type not in ("function_declaration", "method_declaration"):
            continue
        name = node.child_by_field_name("name")
        if name is None:
            continue
        qualname = node_bytes(name).decode()
        receiver = node.child_by_field_name("receiver")
        if node.type == "method_declaration" and receiver is not None:
            qualname = f"{receiver_type(receiver)}.{qualname}"
        yield GoFunction(node, qualname, node.start_point[0] + 1, node.child_by_field_name("body"))
