"""Repository views: what an agent may see of a project while it writes one instance's test.

Both views start from the dataset's pinned snapshot and remove the test implementation of
EVERY scenario (step definitions and their helpers), keeping what the whole suite shares:
the hooks (behave's environment.py and the test-side modules it imports), fixtures and
data files. Then:

- target-hidden (``th``): the bodies the dataset lists for the instance are replaced by a
  placeholder that raises ``NotImplementedError("implementation hidden")``;
- all-hidden (``ah``): every body in the declared production scope is, except the bodies
  the package runs while it imports (kept so it still imports; listed in the manifest as
  possible leaks).

Bytecode, VCS data and editor caches never enter a view. A view is a pure function of the
snapshot and the instance's view spec: it is cached under its recipe hash and its tree
hash is recorded, so two builds are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bench.dataset import Dataset, DatasetError, load_dataset
from bench.errors import UserError
from bench.frameworks.protocol import BodyHider
from bench.frameworks.registry import UnknownFramework, get_framework
from bench.model import Instance, ProjectRecord
from bench.tree_rules import BYTECODE_SUFFIXES, NOT_PROJECT_CONTENT
from harness.answer_keys import AnswerKeyScanner

ViewKind = Literal["th", "ah"]
VIEWS_VERSION = "2"  # 2: answer-key documents are dropped

# Never copied into a view: bytecode, VCS metadata, caches, build output.
_SKIPPED_NAMES = NOT_PROJECT_CONTENT
_SKIPPED_SUFFIXES = (*BYTECODE_SUFFIXES, ".egg-info")


class ViewError(UserError):
    """A view cannot be made; one line."""


class ViewManifest(BaseModel):
    """Written as ``.req2test-view.json`` beside (never inside) the tree the agent sees."""

    instance_id: str
    project: str
    kind: ViewKind
    recipe_sha256: str = Field(description="hash of everything the view is made from; the cache key")
    tree_sha256: str = Field(description="hash of the materialized tree: equal builds are identical")
    hidden: list[str] = Field(description="file:qualname of every replaced body")
    kept_import_time: list[str] = Field(default_factory=list,
                                        description="all-hidden: bodies kept because the package runs them "
                                        "while it imports (visible implementation: possible leaks)")
    removed_test_files: list[str] = Field(description="test implementation removed (every scenario's): files, "
                                          "or FILE:LINE step-definition statements (cucumber-js)")
    kept_infrastructure: list[str] = Field(description="test-side Python kept: hooks and what they import")
    removed_documents: list[str] = Field(default_factory=list,
                                         description="PATH: reason of every answer-key document dropped "
                                         "(harness.answer_keys)")
    files: int
    build_seconds: float
    cached: bool = False


class View(BaseModel):
    root: Path
    manifest: ViewManifest


def default_cache_dir() -> Path:
    return Path(os.environ.get("REQ2TEST_CACHE", Path.home() / ".cache" / "req2test")) / "views"


def materialize(dataset: Dataset | Path, instance_id: str, kind: ViewKind, out_dir: Path | None = None,
                cache_dir: Path | None = None, reveal: str | None = None) -> View:
    """The view of one instance: from the cache when its recipe is unchanged.

    ``reveal`` names another instance whose target bodies this view keeps: the view on which the
    depends_on strategy checks a prerequisite's test (the prerequisite's behavior present, everything
    else hidden as for this instance). Such a view is for the harness's own checks, never an agent.

    With ``out_dir`` the tree is copied there (which must not exist or be empty); the
    cached tree itself must never be handed to an agent as its writable workspace.
    """
    if kind not in ("th", "ah"):
        raise ViewError(f"unknown view {kind!r}: use th (target-hidden) or ah (all-hidden)")
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(Path(dataset))
    instance = ds.instance(instance_id)
    try:
        project = ds.project(instance.project)
    except DatasetError as exc:
        raise ViewError(str(exc)) from None
    snapshot = ds.root / project.snapshot
    if not snapshot.is_dir():
        raise ViewError(f"project snapshot missing: {snapshot}")
    started = time.perf_counter()
    revealed = ds.instance(reveal).view.target_hidden if reveal else []
    recipe = _Recipe(ds, instance, project, kind, {(s.file, s.def_line) for s in revealed})
    cache = (cache_dir or default_cache_dir()) / f"{recipe.sha256}"
    manifest_path = cache / "manifest.json"
    if manifest_path.is_file():
        manifest = ViewManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        # an all-hidden view is shared by every instance of the project: name the one asked for
        manifest = manifest.model_copy(update={"cached": True, "instance_id": instance.id,
                                               "build_seconds": round(time.perf_counter() - started, 4)})
    else:
        manifest = _build(recipe, snapshot, cache, started)
    tree = cache / "tree"
    if out_dir is None:
        return View(root=tree, manifest=manifest)
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ViewError(f"{out_dir} is not empty; choose a new directory")
    shutil.copytree(tree, out_dir, symlinks=True, dirs_exist_ok=True)
    (out_dir.parent / f"{out_dir.name}.req2test-view.json").write_text(manifest.model_dump_json(indent=2),
                                                                         encoding="utf-8")
    return View(root=out_dir, manifest=manifest)


class _Recipe:
    """Everything a view is made from, and its hash."""

    def __init__(self, ds: Dataset, instance: Instance, project: ProjectRecord, kind: ViewKind,
                 revealed: set[tuple[str, int]] | None = None) -> None:
        self.instance = instance
        self.project = project
        self.kind = kind
        self.revealed = revealed or set()
        self.gold_test_files = set(ground_truth_test_files(ds, project))
        spans = [s.model_dump() for s in instance.view.target_hidden] if kind == "th" else []
        payload = {
            "version": VIEWS_VERSION, "kind": kind, "project": project.name, "source": project.source_sha256,
            "features_dir": project.features_dir, "production": project.production,
            "spans": spans,
            "all_hidden_scope": instance.view.all_hidden_scope if kind == "ah" else [],
            "import_time": sorted(project.import_time_bodies) if kind == "ah" else [],
            "gold_test_files": sorted(self.gold_test_files),
            **({"revealed": sorted(self.revealed)} if self.revealed else {}),
        }
        self.sha256 = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def ground_truth_test_files(ds: Dataset, project: ProjectRecord) -> dict[str, str]:
    """path → sha256 of every instance's test implementation files (step definitions, helpers)."""
    files: dict[str, str] = {}
    for gold in ds.load_gold().values():
        if gold.instance_id.startswith(project.name + "/"):
            files.update((c.path, c.sha256) for c in gold.closure if c.role in ("step_definitions", "helper"))
    return files


