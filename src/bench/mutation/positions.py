"""Where a behaviour-preserving rewrite moved the text of a production file.

A diversified production file (``bench.mutation.diversify`` for Python, the cucumber-js
framework's own rewriter for JavaScript/TypeScript) never moves a line: it only inserts text
*inside* lines (a no-op statement before the first statement of a line) and appends lines at
the end of the file. So every position of the shipped file maps to the rewritten file by
shifting its column by the length of what was inserted at or before it on the same line, and
a mutant recorded against the shipped file (its span, its replacement, its ``original``) is
applied to the rewritten file at the shifted span. Line-level facts (coverage lines, a
mutant's ``lines``/``scope``/``function_line``, traceback line numbers) are unchanged.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bench.model import Mutant


class PositionMap(BaseModel):
    """Insertions made in one file, in the shipped file's coordinates."""

    model_config = ConfigDict(frozen=True)

    inserts: dict[int, list[tuple[int, int]]] = Field(
        default_factory=dict, description="line (1-based) -> [(column where text was inserted, its length)]")

    def column(self, line: int, col: int) -> int:
        """The column in the rewritten file of (``line``, ``col``) of the shipped file: text
        inserted at a column c moves everything from c on (an insertion goes before what was
        there)."""
        return col + sum(length for at, length in self.inserts.get(line, ()) if at <= col)

    def shift(self, mutant: Mutant) -> Mutant:
        """``mutant`` with its span moved onto the rewritten file (nothing else changes)."""
        if not self.inserts:
            return mutant
        return mutant.model_copy(update={"col": self.column(mutant.line, mutant.col),
                                         "end_col": self.end_column(mutant.end_line, mutant.end_col)})

    def end_column(self, line: int, col: int) -> int:
        """An end column moves with insertions strictly before it (text inserted exactly at a
        span's end belongs after the span)."""
        return col + sum(length for at, length in self.inserts.get(line, ()) if at < col)


def shift_mutants(mutants: dict[str, Mutant], maps: dict[str, PositionMap]) -> dict[str, Mutant]:
    """Every mutant moved onto its file's rewritten text (files without a map keep theirs)."""
    return {key: (maps[m.file].shift(m) if m.file in maps else m) for key, m in mutants.items()}
