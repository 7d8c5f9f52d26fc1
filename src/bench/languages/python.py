"""Python as a production language: the stdlib-``ast`` mutant generator of
``bench.mutation.generate`` (operator families and stable ids:
docs/building.md#mutants-and-ground-truth-kills)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from bench.frameworks.protocol import BodyHider, Language
from bench.model import Mutant
from bench.mutation import generate


class PythonLanguage(Language):
    name: ClassVar[str] = "python"
    source_suffixes: ClassVar[tuple[str, ...]] = (".py",)

    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        return generate.generate_mutants(root, production)

    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        return generate.apply_mutant(source, mutant)

    def hider(self) -> BodyHider:
        from bench.languages.python_hiding import PythonHider  # libcst loads on first use

        return PythonHider()
