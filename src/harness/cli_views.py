"""``req2test view``: materialize one instance's repository view and audit it for leaks."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from bench.cli import fail
from bench.console import out
from bench.dataset import DatasetError, load_dataset
from bench.project import default_cache_dir as sdist_cache_root
from harness.audit import audit_instance_sandbox
from harness.sandbox.base import SandboxError
from harness.sandbox.instance import open_instance_sandbox
from harness.sandbox.policy import load_policy
from harness.views import ViewError, materialize


def view_command(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    instance: Annotated[str, typer.Argument(help="Instance id, e.g. tinyshop/features/cart.feature:13.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write the view to (new or empty).")],
    view: Annotated[str, typer.Option("--view", help="th (target-hidden) or ah (all-hidden).")] = "th",
    audit: Annotated[bool, typer.Option(help="Run the leak audit, inside the sandbox the agent would get.")] = True,
    sandbox: Annotated[str, typer.Option(help="Sandbox policy (name in sandboxes/ or a .toml path) for the audit.")]
    = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the view manifest and audit as JSON.")] = False,
) -> None:
    """Write the view an agent sees for one instance, then audit it.

    The test implementation of every scenario is removed (hooks, fixtures and data stay);
    target-hidden replaces the bodies realizing the target behavior, all-hidden every body
    of the production scope except those the package runs while importing. The audit fails
    (exit 1) if any ground-truth file or content, coverage or mutant data, bytecode, git
    history, installed copy of the project or its archive is reachable from the sandbox.

    Examples:

      req2test view datasets/tinyshop tinyshop/features/cart.feature:13 -o /tmp/view-th

      req2test view datasets/python-docx "python-docx/features/par-alignment-prop.feature:12" --view ah -o /tmp/ah
    """
    if view not in ("th", "ah"):
        raise fail(f"--view must be th or ah, not {view!r}")
    try:
        ds = load_dataset(dataset)
        made = materialize(ds, instance, view, out_dir=output)  # type: ignore[arg-type]
        report = None
        if audit:
            policy = load_policy(sandbox)
            work = Path(tempfile.mkdtemp(prefix="req2test-audit-"))
            try:
                opened = open_instance_sandbox(ds, instance, view, policy, work)  # type: ignore[arg-type]
                try:
                    report = audit_instance_sandbox(ds, opened, sdist_cache_root())
                finally:
                    opened.sandbox.close()
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except (DatasetError, ViewError, SandboxError) as exc:
        raise fail(str(exc)) from None
    manifest = made.manifest
    if as_json:
        out.print_json(json.dumps({"manifest": manifest.model_dump(mode="json"),
                                   "audit": report.model_dump(mode="json") if report else None}))
    else:  # the view and its audit are the command's result: stdout, as the --json form
        out.print(f"{manifest.kind} view of {manifest.instance_id} → {made.root}", highlight=False, markup=False)
        out.print(f"  {len(manifest.hidden)} bodies hidden, {len(manifest.removed_test_files)} test files removed, "
                  f"{len(manifest.kept_import_time)} import-time bodies kept; "
                  f"{'cached' if manifest.cached else 'built'} in {manifest.build_seconds:.2f}s; "
                  f"tree sha256 {manifest.tree_sha256[:16]}", highlight=False)
        if report is not None:
            out.print(f"  leak audit: {'passed' if report.passed else 'FAILED'}")
            for leak in report.leaks:
                out.print(f"    {leak.kind}: {leak.path} {leak.detail}", highlight=False, markup=False)
    if report is not None and not report.passed:
        raise typer.Exit(1)
