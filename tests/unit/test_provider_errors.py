"""Which provider errors stop a run (refused), which re-run a generation (interrupted)."""

from __future__ import annotations

import litellm
import pytest

from harness.agents.external import provider_reason
from harness.llm import _is_transient, refusal


@pytest.mark.parametrize(("exc", "expected"), [
    # litellm's own wording of a missing OpenAI key: a 500
    (litellm.exceptions.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`",
                                            llm_provider="openai", model="gpt-x"), "no valid credentials"),
    (litellm.exceptions.AuthenticationError("Missing Anthropic API Key", llm_provider="anthropic", model="c"),
     "no valid credentials"),
    (litellm.exceptions.APIConnectionError("Missing Gemini API key.", llm_provider="gemini", model="g"),
     "no valid credentials"),
    (litellm.exceptions.NotFoundError("model not found", llm_provider="openai", model="gpt-9"), "unknown model"),
    (litellm.exceptions.BadRequestError("Unsupported parameter", llm_provider="openai", model="m"), "bad request"),
])
def test_refusals_are_never_retried(exc: Exception, expected: str) -> None:
    assert refusal(exc).startswith(expected)
    assert not _is_transient(exc)


@pytest.mark.parametrize("exc", [
    litellm.exceptions.RateLimitError("Rate limit reached for your API key", llm_provider="openai", model="m"),
    litellm.exceptions.InternalServerError("upstream hiccup", llm_provider="openai", model="m"),
    litellm.exceptions.ServiceUnavailableError("overloaded", llm_provider="openai", model="m"),
])
def test_transient_errors_are_retried_even_when_they_mention_a_key(exc: Exception) -> None:
    assert refusal(exc) is None and _is_transient(exc)


def test_a_context_overflow_ends_one_generation_not_the_run() -> None:
    exc = litellm.exceptions.ContextWindowExceededError("too long", llm_provider="openai", model="m")
    assert refusal(exc) is None and not _is_transient(exc)


@pytest.mark.parametrize(("text", "reason"), [
    ("Error: 401 Unauthorized: Incorrect API key provided", "provider_refused"),
    ("API Error: 404 {\"error\": {\"message\": \"The model `x` does not exist\"}}", "provider_refused"),
    ("stream error: 429 Too Many Requests", "provider_interrupted"),
    ("Error: 529 overloaded", "provider_interrupted"),
    ("Traceback: KeyError 'x'", "agent_error"),
])
def test_external_agents_failure_text(text: str, reason: str) -> None:
    assert provider_reason(text) == reason


def test_a_missing_key_prints_no_litellm_banner() -> None:
    """litellm printed a coloured "Give Feedback / Get Help" banner on stdout beside our one line."""
    import os
    import subprocess
    import sys

    probe = ("from harness.llm import Model, ModelConfig\n"
             "try:\n    Model(ModelConfig(model='openai/gpt-4o-mini')).complete([{'role': 'user', 'content': 'hi'}])\n"
             "except Exception as exc:\n    print('ERROR', exc)\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert "no valid credentials" in done.stdout, done.stdout + done.stderr
    assert "\x1b[" not in done.stdout + done.stderr and "Give Feedback" not in done.stdout + done.stderr
