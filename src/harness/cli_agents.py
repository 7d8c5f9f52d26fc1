"""``req2test agents``: install and list the external coding agents (never installed silently)."""

from __future__ import annotations

from typing import Annotated

import typer

from bench.cli import fail
from bench.console import console
from harness.agents.installers import SPECS, AgentInstallError, install_agent, installed_agent

agents_app = typer.Typer(help="External coding agents: install on request, list what is installed.",
                         no_args_is_help=True, rich_markup_mode="markdown")


@agents_app.command("list")
def list_agents() -> None:
    """Every supported agent, its tested version and what is installed.

    Example:

      req2test agents list
    """
    for name, spec in SPECS.items():
        install = installed_agent(name)
        state = f"installed {install.version} at {install.prefix}" if install else "not installed"
        console.print(f"{name:12s} tested {spec.tested:10s} supported {spec.supported:16s} {state}")


@agents_app.command("install")
def install(
    name: Annotated[str, typer.Argument(help=f"One of: {', '.join(SPECS)}.")],
    version: Annotated[str | None, typer.Option(help="Default: the version the adapter was tested with.")] = None,
) -> None:
    """Install an agent into ~/.cache/req2test/agents/NAME (npm or a virtualenv).

    Examples:

      req2test agents install codex

      req2test agents install openhands
    """
    if name not in SPECS:
        raise fail(f"unknown agent {name!r}: {', '.join(SPECS)}")
    try:
        done = install_agent(name, version=version)
    except AgentInstallError as exc:
        raise fail(str(exc)) from None
    console.print(f"{name} {done.version} installed at {done.prefix}"
                  + (f" in {done.seconds:.0f}s ({done.size_mb:.0f} MB)" if done.seconds else ""))
