"""Executors: run an experiment's units of work in this process, on a thread pool, or as Ray tasks.

Every executor has the same contract (``Executor.map``): each unit runs once, ``on_result`` is called
in the caller's thread as units finish (so the runner journals each result the moment it exists),
results come back in item order, and a unit that raises does not stop the others: every unit is
attempted, every finished one delivered, and only then is the first failure (lowest index) re-raised.
Finished work is therefore never lost, and a rerun of the experiment redoes only the failed units.

Ray is an optional extra and imported only when a Ray executor is made. Units shipped to Ray must be
picklable (module-level functions, pydantic records); workers import our packages from this source
tree through PYTHONPATH (local cluster) or from a copy uploaded with the job (``ray://`` clusters)
unless req2test is installed in the workers' site-packages.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bench import stopping
from bench.registry import Registry, UnknownName

T = TypeVar("T")
R = TypeVar("R")

RAY_EXTRA_HINT = "the Ray executor needs the optional extra: pip install 'req2test[ray]'"
SPEC_HELP = "use local, local:N, ray, ray:auto, ray:HOST:PORT or ray://HOST:PORT"


class ExecutorError(Exception):
    """A bad executor spec, a missing extra, an unreachable cluster, or a unit lost by the cluster; one line."""


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T],
            on_result: Callable[[int, R], None] | None = None) -> list[R]:
        """Run fn on every item; call on_result(index, result) as each finishes (in the caller's thread);
        return results in item order. An exception in fn is re-raised in the caller after on_result
        has been called for every unit that did finish (so finished work is journaled, never lost)."""
        ...

    def close(self) -> None: ...


class _Failures:
    """Unit failures collected while the other units finish; the first (lowest index) is re-raised."""

    def __init__(self) -> None:
        self.errors: dict[int, BaseException] = {}

    def add(self, index: int, error: BaseException) -> None:
        self.errors[index] = error

    def raise_first(self, total: int) -> None:
        if not self.errors:
            return
        first = min(self.errors)
        error = self.errors[first]
        others = sorted(self.errors)[1:]
        note = f"unit {first} of {total} failed"
        if others:
            shown = ", ".join(map(str, others[:10])) + (", ..." if len(others) > 10 else "")
            note += f"; {len(others)} more failed (units {shown})"
        error.add_note(note)
        raise error


# ----------------------------------------------------------------------------- local
class LocalExecutor:
    """In-process: sequential with one worker, a thread pool with more (units mostly wait on subprocesses)."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ExecutorError(f"local executor: workers must be at least 1, not {workers}")
        self.workers = workers
        self.name = "local" if workers == 1 else f"local:{workers}"

    def map(self, fn: Callable[[T], R], items: Sequence[T],
            on_result: Callable[[int, R], None] | None = None) -> list[R]:
        results: list[Any] = [None] * len(items)
        failures = _Failures()
        if self.workers == 1 or len(items) <= 1:
            for index, item in enumerate(items):
                try:
                    results[index] = fn(item)
                except Exception as exc:  # noqa: BLE001 - re-raised once the other units ran
                    failures.add(index, exc)
                    continue
                if on_result is not None:
                    on_result(index, results[index])
        else:
            self._pooled(fn, items, on_result, results, failures)
        failures.raise_first(len(items))
        return results

    def _pooled(self, fn: Callable[[T], R], items: Sequence[T], on_result: Callable[[int, R], None] | None,
                results: list[Any], failures: _Failures) -> None:
        pool = ThreadPoolExecutor(max_workers=min(self.workers, len(items)), thread_name_prefix="req2test-unit")
        try:
            pending: dict[Future, int] = {pool.submit(fn, item): index for index, item in enumerate(items)}
            while pending:
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)  # a timed wait sees Ctrl-C
                for future in sorted(done, key=pending.__getitem__):
                    index = pending.pop(future)
                    error = future.exception()
                    if error is not None:
                        failures.add(index, error)
                        continue
                    results[index] = future.result()
                    if on_result is not None:
                        on_result(index, results[index])
        except KeyboardInterrupt:
            stopping.abandon(pool, list(pending))  # units in flight are cut short; none is delivered
            raise
        except BaseException:
            # a failing on_result: start nothing new; running threads cannot be stopped, wait for them
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------------- ray
def _invoke(fn: Callable[[Any], Any], item: Any) -> Any:
    """The Ray task. fn travels as an argument: ray.remote takes only plain functions, units may be partials."""
    return fn(item)


