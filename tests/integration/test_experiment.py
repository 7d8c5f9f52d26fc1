"""``req2test run``: an experiment over the example dataset, resumed after kill -9, packaged for submission.

Agents here are the calibration agents (no model needed); the scripted-provider arms are exercised by the
demo test. Generations run in real bwrap sandboxes and the real evaluator scores them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.experiment.config import ExperimentError
from harness.experiment.runner import ExperimentRunner, prepare
from harness.submit import SubmissionError, build_bundle, validate_bundle

pytestmark = pytest.mark.integration

IDS = ["tinyshop/features/catalog.feature:6", "tinyshop/features/cart.feature:13",
       "tinyshop/features/cart.feature:19", "tinyshop/features/tax.feature:9"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))


def _write(tmp_path: Path, dataset: Path, arms: list[dict], **extra) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "dataset": str(dataset), "instances": {"ids": IDS},
                                    "evaluation": {"workers": 2}, "arms": arms, **extra}), encoding="utf-8")
    return path


def _run(path: Path, run_dir: Path):
    experiment, plan, dataset = prepare(path)
    return ExperimentRunner(experiment, plan, dataset, run_dir).run(path.read_text(encoding="utf-8"))


def _results(run_dir: Path, config: str) -> dict[str, dict]:
    lines = (run_dir / "configs" / config.replace("/", "~") / "results.jsonl").read_text().splitlines()
    return {r["instance_id"]: r for r in map(json.loads, lines)}


def test_run_arms_decomposition_cache_and_submission(example_dataset: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, example_dataset, [
        {"name": "oracle", "agent": "oracle"},
        {"name": "empty", "agent": "empty"},
        {"name": "oracle-dec", "agent": "oracle", "decompose": "sandbox"},
        {"name": "oracle2", "agent": "oracle", "n": 2, "selectors": ["static", "oracle"]},
    ])
    outcome = _run(path, tmp_path / "run")
    names = [c["config"] for c in outcome.configs]
    assert names == ["oracle@th", "empty@th", "oracle-dec@th", "oracle2@th", "oracle2@th/oracle", "oracle2@th/single"]
    assert all(r["kill_complete"] for r in _results(tmp_path / "run", "oracle@th").values())
    assert not any(r["outcome"] == "pass" and r["kill_complete"] for r in _results(tmp_path / "run", "empty@th").values())
    # decomposition: the prerequisite (cart:13) is generated first and its passing test handed to cart:19
    preds = [json.loads(line) for line in (tmp_path / "run/generations/oracle-dec@th/c1/predictions.jsonl")
             .read_text().splitlines()]
    order = [p["instance_id"] for p in preds]
    assert order.index("tinyshop/features/cart.feature:13") < order.index("tinyshop/features/cart.feature:19")
    dependent = next(p for p in preds if p["instance_id"] == "tinyshop/features/cart.feature:19")
    assert dependent["metadata"]["extra"]["prerequisites_given"]
    # best-of-2 configs carry the summed cost of both candidates and say which was chosen
    best = [json.loads(line) for line in (tmp_path / "run/configs/oracle2@th/predictions.jsonl").read_text().splitlines()]
    assert all(p["metadata"]["extra"]["candidates"] == 2 and p["metadata"]["extra"]["selector"] == "static"
               for p in best)
    assert (tmp_path / "run/report.md").is_file() and (tmp_path / "run/report.html").is_file()

    # everything cached by content: a second run directory regenerates and re-evaluates nothing
    again = _run(path, tmp_path / "run2")
    assert outcome.cached == 0 and again.generated == 0 and again.cached == outcome.generated
    def scores(run: str) -> dict[str, dict]:  # the cached copy says it was cached: compare the scores
        return {i: {k: v for k, v in r.items() if k != "metadata"} for i, r in _results(tmp_path / run, "oracle@th").items()}

    assert scores("run2") == scores("run")

    # submission: calibration agents read the ground truth, oracle selectors use the evaluator → refused
    with pytest.raises(SubmissionError) as info:
        build_bundle(tmp_path / "run", tmp_path / "bundle")
    message = str(info.value)
    assert "oracle@th: agent 'oracle' reads the ground truth" in message
    assert "oracle2@th/oracle" not in message  # only the arms' own configs are submitted by default


def test_submission_bundle_of_an_eligible_run(example_dataset: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, example_dataset, [{"name": "none", "agent": "none"}])
    _run(path, tmp_path / "run")
    manifest = build_bundle(tmp_path / "run", tmp_path / "bundle")
    assert [c.name for c in manifest.configurations] == ["none@th"]
    assert manifest.configurations[0].sandbox.backend == "bwrap"
    assert manifest.configurations[0].predictions == len(IDS) and manifest.configurations[0].results == len(IDS)
    validate_bundle(tmp_path / "bundle")
    (tmp_path / "bundle/configs/none@th/results.jsonl").write_text("{}\n")
    with pytest.raises(SubmissionError, match="changed since the manifest"):
        validate_bundle(tmp_path / "bundle")
    local = _write(tmp_path, example_dataset, [{"name": "loc", "agent": "none", "sandbox": "local"}])
    _run(local, tmp_path / "run-local")
    with pytest.raises(SubmissionError, match="does not isolate"):
        build_bundle(tmp_path / "run-local", tmp_path / "bundle-local")


def test_one_submission_rule_the_arms_pick_and_the_scripted_provider(example_dataset: Path, tmp_path: Path) -> None:
    """An arm that picks with ``static`` is submittable though ``oracle`` is reported beside it;
    an arm the run's scripted provider answered is not."""
    path = _write(tmp_path, example_dataset, [
        {"name": "pick", "agent": "none", "n": 2, "selectors": ["static", "oracle"]},
        {"name": "talk", "agent": "builtin", "model": "openai/scripted"}],
        provider={"script": "provider.yaml"}, limits={"max_calls": 2})
    (tmp_path / "provider.yaml").write_text(yaml.safe_dump(
        {"loop": True, "turns": [{"tool_calls": [{"name": "submit", "arguments": {}}]}]}), encoding="utf-8")
    _run(path, tmp_path / "run")
    records = {json.loads(p.read_text())["name"]: json.loads(p.read_text())["submission_refusals"]
               for p in (tmp_path / "run/configs").glob("*/config.json")}
    assert records["pick@th"] == []
    assert records["pick@th/oracle"] == ["selector oracle — the evaluator chose among candidates",
                                         "selector 'oracle' is not the arm's own (its first selector is)"]
    assert records["pick@th/single"] == ["candidate 1 alone is a comparison, not the arm"]
    assert records["talk@th"] == ["the model's answers came from a scripted provider, not a model"]
    assert [c.name for c in build_bundle(tmp_path / "run", tmp_path / "b1", configs=["pick@th"]).configurations] \
        == ["pick@th"]
    with pytest.raises(SubmissionError, match="talk@th: the model's answers came from a scripted provider"):
        build_bundle(tmp_path / "run", tmp_path / "b2")


