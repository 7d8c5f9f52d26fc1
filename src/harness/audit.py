"""The leak audit: a view fails when anything the agent must not see is reachable.

Two parts. A static scan of the view tree (bytecode, VCS history, coverage or mutant
data, archives of the project, files identical to a ground-truth test file). And a probe
run INSIDE the sandbox the agent will get, which tries to reach the gold and mutant
data, the real project source and the sdist cache by their host paths, looks for bytecode
and history in every writable or runtime directory, and checks that the project imports
only from the view (not from an installed copy).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.dataset import Dataset
from bench.model import ProjectRecord
from bench.tree_rules import VCS_DATA
from harness.answer_keys import AnswerKeyScanner
from harness.views import ground_truth_test_files

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".whl", ".zip", ".egg", ".tar.bz2", ".tar.xz")
_COVERAGE_NAMES = (".coverage", "coverage.json", "coverage.xml", ".coverage.")


class Leak(BaseModel):
    kind: str  # bytecode | vcs | coverage | mutants | gold | answer_key | archive | installed_project | reachable
    path: str
    detail: str = ""


class AuditReport(BaseModel):
    passed: bool
    leaks: list[Leak] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list, description="what was checked, in words")


def gold_test_hashes(ds: Dataset, project: ProjectRecord) -> dict[str, str]:
    """sha256 → path of every ground-truth test file (step definitions, helpers) of the project."""
    return {digest: path for path, digest in ground_truth_test_files(ds, project).items()}


def gold_test_texts(ds: Dataset, project: ProjectRecord) -> dict[str, str]:
    """path → text of every ground-truth test file, as the dataset's snapshot holds it."""
    snapshot = ds.root / project.snapshot
    return {rel: (snapshot / rel).read_text(encoding="utf-8", errors="replace")
            for rel in sorted(ground_truth_test_files(ds, project)) if (snapshot / rel).is_file()}


def static_audit(tree: Path, project: ProjectRecord, gold_hashes: dict[str, str],
                 allowed_files: set[str] | None = None, gold_texts: dict[str, str] | None = None) -> list[Leak]:
    """Scan a view (or a workspace) on the host. ``allowed_files`` are kept infrastructure;
    with ``gold_texts`` (path → ground-truth test code) documents are checked for answer keys."""
    leaks: list[Leak] = []
    if gold_texts is not None:
        files = [p.relative_to(tree).as_posix() for p in tree.rglob("*")
                 if not any(part in (".git", "node_modules") for part in p.relative_to(tree).parts)]
        leaks += [Leak(kind="answer_key", path=key.path, detail=key.reason)
                  for key in AnswerKeyScanner(gold_texts).scan(tree, files, skip=allowed_files or set())]
    package_names = {Path(p).name.removesuffix(".py") for p in project.production}
    for dirpath, dirnames, filenames in os.walk(tree):
        rel_dir = Path(dirpath).relative_to(tree)
        for name in dirnames:
            if name == "__pycache__":
                leaks.append(Leak(kind="bytecode", path=str(rel_dir / name)))
            elif name in VCS_DATA:
                leaks.append(Leak(kind="vcs", path=str(rel_dir / name)))
            elif name == "gold" or name == "mutants":
                leaks.append(Leak(kind=name, path=str(rel_dir / name), detail="dataset directory name"))
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            path = Path(dirpath) / name
            if name.endswith((".pyc", ".pyo")):
                leaks.append(Leak(kind="bytecode", path=rel))
            elif name == ".git":
                leaks.append(Leak(kind="vcs", path=rel, detail="git pointer file"))
            elif name.startswith(_COVERAGE_NAMES):
                leaks.append(Leak(kind="coverage", path=rel))
            elif name.endswith(_ARCHIVE_SUFFIXES) and any(p.replace("_", "-") in name.replace("_", "-")
                                                         for p in {project.name, *package_names}):
                leaks.append(Leak(kind="archive", path=rel, detail="an archive of the project"))
            elif path.is_file() and not path.is_symlink() and (allowed_files is None or rel not in allowed_files):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                if digest in gold_hashes:
                    leaks.append(Leak(kind="gold", path=rel, detail=f"identical to ground truth {gold_hashes[digest]}"))
    return leaks


