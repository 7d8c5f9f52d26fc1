"""A scripted model provider: a loopback server speaking OpenAI Chat Completions, OpenAI Responses and Anthropic
Messages that plays scripted turns, for tests and demos of agents without a real provider.

The CLI command (``harness.provider.cli.provider_serve``) is not re-exported: it pulls in typer and the bench CLI.
"""

from harness.provider.script import (
    DEFAULT_MODEL,
    EXHAUSTED_TEXT,
    ErrorReply,
    Script,
    ScriptLoadError,
    TokenUsage,
    ToolCall,
    Turn,
    TurnPicker,
    load_script,
    parse_script,
)
from harness.provider.server import RequestLog, ScriptedProvider, estimate_tokens, prompt_text

__all__ = [
    "DEFAULT_MODEL",
    "EXHAUSTED_TEXT",
    "ErrorReply",
    "RequestLog",
    "Script",
    "ScriptLoadError",
    "ScriptedProvider",
    "TokenUsage",
    "ToolCall",
    "Turn",
    "TurnPicker",
    "estimate_tokens",
    "load_script",
    "parse_script",
    "prompt_text",
]
