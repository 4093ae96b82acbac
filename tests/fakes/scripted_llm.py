"""Scripted language-model servers that speak the real wire protocols.

`ScriptedLLMServer` is an aiohttp server on 127.0.0.1 that answers either the
OpenAI Chat Completions protocol (`POST .../chat/completions`) or the Anthropic
Messages API (`POST /v1/messages`) by playing a script of `Step`s, one step per
request. Adapters under test talk to it over real HTTP, so timeouts, dropped
connections, retries and cancellation behave as they would in production.

Usage::

    script = [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.error(429, "slow down", headers={"Retry-After": "0.1"}),
        lambda request: Step.text("done" if "ok" in last_tool_result(request) else "retry"),
    ]
    async with ScriptedLLMServer("openai", script) as server:
        provider = OpenAICompatibleProvider(server.base_url, "gpt-test", "sk-...")
        ...
        assert server.requests[0].json["tools"][0]["function"]["name"] == ...

Conversations: by default every conversation (identified by a hash of its
first user message) plays the script from its own position, so concurrent
investigations each see the whole script. `per_conversation=False` plays one
shared script in arrival order. `script_for(request_json)` builds the script
of each new conversation instead of a fixed list.

A step may be a callable `(request_json) -> Step`, evaluated when its request
arrives, to react to what the client sent (for example to the last tool
result). When a conversation's script is exhausted the server answers 500
"script exhausted", which the test will notice.

In `strict` mode (the default) the server checks the request the way the real
API does (roles, tool-call pairing, turn alternation for Anthropic, required
fields) and answers 400 `invalid_request_error` when it is wrong.

Every reply reports fixed token usage (`usage`, default prompt=100,
completion=20). `requests` records each request; `aborted` counts requests
whose client disconnected before the reply was sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from multidict import CIMultiDict

Protocol = Literal["openai", "anthropic"]
StepKind = Literal["text", "tool_calls", "error", "drop", "invalid_json", "json"]
ToolCallSpec = tuple[str, Mapping[str, Any] | str]


@dataclass(frozen=True)
class Step:
    """One scripted reply. Build it with the class methods."""

    kind: StepKind
    content: str = ""
    calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    message: str = ""
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    finish_reason: str | None = None
    arguments_as_object: bool = False
    omit_ids: bool = False

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0, finish_reason: str | None = None) -> Step:
        """A plain assistant answer."""
        return cls("text", content=content, delay=delay, finish_reason=finish_reason)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[ToolCallSpec],
        *,
        text: str = "",
        delay: float = 0.0,
        arguments_as_object: bool = False,
        omit_ids: bool = False,
    ) -> Step:
        """An answer that calls tools: `[(name, arguments), ...]`.

        `arguments` is a mapping (sent as JSON) or a raw string sent verbatim,
        which lets a script produce malformed JSON. OpenAI only:
        `arguments_as_object` sends mappings as objects instead of JSON text
        (as some local servers do) and `omit_ids` leaves the call ids out.
        Anthropic sends a raw string that is not a JSON object as-is in `input`.
        """
        return cls(
            "tool_calls",
            content=text,
            calls=tuple(calls),
            delay=delay,
            arguments_as_object=arguments_as_object,
            omit_ids=omit_ids,
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Step:
        """An HTTP error. `message` goes into the protocol's error envelope;
        `body` (str or JSON value) replaces the envelope entirely."""
        return cls(
            "error",
            status=status,
            message=message,
            body=body,
            headers=tuple((headers or {}).items()),
            delay=delay,
        )

    @classmethod
    def drop(cls, *, delay: float = 0.0) -> Step:
        """Close the connection without answering."""
        return cls("drop", delay=delay)

    @classmethod
    def invalid_json(cls, body: str = '{"choices": [', *, delay: float = 0.0) -> Step:
        """A 200 whose body is not JSON."""
        return cls("invalid_json", body=body, delay=delay)

    @classmethod
    def json(cls, body: Any, *, status: int = 200, delay: float = 0.0) -> Step:
        """An arbitrary JSON body, e.g. a 200 that is not a completion."""
        return cls("json", body=body, status=status, delay=delay)


StepLike = Step | Callable[[dict[str, Any]], Step]


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: CIMultiDict[str]
    json: Any  # parsed body; None when it was not JSON
    conversation: str  # key of the conversation it belongs to
    received_at: float  # time.monotonic() when the body had been read


@dataclass
class _Conversation:
    steps: list[StepLike]
    position: int = 0


@dataclass
class _Exchange:
    """Per-request state shared by the handler's phases."""

    request: web.Request
    dropping: bool = False
    counted: bool = False


