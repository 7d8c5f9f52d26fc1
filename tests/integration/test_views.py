"""Views of the bundled example, inside the bwrap sandbox: hidden, importable, deterministic, leak-free."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.dataset import load_dataset
from bench.frameworks.protocol import HIDDEN_MESSAGE
from bench.isolation import bwrap_path
from harness.audit import audit_instance_sandbox, gold_test_hashes, static_audit
from harness.sandbox.instance import open_instance_sandbox
from harness.sandbox.policy import load_policy
from harness.viewcheck import run_gold_in_sandbox
from harness.views import materialize

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")]


def test_gold_test_fails_with_implementation_hidden_in_th_views(example_dataset: Path, tmp_path: Path) -> None:
    """A spread sample here; every python-docx instance in the slow suite (benchmarks/views_check.py)."""
    ds = load_dataset(example_dataset)
    policy = load_policy("default")
    for index, inst in enumerate(ds.instances[::6]):
        opened = open_instance_sandbox(ds, inst.id, "th", policy, tmp_path / str(index))
        try:
            assert opened.view.manifest.hidden, inst.id
            code, output, _ = run_gold_in_sandbox(ds, opened, inst.id)
            assert code != 0 and HIDDEN_MESSAGE in output, (inst.id, output[-800:])
        finally:
            opened.sandbox.close()


def test_ah_view_imports_and_initializes_behave_and_the_audit_passes(example_dataset: Path, tmp_path: Path) -> None:
    ds = load_dataset(example_dataset)
    inst = ds.instances[0]
    opened = open_instance_sandbox(ds, inst.id, "ah", load_policy("default"), tmp_path / "ah")
    try:
        manifest = opened.view.manifest
        assert len(manifest.hidden) > 20 and manifest.removed_test_files
        assert "features/environment.py" in manifest.kept_infrastructure
        # the package imports from the view only, and behave loads the hooks (no steps: all undefined)
        imported = opened.sandbox.exec(["python", "-c", "import tinyshop; print(tinyshop.__file__)"], env=opened.env)
        assert imported.exit_code == 0 and imported.stdout.startswith("/workspace/"), imported
        dry = opened.sandbox.exec(["python", "-m", "behave", "--dry-run", "--no-summary", "-f", "null", "features"],
                                  env=opened.env)
        assert "undefined" in (dry.stdout + dry.stderr).lower() or dry.exit_code == 1, dry
        assert "Traceback" not in dry.stderr.split("You can implement")[0], dry.stderr[-1000:]
        report = audit_instance_sandbox(ds, opened)
        assert report.passed, report.leaks
        assert any("import only from the view" in c for c in report.checks)
    finally:
        opened.sandbox.close()


def test_views_are_deterministic_and_cached(example_dataset: Path, tmp_path: Path) -> None:
    ds = load_dataset(example_dataset)
    inst = ds.instances[1]
    first = materialize(ds, inst.id, "th", cache_dir=tmp_path / "a")
    second = materialize(ds, inst.id, "th", cache_dir=tmp_path / "b")
    assert not first.manifest.cached and not second.manifest.cached
    assert first.manifest.tree_sha256 == second.manifest.tree_sha256
    again = materialize(ds, inst.id, "th", cache_dir=tmp_path / "a")
    assert again.manifest.cached and again.manifest.tree_sha256 == first.manifest.tree_sha256
    copy = materialize(ds, inst.id, "th", out_dir=tmp_path / "out", cache_dir=tmp_path / "a")
    assert (tmp_path / "out.req2test-view.json").is_file() and copy.root == tmp_path / "out"


def test_audit_finds_planted_leaks(example_dataset: Path, tmp_path: Path) -> None:
    ds = load_dataset(example_dataset)
    inst = ds.instances[0]
    project = ds.card.projects[0]
    view = materialize(ds, inst.id, "th", out_dir=tmp_path / "view")
    hashes = gold_test_hashes(ds, project)
    assert static_audit(view.root, project, hashes) == []
    gold_file = next(c.path for c in ds.load_gold()[inst.id].closure if c.role == "step_definitions")
    shutil.copyfile(ds.root / project.snapshot / gold_file, view.root / "notes.py")
    (view.root / "__pycache__").mkdir()
    (view.root / ".git").mkdir()
    (view.root / ".coverage").write_text("")
    kinds = {leak.kind for leak in static_audit(view.root, project, hashes)}
    assert kinds == {"gold", "bytecode", "vcs", "coverage"}


def test_views_drop_the_answer_key_and_the_audit_catches_one(example_dataset: Path, tmp_path: Path) -> None:
    """The example's EXPECTED.md names each step definition by file:line: an answer key."""
    from harness.audit import gold_test_texts

    ds = load_dataset(example_dataset)
    project = ds.card.projects[0]
    snapshot = ds.root / project.snapshot
    assert (snapshot / "EXPECTED.md").is_file() and (snapshot / "README.md").is_file()
    for kind in ("th", "ah"):
        view = materialize(ds, ds.instances[0].id, kind, out_dir=tmp_path / kind)
        assert not (view.root / "EXPECTED.md").exists()
        assert (view.root / "README.md").is_file()  # names EXPECTED.md and steps/, cites no line: kept
        assert [d.split(":")[0] for d in view.manifest.removed_documents] == ["EXPECTED.md"]
        assert "features/steps/" in view.manifest.removed_documents[0]
    view_root = tmp_path / "th"
    hashes, texts = gold_test_hashes(ds, project), gold_test_texts(ds, project)
    assert static_audit(view_root, project, hashes, gold_texts=texts) == []
    shutil.copyfile(snapshot / "EXPECTED.md", view_root / "docs.md")
    # a doc that pastes step bodies without citing a line is a key too
    gold_file = next(c.path for c in ds.load_gold()[ds.instances[0].id].closure if c.role == "step_definitions")
    body = [ln for ln in (snapshot / gold_file).read_text().splitlines() if ln.startswith("    ") and len(ln) > 40]
    (view_root / "NOTES.txt").write_text("How the checks work:\n" + "\n".join(body[:6]) + "\n")
    leaks = static_audit(view_root, project, hashes, gold_texts=texts)
    assert {(leak.kind, leak.path) for leak in leaks} == {("answer_key", "docs.md"), ("answer_key", "NOTES.txt")}


def test_view_cli_writes_the_view_and_reports_the_audit(example_dataset: Path, tmp_path: Path) -> None:
    ds = load_dataset(example_dataset)
    inst = ds.instances[2]
    cmd = [sys.executable, "-m", "harness.cli", "view", str(example_dataset), inst.id, "--view", "ah",
           "-o", str(tmp_path / "v"), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["manifest"]["kind"] == "ah" and data["audit"]["passed"] is True
    bad = subprocess.run([sys.executable, "-m", "harness.cli", "view", str(example_dataset), "nope:1",
                          "-o", str(tmp_path / "w")], capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "no instance" in bad.stderr and "Traceback" not in bad.stderr
