"""The policy's answer in the Messages API's shapes, as plain dicts (no I/O): a whole
`chat.completion` as a `message` (`anthropic_message`), its `chat.completion.chunk` dicts as
the stream's events (`MessageEvents`), and errors as Anthropic writes them.

The stream: `message_start` and a `ping`, then content blocks in the order the reply makes them
(`thinking` from reasoning, `text`, `tool_use`), each `content_block_start` /
`content_block_delta` / `content_block_stop`, then `message_delta` (stop reason, usage) and
`message_stop`. Text and reasoning stream as they come. A `tool_use` block goes out when its
call is complete: Anthropic's clients parse `input_json_delta` as partial JSON on every delta
and cannot take a block back, so a call the policy finds unusable after streaming it (the
chat front ends its arguments with text no JSON reader accepts) is never shown here; the
policy holds a call until it is valid in most cases anyway. Unusable calls are listed in the
extension field `invalid_tool_calls` (the whole message's, and the `message_delta`'s).

Token counts a server does not report are estimated at `CHARS_PER_TOKEN` characters a token.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from hermes_tools._policy.reply import (
    CallPart,
    EndPart,
    ReasoningPart,
    ReplyPart,
    TextPart,
    UsagePart,
)
from hermes_tools.serve.json_codec import SPACED, encode

Event = tuple[str, dict[str, Any]]  # an SSE event's name and data

# Characters per token for the estimates (count_tokens, and usage a server does not report).
CHARS_PER_TOKEN = 4


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


# -- token estimates ------------------------------------------------------------------------------


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
    except (ValueError, RecursionError):  # a server's own call: anything it wrote
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
    """The policy's reply parts as Messages stream events (sans-I/O): `start()`, then
    `part()` for each part, then `finish()`."""

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
        return [("message_start", {"type": "message_start", "message": message}), PING]

    def part(self, part: ReplyPart) -> list[Event]:
        if isinstance(part, UsagePart):
            self._usage = part.usage
            return []
        if part.choice != 0:
            return []  # Messages has one reply per request
        if isinstance(part, ReasoningPart):
            return self._stream("thinking", part.text)
        if isinstance(part, TextPart):
            return self._stream("text", part.text)
        if isinstance(part, CallPart):
            return self._tool_call(part)
        if isinstance(part, EndPart):
            self.invalid += part.invalid_tool_calls
            self._finish = part.finish_reason
        return []

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

    def _tool_call(self, call: CallPart) -> list[Event]:
        out: list[Event] = []
        if call.id:
            out += self._end_call()
            self._call = {"id": call.id, "name": call.name or "", "arguments": []}
        if self._call is not None and call.arguments:
            self._call["arguments"].append(call.arguments)
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


PING: Event = ("ping", {"type": "ping"})


def _event(kind: str, **fields: Any) -> Event:
    return kind, {"type": kind, **fields}


def sse(events: list[Event]) -> bytes:
    return b"".join(
        b"event: " + name.encode() + b"\ndata: " + encode(data, SPACED) + b"\n\n"
        for name, data in events
    )
