"""The ``docker`` sandbox backend: one long-lived, locked-down container per sandbox.

The container mirrors the evaluator's bubblewrap policy (``bench.isolation``): no network
at all (``network_mode="none"``; egress only through the proxy's unix socket), read-only
root, no capabilities, uid 65534, the host's system directories and Python prefix bound
read-only at their own paths, a minimal /etc (``bench.minimal_etc``, never the host's),
tmpfs on /tmp and /run, the workspace the only writable place. Every ``exec`` is its own
process tree: whatever it leaves running is killed when it returns, and its time limit is
enforced twice — ``timeout -s KILL`` inside, a watchdog outside that kills the tree (or
restarts the container) if that did not suffice.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import stat
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from bench.minimal_etc import docker_etc_binds
from harness.sandbox.base import (
    WORKSPACE,
    ExecResult,
    SandboxError,
    SandboxPolicy,
    SandboxReport,
    WallClock,
    WorkspaceDiff,
    read_workspace_file,
    regular_or_absent,
    workspace_path,
)
from harness.sandbox.dockerd import (
    FORBIDDEN_BINDS,
    RUNTIME_TAG,
    ensure_engine,
    ensure_runtime_image,
    host_layout,
)

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

    from harness.sandbox.egress import EgressProxy

# The proxy socket's directory is bound here (read-only; connecting to a socket needs no
# write access to its filesystem). Not under /run: that is a tmpfs. The directory, not the
# socket file, so a restarted proxy's new socket is still the one seen inside; the socket
# is at f"{EGRESS_DIR}/{proxy_socket.name}" and exported as $REQ2TEST_EGRESS_SOCKET.
EGRESS_DIR = "/egress"
USER = "65534:65534"
MAX_OUTPUT = 1_000_000  # bytes kept per stream; an agent's runaway log must not exhaust our memory
KILL_GRACE = 3.0  # s the outer watchdog allows beyond the limit for the inner ``timeout`` to act
STREAM_GRACE = 0.5  # s to wait for the output stream after the command itself has exited

# PID 1: does nothing but reap. Orphans of killed commands are re-parented to it, and
# unreaped zombies would eat the pids limit; SIGCHLD ignored makes the kernel reap them.
# As the namespace's init it cannot be killed from inside (``kill -9 -1`` spares it).
IDLE = "import signal\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\nwhile True:\n    signal.pause()\n"


FORWARDER_PORT = 3128  # inside: HTTP(S)_PROXY=http://127.0.0.1:3128


class DockerSandbox:
    """A :class:`~harness.sandbox.base.Sandbox` in a docker container (see the module docstring)."""

    def __init__(self, policy: SandboxPolicy, workspace: Path, readonly: list[Path] | None = None,
                 proxy_socket: Path | None = None, client: docker.DockerClient | None = None,
                 differ: Callable[[], WorkspaceDiff] | None = None, hidden: list[Path] | None = None) -> None:
        self.policy = policy
        # host paths visible through a read-only bind but covered by an empty tmpfs (the
        # interpreter's own site-packages: nothing installed on the host shows through)
        self.hidden = [Path(p) for p in (hidden or [])]
        self.proxy: EgressProxy | None = None
        self.workspace = Path(workspace).resolve()
        binds: list[Path | str] = [*(readonly or []), *policy.readonly_binds]
        self.readonly = [Path(p) for p in binds]
        self.proxy_socket = proxy_socket
        self.egress_socket = f"{EGRESS_DIR}/{proxy_socket.name}" if proxy_socket else None
        self.client = client
        self.differ = differ
        self.notes: list[str] = []
        self.container: Container | None = None
        self.clock: WallClock | None = None
        self._used: float | None = None  # frozen at close
        self._closed = False
        self._init_pid: int | None = None
        # one command at a time: each exec ends by killing every process but PID 1
        self._exec_lock = threading.Lock()

    # ----------------------------------------------------------------- life cycle
    def start(self) -> None:
        if self.container is not None or self._closed:
            raise SandboxError("this docker sandbox was already started; create a new one")
        if not self.workspace.is_dir():
            raise SandboxError(f"workspace {self.workspace} is not a directory")
        self.client = self.client or ensure_engine()
        if self.policy.image == RUNTIME_TAG:
            ensure_runtime_image(self.client, RUNTIME_TAG)
        else:
            self._require_image(self.policy.image)
        _open_for_nobody(self.workspace)
        if self.policy.egress_allow and self.proxy_socket is None:
            # provider-only egress: our allowlisting proxy outside, on a unix socket in a
            # directory of its own (the whole directory is bound at EGRESS_DIR)
            from harness.sandbox.egress import FORWARDER_PATH, EgressProxy

            egress_dir = Path(tempfile.mkdtemp(prefix="req2test-egress-"))
            (egress_dir / "forwarder.py").write_bytes(FORWARDER_PATH.read_bytes())
            self.proxy = EgressProxy(self.policy.egress_allow, egress_dir / "egress.sock")
            self.proxy.start()
            os.chmod(egress_dir, 0o755)
            os.chmod(egress_dir / "egress.sock", 0o777)
            self.proxy_socket = egress_dir / "egress.sock"
            self.egress_socket = f"{EGRESS_DIR}/egress.sock"
        python = Path(sys.executable)
        env = {"PATH": f"{python.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        if self.egress_socket:
            env["REQ2TEST_EGRESS_SOCKET"] = self.egress_socket
        env.update(self.policy.env)
        try:
            self.container = self.client.containers.run(
                self.policy.image, [str(python), "-S", "-c", IDLE],
                name=f"req2test-{_slug(self.policy.name)}-{uuid.uuid4().hex[:8]}",
                labels={"req2test.sandbox": self.policy.name}, detach=True,
                network_mode="none", read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
                user=USER, pids_limit=self.policy.pids_limit, mem_limit=f"{self.policy.memory_mb}m",
                tmpfs={"/tmp": "rw,nosuid,nodev,mode=1777", "/run": "rw,nosuid,nodev,mode=755",
                       **{str(p): "ro,nosuid,nodev,mode=755" for p in self.hidden}},
                volumes=self._volumes(), working_dir=WORKSPACE, environment=env,
                ipc_mode="private", init=False)
            self._refresh_init_pid()
        except Exception as exc:  # noqa: BLE001 - the engine's own message, on one line
            if self.container is not None:
                with contextlib.suppress(Exception):
                    self.container.remove(force=True)
            self.container = None
            raise SandboxError(f"cannot start the sandbox container: {_one_line(exc)}") from None
        self.clock = WallClock(self.policy.wall_clock_seconds)

    def _require_image(self, tag: str) -> None:
        import docker

        assert self.client is not None  # start() sets it before asking for an image
        try:
            self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            raise SandboxError(f"image {tag} is not available locally and no registry is reachable; "
                               f"build it first (docker build/import)") from None

    def _volumes(self) -> dict[str, dict[str, str]]:
        """Host path → bind: system dirs, Python and the minimal /etc read-only, the workspace read-write."""
        volumes = {path: {"bind": path, "mode": "ro"} for path in host_layout().binds}
        volumes.update(docker_etc_binds())  # never the host's /etc (shadow, hostname, machine-id)
        volumes[str(self.workspace)] = {"bind": WORKSPACE, "mode": "rw"}
        for path in self.readonly:
            real = path.resolve()
            if not real.exists():
                raise SandboxError(f"read-only bind {path} does not exist")
            if str(real) in FORBIDDEN_BINDS or Path("/var/run/docker.sock").resolve().is_relative_to(real):
                raise SandboxError(f"refusing to bind {path}: it would expose the host (bind only what is needed)")
            # inside the workspace: re-bind its in-sandbox path read-only (e.g. the production tree)
            inside = real.relative_to(self.workspace) if real.is_relative_to(self.workspace) else None
            volumes[str(real)] = {"bind": f"{WORKSPACE}/{inside}" if inside else str(real), "mode": "ro"}
        if self.proxy_socket is not None:
            volumes[str(self.proxy_socket.resolve().parent)] = {"bind": EGRESS_DIR, "mode": "ro"}
        return volumes

    def close(self) -> SandboxReport:
        if not self._closed:
            self._closed = True
            self._used = self.clock.used if self.clock else 0.0
            if self.container is not None:
                try:
                    self.container.remove(force=True)
                except Exception as exc:  # noqa: BLE001 - report, never mask the run's own result
                    self.notes.append(f"removing container {self.container.name} failed: {_one_line(exc)}")
            if self.proxy is not None:
                self.proxy.stop()
                shutil.rmtree(Path(self.proxy.socket_path).parent, ignore_errors=True)
        return SandboxReport(backend="docker", policy=self.policy.name, isolated=True,
                             wall_clock_seconds=self.policy.wall_clock_seconds, used_seconds=self._used or 0.0,
                             egress_allow=list(self.policy.egress_allow),
                             egress=self.proxy.records() if self.proxy is not None else [], notes=list(self.notes))

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- commands
    def exec(self, command: list[str] | str, timeout: float | None = None,
             env: dict[str, str] | None = None, cwd: str | None = None) -> ExecResult:
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if self._closed:
            return _refused(argv, "sandbox closed")
        if self.container is None or self.clock is None:
            raise SandboxError("call start() before exec()")
        with self._exec_lock:
            return self._exec(argv, timeout, env, cwd)

    def _exec(self, argv: list[str], timeout: float | None, env: dict[str, str] | None,
              cwd: str | None) -> ExecResult:
        # exec() checked the container and the clock; start() set the client before making them
        assert self.client is not None and self.container is not None and self.clock is not None
        limit = self.clock.limit(timeout, self.policy.exec_timeout_seconds)
        if limit < 0.001:  # also: timeout(1) reads a zero duration as "no limit"
            self._kill_container()
            return _refused(argv, f"wall clock of {self.policy.wall_clock_seconds:g} s spent")
        workdir = cwd if cwd and cwd.startswith("/") else f"{WORKSPACE}/{cwd}" if cwd else WORKSPACE
        if self.proxy is not None:
            from harness.sandbox.egress import proxy_env, wrap_command

            argv_run = wrap_command(argv, sys.executable, self.egress_socket or "", FORWARDER_PORT,
                                    script=f"{EGRESS_DIR}/forwarder.py")
            env = {**proxy_env(FORWARDER_PORT), **(env or {})}
        else:
            argv_run = argv
        # inner limit: timeout(1) puts the command in its own process group and SIGKILLs the group
        wrapped = ["/usr/bin/timeout", "-s", "KILL", f"{limit:.3f}", *argv_run]
        started = time.monotonic()
        try:
            exec_id = self.client.api.exec_create(self.container.id, wrapped, stdout=True, stderr=True,
                                                  environment=env or {}, workdir=workdir, user=USER)["Id"]
            stream = self.client.api.exec_start(exec_id, stream=True, demux=True)
        except Exception as exc:  # noqa: BLE001 - e.g. the pids limit is full: the engine's words
            return ExecResult(command=argv, exit_code=None, stdout="", stderr=f"docker exec failed: {_one_line(exc)}",
                              seconds=time.monotonic() - started)
        output = _Collector(stream)
        output.start()
        timed_out = not self._wait(exec_id, output, started + limit + KILL_GRACE)
        if timed_out:
            self.notes.append(f"watchdog killed {shlex.join(argv)[:80]!r} after {limit:.1f} s")
        self._reap(exec_id, force=timed_out)
        output.join(5)
        info = self._inspect(exec_id)
        seconds = time.monotonic() - started
        exit_code = None if info.get("Running", False) else info.get("ExitCode")
        # the inner timeout kills with SIGKILL (137 seen from outside) once the limit is spent
        timed_out = timed_out or (exit_code in (124, 137) and seconds >= limit - 0.05)
        return ExecResult(command=argv, exit_code=exit_code, stdout=output.text(1), stderr=output.text(2),
                          seconds=seconds, timed_out=timed_out)

    def _wait(self, exec_id: str, output: _Collector, deadline: float) -> bool:
        """True when the command ended before ``deadline``. Once its own process is gone, the stream
        is given a moment; children still holding it open are killed by ``_reap``."""
        while time.monotonic() < deadline:
            output.join(min(0.25, max(0.0, deadline - time.monotonic())))
            if not output.is_alive():
                return True
            if not self._inspect(exec_id).get("Running", True):
                output.join(STREAM_GRACE)
                return True
        return False

    def _inspect(self, exec_id: str) -> dict[str, Any]:
        try:
            assert self.client is not None  # an exec of a started sandbox
            return self.client.api.exec_inspect(exec_id)
        except Exception:  # noqa: BLE001 - gone with a restarted container
            return {"Running": False, "ExitCode": None}

    def _reap(self, exec_id: str, force: bool) -> None:
        """Nothing a command starts outlives it: kill whatever is left besides PID 1."""
        if not force and not self._strays():
            return
        # from inside first: keeps the container (and its /tmp); kill(-1) spares PID 1. It fails
        # when the pids limit leaves no room for kill itself: then the restart below does it.
        with contextlib.suppress(Exception):
            assert self.client is not None and self.container is not None  # an exec of a started sandbox
            self.client.api.exec_start(self.client.api.exec_create(
                self.container.id, ["/bin/sh", "-c", "kill -9 -1"], user=USER)["Id"])
        for _ in range(10):
            if not self._strays() and not self._inspect(exec_id).get("Running", False):
                return
            time.sleep(0.1)
        self.notes.append("processes survived kill -9 -1; container restarted (its /tmp was emptied)")
        self._restart()

    def _strays(self) -> bool:
        try:
            assert self.container is not None  # an exec of a started sandbox
            top = self.container.top(ps_args="-e -o pid")
        except Exception:  # noqa: BLE001 - cannot tell: assume the worst
            return True
        return any(int(row[0]) != self._init_pid for row in top.get("Processes") or [])

    def _refresh_init_pid(self) -> None:
        assert self.container is not None  # start() or _restart(), on the container start() made
        self.container.reload()
        self._init_pid = self.container.attrs["State"]["Pid"]

    def _restart(self) -> None:
        # killing the namespace's init kills every process in it, fork bombs included
        try:
            assert self.container is not None  # an exec of a started sandbox
            self.container.restart(timeout=0)
            self._refresh_init_pid()
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"the sandbox container could not be restarted: {_one_line(exc)}") from None

    def _kill_container(self) -> None:
        with contextlib.suppress(Exception):  # already dead is fine
            assert self.container is not None  # an exec of a started sandbox
            self.container.kill()

    # ----------------------------------------------------------------- files
    def read_file(self, path: str) -> str:
        return read_workspace_file(self.workspace, path)

    def write_file(self, path: str, content: str) -> None:
        host = regular_or_absent(workspace_path(self.workspace, path), path)
        missing = [p for p in [host.parent, *host.parent.parents] if not p.exists()]
        host.parent.mkdir(parents=True, exist_ok=True)
        for directory in missing:  # created as root here: let uid 65534 write into them too
            directory.chmod(0o777)
        host.write_text(content, encoding="utf-8")
        host.chmod(host.stat().st_mode | 0o666)

    def diff(self) -> WorkspaceDiff:
        return self.differ() if self.differ else WorkspaceDiff()


class _Collector(threading.Thread):
    """Drains a demuxed exec stream; keeps at most MAX_OUTPUT bytes of each side."""

    def __init__(self, stream: Iterator[tuple[bytes | None, bytes | None]]) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self.sizes = {1: 0, 2: 0}
        self.dropped = {1: 0, 2: 0}

    def run(self) -> None:
        try:
            for out, err in self.stream:
                for fd, data in ((1, out), (2, err)):
                    if data:
                        room = MAX_OUTPUT - self.sizes[fd]
                        self.chunks[fd].append(data[:max(room, 0)])
                        self.sizes[fd] += min(len(data), max(room, 0))
                        self.dropped[fd] += max(len(data) - max(room, 0), 0)
        except Exception:  # noqa: BLE001, S110 - the stream ends abruptly when the container is restarted
            pass

    def text(self, fd: int) -> str:
        text = b"".join(self.chunks[fd]).decode("utf-8", errors="replace")
        return text + (f"\n[... {self.dropped[fd]} bytes dropped]" if self.dropped[fd] else "")


def _open_for_nobody(workspace: Path) -> None:
    """Let uid 65534 write the workspace by mode, not ownership: chown would make host-side git
    refuse the repository ("dubious ownership"), and x bits stay as they are (git tracks them)."""
    for root, dirs, files in os.walk(workspace):
        Path(root).chmod(0o777)
        for name in files:
            path = Path(root, name)
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                path.chmod(stat.S_IMODE(mode) | 0o666)
        dirs[:] = [d for d in dirs if not Path(root, d).is_symlink()]


def _refused(argv: list[str], reason: str) -> ExecResult:
    return ExecResult(command=argv, exit_code=None, stdout="", stderr="", seconds=0.0, refused=reason)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "-" for c in name)[:40] or "sandbox"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "explanation", None) or exc).split())[:300]