def test_run_budget_limit_and_sampling(example_dataset: Path, tmp_path: Path) -> None:
    """No generation starts once limits.max_run_cost is spent; a rerun with a higher cap
    continues in the same directory; --limit runs the first N; sampling is recorded."""
    from harness.experiment.runner import BudgetReached, run_experiment

    (tmp_path / "provider.yaml").write_text(yaml.safe_dump(
        {"loop": True, "turns": [{"cost": 1.0, "tool_calls": [{"name": "submit", "arguments": {}}]}]}),
        encoding="utf-8")
    arms = [{"name": "t", "agent": "builtin", "model": "openai/scripted", "temperature": 0.2, "seed": 3}]
    path = _write(tmp_path, example_dataset, arms, provider={"script": "provider.yaml"}, executor="local",
                  limits={"max_calls": 3, "max_run_cost": 1.5})
    with pytest.raises(BudgetReached, match=r"budget is spent: \$2.0000 of \$1.5"):
        run_experiment(path, tmp_path / "run")
    journal = tmp_path / "run/generations/t@th/c1/predictions.jsonl"
    assert len(journal.read_text().splitlines()) == 2  # the third never started
    path = _write(tmp_path, example_dataset, arms, provider={"script": "provider.yaml"}, executor="local",
                  limits={"max_calls": 3, "max_run_cost": 100})
    outcome = run_experiment(path, tmp_path / "run")
    assert outcome.generated == len(IDS) - 2 and len(journal.read_text().splitlines()) == len(IDS)
    record = json.loads((tmp_path / "run/configs/t@th/config.json").read_text())
    assert record["sampling"] == {"temperature": 0.2, "seed": 3}
    bodies = [json.loads(line)["body"] for line in (tmp_path / "run/provider-requests.jsonl").read_text().splitlines()]
    assert all((b["temperature"], b["seed"]) == (0.2, 3) for b in bodies)
    small = run_experiment(path, tmp_path / "small", limit=1)
    assert [c["summary"]["n"] for c in small.configs] == [1]


