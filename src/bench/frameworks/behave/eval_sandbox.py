"""Start the evaluation worker (``eval_worker.py``) in its own sandbox and talk to it.

One sandbox per instance (and one per fresh-process replay): its disk holds the
instance's workspace (writable; production re-mounted read-only) and the pristine copy
(read-only), the interpreter and its packages read-only, a private /tmp, no network, no
other instance's files, an unprivileged uid without capabilities, a new pid namespace
(killing the sandbox kills everything a test left running) and, where the machine lets
us, a cgroup with memory and process-count limits. The environment is rebuilt from
nothing, so no credential of the caller reaches the test.

Every call has a deadline: a worker that a test stopped, killed or flooded is *lost*
(``WorkerLost``), and the verdict process decides whose fault that was.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import TypeAdapter, ValidationError

from bench import SOURCE_ROOT, stopping
from bench.frameworks.behave import EVAL_WORKER_MODULE
from bench.frameworks.behave.evalspace import InstanceSpace
from bench.frameworks.messages import EvalInit, EvalInitReply, RunClaim, RunsReply, RunsRequest, TraceRequest, Variant
from bench.isolation import python_dirs, wrap

_SRC_DIR = SOURCE_ROOT
MAX_REPLY_BYTES = 64 * 1024 * 1024


class WorkerLost(RuntimeError):
    """The sandboxed worker died, stalled or broke the protocol."""


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 4096  # the whole sandbox (cgroup), where cgroups are writable
    max_pids: int = 256
    file_size_mb: int = 512  # any single file a test writes (RLIMIT_FSIZE)
    address_space_mb: int = 8192  # each process (RLIMIT_AS): a runaway allocation fails fast

    def child_limits(self) -> dict[str, int]:
        return {"fsize": self.file_size_mb << 20, "as": self.address_space_mb << 20, "core": 0}


@dataclass
class EvalSandbox:
    space: InstanceSpace
    isolation: str  # "bwrap" | "none"
    warm: bool  # import production once in the worker (False: the run child imports it from disk)
    preimport: list[str] = field(default_factory=list)  # a cold worker's non-production imports
    untrusted_production: bool = False  # the reverse task: production is the prediction (bench.suite.reverse)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    python: str = sys.executable
    proc: subprocess.Popen[bytes] | None = None
    init_reply: EvalInitReply | dict[str, Any] = field(default_factory=dict)
    _buffer: bytes = b""
    _cgroup: Any = None

    def scratch(self) -> list[str]:
        # without a sandbox the scratch dir is the instance's own, never the host's /tmp
        return ["/tmp", "/dev/shm"] if self.isolation == "bwrap" else [str(self.space.workspace.parent / "tmp")]

    def environment(self) -> dict[str, str]:
        """The worker's whole environment, rebuilt from nothing (no credential of the caller)."""
        scratch = self.scratch()[0]
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": f"{scratch}/home", "TMPDIR": scratch,
                "LANG": "C.UTF-8", "PYTHONPATH": _SRC_DIR, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}

    def sandboxed(self, command: list[str]) -> list[str]:
        """``command`` under the bubblewrap arguments the worker runs with (what its disk holds:
        tests/integration/readable_files.py runs a walker with exactly these)."""
        ws = self.space.workspace
        return wrap(command, writable=[ws], readonly=[self.space.pristine, *self.space.production_dirs], cwd=ws)

    def start(self, prediction_files: list[str], timeout: float = 120.0) -> EvalInitReply:
        base = self.space.base
        ws = self.space.workspace
        isolated = self.isolation == "bwrap"
        scratch = self.scratch()
        Path(scratch[0]).mkdir(exist_ok=True) if not isolated else None
        env = self.environment()
        command = [self.python, "-m", EVAL_WORKER_MODULE]
        stopping.check()  # an interrupted run starts no sandbox (not even a lost worker's control)
        if self.isolation == "bwrap":
            command = self._in_cgroup(self.sandboxed(command))
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=str(ws), start_new_session=True)
        request: EvalInit = {"op": "init", "root": str(ws), "features_dir": str(ws / base.features_dir),
                   "python_path": [str(ws / p) for p in base.python_path],
                   "production_dirs": [str(p) for p in self.space.production_dirs],
                   "import_packages": sorted({Path(p).name.removesuffix(".py") for p in base.production})
                   if self.warm else [],
                   "preload": False, "pristine": str(self.space.pristine), "preimport": self.preimport,
                   "fixed": [str(p) for p in self.space.production_dirs],
                   "prediction_files": [str(ws / rel) for rel in prediction_files],
                   "isolated": isolated, "scratch": scratch,
                   "mounts": [str(d) for d in python_dirs(self.python)] if isolated else [],
                   "limits": self.limits.child_limits(), "untrusted_production": self.untrusted_production}
        reply = self.call(request, timeout)
        if "error" in reply:
            raise WorkerLost(f"worker did not start: {str(reply['error'])[:500]}")
        self.init_reply = _validated(_INIT_REPLY, reply, "init")
        return self.init_reply

    def trace(self, feature: str, lines: list[int], timeout: float) -> RunClaim:
        """The coverage run (never a verdict run)."""
        request: TraceRequest = {"op": "trace", "feature": feature, "lines": lines, "timeout": timeout}
        return _validated(_CLAIM, self._served(request, timeout + 30), "trace")

    def runs(self, feature: str, lines: list[int], limit: float, variants: list[Variant],
             batched: bool = False) -> RunsReply:
        """Verdict runs in the order given, each in its own child from the pristine state
        (``batched``: several per child, for reproductions only)."""
        request: RunsRequest = {"op": "runs", "feature": feature, "lines": lines, "limit": limit,
                                "variants": variants}
        if batched:
            request["batched"] = True
        return _validated(_RUNS_REPLY, self._served(request, limit * (len(variants) + 2) + 60), "runs")

    def _served(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        reply = self.call(dict(request), timeout)
        if "error" in reply:
            raise WorkerLost(f"worker failed the {request['op']} request: {str(reply['error'])[:300]}")
        return reply

    def _in_cgroup(self, command: list[str]) -> list[str]:
        try:
            from bench.cgroups import SandboxCgroup
        except ImportError:
            return command
        cgroup = SandboxCgroup(memory_mb=self.limits.memory_mb, max_pids=self.limits.max_pids)
        self._cgroup = cgroup
        return cgroup.wrap_command(command)

    def call(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.stdin is None:
            raise WorkerLost("worker not started")
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerLost(f"worker gone ({self._status()}): {exc}") from exc
        line = self._readline(time.monotonic() + timeout)
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise WorkerLost("worker broke the protocol (unreadable reply)") from exc
        if not isinstance(reply, dict):
            raise WorkerLost("worker broke the protocol (reply is not an object)")
        return reply

    def _readline(self, deadline: float) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLost("worker did not answer in time (stalled or stopped)")
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerLost(f"worker exited ({self._status()})")
            self._buffer += chunk
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise WorkerLost("worker reply too large")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _status(self) -> str:
        if self.proc is None:
            return "not started"
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    def oom_killed(self) -> bool:
        cgroup = self._cgroup
        try:
            return bool(cgroup is not None and cgroup.oom_kills())
        except (OSError, AttributeError):
            return False

    def close(self) -> None:
        if self.proc is not None:
            try:
                if self.proc.poll() is None and self.proc.stdin is not None:
                    self.proc.stdin.write(b'{"op": "quit"}\n')
                    self.proc.stdin.flush()
                    self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, 9)  # bwrap and, through its pid namespace, all inside
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        if self._cgroup is not None:
            self._cgroup.close()
            self._cgroup = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_INIT_REPLY = TypeAdapter(EvalInitReply)
_CLAIM = TypeAdapter(RunClaim)
_RUNS_REPLY = TypeAdapter(RunsReply)
_T = TypeVar("_T")


def _validated(adapter: TypeAdapter[_T], reply: dict[str, Any], what: str) -> _T:
    """The reply as its type says, or a lost worker: strict, so nothing is coerced (a
    worker that answers ``"exit": 1`` or ``"elapsed": "0.1"`` is broken, not lenient)."""
    try:
        return adapter.validate_python(reply, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise WorkerLost(f"worker broke the protocol ({what} reply: {where}: {first['msg']})") from None
