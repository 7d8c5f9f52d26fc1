"""Python as a production language: the stdlib-``ast`` mutant generator of
``bench.mutation.generate`` (SPEC §2 IV operator families, stable ids)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from bench.frameworks.protocol import Language
from bench.model import Mutant
from bench.mutation import generate


class PythonLanguage(Language):
    name: ClassVar[str] = "python"
    source_suffixes: ClassVar[tuple[str, ...]] = (".py",)

    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        return generate.generate_mutants(root, production)

    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        return generate.apply_mutant(source, mutant)
