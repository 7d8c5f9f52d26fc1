"""Model access: one thin layer over litellm, with retries, a ledger and per-generation limits.

Any ``provider/model`` string litellm knows; base URL and key from the arguments or the
environment. Transient provider trouble — rate limits, 5xx, timeouts, dropped connections —
is retried with exponential backoff (honouring ``retry-after``); when retries run out the
generation is *interrupted by the provider* (``ProviderInterrupted``) and the caller re-runs
it, which is the only reason a generation is ever re-run. Every call, retried or not, goes
into the ledger: latency, input/output/cached tokens, and money — the provider's own figure
when it reports one, litellm's price table otherwise, and which of the two.

litellm downloads its price map at import unless told not to: we set
``LITELLM_LOCAL_MODEL_COST_MAP`` before importing it, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Literal

import tenacity
from pydantic import BaseModel, Field

from bench import stopping

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

CostSource = Literal["provider", "price_table", "unknown"]


class ModelConfig(BaseModel):
    model: str = Field(description="litellm model string, e.g. openai/gpt-5-mini or anthropic/claude-sonnet-4-5")
    api_base: str | None = None
    api_key: str | None = Field(None, description="default: the provider's usual environment variable")
    reasoning_effort: str | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout: float = 600.0
    retries: int = Field(6, ge=0, description="attempts after the first on transient errors")
    backoff_seconds: float = Field(2.0, gt=0, description="first wait; doubles each retry (capped at 60 s)")


class Limits(BaseModel):
    max_calls: int = Field(200, gt=0)
    max_seconds: float = Field(3600.0, gt=0)
    max_cost_usd: float | None = Field(None, gt=0)


class CallRecord(BaseModel):
    index: int
    started: float
    latency_seconds: float
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    cost_source: CostSource = "unknown"
    attempts: int = 1
    retried: list[str] = Field(default_factory=list, description="the transient errors that were retried")
    error: str | None = None


class LimitReached(Exception):
    def __init__(self, reason: Literal["max_calls", "wall_clock", "max_cost"], detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class ProviderInterrupted(Exception):
    """Transient provider errors outlasted the retries: re-run the generation."""


class ProviderRefused(Exception):
    """The provider refuses every call of this configuration (no or bad credentials, unknown
    model, a request it rejects): retrying or moving to the next instance cannot help, so the
    run stops with this one line and writes no prediction for the instance."""



class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


class ModelReply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    record: CallRecord


class Ledger:
    """Every model call of a generation (thread-safe), optionally appended to a JSONL file."""

    def __init__(self, path: Path | None = None, tags: dict[str, Any] | None = None) -> None:
        self.path = path
        self.tags = tags or {}  # written with every line (e.g. the instance and attempt of a run's ledger)
        self.records: list[CallRecord] = []
        self._lock = threading.Lock()

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({**self.tags, **record.model_dump()}) + "\n")

    @property
    def calls(self) -> int:
        return len(self.records)

    @property
    def cost_usd(self) -> float:
        return round(sum(r.cost_usd or 0.0 for r in self.records), 8)

    def totals(self) -> dict[str, Any]:
        sources = {r.cost_source for r in self.records if r.cost_usd is not None}
        return {"calls": self.calls, "input_tokens": sum(r.input_tokens for r in self.records),
                "output_tokens": sum(r.output_tokens for r in self.records),
                "cached_tokens": sum(r.cached_tokens for r in self.records), "cost_usd": self.cost_usd,
                "cost_source": "+".join(sorted(sources)) or "unknown",
                "retries": sum(len(r.retried) for r in self.records)}


def _litellm() -> Any:
    """litellm, imported on first use (it costs ~1 s) and told not to print its feedback banner (ANSI
    colours on stdout) beside our one-line errors."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# litellm reports a missing key as a 500 (OpenAI: "Missing credentials"), an APIConnectionError
# (Gemini) or an AuthenticationError (Anthropic): the message says what it is, whatever the class.
_CREDENTIALS = re.compile(r"missing credentials|api[ _-]?key|no key is set|unauthori[sz]ed|invalid x-api-key|"
                          r"authentication|permission denied|forbidden", re.IGNORECASE)


def refusal(exc: BaseException) -> str | None:
    """One line saying why the provider will refuse every call, or None for any other error.

    A context overflow is a BadRequest too, but it ends one generation, not the run."""
    litellm = _litellm()

    text = " ".join(str(exc).split())
    if isinstance(exc, (litellm.exceptions.ContextWindowExceededError, litellm.exceptions.RateLimitError,
                        litellm.exceptions.Timeout)):
        return None
    if isinstance(exc, (litellm.exceptions.AuthenticationError, litellm.exceptions.PermissionDeniedError)) \
            or _CREDENTIALS.search(text):
        return f"no valid credentials ({_first_words(text)}); set the provider's key variable or pass api_key"
    if isinstance(exc, litellm.exceptions.NotFoundError) or getattr(exc, "status_code", None) == 404:
        return f"unknown model or endpoint ({_first_words(text)})"
    if isinstance(exc, (litellm.exceptions.BadRequestError, litellm.exceptions.UnsupportedParamsError)):
        return f"bad request ({_first_words(text)})"
    return None


def _first_words(text: str, limit: int = 200) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text).removeprefix("litellm.")  # no terminal colours in a line we print
    return text if len(text) <= limit else text[:limit] + "…"


