"""No isolation: commands run as the caller, in the workspace directory.

Only for debugging an agent. It refuses to start unless the policy opts in
(``allow_local = true``), and every report it writes says ``isolated: false``; a run
that used it cannot be submitted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Self

from harness.sandbox.base import (
    ExecResult,
    HostWorkspaceFiles,
    SandboxError,
    SandboxPolicy,
    SandboxReport,
    WallClock,
    workspace_path,
)
from harness.sandbox.workspace import Workspace

NOT_ISOLATED = "NOT ISOLATED: the local backend ran commands with the caller's files and network"


class LocalSandbox(HostWorkspaceFiles):
    kind = "local"

    def __init__(self, policy: SandboxPolicy, workspace: Workspace, python_bin: Path | None = None) -> None:
        self.policy = policy
        self.workspace_handle = workspace
        self.workspace = workspace.root
        self.python_bin = python_bin
        self.clock = WallClock(policy.wall_clock_seconds)

    def start(self) -> None:
        if not self.policy.allow_local:
            raise SandboxError("the local backend has no isolation; it runs only with a policy that sets "
                               "allow_local = true (e.g. --sandbox local)")
        self.clock = WallClock(self.policy.wall_clock_seconds)

    def close(self) -> SandboxReport:
        return SandboxReport(backend="local", policy=self.policy.name, isolated=False,
                             wall_clock_seconds=self.policy.wall_clock_seconds, used_seconds=round(self.clock.used, 3),
                             egress_allow=[], notes=[NOT_ISOLATED])

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exec(self, command: list[str] | str, timeout: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult:
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        limit = self.clock.limit(timeout, self.policy.exec_timeout_seconds)
        if limit <= 0:
            return ExecResult(command=argv, exit_code=None, stdout="", stderr="", seconds=0.0,
                              refused=f"wall clock of {self.policy.wall_clock_seconds:g} s spent")
        environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **self.policy.env, **(env or {}))
        if self.python_bin is not None:
            environment["PATH"] = f"{self.python_bin}:{environment.get('PATH', '')}"
        # a path under /workspace means the workspace here too
        workdir = workspace_path(self.workspace, cwd) if cwd else self.workspace
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=workdir, env=environment, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            timed_out = True
        return ExecResult(command=argv, exit_code=None if timed_out else proc.returncode,
                          stdout=stdout.decode("utf-8", "replace"), stderr=stderr.decode("utf-8", "replace"),
                          seconds=round(time.monotonic() - started, 4), timed_out=timed_out)
