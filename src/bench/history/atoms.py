"""Replay a repository's Gherkin history into requirement-atom lifecycle events.

A *requirement atom* (ReqMemBench's unit of requirement state) is here one scenario or scenario
outline. Its identity across commits is (feature path, scenario name), with two refinements:

* a feature file renamed in a commit (git's rename detection on that commit's first-parent
  diff) carries its atoms' identities to the new path, so a move is a ``changed`` event on the
  ``feature_file`` attribute, not a removal plus an addition;
* two scenarios sharing a name in one file are told apart by occurrence (``name``, ``name #2``).

Identities are stable strings: ``<path when first seen>::<scenario name>``; a later atom that
would get an id already given to another atom gets ``~2``, ``~3`` appended. A scenario removed and
re-added at the same place keeps its id (a second ``added``), because git history often reverts.

Lifecycle events follow the paper's INTRODUCE/MODIFY/DEFER/RESUME/REMOVE, as git can show them:
``added``, ``changed`` (with the attributes that differ), ``deferred`` / ``resumed`` (a deferral
tag such as @wip appears / disappears on the feature or the scenario), ``removed``. Every event
carries the atom's state after its commit (for ``removed``: the last state, which the paper keeps
as historical attributes) and its evidence: the commit, and the lines that commit added to a
CHANGELOG-like file. Folding the events up to a commit gives the gold state at that commit.

The history is read, never checked out: one ``git log`` for the first-parent chain and its
raw diffs, one ``git cat-file --batch`` for blobs, ``git diff`` for changelog additions.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Self

from pydantic import Field

from bench.gherkin_reader import parse_feature
from bench.model import Frozen, Requirement, Step, StepType

DEFAULT_DEFERRAL_TAGS: tuple[str, ...] = ("@wip", "@skip", "@ignore", "@pending", "@not_implemented")

EventKind = Literal["added", "changed", "removed", "deferred", "resumed"]
Attribute = Literal["feature_file", "background", "steps", "examples", "tags"]

_NULL_SHA = "0" * 40
_GITLINK_MODE = "160000"  # a submodule entry: no blob to read
# CHANGELOG.md, CHANGES.rst, HISTORY, NEWS.txt, changelog-v2.md; not history.py or newsletter.md
_CHANGELOG_NAME = re.compile(
    r"^(changelog|changes|history|news)([-_][a-z0-9_-]*)?(\.(md|rst|txt|adoc|markdown|org))?$", re.IGNORECASE)


# --------------------------------------------------------------------------- models
class AtomStep(Frozen):
    """A step as the requirement states it: type and text (And/But resolved), plus its argument."""

    type: StepType
    text: str
    docstring: str | None = None
    table: list[list[str]] | None = None


class AtomExamples(Frozen):
    name: str
    tags: list[str] = Field(default_factory=list)
    header: list[str]
    rows: list[list[str]]


class AtomState(Frozen):
    """What an atom requires at one commit. Only fields whose change is an event live here, so a
    state folded from events is exact (line numbers, which move on every edit, are left out)."""

    atom_id: str
    feature_file: str
    scenario: str
    background: list[AtomStep] = Field(default_factory=list)
    steps: list[AtomStep] = Field(default_factory=list)
    examples: list[AtomExamples] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="feature and scenario tags, sorted, deduplicated")
    deferred: bool = False


class Evidence(Frozen):
    commit: str
    date: str = Field(description="committer date, ISO 8601: when the change reached the first-parent chain")
    subject: str
    changelog_files: list[str] = Field(default_factory=list)
    changelog_lines: list[str] = Field(default_factory=list, description="non-blank lines the commit added")


class LifecycleEvent(Frozen):
    kind: EventKind
    atom_id: str
    changed: list[Attribute] = Field(default_factory=list, description="for 'changed': what differs")
    previous_feature_file: str | None = Field(default=None, description="set when the file was renamed")
    state: AtomState = Field(description="the state after this commit; for 'removed', the last live state")
    evidence: Evidence


class CommitRef(Frozen):
    sha: str
    date: str
    subject: str


class ParseFailure(Frozen):
    """A feature file version that could not be read: its previous atoms stay as they were."""

    commit: str
    path: str
    detail: str
    until: str | None = Field(default=None, description="the next commit touching the file, if any")


class Replay(Frozen):
    repo: str
    features_dir: str
    end: str
    deferral_tags: list[str]
    commits: list[CommitRef] = Field(description="the first-parent chain, oldest first")
    events: list[LifecycleEvent]
    parse_failures: list[ParseFailure] = Field(default_factory=list)

    @property
    def atom_ids(self) -> list[str]:
        """Every atom ever seen, sorted."""
        return sorted({event.atom_id for event in self.events})

    def position(self, commit: str) -> int:
        """Index in ``commits`` of a full sha or a unique prefix (4+ characters)."""
        if len(commit) < 4:
            raise ValueError(f"commit prefix too short: {commit!r}")
        hits = [i for i, ref in enumerate(self.commits) if ref.sha.startswith(commit.lower())]
        if len(hits) != 1:
            raise ValueError(f"{commit!r} is {'ambiguous' if hits else 'not on the replayed first-parent chain'}")
        return hits[0]


class GoldState(Frozen):
    commit: str
    atoms: list[AtomState] = Field(description="live atoms, by feature file then scenario")
    unparsable: list[str] = Field(default_factory=list,
                                  description="feature files whose atoms are carried from an earlier version")


# --------------------------------------------------------------------------- public API
def replay_history(repo: str | Path, features_dir: str = "features", end: str = "HEAD",
                   deferral_tags: Iterable[str] = DEFAULT_DEFERRAL_TAGS) -> Replay:
    """Replay the first-parent chain up to ``end`` (oldest first) into lifecycle events."""
    repo = Path(repo)
    end_sha = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{end}^{{commit}}").strip()
    deferral = sorted({_normal_tag(tag) for tag in deferral_tags})
    commits: list[CommitRef] = []
    events: list[LifecycleEvent] = []
    with _BlobReader(repo) as blobs:
        replayer = _Replayer(features_dir, _AtomParser(blobs, set(deferral)))
        for commit in _first_parent_log(repo, end_sha):
            commits.append(commit.ref)
            drafts = replayer.apply(commit)
            if not drafts:
                continue
            evidence = _evidence(repo, blobs, commit)
            events += [LifecycleEvent(kind=d.kind, atom_id=d.state.atom_id, changed=d.changed,
                                      previous_feature_file=d.previous_feature_file, state=d.state,
                                      evidence=evidence) for d in drafts]
        failures = replayer.failures
    return Replay(repo=str(repo), features_dir=features_dir, end=end_sha, deferral_tags=deferral,
                  commits=commits, events=events, parse_failures=[ParseFailure(**f) for f in failures])


def gold_state(replay: Replay, commit: str) -> GoldState:
    """All live atoms at a commit of the replayed chain (a full sha or a unique prefix).

    For a commit off that chain, replay up to it instead: ``replay_history(repo, end=commit)``.
    """
    at = replay.position(commit)
    index = {ref.sha: i for i, ref in enumerate(replay.commits)}
    last: dict[str, LifecycleEvent] = {}
    for event in replay.events:  # in commit order, so the last one seen is the current one
        if index[event.evidence.commit] > at:
            break
        last[event.atom_id] = event
    atoms = sorted((e.state for e in last.values() if e.kind != "removed"),
                   key=lambda s: (s.feature_file, s.scenario, s.atom_id))
    unparsable = sorted({f.path for f in replay.parse_failures
                         if index[f.commit] <= at and (f.until is None or index[f.until] > at)})
    return GoldState(commit=replay.commits[at].sha, atoms=atoms, unparsable=unparsable)


# --------------------------------------------------------------------------- replay
@dataclass(frozen=True)
class _Change:
    status: str  # git's status letter: A, C, D, M, R, T
    old_path: str | None
    new_path: str | None
    old_blob: str
    new_blob: str
    new_mode: str


@dataclass(frozen=True)
class _Commit:
    ref: CommitRef
    changes: tuple[_Change, ...]


@dataclass(frozen=True)
class _Draft:
    """An event before its commit's evidence is attached (changelog diffs are only read for
    commits that produce events)."""

    kind: EventKind
    state: AtomState
    changed: list[Attribute] = field(default_factory=list)
    previous_feature_file: str | None = None


_Key = tuple[str, int]  # (scenario name, occurrence of that name in the file)


@dataclass
class _FileSlot:
    ids: dict[_Key, str] = field(default_factory=dict)  # every atom ever seen here, live or not
    live: dict[_Key, AtomState] = field(default_factory=dict)  # in file order


class _Replayer:
    def __init__(self, features_dir: str, parser: _AtomParser) -> None:
        self._prefix = features_dir.strip("/")
        self._parser = parser
        self._files: dict[str, _FileSlot] = {}
        # ids of deleted files, so a restored file (a revert) gets its atoms' identities back
        self._graveyard: dict[str, dict[_Key, str]] = {}
        self._used_ids: set[str] = set()
        self._open_failure: dict[str, int] = {}
        self.failures: list[dict] = []

    def is_feature(self, path: str | None) -> bool:
        if path is None or not path.endswith(".feature"):
            return False
        return self._prefix in ("", ".") or path.startswith(self._prefix + "/")

    def apply(self, commit: _Commit) -> list[_Draft]:
        changes = [c for c in commit.changes if self.is_feature(c.old_path) or self.is_feature(c.new_path)]
        sha = commit.ref.sha
        # Detach every old version first, attach new ones after: a rename chain or swap inside one
        # commit (a→b, b→a) must see the slots as they were before the commit.
        detached: dict[str, _FileSlot] = {}
        for change in changes:
            if change.status in "DMRT" and self.is_feature(change.old_path):
                assert change.old_path is not None
                self._close_failure(change.old_path, sha)
                detached[change.old_path] = self._files.pop(change.old_path, _FileSlot())
        groups: list[tuple[str, list[_Draft]]] = []
        for change in changes:
            new_path = change.new_path
            if new_path is None or not self.is_feature(new_path) or change.new_mode == _GITLINK_MODE:
                continue
            source = change.old_path if change.status in "MRT" and change.old_path in detached else None
            if source is not None:
                slot = detached.pop(source)
                self._graveyard.pop(new_path, None)  # the moved identities win over a dead file's
            else:
                self._close_failure(new_path, sha)
                slot = _FileSlot(ids=self._graveyard.pop(new_path, {}))
            renamed_from = source if source not in (None, new_path) else None
            groups.append((new_path, self._reparse(slot, new_path, change.new_blob, renamed_from, sha)))
            self._files[new_path] = slot
        for path, slot in detached.items():  # deleted, or moved out of the features directory
            groups.append((path, [_Draft("removed", state) for state in slot.live.values()]))
            self._graveyard[path] = slot.ids
        groups.sort(key=lambda group: group[0])  # stable: one group per path
        return [draft for _, drafts in groups for draft in drafts]

    def _reparse(self, slot: _FileSlot, path: str, blob: str, renamed_from: str | None,
                 sha: str) -> list[_Draft]:
        parsed = self._parser.parse(blob)
        if isinstance(parsed, str):
            # An unreadable version says nothing about its requirements: keep the last known
            # atoms (moved along if the file was renamed) rather than report them removed.
            self._open_failure[path] = len(self.failures)
            self.failures.append({"commit": sha, "path": path, "detail": parsed})
            if renamed_from is None:
                return []
            moved: list[_Draft] = []
            for key, state in slot.live.items():
                slot.live[key] = state.model_copy(update={"feature_file": path})
                moved.append(_Draft("changed", slot.live[key], ["feature_file"], renamed_from))
            return moved
        drafts: list[_Draft] = []
        live: dict[_Key, AtomState] = {}
        seen: Counter[str] = Counter()
        for name, template in parsed:
            seen[name] += 1
            key = (name, seen[name])
            atom_id = slot.ids.get(key) or self._fresh_id(path, key)
            slot.ids[key] = atom_id
            state = template.model_copy(update={"atom_id": atom_id, "feature_file": path})
            old = slot.live.get(key)
            if old is None:
                drafts.append(_Draft("added", state))
                if state.deferred:
                    drafts.append(_Draft("deferred", state))
            else:
                changed = _changed_attributes(old, state, self._parser.deferral)
                if changed:
                    previous = old.feature_file if "feature_file" in changed else None
                    drafts.append(_Draft("changed", state, changed, previous))
                if state.deferred != old.deferred:
                    drafts.append(_Draft("deferred" if state.deferred else "resumed", state))
            live[key] = state
        drafts += [_Draft("removed", old) for key, old in slot.live.items() if key not in live]
        slot.live = live
        return drafts

    def _fresh_id(self, path: str, key: _Key) -> str:
        name, occurrence = key
        base = f"{path}::{name}" + (f" #{occurrence}" if occurrence > 1 else "")
        candidate, n = base, 1
        while candidate in self._used_ids:
            n += 1
            candidate = f"{base} ~{n}"
        self._used_ids.add(candidate)
        return candidate

    def _close_failure(self, path: str, sha: str) -> None:
        index = self._open_failure.pop(path, None)
        if index is not None:
            self.failures[index]["until"] = sha


def _changed_attributes(old: AtomState, new: AtomState, deferral: set[str]) -> list[Attribute]:
    changed: list[Attribute] = []
    if old.feature_file != new.feature_file:
        changed.append("feature_file")
    content: tuple[Attribute, ...] = ("background", "steps", "examples")
    changed += [name for name in content if getattr(old, name) != getattr(new, name)]
    # a deferral tag coming or going is a deferred/resumed event, not a tag change
    if _plain_tags(old, deferral) != _plain_tags(new, deferral):
        changed.append("tags")
    return changed


def _plain_tags(state: AtomState, deferral: set[str]) -> set[str]:
    return {tag for tag in state.tags if _normal_tag(tag) not in deferral}


# --------------------------------------------------------------------------- parsing
class _AtomParser:
    """Blob sha → atom templates (no id, no path), each blob parsed once."""

    def __init__(self, blobs: _BlobReader, deferral: set[str]) -> None:
        self._blobs = blobs
        self.deferral = deferral
        self._cache: dict[str, list[tuple[str, AtomState]] | str] = {}

    def parse(self, blob: str) -> list[tuple[str, AtomState]] | str:
        """The file's atoms in file order, or why the version cannot be read."""
        if blob not in self._cache:
            self._cache[blob] = self._parse(blob)
        return self._cache[blob]

    def _parse(self, blob: str) -> list[tuple[str, AtomState]] | str:
        # the bench's one Gherkin reading, on the text as a file read from disk would give it
        # (universal newlines, undecodable bytes replaced)
        text = self._blobs.read(blob).decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        try:
            feature = parse_feature("version.feature", text)
        except Exception as exc:  # noqa: BLE001 - a historical version (say an unknown `# language:`) must not end the replay
            return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if feature.problem == "empty":  # comment-only: it states no requirement, legitimately
            return []
        if feature.problem is not None:
            return f"{feature.problem}: {feature.detail}"
        return [(req.scenario_name, self._template(req)) for req in feature.requirements]

    def _template(self, req: Requirement) -> AtomState:
        tags = sorted({*req.feature_tags, *req.scenario_tags})
        return AtomState(
            atom_id="", feature_file="", scenario=req.scenario_name,
            background=[_atom_step(s) for s in req.background_steps],
            steps=[_atom_step(s) for s in req.steps],
            examples=[AtomExamples(name=t.name, tags=t.tags, header=t.header, rows=t.rows) for t in req.examples],
            tags=tags, deferred=any(_normal_tag(t) in self.deferral for t in tags))


