"""Generation end to end against the scripted provider on loopback (the real litellm client).

The built-in agent explores the view, writes the developers' test (scripted tool calls),
runs behave and submits; `req2test evaluate` then scores the predictions. Limits end runs
with the right recorded reason; a 429 and a 500 are retried and counted; a generation the
provider keeps interrupting is re-run; a custom agent plugs in through module:Class.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from harness.generate import GenerateError, GenerateOptions, generate
from harness.llm import Limits, ModelConfig
from harness.provider import ScriptedProvider

pytestmark = pytest.mark.integration

INSTANCE = "tinyshop/features/cart.feature:13"
REPO = Path(__file__).resolve().parents[2]


def _oracle_files(dataset: Path, instance_id: str) -> dict[str, str]:
    return next(p.files for p in calibration_predictions(dataset)["oracle"] if p.instance_id == instance_id)


def _model(provider: ScriptedProvider, **kwargs: object) -> ModelConfig:
    return ModelConfig(model="openai/scripted-1", api_base=provider.openai_base_url, api_key="sk-test",
                       backoff_seconds=0.05, **kwargs)


def test_builtin_agent_writes_a_passing_test_with_retries_counted(example_dataset: Path, tmp_path: Path) -> None:
    files = _oracle_files(example_dataset, INSTANCE)
    turns: list[dict] = [
        {"error": {"status": 429, "message": "slow down", "retry_after": 0}},
        {"error": {"status": 500, "message": "upstream hiccup"}},
        {"text": "Let me look at the view.", "tool_calls": [{"name": "list_files", "arguments": {"path": "features"}}],
         "usage": {"input_tokens": 900, "output_tokens": 20, "cached_tokens": 300}, "cost": 0.001},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "features/cart.feature"}}], "cost": 0.001},
    ]
    turns += [{"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": text}}], "cost": 0.002}
              for path, text in sorted(files.items())]
    dry_run = "python -m behave --dry-run -f null features"
    turns += [{"tool_calls": [{"name": "run", "arguments": {"command": dry_run}}]},
              {"text": "Done.", "tool_calls": [{"name": "submit", "arguments": {"summary": "wrote the cart steps"}}]}]
    run_dir = tmp_path / "run"
    with ScriptedProvider({"model": "scripted-1", "turns": turns}) as provider:
        cmd = [sys.executable, "-m", "harness.cli", "generate", str(example_dataset), "-o", str(run_dir),
               "--model", "openai/scripted-1", "--api-base", provider.openai_base_url, "-i", INSTANCE, "-q"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                              env={**__import__("os").environ, "OPENAI_API_KEY": "sk-test"}, check=False)
        assert proc.returncode == 0, proc.stderr
        apis = {r.api for r in provider.requests}
    assert apis == {"chat"}
    prediction = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])
    assert prediction["files"] == files
    meta = prediction["metadata"]
    assert meta["agent"] == "builtin" and meta["extra"]["end_reason"] == "submitted"
    assert meta["llm_calls"] == len(turns) - 2 and meta["extra"]["retries"] == 2
    assert meta["cost_usd"] == pytest.approx(0.002 + 0.002 * len(files)) and meta["extra"]["cost_source"] == "provider"
    assert meta["cached_tokens"] >= 300
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert len(ledger) == meta["llm_calls"] and ledger[0]["retried"][0].startswith("RateLimitError")
    assert ledger[0]["instance_id"] == INSTANCE
    events = [json.loads(line) for line in
              (run_dir / "trajectories" / "tinyshop_features_cart.feature_13" / "1.jsonl").read_text().splitlines()]
    assert [e["name"] for e in events if e["type"] == "tool"][:2] == ["list_files", "read_file"]
    assert events[-1] == {**events[-1], "type": "end", "reason": "submitted"}
    summary = evaluate(example_dataset, run_dir / "predictions.jsonl", tmp_path / "eval",
                       EvaluateOptions(workers=1, resamples=100, instances=[INSTANCE]))
    assert summary["outcomes"]["pass"] == 1 and summary["kill_complete_at_1"]["value"] == 1.0


@pytest.mark.parametrize(("reason", "turn", "limits"), [
    ("max_calls", {"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]}, Limits(max_calls=3)),
    ("wall_clock", {"delay": 0.7, "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
     Limits(max_seconds=1.0)),
    ("max_cost", {"cost": 1.0, "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
     Limits(max_cost_usd=1.5)),
])
def test_limits_end_the_run_with_their_reason(example_dataset: Path, tmp_path: Path, reason: str, turn: dict,
                                              limits: Limits) -> None:
    with ScriptedProvider({"model": "scripted-1", "loop": True, "turns": [turn]}) as provider:
        generate(example_dataset, tmp_path / "run", GenerateOptions(model=_model(provider), limits=limits,
                                                                     instances=[INSTANCE]))
    meta = json.loads((tmp_path / "run" / "predictions.jsonl").read_text())["metadata"]
    assert meta["extra"]["end_reason"] == reason
    if reason == "max_calls":
        assert meta["llm_calls"] == 3
    if reason == "max_cost":
        assert meta["llm_calls"] == 2 and meta["cost_usd"] == 2.0


def test_provider_interruption_reruns_the_generation(example_dataset: Path, tmp_path: Path) -> None:
    errors = [{"error": {"status": 503, "message": "overloaded"}}] * 3
    turns = [*errors, {"tool_calls": [{"name": "submit", "arguments": {}}]}]
    with ScriptedProvider({"model": "scripted-1", "turns": turns}) as provider:
        generate(example_dataset, tmp_path / "run",
                 GenerateOptions(model=_model(provider, retries=2), instances=[INSTANCE]))
    meta = json.loads((tmp_path / "run" / "predictions.jsonl").read_text())["metadata"]
    assert meta["extra"]["attempts"] == 2 and meta["extra"]["end_reason"] == "submitted"
    assert (tmp_path / "run" / "trajectories" / "tinyshop_features_cart.feature_13" / "1.jsonl").is_file()


def test_custom_agent_resume_and_calibration_agents(example_dataset: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "examples" / "custom_agent"))
    files = _oracle_files(example_dataset, INSTANCE)
    steps = next(text for path, text in files.items() if path.endswith("cart_steps.py"))
    turns = [{"text": f"Here it is:\n```python\n{steps}```\n"}]
    with ScriptedProvider({"model": "scripted-1", "turns": turns}) as provider:
        options = GenerateOptions(agent="one_shot_agent:OneShotAgent", model=_model(provider), instances=[INSTANCE])
        generate(example_dataset, tmp_path / "custom", options)
        assert generate(example_dataset, tmp_path / "custom", options) == []  # resumed: nothing redone
    prediction = json.loads((tmp_path / "custom" / "predictions.jsonl").read_text())
    assert prediction["files"] == {"features/steps/generated_steps.py": steps}
    ds = load_dataset(example_dataset)
    some = [inst.id for inst in ds.instances[:2]]
    generate(example_dataset, tmp_path / "none", GenerateOptions(agent="none", instances=some))
    lines = [json.loads(line) for line in (tmp_path / "none" / "predictions.jsonl").read_text().splitlines()]
    assert [line["files"] for line in lines] == [{}, {}]
    with pytest.raises(GenerateError, match="not for submission: agent .oracle. reads the ground truth"):
        generate(example_dataset, tmp_path / "oracle", GenerateOptions(agent="oracle", for_submission=True))
    with pytest.raises(GenerateError, match="needs --model"):
        generate(example_dataset, tmp_path / "nomodel", GenerateOptions(instances=some))


SECOND = "tinyshop/features/cart.feature:19"


@pytest.mark.parametrize(("case", "turn", "message"), [
    ("missing_key", None, "no valid credentials"),
    ("bad_key", {"error": {"status": 401, "message": "Incorrect API key provided: sk-wrong"}}, "no valid credentials"),
    ("unknown_model", {"error": {"status": 404, "message": "The model `gpt-9` does not exist"}}, "unknown model"),
    ("bad_request", {"error": {"status": 400, "message": "Unsupported parameter: 'temperature'"}}, "bad request"),
])
def test_provider_refusals_stop_the_run_at_once_with_one_line(example_dataset: Path, tmp_path: Path, case: str,
                                                              turn: dict | None, message: str) -> None:
    """No retries, no empty prediction recorded as done: one line, exit 2, and a rerun with the
    problem fixed generates the instance."""
    import os
    import time

    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "REQ2TEST_API_BASE")}
    if turn is not None:
        env["OPENAI_API_KEY"] = "sk-wrong"
    turns = [turn] if turn is not None else [{"tool_calls": [{"name": "submit", "arguments": {}}]}]
    with ScriptedProvider({"model": "scripted-1", "loop": True, "turns": turns}) as provider:
        cmd = [sys.executable, "-m", "harness.cli", "generate", str(example_dataset), "-o", str(run_dir),
               "--model", "openai/scripted-1", "--api-base", provider.openai_base_url, "-i", INSTANCE, "-i", SECOND,
               "-q"]
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
        seconds = time.monotonic() - started
        calls, port = len(provider.requests), provider.port
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: the provider refused openai/scripted-1: " + message), lines
    assert calls == (0 if case == "missing_key" else 1)  # never retried, never moved on to the second instance
    assert seconds < 60
    predictions = run_dir / "predictions.jsonl"
    assert not predictions.exists() or predictions.read_text() == ""
    # fixed: the rerun does both instances
    with ScriptedProvider({"model": "scripted-1", "loop": True,
                           "turns": [{"tool_calls": [{"name": "submit", "arguments": {}}]}]}, port=port):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**env, "OPENAI_API_KEY": "sk-ok"},
                              check=False)
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(line)["instance_id"] for line in predictions.read_text().splitlines()) == \
        sorted([INSTANCE, SECOND])


def test_a_rerun_generates_provider_interrupted_instances_again(example_dataset: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outage = {"model": "scripted-1", "loop": True, "turns": [{"error": {"status": 503, "message": "overloaded"}}]}
    with ScriptedProvider(outage) as provider:
        generate(example_dataset, run_dir, GenerateOptions(model=_model(provider, retries=1), instances=[INSTANCE],
                                                           provider_reruns=0))
        port = provider.port
    first = json.loads((run_dir / "predictions.jsonl").read_text())
    assert first["metadata"]["extra"]["end_reason"] == "provider_interrupted"
    with ScriptedProvider({"model": "scripted-1", "turns": [{"tool_calls": [{"name": "submit", "arguments": {}}]}]},
                          port=port) as provider:
        records = generate(example_dataset, run_dir, GenerateOptions(model=_model(provider, retries=1),
                                                                     instances=[INSTANCE], provider_reruns=0))
    assert [r.end_reason for r in records] == ["submitted"]
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["metadata"]["extra"]["end_reason"] == "submitted"
    kept = (run_dir / "predictions.interrupted.jsonl").read_text().splitlines()
    assert [json.loads(line)["instance_id"] for line in kept] == [INSTANCE]  # set aside, not lost
    # the run's evaluation sees one prediction per instance
    summary = evaluate(example_dataset, run_dir / "predictions.jsonl", tmp_path / "eval",
                       EvaluateOptions(workers=1, resamples=100, instances=[INSTANCE]))
    assert summary["submission"]["valid"] == 1


THIRD = "tinyshop/features/catalog.feature:6"
SUBMIT = {"tool_calls": [{"name": "submit", "arguments": {}}]}


def test_sampling_workers_and_retry(example_dataset: Path, tmp_path: Path) -> None:
    """Temperature, seed and max tokens reach the provider; --workers runs generations side by
    side with one journal line each; --retry generates again what ended for that reason."""
    run_dir = tmp_path / "run"
    silent = {"model": "scripted-1", "loop": True, "turns": [{"text": "thinking aloud, no tools"}]}
    with ScriptedProvider(silent) as provider:
        options = GenerateOptions(model=_model(provider, temperature=0.3, seed=7, max_tokens=900),
                                  instances=[INSTANCE, SECOND, THIRD], workers=2)
        records = generate(example_dataset, run_dir, options)
        bodies = [r.body for r in provider.requests]
        port = provider.port
    assert sorted(r.instance_id for r in records) == sorted([INSTANCE, SECOND, THIRD])
    assert {r.end_reason for r in records} == {"no_tool_call"}
    assert all((b["temperature"], b["seed"], b["max_tokens"]) == (0.3, 7, 900) for b in bodies)
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line) for line in lines)
    with ScriptedProvider({"model": "scripted-1", "loop": True, "turns": [SUBMIT]}, port=port) as provider:
        again = generate(example_dataset, run_dir, options.model_copy(update={"retry": ["no_tool_call"]}))
    assert sorted((r.instance_id, r.end_reason) for r in again) == sorted(
        (i, "submitted") for i in (INSTANCE, SECOND, THIRD))
    final = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(final) == 3 and {p["metadata"]["extra"]["end_reason"] for p in final} == {"submitted"}
    assert len((run_dir / "predictions.interrupted.jsonl").read_text().splitlines()) == 3  # kept, not lost
