"""The default sandbox: bubblewrap, one fresh namespace set per command.

Policy (DESIGN.md "Sandbox", and the evaluator's recipe in ``bench.isolation``): only the
system directories, the runtime environment and the policy's extra paths are visible,
read-only; ``/etc`` is a minimal one (``bench.minimal_etc``: no shadow, hostname or
machine-id of the host); the workspace at /workspace is the only writable place; tmpfs
over /tmp and /run; every namespace unshared (no network at all); uid 65534 with no
capabilities; the whole tree dies with the command (pid namespace + ``--die-with-parent``),
and a cgroup caps the number of processes and the memory of the whole sandbox (a command
pushed over it is killed by the kernel, and the result says so). The interpreter's own
site-packages are covered by an empty tmpfs, so nothing installed on the host (e.g. a copy
of the project) is visible.

Egress, when the policy allows any: an allowlisting proxy outside listens on a unix
socket bound into the sandbox; a forwarder inside listens on 127.0.0.1:3128 and the
proxy variables point at it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Self

from bench.isolation import SYSTEM_DIRS, bwrap_path
from bench.minimal_etc import SANDBOX_HOSTNAME, bwrap_etc_args
from harness.runtime import Runtime
from harness.sandbox.base import (
    WORKSPACE,
    ExecResult,
    HostWorkspaceFiles,
    SandboxError,
    SandboxPolicy,
    SandboxReport,
    WallClock,
)
from harness.sandbox.limits import SandboxCgroup
from harness.sandbox.workspace import Workspace

if TYPE_CHECKING:
    from harness.sandbox.egress import EgressProxy  # imported when a policy allows egress

NOBODY = 65534
EGRESS_DIR = "/run/req2test-egress"  # inside: the proxy socket and the forwarder script
FORWARDER_PORT = 3128
_MAX_OUTPUT = 1 << 20  # per stream: an agent's `cat` of a huge file must not exhaust memory


class BwrapSandbox(HostWorkspaceFiles):
    kind = "bwrap"

    def __init__(self, policy: SandboxPolicy, workspace: Workspace, runtime: Runtime | None = None,
                 readonly: list[Path] | None = None) -> None:
        self.policy = policy
        self.workspace_handle = workspace
        self.workspace = workspace.root
        self.runtime = runtime
        self.readonly = [Path(p) for p in (readonly or [])] + [Path(p) for p in policy.readonly_binds]
        self.clock = WallClock(policy.wall_clock_seconds)
        self.cgroup: SandboxCgroup | None = None
        self.oom_kills = 0
        self.proxy: EgressProxy | None = None
        self.notes: list[str] = []
        self._state_dir: Path | None = None
        self._closed = False

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        if bwrap_path() is None:
            raise SandboxError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
        self.clock = WallClock(self.policy.wall_clock_seconds)
        # one cgroup for the whole sandbox: its commands share the policy's memory
        self.cgroup = SandboxCgroup(memory_mb=self.policy.memory_mb, max_pids=self.policy.pids_limit)
        self.notes.extend(self.cgroup.notes)
        self._state_dir = Path(tempfile.mkdtemp(prefix="req2test-sbx-"))
        if self.policy.egress_allow:
            from harness.sandbox.egress import FORWARDER_PATH, EgressProxy

            egress_dir = self._state_dir / "egress"
            egress_dir.mkdir()
            (egress_dir / "forwarder.py").write_bytes(FORWARDER_PATH.read_bytes())
            self.proxy = EgressProxy(self.policy.egress_allow, egress_dir / "egress.sock")
            self.proxy.start()
            os.chmod(egress_dir, 0o755)
            os.chmod(egress_dir / "egress.sock", 0o777)  # uid 65534 must be able to connect

    def close(self) -> SandboxReport:
        if not self._closed:
            self._closed = True
            if self.cgroup is not None:
                self.cgroup.close()
            if self.proxy is not None:
                self.proxy.stop()
            if self._state_dir is not None:
                import shutil

                shutil.rmtree(self._state_dir, ignore_errors=True)
        return SandboxReport(backend="bwrap", policy=self.policy.name, isolated=True,
                             wall_clock_seconds=self.policy.wall_clock_seconds,
                             used_seconds=round(self.clock.used, 3), egress_allow=list(self.policy.egress_allow),
                             egress=self.proxy.records() if self.proxy is not None else [], notes=self.notes,
                             oom_kills=self.oom_kills)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- commands
    def command_line(self, command: list[str], env: dict[str, str], cwd: str) -> list[str]:
        """The bwrap invocation for one command (public: the benchmark and the audit use it)."""
        args = [bwrap_path() or "bwrap", "--die-with-parent", "--unshare-all", "--unshare-user",
                "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL", "--new-session",
                "--hostname", SANDBOX_HOSTNAME, "--clearenv"]
        for directory in SYSTEM_DIRS:
            args += ["--ro-bind-try", directory, directory]
        args += bwrap_etc_args()
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
        if self.runtime is not None:
            for path in self.runtime.bind_paths:
                args += ["--ro-bind", str(path), str(path)]
            for site_dir in self.runtime.base_site_packages:
                args += ["--tmpfs", str(site_dir)]  # the host's installed packages stay invisible
        for path in self.readonly:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--bind", str(self.workspace), WORKSPACE]
        if self.proxy is not None and self._state_dir is not None:
            args += ["--ro-bind", str(self._state_dir / "egress"), EGRESS_DIR]
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", cwd, "--"]
        return args + command

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        path = "/usr/local/bin:/usr/bin:/bin"
        if self.runtime is not None:
            path = f"{self.runtime.venv / 'bin'}:{path}"
        out = {"PATH": path, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
        if self.proxy is not None:
            from harness.sandbox.egress import proxy_env

            out.update(proxy_env(FORWARDER_PORT))
        out.update(self.policy.env)
        out.update(env or {})
        return out

    def exec(self, command: list[str] | str, timeout: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult:
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if self._closed:
            return ExecResult(command=argv, exit_code=None, stdout="", stderr="", seconds=0.0,
                              refused="sandbox is closed")
        limit = self.clock.limit(timeout, self.policy.exec_timeout_seconds)
        if limit <= 0:
            return ExecResult(command=argv, exit_code=None, stdout="", stderr="", seconds=0.0,
                              refused=f"wall clock of {self.policy.wall_clock_seconds:g} s spent")
        inner = argv
        if self.proxy is not None:
            from harness.sandbox.egress import wrap_command

            # the forwarder must listen before the command can use the proxy
            python = str(self.runtime.python) if self.runtime is not None else "python3"
            inner = wrap_command(argv, python, f"{EGRESS_DIR}/egress.sock", FORWARDER_PORT,
                                 script=f"{EGRESS_DIR}/forwarder.py")
        full = self.command_line(inner, self._environment(env), cwd or WORKSPACE)
        started = time.monotonic()
        oom_before = 0
        if self.cgroup is not None:
            # join the cgroups from a shell that then becomes bwrap: every process of the
            # sandbox is inside, and Python can still spawn with vfork (a preexec_fn would
            # force a full fork of this process, ~20 ms)
            full = self.cgroup.wrap_command(full)
            oom_before = self.cgroup.oom_kills()
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc.pid)
            if self.cgroup is not None:
                self.cgroup.kill_all()
            stdout, stderr = proc.communicate()
        seconds = time.monotonic() - started
        oom_killed = self.cgroup is not None and self.cgroup.oom_kills() > oom_before
        if oom_killed:
            self.oom_kills += 1
            self.notes.append(f"out of memory: {_short(argv)} was killed at the {self.policy.memory_mb} MiB "
                              f"memory limit")
        return ExecResult(command=argv, exit_code=None if timed_out else proc.returncode,
                          stdout=_text(stdout), stderr=_text(stderr), seconds=round(seconds, 4),
                          timed_out=timed_out, oom_killed=oom_killed)



def _text(data: bytes) -> str:
    if len(data) > _MAX_OUTPUT:
        data = data[:_MAX_OUTPUT] + b"\n[output truncated]"
    return data.decode("utf-8", errors="replace")


def _short(argv: list[str]) -> str:
    text = " ".join(argv)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _kill_tree(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # bwrap's session: its pid namespace dies with it
    except (ProcessLookupError, PermissionError):
        pass
