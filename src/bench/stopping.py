"""Stopping a long run on Ctrl-C or SIGTERM: promptly, in every phase, keeping only what finished.

A terminal's Ctrl-C signals its foreground process group. The sandboxes and runners that judge or
build run in sessions of their own (a test must not signal us, and a sandbox is killed whole by its
session), so the signal never reaches them; and a ``ThreadPoolExecutor`` left by its ``with`` block
waits for every queued item. Unhandled, an interrupt therefore let the whole run finish first.

On an interrupt the main thread calls ``stop()`` (or ``abandon()`` for a pool): from then on
``requested()`` is true, so work in flight records nothing (it was cut short, not judged: a rerun
does it again), every process this one started — with the sessions and groups they made — is
killed, and no new one starts (``check()`` at the places that start them).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Any, TypeVar

_requested = threading.Event()
_run_started: float | None = None  # seconds since boot when the main thread's run began (None: unknown)
T = TypeVar("T")


class Interrupted(KeyboardInterrupt):
    """A run stopped by the user after ``done`` of its ``total`` units were finished and kept."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted: {done} of {total} done")
        self.done = done
        self.total = total


def begin_run() -> None:
    """A run starts: in the main thread, the mark of an earlier interrupted run of this process (a
    notebook's interrupt) is cleared. A worker thread's run leaves it: its own pool may be stopping."""
    global _run_started
    if threading.current_thread() is threading.main_thread():
        _requested.clear()
        _run_started = _uptime()


def requested() -> bool:
    """Whether the run is stopping: work in flight must not record a result."""
    return _requested.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` when the run is stopping: call before starting a process."""
    if _requested.is_set():
        raise KeyboardInterrupt


def sleep(seconds: float) -> None:
    """``time.sleep`` that a stop request ends early (raising ``KeyboardInterrupt``): a retry's backoff."""
    _requested.wait(seconds)
    check()


def stop() -> None:
    """The run stops: mark it so and kill every process it started (in a notebook or a test, the
    processes this one had started before the run are spared)."""
    _requested.set()
    kill_descendants(since=_run_started)


def interrupt_on_sigterm() -> None:
    """SIGTERM stops the run as Ctrl-C does; its default would leave our sandboxes running."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def abandon(pool: ThreadPoolExecutor, futures: Iterable[Future[object]]) -> None:
    """After an interrupt: drop ``pool``'s queued work, kill what is in flight and wait for its
    threads to unwind (killing again whatever they start meanwhile), so nothing is left behind."""
    _requested.set()  # first: a worker taking an item from the queue meanwhile sees it
    pool.shutdown(wait=False, cancel_futures=True)
    stop()
    pending = {f for f in futures if not f.done()}  # a cancelled future never counts as done for wait()
    while pending:
        wait(pending, timeout=0.25)
        kill_descendants(since=_run_started)  # as stop(): what this process had before the run is spared
        pending = {f for f in pending if not f.done()}


def result(future: Future[T]) -> T:
    """``future.result()``, waited for in slices: the kernel may hand the terminal's SIGINT to a worker
    thread, and a main thread parked in an untimed wait would not see it until the future is done."""
    while not future.done():
        wait([future], timeout=0.5)
    return future.result()


class StoppablePool(ThreadPoolExecutor):
    """A thread pool whose ``with`` block, left by an interrupt, runs none of its queued items and
    ends the ones in flight (``abandon``); the plain pool's exit would run every queued item first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._submitted: list[Future[Any]] = []
        self._submitted_lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        with self._submitted_lock:
            self._submitted.append(future)
        return future

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            with self._submitted_lock:
                submitted = list(self._submitted)
            abandon(self, submitted)
        return super().__exit__(exc_type, exc, tb)


def interruptible(call: Callable[[], T]) -> T:
    """``call()``, given up when the run stops: from a worker thread it runs in a daemon thread of its
    own, since a network call in flight (a model's answer) cannot be cancelled and must not hold a
    stopping run. The main thread needs none of this: the signal interrupts its call."""
    if threading.current_thread() is threading.main_thread():
        return call()
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="req2test-call", daemon=True).start()
    while not done.wait(0.2):
        check()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def exit_interrupted(code: int = 130) -> None:
    """The end of an interrupted command: kill what a sequential path left running, then exit at once.
    Everything worth keeping is journaled (fsynced) by now; the interpreter's own teardown would wait
    for a worker thread still unwinding and, with litellm loaded, takes seconds by itself."""
    _requested.set()
    kill_descendants()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def kill_descendants(since: float | None = None) -> None:
    """SIGKILL every live descendant of this process and every process of a session or group one of
    them leads (a daemon a test double-forked out of our tree still belongs to one); ``since``: only
    those started since then (seconds since boot).

    The tree is frozen (SIGSTOP) before anything in it is killed: killing as we scan let a child
    forked between the scan and the kill, one that then left our session (``setsid``, as bubblewrap
    does), be reparented to init out of the tree, and a calibration stopped with SIGTERM hung on
    the pipe such an orphan still held. A stopped process cannot fork, and its children stay in the
    tree, so a few scans find all of it."""
    stopped: set[int] = set()
    for _ in range(50):
        new = _victims(since) - stopped
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
        time.sleep(0.005)
    _signal_all(stopped, signal.SIGKILL)
    for _ in range(10):  # what escaped the freeze (more than 50 generations): killed as found
        victims = _victims(since)
        if not victims:
            return
        _signal_all(victims, signal.SIGKILL)
        time.sleep(0.02)


def _signal_all(pids: set[int], signum: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _victims(since: float | None) -> set[int]:
    """This process's live descendants and the members of any group or session one of them leads."""
    me = os.getpid()
    own_group, own_session = os.getpgid(0), os.getsid(0)
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    tree: set[int] = set()
    todo = list(children.get(me, []))
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(children.get(pid, []))
    if since is not None:
        tree = {p for p in tree if table[p][3] >= since}
    groups = {table[p][1] for p in tree} - {own_group}
    sessions = {table[p][2] for p in tree} - {own_session}
    victims = tree | {p for p, (_, group, session, started) in table.items()
                      if (group in groups or session in sessions) and (since is None or started >= since)}
    victims.discard(me)
    return victims


def _processes() -> dict[int, tuple[int, int, int, float]]:
    """(parent, group, session, start in seconds since boot) of every live process (zombies are
    already dead)."""
    table: dict[int, tuple[int, int, int, float]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
        if fields[0] in (b"Z", b"X"):
            continue
        table[int(entry.name)] = (int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]) / _TICKS)
    return table


_TICKS = os.sysconf("SC_CLK_TCK")


def _uptime() -> float:
    """Seconds since boot, the clock of a process's start time in /proc (a little early: a process
    started in the same tick as the run counts as the run's)."""
    with open("/proc/uptime", encoding="ascii") as fh:
        return float(fh.read().split()[0]) - 2 / _TICKS
