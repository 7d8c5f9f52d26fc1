"""A generation's writable workspace and the diff that collects the test it wrote.

The baseline lives in a git repository whose ``.git`` directory is OUTSIDE the workspace
(git history is one of the things a sandbox must not expose), committed before the
agent starts. The diff sorts every changed path: Python files under the features
directory are the test (kept); anything else the agent changed — production code,
feature files, the hooks, fixtures — is discarded and reported; bytecode caches and the
agents' own chat logs are ignored.

Collecting never follows a link: the diff runs on the host, as root, so a link an agent
planted (``features/steps/x.py -> /etc/shadow``, or ``features/steps -> /``) would put host
files into its prediction. Links, fifos, sockets and devices are discarded with their
reason and never opened; test files are read through directory descriptors opened with
O_NOFOLLOW, one component at a time; a test file must be UTF-8 and at most 1 MiB.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

import git

from bench.frameworks.protocol import TestAreaSpec
from bench.tree_rules import BYTECODE_DIRS, INSTALLED_PACKAGES, TOOL_CACHES
from harness.sandbox.base import SandboxError, WorkspaceDiff

# Files agents leave behind that are neither test nor production: bytecode, installed packages,
# tool caches, and the agents' own state. Not the whole NOT_PROJECT_CONTENT: the git directory
# lives outside the work tree, and anything else an agent writes (a venv, build/) is sorted
# by the diff into kept or discarded, as it always was.
_AGENT_STATE = {".aider.tags.cache.v4", ".codex", ".claude", ".openhands", ".openhands-state", ".cache", ".config",
                ".local"}
_IGNORED_PARTS = BYTECODE_DIRS | INSTALLED_PACKAGES | TOOL_CACHES | _AGENT_STATE
_IGNORED_PREFIXES = (".aider",)
_IGNORED_SUFFIXES = (".pyc", ".pyo", ".orig", ".rej", ".swp")

# A test file is source text: anything larger is not one (and must not fill our memory).
MAX_TEST_FILE_BYTES = 1 << 20
LINK_REASON = "symbolic link: not collected (links are never followed)"


class Workspace:
    """``root`` is what the sandbox sees at /workspace; ``git_dir`` stays outside it."""

    def __init__(self, root: Path, git_dir: Path, features_dir: str, area: TestAreaSpec) -> None:
        self.root = root
        self.git_dir = git_dir
        self.features_dir = features_dir.rstrip("/")
        # where test code lives (the framework's test area): a changed path is collected exactly
        # when the evaluator's submission check would admit it
        self.area = area
        # every git command names both directories: nothing in the work tree points at the history
        self.git = git.Git(str(root))
        self.git.update_environment(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(root),
                                    GIT_AUTHOR_NAME="req2test", GIT_AUTHOR_EMAIL="req2test@localhost",
                                    GIT_COMMITTER_NAME="req2test", GIT_COMMITTER_EMAIL="req2test@localhost")

    @classmethod
    def create(cls, source: Path, root: Path, git_dir: Path, features_dir: str,
               area: TestAreaSpec, withheld: tuple[str, ...] = ()) -> Workspace:
        """Copy ``source`` (a view) to ``root``, less the ``withheld`` files, and commit it as the baseline."""
        if root.exists() and any(root.iterdir()):
            raise SandboxError(f"workspace {root} is not empty")
        shutil.copytree(source, root, symlinks=True, dirs_exist_ok=True)
        for rel in withheld:
            target = root / rel
            if target.is_file() or target.is_symlink():
                target.unlink()  # before the baseline: the withheld file is simply not part of the view
        git_dir.mkdir(parents=True, exist_ok=True)
        workspace = cls(root, git_dir, features_dir, area)
        workspace.git.init("-q")
        workspace.git.config("core.autocrlf", "false")
        workspace.git.add("-A", "--force")
        workspace.git.commit("-q", "--allow-empty", "-m", "view baseline")
        return workspace

    def diff(self) -> WorkspaceDiff:
        if not (self.git_dir / "HEAD").is_file():
            raise SandboxError("workspace has no baseline")
        out = WorkspaceDiff()
        for kind, path in self._changes():
            if _ignored(path):
                out.ignored.append(path)
                continue
            is_test = not self.area.rejections({path: ""})  # the submission check, path by path
            if kind == "D":
                out.discarded[path] = "deleted a file of the view (the deletion is not kept)"
                continue
            try:
                # every changed path is checked, even one discarded anyway: a link or a fifo is
                # reported as such, and only a regular file inside the workspace is ever read
                text = collect_file(self.root, path, read=is_test)
            except NotCollected as exc:
                out.discarded[path] = exc.reason
                continue
            if is_test:
                out.test_files[path] = text or ""
            elif path.startswith(self.features_dir + "/") or any(path.startswith(d + "/") for d in self.area.dirs):
                out.discarded[path] = "not test code (feature files, hooks and fixtures are fixed)"
            else:
                out.discarded[path] = "outside the test area (production or project files)"
        # git skips fifos, sockets and devices without a word: find them ourselves
        for path, what in _special_files(self.root):
            if _ignored(path):
                out.ignored.append(path)
            elif path not in out.discarded:
                out.discarded[path] = f"not a regular file ({what}): not collected"
        return out

    def production_sources(self, production: list[str]) -> tuple[dict[str, str], dict[str, str]]:
        """The reverse task's prediction: every Python source under the production paths as the agent
        left it (changed or not), read without following links; (files, discarded path → reason)."""
        from bench.suite.reverse import production_sources

        files: dict[str, str] = {}
        discarded: dict[str, str] = {}
        for path in production_sources(self.root, production):
            try:
                files[path] = collect_file(self.root, path) or ""
            except NotCollected as exc:
                discarded[path] = exc.reason
        return files, discarded

    def _changes(self) -> list[tuple[str, str]]:
        """(git status letter, path) of everything that differs from the baseline. git records a
        symbolic link as a link (its target text), never what it points to."""
        self.git.add("-A", "--force")
        try:
            status = self.git.diff("--cached", "--name-status", "--no-renames", "-z", "HEAD")
        finally:
            self.git.reset("-q")  # unstage: the diff must not change what the next diff sees
        fields = [f for f in status.split("\0") if f]
        return list(zip(fields[0::2], fields[1::2]))


class NotCollected(Exception):
    """A changed path that is not collected, and why (one line, for the prediction's report)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def collect_file(root: Path, path: str, read: bool = True, max_bytes: int = MAX_TEST_FILE_BYTES) -> str | None:
    """The text of the regular file ``path`` (relative to ``root``), read without following any
    link: every directory on the way is opened with O_NOFOLLOW relative to the one before, so a
    component swapped for a link (even after git looked) cannot lead the read outside ``root``.
    With ``read=False`` only checks that it is a regular file (any size). Raises
    :class:`NotCollected` with the reason otherwise."""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise NotCollected("not a plain relative path: not collected")
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            _check_directory(part, dir_fd)
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError as exc:  # ELOOP: swapped for a link since the check
                raise NotCollected(_component_reason(part, exc)) from None
            os.close(dir_fd)
            dir_fd = next_fd
        return _read_regular(parts[-1], dir_fd, read, max_bytes)
    finally:
        os.close(dir_fd)


def _check_directory(part: str, dir_fd: int) -> None:
    try:
        info = os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        raise NotCollected(_component_reason(part, exc)) from None
    if stat.S_ISLNK(info.st_mode):
        raise NotCollected(f"{part!r} on its path is a symbolic link: not collected (links are never followed)")
    if not stat.S_ISDIR(info.st_mode):
        raise NotCollected(f"{part!r} on its path is not a directory ({_what(info.st_mode)}): not collected")


def _component_reason(part: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"{part!r} on its path is a symbolic link: not collected (links are never followed)"
    if exc.errno == errno.ENOTDIR:
        return f"{part!r} on its path is not a directory: not collected"
    return f"{part!r} on its path is unreadable ({exc.strerror}): not collected"


def _read_regular(name: str, dir_fd: int, read: bool, max_bytes: int) -> str | None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        raise NotCollected(f"unreadable ({exc.strerror}): not collected") from None
    if stat.S_ISLNK(info.st_mode):
        raise NotCollected(LINK_REASON)
    if not stat.S_ISREG(info.st_mode):
        raise NotCollected(f"not a regular file ({_what(info.st_mode)}): not collected")
    if not read:
        return None
    if info.st_size > max_bytes:
        raise NotCollected(f"larger than {_size(max_bytes)} ({info.st_size} bytes): not collected")
    # O_NOFOLLOW: a link swapped in after the check fails (ELOOP) instead of being followed;
    # O_NONBLOCK: a fifo swapped in cannot hang us; fstat proves we opened what we checked
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise NotCollected(LINK_REASON if exc.errno == errno.ELOOP
                           else f"unreadable ({exc.strerror}): not collected") from None
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise NotCollected("replaced while it was collected: not collected")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotCollected(f"larger than {_size(max_bytes)}: not collected")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotCollected(f"not UTF-8 text (byte {exc.start}): not collected") from None


def _special_files(root: Path) -> list[tuple[str, str]]:
    """(path, what) of every fifo, socket and device under ``root``; links are not followed."""
    found: list[tuple[str, str]] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            entries = list(os.scandir(root / rel if rel else root))
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                pending.append(path)
            elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                found.append((path, _what(mode)))
    return sorted(found)


def _what(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "special file"


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n} bytes"


def _ignored(path: str) -> bool:
    parts = Path(path).parts
    return (any(p in _IGNORED_PARTS for p in parts) or any(p.startswith(_IGNORED_PREFIXES) for p in parts)
            or path.endswith(_IGNORED_SUFFIXES))
