"""The runner-integrity check (bench.frameworks.behave.guard.integrity) on a real behave run.

Every run happens in a subprocess, so that what the steps patch dies with it: a small driver
warms behave and the production package like the worker does, takes the integrity snapshot,
loads the step modules and runs scenarios through the worker's own RunRecorder, then writes
the integrity changes and statuses to a JSON file. Honest steps (plain or traced runs) change
nothing the check sees; steps that patch the runner or the standard library are seen.

The run child's deny-by-default audit hook has its own tests: tests/unit/test_guard_strict.py
(rule by rule, honest code included) and tests/adversarial/ (attacks judged end to end).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE

PDX_TREE = Path.home() / ".cache" / "req2test" / "sdists" / "python-docx-1.2.0" / "tree"

DRIVER = '''
import json, os, sys
cfg = json.loads(sys.argv[1])
root = cfg["root"]
os.chdir(root)
for entry in reversed(cfg["python_path"]):
    sys.path.insert(0, os.path.join(root, entry))
import behave, behave.model, behave.runner  # warm, as the worker
from bench.frameworks.behave import worker as bw
for name in cfg["import_packages"]:
    __import__(name)
from bench.frameworks.behave.guard import integrity

features_dir = os.path.join(root, "features")
production_dirs = [os.path.join(root, p) for p in cfg["production"]]
snap = integrity.snapshot()
worker = bw.Worker(sys.stderr)
worker.root, worker.features_dir, worker.production_dirs = root, features_dir, production_dirs
runner, load_error = worker._make_runner(features_dir, load=True)
results = []
for feature, lines in ([] if load_error else cfg["runs"]):
    recorder = bw.RunRecorder(root, features_dir, production_dirs, worker.hook_files, trace=cfg["trace"])
    result = recorder.run(runner, os.path.join(root, feature), lines)
    results += [[feature, s["line"], s["status"]] for s in result["scenarios"]]
with open(cfg["out"], "w") as fh:
    json.dump({"load_error": load_error, "results": results, "changes": integrity.changes(snap)}, fh)
'''

PATCHES = '''
import json

import behave.model
import behave.model as m
from behave.runner import Context

_run = behave.model.Step.run
behave.model.Step.run = lambda self, *a, **k: _run(self, *a, **k)
_scenario_run = m.Scenario.run
m.Scenario.run = lambda self, *a, **k: _scenario_run(self, *a, **k)
_dumps = json.dumps
json.dumps = lambda *a, **k: _dumps(*a, **k)
_execute_steps = Context.execute_steps
Context.execute_steps = lambda self, text: _execute_steps(self, text)
'''


def _scenario_lines(path: Path) -> list[int]:
    return [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.match(r"\s*Scenario( Outline)?:", line)]


def _project(tmp_path: Path, source: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__", "_scratch"))
    return root


def _drive(tmp_path: Path, root: Path, *, production: list[str], import_packages: list[str], trace: bool = False,
           runs: list[tuple[str, list[int]]] | None = None,
           python_path: tuple[str, ...] = ("src",)) -> dict[str, Any]:
    driver_dir = tmp_path / "driver"
    driver_dir.mkdir(exist_ok=True)
    (driver_dir / "run_checked.py").write_text(DRIVER, encoding="utf-8")
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    if runs is None:
        runs = [(str(p.relative_to(root)), _scenario_lines(p)) for p in sorted((root / "features").glob("*.feature"))]
    out = tmp_path / f"out-{trace}.json"
    cfg = {"root": str(root), "python_path": list(python_path), "production": production,
           "import_packages": import_packages, "trace": trace, "runs": runs, "out": str(out)}
    env = dict(os.environ, TMPDIR=str(scratch))
    proc = subprocess.run([sys.executable, str(driver_dir / "run_checked.py"), json.dumps(cfg)],
                          capture_output=True, text=True, timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_ground_truth_steps_change_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"])
    assert result["load_error"] is None
    assert result["changes"] == []
    statuses = [status for _, _, status in result["results"]]
    assert statuses.count("passed") >= 95


def test_traced_run_changes_nothing(tmp_path: Path) -> None:
    """The traced run adds the recorder's profile function, audit hook and coverage."""
    root = _project(tmp_path, EXAMPLE)
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature")),
            ("features/order_lifecycle.feature", _scenario_lines(root / "features" / "order_lifecycle.feature"))]
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], trace=True, runs=runs)
    assert result["changes"] == []
    assert [s for _, _, s in result["results"]].count("passed") >= 15


def test_steps_importing_production_themselves_change_nothing(tmp_path: Path) -> None:
    """Production imported after the snapshot (by the steps, not the warm worker)."""
    root = _project(tmp_path, EXAMPLE)
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature"))]
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=[], runs=runs)
    assert result["changes"] == []
    assert {s for _, _, s in result["results"]} == {"passed"}


def test_integrity_sees_patched_runner_and_stdlib(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    (root / "features" / "steps" / "zz_patches.py").write_text(textwrap.dedent(PATCHES), encoding="utf-8")
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature"))]
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], runs=runs)
    assert {"behave.model.Step.run replaced", "behave.model.Scenario.run replaced", "json.dumps replaced",
            "behave.runner.Context.execute_steps replaced"} <= set(result["changes"])


@pytest.mark.slow
def test_python_docx_steps_change_nothing(tmp_path: Path) -> None:
    if not (PDX_TREE / "features" / "steps").is_dir():
        pytest.skip("python-docx 1.2.0 is not in the build cache (req2test build python-docx==1.2.0)")
    pytest.importorskip("lxml")
    root = _project(tmp_path, PDX_TREE)
    result = _drive(tmp_path, root, production=["src/docx"], import_packages=["docx"])
    assert result["load_error"] is None
    assert result["changes"] == []
    statuses = [s for _, _, s in result["results"]]
    assert len(statuses) > 600 and set(statuses) == {"passed"}
