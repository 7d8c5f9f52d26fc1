"""Requirement enrichment: clarify what the test must set up and check, from the view only.

Described in docs/experiments.md#strategies.

Two halves. ``gather_context`` looks at the materialized repository view — never at the
dataset's gold — and surfaces what a developer of the project would reach for: the data
files and fixtures the requirement is about, the behave hooks, the test-side helpers the
view keeps, the docstrings of the target interfaces and the sibling scenarios of the same
feature file. ``enrich`` hands that to the model once and gets back a clarified requirement
in domain language (what to set up, what to check, which project files to use; no code).

The ranking is lexical and cheap on purpose (a view walk plus reading small text files):
a file the feature names ranks first; otherwise the words of the scenario are matched
against file names (inverse-document-frequency weighted over the candidate pool, with
abbreviations such as ``tbl`` for "table" and ``sty`` for "style" recognised) and against
the contents of small text files (quoted values and example cells found verbatim).
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from bench.frameworks.protocol import PromptTerms
from bench.frameworks.registry import get_framework
from bench.gherkin_reader import read_feature_file
from bench.model import Instance, Requirement
from bench.tree_rules import NOT_PROJECT_CONTENT
from harness.prompts import render

FileKind = Literal["data", "fixture", "hook", "helper"]

# Directories never looked into (caches, VCS, environments) — as the view builder skips them.
_SKIPPED_DIRS = NOT_PROJECT_CONTENT
# Outside the features directory only these directories hold test data by convention.
_DATA_DIR_NAMES = {"test_files", "testfiles", "test-files", "fixtures", "fixture", "testdata", "test_data",
                   "test-data", "data", "resources", "samples", "sample_data", "assets", "files"}
_FIXTURE_DIR_NAMES = {"fixtures", "fixture"}
# Written by a run rather than shipped with the suite: stale output is a poor thing to build a test on.
_SCRATCH_DIR = re.compile(r"^_?(scratch|tmp|temp|out|output|test_out)$", re.IGNORECASE)
_IMAGE_EXTENSIONS = {"png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "wmf", "emf", "svg", "webp"}
_STOPWORDS = {
    "a", "an", "the", "of", "to", "in", "on", "for", "with", "by", "is", "are", "be", "been", "and", "or", "i",
    "it", "its", "as", "at", "this", "that", "these", "those", "from", "into", "has", "have", "my", "me", "we",
    "our", "you", "your", "can", "should", "will", "then", "given", "when", "but", "so", "there", "their", "them",
    "was", "were", "do", "does", "each", "all", "any", "some", "what", "which", "who", "how", "if", "else",
    "scenario", "feature", "outline", "example", "examples", "background", "want", "need", "order", "way",
    "using", "use", "developer", "user", "am", "being",
}

MAX_CANDIDATES = 5000          # a view walk stops surfacing beyond this many files
MAX_TEXT_BYTES = 64 * 1024     # contents are read (and excerpted) only for small text files
EXCERPT_LINES = 12
EXCERPT_CHARS = 700
MAX_SIBLINGS = 6
SIBLING_CHARS = 1200
DOCSTRING_CHARS = 1500

# Score parts; the scale only matters relative to itself.
NAMED_IN_REQUIREMENT = 50.0
STEM_IN_VALUES = 25.0
NAMED_IN_SIBLING = 8.0
OUTSIDE_FEATURES_PRIOR = 0.5
SCRATCH_PRIOR = 0.3
ABBREVIATION_MATCH = 0.5
PREFIX_MATCH = 0.8
REFERRED_SHARE = 0.6
SUITE_WORD_FLOOR = 0.2
FEATURE_NAME_SIMILARITY = 6.0


class SurfacedFile(BaseModel):
    path: str = Field(description="relative to the project root")
    kind: FileKind
    score: float
    why: str
    size: int = 0
    excerpt: str | None = Field(None, description="head of a small text file (None for binary or large files)")


class EnrichmentContext(BaseModel):
    surfaced: list[SurfacedFile] = Field(description="ranked, best first (hooks included, always)")
    docstrings: dict[str, str] = Field(description="target interface key -> docstring from the view's source")
    sibling_scenarios: list[str] = Field(description="Gherkin text of other scenarios of the same feature file")


class EnrichedRequirement(BaseModel):
    text: str
    context: EnrichmentContext


# --------------------------------------------------------------------------- words
def _normalize(token: str) -> str:
    token = token.lower()
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def words(text: str) -> list[str]:
    """Normalized content words: camelCase and snake/kebab split, plural folded, stopwords dropped."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    out = []
    for raw in re.split(r"[^A-Za-z0-9]+", text):
        if len(raw) < 2 or raw.lower() in _STOPWORDS:
            continue
        out.append(_normalize(raw))
    return out


