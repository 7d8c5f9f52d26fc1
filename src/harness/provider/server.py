"""A loopback HTTP server that answers OpenAI Chat Completions, OpenAI Responses and Anthropic Messages requests
with scripted turns, so real clients (SDKs, litellm, coding-agent CLIs) can run without a real provider.

Two halves: pure renderers that turn one resolved ``Reply`` into each API's JSON body or SSE events, and the
HTTP plumbing (``ScriptedProvider``) that routes, picks a turn, logs the request and writes the bytes.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import socket
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel

from harness.provider.script import DEFAULT_MODEL, EXHAUSTED_TEXT, ErrorReply, Script, Turn, TurnPicker, load_script

Api = Literal["chat", "responses", "messages", "models", "other"]
SseEvent = tuple[str | None, dict[str, Any] | str]  # (event name or None, JSON payload or a raw string like [DONE])
_Recorder = Callable[[int, int | None, bool], None]  # (status, turn index, stream) -> log the current request


class RequestLog(BaseModel):
    """One request the provider received, recorded before its answer is written."""

    time: datetime
    method: str
    path: str  # as requested, query string included (Claude Code posts to /v1/messages?beta=true)
    api: Api
    stream: bool
    model: str | None  # the model the client asked for
    turn: int | None  # 0-based index of the scripted turn that answered; None for exhaustion and non-turn requests
    status: int
    body: Any = None  # the parsed JSON body (None when absent or unparsable)


# ---------------------------------------------------------------------------------------------------------------
# Resolving a turn into an API-neutral reply
# ---------------------------------------------------------------------------------------------------------------

# Structural keys whose values are not prompt text (ids, roles, base64 payloads) and would only add noise to
# `when` matching and token estimates.
_NON_TEXT_KEYS = frozenset({"role", "type", "id", "call_id", "tool_call_id", "tool_use_id", "signature", "status",
                            "cache_control", "data", "image_url", "url", "media_type", "file_id"})
_PROMPT_FIELDS = ("system", "instructions", "messages", "input", "prompt")


def prompt_text(body: dict[str, Any]) -> str:
    """All prompt text of a request (system, instructions, message contents, tool calls and results), one string."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in _NON_TEXT_KEYS:
                    walk(item)

    for name in _PROMPT_FIELDS:
        walk(body.get(name))
    return "\n".join(parts)


def estimate_tokens(text: str) -> int:
    """~4 characters per token, at least 1: close enough for budgets and ledgers in tests."""
    return max(1, math.ceil(len(text) / 4))


def _new_id() -> str:
    return uuid.uuid4().hex[:24]


@dataclass(frozen=True)
class ReplyCall:
    name: str
    arguments: dict[str, Any]
    arguments_json: str
    given_id: str | None
    uid: str

    @property
    def openai_id(self) -> str:
        return self.given_id or f"call_{self.uid}"

    @property
    def anthropic_id(self) -> str:
        return self.given_id or f"toolu_{self.uid}"


@dataclass(frozen=True)
class Reply:
    """One answer, independent of the wire API it is rendered to."""

    model: str
    text: str | None  # None: no text part at all (a pure tool-call turn)
    calls: tuple[ReplyCall, ...]
    input_tokens: int  # whole prompt, cached part included
    output_tokens: int
    cached_tokens: int
    cost: float | None
    uid: str
    created: int


def build_reply(turn: Turn | None, body: dict[str, Any], model: str) -> Reply:
    """The reply for a picked turn, or the exhaustion reply when ``turn`` is None."""
    text = turn.text if turn is not None else EXHAUSTED_TEXT
    tool_calls = turn.tool_calls if turn is not None else []
    if not text and tool_calls:
        text = None  # an empty text block beside tool calls is noise (and Anthropic rejects it when echoed back)
    elif text is None:
        text = ""
    calls = tuple(ReplyCall(c.name, c.arguments, c.arguments_json, c.id, _new_id()) for c in tool_calls)
    usage = turn.usage if turn is not None else None
    cached = usage.cached_tokens if usage is not None else 0
    input_tokens = usage.input_tokens if usage is not None and usage.input_tokens is not None else None
    if input_tokens is None:
        tools = json.dumps(body.get("tools")) if body.get("tools") else ""
        input_tokens = max(cached, estimate_tokens(prompt_text(body) + tools))
    output_tokens = usage.output_tokens if usage is not None and usage.output_tokens is not None else None
    if output_tokens is None:
        output_tokens = estimate_tokens((text or "") + "".join(c.name + c.arguments_json for c in calls))
    return Reply(model=model, text=text, calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
                 cached_tokens=cached, cost=turn.cost if turn is not None else None, uid=_new_id(),
                 created=int(time.time()))


