"""The scripted model provider, exercised by the real clients: openai, anthropic and litellm."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import typer
from typer.testing import CliRunner

from harness.provider import (
    EXHAUSTED_TEXT,
    RequestLog,
    ScriptedProvider,
    ScriptLoadError,
    load_script,
)
from harness.provider.cli import provider_serve

SRC = Path(__file__).resolve().parents[2] / "src"

OPENAI_TOOLS = [{"type": "function", "function": {
    "name": "list_files", "description": "List files.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
RESPONSES_TOOLS = [{"type": "function", "name": "list_files", "description": "List files.", "strict": False,
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
ANTHROPIC_TOOLS = [{"name": "list_files", "description": "List files.",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
USER = [{"role": "user", "content": "What is in this directory?"}]

TOOL_TURN: dict[str, Any] = {
    "text": "Let me look.",
    "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}],
    "usage": {"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 200},
    "cost": 0.0013,
}
TEXT_TURN: dict[str, Any] = {"text": "There are two files: a.py and b.py, and nothing else worth mentioning."}


def script(*turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"turns": list(turns), **extra}


def openai_client(provider: ScriptedProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.openai_base_url, api_key="any", max_retries=0)


def anthropic_client(provider: ScriptedProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="any", max_retries=0)


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------------

def test_chat_completions_tool_call_usage_and_cost() -> None:
    with ScriptedProvider(script(TOOL_TURN, TEXT_TURN, model="scripted-1")) as provider:
        client = openai_client(provider)
        first = client.chat.completions.create(model="gpt-x", messages=USER, tools=OPENAI_TOOLS)
        second = client.chat.completions.create(model="gpt-x", messages=USER)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look."
    (call,) = choice.message.tool_calls
    assert call.function.name == "list_files" and json.loads(call.function.arguments) == {"path": "."}
    assert first.model == "scripted-1"
    usage = first.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1200, 40, 1240)
    assert usage.prompt_tokens_details.cached_tokens == 200
    assert usage.model_extra["cost"] == pytest.approx(0.0013)
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.tool_calls is None
    assert second.choices[0].message.content == TEXT_TURN["text"]
    assert second.usage.completion_tokens > 1  # estimated at ~len/4


def test_chat_completions_stream_text_and_tool_calls() -> None:
    with ScriptedProvider(script(TOOL_TURN, TEXT_TURN)) as provider:
        client = openai_client(provider)
        with client.chat.completions.stream(model="gpt-x", messages=USER, tools=OPENAI_TOOLS,
                                            stream_options={"include_usage": True}) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        chunks = list(client.chat.completions.create(model="gpt-x", messages=USER, stream=True))
    (call,) = final.choices[0].message.tool_calls
    assert call.function.name == "list_files" and json.loads(call.function.arguments) == {"path": "."}
    assert final.choices[0].finish_reason == "tool_calls" and final.choices[0].message.content == "Let me look."
    assert final.usage.prompt_tokens == 1200 and final.usage.prompt_tokens_details.cached_tokens == 200
    assert final.usage.model_extra["cost"] == pytest.approx(0.0013)
    # Without include_usage: several content deltas, a stop chunk, and no usage chunk.
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == TEXT_TURN["text"]
    assert len(chunks) > 3 and chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


# -- OpenAI Responses ----------------------------------------------------------------------------------------------

def test_responses_non_stream_text_and_function_call() -> None:
    with ScriptedProvider(script(TOOL_TURN, TEXT_TURN)) as provider:
        client = openai_client(provider)
        first = client.responses.create(model="gpt-x", input="What is here?", tools=RESPONSES_TOOLS)
        second = client.responses.create(model="gpt-x", input="Thanks")
    message, call = first.output
    assert message.type == "message" and first.output_text == "Let me look."
    assert call.type == "function_call" and call.name == "list_files" and json.loads(call.arguments) == {"path": "."}
    assert call.call_id.startswith("call_")
    assert first.usage.input_tokens == 1200 and first.usage.input_tokens_details.cached_tokens == 200
    assert first.usage.output_tokens_details.reasoning_tokens == 0 and first.usage.total_tokens == 1240
    assert second.output_text == TEXT_TURN["text"] and second.status == "completed"


def test_responses_stream_events_and_final_response() -> None:
    with ScriptedProvider(script(TOOL_TURN, TEXT_TURN)) as provider:
        client = openai_client(provider)
        with client.responses.stream(model="gpt-x", input="What is here?", tools=RESPONSES_TOOLS) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
        raw = list(client.responses.create(model="gpt-x", input="Thanks", stream=True))
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert {"response.output_text.delta", "response.function_call_arguments.delta",
            "response.function_call_arguments.done", "response.output_item.done"} <= set(kinds)
    call = final.output[1]
    assert call.type == "function_call" and call.name == "list_files" and json.loads(call.arguments) == {"path": "."}
    assert final.output_text == "Let me look." and final.usage.input_tokens_details.cached_tokens == 200
    assert [e.sequence_number for e in raw] == list(range(len(raw)))
    assert raw[-1].type == "response.completed" and raw[-1].response.output_text == TEXT_TURN["text"]
    assert "".join(e.delta for e in raw if e.type == "response.output_text.delta") == TEXT_TURN["text"]


# -- Anthropic Messages --------------------------------------------------------------------------------------------

def test_anthropic_messages_non_stream_and_stream() -> None:
    with ScriptedProvider(script(TOOL_TURN, TOOL_TURN, TEXT_TURN)) as provider:
        client = anthropic_client(provider)
        plain = client.messages.create(model="claude-x", max_tokens=512, messages=USER, tools=ANTHROPIC_TOOLS)
        with client.messages.stream(model="claude-x", max_tokens=512, messages=USER, tools=ANTHROPIC_TOOLS) as stream:
            streamed_text = "".join(stream.text_stream)
            streamed = stream.get_final_message()
        text_only = client.messages.create(model="claude-x", max_tokens=512, messages=USER)
        counted = client.messages.count_tokens(model="claude-x", messages=USER)
    for answer in (plain, streamed):
        text, tool = answer.content
        assert text.type == "text" and text.text == "Let me look."
        assert tool.type == "tool_use" and tool.name == "list_files" and tool.input == {"path": "."}
        assert tool.id.startswith("toolu_") and answer.stop_reason == "tool_use"
        # Anthropic counts cache reads apart from input_tokens; the total stays the script's 1200.
        assert (answer.usage.input_tokens, answer.usage.cache_read_input_tokens) == (1000, 200)
        assert answer.usage.output_tokens == 40
    assert streamed_text == "Let me look."
    assert text_only.stop_reason == "end_turn" and text_only.content[0].text == TEXT_TURN["text"]
    assert text_only.model == "claude-x"  # no model in the script: the request's model is echoed
    assert counted.input_tokens >= 1
    assert [r.api for r in provider.requests] == ["messages", "messages", "messages", "other"]


# -- litellm -------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def litellm() -> Any:
    # litellm fetches its price map from the internet at import unless told otherwise.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm as module

    module.suppress_debug_info = True  # it prints a "Provider List" banner for unknown models
    return module


def test_litellm_openai_and_anthropic(litellm: Any) -> None:
    with ScriptedProvider(script(TOOL_TURN, TEXT_TURN)) as provider:
        tool = litellm.completion(model="openai/scripted-1", api_base=provider.openai_base_url, api_key="x",
                                  messages=USER, tools=OPENAI_TOOLS)
        text = litellm.completion(model="anthropic/claude-x", api_base=provider.anthropic_base_url, api_key="x",
                                  messages=USER, max_tokens=256)
    (call,) = tool.choices[0].message.tool_calls
    assert call.function.name == "list_files" and json.loads(call.function.arguments) == {"path": "."}
    assert tool.usage.prompt_tokens == 1200 and tool.usage.prompt_tokens_details.cached_tokens == 200
    assert tool._hidden_params["response_cost"] == pytest.approx(0.0013)  # the provider-reported cost wins
    assert text.choices[0].message.content == TEXT_TURN["text"]
    assert [(r.api, r.path) for r in provider.requests] == [("chat", "/v1/chat/completions"),
                                                            ("messages", "/v1/messages")]


# -- scripted errors -----------------------------------------------------------------------------------------------

def test_scripted_errors_reach_clients_as_their_exception_types() -> None:
    errors = script({"error": {"status": 429, "message": "rate limited", "retry_after": 0}},
                    {"error": {"status": 500, "message": "boom"}},
                    {"error": {"status": 429, "message": "slow down", "retry_after": 2}},
                    TEXT_TURN)
    with ScriptedProvider(errors) as provider:
        client = openai_client(provider)
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model="gpt-x", messages=USER)
        with pytest.raises(openai.InternalServerError) as boom:
            client.responses.create(model="gpt-x", input="hi", stream=True)
        with pytest.raises(anthropic.RateLimitError) as slow:
            anthropic_client(provider).messages.create(model="claude-x", max_tokens=10, messages=USER)
        recovered = client.chat.completions.create(model="gpt-x", messages=USER)
    assert limited.value.response.headers["retry-after"] == "0"
    assert limited.value.body["message"] == "rate limited" and limited.value.code == "rate_limit_exceeded"
    assert boom.value.status_code == 500 and boom.value.body["message"] == "boom"
    assert slow.value.response.headers["retry-after"] == "2"
    assert slow.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    assert recovered.choices[0].message.content == TEXT_TURN["text"]
    assert [(r.turn, r.status, r.stream) for r in provider.requests] == [(0, 429, False), (1, 500, True),
                                                                         (2, 429, False), (3, 200, False)]


# -- turn selection ------------------------------------------------------------------------------------------------

def test_when_selects_by_prompt_text_and_exhaustion_ends_the_agent() -> None:
    turns = script({"text": "saw the failure", "when": r"FAILED \d+ tests?"},
                   {"text": "saw the system prompt", "when": "(?i)you are a tester"}, {"text": "fallback"})
    tool_result = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "call_1", "content": "FAILED 3 tests"}]
    with ScriptedProvider(turns) as provider:
        client = openai_client(provider)

        def ask(messages: list[dict[str, Any]]) -> str | None:
            choice = client.chat.completions.create(model="gpt-x", messages=messages).choices[0]
            assert choice.finish_reason == "stop"
            return choice.message.content

        assert ask(USER) == "fallback"  # turns 0 and 1 do not match and stay unused
        assert ask(tool_result) == "saw the failure"  # matched a tool result
        anthropic_answer = anthropic_client(provider).messages.create(
            model="claude-x", max_tokens=10, system="You are a TESTER.", messages=USER)
        assert anthropic_answer.content[0].text == "saw the system prompt"
        assert ask(USER) == EXHAUSTED_TEXT and ask(tool_result) == EXHAUSTED_TEXT
    assert [r.turn for r in provider.requests] == [2, 0, 1, None, None]


def test_loop_restarts_from_the_first_turn() -> None:
    with ScriptedProvider(script({"text": "one"}, {"text": "two"}, loop=True)) as provider:
        client = openai_client(provider)
        answers = [client.chat.completions.create(model="m", messages=USER).choices[0].message.content
                   for _ in range(5)]
    assert answers == ["one", "two", "one", "two", "one"]


# -- request log, models, HTTP robustness --------------------------------------------------------------------------

def test_request_log_in_memory_and_jsonl(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "requests.jsonl"
    with ScriptedProvider(script(TOOL_TURN), log_path=log) as provider:
        client = openai_client(provider)
        client.chat.completions.create(model="gpt-x", messages=USER, tools=OPENAI_TOOLS)
        assert [m.id for m in client.models.list()] == ["scripted-1"]
        assert [m.id for m in anthropic_client(provider).models.list()] == ["scripted-1"]
        with pytest.raises(openai.NotFoundError):
            client.post("/nowhere", cast_to=object, body={"x": 1})
    lines = [RequestLog.model_validate_json(line) for line in log.read_text().splitlines()]
    assert lines == provider.requests
    chat, models, anthropic_models, missing = lines
    assert (chat.api, chat.path, chat.model, chat.turn, chat.status, chat.stream) == (
        "chat", "/v1/chat/completions", "gpt-x", 0, 200, False)
    assert chat.body["messages"] == USER and chat.body["tools"] == OPENAI_TOOLS
    assert (models.api, models.method, anthropic_models.api) == ("models", "GET", "models")
    assert (missing.api, missing.status, missing.body) == ("other", 404, {"x": 1})


def test_http_keep_alive_expect_continue_chunked_and_gzip_bodies() -> None:
    body = json.dumps({"model": "m", "messages": USER}).encode()
    with ScriptedProvider(script({"text": "a"}, {"text": "b"}, {"text": "c"})) as provider:
        connection = http.client.HTTPConnection("127.0.0.1", provider.port, timeout=10)
        headers = {"Content-Type": "application/json", "Accept-Encoding": "gzip"}
        connection.request("POST", "/v1/chat/completions", body=gzip.compress(body),
                           headers={**headers, "Content-Encoding": "gzip"})
        first = connection.getresponse()
        assert first.status == 200 and first.getheader("Content-Encoding") is None
        assert json.loads(first.read())["choices"][0]["message"]["content"] == "a"
        connection.request("POST", "/v1/chat/completions", body=iter([body[:10], body[10:]]), headers=headers,
                           encode_chunked=True)  # same connection: keep-alive
        assert json.loads(connection.getresponse().read())["choices"][0]["message"]["content"] == "b"
        connection.close()

        with socket.create_connection(("127.0.0.1", provider.port), timeout=10) as raw:
            raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert raw.recv(1024).startswith(b"HTTP/1.1 100")
            raw.sendall(body)
            reply = b""
            while b'"c"' not in reply:
                reply += raw.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200")


# -- script loading ------------------------------------------------------------------------------------------------

def test_yaml_script_loads(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text("""\
model: scripted-1
loop: false
turns:
  - text: "Let me look."
    tool_calls:
      - name: list_files
        arguments: {path: "."}
    usage: {input_tokens: 1200, output_tokens: 40, cached_tokens: 0}
    cost: 0.0013
    delay: 0.2
    when: "look"
  - error: {status: 429, message: "rate limited", retry_after: 0}
  - error: {status: 500, message: "boom"}
