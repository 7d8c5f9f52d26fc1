"""The test side of a behave project: infrastructure vs. per-scenario Test Implementation.

Rule (SPEC §2-III, made explicit):
- *infrastructure* = the hook file (``environment.py``) and the test-side Python
  modules it imports, plus every non-Python file of the features tree (feature
  files, fixtures, test data). Views and both validation workspaces keep it.
- a scenario's *Test Implementation* = the step-definition files its runtime
  bindings point at, the test-side modules those import (transitively, statically
  resolved) or that executed during its run, and the data files it opened.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from bench.model import ClosureFile


@dataclass(frozen=True)
class TestSide:
    __test__ = False  # not a pytest class

    root: Path
    features_dir: str
    python_files: frozenset[str]  # every .py under the features tree (relative to root)
    infrastructure_py: frozenset[str]

    @classmethod
    def scan(cls, root: Path, features_dir: str, hook_file: str = "environment.py") -> TestSide:
        base = root / features_dir
        python_files = frozenset(
            p.relative_to(root).as_posix() for p in base.rglob("*.py") if "__pycache__" not in p.parts)
        hook = (Path(features_dir) / hook_file).as_posix()
        infra = set()
        if hook in python_files:
            infra = import_closure(root, features_dir, {hook}, python_files)
        return cls(root, features_dir, python_files, frozenset(infra))

    def closure_code(self, step_files: set[str], executed_files: set[str]) -> set[str]:
        seeds = {f for f in step_files | executed_files if f in self.python_files}
        return import_closure(self.root, self.features_dir, seeds, self.python_files) - self.infrastructure_py

    def describe(self, code_files: set[str], step_files: set[str], data_files: set[str]) -> list[ClosureFile]:
        out = []
        for rel in sorted(code_files):
            role = "step_definitions" if rel in step_files else "helper"
            out.append(_closure_file(self.root, rel, role))
        for rel in sorted(data_files):
            if (self.root / rel).is_file():
                out.append(_closure_file(self.root, rel, "data"))
        return out


def _closure_file(root: Path, rel: str, role: str) -> ClosureFile:
    data = (root / rel).read_bytes()
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1) if role != "data" else 0
    return ClosureFile(path=rel, role=role, sha256=hashlib.sha256(data).hexdigest(), lines=lines)  # type: ignore[arg-type]


def import_closure(root: Path, features_dir: str, seeds: set[str], python_files: frozenset[str]) -> set[str]:
    """Seeds plus every test-side module they import, transitively (imports anywhere in the file)."""
    found = set(seeds)
    todo = list(seeds)
    search_dirs = _search_dirs(features_dir)
    while todo:
        rel = todo.pop()
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for target in _imported_files(rel, tree, search_dirs, python_files):
            if target not in found:
                found.add(target)
                todo.append(target)
    return found


def _search_dirs(features_dir: str) -> list[str]:
    # behave puts the steps dir and the features dir's base on sys.path.
    base = Path(features_dir)
    return [(base / "steps").as_posix(), base.as_posix(), "."]


def _imported_files(rel: str, tree: ast.Module, search_dirs: list[str], python_files: frozenset[str]) -> set[str]:
    here = Path(rel).parent
    targets: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        dirs = search_dirs
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here
                for _ in range(node.level - 1):
                    anchor = anchor.parent
                dirs = [anchor.as_posix()]
            names = [base] if base else []
            names += [f"{base}.{a.name}" if base else a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            for directory in dirs:
                for i in range(len(parts), 0, -1):
                    stem = "/".join(parts[:i])
                    prefix = "" if directory in ("", ".") else directory + "/"
                    for candidate in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
                        if candidate in python_files:
                            targets.add(candidate)
    return targets