class ScriptedLLMServer:
    """A fake OpenAI-compatible or Anthropic server on 127.0.0.1 (async context manager).

    Args:
        protocol: "openai" or "anthropic".
        script: the steps every conversation plays (see module docstring).
        script_for: alternative to `script`: builds a conversation's steps
            from its first request.
        per_conversation: False plays one shared script in arrival order.
        usage: (prompt_tokens, completion_tokens) reported by every reply.
        strict: reject requests the real API would reject (400).
    """

    def __init__(
        self,
        protocol: Protocol,
        script: Sequence[StepLike] = (),
        *,
        script_for: Callable[[dict[str, Any]], Sequence[StepLike]] | None = None,
        per_conversation: bool = True,
        usage: tuple[int, int] = (100, 20),
        strict: bool = True,
    ) -> None:
        if protocol not in ("openai", "anthropic"):
            raise ValueError(f"unknown protocol {protocol!r}")
        if script and script_for is not None:
            raise ValueError("pass script or script_for, not both")
        self.protocol: Protocol = protocol
        self.requests: list[RecordedRequest] = []
        self.aborted = 0
        self._script = list(script)
        self._script_for = script_for
        self._per_conversation = per_conversation
        self._usage = usage
        self._strict = strict
        self._conversations: dict[str, _Conversation] = {}
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._counter = 0
        self._changed = asyncio.Event()  # set on every request and abort

    # --- lifecycle ----------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a client that hangs up cancels its handler,
        # which is how `aborted` sees it.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> ScriptedLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        """What the provider adapter takes as `base_url`."""
        root = f"http://127.0.0.1:{self._port}"
        return f"{root}/v1" if self.protocol == "openai" else root

    @property
    def conversation_count(self) -> int:
        return len(self._conversations)

    async def wait_requests(self, count: int = 1, within: float = 2.0) -> bool:
        """Wait up to `within` seconds until `count` requests have arrived."""
        return await self._wait(lambda: len(self.requests) >= count, within)

    async def wait_aborted(self, count: int = 1, within: float = 2.0) -> bool:
        """Wait up to `within` seconds until `count` requests were aborted by their client."""
        return await self._wait(lambda: self.aborted >= count, within)

    async def _wait(self, done: Callable[[], bool], within: float) -> bool:
        try:
            async with asyncio.timeout(within):
                # Each pass waits for the next event, so it ends by `within`.
                while not done():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            pass
        return done()

    # --- request handling ---------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        exchange = _Exchange(request)
        try:
            return await self._serve(exchange)
        except asyncio.CancelledError:
            if not exchange.dropping:
                self._count_abort(exchange)
            raise

    async def _serve(self, exchange: _Exchange) -> web.StreamResponse:
        request = exchange.request
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        key = self._conversation_key(body)
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                headers=CIMultiDict(request.headers),
                json=body,
                conversation=key,
                received_at=time.monotonic(),
            )
        )
        self._changed.set()
        suffix = "/chat/completions" if self.protocol == "openai" else "/v1/messages"
        if request.method != "POST" or not request.path.endswith(suffix):
            return self._error_response(404, f"no route for {request.method} {request.path}")
        if not isinstance(body, dict):
            return self._error_response(400, "request body is not a JSON object")
        if self._strict:
            problem = (
                openai_request_problem(body)
                if self.protocol == "openai"
                else anthropic_request_problem(body)
            )
            if problem:
                return self._error_response(400, problem)
        step = self._next_step(key, body)
        if step is None:
            return self._error_response(500, "script exhausted")
        return await self._play(exchange, step, body)

    def _conversation_key(self, body: Any) -> str:
        if not self._per_conversation or not isinstance(body, dict):
            return ""
        messages = body.get("messages")
        first_user = next(
            (
                m.get("content")
                for m in (messages if isinstance(messages, list) else [])
                if isinstance(m, dict) and m.get("role") == "user"
            ),
            None,
        )
        digest = hashlib.sha256(json.dumps(first_user, sort_keys=True).encode()).hexdigest()
        return digest[:16]

    def _next_step(self, key: str, body: dict[str, Any]) -> Step | None:
        conversation = self._conversations.get(key)
        if conversation is None:
            steps = self._script_for(body) if self._script_for is not None else self._script
            conversation = self._conversations[key] = _Conversation(list(steps))
        if conversation.position >= len(conversation.steps):
            return None
        step = conversation.steps[conversation.position]
        conversation.position += 1
        return step if isinstance(step, Step) else step(body)

    async def _play(
        self, exchange: _Exchange, step: Step, body: dict[str, Any]
    ) -> web.StreamResponse:
        request = exchange.request
        if step.delay > 0:
            # A client that hangs up cancels this handler (handler_cancellation),
            # which `_handle` counts as an abort. No polling: a thousand waiting
            # requests must not keep a CPU busy beside the server they measure.
            await asyncio.sleep(step.delay)
        if _disconnected(request):
            self._count_abort(exchange)
            return web.Response(status=499)
        if step.kind == "drop":
            exchange.dropping = True
            assert request.transport is not None
            request.transport.close()
            await asyncio.sleep(0)  # lets the server notice; the handler is cancelled
            return web.Response(status=499)
        if step.kind == "error":
            headers = dict(step.headers)
            if step.body is not None:
                return _raw_response(step.status, step.body, headers)
            return self._error_response(step.status, step.message, headers)
        if step.kind == "invalid_json":
            return web.Response(
                status=200, body=str(step.body).encode(), content_type="application/json"
            )
        if step.kind == "json":
            return web.json_response(step.body, status=step.status)
        self._counter += 1
        model = str(body.get("model", ""))
        if self.protocol == "openai":
            return web.json_response(self._openai_reply(step, model))
        return web.json_response(self._anthropic_reply(step, model))

    def _count_abort(self, exchange: _Exchange) -> None:
        if not exchange.counted:
            exchange.counted = True
            self.aborted += 1
            self._changed.set()

    # --- protocol bodies ----------------------------------------------------

    def _openai_reply(self, step: Step, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step.content or None}
        finish = "stop"
        if step.kind == "tool_calls":
            finish = "tool_calls"
            calls = []
            for index, (name, arguments) in enumerate(step.calls):
                if isinstance(arguments, str):
                    wire_args: Any = arguments
                elif step.arguments_as_object:
                    wire_args = dict(arguments)
                else:
                    wire_args = json.dumps(arguments)
                call: dict[str, Any] = {
                    "type": "function",
                    "function": {"name": name, "arguments": wire_args},
                }
                if not step.omit_ids:
                    call["id"] = f"call_{self._counter}_{index}"
                calls.append(call)
            message["tool_calls"] = calls
        elif message["content"] is None:
            message["content"] = ""
        prompt, completion = self._usage
        return {
            "id": f"chatcmpl-{self._counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": step.finish_reason or finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _anthropic_reply(self, step: Step, model: str) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if step.content:
            content.append({"type": "text", "text": step.content})
        for index, (name, arguments) in enumerate(step.calls):
            tool_input: Any = arguments
            if isinstance(arguments, str):
                try:
                    parsed = json.loads(arguments)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    tool_input = parsed
            else:
                tool_input = dict(arguments)
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{self._counter:04d}_{index}",
                    "name": name,
                    "input": tool_input,
                }
            )
        prompt, completion = self._usage
        return {
            "id": f"msg_{self._counter:08d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": step.finish_reason
            or ("tool_use" if step.kind == "tool_calls" else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }

    def _error_response(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        if self.protocol == "openai":
            envelope: dict[str, Any] = {
                "error": {"message": message, "type": kind, "param": None, "code": None}
            }
        else:
            envelope = {"type": "error", "error": {"type": kind, "message": message}}
        return web.json_response(envelope, status=status, headers=dict(headers or {}))


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _raw_response(status: int, body: Any, headers: Mapping[str, str]) -> web.Response:
    if isinstance(body, str):
        return web.Response(status=status, text=body, headers=dict(headers))
    return web.json_response(body, status=status, headers=dict(headers))


def last_tool_result(request_json: dict[str, Any]) -> str:
    """Content of the newest tool result in a request of either protocol ("" if none)."""
    messages = request_json.get("messages")
    # Bounded by the number of messages in the request.
    for message in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":  # OpenAI
            return str(message.get("content") or "")
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):  # Anthropic
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results:
                value = results[-1].get("content")
                if isinstance(value, list):  # content given as blocks
                    return "".join(b.get("text", "") for b in value if isinstance(b, dict))
                return str(value or "")
    return ""


def _disconnected(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


# --- request checks (what the real APIs reject) --------------------------------


def openai_request_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI would reject this chat completion request, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    tools = body.get("tools")
    if "tool_choice" in body and not tools:
        return "'tool_choice' is only allowed when 'tools' are specified"
    for index, tool in enumerate(tools or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict):
            return f"tools[{index}]: expected a function tool"
        if not function.get("name") or not isinstance(function.get("parameters", {}), dict):
            return f"tools[{index}].function: name and object parameters required"
    pending: set[str] = set()  # tool calls still waiting for their result
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            return f"{where}: expected an object"
        role = message.get("role")
        if role != "tool" and pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {sorted(pending)}"
            )
        if role in ("system", "developer", "user"):
            if not isinstance(message.get("content"), str | list):
                return f"{where}.content: expected a string"
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                return f"{where}: content is required unless tool_calls is set"
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not call.get("id"):
                    return f"{where}.tool_calls: id and function required"
                if call.get("type") != "function" or not function.get("name"):
                    return f"{where}.tool_calls: type 'function' and a name required"
                if not isinstance(function.get("arguments"), str):
                    return f"{where}.tool_calls: arguments must be a string"
                pending.add(call["id"])
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"{where}: messages with role 'tool' must be a response to a preceding "
                    "message with 'tool_calls'"
                )
            pending.discard(call_id)
            if not isinstance(message.get("content"), str):
                return f"{where}.content: expected a string"
        else:
            return f"{where}.role: invalid value {role!r}"
    if pending:
        return f"tool calls without a tool message answering them: {sorted(pending)}"
    return None


