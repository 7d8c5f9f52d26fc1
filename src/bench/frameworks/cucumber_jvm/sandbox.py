"""The sandbox of a Cucumber-JVM verdict run: bubblewrap **without ``/proc``**, no network, uid
nobody, a fresh ``/tmp``, nothing writable but the run's own output directory.

A schemata build holds every mutant; which one runs is a number the launcher
``req2test.schema.Main`` reads from fd 3 and closes before any class of the class path loads
(``schemata``). Without ``/proc`` a JVM cannot read its own memory (``/proc/self/mem``), find
fd 3 again by path (``/proc/self/fd/3``, ``/dev/fd/3``), nor read its command line
(``/proc/self/cmdline``). What the run sees:

- the system directories read-only (the JDK among them), a minimal ``/etc`` (``minimal_etc``)
  plus the JDK's own configuration there (Debian's JDK links ``lib/jvm.cfg``,
  ``conf/security/java.security``… into ``/etc/java-N-openjdk``: without them the launcher does
  not start and ``MessageDigest`` has no providers);
- the run tree read-only: the project without one ``.java`` file and without ``target/``
  (features, fixtures under ``src/test/resources``, ``pom.xml``): the JVM needs classes, not
  sources, so a test cannot read production or the ground truth's steps as data;
- every class path entry read-only, at its own path (the dependency jars, the prediction's
  compiled glue, the test resources, the schemata classes);
- the output directory writable, always at one path inside (``OUT``), so that every verdict
  run has the very same argv (``--plugin json:/run/out/cucumber.json``) and ``HOME``.

The ``java`` launcher finds ``libjli.so`` through ``$ORIGIN``, which it resolves through
``/proc/self/exe``: without ``/proc`` it needs ``LD_LIBRARY_PATH`` set to the JDK's ``lib``
(``java_env``), the same for every run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from bench.isolation import NOBODY, SYSTEM_DIRS, IsolationError, bwrap_path
from bench.minimal_etc import bwrap_etc_args

OUT = Path("/run/out")  # where a run's output directory is inside the sandbox

Wrap = Callable[[list[str], Path, Path], list[str]]  # (argv, cwd, host output dir) -> the sandboxed argv


def java_home(java: str) -> Path:
    """The JDK of ``java`` (a name on PATH or a path), through every link (``/usr/bin/java`` →
    ``/etc/alternatives/java`` → ``/usr/lib/jvm/java-17-openjdk-amd64/bin/java``)."""
    found = shutil.which(java) or java
    return Path(found).resolve().parent.parent


def java_binary(java: str) -> str:
    """``java`` resolved to the JDK's own launcher (inside the sandbox ``/etc/alternatives`` is absent)."""
    return str(java_home(java) / "bin" / "java")


def java_env(java: str) -> dict[str, str]:
    """What the launcher needs without ``/proc``: the JDK's ``lib`` on ``LD_LIBRARY_PATH``."""
    return {"LD_LIBRARY_PATH": str(java_home(java) / "lib")}


def jdk_etc_dirs(home: Path) -> list[str]:
    """The directories under ``/etc`` the JDK's files link into (``/etc/java-17-openjdk``,
    ``/etc/ssl/certs/java``), outermost first."""
    found: set[str] = set()
    for top in ("conf", "lib"):
        base = home / top
        if not base.is_dir():
            continue
        for directory, _dirs, files in os.walk(base):
            for name in files:
                path = Path(directory) / name
                if not path.is_symlink():
                    continue
                target = Path(os.path.normpath(Path(directory) / os.readlink(path)))
                if target.parts[:2] == ("/", "etc") and len(target.parts) > 2:
                    found.add(str(Path(*target.parts[:3])))
    return sorted(found)


def layout(tree: Path, readonly: Iterable[Path], java: str) -> list[str]:
    """What every Cucumber-JVM sandbox shows (the fresh JVM's and the restored one's,
    ``restored``): the system directories, the minimal ``/etc`` and the JDK's, a device
    directory, fresh ``/tmp`` and ``/run``, the run tree and ``readonly`` at their own paths."""
    etc = bwrap_etc_args()
    if etc[-2:] != ["--remount-ro", "/etc"]:  # pragma: no cover - minimal_etc's contract
        raise IsolationError("unexpected /etc arguments from minimal_etc")
    extra_etc: list[str] = []
    for directory in jdk_etc_dirs(java_home(java)):
        if directory not in ("/etc/ssl",):  # /etc/ssl/certs is bound by minimal_etc already
            extra_etc += ["--ro-bind-try", directory, directory]
    etc = [*etc[:-2], *extra_etc, *etc[-2:]]
    binds: list[str] = []
    for path in sorted({Path(p).resolve() for p in readonly}):
        if path == tree.resolve():
            continue
        binds += ["--ro-bind", str(path), str(path)]
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind-try", directory, directory]
    return [*args, *etc, "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
            "--ro-bind", str(tree.resolve()), str(tree.resolve()), *binds]


def sandboxed(tree: Path, readonly: Iterable[Path], java: str) -> Wrap:
    """A wrapper that runs a command in ``tree`` (the run tree, read-only) inside bubblewrap,
    with ``readonly`` (class path entries, an AppCDS archive) bound read-only at their own paths
    and the host output directory bound writable at ``OUT``."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise IsolationError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
    shown = layout(tree, readonly, java)

    def wrap(argv: list[str], cwd: Path, out_dir: Path) -> list[str]:
        # no --proc: nothing of the process's memory, descriptors or command line is reachable by path
        return [bwrap, "--die-with-parent", "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
                "--gid", str(NOBODY), "--cap-drop", "ALL", "--new-session", *shown,
                "--bind", str(out_dir.resolve()), str(OUT), "--chdir", str(cwd.resolve()), "--", *argv]

    return wrap


__all__ = ["OUT", "Wrap", "java_binary", "java_env", "java_home", "jdk_etc_dirs", "layout", "sandboxed"]
