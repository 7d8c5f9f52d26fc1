"""``req2test provider serve``: run the scripted model provider in the foreground."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from bench.cli import fail
from bench.console import out
from harness.provider.script import ScriptLoadError, load_script
from harness.provider.server import ScriptedProvider


def provider_serve(
    script: Annotated[Path, typer.Option("--script", help="The script to play: a YAML or JSON file of turns.")],
    port: Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one.", min=0, max=65535)] = 8765,
    host: Annotated[str, typer.Option(help="Address to bind; keep the loopback default unless a container "
                                           "must reach it.")] = "127.0.0.1",
    log: Annotated[Path | None, typer.Option(help="Append every request as a JSON line to this file.")] = None,
) -> None:
    """Serve a scripted model provider (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages).

    Each request is answered by the next scripted turn (text, tool calls, usage, cost, or an HTTP
    error) whose `when` regex, if any, matches the prompt; when the script runs out the answer is
    "(script exhausted)" unless the script loops. Any API key is accepted. Serves until Ctrl-C.

    Script (YAML or JSON; see harness.provider.script for every field):

    ```yaml
    model: scripted-1
    turns:
      - text: "Let me look."
        tool_calls: [{name: list_files, arguments: {path: "."}}]
      - error: {status: 429, message: "rate limited", retry_after: 0}
      - text: "Done."
        usage: {input_tokens: 1200, output_tokens: 40, cached_tokens: 0}
        cost: 0.0013
        when: "list_files"
    ```

    Examples:

      req2test provider serve --script demo.yaml --port 8765 --log requests.jsonl

      OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=x my-agent

      ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=x claude -p "fix the bug"

      Codex: a model_provider with base_url "http://127.0.0.1:8765/v1" and wire_api "responses".
    """
    # Ctrl-C must stop the server however it was launched: a parent may hand down SIGINT ignored (Python then
    # never raises KeyboardInterrupt) or blocked; restore both before the server threads start (they inherit).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        provider = ScriptedProvider(load_script(script), port=port, log_path=log, host=host)
        provider.start()
    except ScriptLoadError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    turns = len(provider.script.turns)
    out.print(f"scripted provider: {turns} turn{'s' if turns != 1 else ''} from {script}"
              f"{' (looping)' if provider.script.loop else ''}", highlight=False, soft_wrap=True)
    out.print(f"  OpenAI base URL (chat, responses): {provider.openai_base_url}", highlight=False, soft_wrap=True)
    out.print(f"  Anthropic base URL (messages):     {provider.anthropic_base_url}", highlight=False, soft_wrap=True)
    if log is not None:
        out.print(f"  request log:                       {log}", highlight=False, soft_wrap=True)
    out.print("Ctrl-C to stop.", highlight=False, soft_wrap=True)
    try:
        # The server runs on its own threads; this one only waits for Ctrl-C. It wakes up twice a second:
        # the kernel may deliver SIGINT to a server thread, and a main thread parked in an untimed wait
        # would then never run Python's handler (seen under load in CI).
        idle = threading.Event()
        while not idle.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        provider.stop()
    out.print(f"stopped after {len(provider.requests)} request(s).", highlight=False, soft_wrap=True)
