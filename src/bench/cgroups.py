"""Process-count and memory limits for sandboxed commands, through cgroups (standard library only).

Why cgroups: RLIMIT_NPROC does not bind root (the sandboxes are started by root on CI) and
RLIMIT_AS counts address space, not memory; a cgroup binds both, for every process a
command starts. This lives in ``bench`` because the evaluator runs agent-written code too;
the harness sandboxes use it through ``harness.sandbox.limits``.

Both layouts are handled: cgroup v1 (one hierarchy per controller, e.g.
``/sys/fs/cgroup/memory``) and v2 (the unified hierarchy, where a parent delegates a
controller by listing it in its ``cgroup.subtree_control``). Our cgroups are created under
the cgroup this process is already in (so an outer limit on us still applies to them), or
the nearest ancestor that can hold them. Each controller that cannot be used is reported
with its reason in ``reasons``, never pretended.

A process joins by writing its pid into ``cgroup.procs`` before it becomes the sandboxed
command: ``wrap_command`` prefixes a command with a shell that does that and then execs it
(a ``preexec_fn`` would force a full fork of the caller; the shell keeps vfork).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Self

CONTROLLERS = ("pids", "memory")


@dataclass(frozen=True)
class _Mount:
    version: int  # 1 or 2
    path: Path  # where the hierarchy is mounted
    root: str  # which cgroup the mount shows at ``path`` (mountinfo's 4th field)
    controllers: frozenset[str]  # v1: bound to this hierarchy; v2: empty (read cgroup.controllers)


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040)."""
    out, i = [], 0
    while i < len(field):
        digits = field[i + 1:i + 4]
        if field[i] == "\\" and len(digits) == 3 and digits.isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mounts() -> list[_Mount]:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found: list[_Mount] = []
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields, extra = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(extra) < 3:
            continue
        fstype, super_options = extra[0], extra[2].split(",")
        if fstype == "cgroup":
            found.append(_Mount(1, Path(_unescape(fields[4])), _unescape(fields[3]), frozenset(super_options)))
        elif fstype == "cgroup2":
            found.append(_Mount(2, Path(_unescape(fields[4])), _unescape(fields[3]), frozenset()))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) → the cgroup path this process is in, from /proc/self/cgroup."""
    own: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _inside(mount: _Mount, cgroup_path: str) -> Path:
    """The directory of ``cgroup_path`` under ``mount``; the mount's top when it is not visible there."""
    root = mount.root.rstrip("/")
    if cgroup_path == mount.root or cgroup_path.startswith(root + "/"):
        return mount.path / cgroup_path[len(root):].lstrip("/")
    return mount.path


def _candidates(start: Path, top: Path) -> list[Path]:
    """``start`` and its ancestors up to the hierarchy's top: the nearest parent wins."""
    out = [start]
    while out[-1] != top and top in out[-1].parents:
        out.append(out[-1].parent)
    return out


def _read_words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _locate(controller: str) -> tuple[int, Path] | str:
    """(cgroup version, parent directory for our cgroups) for ``controller``, or why there is none."""
    mounts = _mounts()
    own = _own_cgroups()
    for mount in mounts:
        if mount.version == 1 and controller in mount.controllers:
            parents = _candidates(_inside(mount, own.get(controller, "/")), mount.path)
            for parent in parents:
                if (parent / "cgroup.procs").exists() and os.access(parent, os.W_OK):
                    return 1, parent
            return f"cgroup v1 {controller} hierarchy at {mount.path} is not writable (not root?)"
    for mount in mounts:
        if mount.version != 2:
            continue
        if controller not in _read_words(mount.path / "cgroup.controllers"):
            continue
        for parent in _candidates(_inside(mount, own.get("", "/")), mount.path):
            # a v2 child gets a controller only when its parent delegates it
            if controller in _read_words(parent / "cgroup.subtree_control"):
                if os.access(parent, os.W_OK):
                    return 2, parent
                return f"cgroup v2 {controller} controller at {parent} is not writable (not root?)"
        return f"cgroup v2 {controller} controller is not delegated to our cgroup (cgroup.subtree_control)"
    return f"no cgroup {controller} controller is mounted (v1) or enabled in the unified hierarchy (v2)"


