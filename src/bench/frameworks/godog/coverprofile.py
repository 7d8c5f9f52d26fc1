"""Go coverage profiles (``-test.coverprofile=FILE`` of a test binary built with ``-cover
-coverpkg=...``) as covered source lines of production files.

A profile is ``mode: set`` then one line per basic block,
``IMPORT/PATH/file.go:L0.C0,L1.C1 STATEMENTS COUNT``; with ``-coverpkg`` every block of every
instrumented package is listed, run or not. The test binary writes it when ``m.Run()``
returns in TestMain, after godog's whole run, so it holds what the process ran from its start
(package ``init``s and the suite's hooks included); a process that dies first writes none.

Lines: a block covers lines L0..L1. A block starts just after the ``{`` of its function or
branch, so its first line is the header line, which the enclosing block also holds; a line is
covered when any block holding it ran (the usual reading, as ``go tool cover -html`` colours it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_BLOCK = re.compile(r"^(?P<file>.+\.go):(?P<l0>\d+)\.(?P<c0>\d+),(?P<l1>\d+)\.(?P<c1>\d+) (?P<n>\d+) (?P<count>\d+)$")


@dataclass(frozen=True)
class CoverBlock:
    file: str  # the import path of the package / file name, as the profile writes it
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    statements: int
    count: int


@dataclass(frozen=True)
class CoverProfile:
    mode: str
    blocks: tuple[CoverBlock, ...]

    def lines(self, module: str, production: Iterable[str] = ()) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
        """(covered, instrumented) lines per file relative to the module root (``module``:
        go.mod's module path), limited to files under the ``production`` directories (all
        when empty); generated code outside the module (none in a module's own profile) is
        dropped."""
        prefixes = tuple(p.strip("/") + "/" for p in production if p.strip("/") not in ("", "."))
        covered: dict[str, set[int]] = {}
        instrumented: dict[str, set[int]] = {}
        for block in self.blocks:
            if not block.file.startswith(module + "/"):
                continue
            rel = block.file[len(module) + 1:]
            if prefixes and not rel.startswith(prefixes):
                continue
            span = range(block.start_line, block.end_line + 1)
            instrumented.setdefault(rel, set()).update(span)
            if block.count > 0:
                covered.setdefault(rel, set()).update(span)
        return covered, instrumented


def parse_profile(text: str) -> CoverProfile:
    """A profile's text; ``ValueError`` for one that is not a Go coverage profile. Blocks listed
    twice (profiles merged by concatenation) are kept: ``lines`` reads their union."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("mode: "):
        raise ValueError("not a Go coverage profile (no 'mode:' line)")
    mode = lines[0].split(":", 1)[1].strip()
    blocks: list[CoverBlock] = []
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("mode: "):  # a concatenation of profiles
            continue
        match = _BLOCK.match(line.strip())
        if match is None:
            raise ValueError(f"line {number} is not a coverage block: {line[:80]!r}")
        blocks.append(CoverBlock(match["file"], int(match["l0"]), int(match["c0"]), int(match["l1"]),
                                 int(match["c1"]), int(match["n"]), int(match["count"])))
    return CoverProfile(mode, tuple(blocks))
