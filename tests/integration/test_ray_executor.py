"""The Ray executor on a real local cluster: same results as the local executor, failures, real units of work.

The module starts its own single-node cluster (``ray start --head --block`` in a temp dir, on the
loopback interface) and stops it by its process id; it never touches another Ray cluster on the machine.
Token authentication is off on both sides: Ray caches the mode when first imported, so a token
cluster would depend on which test imported ray first (the token path is checked by hand).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from pydantic import BaseModel

from bench.evaluate import EvaluateOptions, evaluate
from bench.model import InstanceResult, Prediction
from harness.experiment.executors import LocalExecutor, RayExecutor
from harness.views import materialize
from tests.conftest import EXAMPLE, REPO

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                 reason="ray is not installed (pip install 'req2test[ray]')")]

SRC = REPO / "src"


# ----------------------------------------------------------------------------- units shipped to workers
class Item(BaseModel):
    n: int
    text: str


class Described(BaseModel):
    n: int
    square: int
    digest: str


class UnitBroken(Exception):
    pass


def describe(item: Item) -> Described:
    time.sleep(0.05 * (item.n % 3))  # finish out of order
    return Described(n=item.n, square=item.n * item.n, digest=hashlib.sha256(item.text.encode()).hexdigest()[:12])


def describe_or_break(item: Item) -> Described:
    if item.n == 3:
        raise UnitBroken(f"unit {item.n} is broken")
    return describe(item)


def where(_: Item) -> tuple[int, str]:
    import harness

    return os.getpid(), harness.__file__


class EvaluationJob(BaseModel):
    dataset_dir: str
    prediction: Prediction
    run_dir: str


def evaluate_job(job: EvaluationJob) -> InstanceResult:
    run = Path(job.run_dir)
    run.mkdir(parents=True)
    predictions = run / "predictions.jsonl"
    predictions.write_text(job.prediction.model_dump_json() + "\n", encoding="utf-8")
    evaluate(Path(job.dataset_dir), predictions, run / "evaluation",
             EvaluateOptions(workers=1, instances=[job.prediction.instance_id], mutants=False, resamples=20))
    line = (run / "evaluation" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return InstanceResult.model_validate_json(line)


ITEMS = [Item(n=n, text=f"item {n}") for n in range(6)]


# ----------------------------------------------------------------------------- the cluster
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster(BaseModel):
    address: str
    client_address: str
    temp_dir: str
    start_seconds: float


def _stop(proc: subprocess.Popen, temp_dir: str) -> None:
    """SIGTERM to our `ray start --block`: it stops the processes it started; leftovers are ours by their dir."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session we created for it
            proc.wait(timeout=10)
    time.sleep(0.5)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if temp_dir in cmdline:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    with pytest.MonkeyPatch.context() as mp:
        # read by ray when it is imported: the cluster and this driver stay on 127.0.0.1
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")
        mp.setenv("RAY_AUTH_MODE", "disabled")
        from ray._private import ray_constants, services

        host = "127.0.0.1" if not ray_constants.ENABLE_RAY_CLUSTER else services.get_node_ip_address()
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # workers must get our packages from the executor, not from the cluster
        if ray_constants.ENABLE_RAY_CLUSTER:  # ray was imported earlier by this process: match its view
            env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
        temp_dir = tempfile.mkdtemp(prefix="r2t-ray-", dir="/tmp")  # short: Ray's unix socket paths
        port, client_port = _free_port(), _free_port()
        log = Path(temp_dir) / "ray-start.log"
        started = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}",
                 f"--ray-client-server-port={client_port}", f"--dashboard-agent-listen-port={_free_port()}",
                 "--num-cpus=2", "--disable-usage-stats", "--include-dashboard=false", f"--temp-dir={temp_dir}"],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=temp_dir, start_new_session=True)
        try:
            while "block forever" not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() - started > 90:
                    pytest.fail(f"ray start did not come up:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.1)
            yield Cluster(address=f"{host}:{port}", client_address=f"ray://{host}:{client_port}",
                          temp_dir=temp_dir, start_seconds=round(time.monotonic() - started, 2))
        finally:
            _stop(proc, temp_dir)
            shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_executor(ray_cluster: Cluster) -> Iterator[RayExecutor]:
    # the test module itself must be importable by the workers (its functions and models travel by reference)
    executor = RayExecutor(address=ray_cluster.address, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        yield executor
    finally:
        executor.close()


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example without mutants and with one run per check: what the units below need, in seconds."""
    from bench.builder.pipeline import BuildOptions, build_dataset

    base = tmp_path_factory.mktemp("ray-example")
    shutil.copytree(EXAMPLE, base / "tinyshop")
    build_dataset(str(base / "tinyshop"), base / "dataset", BuildOptions(workers=2, timeout=60, mutants=False, runs=1))
    return base / "dataset"


def _two_instances(dataset_dir: Path) -> list[str]:
    from bench.dataset import load_dataset

    instances = load_dataset(dataset_dir).instances
    return [instances[0].id, instances[-1].id]


# ----------------------------------------------------------------------------- tests
def test_same_results_as_local_in_item_order(ray_executor: RayExecutor) -> None:
    delivered: list[tuple[int, Described]] = []
    got = ray_executor.map(describe, ITEMS, on_result=lambda index, result: delivered.append((index, result)))
    expected = LocalExecutor().map(describe, ITEMS)
    assert got == expected
    assert [r.n for r in got] == [0, 1, 2, 3, 4, 5]
    assert sorted(index for index, _ in delivered) == list(range(len(ITEMS)))  # once per unit
    assert all(result == expected[index] for index, result in delivered)


def test_units_run_in_worker_processes_that_import_our_source(ray_executor: RayExecutor) -> None:
    import harness

    found = ray_executor.map(where, ITEMS[:4])
    assert all(pid != os.getpid() for pid, _ in found)
    assert {path for _, path in found} == {harness.__file__}


def test_a_failing_unit_is_raised_after_the_others_were_delivered(ray_executor: RayExecutor) -> None:
    delivered: list[int] = []
    with pytest.raises(UnitBroken, match="unit 3 is broken") as raised:
        ray_executor.map(describe_or_break, ITEMS, on_result=lambda index, _: delivered.append(index))
    assert sorted(delivered) == [0, 1, 2, 4, 5]
    assert "unit 3 of 6 failed" in raised.value.__notes__
    assert "describe_or_break" in str(raised.value.__cause__)  # the worker's traceback is kept
    # the executor is still usable after a failure
    assert ray_executor.map(describe, ITEMS[:2]) == LocalExecutor().map(describe, ITEMS[:2])


def test_views_materialize_as_ray_tasks(ray_executor: RayExecutor, tiny_dataset: Path, tmp_path: Path) -> None:
    ids = _two_instances(tiny_dataset)
    remote = ray_executor.map(partial(materialize, str(tiny_dataset), kind="th", cache_dir=tmp_path / "ray"), ids)
    local = LocalExecutor().map(partial(materialize, str(tiny_dataset), kind="th", cache_dir=tmp_path / "local"), ids)
    ignore = {"build_seconds"}
    assert [v.manifest.model_dump(exclude=ignore) for v in remote] == \
           [v.manifest.model_dump(exclude=ignore) for v in local]
    assert [v.manifest.instance_id for v in remote] == ids
    assert all(v.root.is_dir() and v.root.is_relative_to(tmp_path / "ray") and v.manifest.hidden for v in remote)


def test_evaluation_as_ray_tasks_matches_local(ray_executor: RayExecutor, tiny_dataset: Path, tmp_path: Path) -> None:
    from bench.calibrate import calibration_predictions

    ids = _two_instances(tiny_dataset)
    oracle = {p.instance_id: p for p in calibration_predictions(tiny_dataset)["oracle"]}

    def jobs(side: str) -> list[EvaluationJob]:
        return [EvaluationJob(dataset_dir=str(tiny_dataset), prediction=oracle[i],
                              run_dir=str(tmp_path / side / str(k))) for k, i in enumerate(ids)]

    remote = ray_executor.map(evaluate_job, jobs("ray"))
    local = LocalExecutor(workers=2).map(evaluate_job, jobs("local"))
    ignore = {"evaluation_seconds", "confirmation"}  # phase timings differ run to run
    assert [r.model_dump(exclude=ignore) for r in remote] == [r.model_dump(exclude=ignore) for r in local]
    assert [r.instance_id for r in remote] == ids
    assert all(r.outcome.value == "pass" and r.coverage_jaccard > 0 for r in remote), remote


def test_ray_client_address_uploads_our_packages(ray_cluster: Cluster) -> None:
    """ray://: a driver of its own (one Ray connection per process); workers get harness/bench from the upload."""
    script = textwrap.dedent(f"""
        import json

        from harness.experiment.executors import make_executor

        def probe(n):
            import harness
            return n, harness.__file__

        executor = make_executor({ray_cluster.client_address!r})
        print("RESULT", json.dumps(executor.map(probe, [1, 2])))
        executor.close()
    """)
    env = dict(os.environ, PYTHONPATH=str(SRC))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                          cwd=ray_cluster.temp_dir, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT", 1)[1])
    assert [n for n, _ in result] == [1, 2]
    # the uploaded copy lives in the cluster's session dir, not in this source tree
    assert all(path.startswith(ray_cluster.temp_dir) and path.endswith("harness/__init__.py") for _, path in result)


def _verdicts(run_dir: Path) -> dict[str, list[tuple]]:
    """Everything a configuration scored, minus timings."""
    out = {}
    for results in sorted(run_dir.glob("configs/*/results.jsonl")):
        rows = [json.loads(line) for line in results.read_text().splitlines()]
        predictions = [json.loads(line) for line in results.with_name("predictions.jsonl").read_text().splitlines()]
        out[results.parent.name] = [
            (r["instance_id"], r["outcome"], r["kill_complete"], r["api_f1"], r["coverage_jaccard"], r["mutant_recall"],
             r["generated_kills"], tuple(r["generated_api_calls"])) for r in rows] + [
            (p["instance_id"], json.dumps(p["files"], sort_keys=True), p["metadata"]["extra"].get("candidate"),
             tuple(p["metadata"]["extra"].get("prerequisites_given", []))) for p in predictions]
    return out


def test_an_experiment_on_ray_matches_the_local_run(ray_cluster: Cluster, example_dataset: Path,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`req2test run` with generations and evaluations as Ray tasks: the same configurations as locally."""
    import yaml

    from harness.experiment.runner import ExperimentRunner, prepare

    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "ray-vs-local", "dataset": str(example_dataset), "cache": False,
        "instances": {"ids": ["tinyshop/features/cart.feature:13", "tinyshop/features/cart.feature:19",
                              "tinyshop/features/tax.feature:9"]},
        "arms": [{"name": "dec", "agent": "oracle", "decompose": "sandbox"},
                 {"name": "best2", "agent": "empty", "n": 2, "selectors": ["static", "oracle"]}]}))
    runs = {}
    for spec in ("local", f"ray:{ray_cluster.address}"):
        experiment, plan, dataset = prepare(path)
        run_dir = tmp_path / spec.split(":")[0]
        ExperimentRunner(experiment, plan, dataset, run_dir, executor_spec=spec).run(path.read_text())
        runs[spec.split(":")[0]] = _verdicts(run_dir)
    assert set(runs["local"]) == {"dec@th", "best2@th", "best2@th~oracle", "best2@th~single"}
    assert runs["ray"] == runs["local"]
    assert any(row[1] == "pass" for row in runs["local"]["dec@th"][:3])
