"""The disk an evaluation sandbox sees: one instance's pristine workspace, nothing else.

A project's *base* is its snapshot with every test-side Python file of the features
tree removed except the shared infrastructure (hooks and what they import), every
ground-truth closure file of any instance removed wherever it lives, and no bytecode or
VCS data — so no step file of any instance is on a sandbox's disk to import or exec.
Production alone is then compiled to hash-checked bytecode: a run that imports it from
disk (import-time mutants, fresh-process replays) compiles only a module whose source
differs from what was compiled, and a mutant written to disk is never hidden by a stale
cache entry (the check is the source's hash, not its mtime).
An instance's space is a private copy of that base plus the prediction's files (the
workspace, writable, reset before every run) and a second copy without production (the
pristine reference the worker restores from). Production inside the workspace is
mounted read-only by the sandbox.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench.model import Mutant
from bench.mutation.positions import PositionMap
from bench.tree_rules import BYTECODE_DIRS, BYTECODE_SUFFIXES, COVERAGE_DATA, TEST_ENVIRONMENTS, VCS_DATA

# Narrower than NOT_PROJECT_CONTENT: a base holds the dataset's snapshot less VCS data, bytecode,
# test environments and coverage data, and keeps the rest (build/, dist/, venv/, node_modules can
# be the project's own code or runtime): every base holds the files it always held.
_NEVER = VCS_DATA | BYTECODE_DIRS | TEST_ENVIRONMENTS | COVERAGE_DATA | {".pytest_cache", ".mypy_cache"}


@dataclass(frozen=True)
class ProjectBase:
    root: Path
    features_dir: str
    python_path: list[str]
    production: list[str]
    infrastructure_py: frozenset[str]
    framework: str = "behave"  # registry name: which evaluation worker the sandboxes start
    python: str = sys.executable  # the project's own environment's interpreter (bench.environments)
    # the behaviour-preserving rewrite of production this base holds (bench.mutation.diversify):
    # where it moved each file's text, and the shipped tree it was made from
    positions: dict[str, PositionMap] = field(default_factory=dict)
    shipped: Path | None = None
    # file -> the first line the rewrite appended; coverage of those lines is the rewrite's own
    appended_from: dict[str, int] = field(default_factory=dict)
    _equivalents: dict[str, list[Mutant]] = field(default_factory=dict, compare=False, repr=False)

    def shifted(self, mutant: Mutant) -> Mutant:
        """``mutant`` (recorded against the shipped source) placed on this base's production."""
        positions = self.positions.get(mutant.file)
        return positions.shift(mutant) if positions is not None else mutant

    def shipped_coverage(self, coverage: dict[str, list[int]]) -> dict[str, list[int]]:
        """``coverage`` of this base's production without the lines the rewrite appended: they
        run on import, the shipped file has no such line, and the ground truth never covers it."""
        if not self.appended_from:
            return coverage
        kept = {rel: [n for n in lines if n < self.appended_from.get(rel, n + 1)] for rel, lines in coverage.items()}
        return {rel: lines for rel, lines in kept.items() if lines}

    def equivalents(self, rel: str) -> list[Mutant]:
        """The equivalent variants of production file ``rel``, in the shipped file's coordinates
        (computed on first need, once per base)."""
        if rel not in self._equivalents:
            from bench.mutation.equivalents import equivalent_variants

            source = (self.shipped or self.root) / rel
            try:
                text = source.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            self._equivalents[rel] = equivalent_variants(rel, text) if rel.endswith(".py") else []
        return self._equivalents[rel]


@dataclass(frozen=True)
class InstanceSpace:
    workspace: Path  # writable inside the sandbox, except production
    pristine: Path  # read-only inside the sandbox: what every run starts from
    prediction_files: list[str]  # relative paths
    base: ProjectBase

    @property
    def production_dirs(self) -> list[Path]:
        return [self.workspace / p for p in self.base.production]


def build_base(snapshot: Path, dest: Path, features_dir: str, python_path: list[str], production: list[str],
               infrastructure_py: frozenset[str], gold_files: set[str], framework: str = "behave",
               diversify_seed: int | None = None, python: str = sys.executable) -> ProjectBase:
    """Copy ``snapshot`` to ``dest`` without any ground-truth or other test-side code; with a
    ``diversify_seed``, production's Python files in a behaviour-preserving rewrite of their own
    (``bench.mutation.diversify``): a test comparing code with the shipped source finds it changed
    on every clean run."""
    features = PurePosixPath(features_dir)

    def keep(rel: PurePosixPath, is_dir: bool) -> bool:
        if rel.name in _NEVER or rel.suffix in BYTECODE_SUFFIXES:
            return False
        if rel.as_posix() in gold_files:
            return False
        if not is_dir and rel.suffix == ".py" and features in rel.parents:
            return rel.as_posix() in infrastructure_py
        return True

    def ignore(directory: str, names: list[str]) -> set[str]:
        rel_dir = PurePosixPath(Path(directory).relative_to(snapshot).as_posix())
        out = set()
        for name in names:
            rel = rel_dir / name if str(rel_dir) != "." else PurePosixPath(name)
            if not keep(rel, os.path.isdir(os.path.join(directory, name))):
                out.add(name)
        return out

    shutil.copytree(snapshot, dest, symlinks=True, ignore=ignore)
    # behave refuses to start without a steps directory (ConfigError)
    (dest / features_dir / "steps").mkdir(parents=True, exist_ok=True)
    positions: dict[str, PositionMap] = {}
    appended_from: dict[str, int] = {}
    if diversify_seed is not None:
        positions, appended_from = _diversify_production(dest, production, diversify_seed)
    _compile_production(dest, production)
    return ProjectBase(dest, features_dir, list(python_path), list(production), infrastructure_py, framework,
                       python=python, positions=positions, shipped=snapshot, appended_from=appended_from)


