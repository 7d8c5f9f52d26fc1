"""Executors without a cluster: the local executor's contract, spec parsing, the workers' environment."""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
import time

import pytest

from harness.experiment import executors
from harness.experiment.executors import ExecutorError, LocalExecutor, _worker_env, make_executor


def slow_square(n: int) -> int:
    time.sleep(0.02 * ((5 - n) % 3))  # later items often finish first
    return n * n


def square_or_fail(n: int) -> int:
    if n in (2, 4):
        raise ValueError(f"item {n} failed")
    return n * n


@pytest.mark.parametrize("workers", [1, 2])
def test_results_in_item_order_and_each_delivered_once_in_the_callers_thread(workers: int) -> None:
    caller = threading.get_ident()
    delivered: list[tuple[int, int]] = []

    def on_result(index: int, result: int) -> None:
        assert threading.get_ident() == caller
        delivered.append((index, result))

    assert LocalExecutor(workers).map(slow_square, list(range(6)), on_result=on_result) == [0, 1, 4, 9, 16, 25]
    assert sorted(delivered) == [(i, i * i) for i in range(6)]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_failure_is_raised_after_every_other_unit_was_delivered(workers: int) -> None:
    delivered: list[int] = []
    with pytest.raises(ValueError, match="item 2 failed") as raised:
        LocalExecutor(workers).map(square_or_fail, list(range(6)), on_result=lambda i, _: delivered.append(i))
    assert sorted(delivered) == [0, 1, 3, 5]
    assert raised.value.__notes__ == ["unit 2 of 6 failed; 1 more failed (units 4)"]


def test_thread_pool_runs_units_concurrently() -> None:
    started = time.monotonic()
    LocalExecutor(4).map(time.sleep, [0.2] * 4)
    assert time.monotonic() - started < 0.6


def test_empty_and_bad_worker_counts() -> None:
    assert LocalExecutor(3).map(slow_square, []) == []
    with pytest.raises(ExecutorError):
        LocalExecutor(0)


class FakeRay:
    def __init__(self, address: str | None = None) -> None:
        self.address = address
        self.name = "ray" if address is None else f"ray:{address}"


@pytest.mark.parametrize(("spec", "name"), [
    ("local", "local"), ("local:1", "local"), (" local:4 ", "local:4"),
    ("ray", "ray"), ("ray:auto", "ray:auto"), ("ray:10.1.2.3:6379", "ray:10.1.2.3:6379"),
    ("ray:head-node.internal:6379", "ray:head-node.internal:6379"), ("ray://head:10001", "ray:ray://head:10001"),
    ("ray:ray://head:10001", "ray:ray://head:10001"),
])
def test_specs(monkeypatch: pytest.MonkeyPatch, spec: str, name: str) -> None:
    monkeypatch.setattr(executors, "RayExecutor", FakeRay)
    assert make_executor(spec).name == name


@pytest.mark.parametrize("spec", ["", "locale", "local:", "local:0", "local:-2", "local:two", "ray:", "ray:head",
                                  "ray:head:port", "ray://head", "dask", "ray://"])
def test_bad_specs_are_one_line_errors(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setattr(executors, "RayExecutor", FakeRay)
    with pytest.raises(ExecutorError) as raised:
        make_executor(spec)
    assert "\n" not in str(raised.value) and repr(spec) in str(raised.value)


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    with pytest.raises(ExecutorError, match=r"pip install 'req2test\[ray\]'"):
        make_executor("ray:auto")


def test_workers_get_our_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    root = executors._source_root()
    assert root is not None and (root / "harness" / "__init__.py").is_file()  # the tests run from the source tree
    monkeypatch.setenv("PYTHONPATH", f"/opt/extra:{root}")
    env = _worker_env(None, None)
    assert env == {"env_vars": {"PYTHONPATH": f"{root}:/opt/extra:${{PYTHONPATH}}"}}
    # the caller's keys are kept, its PYTHONPATH comes after ours
    given = {"env_vars": {"PYTHONPATH": "/tests", "X": "1"}, "pip": ["six"]}
    assert _worker_env(given, "auto") == {"env_vars": {"PYTHONPATH": f"{root}:/tests", "X": "1"}, "pip": ["six"]}
    assert given["env_vars"]["PYTHONPATH"] == "/tests"  # not modified in place
    # a remote cluster gets a copy of the packages instead
    assert _worker_env(None, "ray://head:10001") == {"py_modules": [str(root / "harness"), str(root / "bench")]}


def test_installed_packages_need_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executors, "_source_root", lambda: None)
    assert _worker_env(None, "ray://head:10001") == {}
    assert _worker_env({"env_vars": {"A": "b"}}, None) == {"env_vars": {"A": "b"}}


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_an_unreachable_cluster_fails_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """ray.init alone retries for minutes; the executor probes the address first."""
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # if ray is first imported here: loopback only
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once closed
    importlib.import_module("ray")  # importing ray takes 5-20 s on a loaded machine: not what is measured
    started = time.monotonic()
    with pytest.raises(ExecutorError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port}: .*ray start --head"):
        make_executor(f"ray:127.0.0.1:{port}").map(abs, [1])
    # the probe, not ray.init's minutes of retries (a loaded machine stretches seconds, never minutes)
    assert time.monotonic() - started < 60
