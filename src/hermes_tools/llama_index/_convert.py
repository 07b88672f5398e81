"""Conversions between LlamaIndex chat messages and the OpenAI shapes of the reply policy.

`to_openai_messages` turns LlamaIndex history into OpenAI chat messages (the format engine then
writes them as text), block by block as LlamaIndex's OpenAI LLM does; `resolve_tool_choice`
spells a tool choice as OpenAI does. `chat_response` turns a
whole `chat.completion` (the reply policy's, a plain dict) into a `ChatResponse`;
`ReplyBuilder` turns streamed chunks into cumulative `ChatResponse`s (each holds the message
so far and its `delta`), both shaped as `OpenAILike` shapes them: calls are `ToolCallBlock`s
whose `tool_kwargs` are the arguments as JSON text, and `additional_kwargs["tool_calls"]`
holds the `openai` SDK's call objects.

Only shapes are mapped here; what a reply holds was decided by the reply policy. Invalid
calls (listed apart by the policy) become `ToolCallBlock`s holding the text the model wrote,
with their reasons in `additional_kwargs["tool_call_errors"]` (id -> error), so an agent
answers them with an error the model reads and nothing runs (see `tool_selections`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    ChatResponse,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.tools import ToolSelection
from openai.types.chat import ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction

from hermes_tools._json_text.partial import partial_json
from hermes_tools._policy.reply import (
    CallPart,
    EndPart,
    ReasoningPart,
    ReplyPart,
    TextPart,
    UsagePart,
)

_ROLES = {"chatbot": "assistant", "model": "assistant"}

# -- LlamaIndex messages -> OpenAI messages --------------------------------------------------


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [to_openai_message(message) for message in messages]


def to_openai_message(message: ChatMessage) -> dict[str, Any]:
    role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
    role = _ROLES.get(role, role)
    parts: list[dict[str, Any]] = []
    for block in message.blocks:
        part = _content_part(block)
        if part is not None:
            parts.append(part)
    texts = [part["text"] for part in parts if part["type"] == "text"]
    content: Any = "".join(texts)
    if len(texts) != len(parts):
        content = parts
    converted: dict[str, Any] = {"role": role, "content": content}
    extra = message.additional_kwargs
    if role == "assistant":
        calls = _tool_calls_of(message)
        if calls:
            converted["tool_calls"] = calls
            if not content:
                converted["content"] = None
    elif role == "tool" and extra.get("tool_call_id"):
        converted["tool_call_id"] = extra["tool_call_id"]
    name = extra.get("name")
    if isinstance(name, str) and name:
        converted["name"] = name
    return converted


def _content_part(block: object) -> dict[str, Any] | None:
    """One block as an OpenAI content part, as `llama-index-llms-openai` writes it."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "image_url", "image_url": _image_url(block)}
    if isinstance(block, AudioBlock):
        data = block.resolve_audio(as_base64=True).read().decode("ascii")
        return {"type": "input_audio", "input_audio": {"data": data, "format": block.format}}
    if isinstance(block, DocumentBlock):
        if isinstance(block.data, bytes) and block.data:
            data = block.data.decode("ascii")  # stored base64-encoded
        else:
            data = block._get_b64_string(block.resolve_document())
        file = {
            "filename": block.title,
            "file_data": f"data:{block._guess_mimetype()};base64,{data}",
        }
        return {"type": "file", "file": file}
    if isinstance(block, (ThinkingBlock, ToolCallBlock)):
        return None  # reasoning is not sent back; calls travel as `tool_calls`
    raise ValueError(
        f"Unsupported content block type: {type(block).__name__}. HermesLLM sends text, "
        "image, audio and document blocks; convert others to one of them."
    )


def _image_url(block: ImageBlock) -> dict[str, Any]:
    if block.url is not None:
        url = str(block.url)
    else:
        encoded = block.resolve_image(as_base64=True).read().decode("ascii")
        url = f"data:{block.image_mimetype or 'image/png'};base64,{encoded}"
    image_url: dict[str, Any] = {"url": url}
    if block.detail:
        image_url["detail"] = block.detail
    return image_url


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


def resolve_tool_choice(
    choice: str | dict[str, Any] | None, tool_required: bool
) -> str | dict[str, Any]:
    """LlamaIndex's tool choice (a name, an OpenAI value, or nothing) as OpenAI spells it."""
    if choice is None:
        return "required" if tool_required else "auto"
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    return choice


# -- OpenAI replies -> ChatResponses ---------------------------------------------------------


