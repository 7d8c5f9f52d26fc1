"""Scripts for the scripted model provider: the turns it plays, how they load, and which one answers a request.

A script is a YAML or JSON file (or a dict) validated by pydantic. Errors are one line and name the turn by its
0-based index (``turns[2].error.status: ...``) so a CLI can print them without a traceback.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

EXHAUSTED_TEXT = "(script exhausted)"
DEFAULT_MODEL = "scripted-1"


class ScriptLoadError(ValueError):
    """A script that cannot be read or does not validate; the message is one line, fit for ``error: ...``."""


class _Strict(BaseModel):
    # Typos in a hand-written script ("tool_call:") must fail loudly, not be ignored.
    model_config = ConfigDict(extra="forbid")


class TokenUsage(_Strict):
    """Reported token counts; a missing count is estimated at ~4 characters per token.

    ``input_tokens`` is the whole prompt, cached part included (OpenAI's convention); the Anthropic
    rendering reports ``input_tokens - cached_tokens`` plus ``cache_read_input_tokens`` to keep the same total.
    """

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _cached_within_input(self) -> TokenUsage:
        if self.input_tokens is not None and self.cached_tokens > self.input_tokens:
            raise ValueError("cached_tokens cannot exceed input_tokens")
        return self


class ToolCall(_Strict):
    """One function call the assistant makes."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None  # call id; generated (call_…/toolu_…) when absent

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


class ErrorReply(_Strict):
    """An HTTP error instead of an answer (rate limits, outages)."""

    status: int = Field(ge=400, le=599)
    message: str = "scripted error"
    type: str | None = None  # error type in the body; derived from the status when absent
    retry_after: float | None = Field(default=None, ge=0)  # seconds, sent as the retry-after header


class Turn(_Strict):
    """One scripted answer: text and/or tool calls, or an error."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage | None = None
    cost: float | None = Field(default=None, ge=0)  # provider-reported USD cost (OpenRouter-style usage.cost)
    delay: float = Field(default=0.0, ge=0)
    when: str | None = None  # regex searched over the request's prompt text
    error: ErrorReply | None = None

    @field_validator("when")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Turn:
        answered = self.text is not None or bool(self.tool_calls)
        if self.error is not None and (answered or self.usage is not None or self.cost is not None):
            raise ValueError("an error turn cannot also have text, tool_calls, usage or cost")
        if self.error is None and not answered:
            raise ValueError("a turn needs text, tool_calls or error")
        return self

    def matches(self, prompt: str) -> bool:
        return self.when is None or re.search(self.when, prompt) is not None


class Script(_Strict):
    """The whole script: turns played in order (subject to ``when``), optionally looping."""

    model: str | None = None  # echoed in responses; when absent the request's model is echoed
    loop: bool = False
    turns: list[Turn] = Field(min_length=1)


def _format_validation_error(exc: ValidationError) -> str:
    """Pydantic's multi-line report as one line: ``turns[1].error.status: Input should be ...``."""
    parts = []
    for err in exc.errors():
        where = ""
        for item in err["loc"]:
            where += f"[{item}]" if isinstance(item, int) else (f".{item}" if where else str(item))
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def parse_script(data: Any, source: str = "script") -> Script:
    """Validate already-parsed data (a dict) into a Script."""
    if not isinstance(data, dict):
        raise ScriptLoadError(f"{source}: expected a mapping with 'turns', got {type(data).__name__}")
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        raise ScriptLoadError(f"{source}: {_format_validation_error(exc)}") from None


def load_script(source: Script | Path | str | dict[str, Any]) -> Script:
    """A Script from a model, a dict, or a YAML/JSON file path (``.json`` is parsed as JSON, anything else as YAML)."""
    if isinstance(source, Script):
        return source
    if isinstance(source, dict):
        return parse_script(source)
    path = Path(source)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptLoadError(f"{path}: no such script file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptLoadError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except json.JSONDecodeError as exc:
        raise ScriptLoadError(f"{path}: invalid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScriptLoadError(f"{path}: invalid YAML{where}: {problem}") from None
    return parse_script(data, str(path))


class TurnPicker:
    """Chooses the turn answering each request: the first unused turn whose ``when`` is absent or matches.

    Answered turns (errors too) are consumed. When no turn is eligible a looping script starts over (every turn
    unused again) and tries once more; otherwise ``pick`` returns None and the caller answers EXHAUSTED_TEXT.
    Thread-safe because the server answers requests on several threads.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self._used = [False] * len(script.turns)
        self._lock = threading.Lock()

    def _first_eligible(self, prompt: str) -> int | None:
        for index, turn in enumerate(self.script.turns):
            if not self._used[index] and turn.matches(prompt):
                return index
        return None

    def pick(self, prompt: str) -> tuple[int, Turn] | None:
        with self._lock:
            index = self._first_eligible(prompt)
            if index is None and self.script.loop:
                self._used = [False] * len(self.script.turns)
                index = self._first_eligible(prompt)
            if index is None:
                return None
            self._used[index] = True
            return index, self.script.turns[index]

    @property
    def remaining(self) -> int:
        with self._lock:
            return self._used.count(False)
