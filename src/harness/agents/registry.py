"""Agent name → agent, as every pluggable kind (``bench.registry``).

An entry is either a class, made without arguments (the built-in agent, the external
adapters, a user's ``--agent module:Class``, an installed package's agent), or a function
given the dataset directory (the calibration agents, which read the ground truth from it).
Built-ins are imported on first use: naming ``openhands`` does not import the adapters.
A third party adds one as::

    [project.entry-points."req2test.agents"]
    myagent = "mypackage.agent:MyAgent"
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.registry import Registry, UnknownName
from harness.agents.base import Agent

ENTRY_POINT_GROUP = "req2test.agents"

# In the order the CLI has always listed them.
BUILTIN: dict[str, str] = {
    "builtin": "harness.agents.builtin:BuiltinAgent",
    "codex": "harness.agents.external:CodexAgent",
    "claude-code": "harness.agents.external:ClaudeCodeAgent",
    "aider": "harness.agents.external:AiderAgent",
    "openhands": "harness.agents.external:OpenHandsAgent",
    "oracle": "harness.agents.registry:oracle",
    "empty": "harness.agents.registry:empty",
    "then-stripped": "harness.agents.registry:then_stripped",
    "none": "harness.agents.calibration:NoneAgent",
}

# The built-ins that call a model: an experiment arm or a generate request naming one must give it a model.
MODEL_AGENTS = ("builtin", "codex", "claude-code", "aider", "openhands")

AgentEntry = type | Callable[[Path], Agent]


class UnknownAgent(UnknownName, ValueError):
    """No agent of that name, or a ``module:Class`` that does not import; one line."""


REGISTRY: Registry[AgentEntry] = Registry("agent", None, BUILTIN, ENTRY_POINT_GROUP, error=UnknownAgent,
                                          hint="or module:Class")


def make_agent(name: str, dataset_dir: Path) -> Agent:
    """A fresh agent: a registered name, else (with a colon) a user's ``package.module:ClassName``."""
    if name not in REGISTRY and ":" in name:
        # made without arguments, as --agent module:Class always was (AgentEntry's other member, a factory
        # taking the dataset directory, is what the registered names may be)
        return REGISTRY.load_path(name)()  # type: ignore[call-arg]
    entry = REGISTRY.get(name)
    return entry() if isinstance(entry, type) else entry(dataset_dir)


# The calibration agents that write something read it from the dataset.
def oracle(dataset_dir: Path) -> Agent:
    return _calibration("oracle", dataset_dir)


def empty(dataset_dir: Path) -> Agent:
    return _calibration("empty", dataset_dir)


def then_stripped(dataset_dir: Path) -> Agent:
    return _calibration("then-stripped", dataset_dir)


def _calibration(kind: str, dataset_dir: Path) -> Agent:
    from harness.agents.calibration import calibration_agent

    return calibration_agent(kind, dataset_dir)
