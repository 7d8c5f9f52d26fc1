"""The built-in agent: a small tool-calling loop (after mini-swe-agent's linear history).

The loop and the model calls run outside the sandbox; every tool runs inside it: list,
read, search, write, edit, run a command (time-limited), submit. The run ends when the
agent submits, stops calling tools, or reaches a limit (model calls, wall clock, money),
and the reason is recorded.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from bench.frameworks.protocol import PromptTerms
from bench.frameworks.registry import get_framework
from harness.agents.base import AgentEnv, AgentResult, AgentTask
from harness.llm import LimitReached, ProviderInterrupted, ProviderRefused, ToolCall
from harness.prompts import paragraph, read_prompt_file, render, render_source
from harness.sandbox.base import WORKSPACE

MAX_TOOL_OUTPUT = 10_000  # characters an observation keeps (head and tail)
NUDGE = "Use the tools to work on the test; call `submit` when it is written."


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


def tools_for(terms: PromptTerms) -> list[dict[str, Any]]:
    """The tool definitions, in the framework's words (the run tool's example command)."""
    return [
        _tool("list_files", "List files under a directory of the repository view (hidden files skipped).",
              {"path": {"type": "string"}, "depth": {"type": "integer", "minimum": 1, "maximum": 6}}, ["path"]),
        _tool("read_file", "Read a file with line numbers (optionally a line range).",
              {"path": {"type": "string"}, "start_line": {"type": "integer"}, "end_line": {"type": "integer"}}, ["path"]),
        _tool("search", "grep -rn with an extended regular expression, optionally limited to a file glob.",
              {"pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}}, ["pattern"]),
        _tool("write_file", "Create or overwrite a file under the workspace.",
              {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
        _tool("edit_file", "Replace exactly one occurrence of `old` by `new` in a file.",
              {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}, ["path", "old", "new"]),
        _tool("run", f"Run a shell command in the workspace (time-limited; e.g. {terms.run_example}).",
              {"command": {"type": "string"}, "timeout": {"type": "integer", "minimum": 1, "maximum": 600}}, ["command"]),
        _tool("submit", "Finish: the test implementation is written.", {"summary": {"type": "string"}}, []),
    ]


# the tools' names are every framework's (their descriptions use the framework's terms)
TOOL_NAMES = tuple(t["function"]["name"] for t in tools_for(PromptTerms(
    runner="", language="", step_definitions="", hooks_file="", code_fence="", run_example="")))
ORACLE_TOOL = _tool("check_on_real_code", "Run your current step definitions for the scenario at this line of the "
                    "feature file against the real (complete) implementation; the answer is only whether it passes.",
                    {"line": {"type": "integer", "minimum": 1}}, ["line"])  # the default framework's


def truncate(text: str, limit: int = MAX_TOOL_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[-limit // 3:]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"


def task_messages(task: AgentTask) -> list[dict[str, Any]]:
    terms = get_framework(task.framework).prompt_terms()
    system = render("system.md.j2", workspace=WORKSPACE, terms=terms)
    if task.takeover is not None:
        return [{"role": "system", "content": system},
                {"role": "user", "content": render("takeover.md.j2", task=task.takeover)}]
    implementing = task.suite is not None and task.suite.kind == "implementation"
    variables: dict[str, Any] = {
        "requirement": task.instance.requirement, "interfaces": task.instance.target_interfaces,
        "view": task.view, "features_dir": task.features_dir, "python_path": task.python_path,
        "paragraphs": [_paragraph(task, entry) for entry in task.paragraphs], "terms": terms,
        "test_dirs": task.test_dirs, "suite": task.suite}
    if task.template:
        source = task.prompt_texts.get(task.template)
        source = source if source is not None else read_prompt_file(Path(task.template), "template")
        user = render_source(source, task.template, **variables)
    else:
        user = render("implement.md.j2" if implementing else "task.md.j2", **variables)
    if task.enriched_requirement:
        user += f"\n# Clarified requirement\n\n{task.enriched_requirement.strip()}\n"
    if task.prerequisite_tests:
        user += "\n# Passing tests of prerequisite requirements (you may reuse them)\n"
        for path, text in sorted(task.prerequisite_tests.items()):
            user += f"\n`{path}`:\n```{terms.code_fence}\n{text}\n```\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _paragraph(task: AgentTask, entry: str) -> str:
    # the text read when the run was planned, when there is one: what the cache key hashed
    return task.prompt_texts[entry].strip() if entry in task.prompt_texts else paragraph(entry)


class BuiltinAgent:
    name = "builtin"

    def __init__(self, command_timeout: float = 120.0) -> None:
        self.command_timeout = command_timeout

    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        if env.model is None:
            return AgentResult(reason="agent_error", detail="the built-in agent needs a model")
        messages = task_messages(task)
        tools = tools_for(get_framework(task.framework).prompt_terms())
        if env.oracle is not None:
            tools = tools + [ORACLE_TOOL]
        for message in messages:
            env.trajectory.add("message", role=message["role"], content=message["content"])
        nudged = False
        while True:
            try:
                reply = env.model.complete(messages, tools)
            except LimitReached as exc:
                env.trajectory.add("end", reason=exc.reason, detail=str(exc))
                return AgentResult(reason=exc.reason, detail=str(exc))
            except ProviderInterrupted as exc:
                env.trajectory.add("end", reason="provider_interrupted", detail=str(exc))
                return AgentResult(reason="provider_interrupted", detail=str(exc))
            except ProviderRefused as exc:
                env.trajectory.add("end", reason="provider_refused", detail=str(exc))
                return AgentResult(reason="provider_refused", detail=str(exc))
            env.trajectory.add("message", role="assistant", content=reply.content,
                               tool_calls=[c.model_dump() for c in reply.tool_calls],
                               call=reply.record.model_dump())
            messages.append({"role": "assistant", "content": reply.content or None,
                             "tool_calls": [{"id": c.id, "type": "function",
                                             "function": {"name": c.name, "arguments": c.raw_arguments or "{}"}}
                                            for c in reply.tool_calls] or None})
            if not reply.tool_calls:
                if nudged:
                    env.trajectory.add("end", reason="no_tool_call")
                    return AgentResult(reason="no_tool_call", detail="the model stopped calling tools",
                                       summary=reply.content)
                nudged = True
                messages.append({"role": "user", "content": NUDGE})
                env.trajectory.add("message", role="user", content=NUDGE)
                continue
            for call in reply.tool_calls:
                output = self.execute(call, task, env)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
                if call.name == "submit":
                    summary = str(call.arguments.get("summary", ""))
                    env.trajectory.add("end", reason="submitted", summary=summary)
                    return AgentResult(reason="submitted", summary=summary)

    def execute(self, call: ToolCall, task: AgentTask, env: AgentEnv) -> str:
        """Run one tool call inside the sandbox; the observation is recorded and returned."""
        import time

        started = time.monotonic()
        try:
            output = self._dispatch(call, task, env)
        except Exception as exc:  # noqa: BLE001 - a bad tool call is an observation for the model
            output = f"error: {type(exc).__name__}: {exc}"
        output = truncate(output)
        env.trajectory.add("tool", name=call.name, arguments=call.arguments, output=output,
                           seconds=round(time.monotonic() - started, 3))
        return output

    def _dispatch(self, call: ToolCall, task: AgentTask, env: AgentEnv) -> str:
        args = call.arguments
        sandbox = env.sandbox
        run_env = {"PYTHONPATH": task.python_path}
        if "_unparsed" in args:
            return f"error: the arguments are not valid JSON: {args['_unparsed'][:200]}"
        if call.name == "list_files":
            path, depth = str(args.get("path", ".")), int(args.get("depth", 2))
            result = sandbox.exec(["find", path, "-maxdepth", str(depth), "-not", "-path", "*/.*"], timeout=30)
            return (result.stdout + result.stderr) or "(empty)"
        if call.name == "read_file":
            start = max(1, int(args.get("start_line") or 1))
            end = args.get("end_line")
            program = f'NR>={start}{f" && NR<={int(end)}" if end else ""} {{printf "%6d  %s\\n", NR, $0}}'
            result = sandbox.exec(["awk", program, str(args["path"])], timeout=30)
            return result.stdout if result.exit_code == 0 else f"error: {result.stderr.strip()}"
        if call.name == "search":
            command = ["grep", "-rnIE", "--exclude-dir=.*"]
            if args.get("glob"):
                command.append(f"--include={args['glob']}")
            command += ["--", str(args["pattern"]), str(args.get("path") or ".")]
            result = sandbox.exec(command, timeout=60)
            return result.stdout[:MAX_TOOL_OUTPUT * 2] or "(no matches)"
        if call.name == "write_file":
            sandbox.write_file(str(args["path"]), str(args["content"]))
            return f"wrote {args['path']} ({len(str(args['content']))} characters)"
        if call.name == "edit_file":
            text = sandbox.read_file(str(args["path"]))
            count = text.count(str(args["old"]))
            if count != 1:
                return f"error: `old` occurs {count} times in {args['path']}; it must occur exactly once"
            sandbox.write_file(str(args["path"]), text.replace(str(args["old"]), str(args["new"])))
            return f"edited {args['path']}"
        if call.name == "run":
            timeout = min(float(args.get("timeout") or self.command_timeout), 600.0)
            result = sandbox.exec(["/bin/sh", "-c", str(args["command"])], timeout=timeout, env=run_env)
            if result.refused:
                return f"refused: {result.refused}"
            status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            return f"{status}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
        if call.name == "check_on_real_code" and env.oracle is not None:
            return env.oracle.check(int(args["line"]))
        if call.name == "submit":
            return "submitted"
        names = ", ".join(shlex.quote(name) for name in TOOL_NAMES)
        return f"error: unknown tool {call.name!r}; tools: {names}"
