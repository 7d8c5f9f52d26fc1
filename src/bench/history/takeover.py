"""Takeover targets (ReqMemBench's project takeover, on a BDD project's git history).

A *takeover target* is a first-parent commit C that makes scenarios pass: it adds, changes or
resumes (drops ``@wip`` from) requirement atoms and changes production code. The agent gets
what a developer taking over at C's parent P would have: P's tree (production, features and
steps as they were), the history before C and C's request (its commit message). Delivery is
judged on C's own requirement: C's feature files with **C's ground-truth step definitions**,
run on the production code the agent delivers.

    req2test takeover build REPO -o DIR --commit SHA ...    (or --select N)

writes::

    DIR/takeover.json        the card (repository, targets, dropped commits and why, timings)
    DIR/history.jsonl        the first-parent chain, oldest first (message, atom events, feature diff)
    DIR/targets.jsonl        agent-visible: request, history cut, oracle pre/post states, workspace
    DIR/trees/<t>/           P's tree: the agent's workspace
    DIR/datasets/<t>/        a req2test dataset built at C (no mutants): the developers' steps
    DIR/gold/<t>.json        evaluator-only: target and regression scenarios, relevant atoms, evidence

Which of C's scenarios pass on P's production (with C's steps) is the builder's own validation of
C's tree with P's production sources in place. **Target scenarios** are those that fail there:
C's added/changed/resumed atoms, plus any other scenario C's change makes pass (``also_fixed``).
A request scenario that already passes on the parent does not test what C delivers, so it joins
the regression set; a commit none of whose request scenarios fails on the parent is dropped (the
card says why). **Regression scenarios** are the built scenarios whose atom was live and not
deferred at P and that pass on P's production.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field

from bench.errors import UserError
from bench.history.atoms import AtomState, Replay, gold_state, replay_history
from bench.history.trees import write_tree
from bench.model import Frozen
from bench.progress import Progress

DIFF_LIMIT = 12_000  # characters of one commit's feature diff kept in history.jsonl
TARGET_KINDS = ("added", "changed", "resumed")


class TakeoverError(UserError):
    """A user-facing problem (bad repository, commit, directory); one line."""


class HistoryEntry(Frozen):
    index: int
    sha: str
    date: str
    subject: str
    body: str = ""
    events: list[str] = Field(default_factory=list, description="'<kind> <atom id>' for each atom event")
    feature_diff: str = Field("", description="the commit's diff of the feature files (capped)")
    changelog_lines: list[str] = Field(default_factory=list)


class TakeoverTarget(Frozen):
    """What a takeover agent may be given (the arm's condition decides which parts it sees)."""

    id: str = Field(description="PROJECT@SHA12")
    project: str
    commit: str
    parent: str
    date: str
    request: str = Field(description="the commit's message: the request the agent takes over with")
    history_end: int = Field(description="history.jsonl entries [0, history_end) precede the commit (C1)")
    relevant_commits: list[str] = Field(description="earlier commits with events on the request's atoms (C2)")
    oracle_pre_state: list[AtomState] = Field(description="the request's atoms as they were at the parent")
    oracle_post_state: list[AtomState] = Field(description="the request's atoms as the commit leaves them")
    workspace: str = Field(description="the parent's tree, relative to the takeover directory")
    dataset: str = Field(description="the dataset built at the commit, relative to the takeover directory")
    features_dir: str
    production: list[str]


class TakeoverGold(Frozen):
    id: str
    target_scenarios: list[str] = Field(description="instance ids (in the commit's dataset) delivery must make pass")
    regression_scenarios: list[str] = Field(description="instance ids that passed before and must still pass")
    passing_on_parent: list[str] = Field(default_factory=list,
                                         description="the commit's scenarios that already passed on the parent "
                                                     "(counted as regression)")
    also_fixed: list[str] = Field(default_factory=list,
                                  description="target scenarios outside the request's atoms: they fail on the "
                                              "parent's production too, and the commit makes them pass")
    relevant_atoms: list[str]
    evidence_commits: list[str]
    affected: dict[str, str] = Field(description="atom id -> its event kind at the commit")


class DroppedCommit(Frozen):
    commit: str
    reason: str


class TakeoverCard(Frozen):
    name: str
    repo: str
    features_dir: str
    commits: int = Field(description="first-parent commits replayed")
    targets: list[str]
    dropped: list[DroppedCommit] = Field(default_factory=list)
    missing_blobs: list[str] = Field(default_factory=list, description="files the mirror lacked (not written)")
    seconds: dict[str, float] = Field(default_factory=dict)


def safe_id(target_id: str) -> str:
    return target_id.replace("/", "_").replace("@", "-")


# --------------------------------------------------------------------------- reading
class TakeoverSet:
    """A takeover directory, read lazily."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        card = self.root / "takeover.json"
        if not card.is_file():
            raise TakeoverError(f"{self.root} is not a takeover directory (no takeover.json); "
                                f"build one with `req2test takeover build`")
        self.card = TakeoverCard.model_validate_json(card.read_text(encoding="utf-8"))
        self.targets = [TakeoverTarget.model_validate_json(line) for line in
                        (self.root / "targets.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        self._by_id = {t.id: t for t in self.targets}
        self._history: list[HistoryEntry] | None = None

    def target(self, target_id: str) -> TakeoverTarget:
        try:
            return self._by_id[target_id]
        except KeyError:
            raise TakeoverError(f"no takeover target {target_id!r} in {self.root}") from None

    @property
    def history(self) -> list[HistoryEntry]:
        if self._history is None:
            self._history = [HistoryEntry.model_validate_json(line) for line in
                             (self.root / "history.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        return self._history

    def visible_history(self, target: TakeoverTarget, condition: str = "full") -> list[HistoryEntry]:
        """C1 (``full``): every earlier commit; C2 (``relevant``): those with events on the request's atoms."""
        earlier = self.history[:target.history_end]
        if condition == "relevant":
            keep = set(target.relevant_commits)
            return [e for e in earlier if e.sha in keep]
        return earlier

    def gold(self, target_id: str) -> TakeoverGold:
        return TakeoverGold.model_validate_json(
            (self.root / "gold" / f"{safe_id(target_id)}.json").read_text(encoding="utf-8"))

    def dataset_dir(self, target: TakeoverTarget) -> Path:
        return self.root / target.dataset

    def workspace(self, target: TakeoverTarget) -> Path:
        return self.root / target.workspace


# --------------------------------------------------------------------------- selection
def candidate_commits(replay: Replay, repo: Path, production_prefixes: Iterable[str]) -> list[str]:
    """First-parent commits that add/change/resume a live atom and touch production code."""
    prefixes = tuple(p.rstrip("/") + "/" for p in production_prefixes)
    touched: dict[str, bool] = {}
    for event in replay.events:
        if event.kind in TARGET_KINDS and not event.state.deferred:
            touched.setdefault(event.evidence.commit, True)
    out = []
    for ref in replay.commits:
        if ref.sha not in touched:
            continue
        names = _git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", "-m", "--first-parent", ref.sha)
        if any(n.startswith(prefixes) and n.endswith(".py") for n in names.split()):
            out.append(ref.sha)
    return out


# --------------------------------------------------------------------------- building
def build_takeover(repo: Path, out: Path, commits: list[str], name: str, features_dir: str = "features",
                   exclude: tuple[str, ...] = (), workers: int = 2, progress: Progress | None = None,
                   replay: Replay | None = None) -> TakeoverCard:
    """Build one takeover target per commit (see the module docstring); a commit that cannot be
    one is listed in the card's ``dropped`` with the reason."""
    from bench.builder.pipeline import BuildError, BuildOptions, build_dataset

    started = time.monotonic()
    repo = Path(repo)
    if not (repo / "HEAD").is_file() and not (repo / ".git").exists():
        raise TakeoverError(f"{repo} is not a git repository")
    out.mkdir(parents=True, exist_ok=True)
    if (out / "takeover.json").exists():
        raise TakeoverError(f"{out} already holds a takeover set; use a new directory")
    replay = replay or replay_history(repo, features_dir)
    seconds: dict[str, float] = {"replay": round(time.monotonic() - started, 1)}
    history = _history_entries(repo, replay, features_dir)
    (out / "history.jsonl").write_text("".join(h.model_dump_json() + "\n" for h in history), encoding="utf-8")
    position = {ref.sha: i for i, ref in enumerate(replay.commits)}
    targets: list[TakeoverTarget] = []
    dropped: list[DroppedCommit] = []
    missing: set[str] = set()
    for wanted in commits:
        try:
            at = replay.position(wanted)
        except ValueError as exc:
            raise TakeoverError(f"--commit {wanted}: {exc}") from None
        commit = replay.commits[at].sha
        if at == 0:
            dropped.append(DroppedCommit(commit=commit, reason="the first commit has no parent"))
            continue
        parent = replay.commits[at - 1].sha
        target_id = f"{name}@{commit[:12]}"
        if progress is not None:
            progress.stage(f"target {target_id}", 1)
        tick = time.monotonic()
        events = [e for e in replay.events if e.evidence.commit == commit]
        wanted_atoms = {e.atom_id for e in events if e.kind in TARGET_KINDS and not e.state.deferred}
        if not wanted_atoms:
            dropped.append(DroppedCommit(commit=commit, reason="no scenario added, changed or resumed"))
            continue
        relevant = sorted({e.atom_id for e in events})
        evidence = sorted({e.evidence.commit for e in replay.events
                           if e.atom_id in relevant and position[e.evidence.commit] < at},
                          key=lambda sha: position[sha])
        before = {a.atom_id: a for a in gold_state(replay, parent).atoms}
        after = {a.atom_id: a for a in gold_state(replay, commit).atoms}
        safe = safe_id(target_id)
        with tempfile.TemporaryDirectory(prefix="req2test-takeover-") as tmp:
            post = Path(tmp) / "post"
            report = write_tree(repo, commit, post, exclude)
            missing.update(report.missing)
            write_tree(repo, parent, out / "trees" / safe, exclude)
            try:
                build_dataset(str(post), out / "datasets" / safe,
                              BuildOptions(mutants=False, workers=workers, name=name))
            except BuildError as exc:
                _drop(out, safe, dropped, commit, f"the commit does not build: {exc}")
                continue
        from bench.dataset import load_dataset

        dataset = load_dataset(out / "datasets" / safe)
        project = dataset.card.projects[0]
        by_atom = _instances_by_atom(dataset.instances)
        scenario_ids = sorted({i for atom in wanted_atoms for i in by_atom.get(_atom_key(after[atom]), [])})
        live_before = {_atom_key(a) for a in before.values() if not a.deferred and a.atom_id not in relevant}
        regression = sorted({i for key, ids in by_atom.items() if key in live_before for i in ids})
        if not scenario_ids:
            _drop(out, safe, dropped, commit, "none of its scenarios passes at the commit (the builder validated none)")
            continue
        passing = _passing_on_parent(dataset, out / "trees" / safe, project.production, name, workers)
        commit_ids = set(scenario_ids)
        # every scenario of the commit's suite that fails on the parent's code is what the commit delivers
        # (the request's own, and any other its change makes pass); the rest must keep passing
        failing = sorted(i.id for i in dataset.instances if i.id not in passing)
        also_fixed = sorted(i for i in failing if i not in commit_ids)
        if not any(i in commit_ids for i in failing):
            _drop(out, safe, dropped, commit,
                  f"all {len(scenario_ids)} of its scenarios already pass on the parent's production")
            continue
        regression = sorted(i for i in regression if i in passing)
        still_passing = sorted(i for i in scenario_ids if i in passing)
        gold = TakeoverGold(id=target_id, target_scenarios=failing,
                            regression_scenarios=sorted(regression + still_passing), passing_on_parent=still_passing,
                            also_fixed=also_fixed, relevant_atoms=relevant, evidence_commits=evidence,
                            affected={e.atom_id: e.kind for e in events})
        (out / "gold").mkdir(exist_ok=True)
        (out / "gold" / f"{safe}.json").write_text(gold.model_dump_json(indent=2) + "\n", encoding="utf-8")
        ref = replay.commits[at]
        targets.append(TakeoverTarget(
            id=target_id, project=project.name, commit=commit, parent=parent, date=ref.date,
            request=_message(repo, commit), history_end=at, relevant_commits=evidence,
            oracle_pre_state=[before[a] for a in relevant if a in before],
            oracle_post_state=[after[a] for a in relevant if a in after],
            workspace=f"trees/{safe}", dataset=f"datasets/{safe}", features_dir=project.features_dir,
            production=list(project.production)))
        seconds[target_id] = round(time.monotonic() - tick, 1)
    (out / "targets.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in targets), encoding="utf-8")
    seconds["total"] = round(time.monotonic() - started, 1)
    card = TakeoverCard(name=name, repo=str(repo), features_dir=features_dir, commits=len(replay.commits),
                        targets=[t.id for t in targets], dropped=dropped, missing_blobs=sorted(missing),
                        seconds=seconds)
    (out / "takeover.json").write_text(card.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return card


def _drop(out: Path, safe: str, dropped: list[DroppedCommit], commit: str, reason: str) -> None:
    """A commit that cannot be a target: say why, and leave none of its files behind."""
    dropped.append(DroppedCommit(commit=commit, reason=reason))
    shutil.rmtree(out / "trees" / safe, ignore_errors=True)
    shutil.rmtree(out / "datasets" / safe, ignore_errors=True)


def _passing_on_parent(dataset: Any, parent_tree: Path, production: list[str], name: str,
                       workers: int) -> set[str]:
    """Which of the commit's scenarios pass with the commit's steps on the parent's production: the
    builder's own validation (three isolated runs each) of the commit's tree with the parent's
    production sources in place. The parent's code is the developers', so the builder may run it."""
    from bench.builder.pipeline import BuildError, BuildOptions, build_dataset
    from bench.dataset import load_dataset
    from bench.suite.reverse import implemented_snapshot, production_sources

    snapshot = dataset.root / dataset.card.projects[0].snapshot
    parent = {p: (parent_tree / p).read_text(encoding="utf-8", errors="surrogateescape")
              for p in production_sources(parent_tree, production)}
    with tempfile.TemporaryDirectory(prefix="req2test-parent-") as tmp:
        hybrid = implemented_snapshot(snapshot, Path(tmp) / "tree", production, parent)
        try:
            build_dataset(str(hybrid), Path(tmp) / "dataset", BuildOptions(mutants=False, workers=workers, name=name))
        except BuildError:
            return set()  # nothing passes (the builder refuses a project with no passing scenario)
        return {i.id for i in load_dataset(Path(tmp) / "dataset").instances}


def _atom_key(state: AtomState) -> tuple[str, str]:
    # a second scenario of the same name is "name #2" in the replay; the builder keeps the name
    return state.feature_file, state.scenario.split(" #", 1)[0]


def _instances_by_atom(instances: Iterable[Any]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for inst in instances:
        out.setdefault((inst.requirement.feature_file, inst.requirement.scenario_name), []).append(inst.id)
    return out


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        raise TakeoverError(f"git {args[0]}: {proc.stderr.strip()[:200]}")
    return proc.stdout


def _message(repo: Path, commit: str) -> str:
    return _git(repo, "log", "-1", "--format=%B", commit).strip()


def _history_entries(repo: Path, replay: Replay, features_dir: str) -> list[HistoryEntry]:
    """Every first-parent commit: its message, its atom events and (when it has events) its
    feature-file diff, the requirement evidence a takeover agent reads."""
    events: dict[str, list[str]] = {}
    changelog: dict[str, list[str]] = {}
    for event in replay.events:
        events.setdefault(event.evidence.commit, []).append(f"{event.kind} {event.atom_id}")
        changelog.setdefault(event.evidence.commit, list(event.evidence.changelog_lines))
    bodies = _bodies(repo, replay.end)
    out = []
    for index, ref in enumerate(replay.commits):
        diff = ""
        if ref.sha in events and index > 0:
            diff = _git(repo, "diff", "--no-color", "-M", replay.commits[index - 1].sha, ref.sha, "--",
                        features_dir)
            if len(diff) > DIFF_LIMIT:
                diff = diff[:DIFF_LIMIT] + f"\n[... {len(diff) - DIFF_LIMIT} characters of this diff omitted ...]\n"
        out.append(HistoryEntry(index=index, sha=ref.sha, date=ref.date, subject=ref.subject,
                                body=bodies.get(ref.sha, ""), events=events.get(ref.sha, []), feature_diff=diff,
                                changelog_lines=changelog.get(ref.sha, [])))
    return out


def _bodies(repo: Path, end: str) -> dict[str, str]:
    raw = _git(repo, "log", "--first-parent", "--format=%H%x00%b%x1e", end)
    out = {}
    for record in raw.split("\x1e"):
        sha, _, body = record.strip("\n").partition("\x00")
        if sha:
            out[sha.strip()] = body.strip()
    return out

