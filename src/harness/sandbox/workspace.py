"""A generation's writable workspace and the diff that collects the test it wrote.

The baseline lives in a git repository whose ``.git`` directory is OUTSIDE the workspace
(git history is one of the things a sandbox must not expose), committed before the
agent starts. The diff sorts every changed path: Python files under the features
directory are the test (kept); anything else the agent changed — production code,
feature files, the hooks, fixtures — is discarded and reported; bytecode caches and the
agents' own chat logs are ignored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from harness.sandbox.base import SandboxError, WorkspaceDiff

# Files agents leave behind that are neither test nor production.
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".aider.tags.cache.v4",
                  ".codex", ".claude", ".openhands", ".openhands-state", ".cache", ".config", ".local"}
_IGNORED_PREFIXES = (".aider",)
_IGNORED_SUFFIXES = (".pyc", ".pyo", ".orig", ".rej", ".swp")



class Workspace:
    """``root`` is what the sandbox sees at /workspace; ``git_dir`` stays outside it."""

    def __init__(self, root: Path, git_dir: Path, features_dir: str) -> None:
        self.root = root
        self.git_dir = git_dir
        self.features_dir = features_dir.rstrip("/")
        # every git command names both directories: nothing in the work tree points at the history
        self.git = git.Git(str(root))
        self.git.update_environment(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(root),
                                    GIT_AUTHOR_NAME="req2test", GIT_AUTHOR_EMAIL="req2test@localhost",
                                    GIT_COMMITTER_NAME="req2test", GIT_COMMITTER_EMAIL="req2test@localhost")

    @classmethod
    def create(cls, source: Path, root: Path, git_dir: Path, features_dir: str) -> "Workspace":
        """Copy ``source`` (a view) to ``root`` and commit it as the baseline."""
        if root.exists() and any(root.iterdir()):
            raise SandboxError(f"workspace {root} is not empty")
        shutil.copytree(source, root, symlinks=True, dirs_exist_ok=True)
        git_dir.mkdir(parents=True, exist_ok=True)
        workspace = cls(root, git_dir, features_dir)
        workspace.git.init("-q")
        workspace.git.config("core.autocrlf", "false")
        workspace.git.add("-A", "--force")
        workspace.git.commit("-q", "--allow-empty", "-m", "view baseline")
        return workspace

    def diff(self) -> WorkspaceDiff:
        if not (self.git_dir / "HEAD").is_file():
            raise SandboxError("workspace has no baseline")
        self.git.add("-A", "--force")
        out = WorkspaceDiff()
        status = self.git.diff("--cached", "--name-status", "--no-renames", "-z", "HEAD")
        fields = [f for f in status.split("\0") if f]
        for kind, path in zip(fields[0::2], fields[1::2]):
            if _ignored(path):
                out.ignored.append(path)
                continue
            is_test = path.endswith(".py") and path.startswith(self.features_dir + "/") \
                and Path(path).name != "environment.py"
            if kind == "D":
                out.discarded[path] = "deleted a file of the view (the deletion is not kept)"
            elif is_test:
                try:
                    out.test_files[path] = (self.root / path).read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError) as exc:
                    out.discarded[path] = f"unreadable test file: {exc}"
            elif path.startswith(self.features_dir + "/"):
                out.discarded[path] = "not test code (feature files, hooks and fixtures are fixed)"
            else:
                out.discarded[path] = "outside the test area (production or project files)"
        self.git.reset("-q")  # unstage: the diff must not change what the next diff sees
        return out


def _ignored(path: str) -> bool:
    parts = Path(path).parts
    return (any(p in _IGNORED_PARTS for p in parts) or any(p.startswith(_IGNORED_PREFIXES) for p in parts)
            or path.endswith(_IGNORED_SUFFIXES))
