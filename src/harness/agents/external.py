"""Adapters for external coding agents: Codex CLI, Claude Code, Aider and OpenHands, run headless.

Each adapter runs its agent as ONE command inside the instance's sandbox (bubblewrap: no
network but the allowlisting proxy, the workspace the only writable place), with the same
prompt the built-in agent gets (its system and user messages, joined), pointed at the
configured model provider (``ModelConfig.api_base``, else the provider's public endpoint).
The harness collects the test from the workspace diff afterwards, as for any agent. The
agent's own account of its model calls — tokens, and money when it reports any — goes
into ``env.model.ledger``.

What the sandbox must see: the agent's install prefix (and, for Python agents, the
interpreter the venv was made from) read-only at the same path — ``readonly_binds()`` —
and egress to the provider's ``host:port`` (the policy's ``egress_allow``). Agents are
installed on request only (``harness.agents.installers.install_agent``); a missing or
untested version is a one-line error, never a silent download.

Per run, the agent's HOME, config, prompt and machine-readable output live in
``/workspace/.cache/req2test-agent`` (ignored by the workspace diff, removed afterwards):
each sandbox command gets a fresh /tmp, the local backend must not touch the user's home,
and output files are not cut at the 1 MiB the sandbox keeps of a pipe.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from harness.agents.base import AgentEnv, AgentResult, AgentTask, EndReason
from harness.agents.builtin import task_messages
from harness.agents.installers import SPECS, AgentInstall, require_agent
from harness.llm import CallRecord, CostSource, ModelConfig
from harness.sandbox.base import WORKSPACE, ExecResult, SandboxPolicy

RUN_DIR = ".cache/req2test-agent"  # relative to the workspace; ignored by the diff (".cache")
MAX_OUTPUT_FILE = 64 << 20  # bytes read back of one output file

# Where a provider lives when the model config gives no api_base (litellm prefix → base URL).
DEFAULT_BASES = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
# Key variables by provider prefix, read on the host when the model config gives no key.
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# Provider trouble the harness re-runs a generation for (rate limits, overload, 5xx), as the
# agents word it once their own retries are spent.
_TRANSIENT = re.compile(r"\b(429|50[0-4]|529)\b|rate.?limit|overloaded|too many requests|service unavailable"
                        r"|internal server error|bad gateway", re.IGNORECASE)
# What no retry fixes, as the agents word it: credentials, an unknown model.
_REFUSED = re.compile(r"\b(401|403)\b|invalid.{0,10}api.?key|incorrect api key|missing (api )?key|no api key"
                      r"|missing credentials|unauthori[sz]ed|authentication (error|failed)|permission denied"
                      r"|model\W.{0,60}(not found|does not exist|not available)|unknown model", re.IGNORECASE)


def provider_reason(text: str) -> EndReason:
    """How an agent's failure text ends its generation: refused, interrupted, or its own error."""
    if _REFUSED.search(text):
        return "provider_refused"
    return "provider_interrupted" if _TRANSIENT.search(text) else "agent_error"


def sandbox_policy_for(agent: object, policy: SandboxPolicy) -> SandboxPolicy:
    """``policy`` plus the read-only binds ``agent`` needs (no change for agents without any).

    The runtime already binds the harness's own interpreter and covers its site-packages with
    an empty tmpfs; binding that interpreter again would uncover them, so it is left out.
    """
    binds = getattr(agent, "readonly_binds", None)
    if binds is None:
        return policy
    runtime_base = Path(sys.base_prefix).resolve()
    extra = [str(p) for p in binds() if Path(p).resolve() != runtime_base and str(p) not in policy.readonly_binds]
    return policy.model_copy(update={"readonly_binds": [*policy.readonly_binds, *extra]})


def task_prompt(task: AgentTask) -> str:
    """The built-in agent's prompt as one text: external agents bring their own system prompt."""
    return "\n\n".join(str(m["content"]).strip() for m in task_messages(task)) + "\n"


def split_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-5-mini"`` → ``("openai", "gpt-5-mini")``; no prefix → ``("", model)``."""
    provider, sep, name = model.partition("/")
    return (provider, name) if sep else ("", model)


