"""The isolation and validation runs a build has finished, kept on disk so a resumed build does not
run them again.

The mutant stage's checkpoint (``schemata_stage.RunsCheckpoint``) keeps judged instances, but the
stages before it ran anew on every resume: about 10 minutes for a coddy-agent chunk and 40 minutes
of CPU for java-algorand-sdk's 454 scenarios. Worse, a project whose runs vary with the machine's
load could then exclude a different instance, so every mutant-stage key changed and nothing was
reused (coddy-agent, December 5). Replaying the first build's own runs makes the resumed build see
exactly what the first one saw, so its instances, pools and keys are the same.

A run is known by what decides its outcome: the project's content hash, the stage, the instance, the
row (feature line), the repetition, the workspace's identity (which step sites a validation
workspace keeps or removes) and the run's timeout. A run made while an interrupt was killing the
processes in flight is never kept: its outcome is the kill's, not the test's.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench import stopping
from bench.builder.schemata_stage import CHECKPOINT_DIR

__all__ = ["MEMO_VERSION", "RunMemo", "memo_for", "sites_digest"]

MEMO_VERSION = 1  # raise when what a stored run means changes (its class pickles differently)
T = TypeVar("T")


def sites_digest(sites: Any) -> str:
    """A stable name for a validation workspace's set of step sites (their reprs, sorted)."""
    return hashlib.sha256("\n".join(sorted(repr(s) for s in sites)).encode()).hexdigest()[:16]


class RunMemo:
    """Runs of one build keyed by ``(stage, instance, row, repetition, workspace)``; ``directory``
    None keeps nothing (a build without an output directory to resume into)."""

    def __init__(self, directory: Path | None, project_sha256: str, timeout: float) -> None:
        self.directory = directory
        self.project_sha256 = project_sha256
        self.timeout = timeout
        self.reused = 0
        self.saved = 0

    def _path(self, parts: tuple[Any, ...]) -> Path | None:
        if self.directory is None:
            return None
        material = json.dumps([MEMO_VERSION, self.project_sha256, self.timeout, *map(str, parts)])
        return self.directory / (hashlib.sha256(material.encode()).hexdigest() + ".pickle")

    def get(self, *parts: Any) -> Any | None:
        path = self._path(parts)
        if path is None or not path.is_file():
            return None
        try:
            found = pickle.loads(path.read_bytes())
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError, TypeError, ValueError):
            # a file cut by a kill, or of classes that changed since: run again
            return None
        self.reused += 1
        return found

    def has(self, *parts: Any) -> bool:
        path = self._path(parts)
        return path is not None and path.is_file()

    def workspace_keys(self, workspace: tuple[Any, ...], cands: list[Any],
                       runs: int) -> dict[tuple[str, int, int], tuple[Any, ...]]:
        """The keys of a validation workspace's runs: (instance, repetition, row) -> key."""
        return {(cand.instance_id, r, line): ("validation", *workspace, cand.instance_id, line, r)
                for cand in cands for r in range(runs) for line in cand.requirement.run_lines}

    def replay_workspace(self, keys: dict[tuple[str, int, int], tuple[Any, ...]], cands: list[Any], runs: int,
                         record: Callable[[Any, list[Any]], None], advance: Callable[[int], None]) -> bool:
        """Hand every candidate's kept rows to ``record``, repetition by repetition, when all of the
        workspace's runs are kept and readable (True); else nothing (False: build and run it, the
        kept runs reused one by one)."""
        if not all(self.has(*key) for key in keys.values()):
            return False
        found = {where: self.get(*key) for where, key in keys.items()}
        if any(run is None for run in found.values()):
            return False
        for cand in cands:
            for r in range(runs):
                record(cand, [found[(cand.instance_id, r, line)] for line in cand.requirement.run_lines])
                advance(len(cand.requirement.run_lines))
        return True

    def put(self, value: Any, *parts: Any) -> None:
        path = self._path(parts)
        if path is None or stopping.requested():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        os.replace(partial, path)  # never half a file under the real name
        self.saved += 1

    def run(self, make: Callable[[], T], *parts: Any, on_reuse: Callable[[], None] | None = None) -> T:
        """The stored run under ``parts`` (``on_reuse`` is then called: the progress a run would
        have advanced), or ``make()``'s, stored."""
        found = self.get(*parts)
        if found is not None:
            if on_reuse is not None:
                on_reuse()
            return found  # type: ignore[no-any-return]
        made = make()
        self.put(made, *parts)
        return made


def memo_for(out_dir: Path, project_sha256: str, timeout: float) -> RunMemo:
    return RunMemo(Path(out_dir) / CHECKPOINT_DIR / "stage-runs", project_sha256, timeout)
