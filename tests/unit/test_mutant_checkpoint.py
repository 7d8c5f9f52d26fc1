"""The mutant stage's checkpoint (``bench.builder.schemata_stage.RunsCheckpoint``): what an
interrupted or killed build keeps, and what it must not keep."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import stopping
from bench.builder.schemata_stage import InstanceRuns, RunsCheckpoint
from bench.model import GoldTest
from bench.progress import NullProgress


def _record(instance_id: str) -> GoldTest:
    return GoldTest.model_construct(instance_id=instance_id, closure=[], step_definitions=[], bindings=[],
                                    covered_lines={"p.go": [3]}, data_files=[])


def test_a_judged_instance_is_kept_and_reused(tmp_path: Path) -> None:
    checkpoint = RunsCheckpoint(tmp_path / "cp", "sha")
    records, pools, coverage = {"a": _record("a")}, {"a": []}, {"a": {7: None}}
    calls: list[str] = []

    def judge(inst: SimpleNamespace) -> InstanceRuns:
        calls.append(inst.id)
        return InstanceRuns(clean_passed=True, verdicts={"m1": "killed"}, runs=2)

    judged = checkpoint.judged(judge, records, pools, coverage, NullProgress())
    first = judged(SimpleNamespace(id="a"))
    again = RunsCheckpoint(tmp_path / "cp", "sha").judged(judge, records, pools, coverage, NullProgress())(
        SimpleNamespace(id="a"))
    assert calls == ["a"] and again == first  # the second build judged nothing
    # another project (or changed coverage) is another key: judged anew
    RunsCheckpoint(tmp_path / "cp", "other").judged(judge, records, pools, coverage, NullProgress())(
        SimpleNamespace(id="a"))
    assert calls == ["a", "a"]


def test_an_instance_cut_short_by_an_interrupt_is_not_kept(tmp_path: Path) -> None:
    """An interrupt kills the runs in flight (``stopping.StoppablePool``): what the judge returns
    then is made of killed processes, and saving it would give the resumed build false kills."""
    checkpoint = RunsCheckpoint(tmp_path / "cp", "sha")

    def judge(inst: SimpleNamespace) -> InstanceRuns:
        stopping._requested.set()  # the interrupt arrives while this instance's runs are in flight
        return InstanceRuns(clean_passed=True, verdicts={"m1": "killed"}, runs=1)

    stopping.begin_run()
    try:
        with pytest.raises(KeyboardInterrupt):
            checkpoint.judged(judge, {"a": _record("a")}, {"a": []}, {"a": {7: None}}, NullProgress())(
                SimpleNamespace(id="a"))
    finally:
        stopping.begin_run()  # clears the mark for the tests after this one
    assert not list((tmp_path / "cp").glob("*.json"))