def _build(recipe: _Recipe, snapshot: Path, cache: Path, started: float) -> ViewManifest:
    project, kind = recipe.project, recipe.kind
    staging = Path(tempfile.mkdtemp(prefix="view-", dir=_ensure(cache.parent)))
    tree = staging / "tree"
    try:
        try:
            framework = get_framework(project.framework)
        except UnknownFramework as exc:
            raise ViewError(str(exc)) from None
        # every scenario's test implementation goes, what the whole suite shares stays
        side = framework.view_test_side(snapshot, project.features_dir, recipe.gold_test_files)
        infrastructure = side.infrastructure
        removed = list(side.removed)
        for source in sorted(_walk(snapshot)):
            rel = source.relative_to(snapshot).as_posix()
            if rel in side.removed_files:
                removed.append(rel)
                continue
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if rel in side.rewritten:
                target.write_bytes(side.rewritten[rel])
            else:
                shutil.copyfile(source, target)
        hidden, kept = _hide(recipe, snapshot, tree)
        documents = _drop_answer_keys(recipe, snapshot, tree)
        manifest = ViewManifest(
            instance_id=recipe.instance.id, project=project.name, kind=kind, recipe_sha256=recipe.sha256,
            tree_sha256=tree_hash(tree), hidden=hidden, kept_import_time=kept, removed_test_files=removed,
            kept_infrastructure=sorted(infrastructure), removed_documents=documents,
            files=sum(1 for _ in _walk(tree)), build_seconds=round(time.perf_counter() - started, 4))
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        try:
            staging.rename(cache)  # atomic: a cache entry is complete or absent
        except OSError:
            if not (cache / "manifest.json").is_file():  # not a concurrent twin build: a real failure
                raise
            shutil.rmtree(staging, ignore_errors=True)
        return manifest
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _drop_answer_keys(recipe: _Recipe, snapshot: Path, tree: Path) -> list[str]:
    """Delete the documents that cite or quote the ground-truth test code; ``PATH: reason`` each."""
    gold_texts = {rel: (snapshot / rel).read_text(encoding="utf-8", errors="replace")
                  for rel in sorted(recipe.gold_test_files) if (snapshot / rel).is_file()}
    files = [p.relative_to(tree).as_posix() for p in _walk(tree)]
    removed = []
    for key in AnswerKeyScanner(gold_texts).scan(tree, files):
        (tree / key.path).unlink()
        removed.append(f"{key.path}: {key.reason}")
    return removed


def _hide(recipe: _Recipe, snapshot: Path, tree: Path) -> tuple[list[str], list[str]]:
    """Replace bodies in the copied tree; returns (hidden keys, kept import-time keys)."""
    hidden: list[str] = []
    kept: list[str] = []
    try:
        hider = get_framework(recipe.project.framework).language.hider()
    except UnknownFramework as exc:
        raise ViewError(str(exc)) from None
    if recipe.kind == "th":
        by_file: dict[str, set[int]] = {}
        for span in recipe.instance.view.target_hidden:
            if (span.file, span.def_line) not in recipe.revealed:
                by_file.setdefault(span.file, set()).add(span.def_line)
        for rel, lines in sorted(by_file.items()):
            hidden += _rewrite(tree / rel, rel, lambda qualname, line, lines=lines: line in lines, hider)
        return sorted(hidden), kept
    import_time = set(recipe.project.import_time_bodies)
    for scope in recipe.instance.view.all_hidden_scope:
        base = tree / scope
        files = [base] if base.is_file() else sorted(
            p for p in base.rglob("*") if p.suffix in hider.source_suffixes and p.is_file()
            and not (hider.test_suffixes and p.name.endswith(hider.test_suffixes)))
        for path in files:
            rel = path.relative_to(tree).as_posix()

            def should_hide(qualname: str, line: int, rel: str = rel) -> bool:
                if (rel, line) in recipe.revealed:
                    return False
                if f"{rel}:{qualname}" in import_time:
                    kept.append(f"{rel}:{qualname}")
                    return False
                return True

            hidden += _rewrite(path, rel, should_hide, hider)
    return sorted(hidden), sorted(set(kept))


def _rewrite(path: Path, rel: str, should_hide, hider: BodyHider) -> list[str]:
    if not path.is_file():
        raise ViewError(f"view spec names {rel}, which the snapshot does not have")
    source = path.read_text(encoding="utf-8")
    try:
        text, report = hider.hide_bodies(source, should_hide)
    except Exception as exc:  # libcst parse errors: name the file, not a traceback
        raise ViewError(f"cannot hide bodies in {rel}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    path.write_text(text, encoding="utf-8")
    return [f"{rel}:{q}" for q in report.hidden]


def _walk(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_NAMES and not d.endswith(_SKIPPED_SUFFIXES))
        for name in sorted(filenames):
            if name in _SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                yield path


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(_walk(root)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
