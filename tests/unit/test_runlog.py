"""Issue 30, item 7: bench.runlog, reading a run in code (``read_run``, ``read_runs``, ``read_results``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from bench.model import RunSummary
from bench.runlog import Run, arm_order, read_results, read_run, read_runs
from bench.runs import ConfigRecord, RunsError
from tests.unit.run_dirs import IDS, arm_record, claim, evaluate_run, experiment_run, write_config


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Path, dict[str, tuple[ConfigRecord, list]]]:
    """An experiment of two arms, the second with three candidates, its picks and a trajectory."""
    root = tmp_path / "ab"
    claim(root, [{"name": "zeta", "agent": "none"},
                 {"name": "best", "agent": "none", "n": 3, "selectors": ["static", "consensus"]}])
    written = {}
    for record, quality in [
            (arm_record("zeta"), "weak"),
            (arm_record("best", n=3, selector="static"), "strong"),
            (ConfigRecord(name="best@th/consensus", arm="best", view="th", role="selector", selector="consensus",
                          n=3, agent="none"), "half"),
            (ConfigRecord(name="best@th/single", arm="best", view="th", role="single", agent="none"), "half")]:
        written[record.name] = (record, write_config(root, record, quality))
    trajectories = root / "generations/zeta@th/c1/trajectories" / "p_features_f0.feature_10"
    trajectories.mkdir(parents=True)
    (trajectories / "attempt.jsonl").write_text('{"type": "message", "role": "user", "content": "hi"}\n')
    return root, written


def test_read_run_round_trips_a_run_directory(run: tuple[Path, dict]) -> None:
    root, written = run
    loaded = read_run(root)
    assert (loaded.name, loaded.layout, loaded.path) == ("ab", "experiment", str(root))
    assert (loaded.arms, loaded.baseline, loaded.baseline_reason) == (["zeta", "best"], "zeta",
                                                                      "the experiment's first arm")
    # arm order first (zeta sorts after best), by name within an arm
    assert [c.name for c in loaded.configs] == ["zeta@th", "best@th", "best@th/consensus", "best@th/single"]
    for config in loaded.configs:
        record, results = written[config.name]
        assert config.record == record
        assert config.results == results
        summary = json.loads((Path(config.directory) / "summary.json").read_text())
        assert config.summary == RunSummary.model_validate(summary)
        assert set(config.predictions) == set(IDS)
    assert [c.name for c in loaded.arm("best")] == ["best@th", "best@th/consensus", "best@th/single"]
    assert loaded.results("best@th/single")[IDS[0]].kill_complete
    assert loaded.config("best@th~single").name == "best@th/single"  # the directory's spelling names it too
    detail = loaded.detail("zeta@th", IDS[0])
    assert detail.result == written["zeta@th"][1][0] and detail.prediction is not None and detail.candidate == 1
    assert detail.trajectory == str(root / "generations/zeta@th/c1/trajectories/p_features_f0.feature_10"
                                    / "attempt.jsonl")
    assert loaded.detail("zeta@th", IDS[1]).trajectory is None
    # a Run is data: it survives JSON
    assert Run.model_validate_json(loaded.model_dump_json()) == loaded


def test_one_line_errors(run: tuple[Path, dict], tmp_path: Path) -> None:
    loaded = read_run(run[0])
    with pytest.raises(RunsError, match=r"no configuration 'nope'; available: zeta@th, best@th"):
        loaded.config("nope")
    with pytest.raises(RunsError, match=r"no arm 'nope'; arms: zeta, best$"):
        loaded.arm("nope")
    with pytest.raises(RunsError, match=r"no result for instance 'x'"):
        loaded.detail("zeta@th", "x")
    with pytest.raises(RunsError, match="no such run directory"):
        read_run(tmp_path / "missing")
    with pytest.raises(RunsError, match="no such results file"):
        read_results(tmp_path / "missing.jsonl")


def test_read_results_of_a_file_or_its_directory(run: tuple[Path, dict]) -> None:
    root, written = run
    directory = root / "configs" / "best@th~single"
    (directory / "results.jsonl").write_text((directory / "results.jsonl").read_text() + '{"instance_id": "to',
                                             encoding="utf-8")  # a killed evaluation's torn last line
    assert read_results(directory) == read_results(directory / "results.jsonl") == written["best@th/single"][1]


def test_an_evaluate_directory_and_several_runs(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    plain = read_run(evaluate_run(tmp_path / "mini", "half", dataset))
    assert (plain.layout, plain.arms, plain.baseline, plain.dataset) == ("evaluate", ["mini"], "mini", str(dataset))
    assert "no plan.json" in plain.baseline_reason
    assert plain.configs[0].summary is not None and plain.configs[0].summary.n == len(IDS)
    first, second = read_runs([experiment_run(tmp_path / "exp", {"b": "weak", "a": "strong"}), tmp_path / "mini"])
    assert [c.name for c in first.configs] == ["exp:b@th", "exp:a@th"] and first.arms == ["b", "a"]
    assert first.config("a@th").name == first.config("exp:a@th").name == "exp:a@th"
    assert [c.name for c in second.configs] == ["mini:mini"]


def test_older_plans_list_their_arms_in_the_experiment_only(tmp_path: Path) -> None:
    root = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong"})
    plan = json.loads((root / "plan.json").read_text())
    del plan["arms"], plan["baseline"], plan["experiment"]["baseline"]
    (root / "plan.json").write_text(json.dumps(plan))
    order = arm_order(root)
    assert order is not None and (order.arms, order.baseline) == (["zeta", "alpha"], "zeta")
    (root / "plan.json").write_text("not json")
    assert arm_order(root) is None and read_run(root).baseline == "alpha"  # read as a directory without one


def test_the_documented_example_runs(run: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    """The snippet of docs/experiments.md#reading-results-in-code, on a run directory."""
    docs = (Path(__file__).resolve().parents[2] / "docs/experiments.md").read_text(encoding="utf-8")
    snippet = docs.split("### Reading results in code", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(textwrap.dedent(snippet).replace("runs/ab", str(run[0])), "docs", "exec"), {})  # noqa: S102
    printed = capsys.readouterr().out
    assert "baseline: zeta (the experiment's first arm)" in printed
    assert "zeta@th  KillComplete@1 0.0%" in printed and "best@th  KillComplete@1 100.0%" in printed