def _pieces(text: str, size: int = 24) -> list[str]:
    # Several deltas per part, so clients' accumulation code is exercised, not just a one-shot delta.
    return [text[i:i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Chat Completions
# ---------------------------------------------------------------------------------------------------------------

def _chat_usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    if reply.cost is not None:
        usage["cost"] = reply.cost  # OpenRouter-style provider-reported cost
    return usage


def _chat_tool_call(call: ReplyCall) -> dict[str, Any]:
    return {"id": call.openai_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json}}


def chat_completion(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [_chat_tool_call(c) for c in reply.calls]
    return {
        "id": f"chatcmpl-{reply.uid}", "object": "chat.completion", "created": reply.created, "model": reply.model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if reply.calls else "stop"}],
        "usage": _chat_usage(reply),
    }


def chat_completion_events(reply: Reply, include_usage: bool) -> Iterator[SseEvent]:
    base = {"id": f"chatcmpl-{reply.uid}", "object": "chat.completion.chunk", "created": reply.created,
            "model": reply.model}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> SseEvent:
        return None, {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                           "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": "" if reply.text is not None else None})
    for piece in _pieces(reply.text or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.calls):
        yield chunk({"tool_calls": [{"index": index, "id": call.openai_id, "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for piece in _pieces(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        yield None, {**base, "choices": [], "usage": _chat_usage(reply)}
    yield None, "[DONE]"


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Responses
# ---------------------------------------------------------------------------------------------------------------

def _responses_usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    if reply.cost is not None:
        usage["cost"] = reply.cost
    return usage


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_item(reply: Reply) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{reply.uid}", "status": "completed", "role": "assistant",
            "content": [_text_part(reply.text or "")]}


def _function_call_item(call: ReplyCall) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call.uid}", "call_id": call.openai_id, "name": call.name,
            "arguments": call.arguments_json, "status": "completed"}


def _response_output(reply: Reply) -> list[dict[str, Any]]:
    output = [_message_item(reply)] if reply.text is not None else []
    return output + [_function_call_item(c) for c in reply.calls]


def _response_object(reply: Reply, status: str, output: list[dict[str, Any]],
                     usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": f"resp_{reply.uid}", "object": "response", "created_at": reply.created, "status": status,
        "model": reply.model, "output": output, "usage": usage, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "temperature": 1.0, "top_p": 1.0, "max_output_tokens": None, "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None}, "text": {"format": {"type": "text"}},
        "truncation": "disabled", "store": False,
    }


def response(reply: Reply) -> dict[str, Any]:
    return _response_object(reply, "completed", _response_output(reply), _responses_usage(reply))


def response_events(reply: Reply) -> Iterator[SseEvent]:
    sequence = itertools.count()

    def event(kind: str, /, **fields: Any) -> SseEvent:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=_response_object(reply, "in_progress", [], None))
    yield event("response.in_progress", response=_response_object(reply, "in_progress", [], None))
    index = 0
    if reply.text is not None:
        item = _message_item(reply)
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        yield event("response.output_item.added", output_index=index,
                    item={**item, "status": "in_progress", "content": []})
        yield event("response.content_part.added", **where, part=_text_part(""))
        for piece in _pieces(reply.text):
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        yield event("response.output_text.done", **where, text=reply.text, logprobs=[])
        yield event("response.content_part.done", **where, part=_text_part(reply.text))
        yield event("response.output_item.done", output_index=index, item=item)
        index += 1
    for call in reply.calls:
        item = _function_call_item(call)
        where = {"item_id": item["id"], "output_index": index}
        yield event("response.output_item.added", output_index=index,
                    item={**item, "arguments": "", "status": "in_progress"})
        for piece in _pieces(call.arguments_json):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, name=call.name, arguments=call.arguments_json)
        yield event("response.output_item.done", output_index=index, item=item)
        index += 1
    yield event("response.completed", response=response(reply))


