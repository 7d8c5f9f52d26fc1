"""Where a godog project's scenarios run: its suites.

Two layouts occur in real projects:

- **flag-driven** (go-algorand-sdk): one test package whose ``TestMain`` binds godog's options to
  the ``godog.`` command-line flags and takes the feature paths as arguments. req2test chooses
  the scenario (``FILE:LINE``), the format and the tags. Named by ``package`` in req2test.toml.
- **testing.T suites** (coddy-agent, godog's documented ``TestingT`` style): plain
  ``func TestX(t *testing.T)`` functions, each running ``godog.TestSuite{...}`` with its own
  ``Options{Paths: [...], Tags: ..., TestingT: t}`` fixed in the code, often behind a build
  tag (``//go:build http``), several test packages in one module. Nothing can be chosen from
  the command line but Go's own ``-test.run``: godog runs each pickle as a subtest named after
  it, so ``-test.run='^TestX$/^Scenario_name$'`` runs exactly one (``subtest_pattern``; Go
  numbers equal names ``#01``, ``#02``, so an outline row is selected by its position among
  the pickles of that name). Found by reading the test files (``discover``).

A scenario belongs to the suite whose paths name its feature and whose tag expression selects
it (the first such suite by package and function name; ``assign`` says which others also do).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import tree_sitter
from gherkin.errors import CompositeParserException, ParserException
from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler, GherkinDocumentWithURI
from gherkin.token_scanner import TokenScanner

from bench.frameworks.godog.syntax import go_parser

SKIPPED_DIRS = {"vendor", "testdata", "node_modules"}


@dataclass(frozen=True)
class GoSuite:
    """One godog suite: the test package whose binary runs it and how a scenario is chosen."""

    package: str  # the test package's directory relative to the module root ("." for the root)
    test: str | None = None  # the Test function (testing.T suites); None: TestMain binds godog's flags
    build_tags: tuple[str, ...] = ()  # ``go test -tags`` its file needs
    paths: tuple[str, ...] = ()  # feature files it runs, relative to the module root (testing.T suites)
    godog_tags: str = ""  # its Options.Tags (godog's expression), "" = every scenario
    initializer: str = ""  # its ScenarioInitializer (a function name)
    file: str = ""  # the file declaring it

    @property
    def key(self) -> str:
        return self.package if self.test is None else f"{self.package}:{self.test}"

    @property
    def flag_driven(self) -> bool:
        return self.test is None

    @property
    def binary_key(self) -> tuple[str, tuple[str, ...]]:
        """Suites of one package built with the same tags share a test binary."""
        return self.package, self.build_tags


@dataclass(frozen=True)
class Pickle:
    """One runnable unit of a feature as godog compiles it (a scenario, or one Examples row)."""

    feature: str
    line: int  # the scenario's line, or the Examples row's
    name: str  # godog's pickle name (an outline's name with the row's values substituted)
    tags: tuple[str, ...]  # with "@"
    steps: tuple[tuple[str, int], ...] = ()  # (text, line): the Background's first, values substituted


@dataclass
class SuitePlan:
    """A testing.T suite's pickles in godog's order (its paths in order, each feature's pickles
    in document order, its tag expression applied), and each one's subtest name."""

    suite: GoSuite
    pickles: list[Pickle] = field(default_factory=list)
    subtests: dict[tuple[str, int], str] = field(default_factory=dict)  # (feature, line) -> unique name

    def selects(self, feature: str, line: int) -> bool:
        return (feature, line) in self.subtests

    def pickle(self, feature: str, line: int) -> Pickle:
        return next(p for p in self.pickles if p.feature == feature and p.line == line)


# --------------------------------------------------------------------------- discovery
def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def _string(node: tree_sitter.Node) -> str | None:
    if node.type == "interpreted_string_literal":
        raw = _text(node)[1:-1]
        return bytes(raw, "utf-8").decode("unicode_escape") if "\\" in raw else raw
    if node.type == "raw_string_literal":
        return _text(node)[1:-1]
    return None


