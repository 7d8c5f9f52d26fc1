"""The benchmark scripts still run against today's code. ``mutant_speed.py`` and
``sandbox_overhead.py`` each broke silently once (issue 27 changed ``judge()`` and
``Workspace.create``; nothing ran them until a figure was wanted, a week later). Each runs here
at its smallest size, on the bundled example (``build_resume.py`` on tests/godogshop); the
figures are not checked, the run is."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str, timeout: float = 600) -> str:
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


def test_mutant_speed_runs_and_agrees_with_fresh_processes(example_dataset: Path) -> None:
    out = _run("benchmarks/mutant_speed.py", str(example_dataset), "--instances", "1", "--max-mutants", "4")
    compared = next(line for line in out.splitlines() if line.startswith("hardened verdicts agree"))
    agreed, total = compared.rsplit(" ", 1)[-1].split("/")
    assert int(total) > 0 and agreed == total, out
    assert "speed-up" in out and "hardened phases:" in out


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_sandbox_overhead_runs() -> None:
    out = _run("benchmarks/sandbox_overhead.py", "-n", "2")
    assert "bwrap" in out and "plain subprocess median" in out, out


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_build_resume_runs_and_the_resumed_build_replays_every_run() -> None:
    out = _run("benchmarks/build_resume.py", "tests/godogshop", "--workers", "2")
    assert "ratio" in out and "ran no isolation/validation process of its own: True" in out, out