def host_port(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


class Launch(BaseModel):
    """One agent command: what runs, with which environment and files."""

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict, description="run-dir-relative path → text, written first")
    stdout_file: str | None = Field(None, description="run-dir-relative file the command's stdout goes to")
    stdin_file: str | None = Field(None, description="run-dir-relative file fed to stdin (else /dev/null)")
    collect: list[str] = Field(default_factory=list, description="run-dir-relative globs read back afterwards")


class RunContext(BaseModel):
    """What an adapter knows when it builds its command."""

    task: AgentTask
    install: AgentInstall
    config: ModelConfig
    base_url: str
    api_key: str
    prompt: str
    workspace: str  # the workspace as the agent sees it (/workspace, except on the local backend)
    host_workspace: Path
    run_dir: str  # inside the sandbox
    max_turns: int
    max_cost_usd: float | None = None
    timeout: float


class AgentOutput(BaseModel):
    exec: ExecResult
    stdout: str  # the stdout file when the launch named one, else the pipe
    files: dict[str, str] = Field(default_factory=dict, description="run-dir files after the run")


class ExternalAgent(ABC):
    """Runs an installed agent CLI headless in the sandbox; subclasses say how."""

    name: ClassVar[str]
    provider_kind: ClassVar[str] = "openai"  # which API the agent speaks: "openai" or "anthropic"

    def __init__(self, prefix: Path | None = None, max_turns: int | None = None, timeout: float | None = None,
                 extra_args: list[str] | None = None) -> None:
        self.prefix = prefix
        self.max_turns = max_turns
        self.timeout = timeout
        self.extra_args = list(extra_args or [])
        self._install: AgentInstall | None = None

    # ------------------------------------------------------------------ install
    @property
    def supported_versions(self) -> str:
        """The versions this adapter was tested with (PEP 440 specifier); others are refused."""
        return SPECS[self.name].supported

    def installation(self) -> AgentInstall:
        """The installed agent; AgentNotInstalled / UnsupportedAgentVersion (one line) otherwise."""
        if self._install is None:
            self._install = require_agent(self.name, self.prefix)
        return self._install

    def readonly_binds(self) -> list[Path]:
        """Host paths the sandbox must bind read-only at the same path (prefix, venv interpreter)."""
        return list(self.installation().readonly_binds)

    # ------------------------------------------------------------------ the run
    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        if env.model is None:
            return self._end(env, "agent_error", f"{self.name} needs a model config (--model and its api_base)")
        install = self.installation()
        config, policy = env.model.config, env.sandbox.policy
        provider, _ = split_model(config.model)
        base_url = (config.api_base or DEFAULT_BASES.get(provider or self.provider_kind, "")).rstrip("/")
        if not base_url:
            return self._end(env, "agent_error", f"no api_base for model {config.model!r}")
        target = host_port(base_url)
        if policy.backend != "local" and target not in policy.egress_allow:
            return self._end(env, "agent_error", f"sandbox policy {policy.name!r} does not allow egress to the "
                                                 f"provider {target} (egress_allow={policy.egress_allow})")
        api_key = config.api_key or _host_env(KEY_VARIABLES.get(provider or self.provider_kind, "")) or "unset"
        limits = env.model.limits
        timeout = min(self.timeout or limits.max_seconds, limits.max_seconds)
        # the local backend runs on the host, where the workspace is not at /workspace
        workspace = str(env.sandbox.workspace) if policy.backend == "local" else WORKSPACE
        host_run = env.sandbox.workspace / RUN_DIR
        shutil.rmtree(host_run, ignore_errors=True)
        host_run.mkdir(parents=True)
        inside_run = f"{workspace}/{RUN_DIR}"
        messages = task_messages(task)
        ctx = RunContext(task=task, install=install, config=config, base_url=base_url, api_key=api_key,
                         prompt=task_prompt(task), workspace=workspace, host_workspace=env.sandbox.workspace,
                         run_dir=inside_run, max_turns=self.max_turns or limits.max_calls,
                         max_cost_usd=limits.max_cost_usd, timeout=timeout)
        launch = self.launch(ctx)
        # HOME in the run dir: agents keep config and state there, never in the user's home
        # (local backend) and not lost between the agent's own processes
        launch_env = {"HOME": f"{inside_run}/home", **launch.env}
        (host_run / "home").mkdir()
        (host_run / "prompt.md").write_text(ctx.prompt, encoding="utf-8")
        for rel, text in launch.files.items():
            (host_run / rel).parent.mkdir(parents=True, exist_ok=True)
            (host_run / rel).write_text(text, encoding="utf-8")
        _open_up(host_run)  # the sandbox user may differ from ours (docker: uid 65534)
        for message in messages:
            env.trajectory.add("message", role=message["role"], content=message["content"])
        env.trajectory.add("agent_start", agent=self.name, version=install.version, argv=_shown(launch.argv, ctx),
                           env={k: ("(set)" if "KEY" in k or "TOKEN" in k else v) for k, v in launch_env.items()})
        visible = env.sandbox.exec(["test", "-x", str(launch.argv[0])], timeout=30)
        if visible.exit_code != 0:
            shutil.rmtree(host_run, ignore_errors=True)
            return self._end(env, "agent_error", f"{launch.argv[0]} is not visible in the sandbox: bind "
                                                 f"{', '.join(map(str, self.readonly_binds()))} read-only")
        argv = launch.argv
        if launch.stdout_file or launch.stdin_file:
            # files, not pipes: the prompt is not limited to one argv string, and the output is
            # not cut where the sandbox stops keeping a pipe's bytes
            stdin = f"{inside_run}/{launch.stdin_file}" if launch.stdin_file else "/dev/null"
            stdout = f"{inside_run}/{launch.stdout_file}" if launch.stdout_file else "/dev/stdout"
            argv = ["/bin/sh", "-c", 'i="$1"; o="$2"; shift 2; exec "$@" < "$i" > "$o"', "sh", stdin, stdout, *argv]
        started_wall = time.time()
        result = env.sandbox.exec(argv, timeout=timeout, env=launch_env)
        files: dict[str, str] = {}
        # the agent could have swapped a directory of that path for a link to anywhere on the host:
        # read and remove only the run dir that is still where it was made
        if host_run.resolve() == env.sandbox.workspace.resolve() / RUN_DIR:
            wanted = [*launch.collect, *([launch.stdout_file] if launch.stdout_file else [])]
            files = {str(path.relative_to(host_run)): _read_own_file(path, host_run)
                     for pattern in wanted for path in sorted(host_run.glob(pattern)) if path.is_file()}
            shutil.rmtree(host_run, ignore_errors=True)
        else:
            env.trajectory.add("warning", detail=f"{RUN_DIR} was replaced by a link during the run; not read")
        stdout = files.get(launch.stdout_file, "") if launch.stdout_file else result.stdout
        output = AgentOutput(exec=result, stdout=stdout, files=files)
        env.trajectory.add("agent_output", exit_code=result.exit_code, seconds=result.seconds,
                           timed_out=result.timed_out, refused=result.refused, stdout=stdout[-200_000:],
                           stderr=result.stderr[-20_000:])
        try:
            records = self.usage(output, ctx, started_wall)
        except Exception as exc:  # noqa: BLE001 - unreadable usage must not lose the agent's work
            records = []
            env.trajectory.add("usage_error", detail=f"{type(exc).__name__}: {exc}")
        for record in records:
            record = record.model_copy(update={"index": env.model.ledger.calls})
            env.model.ledger.add(record)
            env.trajectory.add("call", call=record.model_dump())
        if result.refused:
            return self._end(env, "wall_clock", result.refused)
        if result.timed_out:
            return self._end(env, "wall_clock", f"{self.name} ran past {timeout:g} s")
        reason, detail, summary = self.outcome(output)
        return self._end(env, reason, detail, summary)

    @staticmethod
    def _end(env: AgentEnv, reason: EndReason, detail: str = "", summary: str = "") -> AgentResult:
        detail = " ".join(detail.split())[:500]  # one line: agents' errors span screens
        env.trajectory.add("end", reason=reason, detail=detail)
        return AgentResult(reason=reason, detail=detail, summary=summary)

    # ------------------------------------------------------------------ per agent
    @abstractmethod
    def launch(self, ctx: RunContext) -> Launch:
        """The command that runs the agent once, headless, on ``ctx.prompt``."""

    @abstractmethod
    def usage(self, output: AgentOutput, ctx: RunContext, started: float) -> list[CallRecord]:
        """The agent's model calls, from its own output."""

    def outcome(self, output: AgentOutput) -> tuple[EndReason, str, str]:
        """(end reason, detail, summary) from the exit status; agents with richer output refine it."""
        result = output.exec
        if result.exit_code == 0:
            return "finished", "", ""
        return _failure(self.name, result, output.stdout)


