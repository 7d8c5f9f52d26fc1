"""Requirement atoms replayed over a small synthetic git history, expectations derived by hand."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bench.history.atoms import (
    AtomExamples,
    AtomState,
    AtomStep,
    Replay,
    gold_state,
    is_changelog,
    replay_history,
)

LOGIN_V1 = """\
Feature: Login

  Scenario: Good password
    Given a user "ann"
    When she logs in with "secret"
    Then she sees her dashboard

  Scenario Outline: Bad password
    Given a user "<name>"
    When she logs in with "wrong"
    Then she sees "<message>"

    Examples:
      | name | message |
      | ann  | denied  |
"""
LOGIN_V2 = LOGIN_V1.replace("Then she sees her dashboard", "Then she is asked for a code")
LOGIN_V3 = LOGIN_V2 + "      | bob  | denied  |\n"
LOGIN_V4 = LOGIN_V3.replace("  Scenario Outline: Bad password", "  @wip\n  Scenario Outline: Bad password")
LOGIN_V5 = LOGIN_V3
LOGIN_V7 = LOGIN_V3.split("  Scenario Outline:")[0].rstrip() + "\n"
LOGIN_BROKEN = LOGIN_V7 + "\n  Scenario: Half written\n    Given a table\n      | a | b |\n      | 1 |\n"
LOGIN_V9 = LOGIN_V7.replace("  Scenario: Good password", "  @smoke\n  Scenario: Good password")
LOGOUT = "Feature: Logout\n\n  Scenario: Log out\n    When she logs out\n    Then she sees the login page\n"

OLD, NEW = "features/login.feature", "features/auth/login.feature"
GOOD, BAD, LOG_OUT = f"{OLD}::Good password", f"{OLD}::Bad password", "features/auth/logout.feature::Log out"

# (subject, {path: content or None to delete}, paths to rename)
HISTORY: list[tuple[str, dict[str, str | None], dict[str, str]]] = [
    ("Add login feature", {OLD: LOGIN_V1, "CHANGELOG.md": "# Changelog\n", "README.md": "demo\n"}, {}),
    ("Require two-factor", {OLD: LOGIN_V2, "CHANGELOG.md": "# Changelog\n\n- Login asks for a second factor\n"}, {}),
    ("Cover a second user", {OLD: LOGIN_V3}, {}),
    ("Park bad password", {OLD: LOGIN_V4}, {}),
    ("Resume bad password", {OLD: LOGIN_V5}, {}),
    ("Document the demo", {"README.md": "demo, documented\n"}, {}),
    ("Move login under auth", {}, {OLD: NEW}),
    ("Drop bad password", {NEW: LOGIN_V7}, {}),
    ("Start logout, half-edit login", {NEW: LOGIN_BROKEN, "features/auth/logout.feature": LOGOUT}, {}),
    ("Fix login feature", {NEW: LOGIN_V9}, {}),
]


def _git(repo: Path, *args: str, day: int = 1) -> str:
    stamp = f"2024-01-{day:02d}T12:00:00+00:00"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.org", "GIT_AUTHOR_DATE": stamp,
           "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.org", "GIT_COMMITTER_DATE": stamp}
    return subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _write(repo: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        if text is None:
            (repo / rel).unlink()
        else:
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = tmp_path_factory.mktemp("history")
    _git(repo, "init", "-q")
    shas = []
    for day, (subject, files, renames) in enumerate(HISTORY, start=1):
        for old, new in renames.items():
            (repo / new).parent.mkdir(parents=True, exist_ok=True)
            _git(repo, "mv", old, new)
        _write(repo, files)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject, day=day)
        shas.append(_git(repo, "rev-parse", "HEAD").strip())
    return repo, shas


@pytest.fixture(scope="module")
def replay(history: tuple[Path, list[str]]) -> Replay:
    return replay_history(history[0], "features")


def test_event_list(replay: Replay, history: tuple[Path, list[str]]) -> None:
    _, shas = history
    got = [(e.evidence.subject, e.kind, e.atom_id, e.changed, e.previous_feature_file) for e in replay.events]
    assert got == [
        ("Add login feature", "added", GOOD, [], None),
        ("Add login feature", "added", BAD, [], None),
        ("Require two-factor", "changed", GOOD, ["steps"], None),
        ("Cover a second user", "changed", BAD, ["examples"], None),
        ("Park bad password", "deferred", BAD, [], None),
        ("Resume bad password", "resumed", BAD, [], None),
        # the rename keeps both identities; nothing else changed
        ("Move login under auth", "changed", GOOD, ["feature_file"], OLD),
        ("Move login under auth", "changed", BAD, ["feature_file"], OLD),
        ("Drop bad password", "removed", BAD, [], None),
        # login.feature does not parse here: its atoms stay, logout's atom is still added
        ("Start logout, half-edit login", "added", LOG_OUT, [], None),
        ("Fix login feature", "changed", GOOD, ["tags"], None),
    ]
    assert [e.evidence.commit for e in replay.events] == [shas[i] for i in (0, 0, 1, 2, 3, 4, 6, 6, 7, 8, 9)]
    assert replay.events[2].evidence.date == "2024-01-02T12:00:00+00:00"
    assert replay.atom_ids == [LOG_OUT, BAD, GOOD]
    assert [c.sha for c in replay.commits] == shas and replay.end == shas[-1]


def test_changelog_evidence(replay: Replay) -> None:
    by_subject = {e.evidence.subject: e.evidence for e in replay.events}
    # only the lines each commit added, blank lines left out
    assert by_subject["Add login feature"].changelog_lines == ["# Changelog"]
    assert by_subject["Require two-factor"].changelog_files == ["CHANGELOG.md"]
    assert by_subject["Require two-factor"].changelog_lines == ["- Login asks for a second factor"]
    assert by_subject["Cover a second user"].changelog_lines == []
    assert by_subject["Cover a second user"].changelog_files == []


def test_event_states(replay: Replay) -> None:
    deferred, resumed = replay.events[4], replay.events[5]
    assert deferred.state.deferred is True and deferred.state.tags == ["@wip"]
    assert resumed.state.deferred is False and resumed.state.tags == []
    removed = replay.events[8]
    # a removed atom keeps its last attributes (two example rows, already at the new path)
    assert removed.state.feature_file == NEW
    assert removed.state.examples[0].rows == [["ann", "denied"], ["bob", "denied"]]


def test_parse_failure_recorded_until_fixed(replay: Replay, history: tuple[Path, list[str]]) -> None:
    _, shas = history
    [failure] = replay.parse_failures
    assert (failure.commit, failure.path, failure.until) == (shas[8], NEW, shas[9])
    assert failure.detail.startswith("unparsable: ")


def test_gold_state_before_the_rename(replay: Replay, history: tuple[Path, list[str]]) -> None:
    _, shas = history
    state = gold_state(replay, shas[5][:10])  # the docs-only commit: the state of "Resume bad password"
    assert state.commit == shas[5] and state.unparsable == []
    assert state.atoms == [
        AtomState(atom_id=BAD, feature_file=OLD, scenario="Bad password",
                  steps=[AtomStep(type="given", text='a user "<name>"'),
                         AtomStep(type="when", text='she logs in with "wrong"'),
                         AtomStep(type="then", text='she sees "<message>"')],
                  examples=[AtomExamples(name="", header=["name", "message"],
                                         rows=[["ann", "denied"], ["bob", "denied"]])]),
        AtomState(atom_id=GOOD, feature_file=OLD, scenario="Good password",
                  steps=[AtomStep(type="given", text='a user "ann"'),
                         AtomStep(type="when", text='she logs in with "secret"'),
                         AtomStep(type="then", text="she is asked for a code")]),
    ]


def test_gold_state_with_an_unparsable_file(replay: Replay, history: tuple[Path, list[str]]) -> None:
    _, shas = history
    state = gold_state(replay, shas[8])
    assert state.unparsable == [NEW]
    assert [(a.atom_id, a.feature_file, a.deferred) for a in state.atoms] == [
        (GOOD, NEW, False), (LOG_OUT, "features/auth/logout.feature", False)]
    assert [s.text for s in state.atoms[0].steps][-1] == "she is asked for a code"  # carried from before
    assert [s.text for s in state.atoms[1].steps] == ["she logs out", "she sees the login page"]
    final = gold_state(replay, shas[9])
    assert final.unparsable == [] and final.atoms[0].tags == ["@smoke"]


def test_configurable_deferral_tags_and_end(history: tuple[Path, list[str]]) -> None:
    repo, shas = history
    replay = replay_history(repo, "features", end=shas[9], deferral_tags=["smoke"])
    assert [(e.kind, e.atom_id, e.changed) for e in replay.events if e.evidence.commit == shas[9]] == [
        ("deferred", GOOD, [])]  # @smoke is now a deferral tag: no "tags" change
    # @wip is no longer one: parking the outline is a plain tag change
    assert [(e.kind, e.changed) for e in replay.events if e.evidence.commit == shas[3]] == [("changed", ["tags"])]
    early = replay_history(repo, "features", end=shas[2])
    assert len(early.commits) == 3 and [e.kind for e in early.events] == ["added", "added", "changed", "changed"]
    with pytest.raises(ValueError, match="not on the replayed"):
        gold_state(early, shas[5])


def test_merge_is_one_first_parent_step(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _write(tmp_path, {"features/a.feature": LOGOUT})
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "Base")
    _git(tmp_path, "checkout", "-q", "-b", "topic")
    for day, step in [(2, "she sees the start page"), (3, "she sees the home page")]:
        _write(tmp_path, {"features/a.feature": LOGOUT.replace("she sees the login page", step)})
        _git(tmp_path, "commit", "-q", "-am", f"Topic {day}", day=day)
    _git(tmp_path, "checkout", "-q", "main")
    _git(tmp_path, "merge", "-q", "--no-ff", "-m", "Merge topic", "topic", day=4)
    replay = replay_history(tmp_path, "features")
    assert [c.subject for c in replay.commits] == ["Base", "Merge topic"]
    assert [(e.evidence.subject, e.kind, e.changed) for e in replay.events] == [
        ("Base", "added", []), ("Merge topic", "changed", ["steps"])]
    assert replay.events[-1].state.steps[-1].text == "she sees the home page"


def test_changelog_names() -> None:
    names = ["CHANGELOG.md", "docs/CHANGES.rst", "HISTORY", "news.txt", "changelog-v2.md",
             "history.py", "newsletter.md", "CHANGELOG.py"]
    assert [n for n in names if is_changelog(n)] == ["CHANGELOG.md", "docs/CHANGES.rst", "HISTORY", "news.txt",
                                                    "changelog-v2.md"]


def test_the_history_command_prints_counts_and_the_live_atoms(history: tuple[Path, list[str]],
                                                               tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from harness.cli import app

    repo, shas = history
    out = tmp_path / "replay.json"
    result = CliRunner().invoke(app, ["history", str(repo), "--at", shas[5], "-o", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    flat = "".join(result.output.split())  # rich folds long lines at the console's own width
    assert "10commits" in flat and "liveat" + shas[5][:12] in flat
    assert "".join(GOOD.split()) in flat
    assert len(json.loads(out.read_text())["events"]) == 11
    bad = CliRunner().invoke(app, ["history", str(repo), "--at", "no-such-tag"])
    assert bad.exit_code == 2 and "not a commit" in bad.output and "Traceback" not in bad.output
