"""scripts/compare_datasets.py: equal except measured times, or the first difference per file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_datasets.py"


def _dataset(root: Path, created: str, seconds: float, level: str) -> Path:
    root.mkdir()
    (root / "dataset.json").write_text(json.dumps({"created": created, "stage_seconds": {"mutants": seconds},
                                                   "projects": [{"name": "p", "runner": "behave 1.3.3"}]}))
    (root / "instances.jsonl").write_text(json.dumps({"id": "p/a.feature:3", "test_level": level,
                                                      "runtime_seconds": seconds}) + "\n")
    (root / "notes.txt").write_text("same\n")
    return root


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True, check=False)


def test_measured_times_are_not_differences(tmp_path: Path) -> None:
    proc = _compare(_dataset(tmp_path / "a", "2026-01-01", 1.0, "component"),
                    _dataset(tmp_path / "b", "2026-02-02", 9.5, "component"))
    assert proc.returncode == 0, proc.stdout
    assert "identical except measured times" in proc.stdout


def test_a_built_field_that_differs_is_named(tmp_path: Path) -> None:
    proc = _compare(_dataset(tmp_path / "a", "2026-01-01", 1.0, "component"),
                    _dataset(tmp_path / "b", "2026-01-01", 1.0, "system"))
    assert proc.returncode == 1
    assert "instances.jsonl[0].test_level: 'component' vs 'system'" in proc.stdout


def test_not_a_dataset_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    proc = _compare(tmp_path / "x", tmp_path / "x")
    assert proc.returncode == 2 and "is not a dataset directory" in proc.stderr
