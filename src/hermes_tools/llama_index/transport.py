"""A LlamaIndex LLM in this process as a transport of the reply policy.

The policy's request (plain messages in the OpenAI shape, the caller's other parameters) becomes
a call of the LLM's own `chat` / `stream_chat`, which completion-only LLMs (`LlamaCPP`,
`HuggingFaceLLM`) answer through their `messages_to_prompt`; its responses come back as the
wire-shaped dicts the policy reads. LlamaIndex's LLMs take no stop sequences: the policy cuts
the text on its side, and a stream it no longer needs is closed, which stops the model. A
request that carries its tools (`native_tools="auto"`, first attempt) passes them as the
`tools` keyword, which LLMs that call tools natively (Ollama's) take, and their calls come
back as `tool_calls`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms import LLM

from hermes_tools._policy.endpoint import window_size
from hermes_tools._policy.request import NOT_KEYWORDS
from hermes_tools.errors import InnerModelError


class _LLMCalls:
    """One request's calls to `llm` (one per attempt the policy asks for). Any failure of the
    LLM fails the request, unless it continues a reply (then the reply stands)."""

    failures: tuple[type[BaseException], ...] = (Exception,)

    def __init__(self, llm: LLM) -> None:
        self._llm = llm

    def _call(self, request: Mapping[str, Any]) -> tuple[list[ChatMessage], dict[str, Any]]:
        messages = [_message(message) for message in request["messages"]]
        # Tools go as a keyword: LLMs that call tools natively (Ollama's) take them so.
        kwargs = {k: v for k, v in request.items() if k not in NOT_KEYWORDS or k == "tools"}
        return messages, kwargs

    def _chunk(self, response: ChatResponse, finish: str | None = None) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if response.delta:
            delta["content"] = response.delta
        thinking = response.additional_kwargs.get("thinking_delta")
        if isinstance(thinking, str) and thinking:
            delta["reasoning_content"] = thinking
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if finish is not None:
            choice["finish_reason"] = finish
        return {"choices": [choice], **_usage(response)}

    def _completion(self, response: ChatResponse) -> dict[str, Any]:
        if not isinstance(response, ChatResponse):
            raise InnerModelError(
                f"{type(self._llm).__name__}.chat returned {type(response).__name__}, not a "
                "ChatResponse."
            )
        text = "".join(
            block.text for block in response.message.blocks if isinstance(block, TextBlock)
        )
        thinking = "".join(
            block.content or ""
            for block in response.message.blocks
            if isinstance(block, ThinkingBlock)
        )
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["reasoning_content"] = thinking
        calls = native_calls(response)
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": _finish(response) or "stop"}
        return {"choices": [choice], **_usage(response)}

    def _nothing(self) -> InnerModelError:
        return InnerModelError(
            f"{type(self._llm).__name__} streamed nothing: not even an empty response. Check "
            "the LLM's own stream_chat() on the same messages."
        )


def llm_window(llm: LLM) -> int | None:
    """The context window an LLM's metadata gives, if it gives one."""
    return window_size(getattr(getattr(llm, "metadata", None), "context_window", None))


class LLMTransport(_LLMCalls):
    def context_window(self, model: str) -> int | None:
        return llm_window(self._llm)

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        messages, kwargs = self._call(request)
        return self._chunks(self._llm.stream_chat(messages, **kwargs))

    def _chunks(self, responses: Iterator[ChatResponse]) -> Iterator[dict[str, Any]]:
        finish = None
        seen = False
        try:
            for response in responses:
                seen = True
                finish = _finish(response) or finish
                yield self._chunk(response)
        finally:
            close = getattr(responses, "close", None)
            if close is not None:
                close()  # a model cut off by a stop sequence stops generating
        if not seen:
            raise self._nothing()
        yield _last(response, finish)

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        messages, kwargs = self._call(request)
        return self._completion(self._llm.chat(messages, **kwargs))


class AsyncLLMTransport(_LLMCalls):
    async def context_window(self, model: str) -> int | None:
        return llm_window(self._llm)

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The request's chunks (the request is made as they are first read)."""
        return self._chunks(request)

    async def _chunks(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        messages, kwargs = self._call(request)
        responses = await self._llm.astream_chat(messages, **kwargs)
        finish = None
        seen = False
        try:
            async for response in responses:
                seen = True
                finish = _finish(response) or finish
                yield self._chunk(response)
        finally:
            close = getattr(responses, "aclose", None)
            if close is not None:
                await close()
        if not seen:
            raise self._nothing()
        yield _last(response, finish)

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        messages, kwargs = self._call(request)
        return self._completion(await self._llm.achat(messages, **kwargs))


def _last(response: ChatResponse, finish: str | None) -> dict[str, Any]:
    """The stream's end: the finish reason, and the native calls its last response holds."""
    delta: dict[str, Any] = {}
    calls = native_calls(response)
    if calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish or "stop"}]}


def native_calls(response: ChatResponse) -> list[dict[str, Any]]:
    """The calls an LLM made natively (`ToolCallBlock`s, or `additional_kwargs["tool_calls"]`
    as Ollama's LLM keeps them), in the OpenAI shape."""
    calls = []
    for block in response.message.blocks:
        if isinstance(block, ToolCallBlock):
            calls.append((block.tool_call_id or "", block.tool_name, block.tool_kwargs))
    if not calls:
        for item in response.message.additional_kwargs.get("tool_calls") or []:
            function = _field(item, "function")
            calls.append(
                (_field(item, "id") or "", _field(function, "name"), _field(function, "arguments"))
            )
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {
                "name": str(name or ""),
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for call_id, name, arguments in calls
    ]


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _message(message: Mapping[str, Any]) -> ChatMessage:
    """A plain OpenAI-shaped message (text, or text and image parts) as LlamaIndex's."""
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return ChatMessage(role=message["role"], content=content or "")
    blocks: list[Any] = []
    for part in content:
        if part.get("type") == "text":
            blocks.append(TextBlock(text=part["text"]))
        elif part.get("type") == "image_url":
            blocks.append(ImageBlock(url=part["image_url"]["url"]))
    return ChatMessage(role=message["role"], blocks=blocks)


def _finish(response: ChatResponse) -> str | None:
    """The finish reason an LLM's raw response gives, where it gives one (llama.cpp does)."""
    raw = response.raw
    choices = raw.get("choices") if isinstance(raw, Mapping) else getattr(raw, "choices", None)
    if not choices:
        return None
    first = choices[0]
    reason = (
        first.get("finish_reason")
        if isinstance(first, Mapping)
        else getattr(first, "finish_reason", None)
    )
    if not isinstance(reason, str) or not reason:
        return None
    return "length" if reason in ("length", "max_tokens") else "stop"


def _usage(response: ChatResponse) -> dict[str, Any]:
    """Token counts as LlamaIndex's LLMs report them (`additional_kwargs`, or a raw usage)."""
    counts: Mapping[str, Any] = response.additional_kwargs
    if "prompt_tokens" not in counts:
        raw = response.raw
        usage = raw.get("usage") if isinstance(raw, Mapping) else None
        counts = usage if isinstance(usage, Mapping) else {}
    if counts.get("prompt_tokens") is None and counts.get("completion_tokens") is None:
        return {}
    prompt = int(counts.get("prompt_tokens") or 0)
    completion = int(counts.get("completion_tokens") or 0)
    total = int(counts.get("total_tokens") or prompt + completion)
    return {
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    }
