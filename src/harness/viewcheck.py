"""Check that views hide what they must: the ground-truth test, run inside its target-hidden
view, must not pass and must fail with "implementation hidden"; the all-hidden view must
still import and let behave initialize. Used by benchmarks/views_check.py and the slow tests.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from bench.dataset import Dataset
from bench.frameworks.protocol import HIDDEN_MESSAGE
from harness.sandbox.base import SandboxPolicy
from harness.sandbox.instance import InstanceSandbox, open_instance_sandbox


class ViewCheck(BaseModel):
    instance_id: str
    passed_in_view: bool
    hidden_message: bool
    view_seconds: float
    view_cached: bool
    run_seconds: float
    tail: str = ""


class ViewCheckSummary(BaseModel):
    instances: int
    not_passing: int
    failing_with_hidden_message: int
    ah_imports: bool
    ah_behave_initializes: bool
    ah_kept_import_time: int
    view_seconds_uncached_median: float
    view_seconds_cached_median: float
    exceptions: list[ViewCheck] = Field(default_factory=list)


def run_gold_in_sandbox(ds: Dataset, opened: InstanceSandbox, instance_id: str) -> tuple[int | None, str, float]:
    project = ds.project(opened.view.manifest.project)
    snapshot = ds.root / project.snapshot
    gold = ds.load_gold()[instance_id]
    for closure in gold.closure:
        if closure.role != "data":
            opened.sandbox.write_file(closure.path, (snapshot / closure.path).read_text(encoding="utf-8"))
    req = ds.instance(instance_id).requirement
    result = opened.sandbox.exec(opened.run_command(req.feature_file, req.run_lines), env=opened.env, timeout=300)
    return result.exit_code, result.stdout + result.stderr, result.seconds


def check_views(ds: Dataset, policy: SandboxPolicy, instance_ids: list[str] | None = None,
                progress: Callable[[int, int], None] | None = None) -> ViewCheckSummary:
    ids = instance_ids or [inst.id for inst in ds.instances]
    checks: list[ViewCheck] = []
    work = Path(tempfile.mkdtemp(prefix="req2test-viewcheck-"))
    try:
        for index, instance_id in enumerate(ids):
            opened = open_instance_sandbox(ds, instance_id, "th", policy, work / str(index))
            try:
                code, output, seconds = run_gold_in_sandbox(ds, opened, instance_id)
            finally:
                opened.sandbox.close()
                shutil.rmtree(work / str(index), ignore_errors=True)
            checks.append(ViewCheck(instance_id=instance_id, passed_in_view=code == 0,
                                    hidden_message=HIDDEN_MESSAGE in output,
                                    view_seconds=opened.view.manifest.build_seconds,
                                    view_cached=opened.view.manifest.cached, run_seconds=seconds,
                                    tail=output[-400:] if code == 0 or HIDDEN_MESSAGE not in output else ""))
            if progress is not None:
                progress(index + 1, len(ids))
        opened = open_instance_sandbox(ds, ids[0], "ah", policy, work / "ah")
        try:
            dry = opened.sandbox.exec([opened.framework.interpreter, *opened.framework.dry_run_command(ds.card.projects[0].features_dir)],
                                      env=opened.env)
            # behave imports the package itself only when a step does; cucumber-js's dry run
            # loads every support file and so every production module they require
            imports = opened.sandbox.exec(["python", "-c", "import " + ",".join(
                sorted({Path(p).name.removesuffix('.py') for p in ds.card.projects[0].production}))],
                env=opened.env) if opened.framework.interpreter == "python" else dry
            initializes = "Traceback" not in dry.stderr.split("You can implement")[0]
            kept = len(opened.view.manifest.kept_import_time)
        finally:
            opened.sandbox.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    uncached = sorted(c.view_seconds for c in checks if not c.view_cached) or [0.0]
    cached = sorted(c.view_seconds for c in checks if c.view_cached) or [0.0]
    return ViewCheckSummary(
        instances=len(checks), not_passing=sum(not c.passed_in_view for c in checks),
        failing_with_hidden_message=sum(c.hidden_message and not c.passed_in_view for c in checks),
        ah_imports=imports.exit_code == 0, ah_behave_initializes=initializes, ah_kept_import_time=kept,
        view_seconds_uncached_median=uncached[len(uncached) // 2],
        view_seconds_cached_median=cached[len(cached) // 2],
        exceptions=[c for c in checks if c.passed_in_view or not c.hidden_message])


def timed_view_builds(ds: Dataset, instance_ids: list[str], kind: str = "th") -> tuple[list[float], list[float]]:
    """View build times from an empty cache, then from the warm cache."""
    from harness.views import materialize

    cache = Path(tempfile.mkdtemp(prefix="req2test-viewcache-"))
    try:
        cold, warm = [], []
        for instance_id in instance_ids:
            started = time.perf_counter()
            materialize(ds, instance_id, kind, cache_dir=cache)  # type: ignore[arg-type]
            cold.append(time.perf_counter() - started)
        for instance_id in instance_ids:
            started = time.perf_counter()
            materialize(ds, instance_id, kind, cache_dir=cache)  # type: ignore[arg-type]
            warm.append(time.perf_counter() - started)
        return cold, warm
    finally:
        shutil.rmtree(cache, ignore_errors=True)
