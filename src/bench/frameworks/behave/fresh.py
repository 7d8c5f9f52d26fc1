"""The reference way to run a test against a mutant: a fresh runner process, mutant on disk.

Slow (hundreds of ms a run) but obviously right; the warm executor must agree with it
(benchmarks/mutant_speed.py and tests/unit/test_mutation.py check that). The executor
itself never uses it: import-time mutants go through an import hook instead. How the
runner is started is the framework's (``Framework.fresh_run``); the shadow tree that
holds the mutant is the same for every framework.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.frameworks.protocol import FreshVerdict
from bench.frameworks.registry import get_framework
from bench.model import Mutant

__all__ = ["FreshVerdict", "run_fresh", "shadow_tree"]


def shadow_tree(root: Path, target: Path, replaced: dict[str, str]) -> None:
    """``target`` mirrors ``root`` through symlinks, except the files in ``replaced``, written."""
    dirs_needed = {Path(rel).parent for rel in replaced}
    expanded = set()
    for d in dirs_needed:
        while d != Path("."):
            expanded.add(d)
            d = d.parent

    def mirror(rel_dir: Path) -> None:
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(root / rel_dir):
            rel = rel_dir / entry.name
            if entry.name == "__pycache__":
                continue
            if rel.as_posix() in replaced:
                (target / rel).write_text(replaced[rel.as_posix()], encoding="utf-8")
            elif rel in expanded and entry.is_dir():
                mirror(rel)
            else:
                os.symlink(os.path.realpath(root / rel), target / rel)

    mirror(Path("."))


def run_fresh(root: Path, python_path: list[str], feature: str, lines: list[int], mutant: Mutant | None,
              timeout: float, python: str = sys.executable, framework: str | None = None) -> FreshVerdict:
    """Run FEATURE:LINES in a fresh runner process on a shadow of ``root`` with the mutant applied."""
    return get_framework(framework).fresh_run(root, python_path, feature, lines, mutant, timeout, python)