def test_epochs_are_independent_replicates_aggregated_in_the_report(example_dataset: Path, tmp_path: Path) -> None:
    from harness.experiment.runner import run_experiment

    path = _write(tmp_path, example_dataset, [{"name": "o", "agent": "oracle"}, {"name": "z", "agent": "none"}],
                  epochs=2)
    two = IDS[:2]
    outcome = run_experiment(path, tmp_path / "run", instances=two)
    assert sorted(c["config"] for c in outcome.configs) == ["o@th#e1", "o@th#e2", "z@th#e1", "z@th#e2"]
    assert outcome.generated == 2 * 2 * len(two)  # each epoch draws its own generations: none from the cache
    record = json.loads((tmp_path / "run/configs/o@th#e2/config.json").read_text())
    assert (record["arm"], record["view"], record["epoch"]) == ("o", "th", 2)
    assert (tmp_path / "run/generations/o@th#e2/c1/predictions.jsonl").is_file()
    report = (tmp_path / "run/report.md").read_text()
    assert "## Epochs" in report
    assert "| o@th | 2 | 100.0% 100.0% | 100.0% | ±0.0 pp | 100.0% 100.0% | 100.0% | ±0.0 pp |" in report
    # paired tests stay within an epoch: z against o in each, never e2 against e1
    import re

    assert re.search(r"\| o@th#e1 \| z@th#e1 \| \d+ \|", report) and re.search(r"\| o@th#e2 \| z@th#e2 \| \d+ \|", report)
    assert not re.search(r"\| o@th#e1 \| o@th#e2 \| \d+ \|", report)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def _kill_when(cmd: list[str], ready, env: dict[str, str], timeout: float = 240) -> None:
    process = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_resume_after_kill_9_loses_nothing(example_dataset: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, example_dataset, [{"name": "o", "agent": "oracle", "n": 2, "selectors": ["static"]}],
                  cache=False)
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "harness.cli", "run", str(path), "-o", str(run_dir), "-q"]
    env = {**os.environ, "REQ2TEST_CACHE": str(tmp_path / "cache")}
    journal = run_dir / "generations/o@th/c1/predictions.jsonl"
    _kill_when(cmd, lambda: len(_lines(journal)) >= 2, env)  # mid-generation
    before = _lines(journal)
    assert 2 <= len(before) < len(IDS) or len(before) == len(IDS)
    evaluations = run_dir / "evaluations"
    _kill_when(cmd, lambda: any(evaluations.glob("o@th/c*/run/results.jsonl")), env)  # mid-evaluation
    after_gen = _lines(journal)
    assert after_gen[:len(before)] == before  # journaled generations are kept verbatim, never redone
    finished = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    final = _lines(journal)
    assert final[:len(after_gen)] == after_gen
    ids = [json.loads(line)["instance_id"] for line in final]
    assert sorted(ids) == sorted(IDS)  # each instance generated exactly once across three processes
    assert set(_results(run_dir, "o@th")) == set(IDS)
    assert all(r["kill_complete"] for r in _results(run_dir, "o@th").values())


