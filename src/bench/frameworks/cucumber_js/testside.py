"""The test side of a cucumber-js project at step-definition granularity.

cucumber-js projects often keep every step definition in one file (js-algorand-sdk: 335 in
one 5,854-line ``steps.js``), so a file-level closure would be the whole suite. Here a test
implementation is a set of *step-definition sites*: the ``Given/When/Then/defineStep(pattern,
fn)`` call statements whose first argument is a literal pattern, found with tree-sitter
(never by running the code). Hiding one removes its statement and keeps every other line
where it was, so what remains still loads and line numbers still point at the same code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

REGISTRARS = ("Given", "When", "Then", "defineStep", "defineParameterType")
STEP_KEYWORDS = {"Given": "Context", "When": "Action", "Then": "Outcome"}
STEP_TYPES = {"Context": "given", "Action": "when", "Outcome": "then"}  # Cucumber Messages' step types
SOURCE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


class StepSite(BaseModel):
    """One step-definition call statement in a test-side file."""

    model_config = ConfigDict(frozen=True)

    file: str
    keyword: str
    pattern: str
    line: int  # 1-based line of the call
    end_line: int
    start_byte: int
    end_byte: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def qualname(self) -> str:
        return f"{self.keyword}({self.pattern!r})"


@lru_cache(maxsize=4)
def js_parser(typescript: bool):
    """tree-sitter's parser for TypeScript or JavaScript (one per grammar; the harness's hider uses it too)."""
    import tree_sitter

    if typescript:
        import tree_sitter_typescript

        language = tree_sitter.Language(tree_sitter_typescript.language_typescript())
    else:
        import tree_sitter_javascript

        language = tree_sitter.Language(tree_sitter_javascript.language())
    return tree_sitter.Parser(language)


def _literal(node) -> str | None:
    text = node.text.decode("utf-8", errors="replace")
    if node.type == "string":
        body = text[1:-1]
        return body.replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
    if node.type == "template_string" and not any(c.type == "template_substitution" for c in node.children):
        return text[1:-1]
    if node.type == "regex":
        pattern = node.child_by_field_name("pattern")
        return pattern.text.decode("utf-8", errors="replace") if pattern is not None else None
    return None


def scan_source(file: str, source: bytes) -> list[StepSite]:
    """Every literal-pattern step definition in one file, in source order."""
    parser = js_parser(file.endswith((".ts", ".cts", ".mts")))
    tree = parser.parse(source)
    sites: list[StepSite] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            name = function.text.decode() if function is not None and function.type == "identifier" else ""
            if name in REGISTRARS[:4] and arguments is not None and arguments.named_children:
                pattern = _literal(arguments.named_children[0])
                if pattern is not None:
                    statement = node.parent if node.parent is not None and node.parent.type == "expression_statement" \
                        else node
                    sites.append(StepSite(file=file, keyword=name, pattern=pattern,
                                          line=statement.start_point[0] + 1, end_line=statement.end_point[0] + 1,
                                          start_byte=statement.start_byte, end_byte=statement.end_byte))
                    continue
        stack.extend(reversed(node.children))
    return sorted(sites, key=lambda s: s.start_byte)


def remove_sites(source: bytes, sites: Iterable[StepSite], keep_lines: bool = True) -> bytes:
    """``source`` without the given statements. ``keep_lines``: each becomes as many empty
    lines as it had (what runs keeps its line numbers); else it goes with the blank lines
    after it (a view an agent reads)."""
    out = source
    for site in sorted(sites, key=lambda s: s.start_byte, reverse=True):
        span = out[site.start_byte:site.end_byte]
        if keep_lines:
            out = out[:site.start_byte] + b"\n" * span.count(b"\n") + out[site.end_byte:]
        else:
            end = site.end_byte
            while end < len(out) and out[end:end + 1] in (b"\n", b" ", b"\t", b"\r", b";"):
                end += 1
            out = out[:site.start_byte] + out[end:]
    return out


class TestSideJs:
    """The step files of a cucumber-js project and the step definitions in them."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, root: Path, files: list[str]) -> None:
        self.root = root
        self.files = files
        self.sites: list[StepSite] = []
        for rel in files:
            self.sites += scan_source(rel, (root / rel).read_bytes())
        self._by_pattern: dict[str, list[StepSite]] = {}
        for site in self.sites:
            self._by_pattern.setdefault(site.pattern, []).append(site)

    @property
    def infrastructure(self) -> list[str]:
        """Step files without a step definition of their own (hooks, registration, world)."""
        with_sites = {s.file for s in self.sites}
        return [f for f in self.files if f not in with_sites]

    def site_for(self, pattern: str, step_type: str, uri: str = "", line: int = 0) -> StepSite | None:
        """The site a matched step definition came from: where ``Given(...)`` was called when
        that is a literal-pattern call, else the one literal site with the same pattern (of
        the step's kind when several share it)."""
        for site in self.sites:
            if site.file == uri and site.line <= line <= site.end_line:
                return site
        candidates = self._by_pattern.get(pattern, [])
        if len(candidates) > 1:
            typed = [s for s in candidates if STEP_KEYWORDS.get(s.keyword) == step_type]
            candidates = typed or candidates
        return candidates[0] if candidates else None

    def files_without(self, removed: Iterable[StepSite], keep_lines: bool = True) -> dict[str, bytes]:
        """The contents of every step file that loses a site, with those sites removed."""
        by_file: dict[str, list[StepSite]] = {}
        for site in removed:
            by_file.setdefault(site.file, []).append(site)
        return {f: remove_sites((self.root / f).read_bytes(), sites, keep_lines) for f, sites in by_file.items()}

    def files_keeping(self, kept: Iterable[StepSite]) -> dict[str, bytes]:
        keep = set(kept)
        return self.files_without(s for s in self.sites if s not in keep)

    def sha256(self, file: str) -> str:
        return hashlib.sha256((self.root / file).read_bytes()).hexdigest()


def strip_bodies(file: str, source: bytes, sites: Iterable[StepSite]) -> bytes:
    """``source`` with the step function of each site emptied (``{}`` keeping its lines):
    the step still matches and passes, and checks nothing (the ``empty`` calibration)."""
    wanted = {(s.start_byte, s.end_byte) for s in sites}
    tree = js_parser(file.endswith((".ts", ".cts", ".mts"))).parse(source)
    spans: list[tuple[int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        statement = node.parent if node.parent is not None and node.parent.type == "expression_statement" else node
        if node.type == "call_expression" and (statement.start_byte, statement.end_byte) in wanted:
            arguments = node.child_by_field_name("arguments")
            functions = [a for a in (arguments.named_children if arguments else [])
                         if a.type in ("function_expression", "function", "arrow_function")]
            body = functions[-1].child_by_field_name("body") if functions else None
            if body is not None and body.type == "statement_block":
                spans.append((body.start_byte + 1, body.end_byte - 1))
            continue
        stack.extend(node.children)
    out = source
    for start, end in sorted(spans, reverse=True):
        out = out[:start] + b"\n" * out[start:end].count(b"\n") + out[end:]
    return out
