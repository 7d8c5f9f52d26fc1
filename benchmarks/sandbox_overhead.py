"""Start-up overhead of one sandboxed command, beside a plain subprocess in the same run.

Each command runs N times as (a) a plain ``subprocess.run`` and (b) ``BwrapSandbox.exec``
(a fresh bubblewrap namespace set per command, cgroup pids limit, workspace bind); also
with provider egress on (the forwarder starts inside per command), and on the docker
backend when an engine can run. Prints medians and the overhead over the plain run.

Usage:
    python benchmarks/sandbox_overhead.py [-n 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.frameworks.registry import get_framework
from harness.runtime import Runtime
from harness.sandbox.base import SandboxPolicy
from harness.sandbox.bwrap_backend import BwrapSandbox
from harness.sandbox.workspace import Workspace

COMMANDS = {"/bin/true": ["/bin/true"], "python -c pass": [sys.executable, "-c", "pass"]}


def _median_ms(fn, n: int) -> float:
    fn()  # warm caches once
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _workspace(base: Path, name: str) -> Workspace:
    view = base / f"{name}-view"
    (view / "features").mkdir(parents=True)
    return Workspace.create(view, base / f"{name}-ws", base / f"{name}.git", "features",
                            get_framework("behave").test_area(view, "features"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=40)
    args = parser.parse_args()
    runtime = Runtime(python=Path(sys.executable), venv=Path(sys.prefix).resolve(),
                      base_prefix=Path(sys.base_prefix).resolve(), base_site_packages=[], packages=[])
    base = Path(tempfile.mkdtemp(prefix="req2test-overhead-"))
    plain_sandbox = BwrapSandbox(SandboxPolicy(name="bench"), _workspace(base, "a"), runtime)
    egress_sandbox = BwrapSandbox(SandboxPolicy(name="bench-egress", egress_allow=["127.0.0.1:9"]),
                                  _workspace(base, "b"), runtime)
    docker_sandbox = None
    try:
        from harness.sandbox.docker_backend import DockerSandbox
        from harness.sandbox.dockerd import engine_unavailable_reason

        reason = engine_unavailable_reason()
        if reason is None:
            docker_sandbox = DockerSandbox(SandboxPolicy(name="bench-docker", backend="docker"), base / "d-ws")
            (base / "d-ws").mkdir()
        else:
            print(f"docker: skipped ({reason})")
    except ImportError as exc:
        print(f"docker: skipped ({exc})")
    plain_sandbox.start()
    egress_sandbox.start()
    if docker_sandbox is not None:
        docker_sandbox.start()
    try:
        for label, command in COMMANDS.items():
            # the closures below are called by _median_ms right away, in this iteration
            plain = _median_ms(lambda: subprocess.run(command, check=True), args.n)  # noqa: B023
            rows = [("bwrap", plain_sandbox), ("bwrap + egress forwarder", egress_sandbox)]
            if docker_sandbox is not None:
                rows.append(("docker exec", docker_sandbox))
            print(f"{label}: plain subprocess median {plain:6.1f} ms")
            for name, sandbox in rows:
                def run(sandbox=sandbox) -> None:
                    result = sandbox.exec(command)  # noqa: B023
                    assert result.exit_code == 0, result
                boxed = _median_ms(run, args.n)
                print(f"  {name:26s} median {boxed:6.1f} ms   overhead {boxed - plain:6.1f} ms   "
                      f"ratio {boxed / plain:4.1f}x")
    finally:
        plain_sandbox.close()
        egress_sandbox.close()
        if docker_sandbox is not None:
            docker_sandbox.close()


if __name__ == "__main__":
    main()
