"""Process-count and memory limits for sandboxed commands: a re-export of ``bench.cgroups``.

The cgroup code lives in ``bench`` because the evaluator needs it too (it runs agent-written
code), and ``bench`` never imports ``harness``. ``PidsLimit`` stays for callers that only
want the process-count limit.
"""

from __future__ import annotations

from pathlib import Path

from bench.cgroups import SandboxCgroup

__all__ = ["PidsLimit", "SandboxCgroup"]


class PidsLimit(SandboxCgroup):
    """Only the pids controller: at most ``max_pids`` processes at once (fork bombs)."""

    def __init__(self, max_pids: int) -> None:
        super().__init__(memory_mb=None, max_pids=max_pids)

    @property
    def path(self) -> Path | None:
        return self.paths.get("pids")
