"""Conversions between LlamaIndex chat messages and the OpenAI shapes of the endpoint layer.

`to_openai_messages` turns LlamaIndex history into OpenAI chat messages (the format engine then
writes them as text). `ReplyBuilder` turns the wrapped client's chunks into cumulative
`ChatResponse`s, as LlamaIndex's own LLMs stream: each holds the message so far and its
`delta`; the last one holds the settled message, calls included.

Calls travel as `ToolCallBlock`s (and in `additional_kwargs["tool_calls"]`). In the settled
message a valid call has its arguments as a dict; an invalid one keeps the raw text the model
wrote, and its reason is in `additional_kwargs["tool_call_errors"]` (id -> error).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.tools import ToolSelection
from openai.types.chat import ChatCompletionChunk

from hermes_tools.partial_json import partial_json

_ROLES = {"chatbot": "assistant", "model": "assistant"}

# -- LlamaIndex messages -> OpenAI messages --------------------------------------------------


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [to_openai_message(message) for message in messages]


def to_openai_message(message: ChatMessage) -> dict[str, Any]:
    role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
    role = _ROLES.get(role, role)
    texts = [block.text for block in message.blocks if isinstance(block, TextBlock)]
    images = [_image_part(block) for block in message.blocks if isinstance(block, ImageBlock)]
    content: Any = "\n".join(texts)
    if images:
        content = [{"type": "text", "text": text} for text in texts] + images
    converted: dict[str, Any] = {"role": role, "content": content}
    extra = message.additional_kwargs
    if role == "assistant":
        calls = _tool_calls_of(message)
        if calls:
            converted["tool_calls"] = calls
    elif role == "tool" and extra.get("tool_call_id"):
        converted["tool_call_id"] = extra["tool_call_id"]
    name = extra.get("name")
    if isinstance(name, str) and name:
        converted["name"] = name
    return converted


def _tool_calls_of(message: ChatMessage) -> list[dict[str, Any]]:
    blocks = [block for block in message.blocks if isinstance(block, ToolCallBlock)]
    if blocks:
        return [
            {
                "id": block.tool_call_id or "",
                "type": "function",
                "function": {
                    "name": block.tool_name,
                    "arguments": block.tool_kwargs
                    if isinstance(block.tool_kwargs, str)
                    else json.dumps(block.tool_kwargs, ensure_ascii=False),
                },
            }
            for block in blocks
        ]
    calls = []
    for call in message.additional_kwargs.get("tool_calls") or []:
        data = call.model_dump() if hasattr(call, "model_dump") else dict(call)
        function = data.get("function") or {}
        calls.append(
            {
                "id": data.get("id") or "",
                "type": "function",
                "function": {
                    "name": function.get("name") or "",
                    "arguments": function.get("arguments") or "",
                },
            }
        )
    return calls


def _image_part(block: ImageBlock) -> dict[str, Any]:
    if block.url is not None:
        url = str(block.url)
    else:
        encoded = block.resolve_image(as_base64=True).read().decode("ascii")
        url = f"data:{block.image_mimetype or 'image/png'};base64,{encoded}"
    return {"type": "image_url", "image_url": {"url": url}}


# -- OpenAI chunks -> cumulative ChatResponses -----------------------------------------------


class ReplyBuilder:
    """Builds the cumulative responses of one streamed reply."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}  # index -> id, name, arguments so far
        self._invalid: list[dict[str, Any]] = []
        self._usage: dict[str, Any] | None = None
        self._last_raw: ChatCompletionChunk | None = None

    def chunk(self, chunk: ChatCompletionChunk) -> ChatResponse | None:
        """The response after this chunk, or None when it changed nothing visible."""
        self._last_raw = chunk
        if chunk.usage is not None:
            self._usage = chunk.usage.model_dump(exclude_none=True)
        if not chunk.choices:
            return None
        delta = chunk.choices[0].delta
        extra = delta.model_extra or {}
        if isinstance(extra.get("invalid_tool_calls"), list):
            self._invalid = extra["invalid_tool_calls"]
        thinking = extra.get("reasoning_content") or ""
        text = delta.content or ""
        for call in delta.tool_calls or []:
            entry = self._calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += call.id or ""
            if call.function is not None:
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
        self._reasoning.append(thinking)
        self._content.append(text)
        if not (thinking or text or delta.tool_calls):
            return None
        additional = {"thinking_delta": thinking} if thinking else {}
        return ChatResponse(
            message=self._message(settled=False),
            delta=text,
            raw=chunk,
            additional_kwargs=additional,
        )

    def final(self) -> ChatResponse:
        """The settled message, with usage."""
        counts: dict[str, Any] = {}
        if self._usage:
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                if key in self._usage:
                    counts[key] = self._usage[key]
        return ChatResponse(
            message=self._message(settled=True),
            delta="",
            raw=self._last_raw,
            additional_kwargs=counts,
        )

    def _message(self, *, settled: bool) -> ChatMessage:
        blocks: list[Any] = []
        reasoning = "".join(self._reasoning)
        if reasoning:
            blocks.append(ThinkingBlock(content=reasoning))
        blocks.append(TextBlock(text="".join(self._content)))
        errors = {item["id"]: item for item in self._invalid} if settled else {}
        openai_calls = []
        for call in self._calls.values():
            invalid = errors.pop(call["id"], None)
            arguments: dict[str, Any] | str = call["arguments"]
            if invalid is not None:
                arguments = invalid.get("arguments") or call["arguments"]
            elif settled:
                arguments = json.loads(call["arguments"] or "{}")
            blocks.append(
                ToolCallBlock(
                    tool_call_id=call["id"], tool_name=call["name"], tool_kwargs=arguments
                )
            )
            openai_calls.append(_openai_call(call["id"], call["name"], call["arguments"]))
        for invalid in errors.values():  # invalid calls that never had a name to stream
            blocks.append(
                ToolCallBlock(
                    tool_call_id=invalid["id"],
                    tool_name=invalid.get("name") or "",
                    tool_kwargs=invalid.get("arguments") or "",
                )
            )
            openai_calls.append(
                _openai_call(
                    invalid["id"], invalid.get("name") or "", invalid.get("arguments") or ""
                )
            )
        additional: dict[str, Any] = {}
        if openai_calls:
            additional["tool_calls"] = openai_calls
        if settled and self._invalid:
            additional["tool_call_errors"] = {item["id"]: item["error"] for item in self._invalid}
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks, additional_kwargs=additional)


