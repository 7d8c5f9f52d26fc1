"""Fork primitives of the warm workers (standard library only: runs in the project's env).

A forked child reports one JSON object through a pipe and exits; the parent waits for
it with a deadline and kills the child's whole process group when the deadline passes,
so a test that loops forever, calls ``os._exit`` or kills itself only takes its own
child down. Children may fork children of their own (the split-stream mutant driver):
``CURRENT_RESULT_FD`` is the pipe the running process must report to, so a nested child
never writes into the pipe of the process it was forked from.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import time
import traceback
from typing import Any, Callable

MAX_RESULT_BYTES = 64 * 1024 * 1024

# The pipe this process reports its result to, when it is a forked child.
CURRENT_RESULT_FD: int | None = None

_LIBC = None


def load_libc() -> None:
    """Load libc once in the parent: a dlopen per fork would cost a millisecond each."""
    global _LIBC
    try:
        import ctypes
        _LIBC = ctypes.CDLL(None, use_errno=True)
    except (OSError, AttributeError):
        _LIBC = None


def become_child(write_fd: int) -> None:
    """The first steps of every forked child: report to ``write_fd`` from now on, stop
    the collector (it would only touch, and copy, shared pages), own process group,
    die with the parent."""
    global CURRENT_RESULT_FD
    inherited = CURRENT_RESULT_FD
    CURRENT_RESULT_FD = write_fd
    if inherited is not None and inherited != write_fd:
        try:
            os.close(inherited)
        except OSError:
            pass
    gc.disable()
    os.setpgid(0, 0)
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def report_and_exit(payload: dict[str, Any], code: int = 0) -> None:
    """Write the child's result to its pipe and leave without running any cleanup.

    Closing the pipe first lets the parent go on while the kernel tears this process
    down (about 2 ms for a warm worker's copy): it reaps the child later."""
    try:
        if CURRENT_RESULT_FD is not None:
            write_all(CURRENT_RESULT_FD, json.dumps(payload).encode())
            os.close(CURRENT_RESULT_FD)
    finally:
        os._exit(code)


def fork_call(fn: Callable[[], dict[str, Any]], timeout: float) -> dict[str, Any]:
    """Run ``fn`` in a forked child; its JSON-able dict result comes back through a pipe.

    The child gets its own process group (killed as a whole on timeout) and dies with
    its parent. A child that exits without reporting (os._exit, a signal) is ``crashed``.
    """
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        try:
            become_child(write_fd)
            payload, code = fn(), 0
        except BaseException as exc:  # never let the child return into the caller's loop
            payload, code = {"exit": "worker_error", "error": f"{type(exc).__name__}: {exc}",
                             "traceback": traceback.format_exc()}, 1
        report_and_exit(payload, code)
    os.close(write_fd)
    return await_child(pid, read_fd, started, timeout)


def await_child(pid: int, read_fd: int, started: float, timeout: float) -> dict[str, Any]:
    """Collect a forked child's JSON result (closes ``read_fd``); kill its group on timeout."""
    raw, timed_out = read_until_closed(read_fd, started + timeout, MAX_RESULT_BYTES)
    os.close(read_fd)
    kill_group(pid)  # on timeout the child; always anything the test left running in its group
    status = 0
    if timed_out or not raw:
        _, status = os.waitpid(pid, 0)
    else:
        _UNREAPED.append(pid)  # it reported and is exiting: reap it later, do not wait
    reap_finished()
    elapsed = time.monotonic() - started
    if timed_out:
        return {"exit": "timeout", "elapsed": elapsed}
    if not raw:
        return {"exit": "crashed", "elapsed": elapsed, "wait_status": status,
                "error": describe_wait_status(status)}
    try:
        result = json.loads(raw)
    except ValueError:
        return {"exit": "crashed", "elapsed": elapsed, "error": "truncated result"}
    result["elapsed"] = elapsed
    return result


def read_until_closed(read_fd: int, deadline: float, max_bytes: int) -> tuple[bytes, bool]:
    """Everything written to a pipe until its writers close it (or ``max_bytes``), and
    whether the deadline passed first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([read_fd], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks), False


_UNREAPED: list[int] = []


def defer_reap(pid: int) -> None:
    """A child that reported and was killed: reap it later instead of waiting for its teardown."""
    _UNREAPED.append(pid)


def unreaped() -> list[int]:
    return list(_UNREAPED)


def reap_finished() -> None:
    """Collect children that reported and have exited since (no zombies pile up)."""
    for pid in list(_UNREAPED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _UNREAPED.remove(pid)


def reap_all() -> None:
    """Wait until every reported-and-killed child is gone: after this, nothing it did
    (a write in flight, a mapping released at exit) can still land."""
    for pid in list(_UNREAPED):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        _UNREAPED.remove(pid)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def describe_wait_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)} before reporting"
    return f"wait status {status}"
