"""A project's own Python environment: its missing runtime dependencies, never in req2test's.

Why: ``--install-deps`` used to pip-install a project's dependencies into the interpreter that
runs req2test, where they replace versions req2test's own libraries need (python-pptx's pins
downgraded packages under huggingface-hub). Each project now gets a virtual environment made
with ``--system-site-packages``: it sees what req2test's interpreter has (behave, coverage and the
worker's standard library), and the requirements installed into it shadow those versions for
the project's runs only. Environments are cached by their requirement set and interpreter, so
every dataset of the same dependencies shares one, and an evaluation on another machine makes
the same environment again from the requirements its dataset card records.

An environment is made in a temporary directory and renamed into place once pip succeeded, so
a half-made one is never used; a lock serialises two processes making the same one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from bench.errors import UserError

MARKER = "req2test-environment.json"


class EnvironmentSetupError(UserError):
    """An environment could not be made (the message says which requirement and why)."""


class ProjectEnvironment(BaseModel):
    """What a ready environment holds (written last, as its marker)."""

    requirements: list[str] = Field(description="what was installed, sorted")
    python_version: str = Field(description="major.minor of the interpreter it was made from")
    base_interpreter: str = Field(description="sys.executable that made it")


def cache_dir(name: str, override: str) -> Path:
    """Where req2test keeps one kind of cache: ``$<override>``, else
    ``$XDG_CACHE_HOME/req2test/<name>`` (~/.cache)."""
    configured = os.environ.get(override)
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "req2test" / name


def environments_root() -> Path:
    """``$REQ2TEST_ENVIRONMENTS``, else ``$XDG_CACHE_HOME/req2test/environments`` (~/.cache)."""
    return cache_dir("environments", "REQ2TEST_ENVIRONMENTS")


def normalized(requirements: Sequence[str]) -> list[str]:
    """Requirements as an environment records them: stripped, without blanks or repeats, sorted."""
    return sorted({r.strip() for r in requirements if r.strip()})


def python_version() -> str:
    """major.minor of this interpreter: an environment is only reused by the same one."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def environment_key(requirements: Sequence[str]) -> str:
    """The cache key of an environment: its sorted requirements and the interpreter's version."""
    text = json.dumps({"python": python_version(), "requirements": normalized(requirements)})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def environment_python(directory: Path) -> Path:
    return directory / "bin" / "python"


def find_environment(requirements: Sequence[str], root: Path | None = None) -> Path | None:
    """The interpreter of the ready environment for ``requirements``, or None."""
    directory = (root or environments_root()) / environment_key(requirements)
    return environment_python(directory) if (directory / MARKER).is_file() else None


def ensure_environment(requirements: Sequence[str], root: Path | None = None,
                       log: object = None) -> Path:
    """The interpreter of the environment holding ``requirements`` (made on first need).

    ``log``: a callable given one line before a long install (None: silent)."""
    wanted = normalized(requirements)
    root = root or environments_root()
    ready = find_environment(wanted, root)
    if ready is not None:
        return ready
    root.mkdir(parents=True, exist_ok=True)
    directory = root / environment_key(wanted)
    with file_lock(root / f"{directory.name}.lock"):
        ready = find_environment(wanted, root)  # made by another process while we waited
        if ready is not None:
            return ready
        if callable(log):
            log(f"making the project's own environment ({', '.join(wanted)}) in {directory}; once per dependency set")
        staging = Path(tempfile.mkdtemp(prefix=f"{directory.name}.", suffix=".tmp", dir=root))
        try:
            _make(staging, wanted)
            shutil.rmtree(directory, ignore_errors=True)  # a leftover without its marker
            # only the activate scripts name the staging path; the interpreter finds its
            # pyvenv.cfg beside itself, so `bin/python -m ...` works from the renamed directory
            os.replace(staging, directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return environment_python(directory)


def _make(directory: Path, requirements: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(directory)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise EnvironmentSetupError(f"could not make a virtual environment in {directory}: {proc.stderr.strip()[-300:]}")
    python = environment_python(directory)
    if requirements:
        # req2test's own pip installs into the venv (``--python``, pip >= 22.3): no pip copy per environment
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                               "--disable-pip-version-check", *requirements],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise EnvironmentSetupError(f"could not install {' '.join(requirements)}: {pip_reason(proc.stderr)}")
    record = ProjectEnvironment(requirements=requirements,
                                python_version=python_version(),
                                base_interpreter=sys.executable)
    (directory / MARKER).write_text(record.model_dump_json(indent=1) + "\n", encoding="utf-8")


def pip_reason(stderr: str) -> str:
    """pip's own reason for a failure: its first ``ERROR:`` line, else its last line."""
    for line in stderr.splitlines():
        if "ERROR:" in line:
            return line.split("ERROR:", 1)[1].strip()[:300]
    return stderr.strip().splitlines()[-1][:300] if stderr.strip() else "pip failed without a message"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock held on ``path`` (made if absent) between processes."""
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def environment_dir(python: str | os.PathLike[str]) -> Path | None:
    """The environment directory of ``python`` when it is one of ours (or any venv), else None:
    what a sandbox must bind read-only besides the base interpreter's own directories."""
    candidate = Path(python).parent.parent
    return candidate if (candidate / "pyvenv.cfg").is_file() else None
