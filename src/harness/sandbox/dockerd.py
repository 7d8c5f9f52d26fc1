"""A docker engine and an offline runtime image for the ``docker`` sandbox backend.

No engine runs on a new machine and no registry is reachable (DESIGN.md "Docker"), so:
``ensure_engine`` reuses a running engine or, as root, starts Debian's ``dockerd``
detached (it outlives us, so the next run reuses it); ``ensure_runtime_image`` builds a
``FROM scratch`` skeleton locally. The skeleton holds almost nothing: the host's system
directories and Python prefix are bind-mounted read-only at run time (``host_layout``),
the same policy as the evaluator's bubblewrap recipe (``bench.isolation``).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from bench.isolation import NOBODY, SYSTEM_DIRS
from bench.minimal_etc import GENERATED
from harness.sandbox.base import SandboxError

if TYPE_CHECKING:  # the docker SDK is optional: only this backend needs it
    import docker

RUNTIME_TAG = "req2test-runtime:offline"
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
STATE_DIR = Path.home() / ".cache" / "req2test"
LOG_FILE = STATE_DIR / "dockerd.log"
PID_FILE = STATE_DIR / "dockerd.pid"
LOCK_FILE = STATE_DIR / "dockerd.lock"
API_TIMEOUT = 120

# Tried in order; the first that answers ping wins. Containers only ever use
# network_mode="none", so the bridge and its iptables rules are dispensable, and vfs is
# the storage driver that works on any filesystem (slow, but the image is a skeleton).
DOCKERD_ATTEMPTS: tuple[tuple[str, ...], ...] = (
    (),
    ("--iptables=false", "--ip6tables=false", "--bridge=none"),
    ("--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs"),
)

# /etc is never the host's: the sandbox binds the same minimal one as bubblewrap
# (``bench.minimal_etc``, see ``DockerSandbox._volumes``); the image carries its generated
# passwd/group/hosts too, so it also works on its own.
# Never bound whole: each would expose far more than the runtime (e.g. /var/run/docker.sock).
FORBIDDEN_BINDS = ("/", "/root", "/home", "/var", "/run", "/tmp", "/etc", "/proc", "/sys", "/dev")

_started: list[subprocess.Popen[bytes]] = []  # keeps our dockerd's Popen alive (no ResourceWarning)
last_start_flags: tuple[str, ...] | None = None  # the dockerd flags that worked, for reports


def _docker_module() -> Any:  # the docker module, imported lazily
    try:
        import docker
    except ImportError:
        raise SandboxError("the docker backend needs the docker SDK: pip install 'docker>=7.1,<8'") from None
    return docker


def _ping(base_url: str | None, timeout: float = 5) -> docker.DockerClient | None:
    docker = _docker_module()
    try:
        client = docker.DockerClient(base_url=base_url, timeout=timeout) if base_url else \
            docker.from_env(timeout=timeout)
        client.ping()
    except Exception:  # noqa: BLE001 - any failure means "not answering"
        return None
    client.api.timeout = API_TIMEOUT  # pinging is quick; builds and container starts may not be
    return client


def ensure_engine(timeout: float = 60) -> docker.DockerClient:
    """A client of a running engine; starts ``dockerd`` (as root) when none answers."""
    global last_start_flags
    client = _ping(None) or _ping(DEFAULT_SOCKET)
    if client is not None:
        return client
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise SandboxError("no docker engine answers and dockerd is not installed "
                           "(run scripts/install-system-deps.sh, Debian package docker.io)")
    if os.geteuid() != 0:
        raise SandboxError("no docker engine answers at /var/run/docker.sock and only root can start dockerd; "
                           "start it (sudo dockerd) or join the docker group")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    # one starter at a time (parallel pytest workers, two harness runs): the rest wait for it
    with LOCK_FILE.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client = _ping(DEFAULT_SOCKET) or _wait_for_running(deadline)
        if client is not None:
            return client
        failures: list[str] = []
        for flags in DOCKERD_ATTEMPTS:
            outcome = _start_dockerd(dockerd, flags, deadline)
            if isinstance(outcome, str):
                failures.append(f"[{' '.join(flags) or 'defaults'}] {outcome}")
                if time.monotonic() >= deadline:
                    break
                continue
            last_start_flags = flags
            return outcome
    raise SandboxError(f"dockerd did not start ({'; '.join(failures)}); log: {LOG_FILE}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_for_running(deadline: float) -> docker.DockerClient | None:
    """A dockerd we started earlier may still be initialising: wait for it rather than start a second."""
    try:
        pid = int(PID_FILE.read_text().strip())
    except (OSError, ValueError):
        return None
    while _pid_alive(pid) and time.monotonic() < deadline:
        client = _ping(DEFAULT_SOCKET, timeout=2)
        if client is not None:
            return client
        time.sleep(0.3)
    return None


def _start_dockerd(dockerd: str, flags: tuple[str, ...], deadline: float) -> docker.DockerClient | str:
    """The client once ping answers, or why this attempt failed (one line)."""
    with LOG_FILE.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} req2test starts dockerd {' '.join(flags)}\n".encode())
        log.flush()
        offset = LOG_FILE.stat().st_size
        # own session: a Ctrl-C of the harness must not take the engine (and others' containers) down
        proc = subprocess.Popen([dockerd, "--pidfile", str(PID_FILE), *flags], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    _started.append(proc)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"exited with {proc.returncode}: {_last_error(offset)}"
        client = _ping(DEFAULT_SOCKET, timeout=2)
        if client is not None:
            return client
        time.sleep(0.3)
    proc.kill()
    proc.wait()
    return f"no answer within the time limit: {_last_error(offset)}"


def _last_error(offset: int) -> str:
    """The daemon's last error-level log line since ``offset``, shortened to one line."""
    try:
        with LOG_FILE.open("rb") as fh:
            fh.seek(offset)
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return "no log"
    markers = ("level=fatal", "level=error", "failed", "unknown", "invalid")
    errors = [line for line in lines if any(m in line.lower() for m in markers)]
    line = (errors or lines or ["no log output"])[-1]
    return line.strip()[:300]


