"""Drive a framework's warm workers (behave's: ``bench.frameworks.behave.worker``) from the builder.

One worker process per core; each serves JSON-line requests and forks per run.
The pool hands out requests from a queue to whichever worker is free and
restarts a worker that died, so one pathological test never stalls a build.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from bench import SOURCE_ROOT
from bench.frameworks.messages import BuildInit, BuildRequest

_SRC_DIR = SOURCE_ROOT


class WorkerError(RuntimeError):
    """The worker process itself failed (not the test it ran)."""


@dataclass(frozen=True)
class WorkerSpec:
    """How to start and initialise a worker; paths are relative to ``root``."""

    root: Path
    worker_module: str  # ``python -m`` module of the framework's warm worker (its build_worker_module)
    framework: str  # registry name: whose language generates and applies mutants
    features_dir: str
    python_path: list[str]
    production: list[str]
    import_packages: list[str]
    preload: bool
    python: str = sys.executable
    extra_env: dict[str, str] = field(default_factory=dict)
    # "bwrap": no network, read-only system and production tree, only root's parent writable
    isolation: str = "none"

    def init_request(self) -> BuildInit:
        return {
            "op": "init",
            "root": str(self.root),
            "features_dir": str(self.root / self.features_dir),
            "python_path": [str(self.root / p) for p in self.python_path],
            "production_dirs": [str(self.root / p) for p in self.production],
            "import_packages": self.import_packages,
            "preload": self.preload,
        }


class WorkerProcess:
    """One warm worker: a subprocess speaking JSON lines."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}
        env["PYTHONPATH"] = os.pathsep.join([_SRC_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # never pollute a project tree with __pycache__
        env.update(spec.extra_env)
        command = [spec.python, "-m", spec.worker_module]
        if spec.isolation == "bwrap":
            from bench.isolation import wrap

            command = wrap(command, writable=[spec.root.parent],
                           readonly=[spec.root / p for p in spec.production], cwd=spec.root)
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=str(spec.root),
        )
        self.init_reply = self.call(spec.init_request())
        if "error" in self.init_reply:
            raise WorkerError(self.init_reply["error"])

    def call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"worker died: {exc}") from exc
        if not line:
            raise WorkerError(f"worker exited with code {self.proc.poll()}")
        return json.loads(line)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.call({"op": "quit"})
        except WorkerError:
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()


class WorkerPool:
    """``size`` warm workers sharing a request queue."""

    def __init__(self, spec: WorkerSpec, roots: list[Path] | None = None) -> None:
        """One worker per root: each root is a private copy of the project, so tests
        that write scratch files in their tree never race with another worker."""
        self.specs = [replace(spec, root=root) for root in (roots or [spec.root])]
        self.workers: list[WorkerProcess] = []

    def __enter__(self) -> Self:
        self.workers = [WorkerProcess(self.specs[0])]
        # Start the rest only after the first initialised: a broken project fails fast.
        self.workers += [WorkerProcess(spec) for spec in self.specs[1:]]
        return self

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers:
            worker.close()

    @property
    def init_reply(self) -> dict[str, Any]:
        return self.workers[0].init_reply

    def call_one(self, request: BuildRequest) -> dict[str, Any]:
        return self.workers[0].call(request)

    def map(self, requests: Iterable[BuildRequest],
            on_result: Callable[[int, dict[str, Any]], None] | None = None,
            on_result_in_slot: Callable[[int, dict[str, Any], int], None] | None = None) -> list[dict[str, Any]]:
        """Run every request; results come back in request order.

        ``on_result`` is called under a lock as each result arrives; ``on_result_in_slot``
        without a lock, in the thread of the worker slot that produced it (for follow-up
        work that should not wait for the other slots)."""
        items = list(requests)
        results: list[dict[str, Any] | None] = [None] * len(items)
        todo: queue.Queue[int] = queue.Queue()
        for index in range(len(items)):
            todo.put(index)
        lock = threading.Lock()
        errors: list[BaseException] = []

        def serve(slot: int) -> None:
            while True:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    reply = self._call_with_restart(slot, items[index])
                except BaseException as exc:  # noqa: BLE001 - surfaced after the threads join
                    errors.append(exc)
                    return
                results[index] = reply
                if on_result_in_slot is not None:
                    try:
                        on_result_in_slot(index, reply, slot)
                    except BaseException as exc:  # noqa: BLE001 - surfaced after the threads join
                        errors.append(exc)
                        return
                if on_result is not None:
                    with lock:
                        on_result(index, reply)

        threads = [threading.Thread(target=serve, args=(slot,), daemon=True)
                   for slot in range(len(self.workers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return [r if r is not None else {"exit": "worker_error"} for r in results]

    def _call_with_restart(self, slot: int, request: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return self.workers[slot].call(request)
        except WorkerError:
            self.workers[slot].close()
            self.workers[slot] = WorkerProcess(self.specs[slot])
            return self.workers[slot].call(request)
