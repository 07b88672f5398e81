"""`HermesLLM`: a LlamaIndex function-calling LLM for endpoints without tool calling.

This module is wiring: requests go through `hermes_tools.wrap`, replies through
`convert.ReplyBuilder`. Every call streams from the endpoint; `chat` is the last response of
`stream_chat`, so the two always agree.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.generic_utils import (
    achat_to_completion_decorator,
    astream_chat_to_completion_decorator,
    chat_to_completion_decorator,
    stream_chat_to_completion_decorator,
)
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, model_validator
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import ToolSelection

from hermes_tools.adapter_settings import HermesSettings
from hermes_tools.llama_index.convert import (
    ReplyBuilder,
    keep_one_call,
    to_openai_messages,
    tool_selections,
)

if TYPE_CHECKING:
    from llama_index.core.tools.types import BaseTool


class HermesLLM(HermesSettings, FunctionCallingLLM):
    """LlamaIndex LLM for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `OpenAILike(model=..., api_base=...)` on models or servers without native
    tools: `FunctionAgent`, `AgentWorkflow`, `predict_and_call` and `structured_predict` work
    as they do on OpenAI.

    Example:
        ```python
        from hermes_tools.llama_index import HermesLLM

        llm = HermesLLM(model="qwen2.5:7b", api_base="http://localhost:11434/v1")
        agent = FunctionAgent(tools=[get_weather], llm=llm)
        ```
    """

    model: str = Field(description="The endpoint's model name.")
    api_base: str | None = Field(
        default=None, description="The endpoint; read from OPENAI_BASE_URL / OPENAI_API_BASE."
    )
    api_key: str | None = Field(
        default=None, exclude=True, description="Read from OPENAI_API_KEY if unset."
    )
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = Field(default=60.0, description="Seconds to wait for the endpoint.")
    max_retries: int = 3
    additional_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Other request parameters, sent as they are."
    )
    context_window: int = DEFAULT_CONTEXT_WINDOW
    stream_usage: bool = True

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, values: Any) -> Any:
        if isinstance(values, dict):
            if values.get("api_base") is None:
                values["api_base"] = os.environ.get("OPENAI_BASE_URL") or os.environ.get(
                    "OPENAI_API_BASE"
                )
            if values.get("api_key") is None:
                values["api_key"] = os.environ.get("OPENAI_API_KEY")
        return values

    def _client_options(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key or "not-needed",
            "base_url": self.api_base,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
        }

    @classmethod
    def class_name(cls) -> str:
        return "HermesLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_tokens or -1,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name=self.model,
            system_role=MessageRole.SYSTEM,
        )

    # -- clients ------------------------------------------------------------------------------

    def _request(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
        params = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.additional_kwargs,
            **kwargs,
        }
        params = {key: value for key, value in params.items() if value is not None}
        params["messages"] = to_openai_messages(messages)
        params["stream"] = True
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        return params

    # -- chat ---------------------------------------------------------------------------------

    def _responses(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]
    ) -> Generator[ChatResponse, None, None]:
        builder = ReplyBuilder()
        with self.client.chat.completions.create(**self._request(messages, kwargs)) as stream:
            for chunk in stream:
                response = builder.chunk(chunk)
                if response is not None:
                    yield response
        yield builder.final()

    async def _aresponses(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]
    ) -> AsyncGenerator[ChatResponse, None]:
        builder = ReplyBuilder()
        stream = await self.async_client.chat.completions.create(**self._request(messages, kwargs))
        async with stream:
            async for chunk in stream:
                response = builder.chunk(chunk)
                if response is not None:
                    yield response
        yield builder.final()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        (final,) = deque(self._responses(messages, kwargs), maxlen=1)
        return _without_delta(final)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._responses(messages, kwargs)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        final = None
        async for response in self._aresponses(messages, kwargs):
            final = response
        assert final is not None  # the builder always yields its final response
        return _without_delta(final)

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        return self._aresponses(messages, kwargs)

    # -- completion (through chat) ------------------------------------------------------------

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return chat_to_completion_decorator(self.chat)(prompt, **kwargs)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        return stream_chat_to_completion_decorator(self.stream_chat)(prompt, **kwargs)

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return await achat_to_completion_decorator(self.achat)(prompt, **kwargs)

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        return await astream_chat_to_completion_decorator(self.astream_chat)(prompt, **kwargs)

    # -- tools --------------------------------------------------------------------------------

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        tool_choice: str | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])  # never the caller's list
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        specs = [tool.metadata.to_openai_tool(skip_length_check=True) for tool in tools]
        request: dict[str, Any] = {"messages": messages, **kwargs}
        if specs:
            request["tools"] = specs
            request["tool_choice"] = resolve_tool_choice(tool_choice, tool_required)
            request["parallel_tool_calls"] = allow_parallel_tool_calls
        return request

    def _validate_chat_with_tools_response(
        self,
        response: ChatResponse,
        tools: Sequence[BaseTool],
        allow_parallel_tool_calls: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        if not allow_parallel_tool_calls:
            keep_one_call(response.message)
        return response

    def get_tool_calls_from_response(
        self,
        response: ChatResponse,
        error_on_no_tool_call: bool = True,
        **kwargs: Any,
    ) -> list[ToolSelection]:
        selections = tool_selections(response.message)
        if not selections and error_on_no_tool_call:
            raise ValueError(
                "The model answered without calling a tool. Pass tool_required=True (or "
                "tool_choice) to make it call one, or error_on_no_tool_call=False to accept "
                "plain answers."
            )
        return selections


def resolve_tool_choice(
    choice: str | dict[str, Any] | None, tool_required: bool
) -> str | dict[str, Any]:
    """LlamaIndex's tool choice (a name, an OpenAI value, or nothing) as OpenAI spells it."""
    if choice is None:
        return "required" if tool_required else "auto"
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    return choice


def _without_delta(response: ChatResponse) -> ChatResponse:
    return ChatResponse(
        message=response.message, raw=response.raw, additional_kwargs=response.additional_kwargs
    )
