"""The isolation and validation runs a build keeps for its resume (``bench.builder.run_memo``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench import stopping
from bench.builder.run_memo import RunMemo, sites_digest


@dataclass(frozen=True)
class _Run:
    line: int
    passed: bool


def test_a_finished_run_is_replayed_by_the_next_build(tmp_path: Path) -> None:
    made: list[int] = []

    def make(line: int) -> _Run:
        made.append(line)
        return _Run(line, passed=line % 2 == 0)

    first = RunMemo(tmp_path / "memo", "sha", 120.0)
    runs = [first.run(lambda: make(line), "isolation", "i1", line, 0) for line in (3, 4)]  # noqa: B023
    again = RunMemo(tmp_path / "memo", "sha", 120.0)
    advanced: list[int] = []
    replayed = [again.run(lambda: make(line), "isolation", "i1", line, 0,  # noqa: B023
                          on_reuse=lambda: advanced.append(1)) for line in (3, 4)]
    assert made == [3, 4] and replayed == runs and again.reused == 2 and len(advanced) == 2


def test_another_project_repetition_or_timeout_is_run_anew(tmp_path: Path) -> None:
    RunMemo(tmp_path / "m", "sha", 120.0).put(_Run(3, True), "isolation", "i1", 3, 0)
    assert RunMemo(tmp_path / "m", "sha", 120.0).get("isolation", "i1", 3, 0) == _Run(3, True)
    assert RunMemo(tmp_path / "m", "other", 120.0).get("isolation", "i1", 3, 0) is None
    assert RunMemo(tmp_path / "m", "sha", 60.0).get("isolation", "i1", 3, 0) is None
    assert RunMemo(tmp_path / "m", "sha", 120.0).get("isolation", "i1", 3, 1) is None


def test_a_cut_file_is_run_again_and_no_directory_keeps_nothing(tmp_path: Path) -> None:
    memo = RunMemo(tmp_path / "m", "sha", 120.0)
    memo.put(_Run(3, True), "isolation", "i1", 3, 0)
    (stored,) = (tmp_path / "m").glob("*.pickle")
    stored.write_bytes(stored.read_bytes()[:5])  # killed mid-write before os.replace existed
    assert memo.get("isolation", "i1", 3, 0) is None
    nowhere = RunMemo(None, "sha", 120.0)
    nowhere.put(_Run(3, True), "isolation", "i1", 3, 0)
    assert nowhere.get("isolation", "i1", 3, 0) is None and not nowhere.has("isolation", "i1", 3, 0)


def test_a_run_made_during_an_interrupt_is_not_kept(tmp_path: Path) -> None:
    """An interrupt kills the processes in flight: the outcome is the kill's, and keeping it would
    give the resumed build a failing scenario that passes."""
    memo = RunMemo(tmp_path / "m", "sha", 120.0)
    stopping.begin_run()
    try:
        stopping._requested.set()
        memo.run(lambda: _Run(3, False), "isolation", "i1", 3, 0)
    finally:
        stopping.begin_run()
    assert memo.saved == 0 and not list((tmp_path / "m").glob("*"))


def test_a_workspace_is_named_by_its_sites_in_any_order() -> None:
    assert sites_digest({("a.go", 3), ("b.go", 9)}) == sites_digest([("b.go", 9), ("a.go", 3)])
    assert sites_digest({("a.go", 3)}) != sites_digest({("a.go", 4)})


def test_a_workspace_is_replayed_only_when_every_run_is_kept(tmp_path: Path) -> None:
    from types import SimpleNamespace

    memo = RunMemo(tmp_path / "m", "sha", 120.0)
    cands = [SimpleNamespace(instance_id="a", requirement=SimpleNamespace(run_lines=[5])),
             SimpleNamespace(instance_id="b", requirement=SimpleNamespace(run_lines=[9, 10]))]
    keys = memo.workspace_keys(("positive", "sites"), cands, 2)
    assert len(keys) == (1 + 2) * 2
    recorded: list[tuple[str, list[int]]] = []
    advanced: list[int] = []

    def record(cand: SimpleNamespace, rows: list[_Run]) -> None:
        recorded.append((cand.instance_id, [r.line for r in rows]))

    for (_, _, line), key in list(keys.items())[:-1]:
        memo.put(_Run(line, True), *key)
    assert not memo.replay_workspace(keys, cands, 2, record, advanced.append) and not recorded
    (_, _, line), key = list(keys.items())[-1]
    memo.put(_Run(line, True), *key)
    assert memo.replay_workspace(keys, cands, 2, record, advanced.append)
    assert recorded == [("a", [5]), ("a", [5]), ("b", [9, 10]), ("b", [9, 10])] and sum(advanced) == 6
