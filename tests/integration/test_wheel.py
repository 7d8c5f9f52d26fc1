"""A wheel of the project, installed in a fresh virtual environment, runs ``req2test demo``.

The prompts, sandbox policies and bundled examples are package data (harness.resources), so
nothing may be found by climbing out of site-packages; the demo runs from a directory that
is not the repository. Slow: the venv installs every dependency from the package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path: Path) -> Path:
    """The project's wheel, its resources checked."""
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                            str(REPO), "-w", str(wheels)], capture_output=True, text=True, timeout=600, check=False)
    if built.returncode != 0 and "No matching distribution" in built.stderr:
        pytest.skip(f"setuptools cannot be fetched to build the wheel: {built.stderr.strip()[-200:]}")
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("req2test-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("harness/resources/prompts/task.md.j2", "harness/resources/sandboxes/default.toml",
                    "harness/resources/examples/tinyshop/pyproject.toml", "harness/resources/examples/demo/ab.yaml",
                    "bench/builder/pipeline.py", "bench/frameworks/cucumber_js/node/instrument.mjs"):
        assert shipped in names
    assert not any("__pycache__" in n or "node_modules" in n or n.startswith("bench/build/") for n in names)
    return wheel


def test_the_wheel_ships_its_resources(tmp_path: Path) -> None:
    build_wheel(tmp_path)


@pytest.mark.heavy  # a fresh venv from the index plus the whole demo: ~6 min, beyond CI's budget
def test_a_wheel_in_a_fresh_venv_runs_the_demo(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)  # no system site-packages: only what the wheel declares
    python = env_dir / "bin" / "python"
    # nothing of this checkout on the path (a PYTHONPATH=src would make pip see req2test as installed)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(REQ2TEST_CACHE=str(tmp_path / "cache"), PATH=f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                               capture_output=True, text=True, timeout=1200, check=False, env=env)
    if installed.returncode != 0 and "No matching distribution" in installed.stderr:
        pytest.skip(f"the dependencies cannot be fetched here: {installed.stderr.strip()[-200:]}")
    assert installed.returncode == 0, installed.stderr[-2000:]
    req2test = env_dir / "bin" / "req2test"
    version = subprocess.run([str(req2test), "--version"], capture_output=True, text=True, check=True, env=env)
    assert version.stdout.startswith("req2test ")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    demo = subprocess.run([str(req2test), "demo", "-o", "out"], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=2400, check=False)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    out = elsewhere / "out"
    assert (out / "demo.md").is_file() and (out / "dataset" / "dataset.json").is_file()
    assert "demo summary:" in demo.stdout + demo.stderr
    # the demo imported req2test from the venv, never from this checkout
    imported = subprocess.run([str(python), "-c", "import harness, bench; print(harness.__file__, bench.__file__)"],
                              cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert str(REPO) not in imported.stdout and "site-packages" in imported.stdout
    shutil.rmtree(env_dir, ignore_errors=True)