# ---------------------------------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------------------------------

def _anthropic_usage(reply: Reply, output_tokens: int | None = None) -> dict[str, Any]:
    # Anthropic's input_tokens excludes cache reads; the script's input_tokens is the whole prompt.
    return {"input_tokens": reply.input_tokens - reply.cached_tokens,
            "output_tokens": reply.output_tokens if output_tokens is None else output_tokens,
            "cache_read_input_tokens": reply.cached_tokens, "cache_creation_input_tokens": 0}


def _anthropic_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text is not None else []
    return blocks + [{"type": "tool_use", "id": c.anthropic_id, "name": c.name, "input": c.arguments}
                     for c in reply.calls]


def _anthropic_message(reply: Reply, content: list[dict[str, Any]], stop_reason: str | None,
                       usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"msg_{reply.uid}", "type": "message", "role": "assistant", "model": reply.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.calls else "end_turn"


def message(reply: Reply) -> dict[str, Any]:
    return _anthropic_message(reply, _anthropic_blocks(reply), _stop_reason(reply), _anthropic_usage(reply))


def message_events(reply: Reply) -> Iterator[SseEvent]:
    def event(kind: str, /, **fields: Any) -> SseEvent:
        return kind, {"type": kind, **fields}

    yield event("message_start", message=_anthropic_message(reply, [], None, _anthropic_usage(reply, 1)))
    yield event("ping")
    for index, block in enumerate(_anthropic_blocks(reply)):
        if block["type"] == "text":
            yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in _pieces(block["text"]):
                yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            yield event("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in _pieces(json.dumps(block["input"], ensure_ascii=False)):
                yield event("content_block_delta", index=index,
                            delta={"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", index=index)
    # message_delta usage is cumulative: it overwrites what message_start said.
    yield event("message_delta", delta={"stop_reason": _stop_reason(reply), "stop_sequence": None},
                usage=_anthropic_usage(reply))
    yield event("message_stop")


# ---------------------------------------------------------------------------------------------------------------
# Errors and models
# ---------------------------------------------------------------------------------------------------------------

_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                       404: "not_found_error", 429: "rate_limit_error"}
_OPENAI_ERROR_CODES = {401: "invalid_api_key", 404: "not_found", 429: "rate_limit_exceeded"}
_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                          529: "overloaded_error"}


def openai_error(status: int, message_text: str, error_type: str | None = None) -> dict[str, Any]:
    kind = error_type or _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = _OPENAI_ERROR_CODES.get(status, "server_error" if status >= 500 else None)
    return {"error": {"message": message_text, "type": kind, "param": None, "code": code}}


def anthropic_error(status: int, message_text: str, error_type: str | None = None) -> dict[str, Any]:
    kind = error_type or _ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message_text}}


def error_body(api: Api, status: int, message_text: str, error_type: str | None = None) -> dict[str, Any]:
    if api == "messages":
        return anthropic_error(status, message_text, error_type)
    body = openai_error(status, message_text, error_type)
    if api == "other":
        body["type"] = "error"  # unknown routes: a body both SDK families can read
    return body


def model_entry(model: str, created: int) -> dict[str, Any]:
    # The union of OpenAI's and Anthropic's model objects, so either SDK's models.list() parses it.
    return {"id": model, "object": "model", "type": "model", "created": created, "owned_by": "req2test",
            "display_name": model, "created_at": datetime.fromtimestamp(created, UTC).isoformat()}


def model_list(model: str, created: int) -> dict[str, Any]:
    return {"object": "list", "data": [model_entry(model, created)], "has_more": False, "first_id": model,
            "last_id": model}


