"""``req2test agents``: install and list the external coding agents (never installed silently)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from bench.cli import fail
from bench.cli_options import json_option, quiet_option
from bench.console import console, out
from harness.agents.installers import SPECS, AgentInstallError, install_agent, installed_agent

agents_app = typer.Typer(help="External coding agents: install on request, list what is installed.",
                         no_args_is_help=True, rich_markup_mode="markdown")


@agents_app.command("list")
def list_agents(
    as_json: Annotated[bool, json_option("every agent: versions tested and supported, and what is installed")]
    = False,
) -> None:
    """Every supported agent, its tested version and what is installed.

    Examples:

      req2test agents list

      req2test agents list --json | jq -r '.[] | select(.installed == null) | .name'
    """
    rows: list[dict[str, Any]] = []
    for name, spec in SPECS.items():
        install = installed_agent(name)
        rows.append({"name": name, "tested": spec.tested, "supported": spec.supported,
                     "installed": {"version": install.version, "prefix": str(install.prefix)} if install else None})
    if as_json:
        out.print_json(json.dumps(rows))
        return
    for row in rows:  # the list is the command's result: stdout
        state = f"installed {row['installed']['version']} at {row['installed']['prefix']}" if row["installed"] \
            else "not installed"
        out.print(f"{row['name']:12s} tested {row['tested']:10s} supported {row['supported']:16s} {state}",
                  highlight=False, markup=False, soft_wrap=True)


@agents_app.command("install")
def install(
    name: Annotated[str, typer.Argument(help=f"One of: {', '.join(SPECS)}.")],
    version: Annotated[str | None, typer.Option(help="Default: the version the adapter was tested with.")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
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
    if quiet:
        return
    console.print(f"{name} {done.version} installed at {done.prefix}"
                  + (f" in {done.seconds:.0f}s ({done.size_mb:.0f} MB)" if done.seconds else ""))