def _atom_step(step: Step) -> AtomStep:
    return AtomStep(type=step.type, text=step.text, docstring=step.docstring, table=step.table)


def _normal_tag(tag: str) -> str:
    tag = tag.strip().lower()
    return tag if tag.startswith("@") else "@" + tag


# --------------------------------------------------------------------------- git
def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode("utf-8", errors="replace")


def _first_parent_log(repo: Path, end_sha: str) -> Iterator[_Commit]:
    # One log for the whole chain: -z raw diffs give exact paths and blob shas; a merge is
    # diffed against its first parent, i.e. what it brought to the chain; -M detects renames.
    out = _git(repo, "-c", "log.showSignature=false", "log", "--first-parent", "--diff-merges=first-parent",
               "--reverse", "--root", "-M", "--raw", "-z", "--no-abbrev", "--no-color", "--no-ext-diff",
               "--format=%x1e%H%x1f%cI%x1f%s", end_sha, "--")
    for record in out.split("\x1e")[1:]:
        header, _, raw = record.partition("\0")
        sha, date, subject = header.split("\x1f", 2)
        yield _Commit(CommitRef(sha=sha, date=date, subject=subject), tuple(_raw_changes(raw.lstrip("\n"))))


def _raw_changes(raw: str) -> Iterator[_Change]:
    tokens = raw.split("\0")
    i = 0
    while i < len(tokens):
        token = tokens[i].strip("\n")
        i += 1
        if not token.startswith(":"):
            continue
        _, new_mode, old_blob, new_blob, status = token[1:].split(" ")
        letter = status[0]
        if letter in "RC":
            old_path, new_path = tokens[i], tokens[i + 1]
            i += 2
        else:
            old_path = new_path = tokens[i]
            i += 1
        yield _Change(status=letter, old_path=None if letter == "A" else old_path,
                      new_path=None if letter == "D" else new_path,
                      old_blob=old_blob, new_blob=new_blob, new_mode=new_mode)


