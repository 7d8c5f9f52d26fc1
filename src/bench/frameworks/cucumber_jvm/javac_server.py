"""A warm ``javac``: one JVM that compiles many source sets (``java/JavacServer.java``).

A cold ``javac`` of java-algorand-sdk's 50 test sources takes ~5 s, most of it JVM start and
javac warming up; the builder compiles a positive and a negative workspace per instance and
the judge a workspace per prediction, so the same compiler stays loaded in one process and a
compile costs javac's own work. The server runs ``javax.tools.JavaCompiler.run`` with javac's
own arguments and nothing else: it is req2test's process (the ground truth's and the judge's
compiles of *source*; compiling runs no test code — annotation processing is off, ``-proc:none``).

``JavacPool`` keeps one server per worker thread that asks, started on first use, so compiles of
different workers never wait on each other; ``close`` ends them. A server that dies (or a
compile that outlives ``timeout``) is restarted for the next request.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Self

from bench.environments import cache_dir

SERVER_CLASS = "JavacServer"
# what every compile of req2test gets: no annotation processors (they would run code at
# compile time), no warnings (noise in what a user reads), every error, and each diagnostic's
# first line as ``/abs/path/X.java:LINE:COL: error: message`` (``-XDrawDiagnostics`` would name
# the file without its directory; ``ERROR_LINE`` reads these)
BASE_ARGS = ("-proc:none", "-nowarn", "-encoding", "UTF-8", "-Xmaxerrs", "100000",
             "-XDdiags.layout=%f:%l:%c: %p%L%m")
ERROR_LINE = re.compile(r"^(?P<file>.+\.java):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.*)$")


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    seconds: float
    output: str  # javac's diagnostics (``ERROR_LINE`` for each error's first line)

    def errors(self) -> list[tuple[str, int, int, str]]:
        """(file as javac named it, line, column, message) of every error."""
        return [(m["file"], int(m["line"]), int(m["col"]), m["message"])
                for m in map(ERROR_LINE.match, self.output.splitlines()) if m]


def helper_classes(class_name: str, javac: str = "javac") -> Path:
    """The directory holding req2test's own ``java/<class_name>.java`` compiled (JDK classes
    only), under the cache, compiled once per source text."""
    text = (resources.files("bench.frameworks.cucumber_jvm") / "java" / f"{class_name}.java").read_text(
        encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    target = cache_dir("java-helpers", "REQ2TEST_JAVA_HELPERS_CACHE") / f"{class_name}-{digest}"
    if (target / f"{class_name}.class").is_file():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}")
    staging.mkdir(parents=True, exist_ok=True)
    (staging / f"{class_name}.java").write_text(text, encoding="utf-8")
    proc = subprocess.run([javac, "-nowarn", "-d", str(staging), str(staging / f"{class_name}.java")],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"cannot compile req2test's {class_name}: {(proc.stdout + proc.stderr)[-400:]}")
    try:
        staging.rename(target)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return target


class JavacServer:
    """One warm compiler process (not thread-safe: ``JavacPool`` gives each thread its own)."""

    def __init__(self, java: str = "java", javac: str = "javac", heap: str = "1g") -> None:
        self.java, self.javac, self.heap = java, javac, heap
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        classes = helper_classes(SERVER_CLASS, self.javac)
        return subprocess.Popen([self.java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                 "-cp", str(classes), SERVER_CLASS],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, encoding="utf-8", bufsize=1)

    def compile(self, args: Sequence[str], timeout: float = 600.0) -> CompileResult:
        """javac ``BASE_ARGS + args`` (``-d``, ``-cp``, sources or ``@argfile``)."""
        start = time.perf_counter()
        for attempt in (0, 1):
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            killer = threading.Timer(timeout, proc.kill)
            killer.start()
            try:
                for arg in (*BASE_ARGS, *args):
                    if "\n" in arg:
                        raise ValueError(f"a javac argument holds a line break: {arg!r}")
                    proc.stdin.write(f"ARG {arg}\n")
                proc.stdin.write("RUN\n")
                proc.stdin.flush()
                status: int | None = None
                lines: list[str] = []
                for line in proc.stdout:
                    line = line.rstrip("\n")
                    if line.startswith("EXIT "):
                        status = int(line[5:])
                    elif line.startswith("| "):
                        lines.append(line[2:])
                    elif line == "DONE":
                        break
            except (BrokenPipeError, OSError):
                status = None
            finally:
                killer.cancel()
            if status is not None:
                return CompileResult(status == 0, time.perf_counter() - start, "\n".join(lines))
            self.close()
            if attempt:
                break
        return CompileResult(False, time.perf_counter() - start, "the javac server died (or timed out)")

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


class JavacPool:
    """One ``JavacServer`` per calling thread."""

    def __init__(self, java: str = "java", javac: str = "javac") -> None:
        self.java, self.javac = java, javac
        self._local = threading.local()
        self._all: list[JavacServer] = []
        self._lock = threading.Lock()

    def compile(self, args: Sequence[str], timeout: float = 600.0) -> CompileResult:
        server = getattr(self._local, "server", None)
        if server is None:
            server = JavacServer(self.java, self.javac)
            self._local.server = server
            with self._lock:
                self._all.append(server)
        return server.compile(args, timeout)

    def close(self) -> None:
        with self._lock:
            for server in self._all:
                server.close()
            self._all.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["BASE_ARGS", "ERROR_LINE", "CompileResult", "JavacPool", "JavacServer", "helper_classes"]
