"""What a step definition's code calls, read from its syntax tree (Go and Java, tree-sitter): the
part every such reader shares. A framework's reader parses a test file once (``_parse``) and
says which production declarations one node may call (``_callee``); this walks the code of a
step definition or helper (a ``HandlerSpan``) node by node and collects them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import tree_sitter


@dataclass(frozen=True)
class HandlerSpan:
    """A step definition or a test-side helper it reaches (a function, method, constructor or
    lambda/``func`` literal), from its first line (its first annotation's, or its name's) to the
    line of its closing ``}``."""

    file: str  # relative to the project (module) root
    start_line: int
    end_line: int


class ParsedFile(Protocol):
    @property
    def tree(self) -> tree_sitter.Tree: ...

    @property
    def functions(self) -> list[tree_sitter.Node]: ...  # function-like nodes, outermost first


P = TypeVar("P", bound=ParsedFile)
D = TypeVar("D")


class SyntaxCallReader(ABC, Generic[P, D]):
    """The declarations (``D``) a span's code calls directly, candidates by name (the caller
    keeps those that ran), one parse per file. Test-side helpers are not followed: pass their
    spans too (the test side's closure of a step definition)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, P] = {}

    def calls(self, span: HandlerSpan) -> set[D]:
        parsed = self._file(span.file)
        found: set[D] = set()
        for node in self._roots(parsed, span):
            stack = [node]
            while stack:
                current = stack.pop()
                found.update(self._callee(parsed, current))
                stack.extend(current.named_children)
        return found

    def _roots(self, parsed: P, span: HandlerSpan) -> list[tree_sitter.Node]:
        """The body of the function whose lines are the span's (starting at the node's first line
        or its name's); else every node inside the span."""
        for node in parsed.functions:
            name = node.child_by_field_name("name")
            starts = {node.start_point[0] + 1} | ({name.start_point[0] + 1} if name is not None else set())
            if span.start_line in starts and node.end_point[0] + 1 == span.end_line:
                body = node.child_by_field_name("body")
                return [body] if body is not None else []
        inside: list[tree_sitter.Node] = []
        stack = [parsed.tree.root_node]
        while stack:
            node = stack.pop()
            if node.end_point[0] + 1 < span.start_line or node.start_point[0] + 1 > span.end_line:
                continue
            if node.start_point[0] + 1 >= span.start_line and node.end_point[0] + 1 <= span.end_line:
                inside.append(node)
            else:
                stack.extend(node.named_children)
        return inside

    def _file(self, file: str) -> P:
        if file not in self._files:
            self._files[file] = self._parse(file)
        return self._files[file]

    @abstractmethod
    def _parse(self, file: str) -> P:
        """``file`` (relative to the root) parsed, with what ``_callee`` needs to resolve names."""

    @abstractmethod
    def _callee(self, parsed: P, node: tree_sitter.Node) -> list[D]:
        """The declarations ``node`` may call (none unless it is a call)."""


__all__ = ["HandlerSpan", "ParsedFile", "SyntaxCallReader"]
