"""The one sandbox interface every backend implements, and its typed records.

Modelled on inspect_ai's SandboxEnvironment and mini-swe-agent's Environment: a sandbox
is a workspace directory on the host, visible inside at ``WORKSPACE`` as the only
writable place, plus ``exec`` of one command at a time. Each ``exec`` is its own
process tree; nothing a command starts outlives it (files persist, processes do not).
The sandbox's wall clock (policy, 3,600 s by default) bounds the sum of everything:
once spent, ``exec`` refuses and reports why.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

# Where the workspace appears inside every isolating backend.
WORKSPACE = "/workspace"



def _registered_backend(name: str) -> str:
    """``name`` if ``harness.sandbox.backends.REGISTRY`` knows it (built in, registered or installed)."""
    from harness.sandbox.backends import REGISTRY  # it imports this module

    if name not in REGISTRY:
        raise PydanticCustomError("unknown_sandbox_backend", "{message}", {
            "message": f"no sandbox backend named {name!r}; available: {', '.join(REGISTRY.available())}"})
    return name


# A sandbox backend's name: any the registry resolves (bwrap, docker, local, or a third party's).
BackendName = Annotated[str, AfterValidator(_registered_backend)]


class SandboxError(Exception):
    """A sandbox cannot be created or used; one line, says what to do."""


class SandboxPolicy(BaseModel):
    """A named policy from ``sandboxes/<name>.toml`` (or the user's own file)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    backend: BackendName = "bwrap"
    wall_clock_seconds: float = Field(3600.0, gt=0, description="budget of the whole sandbox")
    exec_timeout_seconds: float = Field(600.0, gt=0, description="default limit of one command")
    egress_allow: list[str] = Field(
        default_factory=list,
        description="host:port pairs the sandbox may reach through the proxy (the model provider); "
        "everything else is refused and logged")
    readonly_binds: list[str] = Field(default_factory=list,
                                      description="extra host paths visible read-only at the same path")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment inside")
    pids_limit: int = Field(256, gt=0, description="processes a command may hold at once (fork bombs)")
    memory_mb: int = Field(4096, gt=0)
    image: str = Field("req2test-runtime:offline", description="docker backend: the image to run")
    allow_local: bool = Field(False, description="the local backend refuses to start unless this is set")


class ExecResult(BaseModel):
    command: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    refused: str | None = Field(None, description="why the command did not run (wall clock spent, closed)")
    oom_killed: bool = Field(False, description="the kernel killed a process of it at the sandbox's memory limit")


class EgressRecord(BaseModel):
    """One request through the egress proxy."""

    time: float
    target: str = Field(description="host:port asked for")
    method: str
    allowed: bool
    reason: str = ""


class WorkspaceDiff(BaseModel):
    """What a generation changed in its workspace, sorted into what we keep and what we drop."""

    test_files: dict[str, str] = Field(default_factory=dict, description="kept: test-side files, path → text")
    discarded: dict[str, str] = Field(default_factory=dict, description="dropped: path → reason")
    ignored: list[str] = Field(default_factory=list, description="bytecode caches, agent chat logs")


class SandboxReport(BaseModel):
    """Recorded with every run: what isolated it and what it tried to reach."""

    backend: BackendName
    policy: str
    isolated: bool
    wall_clock_seconds: float
    used_seconds: float
    egress_allow: list[str]
    egress: list[EgressRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    oom_kills: int = Field(0, description="commands in which a process was killed at the memory limit")


@runtime_checkable
class Sandbox(Protocol):
    policy: SandboxPolicy
    workspace: Path

    def start(self) -> None: ...

    def exec(self, command: list[str] | str, timeout: float | None = None,
             env: dict[str, str] | None = None, cwd: str | None = None) -> ExecResult: ...

    def read_file(self, path: str) -> str: ...

    def write_file(self, path: str, content: str) -> None: ...

    def diff(self) -> WorkspaceDiff: ...

    def close(self) -> SandboxReport: ...


def workspace_path(workspace: Path, path: str) -> Path:
    """The host path of ``path`` (relative, or under /workspace); refuses anything outside.

    Symlinks are resolved first, so a link an agent planted cannot make the host read or
    write outside the workspace."""
    root = workspace.resolve()
    inside = path == WORKSPACE or path.startswith(WORKSPACE + "/")
    rel = path[len(WORKSPACE):].lstrip("/") if inside else path
    if rel.startswith("/"):
        raise SandboxError(f"{path} is outside {WORKSPACE}; only the workspace is reachable")
    host = (root / rel).resolve()
    if host != root and not host.is_relative_to(root):
        raise SandboxError(f"{path} escapes the workspace")
    return host


def regular_or_absent(host: Path, path: str) -> Path:
    """``host`` unless it exists as something other than a regular file: opening a fifo an agent
    made would hang the harness, and a device is nobody's source text."""
    if host.exists() and not host.is_file():
        raise SandboxError(f"{path} is not a regular file")
    return host


def read_workspace_file(workspace: Path, path: str) -> str:
    host = regular_or_absent(workspace_path(workspace, path), path)
    try:
        return host.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SandboxError(f"cannot read {path}: {exc.strerror}") from None


class HostWorkspaceFiles:
    """File access and diff through the host side of the workspace (bwrap and local backends)."""

    workspace: Path
    workspace_handle: Any  # harness.sandbox.workspace.Workspace

    def read_file(self, path: str) -> str:
        return read_workspace_file(self.workspace, path)

    def write_file(self, path: str, content: str) -> None:
        target = regular_or_absent(workspace_path(self.workspace, path), path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def diff(self) -> WorkspaceDiff:
        return self.workspace_handle.diff()


class WallClock:
    """The sandbox's budget: each command gets at most what is left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    @property
    def used(self) -> float:
        return time.monotonic() - self.started

    @property
    def remaining(self) -> float:
        return max(0.0, self.seconds - self.used)

    def limit(self, requested: float | None, default: float) -> float:
        return min(requested if requested is not None else default, self.remaining)
