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
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_NEVER = {"__pycache__", ".git", ".hg", ".svn", ".coverage", ".tox", ".nox", ".pytest_cache", ".mypy_cache"}


@dataclass(frozen=True)
class ProjectBase:
    root: Path
    features_dir: str
    python_path: list[str]
    production: list[str]
    infrastructure_py: frozenset[str]
    framework: str = "behave"  # registry name: which evaluation worker the sandboxes start


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
               infrastructure_py: frozenset[str], gold_files: set[str], framework: str = "behave") -> ProjectBase:
    """Copy ``snapshot`` to ``dest`` without any ground-truth or other test-side code."""
    features = PurePosixPath(features_dir)

    def keep(rel: PurePosixPath, is_dir: bool) -> bool:
        if rel.name in _NEVER or rel.suffix in (".pyc", ".pyo"):
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
    _compile_production(dest, production)
    return ProjectBase(dest, features_dir, list(python_path), list(production), infrastructure_py, framework)


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
    for rel in sorted(prod):
        source = base.root / rel
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, workspace / rel, symlinks=True, copy_function=copy)
        elif source.exists() or source.is_symlink():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, workspace / rel, follow_symlinks=False)
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
