"""bench.runs / bench.compare / bench.report and the `compare` / `report` commands on synthetic run dirs.

The run: project p (8 instances, a.feature i0-i3, b.feature i4-i7) and project q (c.feature j0, j1).
  A (base@th, $0.10/generation):  p: i0 pass+KC, i1 pass, i2-i5 assertion, i6 build, i7 generation failure
                                  q: j0 pass+KC, j1 infrastructure failure
  B (best3@th, n=3, $0.30):       p: all pass, i0-i6 KC, i7 not;  q: j0 pass+KC, j1 pass (no kills: never KC)
  best3@th/single = A's results at $0.12 (dominated by base@th); best3@th/oracle = B's results, no cost recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.compare import compare, render_comparison_markdown
from bench.model import GenerationMetadata, InstanceResult, Outcome, Prediction
from bench.report import build_report, pareto_frontier, render_html, render_markdown
from bench.runs import RunsError, load_configs, select_config, split_selection

IDS = [f"p/features/{'a' if k < 4 else 'b'}.feature:{10 + k}" for k in range(8)] + \
      [f"q/features/c.feature:{10 + k}" for k in range(2)]

#          outcome,               KC,    api,  cov,  recall
A_ROWS = [("pass", True, 1.0, 1.0, 1.0), ("pass", False, 1.0, 0.5, 0.5),
          *[("assertion_failure", False, 0.0, 0.0, 0.0)] * 4,
          ("build_failure", False, 0.0, 0.0, 0.0), ("generation_failure", False, 0.0, 0.0, 0.0),
          ("pass", True, None, 1.0, 1.0), ("infrastructure_failure", False, None, 0.0, None)]
B_ROWS = [*[("pass", True, 1.0, 1.0, 1.0)] * 7, ("pass", False, 1.0, 0.6, 0.5),
          ("pass", True, None, 1.0, 1.0), ("pass", False, None, 0.5, None)]


def _results(rows: list[tuple], cost: float | None) -> list[InstanceResult]:
    out = []
    for instance_id, (outcome, kc, api, cov, rec) in zip(IDS, rows):
        project, rest = instance_id.split("/", 1)
        out.append(InstanceResult(
            instance_id=instance_id, project=project, feature_file=rest.split(":")[0], outcome=Outcome(outcome),
            api_f1=api, coverage_jaccard=cov, mutant_recall=rec, kill_complete=kc, kill_complete_relaxed=kc,
            ground_truth_kills=0 if rec is None else 4, generated_kills=0, evaluation_seconds=1.0,
            metadata=GenerationMetadata(cost_usd=cost)))
    return out


def _write_config(root: Path, rel: str, rows: list[tuple], cost: float | None, record: dict | None,
                  predictions: bool = True) -> None:
    directory = root / "configs" / rel
    directory.mkdir(parents=True)
    if record is not None:
        (directory / "config.json").write_text(json.dumps(record), encoding="utf-8")
    # results carry no cost: the report must take it from predictions.jsonl
    (directory / "results.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in _results(rows, None)), encoding="utf-8")
    if predictions:
        (directory / "predictions.jsonl").write_text("".join(
            Prediction(instance_id=i, files={"features/steps/s.py": "x = 1\n"},
                       metadata=GenerationMetadata(cost_usd=cost, llm_calls=4, input_tokens=1000, output_tokens=200,
                                                   wall_seconds=30.0)).model_dump_json() + "\n" for i in IDS),
            encoding="utf-8")


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    root = tmp_path / "run:2024-01-01T10:00"  # a ':' in the run path must not break RUN:CONFIG
    _write_config(root, "base@th", A_ROWS, 0.10, {"name": "base@th", "arm": "base", "view": "th", "role": "arm",
                                                  "n": 1, "agent": "builtin", "model": "m"})
    _write_config(root, "best3@th", B_ROWS, 0.30, {"name": "best3@th", "arm": "best3", "view": "th", "role": "arm",
                                                   "n": 3, "selector": "consensus", "agent": "builtin"})
    # nested directory named after the config's '/' part
    _write_config(root, "best3@th/single", A_ROWS, 0.12, {"name": "best3@th/single", "role": "single", "n": 3})
    # no config.json: the name comes from the directory, where `req2test run` writes '/' as '~'
    _write_config(root, "best3@th~oracle", B_ROWS, None, None, predictions=False)
    return root


def test_load_configs_names_records_and_costs(run: Path) -> None:
    configs = load_configs(run)
    assert [c.name for c in configs] == ["base@th", "best3@th", "best3@th/oracle", "best3@th/single"]
    by = {c.name: c for c in configs}
    oracle = by["best3@th/oracle"].record
    assert (oracle.arm, oracle.view, oracle.role, oracle.selector, oracle.base) == ("best3", "th", "selector",
                                                                                    "oracle", "best3@th")
    assert by["best3@th/single"].record.arm == "best3" and by["best3@th/single"].record.role == "single"
    assert len(by["base@th"].results) == 10 and len(by["base@th"].predictions) == 10
    assert by["base@th"].generation_metadata()[IDS[0]].cost_usd == 0.10
    assert by["best3@th/oracle"].predictions == {}
    assert by["best3@th/oracle"].generation_metadata()[IDS[0]].cost_usd is None


def test_selection_and_one_line_errors(run: Path, tmp_path: Path) -> None:
    assert split_selection(f"{run}:best3@th/single") == (run, "best3@th/single")
    assert select_config(f"{run}:best3@th/single").name == "best3@th/single"
    with pytest.raises(RunsError, match=r"no configuration 'nope'; available: base@th, best3@th, "
                                        r"best3@th/oracle, best3@th/single"):
        select_config(f"{run}:nope")
    with pytest.raises(RunsError, match="holds 4 configurations"):
        select_config(str(run))
    with pytest.raises(RunsError, match="no such run directory"):
        select_config(str(tmp_path / "missing") + ":x")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RunsError, match="neither configs"):
        load_configs(empty)


def test_plain_evaluate_run_dir(tmp_path: Path) -> None:
    plain = tmp_path / "mini"
    plain.mkdir()
    (plain / "run.json").write_text("{}", encoding="utf-8")
    # evaluate copies each prediction's metadata into its result: cost comes from there; a torn tail is skipped
    (plain / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in _results(A_ROWS, 0.5))
                                         + '{"instance_id": "cut', encoding="utf-8")
    config = select_config(str(plain))
    assert config.name == "mini" and len(config.results) == 10 and config.predictions == {}
    assert select_config(f"{plain}:mini").name == "mini"
    report = build_report([config], "plain", resamples=100)
    assert report.configs[0].efficiency.cost_per_generation == 0.5
    assert report.configs[0].efficiency.source == "results"
    # a directory of evaluate runs (what `req2test calibrate -o DIR` writes): one configuration per child
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.jsonl").write_text(_results(B_ROWS, None)[0].model_dump_json() + "\n",
                                                      encoding="utf-8")
    assert [c.name for c in load_configs(tmp_path)] == ["mini", "other"]


def test_compare_finds_b_better(run: Path) -> None:
    a, b = select_config(f"{run}:base@th"), select_config(f"{run}:best3@th")
    c = compare(a, b, resamples=200)
    assert (c.n_paired, c.only_a, c.only_b, c.infrastructure_pairs) == (10, 0, 0, 1)
    passing, kc = c.binary
    # Pass: j1 (infrastructure in A) left out -> 9 pairs; i2..i7 pass only in B -> 6 discordant, p = 1/2^6
    assert (passing.n, passing.a_successes, passing.b_successes, passing.b_over_a, passing.a_over_b) == (9, 3, 9, 6, 0)
    assert passing.p_value == pytest.approx(1 / 64, abs=1e-6) and passing.significant
    assert passing.p_value_reverse == 1.0
    # KillComplete: 10 pairs, i1..i6 KC only in B
    assert (kc.n, kc.a_successes, kc.b_successes, kc.b_over_a, kc.a_over_b) == (10, 2, 8, 6, 0)
    assert kc.p_value == pytest.approx(1 / 64, abs=1e-6) and kc.significant
    cont = {t.metric: t for t in c.continuous}
    # coverage: 8 differing pairs all in B's favour -> exact p = 1/256; means 2.5/10 and 9.1/10
    assert cont["coverage_jaccard"].n == 10 and cont["coverage_jaccard"].differing == 8
    assert cont["coverage_jaccard"].p_value == pytest.approx(1 / 256, abs=1e-6)
    assert cont["coverage_jaccard"].mean_a == pytest.approx(0.25)
    assert cont["coverage_jaccard"].mean_b == pytest.approx(0.91)
    assert cont["coverage_jaccard"].mean_difference == pytest.approx(0.66)
    # API F1 only where both have it (project p): 6 differing -> 1/64; mutant recall: j1 has none -> 9 pairs
    assert cont["api_f1"].n == 8 and cont["api_f1"].p_value == pytest.approx(1 / 64, abs=1e-6)
    assert cont["mutant_recall"].n == 9
    # project-averaged: Pass@1 A = (2/8 + 1/1)/2, B = 1; KC@1 A = (1/8 + 1/2)/2, B = (7/8 + 1/2)/2
    assert c.pass_at_1["a"].value == pytest.approx(0.625) and c.pass_at_1["b"].value == pytest.approx(1.0)
    assert c.pass_at_1["difference"].value == pytest.approx(0.375)
    assert c.kill_complete_at_1["a"].value == pytest.approx(0.3125)
    assert c.kill_complete_at_1["b"].value == pytest.approx(0.6875)
    diff = c.kill_complete_at_1["difference"]
    assert diff.ci_low <= diff.value <= diff.ci_high and diff.ci_low > 0  # B is better in every resample
    p, q = c.projects
    assert (p.project, p.n, p.pass_a, p.pass_b, p.kc_a, p.kc_b) == ("p", 8, 0.25, 1.0, 0.125, 0.875)
    assert (p.pass_b_over_a, p.pass_a_over_b, p.kc_b_over_a, p.kc_a_over_b) == (6, 0, 6, 0)
    assert (q.project, q.n, q.pass_a, q.pass_b, q.kc_a, q.kc_b) == ("q", 2, 1.0, 1.0, 0.5, 0.5)
    assert (q.pass_b_over_a, q.kc_b_over_a) == (0, 0)
    assert "B better on Pass (p=0.0156 < 0.05)" in c.verdict and "B better on KillComplete" in c.verdict
    md = render_comparison_markdown(c)
    assert "| Pass | 9 | 3 | 9 | 6 | 0 | 0.0156 | 1.0000 | yes |" in md
    assert "| p | 8 | 25.0% | 100.0% | 6 | 0 | 12.5% | 87.5% | 6 | 0 |" in md
    assert "62.5%" in md and "+37.5 pp" in md


def test_compare_equal_is_not_significant(run: Path) -> None:
    c = compare(select_config(f"{run}:base@th"), select_config(f"{run}:best3@th/single"), resamples=100)
    assert all(t.b_over_a == 0 and t.a_over_b == 0 and t.p_value == 1.0 and not t.significant for t in c.binary)
    assert all(t.differing == 0 and t.p_value == 1.0 for t in c.continuous)
    assert c.kill_complete_at_1["difference"].value == 0.0
    assert "no significant Pass difference (p=1.0000)" in c.verdict


def test_compare_reverse_direction_and_dropped(run: Path) -> None:
    a, b = select_config(f"{run}:best3@th"), select_config(f"{run}:base@th")
    b.results = b.results[:8]  # B scored only project p: the two q instances are dropped
    c = compare(a, b, resamples=100)
    assert (c.n_paired, c.only_a, c.only_b) == (8, 2, 0)
    kc = c.binary[1]
    assert (kc.b_over_a, kc.a_over_b, kc.p_value_reverse) == (0, 6, pytest.approx(1 / 64, abs=1e-6))
    assert not kc.significant and "A better" in c.verdict


def test_report_values_frontier_and_best_of_n(run: Path) -> None:
    report = build_report(load_configs(run), "synthetic", resamples=200)
    by = {c.name: c for c in report.configs}
    base = by["base@th"]
    assert (base.n, base.n_exec, base.passes, base.kill_complete_passes) == (10, 9, 3, 2)
    assert base.pass_at_1.value == pytest.approx(0.625)
    assert base.kc_part_of_pass == pytest.approx((1 / 8 + 1) / 2)  # KC passes over N_exec, per project
    assert base.kill_complete_at_1.value == pytest.approx(0.3125)
    assert base.api_f1 == pytest.approx(0.25)  # p only: 2/8; q's ground truth calls nothing
    assert base.coverage_jaccard == pytest.approx((1.5 / 8 + 1 / 2) / 2)
    assert base.mutant_recall == pytest.approx((1.5 / 8 + 1.0) / 2)
    assert base.outcomes == {"generation_failure": 1, "build_failure": 1, "binding_failure": 0,
                             "execution_failure": 0, "assertion_failure": 4, "pass": 3,
                             "tampering": 0, "unstable": 0, "infrastructure_failure": 1}
    assert [(p.project, p.n, p.n_exec, p.pass_at_1) for p in base.projects] == [("p", 8, 8, 0.25), ("q", 2, 1, 1.0)]
    eff = base.efficiency
    assert (eff.cost_known, eff.generations, eff.source) == (10, 10, "predictions")
    assert eff.cost_per_generation == pytest.approx(0.10) and eff.cost_total == pytest.approx(1.0)
    assert eff.cost_per_pass == pytest.approx(1 / 3, abs=1e-6) and eff.cost_per_kill_complete == pytest.approx(0.5)
    assert (eff.llm_calls, eff.input_tokens, eff.output_tokens, eff.wall_seconds) == (4, 1000, 200, 30)
    best = by["best3@th"].efficiency
    assert best.cost_per_pass == pytest.approx(0.30) and best.cost_per_kill_complete == pytest.approx(3.0 / 8)
    # single costs more than base@th for the same KC -> dominated; oracle has no cost -> left off
    assert report.frontier == ["base@th", "best3@th"]
    assert report.unknown_cost == ["best3@th/oracle"]
    (group,) = report.best_of_n
    assert group.base == "best3@th"
    assert [(r.name, r.kind, r.candidates) for r in group.rows] == [
        ("best3@th/single", "single", 1), ("best3@th", "consensus", 3), ("best3@th/oracle", "oracle", 3)]
    assert group.rows[1].kc_delta_vs_single == pytest.approx(0.375)
    assert group.rows[0].kc_delta_vs_single == 0.0

    md = render_markdown(report)
    assert "| base@th | 10 | 9 | 62.5% [" in md
    assert "| base@th | 1 | 1 | 0 | 0 | 4 | 3 | 0 | 0 | 1 |" in md  # outcome stages (tampering, unstable: 0)
    assert "| base@th | 10/10 | 30.0 | 4.0 | 1,000 | 200 | $0.1000 | $1.0000 | $0.3333 | $0.5000 |" in md
    assert "| best3@th/oracle | 0/10 | — |" in md
    assert "Pareto frontier" in md and "base@th, best3@th." in md
    assert "Left off (cost unknown): best3@th/oracle." in md
    assert "| best3@th | consensus | 3 | 100.0% | +37.5 pp | 68.8% | +37.5 pp | $0.3000 |" in md
    assert "| base@th | p | 8 | 8 | 25.0% | 12.5% |" in md
    assert render_markdown(build_report(load_configs(run), "synthetic", resamples=200)) == md  # deterministic


def test_html_is_self_contained(run: Path) -> None:
    page = render_html(build_report(load_configs(run), "synthetic <run>", resamples=100))
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 4
    assert "<style>" in page and "<script" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "http" not in page
    assert "synthetic &lt;run&gt;" in page  # escaped
    assert "<polyline" in page  # the frontier line


def test_pareto_ties_and_domination() -> None:
    points = {"a": (1.0, 0.5), "b": (1.0, 0.5), "c": (2.0, 0.5), "d": (0.5, 0.2), "e": (3.0, 0.9)}
    assert pareto_frontier(points) == ["d", "a", "b", "e"]


def test_cli_compare_and_report(run: Path, tmp_path: Path) -> None:
    import typer

    from harness.cli_report import compare_command, report_command

    # the same registration as harness.cli, without importing every other command module
    app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode="markdown")
    app.command("compare")(compare_command)
    app.command("report")(report_command)
    runner = CliRunner()
    md = tmp_path / "cmp.md"
    result = runner.invoke(app, ["compare", f"{run}:base@th", f"{run}:best3@th", "-o", str(md),
                                 "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert "verdict:" in result.output and "0.0156" in result.output
    assert "| KillComplete | 10 | 2 | 8 | 6 | 0 | 0.0156 |" in md.read_text(encoding="utf-8")

    result = runner.invoke(app, ["compare", f"{run}:base@th", f"{run}:best3@th", "--json", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["binary"][1]["b_over_a"] == 6 and data["n_paired"] == 10

    result = runner.invoke(app, ["compare", f"{run}:base@th", f"{run}:nope"])
    assert result.exit_code == 2
    assert "no configuration 'nope'; available: base@th" in result.output and "Traceback" not in result.output

    out_dir = tmp_path / "rep"
    result = runner.invoke(app, ["report", str(run), "-o", str(out_dir), "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert (out_dir / "report.md").is_file() and (out_dir / "report.html").is_file()
    assert str(out_dir / "report.html") in result.stdout
    result = runner.invoke(app, ["report", str(run), "--resamples", "100"])
    assert result.exit_code == 0 and (run / "report.md").is_file()
    result = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such run directory" in result.output

    for command in ("compare", "report"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output


def test_report_carries_the_paired_tests(run: Path) -> None:
    """The A/B report says whether B beat A, not only two intervals side by side."""
    configs = load_configs(run)
    report = build_report(configs, "synthetic", resamples=200)
    # the arm's own pick (its first selector) is a pick among candidates too: paired with single like the others
    assert [(r.a, r.b) for r in report.paired] == [("base@th", "best3@th"), ("best3@th/single", "best3@th"),
                                                   ("best3@th/single", "best3@th/oracle")]
    by = {c.name: c for c in configs}
    direct = compare(by["base@th"], by["best3@th"], resamples=200)
    row = report.paired[0]
    kc = next(t for t in direct.binary if t.metric == "kill_complete")
    assert (row.kc_b_over_a, row.kc_a_over_b, row.kc_p) == (kc.b_over_a, kc.a_over_b, kc.p_value)
    assert row.kc_difference.value == direct.kill_complete_at_1["difference"].value
    assert row.kc_difference.ci_low <= row.kc_difference.value <= row.kc_difference.ci_high
    md = render_markdown(report)
    assert "## Paired tests (B against A)" in md
    assert f"| base@th | best3@th | {row.n_paired} |" in md


def test_a_configuration_is_selected_by_its_directory_name_too(run: Path) -> None:
    """`ls RUN/configs` shows best3@th~single: that spelling selects it as well as best3@th/single."""
    assert select_config(f"{run}:best3@th~single").name == "best3@th/single"
    assert select_config(f"{run}:best3@th/single").name == "best3@th/single"
