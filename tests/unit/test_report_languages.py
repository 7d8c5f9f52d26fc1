"""`req2test report RUN...` across datasets: the same configuration scored on the Python, TypeScript, Go and
Java datasets of one requirement corpus gets a table per language on the requirements all of them have.

Four tiny datasets (dataset.json + instances.jsonl, the real models) and one `req2test evaluate`-style run
each (RUN/oracle/results.jsonl + run.json naming the dataset):

  S1-S4 in "ABI JSON" (abi.feature), S5-S6 in "TEAL sign" (teal.feature): in every dataset, at other paths.
  py  also has X (py only) that fails, and S7, which Go holds twice (ambiguous there: paired with nothing).
  java has S1-S6, and "Serialize" with 3 rows where the others have 2: another requirement.

  outcomes on S1-S6:  py, js: pass + KC everywhere   go: pass, KC on S1-S3   java: S1 pass + KC, S2-S6 assertion
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.model import DatasetCard, GenerationMetadata, InstanceResult, Outcome
from bench.report import build_report, render_html, render_markdown
from bench.runs import RunsError, load_runs
from tests.unit.test_families import instance, project, requirement

# (feature title, scenario name, rows or None)
SHARED = [("ABI JSON", "Serialize method", 2), ("ABI JSON", "Check selector", None),
          ("ABI JSON", "Get a method by name", 3), ("ABI JSON", "Txn count", None),
          ("TEAL sign", "Sign with mnemonic", None), ("TEAL sign", "Sign with key", None)]
LAYOUT = {  # language: (dataset name, runner, features dir)
    "py": ("py-algorand-sdk", "behave 1.2.6", "tests/features/unit"),
    "js": ("js-algorand-sdk", "cucumber-js 11.0.1", "tests/cucumber/features/unit"),
    "go": ("go-algorand-sdk", "godog 0.14.1", "test/features/unit"),
    "java": ("java-algorand-sdk", "cucumber-jvm 6.6.0", "src/test/resources/com/algorand/algosdk/unit"),
}
EXTRA = {"py": [("ABI JSON", "Only in Python", None), ("TEAL sign", "Twice in Go", None)],
         "go": [("TEAL sign", "Twice in Go", None), ("TEAL sign", "Twice in Go", None)],
         "java": [("ABI JSON", "Serialize method", 3)], "js": []}


def write_dataset(root: Path, name: str, runner: str, features_dir: str,
                  scenarios: list[tuple[str, str, int | None]], shuffle: bool = False) -> Path:
    """A dataset directory ``load_dataset`` reads: its card and instances (no gold, no snapshot)."""
    root.mkdir(parents=True)
    instances = []
    for k, (feature, scenario, rows) in enumerate(scenarios):
        # case and spacing as another SDK's copy may have them
        if shuffle:
            feature, scenario = feature.upper(), scenario.replace(" ", "  ")
        file = f"{features_dir}/{'abi' if feature.lower().startswith('abi') else 'teal'}.feature"
        instances.append(instance(name, requirement(file, feature, scenario, rows, line=10 * (k + 1))))
    card = DatasetCard(name=name, builder_version="0", created="2026-01-01T00:00:00+00:00",
                       projects=[project(runner, name)], scored_instances=[instances[0].id], exclusions=[],
                       hidden_rule={}, stage_seconds={}, files={})
    (root / "dataset.json").write_text(card.model_dump_json(indent=2), encoding="utf-8")
    (root / "instances.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in instances), encoding="utf-8")
    return root


def _outcome(language: str, index: int) -> tuple[str, bool]:
    """(outcome, kill complete) of shared scenario ``index`` (0-based)."""
    if language in ("py", "js"):
        return "pass", True
    if language == "go":
        return "pass", index < 3
    return ("pass", True) if index == 0 else ("assertion_failure", False)


def write_run(root: Path, dataset: Path, language: str, config: str = "oracle") -> Path:
    """A `req2test evaluate`-style run of ``config`` on ``dataset``: results.jsonl and run.json."""
    from bench.dataset import load_dataset

    directory = root / config
    directory.mkdir(parents=True)
    (directory / "run.json").write_text(json.dumps({"dataset": str(dataset)}), encoding="utf-8")
    rows = []
    for k, inst in enumerate(load_dataset(dataset).instances):
        outcome, kc = _outcome(language, k) if k < len(SHARED) else ("assertion_failure", False)
        rows.append(InstanceResult(
            instance_id=inst.id, project=inst.project, feature_file=inst.requirement.feature_file,
            outcome=Outcome(outcome), kill_complete=kc, kill_complete_relaxed=kc, api_f1=1.0 if kc else 0.0,
            mutant_recall=1.0 if kc else 0.0, ground_truth_kills=2, generated_kills=2 if kc else 0,
            evaluation_seconds=1.0, metadata=GenerationMetadata(agent="calibration:oracle")))
    (directory / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    return root


@pytest.fixture()
def runs(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for language, (name, runner, features_dir) in LAYOUT.items():
        dataset = write_dataset(tmp_path / "datasets" / language, name, runner, features_dir,
                                SHARED + EXTRA[language], shuffle=language == "java")
        out[language] = write_run(tmp_path / "runs" / f"cal-{language}", dataset, language)
    return out


def test_per_language_table_on_the_shared_requirements(runs: dict[str, Path]) -> None:
    configs = load_runs([runs[k] for k in ("py", "js", "go", "java")])
    assert [c.name for c in configs] == ["cal-py:oracle", "cal-js:oracle", "cal-go:oracle", "cal-java:oracle"]
    assert {c.record.name for c in configs} == {"oracle"}
    report = build_report(configs, "four languages", resamples=200)
    [group] = report.languages
    # S1-S6 only: py's X and the scenario Go holds twice are not shared; Java's 3-row Serialize is not py's 2-row
    assert (group.config, group.shared) == ("oracle", 6)
    rows = {r.label: r for r in group.rows}
    assert list(rows) == ["Python", "TypeScript", "Go", "Java"]
    assert {r.label: (r.framework, r.dataset, r.results, r.n, r.n_exec, r.passes, r.kill_complete_passes)
            for r in group.rows} == {
        "Python": ("behave 1.2.6", "py-algorand-sdk", 8, 6, 6, 6, 6),
        "TypeScript": ("cucumber-js 11.0.1", "js-algorand-sdk", 6, 6, 6, 6, 6),
        "Go": ("godog 0.14.1", "go-algorand-sdk", 8, 6, 6, 6, 3),
        "Java": ("cucumber-jvm 6.6.0", "java-algorand-sdk", 7, 6, 6, 1, 1)}
    # py's own figures would be 6/8 with X and S7 in: restricted, it passes everything
    assert rows["Python"].pass_at_1.value == 1.0 and rows["Python"].kill_complete_at_1.value == 1.0
    assert rows["Go"].pass_at_1.value == 1.0 and rows["Go"].kill_complete_at_1.value == 0.5
    assert rows["Java"].pass_at_1.value == pytest.approx(1 / 6, abs=1e-6)
    for row in group.rows:
        for estimate in (row.pass_at_1, row.kill_complete_at_1):
            assert estimate.ci_low <= estimate.value <= estimate.ci_high
    assert rows["Go"].kill_complete_at_1.ci_low < 0.5 < rows["Go"].kill_complete_at_1.ci_high

    pairs = {(p.a, p.b): p for p in group.pairs}
    assert len(pairs) == 6 and all(p.n_paired == 6 for p in pairs.values())
    py_go = pairs[("Python", "Go")]
    # KC: Python alone on S4-S6 -> 3 discordant, two-sided exact McNemar 2 * (1/2)^3
    assert (py_go.kc_b_over_a, py_go.kc_a_over_b, py_go.kc_p) == (0, 3, 0.25)
    assert (py_go.pass_b_over_a, py_go.pass_a_over_b, py_go.pass_p) == (0, 0, 1.0)
    assert py_go.kc_difference.value == -0.5 and py_go.pass_difference.value == 0.0
    py_java = pairs[("Python", "Java")]
    assert (py_java.pass_a_over_b, py_java.pass_p) == (5, 0.0625)  # 2 * (1/2)^5
    go_java = pairs[("Go", "Java")]
    assert (go_java.kc_a_over_b, go_java.kc_b_over_a, go_java.kc_p) == (2, 0, 0.5)
    assert pairs[("Python", "TypeScript")].kc_p == 1.0

    md = render_markdown(report)
    assert "## Across languages (shared requirements)" in md
    assert "| cal-go:oracle | Go | godog 0.14.1 | go-algorand-sdk | 6 / 8 | 6 | 100.0% [" in md
    assert "| oracle | Python | Go | 6 | +0.0 pp [+0.0 pp, +0.0 pp] | 0 / 0 | 1.0000 | -50.0 pp [" in md
    page = render_html(report)
    assert "Across languages (shared requirements)" in page and "cucumber-jvm 6.6.0" in page
    # the per-dataset paired tests stay within a dataset: one oracle arm per dataset, nothing to pair
    assert report.paired == []


def test_report_command_prints_the_language_tables(runs: dict[str, Path], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import console
    from harness.cli import app

    monkeypatch.setattr(console.out, "_width", 200)  # the console took its width when imported
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(runs["py"]), str(runs["go"]), str(runs["java"]), "-o", str(out),
                                      "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert "oracle: 6 shared requirements, per language" in result.output
    assert "oracle: languages paired" in result.output
    assert "│ Python   │ behave 1.2.6" in result.output and "java-algorand-sdk" in result.output
    assert "│ Python │ Go   │ 6     │" in result.output
    assert "Across languages" in (out / "report.md").read_text(encoding="utf-8")
    assert (out / "report.html").is_file()
    # several runs need an output directory
    result = CliRunner().invoke(app, ["report", str(runs["py"]), str(runs["go"])])
    assert result.exit_code == 2 and "--output" in result.output


def test_one_dataset_keeps_the_report_as_it_was(runs: dict[str, Path], tmp_path: Path) -> None:
    from bench.runs import load_configs

    single = build_report(load_configs(runs["go"]), "go", resamples=100)
    assert single.languages == [] and "Across languages" not in render_markdown(single)
    # two runs on one dataset: names prefixed by their runs, no per-language table
    other = write_run(tmp_path / "runs" / "go-again", Path(json.loads(
        (runs["go"] / "oracle" / "run.json").read_text())["dataset"]), "go")
    both = build_report(load_runs([runs["go"], other]), "go twice", resamples=100)
    assert [c.name for c in both.configs] == ["cal-go:oracle", "go-again:oracle"]
    assert both.languages == []
    # datasets that share nothing: a note, no table
    lonely = write_dataset(tmp_path / "datasets" / "lonely", "lonely", "godog 0.14.1", "features",
                           [("Elsewhere", "nothing alike", None)])
    apart = build_report(load_runs([runs["py"], write_run(tmp_path / "runs" / "lonely", lonely, "go")]), "apart",
                         resamples=100)
    assert apart.languages == [] and any("share no requirement" in n for n in apart.notes)


def test_load_runs_refuses_ambiguous_run_names(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(RunsError, match="given twice"):
        load_runs([runs["py"], runs["py"]])
    twin = tmp_path / "elsewhere" / "cal-py"
    twin.parent.mkdir()
    (runs["py"]).rename(twin)
    copy = write_run(tmp_path / "runs" / "cal-py", Path(json.loads(
        (twin / "oracle" / "run.json").read_text())["dataset"]), "py")
    with pytest.raises(RunsError, match="two run directories are named 'cal-py'"):
        load_runs([copy, twin])


def test_show_names_the_requirement_family(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import console
    from harness.cli import app

    monkeypatch.setattr(console.out, "_width", 200)
    instance_id = "java-algorand-sdk/src/test/resources/com/algorand/algosdk/unit/abi.feature:10"
    result = CliRunner().invoke(app, ["show", f"{runs['java']}:oracle", instance_id])
    assert result.exit_code == 0, result.output
    assert "requirement family: abi json :: serialize method :: 2" in result.output
