"""A LangChain chat model in this process as a transport of the reply policy.

The policy's request (plain messages in the OpenAI shape, stop sequences, the caller's other
parameters) becomes a call of the model's own `invoke` / `stream`; its messages come back as
the wire-shaped dicts the policy reads: text, reasoning (`reasoning_content`, or reasoning and
thinking blocks), usage, finish reason. The model's own `response_metadata` is kept for the
reply's last message. A model that takes no stop sequences is called without them (the policy
cuts the text on its side). A request that carries its tools (`native_tools="auto"`, first
attempt) binds them with the model's own `bind_tools`, and its native calls come back as
`tool_calls`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages

from hermes_tools._policy.endpoint import window_size
from hermes_tools._policy.request import NOT_KEYWORDS, stop_sequences
from hermes_tools.langchain.errors import HermesInnerModelError

# Content blocks that hold a native call (read from `tool_call_chunks` / `tool_calls`).
_CALL_BLOCKS = ("tool_use", "tool_call", "tool_call_chunk", "function_call", "server_tool_call")
# How models report a reply cut by its length, across providers.
_CUT = ("length", "max_tokens", "MAX_TOKENS", "model_length")


class _ChatModelCalls:
    """One request's calls to `model` (one per attempt the policy asks for). Any failure of
    the model fails the request, unless it continues a reply (then the reply stands)."""

    failures: tuple[type[BaseException], ...] = (Exception,)

    def __init__(
        self,
        model: BaseChatModel,
        callbacks: CallbackManager | AsyncCallbackManager | list[Any],
        stop_taken: list[bool],
    ) -> None:
        self._model = model
        self._config: Any = {"callbacks": callbacks}
        # Shared with the wrapper across requests: whether the model takes `stop`.
        self._stop_taken = stop_taken
        self.metadata: dict[str, Any] = {}

    # -- shapes -------------------------------------------------------------------------------

    def _call(self, request: Mapping[str, Any]) -> tuple[Any, list[BaseMessage], dict[str, Any]]:
        """What to call (the model, or the model with its tools bound natively), the
        messages, and the other parameters."""
        messages = convert_to_messages(request["messages"])
        kwargs = {k: v for k, v in request.items() if k not in NOT_KEYWORDS}
        runnable: Any = self._model
        if request.get("tools"):  # native tools: the model's own bind_tools (may refuse)
            choice = {"tool_choice": request["tool_choice"]} if request.get("tool_choice") else {}
            runnable = self._model.bind_tools(request["tools"], **choice)
        stop = stop_sequences(request.get("stop"))
        if stop and self._stop_taken[0]:
            kwargs["stop"] = stop
        return runnable, messages, kwargs

    def _refused_stop(self, error: Exception, kwargs: Mapping[str, Any]) -> bool:
        """The model refused the stop sequences (it takes none): remembered."""
        if "stop" not in kwargs or "stop" not in str(error).lower():
            return False
        if not isinstance(error, (TypeError, ValueError, NotImplementedError)):
            return False
        self._stop_taken[0] = False
        return True

    def _first(self, chunks: Iterator[BaseMessage]) -> tuple[BaseMessage, Iterator[BaseMessage]]:
        first = next(chunks, None)
        if first is None:
            raise _streamed_nothing(self._model)
        return first, chunks

    def _wire_stream(
        self, first: BaseMessage, rest: Iterator[BaseMessage]
    ) -> Iterator[dict[str, Any]]:
        try:
            yield self._chunk(first)
            finish = _finish_reason(first)
            for message in rest:
                finish = _finish_reason(message) or finish
                yield self._chunk(message)
            yield _last(finish)
        finally:
            close = getattr(rest, "close", None)
            if close is not None:
                close()  # a model cut off by a stop sequence stops generating

    def _chunk(self, message: BaseMessage) -> dict[str, Any]:
        self._keep_metadata(message)
        text, reasoning = _texts(message, self._model)
        delta: dict[str, Any] = {}
        if text:
            delta["content"] = text
        if reasoning:
            delta["reasoning_content"] = reasoning
        calls = _call_deltas(message)
        if calls:
            delta["tool_calls"] = calls
        chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": delta}]}
        chunk.update(self._envelope(message))
        usage = _usage(message)
        if usage is not None:
            chunk["usage"] = usage
        return chunk

    def _completion(self, message: BaseMessage) -> dict[str, Any]:
        self._keep_metadata(message)
        text, reasoning = _texts(message, self._model)
        reply: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning:
            reply["reasoning_content"] = reasoning
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            reply["tool_calls"] = [
                {
                    "id": call.get("id") or "",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for call in calls
            ]
        completion: dict[str, Any] = {
            "choices": [
                {"index": 0, "message": reply, "finish_reason": _finish_reason(message) or "stop"}
            ],
            **self._envelope(message),
        }
        usage = _usage(message)
        if usage is not None:
            completion["usage"] = usage
        return completion

    def _envelope(self, message: BaseMessage) -> dict[str, Any]:
        metadata = message.response_metadata or {}
        model = metadata.get("model_name") or metadata.get("model")
        envelope: dict[str, Any] = {}
        if isinstance(model, str) and model:
            envelope["model"] = model
        if message.id:
            envelope["id"] = message.id
        return envelope

    def _keep_metadata(self, message: BaseMessage) -> None:
        for key, value in (message.response_metadata or {}).items():
            if value is not None and value != "":
                self.metadata[key] = value


# Where LangChain's model classes keep the window they run with: ChatLlamaCpp's n_ctx,
# ChatOllama's num_ctx (None: Ollama's own default, not known here).
_WINDOW_FIELDS = ("n_ctx", "num_ctx", "context_window", "max_context_length")


def model_window(model: object) -> int | None:
    """The context window a model in this process says it runs with, if it says."""
    windows = (window_size(getattr(model, name, None)) for name in _WINDOW_FIELDS)
    return next((window for window in windows if window), None)


class ChatModelTransport(_ChatModelCalls):
    def context_window(self, model: str) -> int | None:
        return model_window(self._model)

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        runnable, messages, kwargs = self._call(request)
        try:
            first, rest = self._first(runnable.stream(messages, self._config, **kwargs))
        except Exception as error:
            if not self._refused_stop(error, kwargs):
                raise
            kwargs.pop("stop")
            first, rest = self._first(runnable.stream(messages, self._config, **kwargs))
        return self._wire_stream(first, rest)

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        runnable, messages, kwargs = self._call(request)
        try:
            message = runnable.invoke(messages, self._config, **kwargs)
        except Exception as error:
            if not self._refused_stop(error, kwargs):
                raise
            kwargs.pop("stop")
            message = runnable.invoke(messages, self._config, **kwargs)
        return self._completion(message)


class AsyncChatModelTransport(_ChatModelCalls):
    async def context_window(self, model: str) -> int | None:
        return model_window(self._model)

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The request's chunks (the request is made as they are first read)."""
        return self._chunks(request)

    async def _chunks(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        runnable, messages, kwargs = self._call(request)
        chunks = runnable.astream(messages, self._config, **kwargs)
        try:
            first = await anext(chunks, None)
        except Exception as error:
            if not self._refused_stop(error, kwargs):
                raise
            kwargs.pop("stop")
            chunks = runnable.astream(messages, self._config, **kwargs)
            first = await anext(chunks, None)
        if first is None:
            raise _streamed_nothing(self._model)
        yield self._chunk(first)
        finish = _finish_reason(first)
        async for message in chunks:
            finish = _finish_reason(message) or finish
            yield self._chunk(message)
        yield _last(finish)

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        runnable, messages, kwargs = self._call(request)
        try:
            message = await runnable.ainvoke(messages, self._config, **kwargs)
        except Exception as error:
            if not self._refused_stop(error, kwargs):
                raise
            kwargs.pop("stop")
            message = await runnable.ainvoke(messages, self._config, **kwargs)
        return self._completion(message)


def _texts(message: BaseMessage, model: BaseChatModel) -> tuple[str, str]:
    """A message's text and reasoning; any other content cannot be read as text."""
    reasoning = message.additional_kwargs.get("reasoning_content")
    reasoning_parts = [reasoning] if isinstance(reasoning, str) else []
    content = message.content
    if isinstance(content, str):
        return content, "".join(reasoning_parts)
    texts: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind in ("reasoning", "thinking"):
            value = block.get(kind) or block.get("text") or ""
            reasoning_parts.append(value if isinstance(value, str) else "")
        elif kind in _CALL_BLOCKS:
            continue  # a native call: see `_call_deltas`
        else:
            raise HermesInnerModelError(
                f"{type(model).__name__} answered with a {kind!r} content block; a model "
                "given tool calling by hermes-tools must answer with text. If it calls tools "
                "natively, use it without with_tool_calling."
            )
    return "".join(texts), "".join(reasoning_parts)


def _call_deltas(message: BaseMessage) -> list[dict[str, Any]]:
    """A streamed message's native call fragments, as `tool_calls` deltas."""
    fragments = getattr(message, "tool_call_chunks", None) or []
    return [
        {
            "index": fragment.get("index") if fragment.get("index") is not None else position,
            "id": fragment.get("id") or "",
            "type": "function",
            "function": {
                "name": fragment.get("name") or "",
                "arguments": fragment.get("args") or "",
            },
        }
        for position, fragment in enumerate(fragments)
    ]


def _finish_reason(message: BaseMessage) -> str | None:
    metadata = message.response_metadata or {}
    for key in ("finish_reason", "done_reason", "stop_reason"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return "length" if value in _CUT else "stop"
    return None


def _usage(message: BaseMessage) -> dict[str, Any] | None:
    usage = getattr(message, "usage_metadata", None)
    if not usage:
        return None
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }


def _last(finish: str | None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": finish or "stop"}]}


def _streamed_nothing(model: BaseChatModel) -> HermesInnerModelError:
    return HermesInnerModelError(
        f"{type(model).__name__} streamed nothing: not even an empty message. Check the "
        "model's own stream() on the same messages."
    )