def _failure(name: str, result: ExecResult, stdout: str) -> tuple[EndReason, str, str]:
    lines = [line for line in (result.stderr.strip() or stdout.strip()).splitlines() if line.strip()]
    detail = f"{name} exited with {result.exit_code}: {lines[-1][:300] if lines else 'no output'}"
    reason: EndReason = provider_reason("\n".join(lines[-20:]))
    return reason, detail, ""


def _read_own_file(path: Path, run_dir: Path, limit: int = MAX_OUTPUT_FILE) -> str:
    """A file the agent wrote; never through a link it planted (that could point anywhere on the host)."""
    if path.is_symlink() or not path.resolve().is_relative_to(run_dir.resolve()):
        return ""
    with open(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def _host_env(name: str) -> str | None:
    return os.environ.get(name) if name else None


def _open_up(directory: Path) -> None:
    for path in [directory, *directory.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)


def _shown(argv: list[str], ctx: RunContext) -> list[str]:
    """The command for the trajectory: the prompt and the key are recorded elsewhere / not at all."""
    return ["(prompt)" if a == ctx.prompt else "(key)" if a == ctx.api_key else a for a in argv]


def _record(started: float, model: str, input_tokens: int = 0, output_tokens: int = 0, cached_tokens: int = 0,
            cost: float | None = None, source: CostSource = "unknown", latency: float = 0.0,
            error: str | None = None) -> CallRecord:
    return CallRecord(index=0, started=started, latency_seconds=round(latency, 4), model=model,
                      input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached_tokens,
                      cost_usd=cost, cost_source=source if cost is not None else "unknown", error=error)


def _json_lines(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                events.append(value)
    return events


# ====================================================================== Aider
class AiderAgent(ExternalAgent):
    """``aider --message-file`` once; its analytics log (local file only) gives exact tokens per call.

    ``--analytics-disable`` stops sending analytics but aider still writes ``--analytics-log``:
    each ``message_send`` event holds the call's prompt/completion tokens and, when litellm's
    price table knows the model, its cost (that table's figure: ``"price_table"``;
    aider ignores the provider's own ``usage.cost``). ``--no-stream`` makes aider read the
    provider's usage instead of counting tokens itself.
    """

    name = "aider"

    def __init__(self, prefix: Path | None = None, max_turns: int | None = None, timeout: float | None = None,
                 extra_args: list[str] | None = None, edit_format: str | None = None) -> None:
        super().__init__(prefix, max_turns, timeout, extra_args)
        self.edit_format = edit_format  # None: aider's default for the model

    def launch(self, ctx: RunContext) -> Launch:
        provider, _ = split_model(ctx.config.model)
        argv = [str(ctx.install.executable), "--model", ctx.config.model,
                "--message-file", f"{ctx.run_dir}/prompt.md",
                "--yes-always", "--no-auto-commits", "--no-git", "--no-check-update", "--analytics-disable",
                "--analytics-log", f"{ctx.run_dir}/analytics.jsonl", "--no-show-model-warnings", "--no-pretty",
                "--no-stream", "--no-fancy-input", "--no-detect-urls", "--encoding", "utf-8",
                "--input-history-file", f"{ctx.run_dir}/home/.aider.input.history",
                "--chat-history-file", f"{ctx.run_dir}/home/.aider.chat.history.md"]
        env: dict[str, str] = {}
        if provider in ("openai", ""):
            argv += ["--openai-api-base", ctx.base_url, "--openai-api-key", ctx.api_key]
        else:  # litellm reads <PROVIDER>_API_BASE / _API_KEY for the other providers
            env[f"{provider.upper()}_API_BASE"] = ctx.base_url
            env[f"{provider.upper()}_API_KEY"] = ctx.api_key
        if self.edit_format:
            argv += ["--edit-format", self.edit_format]
        argv += self.extra_args
        # aider edits only files in its chat; the scenario's feature file and the environment
        # hooks are context (read-only), step files are new files it creates
        requirement = ctx.task.instance.requirement
        for path in [requirement.feature_file, f"{ctx.task.features_dir}/environment.py"]:
            if (ctx.host_workspace / path).is_file():
                argv += ["--read", f"{ctx.workspace}/{path}"]
        # aider's litellm fetches its price map at import unless told not to
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        return Launch(argv=argv, env=env, collect=["analytics.jsonl"])

    def usage(self, output: AgentOutput, ctx: RunContext, started: float) -> list[CallRecord]:
        records = []
        for event in _json_lines(output.files.get("analytics.jsonl", "")):
            props = event.get("properties") or {}
            if event.get("event") != "message_send":
                continue
            cost = props.get("cost")
            records.append(_record(float(event.get("time") or started), ctx.config.model,
                                   int(props.get("prompt_tokens") or 0), int(props.get("completion_tokens") or 0),
                                   cost=float(cost) if cost else None, source="price_table"))
        if records:
            return records
        # no analytics log (an older aider): the rounded "Tokens: 1.2k sent, 40 received." lines
        return [_record(started, ctx.config.model, _tokens(m.group(1)), _tokens(m.group(2)))
                for m in re.finditer(r"Tokens: ([\d.]+k?) sent.*?, ([\d.]+k?) received\.", output.stdout)]

    def outcome(self, output: AgentOutput) -> tuple[EndReason, str, str]:
        result = output.exec
        events = _json_lines(output.files.get("analytics.jsonl", ""))
        sent = any(e.get("event") == "message_send" for e in events)
        errors = [e for e in events if e.get("event") == "message_send_exception"]
        if result.exit_code == 0 and sent and not errors:
            return "finished", "", ""
        if errors:
            message = str((errors[-1].get("properties") or {}).get("exception", ""))
        elif result.exit_code == 0:
            # aider exits 0 when a provider error outlasts its retries: no call went through
            shown = [line for line in output.stdout.splitlines() if re.search(r"Error\b|error:", line)]
            message = shown[-1] if shown else "no model call succeeded"
        else:
            return _failure(self.name, result, output.stdout)
        reason: EndReason = provider_reason(message)
        return reason, f"aider: {message}", ""


def _tokens(text: str) -> int:
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


# ====================================================================== Claude Code
class ClaudeCodeAgent(ExternalAgent):
    """``claude -p`` (prompt on stdin) with ``--output-format stream-json``.

    Per call: ``message_start`` / ``message_delta`` stream events (``--include-partial-messages``;
    the assistant lines alone carry the output tokens of the first chunk only). Money: Claude
    Code's own ``total_cost_usd`` for the whole run, put on the last call (it reports no
    per-call figure). It refuses ``--dangerously-skip-permissions`` as root unless IS_SANDBOX=1:
    bubblewrap is the boundary here.
    """

    name = "claude-code"
    provider_kind = "anthropic"

    def launch(self, ctx: RunContext) -> Launch:
        provider, model = split_model(ctx.config.model)
        model = model if provider in ("anthropic", "") else ctx.config.model
        argv = [str(ctx.install.executable), "-p", "--output-format", "stream-json", "--verbose",
                "--include-partial-messages", "--max-turns", str(ctx.max_turns), "--dangerously-skip-permissions",
                "--model", model]
        if ctx.max_cost_usd is not None:
            argv += ["--max-budget-usd", f"{ctx.max_cost_usd:g}"]
        argv += self.extra_args
        base = ctx.base_url.removesuffix("/v1")  # the Anthropic client appends /v1/messages itself
        env = {"IS_SANDBOX": "1", "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": ctx.api_key,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        return Launch(argv=argv, env=env, stdin_file="prompt.md", stdout_file="events.jsonl")

    def usage(self, output: AgentOutput, ctx: RunContext, started: float) -> list[CallRecord]:
        events = _json_lines(output.stdout)
        calls: dict[str, dict[str, int]] = {}
        current: dict[str, str] = {}  # per stream (main agent, each subagent): the call in flight
        for event in events:
            inner = event.get("event") if event.get("type") == "stream_event" else None
            if not isinstance(inner, dict):
                continue
            stream = str(event.get("parent_tool_use_id"))
            if inner.get("type") == "message_start":
                message = inner.get("message") or {}
                current[stream] = str(message.get("id") or f"call-{len(calls)}")
                calls[current[stream]] = _anthropic_usage(message.get("usage") or {})
            elif inner.get("type") == "message_delta" and current.get(stream) in calls:
                output_tokens = (inner.get("usage") or {}).get("output_tokens")
                if output_tokens is not None:
                    calls[current[stream]]["output"] = int(output_tokens)
        if not calls:  # no partial messages: the assistant lines (output tokens undercounted)
            for event in events:
                message = event.get("message") or {} if event.get("type") == "assistant" else {}
                if message and message.get("model") != "<synthetic>":  # Claude Code's own error notes
                    calls.setdefault(str(message.get("id")), _anthropic_usage(message.get("usage") or {}))
        model = ctx.config.model
        records = [_record(started, model, u["input"], u["output"], u["cached"]) for u in calls.values()]
        result = _result_event(output.stdout)
        cost = result.get("total_cost_usd") if result else None
        if records and isinstance(cost, (int, float)):
            # Claude Code prices the run from its own table: not a figure the provider reported
            records[-1] = records[-1].model_copy(update={"cost_usd": float(cost), "cost_source": "price_table"})
        return records

    def outcome(self, output: AgentOutput) -> tuple[EndReason, str, str]:
        result = _result_event(output.stdout)
        if result is None:
            return _failure(self.name, output.exec, "")
        subtype, text = str(result.get("subtype", "")), str(result.get("result") or "")
        if subtype == "success" and not result.get("is_error"):
            return "finished", "", text
        said = text or result.get("errors") or ""
        detail = f"claude-code: {said}" if subtype == "success" else f"claude-code: {subtype}: {said}"
        if subtype == "error_max_turns":
            return "max_calls", detail, text
        if subtype == "error_max_budget_usd":
            return "max_cost", detail, text
        status = str(result.get("api_error_status") or "")
        reason: EndReason = provider_reason(f"{status} {text}")
        return reason, detail, text


def _anthropic_usage(usage: dict[str, Any]) -> dict[str, int]:
    # Anthropic counts cached input apart from input_tokens; the ledger counts it inside (OpenAI's way)
    cached = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return {"input": int(usage.get("input_tokens") or 0) + cached + written, "cached": cached,
            "output": int(usage.get("output_tokens") or 0)}


def _result_event(stdout: str) -> dict[str, Any] | None:
    results = [e for e in _json_lines(stdout) if e.get("type") == "result"]
    return results[-1] if results else None


# ====================================================================== Codex
CODEX_PROVIDER = "req2test"  # the model_providers entry the config defines
CODEX_KEY_VARIABLE = "REQ2TEST_CODEX_API_KEY"


class CodexAgent(ExternalAgent):
    """``codex exec --json - < prompt`` with its own ``CODEX_HOME`` (config.toml) per run.

    The provider is a ``model_providers`` entry with the configured base URL and
    ``wire_api = "responses"`` (Codex dropped chat completions). Approval ``never`` and
    sandbox ``danger-full-access``: Codex's own sandbox (landlock/seccomp) is not needed
    inside bubblewrap, which is the boundary. Per call: the session rollout's
    ``token_count`` events (``--json`` gives one total per turn only). Codex reports no money.
    """

    name = "codex"

    def launch(self, ctx: RunContext) -> Launch:
        provider, model = split_model(ctx.config.model)
        model = model if provider in ("openai", "") else ctx.config.model
        lines = [f"model = {json.dumps(model)}", f"model_provider = {json.dumps(CODEX_PROVIDER)}",
                 'approval_policy = "never"', 'sandbox_mode = "danger-full-access"',
                 "check_for_update_on_startup = false"]
        if ctx.config.reasoning_effort:
            lines.append(f"model_reasoning_effort = {json.dumps(ctx.config.reasoning_effort)}")
        lines += ["", "[analytics]", "enabled = false", "",
                  f"[model_providers.{CODEX_PROVIDER}]", f"name = {json.dumps(CODEX_PROVIDER)}",
                  f"base_url = {json.dumps(ctx.base_url)}", f"env_key = {json.dumps(CODEX_KEY_VARIABLE)}",
                  'wire_api = "responses"']
        argv = [str(ctx.install.executable), "exec", "--json", "--skip-git-repo-check", "--cd", ctx.workspace,
                *self.extra_args, "-"]
        env = {"CODEX_HOME": f"{ctx.run_dir}/codex-home", CODEX_KEY_VARIABLE: ctx.api_key}
        return Launch(argv=argv, env=env, files={"codex-home/config.toml": "\n".join(lines) + "\n"},
                      stdin_file="prompt.md", stdout_file="events.jsonl",
                      collect=["codex-home/sessions/**/rollout-*.jsonl"])

    def usage(self, output: AgentOutput, ctx: RunContext, started: float) -> list[CallRecord]:
        model = ctx.config.model
        records, last_total = [], None
        for rel, text in output.files.items():
            if not rel.startswith("codex-home/sessions/"):
                continue
            for event in _json_lines(text):
                payload = event.get("payload") or {}
                info = payload.get("info") if payload.get("type") == "token_count" else None
                if not isinstance(info, dict) or not info.get("last_token_usage"):
                    continue
                total = json.dumps(info.get("total_token_usage"), sort_keys=True)
                if total == last_total:
                    continue  # the same count announced again, not a new call
                last_total = total
                records.append(_openai_record(info["last_token_usage"], model, _timestamp(event, started)))
        if records:
            return records
        # no rollout: one record per turn from --json (several calls each)
        return [_openai_record(e.get("usage") or {}, model, started)
                for e in _json_lines(output.stdout) if e.get("type") == "turn.completed"]

    def outcome(self, output: AgentOutput) -> tuple[EndReason, str, str]:
        events = _json_lines(output.stdout)
        messages = [str((e.get("item") or {}).get("text") or "") for e in events
                    if e.get("type") == "item.completed" and (e.get("item") or {}).get("type") == "agent_message"]
        summary = messages[-1] if messages else ""
        failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
        if output.exec.exit_code == 0 and not failed:
            return "finished", "", summary
        if failed:
            error = failed[-1].get("error") or failed[-1]
            message = str(error.get("message") if isinstance(error, dict) else error)[:400]
            reason: EndReason = provider_reason(message)
            return reason, f"codex: {message}", summary
        return _failure(self.name, output.exec, "")


def _openai_record(usage: dict[str, Any], model: str, started: float) -> CallRecord:
    # OpenAI counts cached input inside input_tokens already
    return _record(started, model, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                   int(usage.get("cached_input_tokens") or 0))


def _timestamp(event: dict[str, Any], default: float) -> float:
    try:
        return datetime.fromisoformat(str(event["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return default


# ====================================================================== OpenHands
# Runs inside the sandbox under the OpenHands venv's Python (>= 3.12), so it imports nothing
# of ours. Every conversation event goes to stdout as a JSON line; the last line is the result
# (status, errors, the finish message, and the conversation stats: tokens, latency and cost
# per call, per LLM usage id).
OPENHANDS_RUNNER = """\
import json, os, sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map download at import

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.context.condenser import default_condenser
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.task_tracker import TaskTrackerTool
from openhands.tools.terminal import TerminalTool

config = json.load(open(sys.argv[1], encoding="utf-8"))
errors, finish = [], []


def emit(record):
    sys.stdout.write(json.dumps(record, default=str) + "\\n")
    sys.stdout.flush()


def on_event(event):
    kind = type(event).__name__
    if kind == "ConversationErrorEvent":
        errors.append({"code": event.code, "detail": event.detail})
    if kind == "ActionEvent" and event.tool_name == "finish" and event.action is not None:
        finish.append(getattr(event.action, "message", ""))
    try:
        dumped = event.model_dump(mode="json")
    except Exception:
        dumped = None
    if len(json.dumps(dumped, default=str)) > 100000:  # a huge observation: its kind is enough
        dumped = None
    emit({"type": "event", "kind": kind, "event": dumped})


llm = LLM(model=config["model"], base_url=config["base_url"], api_key=config["api_key"], usage_id="agent",
          **config["llm"])
# the default preset's tools and condenser, minus the browser (cli mode); the subprocess
# terminal: no tmux server inside the sandbox
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name, params={"terminal_type": "subprocess"}),
                              Tool(name=FileEditorTool.name), Tool(name=TaskTrackerTool.name)],
              system_prompt_kwargs={"cli_mode": True},
              condenser=default_condenser(llm.model_copy(update={"usage_id": "condenser"})))
conversation = Conversation(agent=agent, workspace=config["workspace"], persistence_dir=config["state_dir"],
                            max_iteration_per_run=config["max_iterations"], visualizer=None, callbacks=[on_event])
failure = None
try:
    conversation.send_message(open(config["prompt_file"], encoding="utf-8").read())
    conversation.run()
except Exception as exc:  # the stats are still reported: the calls made so far count
    failure = f"{type(exc).__name__}: {exc}"
status = conversation.state.execution_status
metrics = {usage: m.model_dump(mode="json") for usage, m in conversation.conversation_stats.usage_to_metrics.items()}
emit({"type": "req2test_result", "status": str(getattr(status, "value", status)), "failure": failure,
      "errors": errors, "finish": finish[-1] if finish else "", "metrics": metrics})
sys.exit(1 if failure else 0)
"""


class OpenHandsAgent(ExternalAgent):
    """The OpenHands SDK: ``Conversation(agent, workspace).run()`` by a runner script that the
    OpenHands venv's Python executes inside the sandbox.

    Per call: ``conversation_stats`` (``token_usages``, ``response_latencies``, ``costs``).
    OpenHands prices calls with litellm (or a litellm proxy's cost header); a model litellm
    does not know has no cost. The iteration limit is the run's ``max_calls``.
    """

    name = "openhands"

    def launch(self, ctx: RunContext) -> Launch:
        llm: dict[str, Any] = {"timeout": int(min(ctx.config.timeout, ctx.timeout))}
        if ctx.config.reasoning_effort:
            llm["reasoning_effort"] = ctx.config.reasoning_effort
        if ctx.config.temperature is not None:
            llm["temperature"] = ctx.config.temperature
        if ctx.config.max_tokens is not None:
            llm["max_output_tokens"] = ctx.config.max_tokens
        config = {"model": ctx.config.model, "base_url": ctx.base_url, "api_key": ctx.api_key, "llm": llm,
                  "workspace": ctx.workspace, "state_dir": f"{ctx.run_dir}/openhands-state",
                  "prompt_file": f"{ctx.run_dir}/prompt.md", "max_iterations": ctx.max_turns}
        argv = [str(ctx.install.executable), "-I", f"{ctx.run_dir}/runner.py", f"{ctx.run_dir}/config.json",
                *self.extra_args]
        env = {"OPENHANDS_SUPPRESS_BANNER": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        return Launch(argv=argv, env=env, stdout_file="events.jsonl",
                      files={"runner.py": OPENHANDS_RUNNER, "config.json": json.dumps(config)})

    def usage(self, output: AgentOutput, ctx: RunContext, started: float) -> list[CallRecord]:
        result = _openhands_result(output.stdout)
        records: list[CallRecord] = []
        for metrics in (result or {}).get("metrics", {}).values():
            latencies = {r.get("response_id"): float(r.get("latency") or 0.0)
                         for r in metrics.get("response_latencies") or []}
            usages = metrics.get("token_usages") or []
            costs = [float(c.get("cost") or 0.0) for c in metrics.get("costs") or []]
            # costs are listed only for calls litellm could price: per call when every call has one
            per_call = len(costs) == len(usages)
            for index, usage in enumerate(usages):
                cost = costs[index] if per_call else None
                records.append(_record(started, str(usage.get("model") or ctx.config.model),
                                       int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                                       int(usage.get("cache_read_tokens") or 0), cost, "price_table",
                                       latencies.get(usage.get("response_id"), 0.0)))
            total = float(metrics.get("accumulated_cost") or 0.0)
            if usages and not per_call and total:
                records[-1] = records[-1].model_copy(update={"cost_usd": total, "cost_source": "price_table"})
        return records

    def outcome(self, output: AgentOutput) -> tuple[EndReason, str, str]:
        result = _openhands_result(output.stdout)
        if result is None:
            return _failure(self.name, output.exec, "")
        summary = str(result.get("finish") or "")
        if result.get("status") == "finished" and not result.get("failure"):
            return "finished", "", summary
        errors = result.get("errors") or []
        if any(e.get("code") == "MaxIterationsReached" for e in errors):
            return "max_calls", "openhands: maximum iterations reached", summary
        detail = str(result.get("failure") or (errors[-1] if errors else f"status {result.get('status')}"))[:400]
        reason: EndReason = provider_reason(detail)
        return reason, f"openhands: {detail}", summary


def _openhands_result(stdout: str) -> dict[str, Any] | None:
    results = [e for e in _json_lines(stdout) if e.get("type") == "req2test_result"]
    return results[-1] if results else None


EXTERNAL_AGENTS: dict[str, type[ExternalAgent]] = {
    "aider": AiderAgent,
    "claude-code": ClaudeCodeAgent,
    "codex": CodexAgent,
    "openhands": OpenHandsAgent,
}