# ---------------------------------------------------------------------------------------------------------------
# HTTP plumbing
# ---------------------------------------------------------------------------------------------------------------

_TURN_ROUTES: dict[str, Api] = {"/v1/chat/completions": "chat", "/chat/completions": "chat",
                                "/v1/responses": "responses", "/responses": "responses",
                                "/v1/messages": "messages", "/messages": "messages"}
_COUNT_TOKENS_ROUTES = frozenset({"/v1/messages/count_tokens", "/messages/count_tokens"})
_MODEL_ROUTES = ("/v1/models", "/models")


class _BadRequest(Exception):
    """A request body that cannot be read or decoded."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung client must not keep the process alive

    def __init__(self, address: tuple[str, int], provider: ScriptedProvider) -> None:
        self.provider = provider
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    # Live connections are tracked so stop() can end idle keep-alive connections instead of leaving their
    # handler threads blocked on a read.
    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver prints a traceback to stderr here. Client disconnects are routine, and provider bugs are
        # already answered as 500s (and logged) by the handler, so there is nothing worth printing.
        pass

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 gives keep-alive and makes the base class answer `Expect: 100-continue`.
    protocol_version = "HTTP/1.1"
    server: _Server
    answered = False  # whether a status line went out for the current request

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the provider keeps its own structured request log; stderr lines would garble agent CLIs

    def do_GET(self) -> None:  # http.server dispatches on do_<METHOD>; every method goes through one router
        self.answered = False
        try:
            self._handle()
        except Exception as exc:  # noqa: BLE001 - a provider bug must reach the client as an answer, not a hang
            if self.answered:
                self.close_connection = True
            else:
                self._reject("other", None, 500, f"scripted provider failed: {exc!r}")

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_GET

    # -- reading ------------------------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length > 0 else b""
        encoding = self.headers.get("Content-Encoding", "identity").strip().lower()
        try:
            if encoding in ("gzip", "x-gzip"):
                return gzip.decompress(data)
            if encoding == "deflate":
                return zlib.decompress(data)
        except (OSError, zlib.error) as exc:
            raise _BadRequest(f"cannot decode {encoding} body: {exc}") from None
        if encoding not in ("identity", ""):
            raise _BadRequest(f"unsupported Content-Encoding {encoding!r}")
        return data

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            line = self.rfile.readline(65537)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _BadRequest("malformed chunked body") from None
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    # -- writing ------------------------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.answered = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        request_id = f"req_{_new_id()}"
        self.send_header("x-request-id", request_id)
        self.send_header("request-id", request_id)  # the Anthropic SDK's name for it
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self._write(data)

    def _send_sse(self, events: Iterator[SseEvent]) -> None:
        self.answered = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        # No length and no chunking: the body ends when the connection closes, which every client handles.
        self.send_header("Connection", "close")
        self.send_header("x-request-id", f"req_{_new_id()}")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            if not self._write(frame.encode()):
                return

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away mid-answer; nothing left to tell it
            return False

    # -- routing ------------------------------------------------------------------------------------------------

    def _handle(self) -> None:
        provider = self.server.provider
        route = urlsplit(self.path).path.rstrip("/") or "/"
        is_models = route in _MODEL_ROUTES or route.startswith(tuple(r + "/" for r in _MODEL_ROUTES))
        api: Api = _TURN_ROUTES.get(route, "models" if is_models else "other")
        try:
            raw = self._read_body()
            body = json.loads(raw) if raw.strip() else None
        except (_BadRequest, ValueError) as exc:
            self.close_connection = True  # the stream position may be wrong after a bad body
            self._reject(api, None, 400, f"invalid request body: {exc}")
            return

        def record(status: int, turn: int | None = None, stream: bool = False) -> None:
            model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
            provider.record(RequestLog(time=datetime.now(UTC), method=self.command, path=self.path, api=api,
                                       stream=stream, model=model, turn=turn, status=status, body=body))

        if self.command == "POST" and api in ("chat", "responses", "messages"):
            if not isinstance(body, dict):
                self._reject(api, body, 400, "the request body must be a JSON object")
                return
            self._answer_turn(api, body, record)
        elif self.command == "POST" and route in _COUNT_TOKENS_ROUTES and isinstance(body, dict):
            record(200)
            tools = json.dumps(body.get("tools")) if body.get("tools") else ""
            self._send_json(200, {"input_tokens": estimate_tokens(prompt_text(body) + tools)})
        elif self.command in ("GET", "HEAD") and api == "models":
            record(200)
            created = int(provider.started_at)
            if route in _MODEL_ROUTES:
                self._send_json(200, model_list(provider.model_name, created))
            else:
                self._send_json(200, model_entry(route.rsplit("/", 1)[1], created))
        else:
            self._reject("other", body, 404, f"no route for {self.command} {route}")

    def _reject(self, api: Api, body: Any, status: int, reason: str) -> None:
        self.server.provider.record(RequestLog(time=datetime.now(UTC), method=self.command, path=self.path,
                                               api=api, stream=False, model=None, turn=None, status=status,
                                               body=body))
        self._send_json(status, error_body(api, status, reason))

    def _answer_turn(self, api: Api, body: dict[str, Any], record: _Recorder) -> None:
        provider = self.server.provider
        stream = body.get("stream") is True
        picked = provider.picker.pick(prompt_text(body))
        index, turn = picked if picked is not None else (None, None)
        if turn is not None and turn.delay:
            time.sleep(turn.delay)
        if turn is not None and turn.error is not None:
            self._send_error(api, turn.error, index, stream, record)
            return
        model = provider.script.model or (body.get("model") if isinstance(body.get("model"), str) else None)
        reply = build_reply(turn, body, model or DEFAULT_MODEL)
        # Logged before writing, so a client that has its answer also sees its request in the log.
        record(200, index, stream)
        if not stream:
            render = {"chat": chat_completion, "responses": response, "messages": message}[api]
            self._send_json(200, render(reply))
        elif api == "chat":
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._send_sse(chat_completion_events(reply, include_usage))
        elif api == "responses":
            self._send_sse(response_events(reply))
        else:
            self._send_sse(message_events(reply))

    def _send_error(self, api: Api, error: ErrorReply, index: int | None, stream: bool, record: _Recorder) -> None:
        headers = {}
        if error.retry_after is not None:
            seconds = error.retry_after
            headers["retry-after"] = str(int(seconds)) if seconds == int(seconds) else str(seconds)
            headers["retry-after-ms"] = str(int(seconds * 1000))
        record(error.status, index, stream)
        self._send_json(error.status, error_body(api, error.status, error.message, error.type), headers)


class ScriptedProvider:
    """A scripted model provider on a loopback port; use as a context manager or call start()/stop().

    Any API key is accepted. ``requests`` lists every request received (also appended to ``log_path`` as JSON
    lines when given), in arrival order.
    """

    def __init__(self, script: Script | Path | str | dict[str, Any], port: int = 0, log_path: Path | None = None,
                 *, host: str = "127.0.0.1") -> None:
        self.script = load_script(script)
        self.picker = TurnPicker(self.script)
        self.host = host
        self.port = port
        self.log_path = Path(log_path) if log_path is not None else None
        self.requests: list[RequestLog] = []
        self.started_at = time.time()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def model_name(self) -> str:
        return self.script.model or DEFAULT_MODEL

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the scripted provider is not started")
        # A wildcard bind is reachable on loopback; clients cannot connect to 0.0.0.0 everywhere.
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the Anthropic SDK appends /v1/messages itself

    def start(self) -> Self:
        """Bind and serve on a background thread; raises OSError when the port is taken."""
        if self._server is not None:
            return self
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        server = _Server((self.host, self.port), self)
        self._server = server
        self.port = server.server_address[1]
        self.started_at = time.time()
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"scripted-provider-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, end open connections, and release the port."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def record(self, entry: RequestLog) -> None:
        with self._lock:
            self.requests.append(entry)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as handle:
                    handle.write(entry.model_dump_json() + "\n")
