"""Nothing to steal, by construction: what a test can read from inside a real evaluation sandbox.

A walker program (``WALKER``, plain standard-library Python, run by the sandbox's own
interpreter) walks every path readable from ``/`` except ``/proc``, ``/sys`` and ``/dev``,
following directory links once (by device and inode), and prints the SHA-256 of every readable
regular file whose size is one of the sizes it is given (two files with equal hashes have
equal sizes, so this finds every readable copy of those files; without sizes it hashes every
file). It runs with exactly the bubblewrap arguments the evaluator builds for a real run:

- behave: ``EvalSandbox.sandboxed`` (the arguments ``EvalSandbox.start`` gives the worker) of
  the first sandbox a real ``evaluate()`` starts, on the instance space the verdict process
  built for it;
- cucumber-js: ``runner.sandbox_command`` (the arguments ``run_cucumber`` gives node) of the
  prediction's first run in a real ``evaluate()``, on the tree the judge linked for it.

The ground truth (``ground_truth_files``) is every closure file of every instance of the
dataset except the ``data`` ones (fixtures are shared and stay on disk by design, like
``bench.evaluate.ground_truth_files``): its recorded hash and the hash of the file as shipped
in the dataset's project snapshot. No readable file may have any of those hashes.

Used by tests/integration/test_readable_files.py (tinyshop, cartjs) and the corpus slices
(tests/integration/test_corpus_slices.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

WALKER = r'''
import hashlib, json, os, stat, sys

sizes = set(json.loads(sys.argv[1])) if len(sys.argv) > 1 and sys.argv[1] != "all" else None
SKIP = {"/proc", "/sys", "/dev"}
seen_dirs, seen_files, unlisted = set(), set(), []
counts = {"dirs": 0, "files": 0, "hashed": 0, "unreadable_dirs": 0, "unreadable_files": 0, "special": 0}
out = sys.stdout


def hash_file(path, st):
    key = (st.st_dev, st.st_ino)
    if key in seen_files:
        return
    seen_files.add(key)
    counts["files"] += 1
    if sizes is not None and st.st_size not in sizes:
        return
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
    except OSError:
        counts["unreadable_files"] += 1
        return
    counts["hashed"] += 1
    out.write(json.dumps({"path": path, "sha256": digest.hexdigest(), "size": st.st_size}) + "\n")


def walk(directory):
    try:
        st = os.stat(directory)
    except OSError:
        return
    key = (st.st_dev, st.st_ino)
    if key in seen_dirs:
        return
    seen_dirs.add(key)
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        counts["unreadable_dirs"] += 1
        unlisted.append(directory)
        return
    counts["dirs"] += 1
    for name in entries:
        path = os.path.join(directory, name)
        if path in SKIP:
            continue
        try:
            st = os.stat(path)  # follows links: a link to a readable file is a readable path
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            walk(path)
        elif stat.S_ISREG(st.st_mode):
            hash_file(path, st)
        else:
            counts["special"] += 1


sys.setrecursionlimit(100000)
walk("/")
out.write(json.dumps({"summary": counts, "uid": os.getuid(), "unlisted": unlisted}) + "\n")
'''


@dataclass(frozen=True)
class GroundTruthFile:
    instance_id: str
    path: str
    role: str


@dataclass
class Walk:
    """What the walker printed in one sandbox."""

    where: str  # which sandbox
    hashes: dict[str, list[str]] = field(default_factory=dict)  # sha256 -> readable paths
    summary: dict[str, Any] = field(default_factory=dict)
    uid: int | None = None
    unlisted: list[str] = field(default_factory=list)  # directories the sandbox's uid cannot list
    error: str = ""


def ground_truth_files(dataset_dir: Path) -> dict[str, list[GroundTruthFile]]:
    """sha256 -> the non-data closure files of any instance with that content: the hash
    recorded in the gold record and the hash of the file in the dataset's project snapshot."""
    from bench.dataset import load_dataset

    dataset = load_dataset(Path(dataset_dir))
    found: dict[str, list[GroundTruthFile]] = {}
    for instance_id, gold in dataset.load_gold().items():
        project = dataset.project(instance_id.split("/", 1)[0])
        snapshot = Path(dataset_dir) / project.snapshot
        for closure in gold.closure:
            if closure.role == "data":
                continue
            record = GroundTruthFile(instance_id, closure.path, closure.role)
            shipped = snapshot / closure.path
            if shipped.is_file():
                content = shipped.read_bytes()
                if not content.strip():
                    # an empty package marker (py-algorand-sdk's tests/steps/__init__.py) tells
                    # nothing, and its hash is that of every empty file on the system
                    continue
                found.setdefault(hashlib.sha256(content).hexdigest(), []).append(record)
            found.setdefault(closure.sha256, []).append(record)
    found.pop(hashlib.sha256(b"").hexdigest(), None)
    return found


