"""The takeover task end to end on a two-commit history of the example project.

Commit 1 adds the scenario "An unknown region is rejected" tagged @wip (deferred: the python-docx
developers' pattern) while ``TaxTable.rate_for`` raises a bare KeyError; commit 2 resumes it (drops
@wip) and makes it pass. The target at commit 2: the parent's tree for the agent, the commit's
dataset for the judge. Oracle delivery is complete, none delivers nothing new (target 0, regression
kept), a scripted built-in agent (the real openai client against the loopback provider) answers
phase A, and its delivery, made with that frozen answer and the gold post-state in its prompt, is
complete; broken or out-of-bounds deliveries fail the build or the submission check.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.experiment.runner import ExperimentRunner, prepare

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyshop"
FIXED = "        if classes is None:\n            raise UnknownRegionError(region)\n"
BROKEN = "        if classes is None:\n            raise KeyError(region)\n"
SCENARIO = "  Scenario: An unknown region is rejected\n"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQ2TEST_CACHE", str(tmp_path / "cache"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    repo = tmp_path_factory.mktemp("history") / "tinyshop"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tax, feature = repo / "src/tinyshop/tax.py", repo / "features/tax.feature"
    fixed_tax, fixed_feature = tax.read_text(), feature.read_text()
    assert FIXED in fixed_tax and SCENARIO in fixed_feature
    tax.write_text(fixed_tax.replace(FIXED, BROKEN))
    feature.write_text(fixed_feature.replace(SCENARIO, "  @wip\n" + SCENARIO))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "shop: initial\n\nUnknown regions are still a KeyError (see @wip).")
    first = _git(repo, "rev-parse", "HEAD")
    tax.write_text(fixed_tax)
    feature.write_text(fixed_feature)
    _git(repo, "commit", "-q", "-am", "tax: reject an unknown region with UnknownRegionError")
    return repo, first, _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def takeover_dir(history_repo: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.history.takeover import build_takeover

    repo, first, second = history_repo
    out = tmp_path_factory.mktemp("takeover") / "set"
    card = build_takeover(repo, out, [first[:8], second[:8]], "tinyshop", workers=2)
    assert card.targets == [f"tinyshop@{second[:12]}"]
    # the first commit has no parent; it is listed with the reason, not silently skipped
    assert [d.reason for d in card.dropped] == ["the first commit has no parent"]
    return out


def test_target_records_what_the_commit_delivers(takeover_dir: Path, history_repo: tuple[Path, str, str]) -> None:
    from bench.history.takeover import TakeoverSet

    _, first, second = history_repo
    takeover = TakeoverSet(takeover_dir)
    target = takeover.targets[0]
    gold = takeover.gold(target.id)
    assert (target.commit, target.parent) == (second, first)
    assert target.request == "tax: reject an unknown region with UnknownRegionError"
    request = [s for s in gold.target_scenarios if s not in gold.also_fixed]
    assert len(request) == 1 and request[0].startswith("tinyshop/features/tax.feature:")
    assert gold.relevant_atoms == ["features/tax.feature::An unknown region is rejected"]
    assert gold.affected == {"features/tax.feature::An unknown region is rejected": "resumed"}
    assert gold.evidence_commits == [first]  # the commit that added it deferred
    assert len(gold.regression_scenarios) > 20 and not set(gold.target_scenarios) & set(gold.regression_scenarios)
    assert [s.deferred for s in target.oracle_pre_state] == [True]
    assert [s.deferred for s in target.oracle_post_state] == [False]
    # the agent's workspace is the parent's tree: the bug is there, the @wip tag too
    workspace = takeover.workspace(target)
    assert BROKEN in (workspace / "src/tinyshop/tax.py").read_text()
    assert "@wip" in (workspace / "features/tax.feature").read_text()
    assert [e.sha for e in takeover.visible_history(target, "full")] == [first]
    assert [e.sha for e in takeover.visible_history(target, "relevant")] == [first]


def test_broken_and_out_of_bounds_deliveries(takeover_dir: Path) -> None:
    from bench.evaluate import EvaluateOptions
    from bench.history.delivery import judge_delivery
    from bench.history.takeover import TakeoverSet
    from bench.model import Prediction
    from bench.suite.reverse import production_sources

    takeover = TakeoverSet(takeover_dir)
    target = takeover.targets[0]
    workspace = takeover.workspace(target)
    parent = {p: (workspace / p).read_text() for p in production_sources(workspace, target.production)}
    options = EvaluateOptions(workers=2, mutants=False)
    broken = {**parent, "src/tinyshop/tax.py": parent["src/tinyshop/tax.py"].replace(BROKEN, FIXED) + "\ndef (:\n"}
    result = judge_delivery(takeover, target, Prediction(instance_id=target.id, files=broken), None, options,
                            regression_sample=3)
    assert not result.build and "tax.py" in result.build_detail and not result.complete
    assert not result.target_ok  # the module does not import either
    outside = {**parent, "features/steps/tax_steps.py": "raise SystemExit\n"}
    result = judge_delivery(takeover, target, Prediction(instance_id=target.id, files=outside), None, options)
    assert result.detail.startswith("invalid submission") and not result.complete and result.regression == []


def test_takeover_run_end_to_end(takeover_dir: Path, tmp_path: Path) -> None:
    from bench.history.takeover import TakeoverSet

    takeover = TakeoverSet(takeover_dir)
    target = takeover.targets[0]
    fixed = (takeover.workspace(target) / "src/tinyshop/tax.py").read_text().replace(BROKEN, FIXED)
    answer = {"relevant_atoms": ["features/tax.feature::An unknown region is rejected"],
              "evidence_commits": [target.parent[:10]], "decision": "act",
              "pre_state": [], "post_state": [{"atom": "features/tax.feature::An unknown region is rejected",
                                                "scenario": "An unknown region is rejected",
                                                "steps": ['When I ask for the "standard" rate in "MARS"']}]}
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"turns": [
        {"when": "Requirement state before and after", "cost": 0.01, "text": "Here it is:\n" + json.dumps(answer)},
        {"when": re.escape("# Takeover"), "cost": 0.02,
         "tool_calls": [{"name": "write_file", "arguments": {"path": "src/tinyshop/tax.py", "content": fixed}}]},
        {"when": "wrote src/tinyshop/tax.py", "tool_calls": [{"name": "submit", "arguments": {}}]}]}))
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "takeover", "dataset": str(takeover_dir), "mode": "takeover", "evaluation": {"workers": 2},
        "provider": {"script": str(script)},
        "arms": [{"name": "oracle", "agent": "oracle", "two_phase": True},
                 {"name": "none", "agent": "none", "two_phase": True},
                 {"name": "scripted", "agent": "builtin", "model": "openai/scripted", "two_phase": True,
                  "history": "relevant", "oracle_state": "post"}]}))
    experiment, plan, dataset = prepare(path)
    outcome = ExperimentRunner(experiment, plan, dataset, tmp_path / "run").run(path.read_text())
    summaries = {s["config"]: s for s in outcome.suites}
    oracle, none, scripted = summaries["oracle"], summaries["none"], summaries["scripted"]
    assert (oracle["build_rate"], oracle["target_rate"], oracle["regression_rate"], oracle["complete_rate"]) == \
        (1.0, 1.0, 1.0, 1.0)
    assert oracle["phase_a"]["relevant_f1"] == 1.0 and oracle["phase_a"]["evidence_f1"] == 1.0
    assert oracle["phase_a"]["attribute_reconstruction"] == 1.0 and oracle["phase_a"]["post_state"] == 1.0
    assert (none["build_rate"], none["target_rate"], none["regression_rate"], none["complete_rate"]) == \
        (1.0, 0.0, 1.0, 0.0)
    assert none["phase_a"]["relevant_f1"] == 0.0 and none["phase_a"]["post_state"] == 0.0
    assert none["phase_a"]["decision_accuracy"] == 0.0  # no answer is no decision
    assert scripted["complete_rate"] == 1.0 and scripted["cost_usd"] == pytest.approx(0.03)  # both phases
    assert scripted["phase_a"]["cost_usd"] == pytest.approx(0.01) and scripted["phase_a"]["llm_calls"] == 1
    phase_a = scripted["phase_a"]
    assert phase_a["relevant_f1"] == 1.0 and phase_a["evidence_f1"] == 1.0  # a 10-character sha prefix resolves
    assert phase_a["attribute_reconstruction"] == 0.0  # it stated no pre-state
    assert 0.0 < phase_a["post_state"] < 1.0 and phase_a["exact_post_state"] == 0.0
    arm = tmp_path / "run/takeover/scripted"
    frozen = json.loads((arm / "phase_a.json").read_text())
    assert frozen["sha256"] == hashlib.sha256((arm / "answers.jsonl").read_bytes()).hexdigest()
    requests = (tmp_path / "run/provider-requests.jsonl").read_text()
    assert "Your requirement answer (phase A, frozen)" in requests  # delivery saw its frozen answer
    assert "the complete target: implement it" in requests  # and the gold post-state (oracle_state: post)
    delivered = json.loads((arm / "predictions.jsonl").read_text().splitlines()[0])["files"]
    assert delivered["src/tinyshop/tax.py"] == fixed and len(delivered) > 5  # the whole production tree
    assert "takeover mode" in (tmp_path / "run/report.md").read_text()