""")
    loaded = load_script(path)
    assert loaded.model == "scripted-1" and len(loaded.turns) == 3
    assert loaded.turns[0].tool_calls[0].arguments == {"path": "."} and loaded.turns[0].delay == 0.2
    assert loaded.turns[1].error is not None and loaded.turns[1].error.retry_after == 0
    (tmp_path / "demo.json").write_text(json.dumps(script(TEXT_TURN)))
    assert load_script(tmp_path / "demo.json").turns[0].text == TEXT_TURN["text"]


@pytest.mark.parametrize(("data", "expected"), [
    (script({"text": "ok"}, {"usage": {"input_tokens": 1}}), "turns[1]: a turn needs text, tool_calls or error"),
    (script({"text": "ok"}, {"text": "x", "error": {"status": 500}}), "turns[1]: an error turn cannot also have"),
    (script({"error": {"status": 200}}), "turns[0].error.status: Input should be greater than or equal to 400"),
    (script({"text": "x", "tool_call": []}), "turns[0].tool_call: unknown field"),
    (script({"text": "x", "when": "("}), "turns[0].when: invalid regex"),
    (script({"text": "x", "usage": {"input_tokens": 1, "cached_tokens": 5}}),
     "turns[0].usage: cached_tokens cannot exceed input_tokens"),
    ({"turns": []}, "turns: List should have at least 1 item"),
    (["not", "a", "mapping"], "expected a mapping with 'turns', got list"),
])
def test_invalid_scripts_fail_with_one_line_naming_the_turn(tmp_path: Path, data: Any, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScriptLoadError) as caught:
        load_script(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and expected in message and "\n" not in message


# -- CLI -----------------------------------------------------------------------------------------------------------

def serve_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    app.command()(provider_serve)
    return app


@pytest.mark.parametrize("content", ["turns:\n  - text: ok\n  - {error: {status: 99}}\n", "turns: [unclosed\n"])
def test_cli_bad_script_is_one_error_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    result = CliRunner().invoke(serve_app(), ["--script", str(path), "--port", "0"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0]
    assert "Traceback" not in result.output


def test_cli_serve_starts_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text("model: demo-model\nturns:\n  - text: hello from the script\n")
    log = tmp_path / "requests.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    code = "import typer; from harness.provider.cli import provider_serve; typer.run(provider_serve)"
    command = [sys.executable, "-c", code, "--script", str(path), "--port", "0", "--log", str(log)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(60, proc.kill)  # a hung server must fail the test, not the suite
    watchdog.start()
    try:
        banner = []
        while not (banner and banner[-1].startswith("Ctrl-C")):
            line = proc.stdout.readline()
            assert line, f"server exited early: {proc.stderr.read()}"
            banner.append(line.strip())
        base = next(line.split()[-1] for line in banner if line.startswith("OpenAI base URL"))
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        answer = openai.OpenAI(base_url=base, api_key="x", max_retries=0).chat.completions.create(
            model="whatever", messages=USER)
        assert answer.choices[0].message.content == "hello from the script" and answer.model == "demo-model"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "stopped after 1 request(s)." in stdout and "Traceback" not in stderr
    assert json.loads(log.read_text())["path"] == "/v1/chat/completions"