def _diversify_production(root: Path, production: list[str],
                          seed: int) -> tuple[dict[str, PositionMap], dict[str, int]]:
    """Rewrite every production ``.py`` file in place; each file's own seed derives from ``seed``.
    Returns where each file's text moved and the first line appended to it."""
    import hashlib

    from bench.mutation.diversify import diversify_python

    positions: dict[str, PositionMap] = {}
    appended_from: dict[str, int] = {}
    for scope in production:
        base = root / scope
        paths = [base] if base.is_file() else sorted(base.rglob("*.py")) if base.is_dir() else []
        for path in paths:
            if path.suffix != ".py" or path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            file_seed = int.from_bytes(hashlib.sha256(f"{seed}\0{rel}".encode()).digest()[:8], "big")
            rewritten = diversify_python(text, file_seed)
            if rewritten.text != text:
                path.write_text(rewritten.text, encoding="utf-8")
                positions[rel] = rewritten.positions
                if rewritten.appended_from is not None:
                    appended_from[rel] = rewritten.appended_from
    return positions, appended_from


def _compile_production(root: Path, production: list[str]) -> None:
    """Hash-checked bytecode next to every production module (a module that does not
    compile is left to fail in the run, where it is the run's outcome)."""
    import compileall
    import py_compile

    mode = py_compile.PycInvalidationMode.CHECKED_HASH
    for rel in production:
        path = root / rel
        if path.is_dir():
            compileall.compile_dir(str(path), quiet=2, invalidation_mode=mode, workers=1)
        elif path.suffix == ".py" and path.is_file():
            compileall.compile_file(str(path), quiet=2, invalidation_mode=mode)


def instance_space(base: ProjectBase, files: dict[str, str], dest: Path,
                   link_production: bool = False) -> InstanceSpace:
    """``dest``/ws (base + prediction) and ``dest``/pristine (the same without production).

    ``link_production``: production files are hard links to the base's instead of copies.
    Only where the sandbox mounts production read-only (bwrap): without that mount a
    process the test starts could write a linked file in place and reach every later
    instance through the base."""
    workspace, pristine = dest / "ws", dest / "pristine"
    prod = {PurePosixPath(p) for p in base.production}

    def no_production(directory: str, names: list[str]) -> set[str]:
        rel_dir = PurePosixPath(Path(directory).relative_to(base.root).as_posix())
        return {n for n in names if (rel_dir / n if str(rel_dir) != "." else PurePosixPath(n)) in prod}

    # the verdict process only ever replaces a production file (write, then rename), so
    # under a read-only mount nothing writes a linked file in place
    shutil.copytree(base.root, workspace, symlinks=True, ignore=no_production)
    copy = _link if link_production else shutil.copy2
    for prod_rel in sorted(prod):
        source = base.root / prod_rel
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, workspace / prod_rel, symlinks=True, copy_function=copy)
        elif source.exists() or source.is_symlink():
            (workspace / prod_rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, workspace / prod_rel, follow_symlinks=False)
    # the pristine copy is read-only inside the sandbox and never written here: hard links
    # to the base (which nothing writes either) cost no copying
    shutil.copytree(base.root, pristine, symlinks=True, ignore=no_production, copy_function=_link)
    for root in (workspace, pristine):
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                path.unlink()  # never write through a link into the base
            path.write_text(content, encoding="utf-8")
    return InstanceSpace(workspace, pristine, sorted(files), base)


def refresh_workspace(space: InstanceSpace) -> None:
    """Put the workspace back to its pristine state (all but production, which the sandbox
    could not write), between two sandboxes on the same instance."""
    production = {space.workspace / p for p in space.base.production}
    ancestors = {a for p in production for a in p.parents}

    def clear(directory: Path) -> None:
        for entry in list(directory.iterdir()):
            if entry in production:
                continue
            if entry in ancestors and entry.is_dir() and not entry.is_symlink():
                clear(entry)
            elif entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, onerror=_force)
            else:
                entry.unlink()

    clear(space.workspace)
    shutil.copytree(space.pristine, space.workspace, symlinks=True, dirs_exist_ok=True)


def _force(func, path, _exc):
    """rmtree's error hook: a test may leave read-only directories behind."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: copy
        shutil.copy2(source, target)


def remove_space(space: InstanceSpace) -> None:
    """Delete an instance's directories (a test may have left read-only dirs behind)."""
    shutil.rmtree(space.workspace.parent, onerror=_force)
