"""A custom agent in ~40 lines: ask the model once for the whole step file, write it, done.

Run it like any agent (the module must be importable):

    PYTHONPATH=examples/custom_agent req2test generate datasets/tinyshop \
        --agent one_shot_agent:OneShotAgent --model openai/gpt-5-mini -o runs/one-shot

The harness gives ``run`` the task (requirement, interfaces, view, paths) and an env with
the started sandbox, the model (calls through it are limited and land in the ledger) and
the trajectory; it collects the test from the workspace diff afterwards.
"""

from __future__ import annotations

import re

from harness.agents.base import AgentEnv, AgentResult, AgentTask
from harness.agents.builtin import task_messages
from harness.llm import LimitReached, ProviderInterrupted

ASK = ("Answer with the complete step definition module for this scenario in one ```python block; "
       "it will be saved as {path}.")


class OneShotAgent:
    name = "one-shot"

    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        if env.model is None:
            return AgentResult(reason="agent_error", detail="needs --model")
        path = f"{task.features_dir}/steps/generated_steps.py"
        messages = task_messages(task)  # the same prompt the built-in agent gets
        messages.append({"role": "user", "content": ASK.format(path=path)})
        try:
            reply = env.model.complete(messages)
        except LimitReached as exc:
            return AgentResult(reason=exc.reason, detail=str(exc))
        except ProviderInterrupted as exc:
            return AgentResult(reason="provider_interrupted", detail=str(exc))
        env.trajectory.add("message", role="assistant", content=reply.content, call=reply.record.model_dump())
        match = re.search(r"```(?:python)?\n(.*?)```", reply.content, re.S)
        if match is None:
            return AgentResult(reason="no_tool_call", detail="no python block in the answer")
        env.sandbox.write_file(path, match.group(1))
        env.trajectory.add("tool", name="write_file", arguments={"path": path}, output="written")
        return AgentResult(reason="submitted", summary=f"wrote {path}")
