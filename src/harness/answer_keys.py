"""Answer keys: documents in a project that give away its test implementation.

A project may ship a document written for people who check the suite (the bundled example's
``EXPECTED.md`` names each step definition by ``file:line`` and says what each Then checks).
Removing the step files does not remove that. A document is an answer key when it

- cites a ground-truth test file with a line number (``features/steps/api_steps.py:67``): a
  location only a reader of the step code needs, or
- quotes several lines of ground-truth test code verbatim (step bodies pasted into docs).

Naming a test file without a line (``steps live in features/steps/``) is ordinary
documentation and stays. Views drop answer keys; the leak audit reports any it still finds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

from pydantic import BaseModel

# Prose and data formats people write about a suite in; source files are the views' other rules.
DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".org", ".html", ".htm", ".csv", ".json",
                     ".yaml", ".yml", ".toml", ".ini", ".cfg")
_MAX_BYTES = 2_000_000
# Lines shorter than this (``return``, ``assert ok``) occur in any code and say nothing.
_QUOTED_LINE_MIN_CHARS = 24
_QUOTED_LINES_FOR_A_KEY = 3


class AnswerKey(BaseModel):
    path: str
    reason: str


def is_document(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1].lower()
    return name.endswith(DOCUMENT_SUFFIXES) or "." not in name


def _distinctive_lines(gold_texts: Mapping[str, str]) -> set[str]:
    lines: set[str] = set()
    for text in gold_texts.values():
        for line in text.splitlines():
            stripped = line.strip()
            # decorators and imports repeat the Gherkin and the production API: not test logic
            if len(stripped) >= _QUOTED_LINE_MIN_CHARS and not stripped.startswith(("@", "import ", "from ", "#")):
                lines.add(stripped)
    return lines


class AnswerKeyScanner:
    """Checks documents against one project's ground-truth test files (path → text)."""

    def __init__(self, gold_texts: Mapping[str, str]) -> None:
        self._citation = (re.compile(r"(?<![\w./-])(" + "|".join(re.escape(p) for p in sorted(gold_texts)) +
                                     r"):(\d+)") if gold_texts else None)
        self._lines = _distinctive_lines(gold_texts)

    def check(self, rel: str, text: str) -> AnswerKey | None:
        if self._citation is not None and (match := self._citation.search(text)):
            count = len(self._citation.findall(text))
            return AnswerKey(path=rel, reason=f"cites ground-truth test code by line ({match.group(0)}"
                                              f"{f' and {count - 1} more' if count > 1 else ''})")
        quoted = sum(1 for line in {ln.strip() for ln in text.splitlines()} if line in self._lines)
        if quoted >= _QUOTED_LINES_FOR_A_KEY:
            return AnswerKey(path=rel, reason=f"quotes {quoted} lines of ground-truth test code")
        return None

    def scan(self, root: Path, files: Iterable[str], skip: AbstractSet[str] = frozenset()) -> list[AnswerKey]:
        """The answer keys among ``files`` (paths relative to ``root``) that are documents."""
        keys = []
        for rel in sorted(files):
            path = root / rel
            if rel in skip or not is_document(rel) or path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > _MAX_BYTES:
                continue
            key = self.check(rel, path.read_bytes().decode("utf-8", errors="replace"))
            if key is not None:
                keys.append(key)
        return keys
