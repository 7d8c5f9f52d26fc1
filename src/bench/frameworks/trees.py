"""Scratch copies of a project tree for builds (godog, Cucumber-JVM): hard links to an unchanging
tree, the changed files written as new files (never through a link), and the files a tool
rewrites in place copied (``copied``: godog's module files, since ``GOFLAGS=-mod=mod`` lets the
go command rewrite go.mod/go.sum)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from bench.project import IGNORED_NAMES

GO_MODULE_FILES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum"})


def link_tree(source: Path, target: Path, replaced: Mapping[str, bytes | str] | None = None,
              copied: frozenset[str] = GO_MODULE_FILES) -> Path:
    """``target`` as a copy of ``source`` made of hard links (a plain copy across file systems),
    with ``replaced`` (relative path -> content) written as new files and ``copied`` (relative
    paths) copied. VCS data and caches (``bench.project.IGNORED_NAMES``) are left out."""
    replaced = dict(replaced or {})
    for directory, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d not in IGNORED_NAMES]
        here = Path(directory)
        rel_dir = here.relative_to(source)
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            src, dst = here / name, target / rel_dir / name
            if rel in replaced:
                continue
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
                continue
            if rel in copied:
                shutil.copyfile(src, dst)
                continue
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    for rel, content in replaced.items():
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.unlink(missing_ok=True)
        if isinstance(content, str):
            dst.write_text(content, encoding="utf-8")
        else:
            dst.write_bytes(content)
    return target


def copy_tree(source: Path, target: Path) -> Path:
    """A full copy (the build's work tree: runs may write in the package directory)."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_NAMES))
    return target