class _BlobReader:
    """One ``git cat-file --batch`` for the whole replay: thousands of blobs, one process."""

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        self._proc = subprocess.Popen(["git", "-C", str(self._repo), "cat-file", "--batch"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait()

    def read(self, sha: str) -> bytes:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(sha.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) != 3:
            raise RuntimeError(f"git cat-file: {b' '.join(header).decode(errors='replace')}")
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)  # the newline after each object
        return data


# --------------------------------------------------------------------------- evidence
def is_changelog(path: str) -> bool:
    """CHANGELOG*, CHANGES*, HISTORY*, NEWS* (any directory, any case, prose extensions only)."""
    return bool(_CHANGELOG_NAME.match(path.rsplit("/", 1)[-1]))


def _evidence(repo: Path, blobs: _BlobReader, commit: _Commit) -> Evidence:
    files: list[str] = []
    lines: list[str] = []
    for change in sorted(commit.changes, key=lambda c: c.new_path or ""):
        if change.new_path is None or change.new_mode == _GITLINK_MODE or not is_changelog(change.new_path):
            continue
        added = _added_lines(repo, blobs, change)
        if added:
            files.append(change.new_path)
            lines += added
    ref = commit.ref
    return Evidence(commit=ref.sha, date=ref.date, subject=ref.subject, changelog_files=files, changelog_lines=lines)


def _added_lines(repo: Path, blobs: _BlobReader, change: _Change) -> list[str]:
    if change.old_blob == _NULL_SHA or change.status == "C":
        text = blobs.read(change.new_blob).decode("utf-8", errors="replace").splitlines()
    else:
        diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U0",
                    change.old_blob, change.new_blob)
        text, in_hunks = [], False
        for line in diff.splitlines():
            in_hunks = in_hunks or line.startswith("@@")
            if in_hunks and line.startswith("+"):
                text.append(line[1:])
    return [line.rstrip() for line in text if line.strip()]
