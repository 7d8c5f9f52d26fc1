"""The external agents end to end: installed on demand, run headless in the bwrap sandbox
against the scripted provider through ``harness.generate``, their test collected from the
workspace diff, their model calls in the ledger, and every call that was not to the
provider (telemetry, update checks, price maps) refused by the egress proxy.

Large downloads (each agent 380–640 MB on disk), hence the ``agents`` marker: ``-m agents``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.dataset import load_dataset
from bench.isolation import bwrap_path
from harness.agents.base import AgentEnv, AgentTask, Trajectory
from harness.agents.builtin import task_messages
from harness.agents.external import EXTERNAL_AGENTS, CodexAgent, sandbox_policy_for, task_prompt
from harness.agents.installers import (
    SPECS,
    AgentNotInstalled,
    UnsupportedAgentVersion,
    install_agent,
    installed_agent,
    version_supported,
)
from harness.generate import GenerateOptions, generate
from harness.llm import Limits, Model, ModelConfig
from harness.provider import ScriptedProvider, prompt_text
from harness.sandbox.base import SandboxPolicy
from harness.sandbox.instance import open_instance_sandbox

pytestmark = [pytest.mark.integration, pytest.mark.agents,
              pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")]

STEP_FILE = "features/steps/agent_steps.py"
STEP_TEXT = "from behave import given\n\n\n@given('the agent wrote this')\ndef step_agent(context):\n    pass\n"
USAGE = {"input_tokens": 1500, "output_tokens": 60, "cached_tokens": 0}


def _aider_script() -> dict[str, Any]:
    # aider's default edit format for a model it does not know is "whole": a path, then the file
    answer = f"I will add the steps.\n\n{STEP_FILE}\n```python\n{STEP_TEXT}```\n"
    return {"model": "scripted-1", "turns": [{"text": answer, "usage": USAGE, "cost": 0.0021}]}


def _claude_script() -> dict[str, Any]:
    # Claude Code's own tool vocabulary: Write(file_path, content) with an absolute path
    write = {"name": "Write", "arguments": {"file_path": f"/workspace/{STEP_FILE}", "content": STEP_TEXT}}
    return {"model": "claude-scripted", "turns": [
        {"tool_calls": [write], "usage": USAGE, "cost": 0.0021},
        {"text": "The step file is written.", "usage": {"input_tokens": 1700, "output_tokens": 8}}]}


def _codex_script() -> dict[str, Any]:
    # Codex's own vocabulary: its shell tool (exec_command) running apply_patch, which Codex
    # intercepts and applies itself (models without Codex metadata get no separate apply_patch tool)
    added = "".join(f"+{line}\n" for line in STEP_TEXT.splitlines())
    patch = f"*** Begin Patch\n*** Add File: {STEP_FILE}\n{added}*** End Patch"
    call = {"name": "exec_command", "arguments": {"cmd": f"apply_patch <<'PATCH'\n{patch}\nPATCH\n"}}
    return {"model": "scripted-1", "turns": [
        {"tool_calls": [call], "usage": USAGE, "cost": 0.0021},
        {"text": "The step file is written.", "usage": {"input_tokens": 1700, "output_tokens": 8}}]}


def _openhands_script() -> dict[str, Any]:
    # OpenHands' own tools: terminal (file_editor does not create parent directories), file_editor, finish
    mkdir = {"name": "terminal", "arguments": {"command": "mkdir -p /workspace/features/steps"}}
    create = {"name": "file_editor", "arguments": {"command": "create", "path": f"/workspace/{STEP_FILE}",
                                                   "file_text": STEP_TEXT}}
    finish = {"name": "finish", "arguments": {"message": "The step file is written."}}
    return {"model": "scripted-1", "turns": [
        {"tool_calls": [mkdir], "usage": {"input_tokens": 1400, "output_tokens": 20}},
        {"tool_calls": [create], "usage": USAGE, "cost": 0.0021},
        {"tool_calls": [finish], "usage": {"input_tokens": 1700, "output_tokens": 8}}]}


SCRIPTS = {"aider": _aider_script, "claude-code": _claude_script, "codex": _codex_script,
           "openhands": _openhands_script}
MODELS = {"aider": ("openai/scripted-1", "openai"), "claude-code": ("anthropic/claude-scripted", "anthropic"),
          "codex": ("openai/scripted-1", "openai"), "openhands": ("openai/scripted-1", "openai")}


def _policy_file(tmp_path: Path, port: int, agent: object) -> Path:
    """A provider-only bwrap policy with the agent's read-only binds, as a TOML file for generate."""
    policy = sandbox_policy_for(agent, SandboxPolicy(name="agent-test", wall_clock_seconds=900, pids_limit=512,
                                                     egress_allow=[f"127.0.0.1:{port}"]))
    fields = policy.model_dump(include={"name", "backend", "wall_clock_seconds", "pids_limit", "egress_allow",
                                        "readonly_binds"})
    path = tmp_path / "agent-sandbox.toml"
    path.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in fields.items()), encoding="utf-8")
    return path


