"""Anthropic's Messages API (`/v1/messages`, `/v1/messages/count_tokens`) in front of the same
reply policy as `/v1/chat/completions`.

Claude Code, the Claude Agent SDK and the `anthropic` SDK speak Messages. This front is a shape
mapping and nothing more: a Messages request becomes a chat-completions request dict (`system`
and content blocks as messages, `tool_use` blocks as assistant `tool_calls`, `tool_result`
blocks as `role: tool` messages, tools with `input_schema` as function tools), runs through
the session and drive loop every front shares (`ReplySession`, `_policy.drive`, over the
proxy's upstream client, under the `[[models]]` rules), and the policy's `chat.completion` /
`chat.completion.chunk` dicts come back as a `message` or as Messages stream events. The model
name is mapped first (`upstream_model`): these clients send Anthropic's model names.

The stream: `message_start`, a `ping` (and one whenever the upstream is silent for
`PING_SECONDS`), then content blocks in the order the reply makes them
(`thinking` from reasoning, `text`, `tool_use`), each `content_block_start` /
`content_block_delta` / `content_block_stop`, then `message_delta` (stop reason, usage) and
`message_stop`. Text and reasoning stream as they come. A `tool_use` block goes out when its
call is complete: Anthropic's clients parse `input_json_delta` as partial JSON on every delta
and cannot take a block back, so a call the policy finds unusable after streaming it (the
chat front ends its arguments with text no JSON reader accepts) is never shown here; the
policy holds a call until it is valid in most cases anyway. Unusable calls are listed in the
extension field `invalid_tool_calls` (the whole message's, and the `message_delta`'s).

Errors are Anthropic's shape, `{"type": "error", "error": {"type": ..., "message": ...}}`, with
the statuses Anthropic uses; a request that cannot work names the field in its message
(`messages.2.content.0.tool_use_id: ...`). A stream that breaks after it began ends with an
`error` event.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.types import Receive, Send

from hermes_tools._policy.drive import astream_reply, awhole_reply
from hermes_tools._policy.session import ReplySession
from hermes_tools._signals import RequestRejected, UpstreamError
from hermes_tools._tools.toolbox import tool_spec
from hermes_tools.errors import HermesToolsError, ToolSchemaError
from hermes_tools.serve.exchange import Exchange, relayed_headers
from hermes_tools.serve.http import (
    SSE_HEADERS,
    Handler,
    Responder,
    cancel_on_disconnect,
    closed_at_end,
    relay_failure,
    stream_failure,
    upstream_message,
)
from hermes_tools.serve.upstream import UpstreamChat
from hermes_tools.serve.validation import json_type
from hermes_tools.serve.wire import SPACED, encode

Event = tuple[str, dict[str, Any]]  # an SSE event's name and data

# Seconds of silence from the upstream after which a stream gets a `ping` event.
PING_SECONDS = 10.0
# Characters per token for the estimates (count_tokens, and usage a server does not report).
CHARS_PER_TOKEN = 4
# Request headers that are Anthropic's and mean nothing upstream (the key is turned into the
# upstream's Authorization where the client's key goes upstream at all).
_ANTHROPIC_HEADERS = ("x-api-key", "anthropic-")
_ROLES = ("user", "assistant", "system")
_USER_BLOCKS = "text, image or tool_result"
_ASSISTANT_BLOCKS = "text, tool_use, thinking or redacted_thinking"


# -- errors ---------------------------------------------------------------------------------------


def error_type(status: int) -> str:
    """Anthropic's error type for an HTTP status."""
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 404:
        return "not_found_error"
    if status == 413:
        return "request_too_large"
    if status == 429:
        return "rate_limit_error"
    if status == 504:
        return "timeout_error"
    if status in (503, 529):
        return "overloaded_error"
    if status >= 500:
        return "api_error"
    return "invalid_request_error"