class SandboxCgroup:
    """One cgroup (per hierarchy) for one sandbox: ``max_pids`` processes at once, ``memory_mb``
    of memory (swap included where the kernel accounts it) for all its processes together.

    ``None`` leaves that controller alone. What could not be limited is in ``reasons``
    (controller → one line); ``notes`` holds every such line plus partial limits (swap).
    """

    def __init__(self, memory_mb: int | None = None, max_pids: int | None = None,
                 name: str | None = None) -> None:
        self.memory_mb = memory_mb
        self.max_pids = max_pids
        self.name = name or f"req2test-{uuid.uuid4().hex[:12]}"
        self.paths: dict[str, Path] = {}  # controller → its cgroup directory
        self.versions: dict[str, int] = {}
        self.reasons: dict[str, str] = {}
        self.notes: list[str] = []
        self._created: list[Path] = []
        # an owner that never calls close() (a crash between start and cleanup) must not leave
        # empty cgroups behind for good: removed when this object goes, or at interpreter exit
        weakref.finalize(self, _rmdir_quietly, self._created)
        wanted = {"pids": max_pids, "memory": memory_mb}
        for controller in CONTROLLERS:
            value = wanted[controller]
            if value is None:
                continue
            located = _locate(controller)
            if isinstance(located, str):
                self._unavailable(controller, located)
                continue
            version, parent = located
            path = parent / self.name
            try:
                if path not in self._created:  # v2: one directory serves both controllers
                    path.mkdir()
                    self._created.append(path)
                if controller == "pids":
                    (path / "pids.max").write_text(str(value))
                else:
                    self._limit_memory(path, version, value)
            except OSError as exc:
                self._unavailable(controller, f"cgroup {controller} controller unusable at {path}: {exc.strerror}")
                continue
            self.paths[controller] = path
            self.versions[controller] = version
        # a directory whose only controller failed is of no use
        for path in list(self._created):
            if path not in self.paths.values():
                self._remove(path)

    def _unavailable(self, controller: str, reason: str) -> None:
        what = "process count" if controller == "pids" else "memory"
        self.reasons[controller] = f"{reason}: {what} not limited"
        self.notes.append(self.reasons[controller])

    def _limit_memory(self, path: Path, version: int, megabytes: int) -> None:
        limit = str(megabytes << 20)
        if version == 1:
            (path / "memory.limit_in_bytes").write_text(limit)
            # memory+swap: without it a process pushed over the limit swaps instead of dying
            memsw = path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(limit)
            elif _swap_enabled():
                self.notes.append("cgroup v1 without swap accounting: swap use is not limited")
        else:
            (path / "memory.max").write_text(limit)
            swap = path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")  # the limit is memory, not memory plus however much swap there is
            elif _swap_enabled():
                self.notes.append("cgroup v2 without memory.swap.max: swap use is not limited")

    # ---------------------------------------------------------------- state
    @property
    def active(self) -> bool:
        """At least one limit is in force."""
        return bool(self.paths)

    @property
    def reason(self) -> str:
        """Every unavailable controller's reason on one line ("" when all requested ones work)."""
        return "; ".join(self.reasons.values())

    def limited(self, controller: str) -> bool:
        return controller in self.paths

    @property
    def procs_files(self) -> list[Path]:
        """Write a pid into each of these to move that process (and its future children) in."""
        return [p / "cgroup.procs" for p in dict.fromkeys(self.paths.values())]

    @property
    def procs_file(self) -> Path:
        files = self.procs_files
        if not files:
            raise RuntimeError(f"no cgroup: {self.reason or 'no limit requested'}")
        return files[0]

    def wrap_command(self, command: list[str]) -> list[str]:
        """``command`` preceded by a shell that joins every cgroup and then execs it; ``command``
        itself when no limit is in force. If joining fails the command does not run."""
        files = self.procs_files
        if not files:
            return list(command)
        joins = " && ".join(f'echo $$ > "${i}"' for i in range(1, len(files) + 1))
        return ["/bin/sh", "-c", f'{joins} && shift {len(files)} && exec "$@"', "sh",
                *(str(f) for f in files), *command]

    def oom_kills(self) -> int:
        """Processes the kernel killed for exceeding the memory limit so far."""
        path = self.paths.get("memory")
        if path is None:
            return 0
        name = "memory.oom_control" if self.versions["memory"] == 1 else "memory.events"
        return _counter(path / name, "oom_kill")

    def peak_refused(self) -> int:
        """Forks the pids limit refused so far (``pids.events``, v1 and v2)."""
        path = self.paths.get("pids")
        return 0 if path is None else _counter(path / "pids.events", "max")

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in procs.read_text().split())
        return sorted(found)

    # ---------------------------------------------------------------- teardown
    def kill_all(self) -> None:
        """SIGKILL every process inside (repeated: a process may fork while we kill)."""
        for path in dict.fromkeys(self.paths.values()):
            kill = path / "cgroup.kill"  # v2, Linux 5.14+: atomic, no race with forks
            if kill.exists():
                with contextlib.suppress(OSError):
                    kill.write_text("1")
        for _ in range(20):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def close(self) -> None:
        """Kill what is left and remove the cgroups; safe to call twice."""
        self.kill_all()
        for path in list(self._created):
            self._remove(path)
        self.paths.clear()

    def _remove(self, path: Path) -> None:
        for _ in range(50):  # killed processes take a moment to leave
            try:
                path.rmdir()
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
                continue
            break
        with contextlib.suppress(ValueError):
            self._created.remove(path)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rmdir_quietly(paths: list[Path]) -> None:
    """Remove the cgroups that are empty by now; never kills (nobody owns those processes)."""
    for path in paths:
        with contextlib.suppress(OSError):
            path.rmdir()


def _counter(path: Path, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``memory.events``, ``pids.events``, …)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _swap_enabled() -> bool:
    try:
        return len(Path("/proc/swaps").read_text().splitlines()) > 1
    except OSError:
        return False
