"""Per-project runtime environments for the sandboxes: the project's dependencies, never the project.

A virtual environment (no system site-packages) with behave at the version the dataset
was built with and the dependencies the project declares (python-docx: lxml,
typing_extensions). The project itself is importable only from the view, through
PYTHONPATH. The environment is cached by the hash of what it holds and marked complete
only once built, so an interrupted build is never reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from pydantic import BaseModel

from bench.frameworks.protocol import Framework
from bench.frameworks.registry import get_framework
from bench.project import SourceError, runtime_requirements
from harness.sandbox.base import SandboxError


class Runtime(BaseModel):
    """What a sandbox binds read-only to run the project's tests."""

    python: Path  # the venv's interpreter
    venv: Path
    base_prefix: Path  # the interpreter's own installation (stdlib), bound read-only
    base_site_packages: list[Path]  # hidden inside the sandbox (tmpfs over them)
    packages: list[str]

    @property
    def bind_paths(self) -> list[Path]:
        return [self.venv, self.base_prefix]


def default_env_dir() -> Path:
    return Path(os.environ.get("REQ2TEST_CACHE", Path.home() / ".cache" / "req2test")) / "envs"


def project_requirements(snapshot: Path) -> list[str]:
    """What the project's behave suite needs at run time: its declared dependencies
    (pyproject, setup.cfg or setup.py) and its step modules' (``test_dependencies``)."""
    try:
        return sorted(runtime_requirements(snapshot))
    except SourceError as exc:
        raise SandboxError(str(exc)) from exc


def ensure_runtime(name: str, snapshot: Path, env_dir: Path | None = None,
                   framework: Framework | None = None) -> Runtime:
    packages = [*(framework or get_framework()).runtime_packages(), *project_requirements(snapshot)]
    key = hashlib.sha256(json.dumps([sys.version, packages]).encode()).hexdigest()[:16]
    venv = (env_dir or default_env_dir()) / f"{name}-{key}"
    python = venv / "bin" / "python"
    if not (venv / ".complete").is_file():
        _build(venv, packages)
    base = Path(sys.base_prefix).resolve()
    purelib = Path(sysconfig.get_paths(vars={"base": str(base), "platbase": str(base)})["purelib"])
    site_dirs = sorted({purelib, Path(sysconfig.get_paths(
        vars={"base": str(base), "platbase": str(base)})["platlib"])})
    return Runtime(python=python, venv=venv, base_prefix=base,
                   base_site_packages=[d for d in site_dirs if d.is_dir()], packages=packages)


def _build(venv: Path, packages: list[str]) -> None:
    # the venv must live at its final path (its scripts record it), so it is built there
    # and marked complete last; a half-built one is removed and rebuilt
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              *packages]]
    for command in steps:
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise SandboxError(f"cannot build the runtime environment ({' '.join(packages)}): {last}")
    (venv / ".complete").write_text("\n".join(packages) + "\n", encoding="utf-8")