def engine_unavailable_reason(timeout: float = 60) -> str | None:
    """None when an engine answers (starting one if we may), else why not: for pytest.skip."""
    try:
        ensure_engine(timeout)
    except SandboxError as exc:
        return str(exc)
    return None


class HostLayout(BaseModel):
    """What the runtime image leaves to the host: read-only binds, and the symlinks that stand in for
    merged-/usr directories (binding /bin -> usr/bin would just bind /usr/bin twice)."""

    binds: list[str]
    symlinks: dict[str, str]

    def fingerprint(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


def python_prefixes() -> list[Path]:
    """The interpreter's installation (and venv, if any) — resolved, never a whole home directory."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    kept: list[Path] = []
    for path in sorted(dirs, key=lambda p: len(p.parts)):
        if not any(k == path or k in path.parents for k in kept):
            kept.append(path)
    for path in kept:
        if str(path) in FORBIDDEN_BINDS:
            raise SandboxError(f"the Python prefix {path} is a system root; install Python in its own prefix")
    return kept


def host_layout() -> HostLayout:
    binds: list[str] = []
    symlinks: dict[str, str] = {}
    for directory in (d for d in SYSTEM_DIRS if d != "/etc"):
        path = Path(directory)
        if path.is_symlink():
            symlinks[directory] = os.readlink(path)
        elif path.is_dir():
            binds.append(directory)
    covered = tuple(binds)
    binds += [str(p) for p in python_prefixes() if not any(str(p) == d or str(p).startswith(d + "/") for d in covered)]
    return HostLayout(binds=binds, symlinks=symlinks)


def _skeleton_tar(layout: HostLayout) -> bytes:
    """The image's root filesystem: mount points, our own passwd/group, merged-/usr symlinks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(name: str, kind: bytes, mode: int = 0o755, data: bytes = b"", target: str = "") -> None:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.type, info.mode, info.mtime = kind, mode, 0
            info.linkname, info.size = target, len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)

        for directory in ("/workspace", "/proc", "/dev", "/sys", "/etc", "/run", "/egress"):
            add(directory, tarfile.DIRTYPE)
        add("/tmp", tarfile.DIRTYPE, 0o1777)
        for link, target in layout.symlinks.items():
            add(link, tarfile.SYMTYPE, 0o777, target=target)
        for name in ("passwd", "group", "hosts"):
            add(f"/etc/{name}", tarfile.REGTYPE, 0o644, GENERATED[name].encode())
    return buf.getvalue()


def ensure_runtime_image(client: docker.DockerClient, tag: str = RUNTIME_TAG) -> str:
    """The runtime image's id; built offline (FROM scratch) only when missing or made for another host layout."""
    docker = _docker_module()
    layout = host_layout()
    fingerprint = layout.fingerprint()
    try:
        image = client.images.get(tag)
        if (image.labels or {}).get("req2test.layout") == fingerprint:
            return image.id
    except docker.errors.ImageNotFound:
        pass
    dockerfile = (f"FROM scratch\nADD rootfs.tar /\nLABEL req2test.layout={fingerprint}\n"
                  f"USER {NOBODY}:{NOBODY}\nWORKDIR /workspace\n").encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (("Dockerfile", dockerfile), ("rootfs.tar", _skeleton_tar(layout))):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    try:
        image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, pull=False)
    except docker.errors.BuildError as exc:
        raise SandboxError(f"building {tag} failed: {exc.msg}") from None
    except docker.errors.APIError as exc:
        raise SandboxError(f"building {tag} failed: {exc.explanation or exc}") from None
    return image.id
