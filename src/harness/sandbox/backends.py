"""Sandbox backend name (a policy's ``backend``) → the factory that makes one, as every pluggable kind.

Built in: ``bwrap`` (default), ``docker`` and ``local`` (no isolation; explicit opt-in). The
backends take different arguments, so the registry holds one small factory per backend with a
single signature (``SandboxFactory``); each imports its backend when called, so naming docker
costs nothing on a machine that never runs it. A third party adds one (podman, a microVM) as::

    [project.entry-points."req2test.sandboxes"]
    podman = "mypackage.sandbox:make_podman_sandbox"
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.registry import Registry, UnknownName
from harness.sandbox.base import Sandbox, SandboxError, SandboxPolicy

if TYPE_CHECKING:  # both import much more than listing the backends needs
    from harness.runtime import Runtime
    from harness.sandbox.workspace import Workspace

ENTRY_POINT_GROUP = "req2test.sandboxes"

# (policy, prepared workspace, the project's runtime or None, extra read-only host paths) → a sandbox, not started
SandboxFactory = Callable[[SandboxPolicy, "Workspace", "Runtime | None", "list[Path] | None"], Sandbox]


class UnknownBackend(SandboxError, UnknownName):
    """No sandbox backend of that name; a SandboxError, as every other refusal to make a sandbox."""


def _bwrap(policy: SandboxPolicy, workspace: Workspace, runtime: Runtime | None,
           readonly: list[Path] | None) -> Sandbox:
    from harness.sandbox.bwrap_backend import BwrapSandbox

    return BwrapSandbox(policy, workspace, runtime, readonly)


def _docker(policy: SandboxPolicy, workspace: Workspace, runtime: Runtime | None,
            readonly: list[Path] | None) -> Sandbox:
    from harness.sandbox.docker_backend import DockerSandbox

    binds = [*(runtime.bind_paths if runtime is not None else []), *(readonly or [])]
    return DockerSandbox(policy, workspace.root, readonly=binds, differ=workspace.diff,
                         hidden=runtime.base_site_packages if runtime is not None else [])


def _local(policy: SandboxPolicy, workspace: Workspace, runtime: Runtime | None,
           readonly: list[Path] | None) -> Sandbox:
    from harness.sandbox.local_backend import LocalSandbox

    return LocalSandbox(policy, workspace, runtime.venv / "bin" if runtime is not None else None)


REGISTRY: Registry[SandboxFactory] = Registry(
    "sandbox backend", None,
    {"bwrap": "harness.sandbox.backends:_bwrap", "docker": "harness.sandbox.backends:_docker",
     "local": "harness.sandbox.backends:_local"},
    ENTRY_POINT_GROUP, error=UnknownBackend)


def create_backend(policy: SandboxPolicy, workspace: Workspace, runtime: Runtime | None,
                   readonly: list[Path] | None = None) -> Sandbox:
    """The sandbox ``policy.backend`` names around ``workspace``, not started; UnknownBackend (a
    SandboxError, one line) when no backend has that name."""
    return REGISTRY.get(policy.backend)(policy, workspace, runtime, readonly)