def test_enrichment_and_judge_through_a_scripted_provider(example_dataset: Path, tmp_path: Path) -> None:
    """The strategies that need a model, driven by the real litellm client against the loopback provider."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"loop": True, "turns": [
        {"when": "Clarify the requirement", "text": "Load the standard catalog fixture and check the whole product.",
         "cost": 0.01},
        {"when": "Several candidate test implementations", "text": '{"best": 2}', "cost": 0.002},
    ]}), encoding="utf-8")
    path = _write(tmp_path, example_dataset, [
        {"name": "enriched", "agent": "none", "model": "openai/scripted", "enrich": True},
        {"name": "judged", "agent": "none", "model": "openai/scripted", "n": 2, "selectors": ["judge"]},
    ], provider={"script": str(script)})
    outcome = _run(path, tmp_path / "run")
    assert [c["config"] for c in outcome.configs] == ["enriched@th", "judged@th", "judged@th/single"]
    enrichment = [json.loads(line) for line in
                  (tmp_path / "run/generations/enriched@th/enrichment.jsonl").read_text().splitlines()]
    assert {e["instance_id"] for e in enrichment} == set(IDS)
    assert all(e["text"].startswith("Load the standard catalog fixture") and e["surfaced"] for e in enrichment)
    trajectory = next((tmp_path / "run/generations/enriched@th/c1/trajectories").glob("*/1.jsonl"))
    assert "Load the standard catalog fixture" in trajectory.read_text()  # stored with the instance's trajectory
    predictions = [json.loads(line) for line in
                   (tmp_path / "run/configs/enriched@th/predictions.jsonl").read_text().splitlines()]
    assert all(p["metadata"]["cost_usd"] == pytest.approx(0.01) and p["metadata"]["extra"]["enriched"]
               for p in predictions)
    judged = [json.loads(line) for line in (tmp_path / "run/configs/judged@th/predictions.jsonl").read_text()
              .splitlines()]
    assert all(p["metadata"]["extra"]["candidate"] == 2 for p in judged)
    assert all(p["metadata"]["cost_usd"] == pytest.approx(0.002) for p in judged)
    requests = (tmp_path / "run/provider-requests.jsonl").read_text()
    assert "Clarify the requirement" in requests and "Several candidate test implementations" in requests


SUITES = ["tinyshop/features/tax.feature", "tinyshop/features/configuration.feature"]


def _suite_script(dataset_dir: Path, suites: list[str]) -> dict:
    """A scripted model that answers each suite prompt with the developers' step files, then submits:
    the built-in agent, its tools and the real openai client on the loopback provider, nothing mocked."""
    from bench.dataset import load_dataset
    from bench.suite.calibration import suite_calibration_files
    from bench.suite.instances import suite_instances

    dataset = load_dataset(dataset_dir)
    gold = dataset.load_gold()
    turns = []
    for suite in (s for s in suite_instances(dataset) if s.id in suites):
        files = suite_calibration_files(dataset, suite, gold)["oracle"]
        feature = re.escape(f"Feature file: `{suite.feature_file}`")
        turns.append({"when": feature + r"[\s\S]*every scenario listed below", "cost": 0.02,
                      "tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": text}}
                                     for path, text in sorted(files.items())]})
        turns.append({"when": feature, "cost": 0.01, "tool_calls": [{"name": "submit",
                                                                     "arguments": {"summary": "done"}}]})
    return {"turns": turns}


def test_suite_mode_end_to_end(example_dataset: Path, tmp_path: Path) -> None:
    """mode: suite — one generation per feature file in the all-hidden view, judged scenario by
    scenario on the real code and on the feature's requirement-targeted mutants. The developers'
    suite (oracle agent, and the built-in agent replaying it through the scripted provider) is 100 %
    valid and kills every target; steps that do nothing are valid and kill none; no steps at all
    leave every scenario unimplemented."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(_suite_script(example_dataset, SUITES)), encoding="utf-8")
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "suites", "dataset": str(example_dataset), "mode": "suite", "views": ["ah"],
        "instances": {"ids": SUITES}, "evaluation": {"workers": 2}, "provider": {"script": str(script)},
        "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "empty", "agent": "empty"},
                 {"name": "none", "agent": "none"},
                 {"name": "scripted", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    outcome = _run(path, tmp_path / "run")
    summaries = {s["config"]: s for s in outcome.suites}
    assert sorted(summaries) == ["empty@ah", "none@ah", "oracle@ah", "scripted@ah"]
    scenarios = summaries["oracle@ah"]["scenarios"]
    assert scenarios == 8 and summaries["oracle@ah"]["targets"] >= 3
    for name in ("oracle@ah", "scripted@ah"):
        assert summaries[name]["validity_pooled"] == 1.0 and summaries[name]["mutation_score_pooled"] == 1.0
        assert summaries[name]["size_ratio_mean"] == 1.0 and summaries[name]["flaky"] == 0
    assert summaries["scripted@ah"]["cost_usd"] == pytest.approx(0.06)
    assert summaries["empty@ah"]["validity_pooled"] == 1.0 and summaries["empty@ah"]["mutation_score_pooled"] == 0.0
    assert summaries["none@ah"]["validity_pooled"] == 0.0 and summaries["none@ah"]["unimplemented"] == scenarios
    results = [json.loads(line) for line in
               (tmp_path / "run/suites/scripted@ah/suite_results.jsonl").read_text().splitlines()]
    assert [r["suite_id"] for r in results] == sorted(SUITES)
    for result in results:  # each scenario judged on its own, the targets killed by valid scenarios only
        assert all(v["stability"] == "valid" and v["clean_runs"] >= 4 for v in result["scenarios"])
        assert result["mutation"]["killed"] == result["mutation"]["targets"]
    requests = (tmp_path / "run/provider-requests.jsonl").read_text()
    assert "every scenario listed below" in requests and "all-hidden" in requests
    report = (tmp_path / "run/report.md").read_text()
    assert "| oracle@ah | feature | 2 | 8 | 1.000 | 1.000 | 0 | 0 | 1.000 | 1.000 |" in report
    # failure attribution: a scripted judge labels every surviving target of the empty suite, and a
    # replay through the evaluator confirms each survival
    from harness.attribution import attribute_config
    from harness.llm import Model, ModelConfig
    from harness.provider.server import ScriptedProvider

    judge_script = tmp_path / "judge.yaml"
    judge_script.write_text(yaml.safe_dump({"loop": True, "turns": [
        {"when": "was not detected", "text": '{"label": "test", "reason": "the Then steps check nothing"}'}]}))
    with ScriptedProvider(judge_script) as provider:
        judge = Model(ModelConfig(model="openai/scripted", api_base=provider.openai_base_url, api_key="x"))
        labels = attribute_config(tmp_path / "run", "empty@ah", judge, workers=2)
    assert len(labels) == summaries["empty@ah"]["targets"]
    assert {(a.kind, a.label, a.replay) for a in labels} == {("surviving_mutant", "test", "confirmed")}
    assert attribute_config(tmp_path / "run", "oracle@ah", None) == []  # nothing failed, nothing survived
    # a rerun in a new directory comes from the caches: no generation is run again
    again = _run(path, tmp_path / "run2")
    assert again.generated == 0 and again.cached == 8
    with pytest.raises(ExperimentError, match="views: \\[ah\\]"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(path.read_text().replace("- ah", "- th"), encoding="utf-8")
        prepare(bad)


def test_reverse_task_end_to_end(example_dataset: Path, tmp_path: Path) -> None:
    """mode: reverse — the feature's developer steps are given in the all-hidden view and the agent
    implements the production code; the whole production tree is collected (production diffs are
    kept in this mode only) and the developer steps run against it. Restoring the real code (the
    oracle, and the built-in agent writing it through the scripted provider) passes every scenario;
    leaving the view as it is (none) passes none."""
    from bench.dataset import load_dataset
    from bench.suite.reverse import production_sources

    dataset = load_dataset(example_dataset)
    project = dataset.project("tinyshop")
    snapshot = dataset.root / project.snapshot
    real = {p: (snapshot / p).read_text() for p in production_sources(snapshot, project.production)}
    turns = [{"when": re.escape("Feature file: `features/tax.feature`") + r"[\s\S]*implementing the production code",
              "cost": 0.05, "tool_calls": [{"name": "write_file", "arguments": {"path": p, "content": t}}
                                           for p, t in sorted(real.items())]},
             {"when": "implementing the production code", "tool_calls": [{"name": "submit", "arguments": {}}]}]
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "reverse", "dataset": str(example_dataset), "mode": "reverse", "views": ["ah"],
        "instances": {"ids": ["tinyshop/features/tax.feature"]}, "evaluation": {"workers": 2},
        "provider": {"script": str(script)},
        "arms": [{"name": "oracle", "agent": "oracle"}, {"name": "none", "agent": "none"},
                 {"name": "scripted", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    outcome = _run(path, tmp_path / "run")
    summaries = {s["config"]: s for s in outcome.suites}
    assert summaries["oracle@ah"]["score_pooled"] == 1.0 and summaries["oracle@ah"]["scenarios"] == 4
    assert summaries["scripted@ah"]["score_pooled"] == 1.0
    assert summaries["none@ah"]["score_pooled"] == 0.0
    predictions = {json.loads(line)["metadata"]["agent"]: json.loads(line)["files"] for line in
                   (tmp_path / "run/generations/none@ah/c1/predictions.jsonl").read_text().splitlines()}
    hidden = predictions["calibration:none"]
    assert sorted(hidden) == sorted(real) and "implementation hidden" in "".join(hidden.values())
    prompt = (tmp_path / "run/provider-requests.jsonl").read_text()
    assert "`features/steps/tax_steps.py`" in prompt  # the given tests are named (and written in place)
    results = [json.loads(line) for line in
               (tmp_path / "run/suites/none@ah/reverse_results.jsonl").read_text().splitlines()]
    assert all(v["outcome"] != "pass" for r in results for v in r["scenarios"])
    assert "reverse task" in (tmp_path / "run/report.md").read_text()


def test_black_box_oracle_ablation(example_dataset: Path, tmp_path: Path) -> None:
    """black_box_oracle: the built-in agent gets a check_on_real_code tool; the evaluator judges its
    current steps for one scenario on the real code and only "passes"/"fails" crosses back. The
    scripted model checks before writing anything (fails), writes the developers' steps, checks
    again (passes) and submits."""
    from bench.dataset import load_dataset

    dataset = load_dataset(example_dataset)
    suite_id = "tinyshop/features/tax.feature"
    line = min(i.requirement.scenario_line for i in dataset.instances if i.requirement.feature_file
               == "features/tax.feature")
    files = _suite_script(example_dataset, [suite_id])["turns"][0]["tool_calls"]
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"turns": [
        {"tool_calls": [{"name": "check_on_real_code", "arguments": {"line": line}}]},
        {"when": "fails on the real code", "tool_calls": files},
        {"when": "wrote features/steps", "tool_calls": [{"name": "check_on_real_code", "arguments": {"line": line}}]},
        {"when": "passes on the real code", "tool_calls": [{"name": "submit", "arguments": {}}]}]}))
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "oracle-ablation", "dataset": str(example_dataset), "mode": "suite", "views": ["ah"],
        "instances": {"ids": [suite_id]}, "evaluation": {"workers": 2}, "provider": {"script": str(script)},
        "arms": [{"name": "probing", "agent": "builtin", "model": "openai/scripted", "black_box_oracle": True}]}))
    outcome = _run(path, tmp_path / "run")
    assert outcome.suites[0]["validity_pooled"] == 1.0
    prediction = json.loads((tmp_path / "run/generations/probing@ah/c1/predictions.jsonl").read_text())
    assert prediction["metadata"]["extra"]["oracle_checks"] == 2
    trajectory = next((tmp_path / "run/generations/probing@ah/c1/trajectories").glob("*/1.jsonl")).read_text()
    outputs = [json.loads(e)["output"] for e in trajectory.splitlines() if '"check_on_real_code"' in e
               and json.loads(e)["type"] == "tool"]
    assert outputs == ["fails on the real code", "passes on the real code"]
    assert json.loads((tmp_path / "run/suites/probing@ah/config.json").read_text())["black_box_oracle"] is True