def _is_transient(exc: BaseException) -> bool:
    litellm = _litellm()

    if refusal(exc) is not None:
        return False

    transient = (litellm.exceptions.RateLimitError, litellm.exceptions.InternalServerError,
                 litellm.exceptions.ServiceUnavailableError, litellm.exceptions.APIConnectionError,
                 litellm.exceptions.Timeout, litellm.exceptions.BadGatewayError)
    if isinstance(exc, transient):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class Model:
    """One generation's access to a model: ``complete`` enforces its limits and fills its ledger."""

    def __init__(self, config: ModelConfig, limits: Limits | None = None, ledger: Ledger | None = None) -> None:
        self.config = config
        self.limits = limits or Limits()
        self.ledger = ledger or Ledger()
        self.started = time.monotonic()

    def check_limits(self) -> None:
        if self.ledger.calls >= self.limits.max_calls:
            raise LimitReached("max_calls", f"{self.limits.max_calls} model calls used")
        if time.monotonic() - self.started >= self.limits.max_seconds:
            raise LimitReached("wall_clock", f"{self.limits.max_seconds:g} s wall clock spent")
        if self.limits.max_cost_usd is not None and self.ledger.cost_usd >= self.limits.max_cost_usd:
            raise LimitReached("max_cost", f"${self.ledger.cost_usd:.4f} spent of ${self.limits.max_cost_usd:g}")

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ModelReply:
        litellm = _litellm()

        self.check_limits()
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages, "timeout": self.config.timeout,
                                  "num_retries": 0}
        for key in ("api_base", "api_key", "reasoning_effort", "temperature", "seed", "max_tokens"):
            value = getattr(self.config, key)
            if value is not None:
                kwargs[key] = value
        if tools:
            kwargs["tools"] = tools
        started_wall, started = time.time(), time.monotonic()
        retried: list[str] = []
        attempts = 0

        def call() -> Any:
            nonlocal attempts
            attempts += 1
            stopping.check()  # an interrupted run makes no new call
            return stopping.interruptible(lambda: litellm.completion(**kwargs))

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            seconds = _retry_after(exc) if exc is not None else None
            if seconds is None:
                seconds = min(60.0, self.config.backoff_seconds * 2 ** (state.attempt_number - 1))
            remaining = self.limits.max_seconds - (time.monotonic() - self.started)
            return max(0.0, min(seconds, remaining))

        def note(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            text = str(exc).splitlines()[0][:200] if exc is not None and str(exc) else ""
            retried.append(f"{type(exc).__name__}: {text}")

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(_is_transient),
                                     stop=tenacity.stop_after_attempt(self.config.retries + 1),
                                     wait=wait, before_sleep=note, reraise=True, sleep=stopping.sleep)
        try:
            response = retrying(call)
        except Exception as exc:  # transient ones ran out of retries; others are final
            transient = _is_transient(exc)
            if transient:
                retried.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
            self.ledger.add(CallRecord(index=self.ledger.calls, started=started_wall, model=self.config.model,
                                       latency_seconds=round(time.monotonic() - started, 4), attempts=attempts,
                                       retried=retried, error="retries exhausted" if transient
                                       else f"{type(exc).__name__}: {str(exc)[:300]}"))
            if transient:
                raise ProviderInterrupted(f"{attempts} attempts failed; last: {retried[-1]}") from exc
            if (why := refusal(exc)) is not None:
                raise ProviderRefused(f"the provider refused {self.config.model}: {why}") from exc
            raise
        record = self._record(response, started_wall, time.monotonic() - started, attempts, retried)
        self.ledger.add(record)
        return _reply(response, record)

    def _record(self, response: Any, started: float, latency: float, attempts: int, retried: list[str]) -> CallRecord:
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        if cached is None and usage is not None:
            cached = getattr(usage, "cache_read_input_tokens", None)
        cost, source = _provider_cost(usage), "provider"
        if cost is None:
            cost, source = _price_table_cost(response), "price_table"
        if cost is None:
            source = "unknown"
        return CallRecord(index=self.ledger.calls, started=started, latency_seconds=round(latency, 4),
                          model=self.config.model, input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                          cached_tokens=int(cached or 0), cost_usd=cost, cost_source=source,  # type: ignore[arg-type]
                          attempts=attempts, retried=retried)


def _provider_cost(usage: Any) -> float | None:
    """OpenAI-compatible providers (OpenRouter, our scripted provider) report ``usage.cost``."""
    if usage is None:
        return None
    value = getattr(usage, "cost", None)
    if value is None and hasattr(usage, "model_extra"):
        value = (usage.model_extra or {}).get("cost")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _price_table_cost(response: Any) -> float | None:
    litellm = _litellm()

    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # noqa: BLE001 - an unknown model has no price: "unknown", not an error
        return None
    return float(cost) if cost else None


def _reply(response: Any, record: CallRecord) -> ModelReply:
    choice = response.choices[0]
    message = choice.message
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        raw = call.function.arguments or "{}"
        try:
            arguments = json.loads(raw)
            if not isinstance(arguments, dict):
                arguments = {"value": arguments}
        except ValueError:
            arguments = {"_unparsed": raw}
        calls.append(ToolCall(id=call.id or f"call_{record.index}_{index}", name=call.function.name,
                              arguments=arguments, raw_arguments=raw))
    return ModelReply(content=message.content or "", tool_calls=calls, finish_reason=choice.finish_reason,
                      record=record)
