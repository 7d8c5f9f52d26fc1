"""TypeScript/JavaScript as a production language: Stryker's mutants.

Stryker's instrumenter (``@stryker-mutator/instrumenter``, in the project's node_modules as a
dependency of ``@stryker-mutator/core``) parses each file with Babel and lists every mutant
as a source span and its replacement text; it never runs the code. A mutant is applied by
putting the replacement in place of the span, which is exactly what Stryker's report shows.
Locations here are 1-based lines and 0-based columns (counted in characters).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import ClassVar

from bench.frameworks.protocol import BodyHider, Language
from bench.model import Mutant

SOURCE_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
INSTRUMENT_SCRIPT = Path(__file__).with_name("node") / "instrument.mjs"


class MutantError(Exception):
    """Stryker's instrumenter could not list the mutants; one line."""


def production_files(root: Path, production: list[str]) -> list[str]:
    """The production source files (declaration files excluded), sorted."""
    found: set[str] = set()
    for entry in production:
        path = root / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        for file in paths:
            rel = file.relative_to(root).as_posix()
            if file.is_file() and file.suffix in SOURCE_SUFFIXES and not rel.endswith(".d.ts") \
                    and "node_modules" not in file.parts:
                found.add(rel)
    return sorted(found)


def _offset(lines: list[str], line: int, column: int) -> int:
    if not 1 <= line <= len(lines):
        raise ValueError(f"line {line} is outside the file")
    return sum(len(x) for x in lines[:line - 1]) + column


def make_mutant(root: Path, file: str, operator: str, replacement: str, line: int, col: int,
                end_line: int, end_col: int, source: str | None = None) -> Mutant:
    """A manifest record for one Stryker mutant (1-based lines, 0-based columns)."""
    text = source if source is not None else (root / file).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    original = text[_offset(lines, line, col):_offset(lines, end_line, end_col)]
    digest = hashlib.sha256(f"{file}\0{line}:{col}-{end_line}:{end_col}\0{operator}\0{replacement}".encode())
    return Mutant(id=digest.hexdigest()[:16], file=file, line=line, col=col, end_line=end_line, end_col=end_col,
                  operator=operator, original=original, replacement=replacement, function="", function_line=line,
                  lines=list(range(line, end_line + 1)), scope=(line, end_line), function_end=end_line)


class TypeScriptLanguage(Language):
    name: ClassVar[str] = "typescript"
    source_suffixes: ClassVar[tuple[str, ...]] = SOURCE_SUFFIXES

    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        files = production_files(root, production)
        if not files:
            return []
        proc = subprocess.run(["node", str(INSTRUMENT_SCRIPT), *files], cwd=root, capture_output=True, check=False)
        if proc.returncode != 0:
            last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise MutantError(f"Stryker's instrumenter failed: {last}")
        sources = {f: (root / f).read_text(encoding="utf-8") for f in files}
        mutants = [make_mutant(root, m["file"], m["mutator"], m["replacement"], m["start"]["line"],
                               m["start"]["column"], m["end"]["line"], m["end"]["column"], sources[m["file"]])
                   for m in json.loads(proc.stdout)]
        unique = {m.id: m for m in mutants}
        return sorted(unique.values(), key=lambda m: (m.file, m.line, m.col, m.id))

    def mutated_files(self, root: Path, mutant: Mutant | None) -> dict[str, bytes]:
        """What a run's tree replaces to hold ``mutant`` (read from ``root``); {} for none."""
        if mutant is None:
            return {}
        original = (root / mutant.file).read_text(encoding="utf-8")
        return {mutant.file: self.apply_mutant(original, mutant).encode("utf-8")}

    def hider(self) -> BodyHider:
        from bench.frameworks.cucumber_js.hiding import JsHider  # tree-sitter loads on first use

        return JsHider()

    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        lines = source.splitlines(keepends=True)
        start = _offset(lines, mutant.line, mutant.col)
        end = _offset(lines, mutant.end_line, mutant.end_col)
        if source[start:end] != mutant.original:
            raise ValueError(f"mutant {mutant.id} does not fit {mutant.file}:{mutant.line}")
        return source[:start] + mutant.replacement + source[end:]
