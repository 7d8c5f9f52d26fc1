"""behave's test side as the protocol sees it: where a test may be written (``test_area``),
what a repository view removes and keeps (``view_test_side``), and the calibration
predictions derived from the ground truth (``calibration_files``).

behave's test implementation is at file granularity: step modules and their helpers are
whole files under the features directory; ``environment.py`` and the test-side modules it
imports are the suite's shared infrastructure.
"""

from __future__ import annotations

import ast
from pathlib import Path

from bench.builder.closure import TestSide
from bench.builder.mutation_stage import empty_test_files
from bench.frameworks.protocol import TestAreaSpec, TestSideView
from bench.judging import UnsupportedByFramework
from bench.model import GoldTest
from bench.testimpl import strip_step_bodies, then_step_targets

HOOKS_FILE = "environment.py"


def test_area(root: Path, features_dir: str, runner_config_files: frozenset[str]) -> TestAreaSpec:
    """Python files under the features directory; the hooks and the modules they import are
    fixed, as is every other existing file of the features tree (fixtures, data, features)."""
    features = features_dir.rstrip("/")
    side = TestSide.scan(root, features)
    entries = list((root / features).rglob("*"))
    protected = frozenset(p.relative_to(root).as_posix() for p in entries
                          if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts)
    directories = frozenset(p.relative_to(root).as_posix() for p in entries if p.is_dir())
    return TestAreaSpec(dirs=(features,), suffixes=(".py",), fixed_names=frozenset({HOOKS_FILE}),
                        fixed_paths=side.infrastructure_py, protected=protected, directories=directories,
                        runner_config_files=runner_config_files, language="Python")


def view_test_side(snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
    """Every Python file of the features tree and every ground-truth test file goes, except the
    hooks and what they import."""
    features = features_dir.rstrip("/")
    infrastructure = hook_infrastructure(snapshot, features)
    candidates = {p.relative_to(snapshot).as_posix() for p in (snapshot / features).rglob("*.py") if p.is_file()}
    candidates |= {rel for rel in gold_test_files if rel.endswith(".py")}
    return TestSideView(removed_files=frozenset(candidates - infrastructure), rewritten={}, removed=[],
                        infrastructure=frozenset(infrastructure))


def hook_infrastructure(snapshot: Path, features: str) -> set[str]:
    """environment.py and the test-side modules it imports, transitively (shared by the suite)."""
    start = f"{features}/{HOOKS_FILE}"
    if not (snapshot / start).is_file():
        return set()
    search = [snapshot / features, snapshot / features / "steps"]
    keep: set[str] = set()
    queue = [start]
    while queue:
        rel = queue.pop()
        if rel in keep:
            continue
        keep.add(rel)
        try:
            tree = ast.parse((snapshot / rel).read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                for base in search:
                    for candidate in (base / (name.replace(".", "/") + ".py"),
                                      base / name.replace(".", "/") / "__init__.py"):
                        if candidate.is_file():
                            queue.append(candidate.relative_to(snapshot).as_posix())
    return keep


def calibration_files(snapshot: Path, records: list[GoldTest], suite: bool) -> dict[str, dict[str, str]]:
    """One instance: its closure's code files; empty: every step body ``pass`` as the build ran it
    against the kills. A suite: the union of its scenarios' closures; a Then target emptied only
    where no other scenario's Given/When binds it."""
    if not suite:
        if len(records) != 1:
            raise UnsupportedByFramework(f"one instance has one ground truth, not {len(records)}")
        record = records[0]
        code = sorted(f.path for f in record.closure if f.role != "data")
        oracle = {path: (snapshot / path).read_text(encoding="utf-8") for path in code}
        empty = empty_test_files(snapshot, record)  # the build ran the same against the kills
        stripped = dict(oracle)
        stripped.update(strip_step_bodies(snapshot, code, then_step_targets(record)))
        return {"oracle": oracle, "empty": empty, "then-stripped": stripped}
    code = sorted({f.path for r in records for f in r.closure if f.role != "data"})
    step_files = sorted({f.path for r in records for f in r.closure if f.role == "step_definitions"})
    then = set().union(*(then_step_targets(r) for r in records)) if records else set()
    elsewhere = {(b.binding.file, b.binding.line) for r in records for b in r.bindings if b.role != "then"}
    oracle = {path: (snapshot / path).read_text(encoding="utf-8") for path in code}
    empty = {**oracle, **strip_step_bodies(snapshot, step_files, None)}
    stripped = {**oracle, **strip_step_bodies(snapshot, code, then - elsewhere)}
    return {"oracle": oracle, "empty": empty, "then-stripped": stripped}
