"""Run the behave workers under bubblewrap: no network, read-only system and production.

This isolation lives in ``bench`` because the evaluator itself needs it (it runs code an
agent wrote); the agent sandboxes in ``harness`` build on it. The recipe follows the
facts measured here (DESIGN.md "Sandbox"): bind only what is needed — never ``/`` (that
would expose /var/run/docker.sock) — tmpfs over /tmp and /run, an unprivileged uid in a
user namespace with no capabilities, every namespace unshared (so no network at all), and
the sandbox dies with its parent. ``/etc`` is never the host's: a minimal one
(``bench.minimal_etc``) replaces it, since the sandbox's uid maps to host root when bwrap runs
as root and every root-owned file bound in (``/etc/shadow``) would be readable.
"""

from __future__ import annotations

import shutil
import site
import sys
from pathlib import Path
from typing import Literal

from bench.minimal_etc import bwrap_etc_args

IsolationMode = Literal["auto", "bwrap", "none"]

# bound read-only at their own paths; /etc comes from bench.minimal_etc instead
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
NOBODY = 65534


class IsolationError(Exception):
    """bubblewrap was required but cannot be used; one line."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def resolve_mode(mode: IsolationMode) -> Literal["bwrap", "none"]:
    if mode == "none":
        return "none"
    if bwrap_path() is not None:
        return "bwrap"
    if mode == "bwrap":
        raise IsolationError("bubblewrap is not installed (Debian: apt-get install bubblewrap); "
                             "pass --isolation none to run without isolation")
    return "none"


def python_dirs() -> list[Path]:
    """Everything the interpreter, its installed packages and our worker module need, read-only."""
    dirs = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent,
            Path(__file__).resolve().parents[1]}  # the directory holding the bench package
    for entry in [*site.getsitepackages(), site.getusersitepackages()]:
        if entry and Path(entry).is_dir():
            dirs.add(Path(entry))
    # never a whole system root: that would defeat the point (e.g. /tmp of the host)
    return [d for d in _outermost(dirs) if str(d) not in ("/", "/tmp", "/root", "/home", "/var", "/run")]


def _outermost(paths: set[Path]) -> list[Path]:
    ordered = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in ordered:
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def wrap(command: list[str], writable: list[Path], readonly: list[Path], cwd: Path | str,
         mounted: list[tuple[Path, str]] = ()) -> list[str]:  # type: ignore[assignment]
    """``command`` inside bubblewrap: ``writable`` dirs bound read-write, then ``readonly``
    re-bound read-only on top (e.g. a production tree inside a writable project copy), then
    ``mounted``: (host dir, path inside) pairs bound read-only at another path."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise IsolationError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
    args = [bwrap, "--die-with-parent", "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
            "--gid", str(NOBODY), "--cap-drop", "ALL", "--new-session"]
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind-try", directory, directory]
    args += bwrap_etc_args()
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for directory in python_dirs():
        args += ["--ro-bind", str(directory), str(directory)]
    for directory in _outermost(set(writable)):
        args += ["--bind", str(directory), str(directory)]
    for directory in readonly:
        args += ["--ro-bind", str(directory), str(directory)]
    for directory, inside in mounted:
        args += ["--ro-bind", str(directory), inside]
    args += ["--chdir", str(cwd), "--"]
    return args + command