def token_counts(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """As LlamaIndex's OpenAI LLM reports them in `ChatResponse.additional_kwargs`."""
    if usage is None:
        return {}
    return {
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }


def chat_response(completion: Mapping[str, Any], raw: Any = None) -> ChatResponse:
    """A whole reply (its first choice, as OpenAILike reads it); `raw`: what `raw` holds
    (the completion itself if not given)."""
    choice = completion["choices"][0]
    message = choice["message"]
    blocks: list[Any] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(ThinkingBlock(content=reasoning))
    if message.get("content"):
        blocks.append(TextBlock(text=message["content"]))
    calls = [
        ChatCompletionMessageToolCall.model_validate(call)
        for call in message.get("tool_calls") or []
        if call.get("type", "function") == "function"
    ]
    for call in calls:
        blocks.append(
            ToolCallBlock(
                tool_call_id=call.id,
                tool_name=call.function.name,
                tool_kwargs=call.function.arguments,
            )
        )
    invalid = list(message.get("invalid_tool_calls") or [])
    blocks += [_invalid_block(item) for item in invalid]
    additional: dict[str, Any] = {}
    if calls:
        additional["tool_calls"] = calls
    additional.update(_reports(invalid, message))
    return ChatResponse(
        message=ChatMessage(
            role=MessageRole.ASSISTANT, blocks=blocks, additional_kwargs=additional
        ),
        raw=completion if raw is None else raw,
        additional_kwargs=token_counts(completion.get("usage")),
    )


def _invalid_block(item: dict[str, Any]) -> ToolCallBlock:
    return ToolCallBlock(
        tool_call_id=item["id"], tool_name=item.get("name") or "", tool_kwargs=item["arguments"]
    )


def _reports(invalid: list[dict[str, Any]], extensions: Mapping[str, Any]) -> dict[str, Any]:
    """The reply policy's reports: why calls were invalid, calls dropped, repairs, text after
    an end-of-turn token."""
    reports: dict[str, Any] = {}
    if invalid:
        reports["tool_call_errors"] = {item["id"]: item["error"] for item in invalid}
    for key in ("dropped_tool_calls", "repairs", "after_end"):
        if extensions.get(key):
            reports[key] = extensions[key]
    return reports


class ReplyBuilder:
    """Builds the cumulative responses of one streamed reply (its first choice)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ChoiceDeltaToolCall] = []  # as OpenAILike accumulates them
        self._invalid: list[dict[str, Any]] = []
        self._reports: dict[str, Any] = {}

    def part(self, part: ReplyPart, raw: Any) -> ChatResponse:
        """The response after this part; `raw`: what its `raw` holds (the part as an OpenAI
        chunk)."""
        thinking = text = ""
        additional: dict[str, Any] = {}
        if isinstance(part, UsagePart):
            additional = token_counts(part.usage)
        elif part.choice != 0:
            pass  # as OpenAILike: a stream is one message
        elif isinstance(part, ReasoningPart):
            thinking = part.text
            self._reasoning.append(thinking)
            additional["thinking_delta"] = thinking
        elif isinstance(part, TextPart):
            text = part.text
            self._content.append(text)
        elif isinstance(part, CallPart):
            function = ChoiceDeltaToolCallFunction(name=part.name, arguments=part.arguments)
            self._add_call(ChoiceDeltaToolCall(index=part.index, id=part.id, function=function))
        elif isinstance(part, EndPart):
            self._invalid = part.invalid_tool_calls
            self._reports = _reports(self._invalid, part.extensions)
        return ChatResponse(
            message=self._message(), delta=text, raw=raw, additional_kwargs=additional
        )

    def _add_call(self, call: ChoiceDeltaToolCall) -> None:
        while len(self._calls) <= call.index:
            self._calls.append(
                ChoiceDeltaToolCall(
                    index=len(self._calls),
                    id="",
                    type="function",
                    function=ChoiceDeltaToolCallFunction(name="", arguments=""),
                )
            )
        target = self._calls[call.index]
        target.id = (target.id or "") + (call.id or "")
        if call.function is not None and target.function is not None:
            target.function.name = (target.function.name or "") + (call.function.name or "")
            target.function.arguments = (target.function.arguments or "") + (
                call.function.arguments or ""
            )

    def _message(self) -> ChatMessage:
        blocks: list[Any] = []
        reasoning = "".join(self._reasoning)
        if reasoning:
            blocks.append(ThinkingBlock(content=reasoning))
        blocks.append(TextBlock(text="".join(self._content)))
        invalid = {item["id"] for item in self._invalid}
        for call in self._calls:
            assert call.function is not None
            if call.id not in invalid:
                blocks.append(
                    ToolCallBlock(
                        tool_call_id=call.id,
                        tool_name=call.function.name or "",
                        tool_kwargs=call.function.arguments or "",
                    )
                )
        # The invalid calls after the valid ones, streamed or not, as the whole message has them.
        blocks += [_invalid_block(item) for item in self._invalid]
        additional: dict[str, Any] = {"tool_calls": list(self._calls)} if self._calls else {}
        additional.update(self._reports)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks, additional_kwargs=additional)


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
                    tool_name=invalid_tool_name(block.tool_name, errors[call_id]),
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


def invalid_tool_name(name: str | None, error: str) -> str:
    return f"(invalid call to {name or 'a tool'}: {error})"