def ground_truth_sizes(dataset_dir: Path) -> list[int] | None:
    """The sizes of the ground-truth files as shipped (None: some file is missing from the
    snapshot, so the walker must hash every file)."""
    from bench.dataset import load_dataset

    dataset = load_dataset(Path(dataset_dir))
    sizes: set[int] = set()
    for instance_id, gold in dataset.load_gold().items():
        snapshot = Path(dataset_dir) / dataset.project(instance_id.split("/", 1)[0]).snapshot
        for closure in gold.closure:
            if closure.role == "data":
                continue
            shipped = snapshot / closure.path
            if not shipped.is_file() or hashlib.sha256(shipped.read_bytes()).hexdigest() != closure.sha256:
                return None
            sizes.add(shipped.stat().st_size)
    return sorted(sizes)


def walker_command(python: str, sizes: list[int] | None) -> list[str]:
    return [python, "-I", "-c", WALKER, json.dumps(sizes) if sizes is not None else "all"]


def run_walker(command: list[str], where: str, env: dict[str, str] | None = None, cwd: str | None = None,
               timeout: float = 900.0) -> Walk:
    """Run a sandboxed walker command and parse what it printed."""
    proc = subprocess.run(command, capture_output=True, env=env or {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                          cwd=cwd, timeout=timeout, check=False)
    walk = Walk(where)
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "summary" in record:
            walk.summary, walk.uid, walk.unlisted = record["summary"], record.get("uid"), record["unlisted"]
        else:
            walk.hashes.setdefault(record["sha256"], []).append(record["path"])
    if proc.returncode != 0 or not walk.summary:
        walk.error = f"walker exit {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')[-1500:]}"
    return walk


def stolen(walk: Walk, truth: dict[str, list[GroundTruthFile]]) -> list[str]:
    """One line per readable file whose content is a ground-truth file's."""
    lines = []
    for digest, paths in sorted(walk.hashes.items()):
        records = truth.get(digest, [])
        for gt_path, role in sorted({(r.path, r.role) for r in records}):
            instances = sorted({r.instance_id for r in records if r.path == gt_path})
            lines.append(f"{', '.join(sorted(paths))} = {gt_path} ({role} of {len(instances)} instance(s), "
                         f"e.g. {instances[0]})")
    return lines


# ------------------------------------------------------------------ inside real evaluations
@contextlib.contextmanager
def walking_sandboxes(sizes: list[int] | None, limit: int = 1) -> Iterator[list[Walk]]:
    """While active, the first ``limit`` evaluation sandboxes (behave and cucumber-js alike)
    run the walker with their own bubblewrap arguments just before their real command."""
    from bench.frameworks.behave.eval_sandbox import EvalSandbox
    from bench.frameworks.cucumber_js import judge as cjs_judge
    from bench.frameworks.cucumber_js import runner as cjs_runner

    walks: list[Walk] = []
    start, run_cucumber = EvalSandbox.start, cjs_judge.run_cucumber

    def sandbox_start(self: EvalSandbox, prediction_files: list[str], timeout: float = 120.0) -> dict[str, Any]:
        if self.isolation == "bwrap" and len(walks) < limit:
            command = self.sandboxed(walker_command(self.python, sizes))
            walks.append(run_walker(command, f"behave sandbox of {self.space.workspace}", env=self.environment(),
                                    cwd=str(self.space.workspace)))
        return start(self, prediction_files, timeout)

    def cucumber_run(work: Path, selection: list[str], out_dir: Path, **options: Any) -> Any:
        if options.get("isolation") == "bwrap" and len(walks) < limit:
            out_dir.mkdir(parents=True, exist_ok=True)
            command = cjs_runner.sandbox_command(walker_command(sys.executable, sizes), work, out_dir,
                                                 compile_cache=options.get("compile_cache"),
                                                 writable_cache=options.get("writable_cache", False))
            walks.append(run_walker(command, f"cucumber-js sandbox of {work}", cwd=str(work)))
        return run_cucumber(work, selection, out_dir, **options)

    with mock.patch.object(EvalSandbox, "start", sandbox_start), \
            mock.patch.object(cjs_judge, "run_cucumber", cucumber_run):
        yield walks


def walk_evaluation(dataset_dir: Path, work: Path, instance_id: str, files: dict[str, str],
                    sizes: list[int] | None, limit: int = 1) -> list[Walk]:
    """Evaluate ``files`` as the prediction for ``instance_id`` (bubblewrap required) and walk
    the first ``limit`` sandboxes that evaluation starts."""
    from bench.evaluate import EvaluateOptions, evaluate

    work.mkdir(parents=True, exist_ok=True)
    predictions = work / "walk.jsonl"
    predictions.write_text(json.dumps({"instance_id": instance_id, "files": files}) + "\n", encoding="utf-8")
    with walking_sandboxes(sizes, limit) as walks:
        evaluate(Path(dataset_dir), predictions, work / "run",
                 EvaluateOptions(workers=1, timeout=30, instances=[instance_id], isolation="bwrap", resamples=10))
    return walks


def inert_prediction(files: dict[str, str]) -> dict[str, str]:
    """The same file names with code that defines nothing: the run stops at its first
    undefined step (one sandbox, one run), whatever the framework."""
    return {path: "NOTHING = None\n" if path.endswith(".py") else "void 0;\n" for path in files}


def assert_nothing_to_steal(dataset_dir: Path, work: Path, instance_id: str | None = None,
                            files: dict[str, str] | None = None) -> list[Walk]:
    """From inside a real evaluation sandbox of ``instance_id`` (default: the dataset's first
    instance; prediction ``files``, default: the file names of the "empty" calibration prediction
    with code that defines nothing), no readable file is a ground-truth file of any instance."""
    from bench.calibrate import calibration_predictions
    from bench.dataset import load_dataset
    from bench.isolation import bwrap_path

    if bwrap_path() is None:
        pytest.skip("bubblewrap is not installed: evaluations run without a sandbox")
    dataset_dir = Path(dataset_dir)
    if files is None:
        empty = {p.instance_id: p.files for p in calibration_predictions(dataset_dir)["empty"]}
        instance_id = instance_id or min(empty)
        files = inert_prediction(empty[instance_id])
    instance_id = instance_id or min(load_dataset(dataset_dir).load_gold())
    truth = ground_truth_files(dataset_dir)
    assert truth, "the dataset has no ground-truth test files"
    sizes = ground_truth_sizes(dataset_dir)
    # a probe that must be found: the instance's feature file, which every sandbox of it holds
    dataset = load_dataset(dataset_dir)
    instance = dataset.instance(instance_id)
    feature = dataset_dir / dataset.project(instance.project).snapshot / instance.requirement.feature_file
    probe = hashlib.sha256(feature.read_bytes()).hexdigest()
    if sizes is not None:
        sizes = sorted({*sizes, feature.stat().st_size})
    walks = walk_evaluation(dataset_dir, work, instance_id, files, sizes)
    assert walks, f"no evaluation sandbox was started for {instance_id}"
    for walk in walks:
        assert not walk.error, walk.error
        assert walk.uid == 65534 and walk.summary["files"] > 1000, walk.summary  # it did walk a system
        assert probe in walk.hashes, f"{walk.where}: the walker did not see the instance's own feature file"
        leaked = stolen(walk, truth)
        assert not leaked, f"{walk.where}: ground truth readable:\n  " + "\n  ".join(leaked[:40])
    return walks