def _is_prefix(a: str, b: str) -> bool:
    """``config`` and "configuration", ``param`` and "parameter": one word starts the other."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and short != long_ and long_.startswith(short)


def _is_abbreviation(short: str, word: str) -> bool:
    """``tbl`` of "table", ``sty`` of "style", ``hdr`` of "header": same first letter, letters in order."""
    if not (2 <= len(short) <= 4 and len(word) >= 4 and len(word) >= len(short) + 2):
        return False
    if not short.isalpha() or short[0] != word[0]:
        return False
    position = 0
    for char in short:
        position = word.find(char, position)
        if position < 0:
            return False
        position += 1
    return True


# --------------------------------------------------------------------------- requirement text
class _Query:
    """What of the requirement is matched against files: weighted words and literal values."""

    def __init__(self, requirement: Requirement, siblings: list[str], suite_df: Counter[str] | None = None,
                 suite_size: int = 0) -> None:
        self.weights: dict[str, float] = {}
        self.suite_df = suite_df or Counter()
        self.suite_size = suite_size
        own: list[str] = [requirement.scenario_name, requirement.scenario_description]
        for step in requirement.steps:
            own.append(step.text)
            if step.docstring:
                own.append(step.docstring)
            for row in step.table or []:
                own.extend(row)
        self._add(own, 3.0)
        values = [cell for table in requirement.examples for row in [table.header, *table.rows] for cell in row]
        self._add(values + [t.name for t in requirement.examples], 2.5)
        background: list[str] = []
        for step in requirement.background_steps:
            background.append(step.text)
            background.extend(cell for row in step.table or [] for cell in row)
            if step.docstring:
                background.append(step.docstring)
        self._add(background, 2.0)
        self._add([PurePosixPath(requirement.feature_file).stem], 2.0)
        self._add([requirement.feature_name] + requirement.feature_tags + requirement.scenario_tags, 1.5)
        self._add([requirement.feature_description], 0.5)
        self._add(siblings, 0.3)
        # the requirement's own text, where a file named verbatim counts most
        self.text = "\n".join([requirement.gherkin, *values, *own, *background]).lower()
        self.literals = _literals(requirement, values)
        self.feature_tokens = list(dict.fromkeys(words(PurePosixPath(requirement.feature_file).stem)))

    def _add(self, texts: list[str], weight: float) -> None:
        for text in texts:
            for word in words(text or ""):
                # a word most feature files of the suite use ("document", "set") says little about this one
                if self.suite_size:
                    discounted = weight * max(SUITE_WORD_FLOOR, 1.0 - self.suite_df[word] / self.suite_size)
                else:
                    discounted = weight
                if discounted > self.weights.get(word, 0.0):
                    self.weights[word] = discounted

    def match(self, token: str, abbreviations: bool = True) -> tuple[float, str | None]:
        """Weight of a file-name token in the requirement (exact word, or as an abbreviation of one)."""
        if token in self.weights:
            return self.weights[token], token
        best, via = 0.0, None
        if not abbreviations:
            return best, via
        for word, weight in self.weights.items():
            if _is_prefix(token, word) and weight * PREFIX_MATCH > best:
                best, via = weight * PREFIX_MATCH, word
            elif _is_abbreviation(token, word) and weight * ABBREVIATION_MATCH > best:
                best, via = weight * ABBREVIATION_MATCH, word
        return best, via


def _name_similarity(a: list[str], b: list[str]) -> float:
    """Jaccard overlap of two names' words, an abbreviation counting as its word."""
    if not a or not b:
        return 0.0
    def same(x: str, y: str) -> bool:
        return x == y or _is_prefix(x, y) or _is_abbreviation(x, y) or _is_abbreviation(y, x)
    matched = sum(1 for x in a if any(same(x, y) for y in b))
    return matched / (len(a) + len(b) - matched)


