"""Installing the external coding agents — on request only, never during a run.

Each agent lives in its own prefix, ``~/.cache/req2test/agents/<name>`` (``REQ2TEST_CACHE``
moves the cache): an npm ``--prefix`` for Codex and Claude Code, a virtual environment for
Aider (Python 3.10–3.12) and OpenHands (Python ≥ 3.12). The prefix is bound read-only into
the sandbox at the same path (virtual environments are not relocatable). By default the
version the adapter was tested with is installed; any version can be asked for, but an
adapter refuses to run one outside its supported range (``SPECS[name].supported``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, Field

from harness.sandbox.base import SandboxError

AgentName = Literal["codex", "claude-code", "aider", "openhands"]


class AgentInstallError(SandboxError):
    """An external agent cannot be used as installed; one line, says what to do."""


class AgentNotInstalled(AgentInstallError):
    pass


class UnsupportedAgentVersion(AgentInstallError):
    pass


class AgentSpec(BaseModel):
    """How one agent is installed and recognised."""

    name: str
    kind: Literal["npm", "venv"]
    package: str = Field(description="the package whose version is the agent's version")
    extra_packages: list[str] = Field(default_factory=list, description="installed alongside, same version")
    tested: str = Field(description="the version installed by default: the one the adapter was tested with")
    supported: str = Field(description="PEP 440 specifier of the versions the adapter accepts")
    executable: str = Field(description="the agent's command, relative to the prefix")
    python: str | None = Field(None, description="venv agents: the Python versions the venv may be made from, "
                               "as MIN-MAX (found on PATH or under pyenv)")


# The ranges are what was run end to end here (tests/integration/test_external_agents.py):
# headless flags, event formats and config keys of these agents change between minor versions.
SPECS: dict[str, AgentSpec] = {
    "codex": AgentSpec(name="codex", kind="npm", package="@openai/codex", tested="0.171.0",
                       supported=">=0.171,<0.172", executable="node_modules/.bin/codex"),
    "claude-code": AgentSpec(name="claude-code", kind="npm", package="@anthropic-ai/claude-code", tested="2.1.332",
                             supported=">=2.1.332,<2.2", executable="node_modules/.bin/claude"),
    "aider": AgentSpec(name="aider", kind="venv", package="aider-chat", tested="0.86.2", supported=">=0.86,<0.87",
                       executable="bin/aider", python="3.10-3.12"),
    "openhands": AgentSpec(name="openhands", kind="venv", package="openhands-sdk", extra_packages=["openhands-tools"],
                           tested="1.58.2", supported=">=1.58,<1.59", executable="bin/python",
                           python="3.12-3.13"),
}


class AgentInstall(BaseModel):
    """One installed agent: what the sandbox must see and how to start it."""

    name: str
    version: str
    executable: Path
    prefix: Path
    readonly_binds: list[Path] = Field(description="host paths the sandbox must bind read-only, at the same path")
    seconds: float | None = Field(None, description="how long the install took (only from install_agent)")
    size_mb: float | None = Field(None, description="disk used by the prefix (only from install_agent)")


def find_python(versions: str) -> str:
    """An interpreter whose version lies in MIN-MAX: this one, one on PATH, or one pyenv installed."""
    low, _, high = versions.partition("-")
    wanted = [f"3.{minor}" for minor in range(int(low.split(".")[1]), int((high or low).split(".")[1]) + 1)]
    if f"{sys.version_info.major}.{sys.version_info.minor}" in wanted:
        return sys.executable
    for version in wanted:  # the oldest first: the one the adapters were tested with
        found = shutil.which(f"python{version}")
        if found and "/shims/" not in found:  # a pyenv shim may not dispatch to that version
            return found
        for candidate in sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python"), reverse=True):
            return str(candidate)
    raise AgentInstallError(f"this agent needs Python {versions}; none found (install one, e.g. with pyenv)")


def agents_home() -> Path:
    return Path(os.environ.get("REQ2TEST_CACHE", Path.home() / ".cache" / "req2test")) / "agents"


def _spec(name: str) -> AgentSpec:
    if name not in SPECS:
        raise AgentInstallError(f"unknown external agent {name!r} (known: {', '.join(SPECS)})")
    return SPECS[name]


def _installed_version(spec: AgentSpec, prefix: Path) -> str | None:
    if spec.kind == "npm":
        manifest = prefix / "node_modules" / spec.package / "package.json"
        try:
            return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
        except (OSError, ValueError, KeyError):
            return None
    # a venv: the dist-info directory names the version (no interpreter start needed)
    normalized = spec.package.replace("-", "_").lower()
    for dist_info in prefix.glob("lib/python3*/site-packages/*.dist-info"):
        project, _, version = dist_info.name[: -len(".dist-info")].partition("-")
        if project.lower() == normalized:
            return version
    return None


def _base_prefix(venv: Path) -> Path | None:
    """The installation a venv was made from (its stdlib), from ``pyvenv.cfg``."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).resolve().parent  # home is <prefix>/bin
    return None


