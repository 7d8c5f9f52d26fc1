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

import functools
import shutil
import site
import sys
from pathlib import Path
from typing import Literal

from bench.errors import UserError
from bench.minimal_etc import bwrap_etc_args

IsolationMode = Literal["auto", "bwrap", "none"]

# bound read-only at their own paths; /etc comes from bench.minimal_etc instead
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
NOBODY = 65534


class IsolationError(UserError):
    """bubblewrap was required but cannot be used; one line."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def resolve_mode(mode: IsolationMode | str) -> Literal["bwrap", "none"]:
    """``mode`` as given on the command line (``IsolationMode``; a build's ``--isolation`` is not
    checked, and any other value is taken as ``auto``)."""
    if mode == "none":
        return "none"
    if bwrap_path() is not None:
        return "bwrap"
    if mode == "bwrap":
        raise IsolationError("bubblewrap is not installed (Debian: apt-get install bubblewrap); "
                             "pass --isolation none to run without isolation")
    return "none"


def bench_package() -> Path:
    """The ``bench`` package directory this process runs (``PYTHONPATH`` of a worker is its parent)."""
    return Path(__file__).resolve().parent


def python_dirs(interpreter: str | None = None) -> list[Path]:
    """Everything the interpreter, its installed packages and our worker module need, read-only.

    Of our own code only the ``bench`` package itself, never the directory holding it: in a
    source layout that is ``src/``, which also holds ``harness`` and its package data — the
    bundled example's own step files, the ground truth of its instances. Where that directory
    is bound anyway (a wheel in site-packages), ``masked_dirs`` hides the rest of ours.

    ``interpreter``: the command's interpreter, when it is a project's own environment
    (``bench.environments``), whose directory holds the project's dependencies."""
    from bench.environments import environment_dir

    dirs = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent, bench_package()}
    own = environment_dir(interpreter) if interpreter else None
    if own is not None:
        dirs.add(own)
    for entry in [*site.getsitepackages(), site.getusersitepackages()]:
        if entry and Path(entry).is_dir():
            dirs.add(Path(entry))
    # never a whole system root: that would defeat the point (e.g. /tmp of the host)
    return [d for d in _outermost(dirs) if str(d) not in ("/", "/tmp", "/root", "/home", "/var", "/run")]


# top-level directories of the req2test distribution besides bench (a sandbox needs none)
OWN_PACKAGES = ("harness",)


def masked_dirs(bound: list[Path] | None = None) -> list[Path]:
    """Directories of our own distribution next to ``bench`` that a bound directory exposes
    (``bound``: ``python_dirs()``): empty in a source layout, where only ``bench`` is bound;
    ``site-packages/harness`` (package data: the bundled examples) for a wheel. A sandbox mounts
    an empty read-only tmpfs over each."""
    holder = bench_package().parent
    bound = python_dirs() if bound is None else bound
    if not any(holder == d or d in holder.parents for d in bound):
        return []
    names = set(OWN_PACKAGES) | _distribution_packages(holder)
    return [holder / n for n in sorted(names - {"bench"}) if (holder / n).is_dir()]


@functools.cache
def _distribution_packages(holder: Path) -> frozenset[str]:
    """Top-level directories the distribution that installed ``holder/bench`` put in ``holder``
    (from its RECORD; its ``.dist-info`` is metadata and stays)."""
    from importlib import metadata

    for dist in metadata.distributions(path=[str(holder)]):
        files = dist.files or []
        tops = {f.parts[0] for f in files if len(f.parts) > 1 and f.parts[0] not in ("..", "__pycache__")}
        if "bench" in tops:
            return frozenset(t for t in tops if not t.endswith((".dist-info", ".egg-info", ".data")))
    return frozenset()


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
    for system_dir in SYSTEM_DIRS:
        args += ["--ro-bind-try", system_dir, system_dir]
    args += bwrap_etc_args()
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    bound = python_dirs(command[0] if command else None)
    for directory in bound:
        args += ["--ro-bind", str(directory), str(directory)]
    for directory in masked_dirs(bound):
        args += ["--tmpfs", str(directory), "--remount-ro", str(directory)]
    for directory in _outermost(set(writable)):
        args += ["--bind", str(directory), str(directory)]
    for directory in readonly:
        args += ["--ro-bind", str(directory), str(directory)]
    for directory, inside in mounted:
        args += ["--ro-bind", str(directory), inside]
    args += ["--chdir", str(cwd), "--"]
    return args + command