def error_data(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class AnthropicResponder(Responder):
    """Writes errors as Anthropic does: `{"type": "error", "error": {type, message}}`."""

    def error_body(
        self, status: int, message: str, kind: str, param: str | None, code: str | None
    ) -> bytes:
        return json.dumps(error_data(error_type(status), message)).encode()

    def stream_error(self, message: str, code: str) -> bytes | None:
        return sse([("error", error_data("api_error", message))])


def _rejected(where: str, problem: str) -> RequestRejected:
    return RequestRejected(f"{where}: {problem}" if where else problem, where or None)


# -- the request ----------------------------------------------------------------------------------


def chat_request(body: Mapping[str, Any], *, upstream_model: str, whole: bool) -> dict[str, Any]:
    """A Messages request as the chat-completions request the policy takes. `whole`: a
    `/v1/messages` request (`max_tokens` required), not a `count_tokens` one. Raises
    RequestRejected naming the field that cannot work."""
    _check_fields(body, whole)
    tools = [_tool(tool, f"tools.{n}") for n, tool in enumerate(body.get("tools") or [])]
    messages = _system(body.get("system"))
    known_ids: set[str] = set()
    for position, message in enumerate(body["messages"]):
        messages += _message(message, f"messages.{position}", known_ids)
    request: dict[str, Any] = {"model": upstream_model, "messages": _request_last(messages)}
    if tools:
        request["tools"] = tools
    choice = body.get("tool_choice")
    if choice is not None:
        request.update(_tool_choice(choice, {tool["function"]["name"] for tool in tools}))
    if body.get("stop_sequences"):
        request["stop"] = list(body["stop_sequences"])
    for name in ("max_tokens", "temperature", "top_p", "top_k"):
        if body.get(name) is not None:
            request[name] = body[name]  # top_k: not OpenAI's, taken by vLLM, llama.cpp, ...
    answer_format = _answer_format(body)
    if answer_format is not None:
        request["response_format"] = answer_format
    if whole and body.get("stream") is True:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    return request


def _request_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A system message right after a user message goes just before it. Claude Code sends its
    lists of agents and skills after the user's request; a small model reads the last message
    as what it is asked, and answered the lists instead of the request (a call to `Skill` when
    asked to edit a line). Moved wherever they are, the turns keep one order from request to
    request, and a server's prompt cache holds."""
    ordered: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "system" and ordered and ordered[-1]["role"] == "user":
            ordered.insert(len(ordered) - 1, message)
        else:
            ordered.append(message)
    return ordered


def _answer_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A JSON answer (`output_config.format`, or the older `output_format`) as the
    `response_format` the policy reads (the prompt asks for the JSON; it is read back)."""
    config = body.get("output_config")
    where, value = "output_config.format", None
    if isinstance(config, dict):
        value = config.get("format")
    if value is None:
        where, value = "output_format", body.get("output_format")
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") != "json_schema":
        raise _rejected(f"{where}.type", "must be 'json_schema'")
    schema = value.get("schema")
    if not isinstance(schema, dict):
        raise _rejected(f"{where}.schema", "Field required")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


def _check_fields(body: Mapping[str, Any], whole: bool) -> None:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _rejected("model", "Field required" if model is None else "must be a string")
    if whole:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise _rejected("max_tokens", "Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _rejected("max_tokens", f"must be an integer of at least 1, not {max_tokens!r}")
    messages = body.get("messages")
    if messages is None:
        raise _rejected("messages", "Field required")
    if not isinstance(messages, list) or not messages:
        raise _rejected("messages", "must be a non-empty array of messages")
    expected: dict[str, tuple[tuple[type, ...], str]] = {
        "stream": ((bool,), "a boolean"),
        "temperature": ((int, float), "a number"),
        "top_p": ((int, float), "a number"),
        "top_k": ((int,), "an integer"),
        "metadata": ((dict,), "an object"),
        "tools": ((list,), "an array"),
        "tool_choice": (
            (dict,),
            'an object such as {"type": "auto"} (auto, any, tool with a name, or none)',
        ),
        "system": ((str, list), "a string or an array of text blocks"),
        "output_config": ((dict,), "an object"),
    }
    for name, (types, said) in expected.items():
        value = body.get(name)
        wrong_bool = isinstance(value, bool) and bool not in types
        if value is not None and (wrong_bool or not isinstance(value, types)):
            raise _rejected(name, f"must be {said}, not {json_type(value)}")
    stops = body.get("stop_sequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) and s for s in stops)
    ):
        raise _rejected("stop_sequences", "must be an array of non-empty strings")


def _system(system: str | list[Any] | None, where: str = "system") -> list[dict[str, Any]]:
    if not system:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    texts: list[str] = []
    for number, block in enumerate(system):
        at = f"{where}.{number}"
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _rejected(f"{at}.type", "system blocks must be text blocks")
        texts.append(_text(block, at))
    return [{"role": "system", "content": "\n\n".join(texts)}]


def _message(message: object, where: str, known_ids: set[str]) -> list[dict[str, Any]]:
    if not isinstance(message, dict):
        raise _rejected(where, f"must be an object, not {json_type(message)}")
    role = message.get("role")
    if role not in _ROLES:
        raise _rejected(f"{where}.role", f"must be 'user', 'assistant' or 'system', not {role!r}")
    content = message.get("content")
    if role == "system":  # a system message among the turns (Claude Code sends them)
        if not isinstance(content, (str, list)):
            raise _rejected(f"{where}.content", "must be a string or an array of text blocks")
        return _system(content, f"{where}.content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise _rejected(
            f"{where}.content", f"must be a string or an array of blocks, not {json_type(content)}"
        )
    if role == "assistant":
        return [_assistant(content, f"{where}.content", known_ids)]
    return _user(content, f"{where}.content", known_ids)


def _block_type(block: object, where: str) -> str:
    if not isinstance(block, dict):
        raise _rejected(where, f"must be a content block object, not {json_type(block)}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _rejected(f"{where}.type", "Field required")
    return kind


def _text(block: Mapping[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise _rejected(f"{where}.text", "Field required")
    return text


def _assistant(content: list[Any], where: str, known_ids: set[str]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for number, block in enumerate(content):
        at = f"{where}.{number}"
        kind = _block_type(block, at)
        if kind == "text":
            texts.append(_text(block, at))
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not call_id:
                raise _rejected(f"{at}.id", "Field required")
            if not isinstance(name, str) or not name:
                raise _rejected(f"{at}.name", "Field required")
            if not isinstance(arguments, dict):
                raise _rejected(f"{at}.input", "must be an object")
            known_ids.add(call_id)
            function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
            calls.append({"id": call_id, "type": "function", "function": function})
        elif kind not in ("thinking", "redacted_thinking"):
            # Reasoning is not written back into the conversation (as the format does with
            # `reasoning_content`); anything else has no place in a chat conversation.
            raise _rejected(
                f"{at}.type",
                f"unknown content block type {kind!r} in an assistant turn; "
                f"expected {_ASSISTANT_BLOCKS}",
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(content: list[Any], where: str, known_ids: set[str]) -> list[dict[str, Any]]:
    """A user turn: its tool results as `role: tool` messages (first, as Anthropic requires
    them first), then the rest of its blocks as one user message."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for number, block in enumerate(content):
        at = f"{where}.{number}"
        kind = _block_type(block, at)
        part = _text_or_image(block, kind, at)
        if part is not None:
            parts.append(part)
        elif kind == "tool_result":
            results.append(_tool_result(block, at, known_ids))
        else:
            raise _rejected(
                f"{at}.type",
                f"unknown content block type {kind!r} in a user turn; expected {_USER_BLOCKS}",
            )
    if parts or not results:
        results.append({"role": "user", "content": parts})
    return results


def _text_or_image(block: Mapping[str, Any], kind: str, where: str) -> dict[str, Any] | None:
    """A `text` or `image` block as an OpenAI content part; None for other kinds."""
    if kind == "text":
        return {"type": "text", "text": _text(block, where)}
    if kind == "image":
        return _image(block, where)
    return None


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An image, as an OpenAI `image_url` part (a server that takes no images says so)."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise _rejected(f"{where}.source", "Field required")
    kind = source.get("type")
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")
        if not isinstance(media, str) or not isinstance(data, str):
            raise _rejected(f"{where}.source", "a base64 image needs media_type and data")
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        given = source.get("url")
        if not isinstance(given, str) or not given:
            raise _rejected(f"{where}.source.url", "Field required")
        url = given
    else:
        raise _rejected(f"{where}.source.type", f"must be 'base64' or 'url', not {kind!r}")
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_result(block: Mapping[str, Any], where: str, known_ids: set[str]) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise _rejected(f"{where}.tool_use_id", "Field required")
    if call_id not in known_ids:
        raise _rejected(
            f"{where}.tool_use_id",
            f"no tool_use block with id {call_id!r} comes before this tool_result; each "
            "tool_result answers a tool_use of an earlier assistant turn",
        )
    content = block.get("content")
    if content is None or isinstance(content, str):
        value: str | list[dict[str, Any]] = content or ""
    elif isinstance(content, list):
        value = []
        for number, part in enumerate(content):
            at = f"{where}.content.{number}"
            kind = _block_type(part, at)
            read = _text_or_image(part, kind, at)
            if read is None:
                raise _rejected(
                    f"{at}.type",
                    f"unknown content block type {kind!r} in a tool_result; expected text or image",
                )
            value.append(read)
    else:
        raise _rejected(f"{where}.content", "must be a string or an array of blocks")
    result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": value}
    if block.get("is_error") is True:
        result["status"] = "error"  # the format writes it back as an error
    return result


def _tool(tool: object, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise _rejected(where, f"must be a tool object, not {json_type(tool)}")
    kind = tool.get("type")
    if kind == "function" and isinstance(tool.get("function"), dict):
        raise _rejected(
            where,
            'is a Chat Completions tool ({"type": "function", "function": {...}}); the '
            'Messages API takes {"name", "description", "input_schema"}, or send it to '
            "/v1/chat/completions",
        )
    if kind not in (None, "custom"):
        raise _rejected(
            f"{where}.type",
            f"{kind!r} is one of Anthropic's server tools, which run on Anthropic's side; "
            "this proxy takes client tools (name, description, input_schema)",
        )
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise _rejected(f"{where}.name", "Field required")
    schema = tool.get("input_schema")
    if schema is None:
        raise _rejected(f"{where}.input_schema", "Field required")
    if not isinstance(schema, dict):
        raise _rejected(f"{where}.input_schema", "must be a JSON schema object")
    function: dict[str, Any] = {"name": name, "parameters": schema}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    converted = {"type": "function", "function": function}
    try:
        tool_spec(converted)
    except ToolSchemaError as exc:
        raise _rejected(
            f"{where}.input_schema", f"invalid schema for tool {name!r}: {exc.problem}"
        ) from None
    except HermesToolsError as exc:
        raise _rejected(where, str(exc)) from None
    return converted


def _tool_choice(choice: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    kind = choice.get("type")
    out: dict[str, Any] = {}
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise _rejected("tool_choice.name", "Field required")
        if name not in names:
            raise _rejected("tool_choice.name", f"no tool named {name!r} is in tools")
        out["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        raise _rejected("tool_choice.type", f"must be auto, any, tool or none, not {kind!r}")
    if kind in ("any", "tool") and not names:
        raise _rejected("tool_choice", f"tool_choice {kind!r} needs tools")
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out


def estimated_tokens(messages: list[dict[str, Any]]) -> int:
    """About how many tokens a rendered conversation is: its text at ~4 characters a token
    (images and the chat template's own tokens are not counted)."""
    characters = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            characters += len(content)
        elif isinstance(content, list):
            characters += sum(
                len(part["text"])
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return math.ceil(characters / CHARS_PER_TOKEN)


# -- the reply ------------------------------------------------------------------------------------


def new_message_id() -> str:
    return "msg_" + os.urandom(12).hex()


def tool_use_id(call_id: str) -> str:
    """Anthropic's id form for a call: `toolu_...`."""
    if call_id.startswith("toolu_"):
        return call_id
    return "toolu_" + call_id.removeprefix("call_")


def stop_fields(
    finish: str | None, stop_sequence: str | None, made_calls: bool
) -> dict[str, str | None]:
    """`stop_reason` and `stop_sequence` for a reply that finished so."""
    if finish == "length":
        reason = "max_tokens"
    elif made_calls:
        reason = "tool_use"
    elif stop_sequence is not None:
        reason = "stop_sequence"
    else:
        reason = "end_turn"
    return {
        "stop_reason": reason,
        "stop_sequence": stop_sequence if reason == "stop_sequence" else None,
    }


def _arguments(text: str) -> dict[str, Any] | None:
    """A call's arguments as its `input`, or None when they are no JSON object (a call the
    policy found unusable after it was streamed)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _usage(
    usage: Mapping[str, Any] | None, input_estimate: int, output_characters: int
) -> dict[str, int]:
    """The upstream's token counts, or estimates where it gave none."""
    usage = usage or {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return {
        "input_tokens": prompt if isinstance(prompt, int) else input_estimate,
        "output_tokens": completion
        if isinstance(completion, int)
        else math.ceil(output_characters / CHARS_PER_TOKEN),
    }


def anthropic_message(
    completion: Mapping[str, Any],
    *,
    model: str,
    stop_sequence: str | None,
    input_estimate: int,
) -> dict[str, Any]:
    """The policy's whole `chat.completion` as a Messages `message`."""
    choices = completion.get("choices") or [{}]
    choice = choices[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    invalid = list(message.get("invalid_tool_calls") or [])
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = _arguments(function.get("arguments") or "")
        if arguments is None:
            invalid.append({**function, "id": call.get("id"), "error": "arguments not an object"})
            continue
        content.append(
            {
                "type": "tool_use",
                "id": tool_use_id(call.get("id") or ""),
                "name": function.get("name") or "",
                "input": arguments,
            }
        )
    made_calls = any(block["type"] == "tool_use" for block in content)
    finish = choice.get("finish_reason")
    characters = len(text or "") + len(reasoning or "")
    result: dict[str, Any] = {
        "id": new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        **stop_fields(finish, stop_sequence, made_calls),
        "usage": _usage(completion.get("usage"), input_estimate, characters),
    }
    if invalid:
        result["invalid_tool_calls"] = _with_tool_use_ids(invalid)
    return result


def _with_tool_use_ids(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**call, "id": tool_use_id(str(call.get("id") or ""))} for call in calls]


class MessageEvents:
    """The policy's `chat.completion.chunk` dicts as Messages stream events (sans-I/O):
    `start()`, then `chunk()` for each chunk, then `finish()`."""

    def __init__(self, model: str, input_estimate: int) -> None:
        self.model = model
        self.input_estimate = input_estimate
        self._blocks = 0  # content blocks started
        self._open: str | None = None  # the kind of the block open now: "text" or "thinking"
        self._call: dict[str, Any] | None = None  # the call being read: id, name, arguments
        self.call_ids: list[str] = []  # the calls made, as `tool_use` ids
        self._finish: str | None = None
        self._usage: Mapping[str, Any] | None = None
        self.invalid: list[dict[str, Any]] = []  # unusable calls, from the policy
        self._characters = 0

    def start(self) -> list[Event]:
        message: dict[str, Any] = {
            "id": new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_estimate, "output_tokens": 0},
        }
        return [("message_start", {"type": "message_start", "message": message}), _PING]

    def chunk(self, chunk: Mapping[str, Any]) -> list[Event]:
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = usage
        out: list[Event] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # Messages has one reply per request
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                out += self._stream("thinking", reasoning)
            text = delta.get("content")
            if isinstance(text, str) and text:
                out += self._stream("text", text)
            for call in delta.get("tool_calls") or ():
                out += self._tool_call(call)
            self.invalid += delta.get("invalid_tool_calls") or []
            if choice.get("finish_reason") is not None:
                self._finish = choice["finish_reason"]
        return out

    def finish(self, stop_sequence: str | None) -> list[Event]:
        out = self._end_call() + self._close()
        delta: dict[str, Any] = stop_fields(self._finish, stop_sequence, bool(self.call_ids))
        if self.invalid:
            delta["invalid_tool_calls"] = _with_tool_use_ids(self.invalid)
        usage = _usage(self._usage, self.input_estimate, self._characters)
        out.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    # -- blocks -------------------------------------------------------------------------------

    def _stream(self, kind: str, text: str) -> list[Event]:
        self._characters += len(text)
        out = self._end_call()
        if self._open != kind:
            out += self._close()
            block = {"type": "text", "text": ""}
            if kind == "thinking":
                block = {"type": "thinking", "thinking": "", "signature": ""}
            out.append(self._block_start(block))
            self._open = kind
        delta = (
            {"type": "text_delta", "text": text}
            if kind == "text"
            else {"type": "thinking_delta", "thinking": text}
        )
        out.append(_event("content_block_delta", index=self._blocks - 1, delta=delta))
        return out

    def _tool_call(self, entry: Mapping[str, Any]) -> list[Event]:
        function = entry.get("function") or {}
        out: list[Event] = []
        if entry.get("id"):
            out += self._end_call()
            self._call = {"id": entry["id"], "name": function.get("name") or "", "arguments": []}
        if self._call is not None and function.get("arguments"):
            self._call["arguments"].append(function["arguments"])
        return out

    def _end_call(self) -> list[Event]:
        """The call read so far is complete: its block, whole, if it is usable."""
        call, self._call = self._call, None
        if call is None:
            return []
        arguments_text = "".join(call["arguments"])
        arguments = _arguments(arguments_text)
        if arguments is None:
            return []  # listed in `invalid_tool_calls` by the policy
        self._characters += len(arguments_text)
        self.call_ids.append(tool_use_id(call["id"]))
        out = self._close()
        block = {"type": "tool_use", "id": self.call_ids[-1], "name": call["name"]}
        out.append(self._block_start({**block, "input": {}}))
        if arguments:
            delta = {"type": "input_json_delta", "partial_json": arguments_text}
            out.append(_event("content_block_delta", index=self._blocks - 1, delta=delta))
        out.append(_event("content_block_stop", index=self._blocks - 1))
        return out

    def _block_start(self, block: dict[str, Any]) -> Event:
        self._blocks += 1
        return _event("content_block_start", index=self._blocks - 1, content_block=block)

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        self._open = None
        return [_event("content_block_stop", index=self._blocks - 1)]


_PING: Event = ("ping", {"type": "ping"})


def _event(kind: str, **fields: Any) -> Event:
    return kind, {"type": kind, **fields}


def sse(events: list[Event]) -> bytes:
    return b"".join(
        b"event: " + name.encode() + b"\ndata: " + encode(data, SPACED) + b"\n\n"
        for name, data in events
    )


# -- the handlers ---------------------------------------------------------------------------------


class _MessagesHandler(Handler):
    """What both endpoints share: Anthropic's error shape, the request read and mapped."""

    def responder(self, send: Send, exchange: Exchange) -> Responder:
        return AnthropicResponder(send, exchange)

    async def read(
        self, request: Request, responder: Responder, *, whole: bool
    ) -> tuple[dict[str, Any], ReplySession] | None:
        """The request's body and its session; None when it was answered with a 4xx."""
        exchange = responder.exchange

        def read(body: dict[str, Any]) -> tuple[dict[str, Any], ReplySession]:
            if isinstance(body.get("model"), str):
                exchange.model = body["model"]
            chat = chat_request(
                body, upstream_model=self._upstream_model(body.get("model")), whole=whole
            )
            self.settings.fill_sampling(chat, body["model"])
            return body, self.upstream().reply_session(chat, body["model"])

        return await self.prepared(request, responder, read)

    def _headers(self, request: Request) -> dict[str, str]:
        """The request's headers as the upstream gets them: Anthropic's own left out, and the
        client's key (`x-api-key`, or a bearer token) as its Authorization where the client's
        key goes upstream at all (see `Upstream.authorization`)."""
        headers = {
            key: value
            for key, value in self.forwarded_headers(request).items()
            if not key.startswith(_ANTHROPIC_HEADERS)
        }
        given = dict(request.headers)
        if "authorization" not in given and given.get("x-api-key"):  # an empty key is none
            given["authorization"] = f"Bearer {given['x-api-key']}"
        authorization = self.upstream().authorization(given)
        if authorization:
            headers["authorization"] = authorization
        return headers

    def _upstream_model(self, model: object) -> str:
        if not isinstance(model, str) or not model:
            return ""  # rejected in chat_request
        if model.lower().startswith("claude") and not self.settings.maps(model):
            # No chat-completions server serves Anthropic's models under their names.
            raise _rejected(
                "model",
                f"no [[models]] rule of the proxy's config maps {model!r} to an upstream "
                'model; add one, such as [[models]] match = "claude-*" '
                'upstream_model = "<the upstream\'s model>"',
            )
        return self.settings.upstream_model(model)


class CountTokens(_MessagesHandler):
    """`/v1/messages/count_tokens`: an estimate, ~4 characters a token over the prompt the
    upstream would get (the tools prompt included); the `hermes-tools-estimate` header says
    so."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        read = await self.read(request, responder, whole=False)
        if read is None:
            return
        _, session = read
        if not await self.rendered(
            session, self.upstream().chat(self._headers(request)), responder
        ):
            return
        tokens = estimated_tokens(session.request()["messages"])
        body = json.dumps({"input_tokens": tokens}).encode()
        header = f"{CHARS_PER_TOKEN} characters a token".encode()
        await responder.whole(200, body, [(b"hermes-tools-estimate", header)])


class Messages(_MessagesHandler):
    """`/v1/messages`, whole and streamed."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        read = await self.read(request, responder, whole=True)
        if read is None:
            return
        body, session = read
        exchange.stream = body.get("stream") is True
        exchange.tools = len(body.get("tools") or [])
        # Not the query: Anthropic's (`?beta=true`) means nothing upstream.
        transport = self.upstream().chat(
            self._headers(request), request_bytes=exchange.request_bytes
        )
        if not await self.rendered(session, transport, responder):
            return
        model = body["model"]

        async def work() -> None:
            if exchange.stream:
                await self._stream(session, transport, model, responder)
            else:
                await self._whole(session, transport, model, responder)

        await cancel_on_disconnect(receive, responder, work)

    async def _whole(
        self,
        session: ReplySession,
        transport: UpstreamChat,
        model: str,
        responder: Responder,
    ) -> None:
        estimate = estimated_tokens(session.request()["messages"])
        try:
            completion = await awhole_reply(session, transport)
        except Exception as exc:
            await _relay(exc, responder, self)
            return
        message = anthropic_message(
            completion, model=model, stop_sequence=session.stop_sequence(), input_estimate=estimate
        )
        calls = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
        _count(responder.exchange, calls, message.get("invalid_tool_calls") or [])
        body = encode(message, SPACED)
        await responder.whole(200, body, responder.exchange.upstream_headers)

    async def _stream(
        self,
        session: ReplySession,
        transport: UpstreamChat,
        model: str,
        responder: Responder,
    ) -> None:
        """The reply as Messages events. The upstream is read in a task of its own, so that a
        `ping` goes out whenever it is silent for `PING_SECONDS` (a small model reading Claude
        Code's prompt is silent for minutes; idle connections are cut by clients and load
        balancers). Its first request is made before the answer starts, so that its failure
        comes back as an HTTP status, unless it takes longer than that."""
        exchange = responder.exchange
        events = MessageEvents(model, estimated_tokens(session.request()["messages"]))
        sender: MemoryObjectSendStream[_Item]
        receiver: MemoryObjectReceiveStream[_Item]
        sender, receiver = anyio.create_memory_object_stream(1)

        async def start() -> None:
            if not responder.started:
                await responder.start(200, [*SSE_HEADERS, *exchange.upstream_headers])
                await responder.body(sse(events.start()))

        async with anyio.create_task_group() as group:
            group.start_soon(_read_upstream, session, transport, sender)
            try:
                while True:
                    with anyio.move_on_after(PING_SECONDS) as waited:
                        try:
                            kind, value = await receiver.receive()
                        except anyio.EndOfStream:
                            break
                    if waited.cancelled_caught:
                        await start()
                        await responder.body(sse([_PING]))
                        continue
                    if kind == "failed" and not responder.started:
                        assert isinstance(value, Exception)
                        await _relay(value, responder, self)
                        return
                    await start()
                    if kind == "failed":
                        assert isinstance(value, Exception)
                        body, exchange.error = stream_failure(value, self.settings)
                        message = json.loads(body)["error"].get("message") or "The reply broke off."
                        await responder.finish(
                            sse([("error", error_data("api_error", str(message)))])
                        )
                        return
                    assert isinstance(value, dict)
                    out = events.chunk(value)
                    if out:
                        await responder.body(sse(out))
                await start()
                last = events.finish(session.stop_sequence())
                _count(exchange, events.call_ids, events.invalid)
                await responder.finish(sse(last))
            finally:
                group.cancel_scope.cancel()
                receiver.close()


# What the upstream reader hands the writer: ("chunk", a chunk) or ("failed", the exception).
_Item = tuple[str, "dict[str, Any] | Exception"]


async def _read_upstream(
    session: ReplySession,
    transport: UpstreamChat,
    sender: MemoryObjectSendStream[_Item],
) -> None:
    """Drive the policy over the upstream, handing on each chunk, then any failure."""
    async with sender, closed_at_end(astream_reply(session, transport)) as chunks:
        try:
            async for chunk in chunks:
                await sender.send(("chunk", chunk))
        except Exception as exc:
            await sender.send(("failed", exc))


def _count(exchange: Exchange, calls: list[str], invalid: list[dict[str, Any]]) -> None:
    """For the log line: the calls made and the unusable ones."""
    exchange.call_ids.update(calls)
    for number, call in enumerate(invalid):
        exchange.invalid_ids.add(str(call.get("id") or f"0:{number}"))


async def _relay(exc: Exception, responder: Responder, handler: Handler) -> None:
    """A failure before any of the answer was sent, in Anthropic's shape: an upstream error
    keeps its status and message; the rest as the chat front relays it."""
    if isinstance(exc, UpstreamError):
        responder.exchange.error = f"upstream_{exc.status}"
        message = upstream_message(exc)
        data = json.dumps(error_data(error_type(exc.status), message)).encode()
        await responder.whole(exc.status, data, relayed_headers(exc.headers))
        return
    await relay_failure(exc, responder, handler.settings)