def installed_agent(name: str, prefix: Path | None = None) -> AgentInstall | None:
    """The agent installed in ``prefix`` (default: the cache), or None if it is not there."""
    spec = _spec(name)
    prefix = (prefix or agents_home() / name).resolve()
    executable = prefix / spec.executable
    version = _installed_version(spec, prefix)
    if version is None or not executable.exists() or not (prefix / ".complete").is_file():
        return None
    binds = [prefix]
    if spec.kind == "venv":
        base = _base_prefix(prefix)
        if base is not None:
            binds.append(base)
    return AgentInstall(name=name, version=version, executable=executable, prefix=prefix, readonly_binds=binds)


def require_agent(name: str, prefix: Path | None = None) -> AgentInstall:
    """The installed agent, or a one-line error saying how to install a supported version."""
    spec = _spec(name)
    found = installed_agent(name, prefix)
    if found is None:
        raise AgentNotInstalled(f"external agent {name!r} is not installed; install it with "
                                f"`python -c \"from harness.agents.installers import install_agent; "
                                f"install_agent('{name}')\"` ({spec.package} {spec.tested})")
    if not version_supported(spec, found.version):
        raise UnsupportedAgentVersion(f"{name} {found.version} at {found.prefix} is outside the tested range "
                                      f"{spec.supported}; reinstall with install_agent('{name}')")
    return found


def version_supported(spec: AgentSpec, version: str) -> bool:
    try:
        return Version(version) in SpecifierSet(spec.supported)
    except InvalidVersion:
        return False


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if line.strip()]
        raise AgentInstallError(f"cannot install {what}: {lines[-1] if lines else f'exit code {proc.returncode}'}")


def install_agent(name: str, prefix: Path | None = None, version: str | None = None) -> AgentInstall:
    """Install ``name`` (default: its tested version) into ``prefix``, replacing what is there.

    Large downloads (on disk: Codex ~420 MB, Claude Code ~380 MB, Aider ~630 MB, OpenHands ~560 MB): call
    it explicitly, never from a run.
    """
    spec = _spec(name)
    version = version or spec.tested
    prefix = (prefix or agents_home() / name).resolve()
    started = time.monotonic()
    # the prefix is marked complete last: a half-done install is never taken for a working one
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    packages = [f"{p}{'@' if spec.kind == 'npm' else '=='}{version}" for p in [spec.package, *spec.extra_packages]]
    if spec.kind == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise AgentInstallError(f"cannot install {name}: npm is not on PATH")
        _run([npm, "install", "--prefix", str(prefix), "--no-fund", "--no-audit", "--loglevel=error",
              *packages], name)
    else:
        python = find_python(spec.python) if spec.python else sys.executable
        if not Path(python).exists() and shutil.which(python) is None:
            raise AgentInstallError(f"cannot install {name}: its interpreter {python} is missing")
        _run([python, "-m", "venv", str(prefix)], f"{name} (venv)")
        _run([str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              *packages], name)
    (prefix / ".complete").write_text(" ".join(packages) + "\n", encoding="utf-8")
    found = installed_agent(name, prefix)
    if found is None:
        raise AgentInstallError(f"installed {name} into {prefix} but cannot find {spec.executable} there")
    # npm hard-links native binaries into more than one package: count each inode once
    inodes = {(s.st_dev, s.st_ino): s.st_size for f in prefix.rglob("*")
              if f.is_file() and not f.is_symlink() for s in [f.stat()]}
    size = sum(inodes.values())
    return found.model_copy(update={"seconds": round(time.monotonic() - started, 1),
                                    "size_mb": round(size / 2**20, 1)})
