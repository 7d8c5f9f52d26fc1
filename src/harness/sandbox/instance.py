"""One instance's view in a started sandbox.

``open_instance_sandbox`` is what agents use: the instance's view copied into a fresh
workspace (baseline committed outside it), the project's runtime environment, the
backend the policy names, started, plus the PYTHONPATH that makes the view's production
code importable inside.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.dataset import Dataset
from bench.frameworks.protocol import Framework
from bench.frameworks.registry import get_framework
from bench.model import ProjectRecord
from harness.runtime import Runtime, ensure_runtime
from harness.sandbox.backends import create_backend
from harness.sandbox.base import WORKSPACE, Sandbox, SandboxError, SandboxPolicy
from harness.sandbox.workspace import Workspace
from harness.views import View, ViewKind, materialize

__all__ = ["InstanceSandbox", "Sandbox", "SandboxError", "SandboxPolicy", "create_backend", "open_instance_sandbox"]


@dataclass
class InstanceSandbox:
    sandbox: Sandbox
    view: View
    workspace: Workspace
    runtime: Runtime | None
    env: dict[str, str]  # what commands need inside (PYTHONPATH to the view's production code)
    framework: Framework = field(default_factory=get_framework)  # how to run the instance's scenarios

    def run_command(self, feature: str, lines: list[int]) -> list[str]:
        """argv that runs the selected scenarios with the project's runner, inside."""
        return [self.framework.interpreter, *self.framework.run_command(feature, lines)]


def open_instance_sandbox(dataset: Dataset, instance_id: str, kind: ViewKind, policy: SandboxPolicy,
                          work_dir: Path, reveal: str | None = None, withheld: tuple[str, ...] = (),
                          authored_dir: str | None = None) -> InstanceSandbox:
    """Materialize the view into ``work_dir/workspace`` (history in ``work_dir/baseline.git``) and start.

    ``withheld``: view files left out of the workspace (the documentation ablation withholds the
    feature file); ``authored_dir``: where the agent's own feature files are collected as test code."""
    view = materialize(dataset, instance_id, kind, reveal=reveal)
    instance = dataset.instance(instance_id)
    project = dataset.project(instance.project)
    framework = get_framework(project.framework)
    snapshot = dataset.root / project.snapshot
    area = framework.test_area(snapshot, project.features_dir)
    if authored_dir:
        area = replace(area, authored_dirs=(authored_dir,))
    workspace = Workspace.create(view.root, work_dir / "workspace", work_dir / "baseline.git", project.features_dir,
                                 area, withheld=withheld)
    return start_project_sandbox(dataset, project, workspace, policy, view)


def start_project_sandbox(dataset: Dataset, project: ProjectRecord, workspace: Workspace, policy: SandboxPolicy,
                          view: View | None) -> InstanceSandbox:
    """The project's runtime (or, for Node, its read-only packages) and the policy's backend around a
    prepared workspace, started; production importable as the project says. Shared by the views and
    the takeover task's parent tree (``view`` None: nothing hidden)."""
    framework = get_framework(project.framework)
    snapshot = dataset.root / project.snapshot
    # read-only directories the framework's runs need where it looks for them (Node's packages);
    # each link lies outside the test area: never collected
    try:
        links = framework.workspace_links(snapshot)
    except RuntimeError as exc:
        raise SandboxError(str(exc)) from exc
    for name, target in links.items():
        (workspace.root / name).symlink_to(target, target_is_directory=True)
    readonly = list(links.values())
    runtime = ensure_runtime(project.name, snapshot, framework=framework) if framework.needs_python_runtime else None
    sandbox = create_backend(policy, workspace, runtime, readonly)
    sandbox.start()
    root = str(workspace.root) if policy.backend == "local" else WORKSPACE
    python_path = ":".join(f"{root}/{entry}".rstrip("/.") for entry in project.python_path)
    return InstanceSandbox(sandbox=sandbox, view=view, workspace=workspace, runtime=runtime,  # type: ignore[arg-type]
                           env={"PYTHONPATH": python_path}, framework=framework)
