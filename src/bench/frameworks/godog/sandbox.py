"""The sandbox of a godog verdict run: bubblewrap **without ``/proc``**, no network, uid nobody.

A schemata binary holds every mutant; which one runs is a number read from fd 3 into an
unexported variable before any test code runs (``schemata``). Without ``/proc`` a process
cannot read its own memory through ``/proc/self/mem`` nor find its executable through
``/proc/self/exe``; the binary is linked without symbols (``build_test_binary(stripped=True)``).
What the run sees: the system directories read-only, the run tree read-only (a judge's holds
no ``.go`` file: the binary needs no source, and a test cannot read production as data), the
binary read-only, and its own output directory writable (the report, ``HOME``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.frameworks.trees import link_tree
from bench.isolation import NOBODY, SYSTEM_DIRS, IsolationError, bwrap_etc_args, bwrap_path

SOURCE_SUFFIXES = (".go", ".s", ".c", ".h")
MODULE_FILES = ("go.mod", "go.sum")


def run_tree(source: Path, target: Path) -> Path:
    """The tree a verdict run sees: ``source`` linked, less its Go source and module files outside
    ``testdata`` (fixtures and features stay). The judge runs every verdict here, and the builder
    confirms its kills here too: a kill that needs the source on disk (coddy-agent's autocomplete
    lists the files of its directory, so a mutant that completes every word kills only beside
    ``.go`` files) is one no prediction can make."""
    link_tree(source, target, None)
    for path in list(target.rglob("*")):
        rel = path.relative_to(target)
        if path.is_file() and "testdata" not in rel.parts[:-1] and (
                path.suffix in SOURCE_SUFFIXES or path.name in MODULE_FILES):
            path.unlink()
    return target


Wrap = Callable[[list[str], Path, Path], list[str]]  # (argv, cwd, output dir) -> the sandboxed argv


def sandboxed(tree: Path, binary: Path) -> Wrap:
    """A ``runner.run_scenario(wrap=...)`` that runs ``binary`` in ``tree`` inside bubblewrap."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise IsolationError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")

    def wrap(argv: list[str], cwd: Path, out_dir: Path) -> list[str]:
        args = [bwrap, "--die-with-parent", "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
                "--gid", str(NOBODY), "--cap-drop", "ALL", "--new-session"]
        for directory in SYSTEM_DIRS:
            args += ["--ro-bind-try", directory, directory]
        args += bwrap_etc_args()
        # no --proc: nothing of the process's own memory or executable is reachable by path
        args += ["--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
                 "--ro-bind", str(tree.resolve()), str(tree.resolve()),
                 "--ro-bind", str(binary.resolve()), str(binary.resolve()),
                 "--bind", str(out_dir.resolve()), str(out_dir.resolve()),
                 "--chdir", str(cwd.resolve()), "--"]
        return args + argv

    return wrap


__all__ = ["run_tree", "sandboxed"]