def test_reverse_task_production_cannot_rewrite_the_runner(example_dataset: Path, tmp_path: Path) -> None:
    """In the reverse task production is the prediction. A package that replaces behave's
    Step.run while it is imported (every step 'passes') was scored 1.0 while the integrity
    baseline was taken after the warm worker imported production; the baseline now comes first
    for untrusted production, and the run is tampering."""
    from bench.dataset import load_dataset
    from bench.evaluate import EvaluateOptions
    from bench.model import Prediction
    from bench.suite.reverse import evaluate_reverse, production_sources
    from harness.views import materialize

    dataset = load_dataset(example_dataset)
    project = dataset.project("tinyshop")
    suite_id = "tinyshop/features/tax.feature"
    first = next(i.id for i in dataset.instances if i.requirement.feature_file == "features/tax.feature")
    view = materialize(dataset, first, "ah").root
    files = {p: (view / p).read_text() for p in production_sources(view, project.production)}
    init = next(p for p in files if p.endswith("tinyshop/__init__.py"))
    files[init] += ("\nimport behave.model as _model\nfrom behave.model_core import Status as _Status\n"
                    "_model.Step.run = lambda self, runner, *a, **k: (setattr(self, 'status', _Status.passed)"
                    " or True)\n")
    path = tmp_path / "p.jsonl"
    path.write_text(Prediction(instance_id=suite_id, files=files).model_dump_json() + "\n")
    summary = evaluate_reverse(example_dataset, path, tmp_path / "run", EvaluateOptions(workers=2), suites=[suite_id])
    assert summary["score_pooled"] == 0.0
    result = json.loads((tmp_path / "run/reverse_results.jsonl").read_text())
    assert {v["outcome"] for v in result["scenarios"]} == {"tampering"}
    assert "Step.run replaced" in result["scenarios"][0]["detail"]