def _source_root() -> Path | None:
    """The directory that holds our packages when they run from a source tree (editable or PYTHONPATH).

    None when req2test is installed in site-packages, where workers find it as they find any package.
    """
    import harness

    root = Path(harness.__file__).resolve().parents[1]
    if any(part in ("site-packages", "dist-packages") for part in root.parts):
        return None
    return root


def _worker_env(runtime_env: dict | None, address: str | None) -> dict:
    """The runtime_env that lets workers import harness and bench (the caller's keys are kept)."""
    env = dict(runtime_env or {})
    root = _source_root()
    if root is None:
        return env
    if address is not None and address.startswith("ray://"):
        # a remote cluster has no copy of this tree: upload our two packages with the job
        modules = list(env.get("py_modules", []))
        ours = [str(root / name) for name in ("harness", "bench")]
        env["py_modules"] = modules + [m for m in ours if m not in modules]
        return env
    env_vars = dict(env.get("env_vars", {}))
    given = env_vars.get("PYTHONPATH")
    # ${PYTHONPATH} is expanded by Ray in the worker: the cluster's own path is kept after ours
    rest = given if given is not None else os.pathsep.join(
        [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(root)] + ["${PYTHONPATH}"])
    env_vars["PYTHONPATH"] = f"{root}{os.pathsep}{rest}" if rest else str(root)
    env["env_vars"] = env_vars
    return env


def _use_local_token(address: str | None) -> None:
    """Send this machine's Ray token to an explicitly addressed cluster, as ray.init does for "auto".

    Ray 2.5x+ enables token authentication on clusters started where a token exists (~/.ray/auth_token,
    which a local ``ray.init()`` creates) but, given an explicit address, connects without one unless
    RAY_AUTH_MODE=token; a cluster without authentication accepts a token all the same. An explicit
    RAY_AUTH_MODE is respected.
    """
    if address in (None, "auto"):
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # Ray announces it at WARNING level, in the middle of our progress display
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)


def _probe(address: str) -> None:
    """Fail in seconds when nothing listens at HOST:PORT: ray.init retries an unreachable GCS for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        if isinstance(exc, ConnectionRefusedError):
            flag = "--ray-client-server-port" if address.startswith("ray://") else "--port"
            why += f"; is the cluster up? `ray start --head {flag}={port}` starts one"
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: {why}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _why(error: BaseException) -> str:
    """The error's first line, with the hint Ray buries in its chain when the cluster wants a token."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(f"{type(e).__name__}: {e}" for e in chain)
    if "AuthenticationError" in text or "InvalidAuthToken" in text:
        return (f"{_first_line(error)}: the cluster wants its authentication token (set RAY_AUTH_TOKEN or "
                "RAY_AUTH_TOKEN_PATH to it)")
    return _first_line(error)


