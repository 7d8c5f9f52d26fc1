"""Process-count limits for sandboxed commands (fork bombs), via the cgroup pids controller.

RLIMIT_NPROC does not bind root, and the sandboxes are started by root on CI; a cgroup
does. Both cgroup v1 (``/sys/fs/cgroup/pids``) and v2 (unified, ``pids`` enabled) work.
Where neither is writable the limit is reported as unavailable rather than pretended.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def _pids_root() -> Path | None:
    candidates = [Path("/sys/fs/cgroup/pids")]
    unified = Path("/sys/fs/cgroup")
    if (unified / "cgroup.controllers").is_file() and "pids" in (unified / "cgroup.controllers").read_text():
        candidates.append(unified)
    for root in candidates:
        if (root / "cgroup.procs").exists() and os.access(root, os.W_OK):
            return root
    return None


class PidsLimit:
    """One cgroup per sandbox; each command's process joins it before it becomes bwrap."""

    def __init__(self, max_pids: int) -> None:
        self.max_pids = max_pids
        self.path: Path | None = None
        root = _pids_root()
        if root is None:
            self.reason = "no writable cgroup pids controller (not root?): process count not limited"
            return
        path = root / f"req2test-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(max_pids))
        except OSError as exc:
            self.reason = f"cgroup pids controller unusable: {exc.strerror}"
            shutil.rmtree(path, ignore_errors=True)
            return
        self.path = path
        self.reason = ""

    @property
    def active(self) -> bool:
        return self.path is not None

    @property
    def procs_file(self) -> Path:
        """Write a pid here to move that process (and its future children) into the cgroup."""
        if self.path is None:
            raise RuntimeError("no cgroup")
        return self.path / "cgroup.procs"

    def peak_refused(self) -> int:
        """How many forks the limit refused so far (v1 and v2: ``pids.events`` max count)."""
        if self.path is None:
            return 0
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        except OSError:
            pass
        return 0

    def kill_all(self) -> None:
        if self.path is None:
            return
        try:
            for pid in (self.path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, PermissionError):
                    pass
        except OSError:
            pass

    def close(self) -> None:
        if self.path is None:
            return
        self.kill_all()
        try:
            self.path.rmdir()
        except OSError:
            pass  # processes still exiting; an empty cgroup is harmless
        self.path = None
