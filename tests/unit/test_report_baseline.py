"""Issue 30, item 4: the report's paired tests compare every arm against the experiment's baseline arm (its
first arm unless it says ``baseline: ARM``; ``req2test report --baseline ARM`` overrides), never against
whichever configuration sorts first; and every pick among candidates against the arm's single candidate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from bench.report import build_report, render_html, render_markdown
from bench.runlog import read_run
from bench.runs import ConfigRecord, RunsError, load_runs
from harness.experiment.config import ExperimentError, load_experiment
from tests.unit.run_dirs import arm_record, claim, evaluate_run, experiment_run, write_config

DEMO = Path(__file__).resolve().parents[2] / "src/harness/resources/examples/demo/ab.yaml"


def _pairs(run: Path, baseline: str | None = None) -> list[tuple[str, str]]:
    report = build_report(read_run(run).configs, "t", resamples=100, baseline=baseline)
    return [(r.a, r.b) for r in report.paired]


def test_the_first_arm_is_the_baseline_even_when_it_sorts_last(tmp_path: Path) -> None:
    run = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong", "mid": "half"})
    assert json.loads((run / "plan.json").read_text())["arms"] == ["zeta", "alpha", "mid"]
    report = build_report(read_run(run).configs, "t", resamples=100)
    assert [(r.a, r.b) for r in report.paired] == [("zeta@th", "alpha@th"), ("zeta@th", "mid@th")]
    assert report.baselines == ["baseline: zeta@th — the experiment's first arm"]
    strong = report.paired[0]
    assert (strong.kc_b_over_a, strong.kc_a_over_b) == (12, 0) and strong.kc_p == pytest.approx(0.5 ** 12)
    assert "baseline: zeta@th — the experiment's first arm" in render_markdown(report)
    assert "baseline: zeta@th" in render_html(report)
    assert not any("Paired tests compare" in note for note in report.notes)  # no fallback to explain
    # the configurations themselves come in the experiment's order too
    assert [c.name for c in report.configs] == ["zeta@th", "alpha@th", "mid@th"]


def test_the_experiment_names_its_baseline(tmp_path: Path) -> None:
    run = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong", "mid": "half"}, baseline="mid")
    report = build_report(read_run(run).configs, "t", resamples=100)
    assert [(r.a, r.b) for r in report.paired] == [("mid@th", "zeta@th"), ("mid@th", "alpha@th")]
    assert report.baselines == ["baseline: mid@th — the experiment's `baseline:`"]


def test_the_baseline_option_overrides(tmp_path: Path) -> None:
    run = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong", "mid": "half"}, baseline="mid")
    assert _pairs(run, baseline="alpha") == [("alpha@th", "zeta@th"), ("alpha@th", "mid@th")]
    with pytest.raises(RunsError, match=r"^baseline 'nope' is not an arm of the report; arms: zeta, alpha, mid$"):
        _pairs(run, baseline="nope")

    app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode="markdown")
    from harness.cli_report import report_command

    app.command("report")(report_command)
    app.command("other")(lambda: None)  # two commands: `report` stays a subcommand
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(app, ["report", str(run), "-o", str(out), "--resamples", "100", "--baseline", "alpha"])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "baseline: alpha@th — chosen for this report (--baseline)" in md
    assert "| alpha@th | zeta@th | 12 |" in md and "| alpha@th | mid@th | 12 |" in md
    result = runner.invoke(app, ["report", str(run), "-o", str(out), "--baseline", "nope"])
    assert result.exit_code == 2
    assert "baseline 'nope' is not an arm of the report; arms: zeta, alpha, mid" in result.output
    assert "Traceback" not in result.output
    assert "--baseline" in runner.invoke(app, ["report", "--help"]).output


def test_an_unknown_baseline_in_the_experiment_is_one_located_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("dataset: d\narms:\n  - {name: plain, agent: none}\n  - {name: grounded, agent: none}\n"
                    "baseline: grounde\n", encoding="utf-8")
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    assert str(info.value) == f"{path}:5: baseline: no arm named 'grounde' (arms: plain, grounded)"
    path.write_text(path.read_text().replace("grounde\n", "grounded\n"), encoding="utf-8")
    experiment, _ = load_experiment(path)
    assert experiment.baseline == "grounded"


def test_a_rerun_may_change_the_baseline_and_the_report_reads_the_new_one(tmp_path: Path) -> None:
    run = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong"})
    claim(run, [{"name": "zeta", "agent": "none"}, {"name": "alpha", "agent": "none"}], baseline="alpha")
    assert json.loads((run / "plan.json").read_text())["baseline"] == "alpha"
    assert _pairs(run) == [("alpha@th", "zeta@th")]


def test_directories_without_an_arm_order_fall_back_with_a_note(tmp_path: Path) -> None:
    # a run without plan.json: the first configuration by name, as before, and the report says why
    run = experiment_run(tmp_path / "run", {"zeta": "weak", "alpha": "strong"})
    (run / "plan.json").unlink()
    report = build_report(read_run(run).configs, "t", resamples=100)
    assert [(r.a, r.b) for r in report.paired] == [("alpha@th", "zeta@th")]
    assert report.baselines[0].startswith("baseline: alpha@th — the first configuration (by name")
    assert any(note.startswith("Paired tests compare against alpha@th:") and "no plan.json" in note
               for note in report.notes)
    # several evaluate outputs passed by hand: the first given, and --baseline still chooses
    later, earlier = evaluate_run(tmp_path / "zz", "weak"), evaluate_run(tmp_path / "aa", "strong")
    configs = load_runs([later, earlier])
    report = build_report(configs, "t", resamples=100)
    assert [(r.a, r.b) for r in report.paired] == [("zz:zz", "aa:aa")]
    assert "no plan.json" in report.baselines[0]
    report = build_report(configs, "t", resamples=100, baseline="aa")
    assert [(r.a, r.b) for r in report.paired] == [("aa:aa", "zz:zz")]


def test_the_demo_compares_plain_with_grounded_and_each_pick_with_single(tmp_path: Path) -> None:
    """The demo's arms as its experiment file lists them, its configurations as `req2test run` names them."""
    arms = yaml.safe_load(DEMO.read_text(encoding="utf-8"))["arms"]
    run = tmp_path / "ab"
    claim(run, [{"name": a["name"], "agent": "none", **({"n": a["n"], "selectors": ["static", "consensus"]}
                                                      if a.get("n") else {})} for a in arms])
    write_config(run, arm_record("plain"), "weak")
    write_config(run, arm_record("grounded"), "strong")
    best = {"n": 3, "strategies": {"selectors": ["static", "consensus"]}}
    write_config(run, arm_record("grounded-best-of-3", selector="static", **best), "strong")
    write_config(run, arm_record("grounded-best-of-3", selector="consensus", **best).model_copy(
        update={"name": "grounded-best-of-3@th/consensus", "role": "selector"}), "strong")
    write_config(run, ConfigRecord(name="grounded-best-of-3@th/single", arm="grounded-best-of-3", view="th",
                                   role="single", agent="none"), "half")
    report = build_report(read_run(run).configs, "demo", resamples=100)
    assert [(r.a, r.b) for r in report.paired] == [
        ("plain@th", "grounded@th"), ("plain@th", "grounded-best-of-3@th"),
        ("grounded-best-of-3@th/single", "grounded-best-of-3@th"),  # the static pick: never compared before
        ("grounded-best-of-3@th/single", "grounded-best-of-3@th/consensus")]
    assert report.baselines == ["baseline: plain@th — the experiment's first arm"]
    ab = report.paired[0]
    assert (ab.kc_b_over_a, ab.kc_a_over_b) == (12, 0) and ab.kc_p < 0.001
    # copied elsewhere and read again, the directory still says the same
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    assert _pairs(copy)[0] == ("plain@th", "grounded@th")
