"""Build req2test's wheel from a copy of the checkout, for the tests that install it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of the current source, built from a copy (building in the checkout would leave
    build/ in a tree other work shares); skips when setuptools cannot be fetched."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                            str(source), "-w", str(tmp_path / "wheels")], capture_output=True, text=True,
                           timeout=600, check=False)
    if built.returncode != 0 and "No matching distribution" in built.stderr:
        pytest.skip(f"setuptools cannot be fetched to build the wheel: {built.stderr.strip()[-200:]}")
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("req2test-*.whl")
    return wheel
