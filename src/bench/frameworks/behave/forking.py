"""Fork primitives of the warm workers (standard library only: runs in the project's env).

A forked child reports one JSON object through a pipe and exits; the parent waits for
it with a deadline and kills the child's whole process group when the deadline passes,
so a test that loops forever, calls ``os._exit`` or kills itself only takes its own
child down. Children may fork children of their own (the split-stream mutant driver):
``CURRENT_RESULT_FD`` is the pipe the running process must report to, so a nested child
never writes into the pipe of the process it was forked from.

``ForkServer`` is the evaluator's zygote: a process forked before any request, which forks
the run children on request, so that a child's memory never holds a request it was not sent.
"""

from __future__ import annotations

import array
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

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


def serve_worker(worker_class: Callable[[Any], Any]) -> None:
    """The entry point of a warm worker (the build's and the evaluator's): libc loaded once,
    the protocol written to a duplicate of stdout, and descriptor 1 and ``sys.stdout`` moved to
    stderr, so that project output never lands in the protocol; then
    ``worker_class(protocol_out).serve(sys.stdin)``."""
    load_libc()
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # project output goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    worker_class(proto_out).serve(sys.stdin)


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
        except BaseException as exc:  # noqa: BLE001 - never let the child return into the caller's loop
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


# ----------------------------------------------------------------------------- the fork server
class ForkServerLost(RuntimeError):
    """The fork server died or stopped answering."""


_HEADER = struct.Struct("!II")


def _send_message(sock: socket.socket, header: dict[str, Any], payload: bytes = b"", fd: int | None = None) -> None:
    head = json.dumps(header).encode()
    first = _HEADER.pack(len(head), len(payload))
    if fd is not None:
        sock.sendmsg([first], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    else:
        sock.sendall(first)
    sock.sendall(head + payload)


def _recv_exactly(sock: socket.socket, size: int, deadline: float | None, fds: list[int]) -> bytes:
    chunks: list[bytes] = []
    got = 0
    space = socket.CMSG_SPACE(array.array("i").itemsize * 4)
    while got < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ForkServerLost("the fork server did not answer in time")
            ready, _, _ = select.select([sock], [], [], min(remaining, 1.0))
            if not ready:
                continue
        data, ancillary, _, _ = sock.recvmsg(size - got, space)
        for level, kind, blob in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(blob[:len(blob) - len(blob) % received.itemsize])
                fds.extend(received)
        if not data:
            raise ForkServerLost("the fork server is gone")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def _recv_message(sock: socket.socket, deadline: float | None = None) -> tuple[dict[str, Any], bytes, list[int]]:
    fds: list[int] = []
    head_size, payload_size = _HEADER.unpack(_recv_exactly(sock, _HEADER.size, deadline, fds))
    body = _recv_exactly(sock, head_size + payload_size, deadline, fds)
    return json.loads(body[:head_size]), body[head_size:], fds


class ForkServer:
    """A process forked once, before any request, that forks children on request.

    A child forked from the server holds what the server held when it was forked (the warm
    state, nothing of any request) plus what its own request sends it, and nothing else: the
    requesting process's memory (every request, caches, the frames that handled them) is
    not in it. ``fork`` sends a JSON header, a payload and the child's descriptor (its result
    pipe); in the server, ``before_fork(header)`` may add data parsed once per distinct
    header (cached by the caller), and the child gets ``box`` = ``[(header, payload, extra)]``
    to pop and its descriptor. The server owns the children: ``wait`` and ``reap`` collect them.
    """

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid, self.sock = pid, sock

    @classmethod
    def start(cls, child: Callable[[list[Any], int], None], before_fork: Callable[[dict[str, Any]], Any] | None = None,
              setup: Callable[[], None] | None = None) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the server
            code = 0
            try:
                ours.close()
                _serve(theirs, child, before_fork, setup)
            except BaseException:  # noqa: BLE001 - never return into the caller's loop
                code = 1
            os._exit(code)
        theirs.close()
        return cls(pid, ours)

    def _call(self, header: dict[str, Any], payload: bytes = b"", fd: int | None = None,
              timeout: float = 60.0) -> dict[str, Any]:
        try:
            _send_message(self.sock, header, payload, fd)
            reply, _, _ = _recv_message(self.sock, time.monotonic() + timeout)
        except (OSError, ValueError) as exc:
            raise ForkServerLost(f"the fork server is gone: {exc}") from exc
        if "error" in reply:
            raise ForkServerLost(f"the fork server failed: {reply['error']}")
        return reply

    def fork(self, header: dict[str, Any], payload: bytes, fd: int) -> int:
        return int(self._call(dict(header, op="fork"), payload, fd)["pid"])

    def wait(self, pid: int) -> int:
        """Kill ``pid``'s group and collect its wait status."""
        return int(self._call({"op": "wait", "pid": pid})["status"])

    def reap(self) -> None:
        """Kill and collect every child: afterwards nothing a child did can still land."""
        self._call({"op": "reap"})

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError, PermissionError):
            pass


def _serve(sock: socket.socket, child: Callable[[list[Any], int], None],
           before_fork: Callable[[dict[str, Any]], Any] | None, setup: Callable[[], None] | None) -> None:
    """The fork server's loop (in its own process, which never runs a child's code itself)."""
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the requesting process
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, sock.fileno()})
    previous = 2
    for fd in keep[3:]:
        os.closerange(previous + 1, fd)
        previous = fd
    os.closerange(previous + 1, 1 << 16)
    if setup is not None:
        setup()
    children: set[int] = set()
    ended: dict[int, int] = {}  # wait statuses of children collected before anyone asked
    while True:
        try:
            header, payload, fds = _recv_message(sock)
        except ForkServerLost:
            return
        op = header.get("op")
        try:
            if op == "fork" and len(fds) == 1:
                box = [(header, payload, before_fork(header) if before_fork is not None else None)]
                del header, payload
                pid = os.fork()
                if pid == 0:
                    child(box, fds[0])
                    os._exit(70)  # a child must never come back here
                os.close(fds[0])
                box.clear()
                children.add(pid)
                reply: dict[str, Any] = {"pid": pid}
            elif op == "wait":
                pid = int(header["pid"])
                kill_group(pid)
                if pid in ended:
                    status = ended.pop(pid)
                else:
                    try:
                        _, status = os.waitpid(pid, 0)
                    except ChildProcessError:
                        status = 0
                children.discard(pid)
                reply = {"status": status}
            elif op == "reap":
                for pid in sorted(children):
                    kill_group(pid)
                    try:
                        os.waitpid(pid, 0)
                    except ChildProcessError:
                        pass
                children.clear()
                ended.clear()
                reply = {"ok": True}
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"bad request {op!r}"}
        except Exception as exc:  # noqa: BLE001 - the requester decides what a failure means
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        for pid in list(children):  # children that ended on their own
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                children.discard(pid)
                ended[pid] = status
        _send_message(sock, reply)