class RayExecutor:
    """Units as Ray tasks: a local cluster (address None) or an existing one ("auto", "HOST:PORT", "ray://...")."""

    def __init__(self, address: str | None = None, num_cpus_per_task: float = 1,
                 runtime_env: dict | None = None) -> None:
        if num_cpus_per_task <= 0:
            raise ExecutorError(f"ray executor: num_cpus_per_task must be positive, not {num_cpus_per_task}")
        if address is None and "ray" not in sys.modules:
            # A cluster of our own serves only this process: keep it on the loopback interface
            # (read when ray is imported; Ray otherwise binds the machine's outward address).
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        # never phone home from a run (and machines without network would wait on it)
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            import ray
        except ImportError:
            raise ExecutorError(RAY_EXTRA_HINT) from None
        self._ray = ray
        self.address = address
        self.num_cpus_per_task = num_cpus_per_task
        self.runtime_env = _worker_env(runtime_env, address)
        self.name = "ray" if address is None else f"ray:{address}"
        self._owns_connection = False
        self._remote: Any = None

    def _connect(self) -> None:
        ray = self._ray
        if self._remote is not None:
            return
        if not ray.is_initialized():
            if self.address not in (None, "auto"):
                _probe(self.address)
            _use_local_token(self.address)
            # the job's runtime_env: py_modules from this machine can only be uploaded at the job level
            kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False,
                                      "runtime_env": self.runtime_env}
            if self.address is None:
                kwargs["include_dashboard"] = False
            try:
                ray.init(address=self.address, **kwargs)
            except Exception as exc:  # Ray raises many types for an unreachable cluster
                where = "a local Ray cluster" if self.address is None else f"the Ray cluster at {self.address}"
                raise ExecutorError(f"cannot start or reach {where}: {_why(exc)}") from exc
            self._owns_connection = True
            self._remote = ray.remote(_invoke).options(num_cpus=self.num_cpus_per_task)
        else:
            # someone else's connection (e.g. a notebook's ray.init()): our environment goes with each task
            self._remote = ray.remote(_invoke).options(num_cpus=self.num_cpus_per_task, runtime_env=self.runtime_env)

    def map(self, fn: Callable[[T], R], items: Sequence[T],
            on_result: Callable[[int, R], None] | None = None) -> list[R]:
        if not items:
            return []
        self._connect()
        ray = self._ray
        from ray.exceptions import RayError, RayTaskError

        results: list[Any] = [None] * len(items)
        failures = _Failures()
        fn_ref = ray.put(fn)  # pickled once, not once per task
        pending = {self._remote.remote(fn_ref, item): index for index, item in enumerate(items)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                # collect whatever else finished meanwhile, so a burst costs one wait
                more, _ = ray.wait([r for r in pending if r not in ready], num_returns=len(pending) - len(ready),
                                   timeout=0) if len(pending) > len(ready) else ([], [])
                for ref in sorted(ready + more, key=pending.__getitem__):
                    index = pending.pop(ref)
                    try:
                        results[index] = ray.get(ref)
                    except RayTaskError as exc:
                        cause = getattr(exc, "cause", None)
                        # the worker's own exception (type and message); the Ray error keeps the remote traceback
                        error = cause if isinstance(cause, Exception) else exc
                        if error is not exc:
                            error.__cause__ = exc
                        failures.add(index, error)
                        continue
                    except RayError as exc:
                        # the cluster lost the unit (worker crash, OOM kill, runtime_env setup failure)
                        error = ExecutorError(f"unit {index} failed on Ray: {type(exc).__name__}: {_first_line(exc)}")
                        error.__cause__ = exc
                        failures.add(index, error)
                        continue
                    if on_result is not None:
                        on_result(index, results[index])
        except BaseException:
            # Ctrl-C or a failing on_result: stop what is still queued or running on the cluster
            for ref in pending:
                try:
                    ray.cancel(ref)
                except Exception:  # noqa: BLE001, S110 - best effort while already failing
                    pass
            raise
        failures.raise_first(len(items))
        return results

    def close(self) -> None:
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_connection = False
        self._remote = None


# ----------------------------------------------------------------------------- spec
_HOST_PORT = re.compile(r"^[A-Za-z0-9_.\-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$")

ENTRY_POINT_GROUP = "req2test.executors"

# Makes an executor from the part of the spec after "KIND:" (None when the spec is only KIND); raises
# ValueError, worded without the spec, for an argument it cannot use.
ExecutorFactory = Callable[[str | None], Executor]


class UnknownExecutor(ExecutorError, UnknownName):
    """No executor of that kind; an ExecutorError, as every other refusal of ``make_executor``."""


def _local(argument: str | None) -> Executor:
    if argument is None:
        return LocalExecutor()
    if not argument.isdigit() or int(argument) < 1:
        raise ValueError(f"the worker count must be a positive integer ({SPEC_HELP})")
    return LocalExecutor(int(argument))


def _ray(argument: str | None) -> Executor:
    if argument is None:
        return RayExecutor()
    address = f"ray:{argument}" if argument.startswith("//") else argument  # "ray://HOST:PORT" split at its scheme
    if address != "auto" and not address.startswith("ray://") and not _HOST_PORT.match(address):
        raise ValueError("the Ray address must be auto, HOST:PORT or ray://HOST:PORT")
    if address.startswith("ray://") and not _HOST_PORT.match(address.removeprefix("ray://")):
        raise ValueError("a Ray Client address is ray://HOST:PORT")
    return RayExecutor(address=address)


# A third party adds a kind (a batch scheduler, say) as
# ``[project.entry-points."req2test.executors"] slurm = "pkg.mod:make_slurm_executor"`` (an ExecutorFactory).
REGISTRY: Registry[ExecutorFactory] = Registry(
    "executor", None, {"local": "harness.experiment.executors:_local", "ray": "harness.experiment.executors:_ray"},
    ENTRY_POINT_GROUP, error=UnknownExecutor, hint=SPEC_HELP)


def make_executor(spec: str) -> Executor:
    """The executor a spec names: local, local:N, ray (a local cluster), ray:auto, ray:HOST:PORT, ray://HOST:PORT;
    in general KIND or KIND:ARGUMENT, KIND a name in ``REGISTRY``."""
    text = (spec or "").strip()
    kind, colon, argument = text.partition(":")
    try:
        factory = REGISTRY.get(kind)
    except UnknownName as exc:
        raise UnknownExecutor(f"executor {spec!r}: {exc}") from None
    try:
        return factory(argument if colon else None)
    except ValueError as exc:
        raise ExecutorError(f"executor {spec!r}: {exc}") from None