def _openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- ChatResponse -> tool selections ---------------------------------------------------------


def tool_selections(message: ChatMessage) -> list[ToolSelection]:
    """The calls in a message as LlamaIndex tool selections.

    A call still being streamed gets the arguments written so far. An invalid call gets a tool
    name that matches no tool and says what was wrong, so an agent answers it with an error
    the model reads, and nothing runs.
    """
    errors: dict[str, str] = message.additional_kwargs.get("tool_call_errors") or {}
    selections = []
    for block in message.blocks:
        if not isinstance(block, ToolCallBlock):
            continue
        call_id = block.tool_call_id or ""
        if call_id in errors:
            selections.append(
                ToolSelection(
                    tool_id=call_id,
                    tool_name=f"(invalid call to {block.tool_name or 'a tool'}: {errors[call_id]})",
                    tool_kwargs={},
                )
            )
            continue
        kwargs = block.tool_kwargs
        if isinstance(kwargs, str):
            partial = partial_json(kwargs)
            kwargs = partial if isinstance(partial, dict) else {}
        selections.append(
            ToolSelection(tool_id=call_id, tool_name=block.tool_name, tool_kwargs=kwargs)
        )
    return selections


def keep_one_call(message: ChatMessage) -> None:
    """Trim a message to its first usable call (parallel calls not allowed)."""
    errors = message.additional_kwargs.get("tool_call_errors") or {}
    calls = [block for block in message.blocks if isinstance(block, ToolCallBlock)]
    if len(calls) <= 1:
        return
    keep = next((block for block in calls if block.tool_call_id not in errors), calls[0])
    message.blocks = [
        block for block in message.blocks if not isinstance(block, ToolCallBlock) or block is keep
    ]
    if "tool_calls" in message.additional_kwargs:
        message.additional_kwargs["tool_calls"] = [
            call
            for call in message.additional_kwargs["tool_calls"]
            if call.get("id") == keep.tool_call_id
        ]
