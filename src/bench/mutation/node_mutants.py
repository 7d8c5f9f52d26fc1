"""Mutants of one syntax-tree node (tree-sitter's Go and Java grammars): the same id, span and
scope rule for every language whose mutants are made from a parse tree, so a mutant of the same
text at the same place has the same id wherever it was generated."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import tree_sitter

from bench.model import Mutant


def char_col(data: bytes, byte: int) -> int:
    """The character column (0-based) of byte offset ``byte`` of UTF-8 ``data`` within its line."""
    line_start = data.rfind(b"\n", 0, byte) + 1
    return len(data[line_start:byte].decode("utf-8", errors="replace"))


def node_mutants(rel: str, data: bytes, node: tree_sitter.Node, replacements: Iterable[tuple[str, str]],
                 function: str, function_line: int, function_end: int) -> list[Mutant]:
    """One ``Mutant`` per (operator, replacement) of ``node`` in file ``rel``, inside the function
    or method ``function`` (qualified name) spanning ``function_line``..``function_end``. The id
    is a digest of the file, the span, the operator and the replacement."""
    line, end_line = node.start_point[0] + 1, node.end_point[0] + 1
    col, end_col = char_col(data, node.start_byte), char_col(data, node.end_byte)
    original = data[node.start_byte:node.end_byte].decode("utf-8")
    out = []
    for operator, replacement in replacements:
        digest = hashlib.sha256(f"{rel}\0{line}:{col}-{end_line}:{end_col}\0{operator}\0{replacement}".encode())
        out.append(Mutant(id=digest.hexdigest()[:16], file=rel, line=line, col=col, end_line=end_line,
                          end_col=end_col, operator=operator, original=original, replacement=replacement,
                          function=function, function_line=function_line, lines=list(range(line, end_line + 1)),
                          scope=(function_line, function_end), function_end=function_end))
    return out


__all__ = ["char_col", "node_mutants"]