def _literals(requirement: Requirement, values: list[str]) -> set[str]:
    """Quoted strings, table cells and example values: looked up verbatim in file contents."""
    found: set[str] = set()
    texts = [s.text for s in requirement.effective_steps]
    for text in texts:
        found.update(m.group(2) for m in re.finditer(r"([\"'])(.+?)\1", text))
    cells = list(values)
    for step in requirement.effective_steps:
        cells.extend(cell for row in step.table or [] for cell in row)
    found.update(cells)
    return {v.strip().lower() for v in found if len(v.strip()) >= 3 and not v.strip().startswith("<")
            and not re.fullmatch(r"[\d.,\s-]{0,3}", v.strip()) and v.strip().lower() not in _STOPWORDS}


# --------------------------------------------------------------------------- candidates
class _Candidate:
    def __init__(self, root: Path, rel: str, kind: FileKind, in_features: bool) -> None:
        self.rel = rel
        self.kind = kind
        self.in_features = in_features
        path = PurePosixPath(rel)
        self.name = path.name.lower()
        self.stem = path.stem.lower()
        extension = path.suffix.lower().lstrip(".")
        self.tokens = list(dict.fromkeys(words(path.stem)))
        self.extra_tokens = [extension] + (["image", "picture"] if extension in _IMAGE_EXTENSIONS else [])
        self.dir_tokens = list(dict.fromkeys(t for part in path.parts[:-1] for t in words(part)))
        self.scratch = any(_SCRATCH_DIR.match(part) for part in path.parts[:-1])
        full = root / rel
        try:
            self.size = full.stat().st_size
        except OSError:
            self.size = 0
        self.text: str | None = None
        if self.size <= MAX_TEXT_BYTES:
            try:
                data = full.read_bytes()
            except OSError:
                data = b"\0"
            if b"\0" not in data[:2048]:
                self.text = data.decode("utf-8", errors="replace")
        self.score = 0.0
        self.reasons: list[str] = []

    def excerpt(self) -> str | None:
        if self.text is None:
            return None
        lines = self.text.splitlines()[:EXCERPT_LINES]
        head = "\n".join(lines)[:EXCERPT_CHARS]
        return head + ("\n…" if len(head) < len(self.text.rstrip()) else "")


