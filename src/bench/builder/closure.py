"""The test side of a behave project: infrastructure vs. per-scenario Test Implementation.

Rule (docs/building.md#rules-that-needed-a-decision, made explicit):
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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench.model import ClosureFile
from bench.project import IGNORED_NAMES

HOOK_FILE = "environment.py"
STEPS_DIR = "steps"


@dataclass(frozen=True)
class TestSide:
    __test__ = False  # not a pytest class

    root: Path
    features_dir: str
    # every test-side .py: under the features tree and outside the production scope (a
    # production package may live inside it: ``features = "."``)
    python_files: frozenset[str]
    infrastructure_py: frozenset[str]
    base_dir: str = ""  # behave's base directory (where steps/ and environment.py are), "" = features_dir
    python_path: tuple[str, ...] = ()
    production: tuple[str, ...] = ()
    _reach: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    _project_python: list[frozenset[str]] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def scan(cls, root: Path, features_dir: str, hook_file: str = HOOK_FILE, *,
             python_path: list[str] | None = None, production: list[str] | None = None) -> TestSide:
        """``python_path``/``production`` default to the project's own settings (a dataset's
        snapshot carries its pyproject.toml), so the builder and the evaluator agree."""
        if python_path is None or production is None:
            from bench.project import project_layout

            layout = project_layout(root, features_dir)
            python_path = layout[0] if python_path is None else python_path
            production = layout[1] if production is None else production
        production_t = tuple(norm(p) for p in production)
        python_files = frozenset(rel for rel in _python_under(root, features_dir)
                                 if not in_scope(rel, production_t))
        base = behave_base_dir(root, features_dir)
        side = cls(root, features_dir, python_files, frozenset(), base, tuple(norm(p) for p in python_path),
                   production_t)
        hook = _join(base, hook_file)
        if hook in python_files:
            infra = import_closure(root, {hook}, python_files, side.search_dirs())
            side = cls(root, features_dir, python_files, frozenset(infra), base, side.python_path, production_t)
        return side

    @property
    def steps_dir(self) -> str:
        """The directory behave loads step modules from (its top level only)."""
        return _join(self.base_dir or norm(self.features_dir), STEPS_DIR)

    def search_dirs(self) -> list[str]:
        # behave puts the steps dir, its base dir and the working directory on sys.path; the
        # project's own import roots come from its python_path
        base = self.base_dir or norm(self.features_dir)
        out: list[str] = []
        for directory in (_join(base, STEPS_DIR), base, ".", *self.python_path):
            if directory not in out:
                out.append(directory)
        return out

    def closure_code(self, step_files: set[str], executed_files: set[str]) -> set[str]:
        seeds = {f for f in step_files | executed_files if f in self.python_files}
        # A bound step definition behave does not load itself (a nested package's module, one
        # outside the features tree) is registered by the steps/ module that imports it:
        # without that module the definition is never loaded.
        unloaded = {f for f in step_files if PurePosixPath(f).parent.as_posix() != self.steps_dir}
        if unloaded:
            for loader in self.step_modules():
                if loader not in seeds and unloaded & self.reach(loader):
                    seeds.add(loader)
        return import_closure(self.root, seeds, self.python_files, self.search_dirs()) - self.infrastructure_py

    def step_modules(self) -> list[str]:
        """The test-side modules behave loads as step modules."""
        return sorted(f for f in self.python_files if PurePosixPath(f).parent.as_posix() == self.steps_dir)

    def reach(self, rel: str) -> frozenset[str]:
        """Every project module ``rel`` imports, transitively, wherever it lives (production aside)."""
        if rel not in self._reach:
            if not self._project_python:
                self._project_python.append(frozenset(
                    f for f in _python_under(self.root, ".") if not in_scope(f, self.production)))
            self._reach[rel] = frozenset(import_closure(self.root, {rel}, self._project_python[0],
                                                        self.search_dirs()))
        return self._reach[rel]

    def describe(self, code_files: set[str], step_files: set[str], data_files: set[str]) -> list[ClosureFile]:
        out = []
        for rel in sorted(code_files):
            role = "step_definitions" if rel in step_files else "helper"
            out.append(_closure_file(self.root, rel, role))
        for rel in sorted(data_files):
            if (self.root / rel).is_file():
                out.append(_closure_file(self.root, rel, "data"))
        return out


def behave_base_dir(root: Path, features_dir: str) -> str:
    """behave's base directory for ``features_dir``, found as behave finds it: the first of the
    directory and its parents (within the project) that holds a steps directory or the hooks
    file; the features dir itself when none does (relative to ``root``, "." for the root)."""
    root = root.resolve() if root.exists() else root
    start = (root / features_dir).resolve() if (root / features_dir).exists() else root / features_dir
    current = start
    while True:
        if (current / STEPS_DIR).is_dir() or (current / HOOK_FILE).is_file():
            try:
                return norm(current.relative_to(root).as_posix())
            except ValueError:
                break
        if current == root or current.parent == current:
            break
        current = current.parent
    return norm(features_dir)


def in_scope(rel: str, scope: tuple[str, ...] | list[str]) -> bool:
    """``rel`` is one of the ``scope`` entries (files or directories) or lies under one."""
    return any(entry in (".", "") or rel == entry or rel.startswith(entry + "/") for entry in scope)


def norm(rel: str) -> str:
    text = PurePosixPath(str(rel).replace("\\", "/")).as_posix()
    return "." if text in ("", ".") else text.rstrip("/")


def _join(directory: str, name: str) -> str:
    return name if directory in ("", ".") else f"{directory}/{name}"


def _python_under(root: Path, rel_dir: str) -> list[str]:
    base = root / rel_dir
    if not base.is_dir():
        return []
    out = []
    for path in base.rglob("*.py"):
        rel = path.relative_to(root)
        if any(part in IGNORED_NAMES for part in rel.parts) or not path.is_file():
            continue
        out.append(rel.as_posix())
    return out


def _closure_file(root: Path, rel: str, role: str) -> ClosureFile:
    data = (root / rel).read_bytes()
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1) if role != "data" else 0
    return ClosureFile(path=rel, role=role, sha256=hashlib.sha256(data).hexdigest(), lines=lines)  # type: ignore[arg-type]


def import_closure(root: Path, seeds: set[str], python_files: frozenset[str], search_dirs: list[str]) -> set[str]:
    """Seeds plus every module of ``python_files`` they import, transitively (imports anywhere
    in the file), resolved against ``search_dirs`` (relative imports against the file's package)."""
    found = set(seeds)
    todo = list(seeds)
    while todo:
        rel = todo.pop()
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError, OSError):
            continue
        for target in _imported_files(rel, tree, search_dirs, python_files):
            if target not in found:
                found.add(target)
                todo.append(target)
    return found


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
