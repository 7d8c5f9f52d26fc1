"""Write one commit's tree to a directory, straight from a (possibly bare, possibly partial) git
repository: no work tree, no checkout, no hooks.

A mirror may lack some large blobs (a partial clone: ``git archive`` stops at the first one).
They are skipped and listed, so a caller can decide whether the tree is still usable
(python-docx's mirror lacks a 20 MB PDF under ``ref/``, which nothing runs).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from pydantic import Field

from bench.errors import UserError
from bench.model import Frozen

_SKIPPED_TOP = {".git"}


class TreeReport(Frozen):
    commit: str
    files: int
    missing: list[str] = Field(default_factory=list, description="paths whose blob the repository lacks")
    skipped: list[str] = Field(default_factory=list, description="submodules and excluded paths")


class TreeError(UserError):
    """A commit that cannot be written (unknown, or the repository is unreadable)."""


def write_tree(repo: Path, commit: str, dest: Path, exclude: tuple[str, ...] = ()) -> TreeReport:
    """Write ``commit``'s files under ``dest`` (which must not exist or be empty).

    ``exclude``: top-level paths (or path prefixes) not written, e.g. documentation.
    """
    listing = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", commit],
                             capture_output=True, check=False)
    if listing.returncode != 0:
        raise TreeError(f"git ls-tree {commit}: {listing.stderr.decode(errors='replace').strip()}")
    entries: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = raw_path.decode("utf-8", errors="surrogateescape")
        pure = PurePosixPath(path)
        if (kind != "blob" or pure.is_absolute() or ".." in pure.parts or pure.parts[0] in _SKIPPED_TOP
                or any(path == e or path.startswith(e.rstrip("/") + "/") for e in exclude)):
            skipped.append(path)
            continue
        entries.append((mode, sha, path))
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise TreeError(f"{dest} is not empty")
    missing: list[str] = []
    proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for mode, sha, path in entries:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) != 3:  # "<sha> missing": the mirror does not hold this blob
                missing.append(path)
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":  # a symbolic link: its blob is the link text
                os.symlink(data.decode("utf-8", errors="surrogateescape"), target)
                continue
            target.write_bytes(data)
            if mode == "100755":
                target.chmod(0o755)
    finally:
        proc.stdin.close()
        proc.wait()
    return TreeReport(commit=commit, files=len(entries) - len(missing), missing=missing, skipped=skipped)