def _walk(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith(".")
                             and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                continue
            yield (Path(dirpath) / name).relative_to(root).as_posix()


def _candidates(root: Path, features_dir: str) -> list[_Candidate]:
    features = features_dir.strip("/")
    found: list[_Candidate] = []
    for rel in _walk(root):
        if len(found) >= MAX_CANDIDATES:
            break
        parts = PurePosixPath(rel).parts
        in_features = rel.startswith(features + "/")
        if rel.endswith(".feature"):
            continue
        if rel.endswith(".py"):
            if not in_features:
                continue  # test-side Python outside the BDD suite is another suite's business
            kind: FileKind = "hook" if parts[-1] == "environment.py" else "helper"
        elif in_features or any(p.lower() in _DATA_DIR_NAMES for p in parts[:-1]):
            kind = "fixture" if any(p.lower() in _FIXTURE_DIR_NAMES for p in parts[:-1]) else "data"
        else:
            continue
        if (root / rel).is_symlink():
            continue
        found.append(_Candidate(root, rel, kind, in_features))
    return found


def _mentions(text: str, name: str) -> bool:
    """``name`` occurs in ``text`` as a whole file name (not inside a longer one)."""
    if name not in text:  # the cheap test first: most files are named nowhere
        return False
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def _score(candidates: list[_Candidate], query: _Query, feature_texts: dict[str, str]) -> None:
    pool = len(candidates) or 1
    df = Counter(t for c in candidates for t in set(c.tokens))
    text_candidates = [c for c in candidates if c.text is not None]
    # text_candidates: c.text is not None
    literal_df = Counter(lit for c in text_candidates for lit in query.literals if lit in cast(str, c.text).lower())
    own_feature = feature_texts.get("__own__", "")
    for c in candidates:
        if c.kind == "hook":
            c.reasons.append("behave hook module (runs around every scenario)")
        # named verbatim: by file name or path, in the requirement, its examples, or a sibling scenario
        if _mentions(query.text, c.name) or c.rel.lower() in query.text:
            c.score += NAMED_IN_REQUIREMENT
            c.reasons.append("named in the requirement")
        elif len(c.stem) >= 3 and c.stem in query.literals:
            c.score += STEM_IN_VALUES
            c.reasons.append("its name is a value of the requirement")
        elif c.kind != "hook" and _mentions(own_feature, c.name):
            c.score += NAMED_IN_SIBLING
            c.reasons.append("named by another scenario of the feature file")
        # file-name words matched against the requirement's words
        matched: list[str] = []
        name_score = 0.0
        for token in c.tokens:
            weight, via = query.match(token)
            if weight:
                name_score += math.log(1 + pool / df[token]) * weight
                matched.append(token if via == token else f"{token}~{via}")
        for token in c.extra_tokens:
            weight, _ = query.match(token, abbreviations=False)
            if weight:
                name_score += 0.5 * weight
                matched.append(token)
        for token in c.dir_tokens:
            weight, _ = query.match(token)
            if weight:
                name_score += 0.2 * weight
        if c.tokens:
            name_score /= math.sqrt(len(c.tokens))
        if matched:
            c.score += name_score
            c.reasons.append("name matches " + ", ".join(matched[:6]))
        # data named after the feature file (tbl-props.feature -> tbl-props.docx) is a common convention
        similarity = _name_similarity(c.tokens, query.feature_tokens)
        if similarity >= 0.5:
            c.score += FEATURE_NAME_SIMILARITY * similarity
            c.reasons.append("named like the feature file")
        # contents: literal values of the requirement found verbatim in a small text file
        if c.text is not None and c.kind != "hook":
            lowered = c.text.lower()
            hits = [lit for lit in query.literals if lit in lowered]
            if hits:
                c.score += min(8.0, sum(math.log(1 + len(text_candidates) / literal_df[h]) for h in hits))
                c.reasons.append("contains " + ", ".join(sorted(hits)[:4]))
        # popular across the suite: named by other feature files (a weak prior)
        uses = sum(1 for key, text in feature_texts.items() if key != "__own__" and _mentions(text, c.name))
        if uses:
            c.score += 0.2 * math.log(1 + uses)
        if not c.in_features:
            c.score *= OUTSIDE_FEATURES_PRIOR
        if c.scratch:
            c.score *= SCRATCH_PRIOR
            c.reasons.append("in a scratch/output directory")
    # a relevant text file that names another candidate (a config naming its catalog) lends it weight
    by_name: dict[str, list[_Candidate]] = {}
    for c in candidates:
        by_name.setdefault(c.name, []).append(c)
    lent: dict[str, float] = {}
    for c in text_candidates:
        if c.score <= 0 or c.kind == "hook":
            continue
        for name, targets in by_name.items():
            if name != c.name and _mentions(cast(str, c.text).lower(), name):  # a text candidate's text
                for target in targets:
                    share = REFERRED_SHARE * c.score
                    if share > lent.get(target.rel, 0.0):
                        lent[target.rel] = share
                        target.reasons.append(f"named by {c.name}")
    for c in candidates:
        c.score += lent.get(c.rel, 0.0)


def rank_files(instance: Instance, view_root: Path, features_dir: str,
               siblings: list[str] | None = None) -> list[SurfacedFile]:
    """Every candidate file of the view, best first (hooks included; no cut-off)."""
    view_root = Path(view_root)
    requirement = instance.requirement
    if siblings is None:
        siblings = sibling_scenarios(requirement, view_root)
    feature_texts: dict[str, str] = {}
    suite_df: Counter[str] = Counter()
    for feature in sorted((view_root / features_dir.strip("/")).rglob("*.feature")):
        rel = feature.relative_to(view_root).as_posix()
        try:
            text = feature.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        suite_df.update(set(words(text)))
        feature_texts["__own__" if rel == requirement.feature_file else rel] = text.lower()
    query = _Query(requirement, siblings, suite_df, len(feature_texts))
    candidates = _candidates(view_root, features_dir)
    _score(candidates, query, feature_texts)
    ranked = sorted(candidates, key=lambda c: (-c.score, c.rel))
    return [SurfacedFile(path=c.rel, kind=c.kind, score=round(c.score, 4),
                         why="; ".join(dict.fromkeys(c.reasons)) or "no match", size=c.size, excerpt=c.excerpt())
            for c in ranked]


# --------------------------------------------------------------------------- docstrings, siblings
def target_docstrings(instance: Instance, view_root: Path) -> dict[str, str]:
    """Docstring of every target declaration, read with ast from the view (bodies may be hidden)."""
    trees: dict[str, ast.Module | None] = {}
    docs: dict[str, str] = {}
    for group in instance.target_interfaces:
        for declaration in group.declarations:
            if declaration.file not in trees:
                try:
                    trees[declaration.file] = ast.parse((Path(view_root) / declaration.file).read_text(encoding="utf-8"))
                except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                    trees[declaration.file] = None
            tree = trees[declaration.file]
            node = _find_definition(tree, declaration.qualname, declaration.line) if tree else None
            doc = ast.get_docstring(node) if node is not None else None
            if doc:
                docs[declaration.key] = doc if len(doc) <= DOCSTRING_CHARS else doc[:DOCSTRING_CHARS] + " …"
    return docs


def _find_definition(tree: ast.Module, qualname: str,
                     line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    name = qualname.rsplit(".", 1)[-1]
    by_line = [n for n in ast.walk(tree) if isinstance(n, functions) and n.name == name and n.lineno == line]
    if by_line:
        return by_line[0]
    # the recorded line may be stale: follow the qualname, preferring the definition with a docstring
    scope: list[ast.stmt] = tree.body
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for index, part in enumerate(parts):
        matches = [n for n in scope if isinstance(n, (*functions, ast.ClassDef)) and n.name == part]
        if not matches:
            return None
        if index == len(parts) - 1:
            documented = [n for n in matches if ast.get_docstring(n)]
            return (documented or matches)[0]
        node = matches[0]
        scope = node.body
    return node


def sibling_scenarios(requirement: Requirement, view_root: Path) -> list[str]:
    """The other scenarios of the feature file, as written; those naming files first, then the nearest."""
    path = Path(view_root) / requirement.feature_file
    if not path.is_file():
        return []
    parsed = read_feature_file(Path(view_root), path)
    if parsed.problem:
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    starts = sorted({r.scenario_line for r in parsed.requirements})
    blocks: list[tuple[int, int, str]] = []
    for index, start in enumerate(starts):
        if start == requirement.scenario_line:
            continue
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
        block = lines[start - 1:end]
        while block and (not block[-1].strip() or block[-1].strip().startswith(("@", "#"))):
            block.pop()  # the next scenario's tags and comments belong to it
        text = _dedent("\n".join(block))
        if len(text) > SIBLING_CHARS:
            text = text[:SIBLING_CHARS].rstrip() + "\n…"
        names_file = re.search(r"[\w-]+\.[A-Za-z][A-Za-z0-9]{1,4}\b", text) is not None
        blocks.append((0 if names_file else 1, abs(start - requirement.scenario_line), text))
    return [text for _, _, text in sorted(blocks)[:MAX_SIBLINGS]]


def _dedent(text: str) -> str:
    lines = text.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


# --------------------------------------------------------------------------- public interface
def gather_context(instance: Instance, view_root: Path, features_dir: str, limit: int = 10) -> EnrichmentContext:
    """What the view offers for this requirement: ranked files, target docstrings, sibling scenarios.

    ``limit`` caps the data/fixture/helper files surfaced (files with no match are never
    surfaced); hooks are always surfaced, wherever they rank.
    """
    view_root = Path(view_root)
    siblings = sibling_scenarios(instance.requirement, view_root)
    ranked = rank_files(instance, view_root, features_dir, siblings)
    surfaced: list[SurfacedFile] = []
    kept = 0
    for item in ranked:
        if item.kind == "hook":
            surfaced.append(item)
        elif item.score > 0 and kept < limit:
            surfaced.append(item)
            kept += 1
    return EnrichmentContext(surfaced=surfaced, docstrings=target_docstrings(instance, view_root),
                             sibling_scenarios=siblings)


def enrich_messages(instance: Instance, context: EnrichmentContext,
                    terms: PromptTerms | None = None) -> list[dict[str, Any]]:
    prompt = render("enrich.md.j2", requirement=instance.requirement, interfaces=instance.target_interfaces,
                    surfaced=context.surfaced, docstrings=context.docstrings, siblings=context.sibling_scenarios,
                    terms=terms or get_framework().prompt_terms())
    return [{"role": "user", "content": prompt}]


def enrich(instance: Instance, context: EnrichmentContext, model: Any,
           terms: PromptTerms | None = None) -> EnrichedRequirement:
    """One model call: the clarified requirement (LimitReached/ProviderInterrupted propagate to the runner)."""
    reply = model.complete(enrich_messages(instance, context, terms), None)
    return EnrichedRequirement(text=_unfence(reply.content or ""), context=context)


def _unfence(text: str) -> str:
    """Some models wrap the whole answer in a code fence although asked for prose."""
    text = text.strip()
    match = re.fullmatch(r"```[A-Za-z]*\n(.*)\n```", text, flags=re.DOTALL)
    return (match.group(1) if match else text).strip()
