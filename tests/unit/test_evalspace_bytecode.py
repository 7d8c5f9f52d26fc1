"""The evaluation base carries hash-checked bytecode for production only, and a mutant
written to disk is never hidden by it (even with the original's size and mtime)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.frameworks.behave.evalspace import build_base, instance_space


def _base(mini_project: Path, tmp_path: Path):
    return build_base(mini_project, tmp_path / "base", "features", ["src"], ["src/minicalc"], frozenset(), set())


def test_production_alone_is_compiled_with_checked_hashes(mini_project: Path, tmp_path: Path) -> None:
    base = _base(mini_project, tmp_path)
    caches = sorted(p.relative_to(base.root).as_posix() for p in base.root.rglob("*.pyc"))
    assert caches and all(c.startswith("src/minicalc/__pycache__/") for c in caches)
    for cache in caches:
        flags = int.from_bytes((base.root / cache).read_bytes()[4:8], "little")
        assert flags == 0b11  # hash-based and checked against the source on every import


def test_a_same_size_same_mtime_mutant_on_disk_is_what_imports(mini_project: Path, tmp_path: Path) -> None:
    (mini_project / "src/minicalc/probe.py").write_text("VALUE = 1\n", encoding="utf-8")
    base = _base(mini_project, tmp_path)
    assert list((base.root / "src/minicalc/__pycache__").glob("probe.*.pyc"))
    space = instance_space(base, {}, tmp_path / "inst", link_production=True)
    module = space.workspace / "src/minicalc/probe.py"
    stat = module.stat()
    tmp = module.with_suffix(".tmp")
    tmp.write_text("VALUE = 2\n", encoding="utf-8")
    os.replace(tmp, module)  # as the verdict process writes a mutant: a new file, then rename
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a timestamp check would now be fooled
    probe = subprocess.run([sys.executable, "-c", "import minicalc.probe as m; print(m.VALUE)"],
                           cwd=space.workspace, env={**os.environ, "PYTHONPATH": str(space.workspace / "src"),
                                                     "PYTHONDONTWRITEBYTECODE": "1"},
                           capture_output=True, text=True, check=False)
    assert probe.stdout.strip() == "2", probe.stderr
    base_copy = (base.root / "src/minicalc/probe.py").read_text(encoding="utf-8")
    assert base_copy == "VALUE = 1\n"  # the rename replaced the workspace's link, not the base file


def test_production_is_linked_only_where_the_sandbox_mounts_it_read_only(mini_project: Path,
                                                                          tmp_path: Path) -> None:
    base = _base(mini_project, tmp_path)
    linked = instance_space(base, {"features/steps/gen.py": "x = 1\n"}, tmp_path / "linked", link_production=True)
    copied = instance_space(base, {"features/steps/gen.py": "x = 1\n"}, tmp_path / "copied")
    files = [p for p in (base.root / "src/minicalc").rglob("*") if p.is_file()]
    assert files
    for path in files:
        rel = path.relative_to(base.root)
        assert (linked.workspace / rel).stat().st_ino == path.stat().st_ino  # a hard link
        assert (copied.workspace / rel).stat().st_ino != path.stat().st_ino  # a copy
        assert (copied.workspace / rel).read_bytes() == path.read_bytes()
    assert (linked.workspace / "features/steps/gen.py").read_text() == "x = 1\n"
    assert (base.root / "features/steps/gen.py").exists() is False