def build_tags_of(data: bytes) -> tuple[str, ...] | None:
    """The tags a file's ``//go:build`` line requires (the identifiers it does not negate);
    None when the constraint says ``ignore`` or cannot be met by adding tags."""
    for raw in data.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("//go:build "):
            expression = line[len("//go:build "):]
            if "ignore" in expression.split():
                return None
            negated = set(re.findall(r"!\s*([A-Za-z0-9_.]+)", expression))
            return tuple(sorted(set(re.findall(r"[A-Za-z0-9_.]+", expression)) - negated))
        if line.startswith("package "):
            break
    return ()


def _keyed(literal: tree_sitter.Node) -> dict[str, tree_sitter.Node]:
    """Field name -> value node of a composite literal's ``literal_value``."""
    body = literal.child_by_field_name("body")
    out: dict[str, tree_sitter.Node] = {}
    for element in body.named_children if body is not None else []:
        if element.type != "keyed_element" or element.named_child_count < 2:
            continue
        key, value = element.named_children[0], element.named_children[-1]
        name = _text(key).strip()
        value = value.named_children[0] if value.type == "literal_element" and value.named_children else value
        out[name] = value
    return out


def _composite(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The composite literal of ``&T{...}`` or ``T{...}``."""
    while node is not None and node.type in ("unary_expression", "parenthesized_expression", "literal_element"):
        node = node.named_children[-1] if node.named_children else None
    return node if node is not None and node.type == "composite_literal" else None


def suites_in_file(root: Path, rel: str) -> list[GoSuite]:
    """The testing.T suites a test file declares."""
    data = (root / rel).read_bytes()
    if b"godog.TestSuite" not in data:
        return []
    tags = build_tags_of(data)
    if tags is None:
        return []
    tree = go_parser().parse(data)
    package = Path(rel).parent.as_posix()
    found: list[GoSuite] = []
    for function in tree.root_node.named_children:
        if function.type != "function_declaration":
            continue
        name = _text(function.child_by_field_name("name"))
        if not name.startswith("Test"):
            continue
        stack = [function]
        while stack:
            node = stack.pop()
            stack.extend(node.named_children)
            if node.type != "composite_literal" or _text(node.child_by_field_name("type")) != "godog.TestSuite":
                continue
            fields = _keyed(node)
            options = _composite(fields.get("Options"))
            if options is None:
                continue
            option_fields = _keyed(options)
            if "TestingT" not in option_fields:
                continue
            paths_node = _composite(option_fields.get("Paths"))
            paths: list[str] = []
            for element in (_keyed_values(paths_node) if paths_node is not None else []):
                value = _string(element)
                if value is not None:
                    paths.append((Path(package) / value).as_posix())
            tag_node = option_fields.get("Tags")
            found.append(GoSuite(
                package=package, test=name, build_tags=tags, paths=tuple(_normal(p) for p in paths),
                godog_tags=(_string(tag_node) or "") if tag_node is not None else "",
                initializer=_text(fields.get("ScenarioInitializer")), file=rel))
    return found


def _keyed_values(literal: tree_sitter.Node) -> list[tree_sitter.Node]:
    body = literal.child_by_field_name("body")
    values = []
    for element in body.named_children if body is not None else []:
        node = element.named_children[0] if element.type == "literal_element" and element.named_children else element
        values.append(node)
    return values


def _normal(path: str) -> str:
    """``internal/tools/../../features/x.feature`` -> ``features/x.feature``."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == ".." and parts:
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def discover(root: Path) -> list[GoSuite]:
    """Every testing.T godog suite of the module at ``root``, by package and function name."""
    found: list[GoSuite] = []
    for path in sorted(root.rglob("*_test.go")):
        rel = path.relative_to(root)
        if any(part in SKIPPED_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        found += suites_in_file(root, rel.as_posix())
    return sorted(found, key=lambda s: (s.package, s.test or ""))


# --------------------------------------------------------------------------- selection
def tags_match(expression: str, tags: Iterable[str]) -> bool:
    """godog's tag expression (``@a,@b`` or, ``&&`` and, ``~@a`` not) on a pickle's tags."""
    have = {t if t.startswith("@") else f"@{t}" for t in tags}
    expression = expression.strip()
    if not expression:
        return True
    for conjunct in expression.split("&&"):
        alternatives = [a.strip() for a in conjunct.split(",") if a.strip()]
        if alternatives and not any((a[1:].strip() not in have) if a.startswith("~") else (a in have)
                                    for a in alternatives):
            return False
    return True


def feature_pickles(root: Path, feature: str) -> list[Pickle]:
    """A feature's pickles in document order, as the Gherkin reference compiler makes them."""
    text = (root / feature).read_text(encoding="utf-8")
    try:
        parsed = Parser().parse(TokenScanner(text))
    except (ParserException, CompositeParserException):
        return []
    document = cast(GherkinDocumentWithURI, parsed)  # the compiler's input: the parsed document, "uri" set here
    document["uri"] = feature
    lines: dict[str, int] = {}
    stack: list[object] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "id" in node and isinstance(node.get("location"), dict):
                lines[str(node["id"])] = int(node["location"]["line"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    pickles = []
    for pickle in Compiler().compile(document):
        ids = pickle.get("astNodeIds") or []
        line = lines.get(str(ids[-1]), 0) if ids else 0  # an outline row's id comes last
        steps = tuple((str(step.get("text", "")), lines.get(str((step.get("astNodeIds") or ["?"])[0]), 0))
                      for step in pickle.get("steps") or [])
        pickles.append(Pickle(feature, line, str(pickle.get("name", "")),
                              tuple(str(t.get("name", "")) for t in pickle.get("tags") or []), steps))
    return pickles


def rewrite(name: str) -> str:
    """Go's ``testing`` rewrite of a subtest name: spaces to ``_``, unprintables quoted."""
    out = []
    for char in name:
        if char.isspace():
            out.append("_")
        elif not char.isprintable():
            out.append(repr(char)[1:-1])
        else:
            out.append(char)
    return "".join(out)


def plan(root: Path, suite: GoSuite) -> SuitePlan:
    """The suite's pickles and their unique subtest names (Go appends ``#01``, ``#02``, ... to a
    name already used under the same parent)."""
    result = SuitePlan(suite)
    used: dict[str, int] = {}
    for feature in suite.paths:
        if not (root / feature).is_file():
            continue
        for pickle in feature_pickles(root, feature):
            if not tags_match(suite.godog_tags, pickle.tags):
                continue
            name = rewrite(pickle.name)
            count = used.get(name, 0)
            used[name] = count + 1
            result.pickles.append(pickle)
            result.subtests[(feature, pickle.line)] = name if count == 0 else f"{name}#{count:02d}"
    return result


def subtest_pattern(test: str, subtest: str) -> str:
    """``-test.run`` selecting exactly ``test``'s subtest ``subtest`` (Go splits the pattern and
    the name at ``/``: one anchored element per part)."""
    parts = [f"^{re.escape(test)}$"] + [f"^{re.escape(part)}$" for part in subtest.split("/")]
    return "/".join(parts)


def assign(root: Path, suites: list[GoSuite]) -> tuple[dict[tuple[str, int], GoSuite], dict[tuple[str, int], list[str]]]:
    """Each runnable unit (feature, line) -> the suite that runs it (the first by package and
    name), and the units more than one suite runs -> the others' keys."""
    chosen: dict[tuple[str, int], GoSuite] = {}
    others: dict[tuple[str, int], list[str]] = {}
    for suite in suites:
        for unit in plan(root, suite).subtests:
            if unit in chosen:
                others.setdefault(unit, []).append(suite.key)
            else:
                chosen[unit] = suite
    return chosen, others


__all__ = ["GoSuite", "Pickle", "SuitePlan", "assign", "build_tags_of", "discover", "feature_pickles", "plan",
           "rewrite", "subtest_pattern", "suites_in_file", "tags_match"]