# The probe runs inside the sandbox with the runtime's python: standard library only.
PROBE = r'''
import hashlib, json, os, subprocess, sys
spec = json.loads(sys.argv[1])
leaks = []
for path in spec["unreachable"]:
    if os.path.exists(path):
        leaks.append({"kind": "reachable", "path": path, "detail": "exists inside the sandbox"})
roots = spec["scan"]
hashes = set(spec["gold_hashes"])
for root in roots:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            if name in (".git", ".hg", ".svn"):
                leaks.append({"kind": "vcs", "path": os.path.join(dirpath, name)})
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith((".pyc", ".pyo")) and dirpath.startswith(spec["workspace"]):
                leaks.append({"kind": "bytecode", "path": path})
            if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < 4_000_000:
                try:
                    with open(path, "rb") as fh:
                        digest = hashlib.sha256(fh.read()).hexdigest()
                except OSError:
                    continue
                if digest in hashes and not path.startswith(tuple(spec["allowed"])):
                    leaks.append({"kind": "gold", "path": path, "detail": "identical to a ground-truth file"})
for package in spec["packages"]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", f"import {package}; print({package}.__file__)"],
                          cwd="/tmp", env=env, capture_output=True, text=True)
    if proc.returncode == 0:
        leaks.append({"kind": "installed_project", "path": proc.stdout.strip(),
                      "detail": f"{package} imports without the view"})
print(json.dumps(leaks))
'''


def probe_spec(ds: Dataset, project: ProjectRecord, gold_hashes: dict[str, str], workspace: str,
               scan: list[str], allowed: list[str], sdist_cache: Path | None = None) -> dict[str, Any]:
    unreachable = [str(ds.root.resolve()), str((ds.root / "gold").resolve()), str((ds.root / "mutants").resolve()),
                   str((ds.root / project.snapshot).resolve()), "/var/run/docker.sock", "/run/docker.sock"]
    if sdist_cache is not None:
        unreachable.append(str(sdist_cache.resolve()))
    return {"unreachable": unreachable, "scan": scan, "gold_hashes": sorted(gold_hashes), "workspace": workspace,
            "allowed": allowed,
            "packages": sorted({Path(p).name.removesuffix(".py") for p in project.production})}


def parse_probe(stdout: str, stderr: str) -> list[Leak]:
    try:
        raw = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [Leak(kind="probe_failed", path="", detail=(stderr or stdout).strip()[-300:])]
    return [Leak.model_validate(item) for item in raw]


def audit_instance_sandbox(ds: Dataset, opened: Any, sdist_cache: Path | None = None) -> AuditReport:
    """Static scan of the workspace plus the probe inside the running sandbox."""
    from harness.sandbox.base import WORKSPACE

    instance = ds.instance(opened.view.manifest.instance_id)
    project = ds.project(instance.project)
    hashes = gold_test_hashes(ds, project)
    allowed = set(opened.view.manifest.kept_infrastructure)
    leaks = static_audit(opened.workspace.root, project, hashes, allowed, gold_test_texts(ds, project))
    checks = ["no bytecode, VCS history, coverage, mutant or gold data, or project archive in the view",
              "no file identical to a ground-truth test file",
              "no document that cites ground-truth test code by line or quotes it (an answer key)"]
    if opened.sandbox.policy.backend == "local":
        checks.append("local backend: nothing is isolated, so reachability was not probed")
        return AuditReport(passed=not leaks, leaks=leaks, checks=checks)
    scan = [WORKSPACE, "/tmp"] + ([str(opened.runtime.venv)] if opened.runtime is not None else [])
    spec = probe_spec(ds, project, hashes, WORKSPACE, scan,
                      [f"{WORKSPACE}/{p}" for p in sorted(allowed)], sdist_cache)
    python = str(opened.runtime.python) if opened.runtime is not None else "python3"
    result = opened.sandbox.exec([python, "-c", PROBE, json.dumps(spec)], timeout=120)
    leaks += parse_probe(result.stdout, result.stderr)
    checks += [("inside the sandbox: the dataset, gold, mutants, real project source, sdist cache and docker "
                "socket are unreachable"), "no bytecode or history in the workspace, /tmp or the runtime",
               f"{', '.join(spec['packages'])} import only from the view"]
    return AuditReport(passed=not leaks, leaks=leaks, checks=checks)
