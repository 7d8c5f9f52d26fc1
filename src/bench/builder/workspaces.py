"""The build's workspaces: copies of a project whose test side keeps only some Python files.

A validation run (positive: a closure and the shared infrastructure; negative: no step code),
the then-stripped and the empty test each run in such a workspace. Each is a *real* tree:
directories made anew and files hard-linked from the worker's own copy (copied where a link
cannot be made). A symlinked tree let a hook that resolves its own path
(``Path(__file__).resolve()``) step out of the workspace into the worker's copy: a step module
it imported from there was a second copy of every step definition (AmbiguousStep). Only the
production scope is linked as a symlink to the worker's copy — the code the worker imported
(its modules are that copy's, whatever a run does with paths), read-only under bubblewrap.

Which Python files a workspace may drop is the test side of ``bench.builder.closure``: every
``.py`` under the features tree outside the production scope. Everything else of the project
is kept wherever it lives, so a production package inside the features tree's top directory
(``features = "python/features"`` beside ``python/src/<pkg>``) or inside the features tree
itself (``features = "."``) stays whole.

The workspace sits where the warm worker looks for it (``ws-<slot>/<key>`` beside the slot) and
is made before a request that names it reaches the worker, which then finds it in place.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.builder.closure import TestSide, in_scope, norm
from bench.frameworks.worker_pool import WorkerError, WorkerPool, WorkerSpec
from bench.project import IGNORED_NAMES


def workspace_root(slot_root: Path, key: str) -> Path:
    """Where the build worker of ``slot_root`` keeps the workspace ``key``."""
    return slot_root.parent / f"ws-{slot_root.name}" / key


@dataclass(frozen=True)
class WorkspaceLayout:
    removable: frozenset[str]  # test-side .py files: dropped unless a workspace keeps them
    production: tuple[str, ...]
    steps_dir: str | None  # made when missing: behave refuses to start without it

    @classmethod
    def of(cls, side: TestSide) -> WorkspaceLayout:
        # behave's base dir is the features dir (or nothing was found above it): it needs steps/.
        # A base dir above the features dir already has its own; an empty steps/ made in the
        # features dir would become behave's base dir instead.
        own_base = side.base_dir in ("", norm(side.features_dir))
        return cls(frozenset(side.python_files), side.production, side.steps_dir if own_base else None)


def materialize(slot_root: Path, spec: Mapping[str, Any], layout: WorkspaceLayout) -> Path:
    """Make (once) the workspace ``spec`` (a ``RunWorkspace``) beside ``slot_root``."""
    target = workspace_root(slot_root, spec["key"])
    if target.is_dir():
        return target
    keep = set(spec.get("keep_py") or [])
    files: dict[str, str] = dict(spec.get("files") or {})
    staging = target.with_name(f"{target.name}.tmp{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for dirpath, dirnames, filenames in os.walk(slot_root):
        rel_dir = os.path.relpath(dirpath, slot_root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        descend = []
        for name in dirnames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            source = os.path.join(dirpath, name)
            if name in IGNORED_NAMES:
                continue
            if not _linked_as_is(source, staging / rel, rel, layout.production):
                (staging / rel).mkdir()
                descend.append(name)
        dirnames[:] = descend
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            source = os.path.join(dirpath, name)
            if name.endswith((".pyc", ".pyo")) or rel in files:
                continue
            if rel in layout.removable and rel not in keep:
                continue
            if not _linked_as_is(source, staging / rel, rel, layout.production):
                _link(source, staging / rel)
    for rel, text in files.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if layout.steps_dir:
        (staging / layout.steps_dir).mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staging, target)
    except OSError:
        if not target.is_dir():  # lost a race with another maker: theirs is identical
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _linked_as_is(source: str, target: Path, rel: str, production: tuple[str, ...]) -> bool:
    """A symlink of the slot stays the same symlink, and production is a link to the slot's own
    copy (the code the worker imported, read-only under bubblewrap); False: anything else, which
    the caller makes a real directory or file."""
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
    elif in_scope(rel, production):
        os.symlink(source, target)
    else:
        return False
    return True


def _link(source: str, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links refused: a copy
        shutil.copy2(source, target)


def request_workspaces(request: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The workspaces a build request runs in (a run, a session, an import-time mutant's runs)."""
    if request.get("workspace"):
        yield request["workspace"]
    for run in request.get("runs") or []:
        if isinstance(run, Mapping) and run.get("workspace"):
            yield run["workspace"]


class WorkspacePool(WorkerPool):
    """A worker pool that makes each request's workspace in the slot that will run it, just
    before handing the request over (so a workspace is made only where it is used)."""

    def __init__(self, spec: WorkerSpec, roots: list[Path] | None, layout: WorkspaceLayout) -> None:
        super().__init__(spec, roots)
        self.layout = layout

    def _call_with_restart(self, slot: int, request: Mapping[str, Any]) -> dict[str, Any]:
        for workspace in request_workspaces(request):
            try:
                materialize(self.specs[slot].root, workspace, self.layout)
            except OSError as exc:  # a full disk, say: the build's one-line error
                raise WorkerError(f"could not make the workspace {workspace['key']}: {exc}") from exc
        return super()._call_with_restart(slot, request)