def _script_totals(script: dict[str, Any]) -> tuple[int, int]:
    usages = [turn.get("usage") or {} for turn in script["turns"]]
    return sum(u["input_tokens"] for u in usages), sum(u["output_tokens"] for u in usages)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_agent_writes_a_step_file_through_the_provider_only(name: str, example_dataset: Path, tmp_path: Path) -> None:
    install = installed_agent(name) or install_agent(name)  # the download happens here, once
    agent_class = EXTERNAL_AGENTS[name]
    instance_id = load_dataset(example_dataset).instances[0].id
    model, api = MODELS[name]
    script = SCRIPTS[name]()
    with ScriptedProvider(script, log_path=tmp_path / "provider.jsonl") as provider:
        base = provider.anthropic_base_url if api == "anthropic" else provider.openai_base_url
        options = GenerateOptions(
            agent=name, instances=[instance_id],
            model=ModelConfig(model=model, api_base=base, api_key="sk-scripted"),
            sandbox=str(_policy_file(tmp_path, provider.port, agent_class())),
            limits=Limits(max_calls=20, max_seconds=600))
        records = generate(example_dataset, tmp_path / "run", options)
        provider_calls = [r for r in provider.requests if r.api in ("chat", "responses", "messages")]
    trajectory = (tmp_path / "run" / "trajectories").rglob("*.jsonl")
    events = [json.loads(line) for path in trajectory for line in path.read_text().splitlines()]
    end = next(e for e in events if e["type"] == "end")
    assert records[0].end_reason == "finished", (end, [e for e in events if e["type"] == "agent_output"])

    # the test the harness collected from the workspace diff, and nothing else of the agent's
    prediction = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert prediction["files"] == {STEP_FILE: STEP_TEXT}
    assert prediction["metadata"]["agent"] == name
    assert prediction["metadata"]["extra"]["discarded"] == {}

    # the agent got the built-in agent's prompt: system and user message, word for word
    start = next(e for e in events if e["type"] == "agent_start")
    assert start["version"] == install.version
    sent = [e["content"].strip() for e in events if e["type"] == "message" and e["role"] in ("system", "user")]
    assert len(sent) == 2 and "The scenario to implement is" in sent[1]
    assert any(all(text in prompt_text(r.body) for text in sent) for r in provider_calls)

    # its model calls, as it reported them, in the run's ledger
    ledger = [json.loads(line) for line in (tmp_path / "run" / "ledger.jsonl").read_text().splitlines()]
    assert len(ledger) == len(provider_calls) == len(script["turns"])
    assert all(r["instance_id"] == instance_id for r in ledger)
    assert (sum(r["input_tokens"] for r in ledger), sum(r["output_tokens"] for r in ledger)) == _script_totals(script)
    assert prediction["metadata"]["llm_calls"] == len(ledger)
    if name == "claude-code":  # the only one that prices a model it does not know (at its default rates)
        assert ledger[-1]["cost_source"] == "price_table" and ledger[-1]["cost_usd"] > 0

    # egress: provider calls allowed; anything else (telemetry, update checks) refused
    egress = prediction["metadata"]["extra"]["sandbox"]["egress"]
    provider_target = f"127.0.0.1:{provider.port}"
    assert any(e["allowed"] and e["target"] == provider_target for e in egress)
    assert all(e["target"] == provider_target for e in egress if e["allowed"])
    refused = sorted({e["target"] for e in egress if not e["allowed"]})
    print(f"\n{name} {install.version}: {len(ledger)} calls, refused egress: {refused or 'none attempted'}")


def _fake_codex(prefix: Path, version: str) -> Path:
    """An npm prefix that looks like an installed Codex (no download)."""
    package = prefix / "node_modules" / "@openai" / "codex"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": version}))
    executable = prefix / "node_modules" / ".bin" / "codex"
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\necho fake codex\n")
    executable.chmod(0o755)
    (prefix / ".complete").write_text("fake\n")
    return prefix


def test_missing_or_untested_installs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(AgentNotInstalled) as missing:
        CodexAgent(prefix=tmp_path / "nothing").installation()
    assert "install_agent('codex')" in str(missing.value) and "\n" not in str(missing.value)
    old = _fake_codex(tmp_path / "old", "0.1.0")
    assert installed_agent("codex", old).version == "0.1.0"
    with pytest.raises(UnsupportedAgentVersion) as untested:
        CodexAgent(prefix=old).installation()
    assert "0.1.0" in str(untested.value) and SPECS["codex"].supported in str(untested.value)
    assert CodexAgent().supported_versions == SPECS["codex"].supported
    assert version_supported(SPECS["codex"], SPECS["codex"].tested)


def test_refuses_to_start_without_egress_or_binds(example_dataset: Path, tmp_path: Path) -> None:
    dataset = load_dataset(example_dataset)
    instance = dataset.instances[0]
    agent = CodexAgent(prefix=_fake_codex(tmp_path / "codex", SPECS["codex"].tested))
    model = Model(ModelConfig(model="openai/scripted-1", api_base="http://127.0.0.1:9/v1"))

    def run(policy: SandboxPolicy, work: str) -> str:
        opened = open_instance_sandbox(dataset, instance.id, "th", policy, tmp_path / work)
        try:
            task = AgentTask(instance=instance, view="th", features_dir="features",
                             python_path=opened.env["PYTHONPATH"])
            result = agent.run(task, AgentEnv(opened, model, Trajectory(None)))
        finally:
            opened.sandbox.close()
        assert result.reason == "agent_error"
        return result.detail

    assert "does not allow egress to the provider 127.0.0.1:9" in run(SandboxPolicy(name="offline"), "a")
    unbound = run(SandboxPolicy(name="no-binds", egress_allow=["127.0.0.1:9"]), "b")
    assert "is not visible in the sandbox" in unbound and str(tmp_path / "codex") in unbound
    bound = sandbox_policy_for(agent, SandboxPolicy(name="binds", egress_allow=["127.0.0.1:9"]))
    assert bound.readonly_binds == [str((tmp_path / "codex").resolve())]


def test_prompt_is_the_builtin_agents(example_dataset: Path) -> None:
    dataset = load_dataset(example_dataset)
    task = AgentTask(instance=dataset.instances[0], view="th", features_dir="features", python_path="/workspace/src")
    prompt = task_prompt(task)
    for message in task_messages(task):
        assert str(message["content"]).strip() in prompt
