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


def test_a_kill_that_is_not_repeated_is_unstable_and_out_of_the_kills() -> None:
    from bench.builder.schemata_stage import UNSTABLE, confirmed_kills, gold_updates

    verdicts = {"m1": "killed", "m2": "killed", "m3": "survived", "m4": "timeout"}
    rerun_asked: list[list[str]] = []

    def rerun(ids: list[str]) -> dict[str, str]:
        rerun_asked.append(ids)
        return {"m1": "killed", "m2": "survived"}

    verdicts.update(confirmed_kills(verdicts, rerun))
    assert rerun_asked == [["m1", "m2"]]  # only the kills run again
    assert verdicts == {"m1": "killed", "m2": UNSTABLE, "m3": "survived", "m4": "timeout"}
    inst = SimpleNamespace(id="a", view=SimpleNamespace(target_hidden=[]))
    record = GoldTest.model_construct(instance_id="a")
    from bench.builder.schemata_stage import InstanceRuns

    updated = gold_updates([inst], {"a": record}, {"a": []},  # type: ignore[list-item]
                           {"a": InstanceRuns(clean_passed=True, verdicts=verdicts, stripped=set())}, {})
    assert updated["a"].kills == ["m1"]
    assert updated["a"].excluded_mutants == {"m2": UNSTABLE, "m4": "timeout"}


def test_no_kill_no_rerun() -> None:
    from bench.builder.schemata_stage import confirmed_kills

    assert confirmed_kills({"m3": "survived"}, lambda ids: (_ for _ in ()).throw(AssertionError(ids))) == {}


def test_the_stage_rule_is_part_of_the_key(tmp_path: Path) -> None:
    record, coverage = _record("a"), {7: None}
    plain = RunsCheckpoint(tmp_path, "sha").key(record, [], coverage)
    assert RunsCheckpoint(tmp_path, "sha", "kills confirmed").key(record, [], coverage) != plain
    assert RunsCheckpoint(tmp_path, "sha", "").key(record, [], coverage) == plain  # older checkpoints still match


def test_each_round_reruns_only_the_kills_still_standing() -> None:
    from bench.builder.schemata_stage import UNSTABLE, confirmed_kills

    outcomes = {"m1": ["killed", "killed", "killed"], "m2": ["killed", "survived", "killed"],
                "m3": ["timeout", "killed", "killed"]}
    asked: list[list[str]] = []

    def rerun(ids: list[str]) -> dict[str, str]:
        asked.append(ids)
        return {m: outcomes[m][len(asked) - 1] for m in ids}

    verdicts = {"m1": "killed", "m2": "killed", "m3": "killed", "m4": "survived"}
    assert confirmed_kills(verdicts, rerun, rounds=3) == {"m2": UNSTABLE, "m3": UNSTABLE}
    assert asked == [["m1", "m2", "m3"], ["m1", "m2"], ["m1"]]  # a pair leaves at its first miss


def test_a_mutant_unstable_in_one_scenario_is_no_kill_in_any() -> None:
    from bench.builder.schemata_stage import RACY, UNSTABLE, InstanceRuns, gold_updates

    def inst(name: str) -> SimpleNamespace:
        return SimpleNamespace(id=name, view=SimpleNamespace(target_hidden=[]))

    instances = [inst("a"), inst("b"), inst("c")]
    gold = {i.id: GoldTest.model_construct(instance_id=i.id) for i in instances}
    results = {
        "a": InstanceRuns(clean_passed=True, verdicts={"racy": UNSTABLE, "m1": "killed"}, stripped=set()),
        "b": InstanceRuns(clean_passed=True, verdicts={"racy": "killed", "m1": "killed"}, stripped={"racy"}),
        "c": InstanceRuns(clean_passed=True, verdicts={"racy": "survived", "m2": "killed"}, stripped=set()),
    }
    updated = gold_updates(instances, gold, {i.id: [] for i in instances}, results, {})  # type: ignore[arg-type]
    assert updated["a"].kills == ["m1"] and updated["a"].excluded_mutants == {"racy": UNSTABLE}
    assert updated["b"].kills == ["m1"] and updated["b"].excluded_mutants == {"racy": RACY}
    assert updated["b"].assertion_dependent == ["m1"]  # the racy kill is in no subset either
    assert updated["c"].kills == ["m2"] and updated["c"].excluded_mutants == {}


def test_a_judge_runs_a_kill_its_trace_did_not_reach_on_every_row() -> None:
    from bench.builder.schemata_stage import rows_to_run
    from bench.model import Mutant

    mutant = Mutant.model_construct(id="m", file="a.go", line=9, lines=[9])
    coverage = {3: {"a.go": {1, 2}}, 7: {"a.go": {9}}, 11: {"b.go": {9}}}
    assert rows_to_run(coverage, mutant) == [7]  # the row whose trace reached it
    assert rows_to_run({3: {"a.go": {1}}, 7: {}}, mutant) is None  # none did: every row, not a survivor