def anthropic_request_problem(body: dict[str, Any]) -> str | None:
    """Why the Messages API would reject this request, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required"
    temperature = body.get("temperature", 0.0)
    if not isinstance(temperature, int | float) or not 0 <= temperature <= 1:
        return "temperature: must be between 0 and 1"
    if "system" in body and not isinstance(body["system"], str | list):
        return "system: Input should be a valid string"
    choice = body.get("tool_choice")
    if choice is not None and (
        not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none")
    ):
        return "tool_choice: Input tag does not match any of the expected tags"
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not tool.get("name"):
            return f"tools.{index}.name: Field required"
        if not isinstance(tool.get("input_schema"), dict):
            return f"tools.{index}.input_schema: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    previous_tool_uses: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict):
            return f"{where}: Input should be a valid dictionary"
        role = message.get("role")
        if role == "system":
            return (
                f'{where}: Unexpected role "system". The Messages API accepts a top-level '
                '`system` parameter, not "system" as an input message role.'
            )
        expected = "user" if index % 2 == 0 else "assistant"
        if role != expected:
            return f"{where}: roles must alternate between user and assistant, starting with user"
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not isinstance(blocks, list) or not blocks:
            return f"{where}.content: at least one content block is required"
        results: list[str] = []
        uses: set[str] = set()
        for block_index, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            at = f"{where}.content.{block_index}"
            if kind == "text":
                if not isinstance(block.get("text"), str) or not block["text"].strip():
                    return f"{at}: text content blocks must be non-empty"
            elif kind == "tool_use":
                if not body.get("tools"):
                    return "Requests which include `tool_use` blocks must define tools."
                if role != "assistant":
                    return f"{at}: tool_use blocks are only allowed in assistant messages"
                if not isinstance(block.get("input"), dict):
                    return f"{at}.input: Input should be a valid dictionary"
                if not block.get("id") or not block.get("name"):
                    return f"{at}: tool_use blocks need an id and a name"
                uses.add(block["id"])
            elif kind == "tool_result":
                if role != "user":
                    return f"{at}: tool_result blocks are only allowed in user messages"
                if len(results) != block_index:
                    return f"{at}: tool_result blocks must come first in the user message"
                if block.get("tool_use_id") not in previous_tool_uses:
                    return (
                        f"{at}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )
                results.append(block["tool_use_id"])
            else:
                return f"{at}: unsupported content block type {kind!r}"
        if role == "user" and previous_tool_uses - set(results):
            return (
                f"{where}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {sorted(previous_tool_uses - set(results))}"
            )
        previous_tool_uses = uses
    return None
