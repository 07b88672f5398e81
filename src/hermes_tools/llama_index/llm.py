"""`HermesLLM`: a LlamaIndex function-calling LLM for endpoints without tool calling.

This module is wiring: requests go through `hermes_tools.wrap` (which decides what a reply
holds), replies through `convert`. As with `OpenAILike`, `chat` makes a plain request and
`stream_chat` streams; `complete` goes through the same request as `chat`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
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
from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW, DEFAULT_TEMPERATURE
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import ToolOutput, ToolSelection
from llama_index.core.tools.calling import acall_tool_with_selection, call_tool_with_selection

from hermes_tools._adapters.settings import HermesSettings
from hermes_tools.client.lazy import build_async, build_sync
from hermes_tools.client.wrapper import AsyncHermesOpenAI, HermesOpenAI
from hermes_tools.llama_index.convert import (
    ReplyBuilder,
    chat_response,
    is_invalid_selection,
    keep_one_call,
    to_openai_messages,
    tool_selections,
)

if TYPE_CHECKING:
    from llama_index.core.chat_engine.types import AgentChatResponse
    from llama_index.core.tools.types import BaseTool


class HermesLLM(HermesSettings, FunctionCallingLLM):
    """LlamaIndex LLM for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `OpenAILike(model=..., api_base=..., is_chat_model=True)` on models or
    servers without native tools: it takes OpenAILike's options, and `FunctionAgent`,
    `AgentWorkflow`, `predict_and_call` and `structured_predict` work as they do on OpenAI.

    Example:
        ```python
        from hermes_tools.llama_index import HermesLLM

        llm = HermesLLM(model="qwen2.5:7b", api_base="http://localhost:11434/v1")
        agent = FunctionAgent(tools=[get_weather], llm=llm)
        ```
    """

    model: str = Field(description="The endpoint's model name.")
    api_base: str | None = Field(
        default=None, description="The endpoint; read from OPENAI_API_BASE / OPENAI_BASE_URL."
    )
    api_key: str | None = Field(
        default=None, exclude=True, description="Read from OPENAI_API_KEY if unset."
    )
    api_version: str | None = Field(
        default=None,
        description="Accepted as OpenAILike accepts it; like OpenAILike, it is not sent.",
    )
    temperature: float = Field(default=DEFAULT_TEMPERATURE, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout: float = Field(default=60.0, ge=0, description="Seconds to wait for the endpoint.")
    max_retries: int = Field(default=3, ge=0)
    additional_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Other request parameters, sent as they are."
    )
    default_headers: dict[str, str] | None = Field(default=None)
    reuse_client: bool = Field(
        default=True, description="Reuse one HTTP client; False opens one per request."
    )
    strict: bool = Field(
        default=False,
        description="Mark tool schemas strict (arguments are always checked against them).",
    )
    reasoning_effort: str | None = Field(default=None)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    is_chat_model: bool = Field(
        default=True, description="Must stay True: tools need the chat completions endpoint."
    )
    is_function_calling_model: bool = Field(
        default=True, description="Reported in `metadata`, as OpenAILike reports it."
    )
    stream_usage: bool = Field(
        default=False,
        description="Ask for token usage on streamed replies (`stream_options`); some "
        "servers reject the option.",
    )

    _http_client: Any = PrivateAttr(default=None)
    _async_http_client: Any = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        http_client: Any = None,
        async_http_client: Any = None,
        **data: Any,
    ) -> None:
        super().__init__(**data)
        self._http_client = http_client
        self._async_http_client = async_http_client

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, values: Any) -> Any:
        if isinstance(values, dict):
            if values.get("api_base") is None:
                values["api_base"] = os.environ.get("OPENAI_API_BASE") or os.environ.get(
                    "OPENAI_BASE_URL"
                )
            if values.get("api_key") is None:
                values["api_key"] = os.environ.get("OPENAI_API_KEY")
            if "max_new_tokens" in values:  # as OpenAI's LLM accepts it
                values["max_tokens"] = values.pop("max_new_tokens")
        return values

    @model_validator(mode="after")
    def _needs_chat(self) -> HermesLLM:
        if not self.is_chat_model:
            raise ValueError(
                "HermesLLM needs the chat completions endpoint (tools are written into the "
                "chat prompt): leave is_chat_model=True. For a completion-only endpoint use "
                "OpenAILike without tools."
            )
        return self

    def _client_options(self, *, asynchronous: bool) -> dict[str, Any]:
        return {
            "api_key": self.api_key or "not-needed",
            "base_url": self.api_base,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "default_headers": self.default_headers,
            "http_client": self._async_http_client if asynchronous else self._http_client,
        }

    @classmethod
    def class_name(cls) -> str:
        return "HermesLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_tokens or -1,
            is_chat_model=self.is_chat_model,
            is_function_calling_model=self.is_function_calling_model,
            model_name=self.model,
            system_role=MessageRole.SYSTEM,
        )

    # -- clients ------------------------------------------------------------------------------

    @contextmanager
    def _sync_client(self) -> Iterator[HermesOpenAI]:
        if self.reuse_client:
            yield self.client
            return
        client = build_sync(self._settings(asynchronous=False))
        try:
            yield client
        finally:
            client.wrapped.close()

    @asynccontextmanager
    async def _async_client(self) -> AsyncIterator[AsyncHermesOpenAI]:
        if self.reuse_client:
            yield self.async_client
            return
        client = build_async(self._settings(asynchronous=True))
        try:
            yield client
        finally:
            await client.wrapped.close()

    def _request(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any], *, stream: bool
    ) -> dict[str, Any]:
        params = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
            **self.additional_kwargs,
            **kwargs,
        }
        params = {key: value for key, value in params.items() if value is not None}
        params["messages"] = to_openai_messages(messages)
        if stream:
            params["stream"] = True
            if self.stream_usage:
                params["stream_options"] = {"include_usage": True}
        else:
            params["stream"] = False
            params.pop("stream_options", None)  # as OpenAI's LLM: only sent when streaming
        return params

    # -- chat ---------------------------------------------------------------------------------

    def _chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        with self._sync_client() as client:
            completion = client.chat.completions.create(
                **self._request(messages, kwargs, stream=False)
            )
        return chat_response(completion)

    def _stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        request = self._request(messages, kwargs, stream=True)

        def responses() -> Generator[ChatResponse, None, None]:
            builder = ReplyBuilder()
            with self._sync_client() as client, client.chat.completions.create(**request) as stream:
                for chunk in stream:
                    yield builder.chunk(chunk)

        return responses()

    async def _achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        async with self._async_client() as client:
            completion = await client.chat.completions.create(
                **self._request(messages, kwargs, stream=False)
            )
        return chat_response(completion)

    async def _astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        request = self._request(messages, kwargs, stream=True)

        async def responses() -> AsyncGenerator[ChatResponse, None]:
            builder = ReplyBuilder()
            async with self._async_client() as client:
                stream = await client.chat.completions.create(**request)
                async with stream:
                    async for chunk in stream:
                        yield builder.chunk(chunk)

        return responses()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._chat(messages, **kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, **kwargs)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await self._achat(messages, **kwargs)

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        return await self._astream_chat(messages, **kwargs)

    # -- completion (through the chat request, with completion events only) -------------------

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return chat_to_completion_decorator(self._chat)(prompt, **kwargs)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        return stream_chat_to_completion_decorator(self._stream_chat)(prompt, **kwargs)

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return await achat_to_completion_decorator(self._achat)(prompt, **kwargs)

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        return await astream_chat_to_completion_decorator(self._astream_chat)(prompt, **kwargs)

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
        strict: bool | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])  # never the caller's list
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        specs = [tool.metadata.to_openai_tool(skip_length_check=True) for tool in tools]
        if self.strict if strict is None else strict:
            for spec in specs:  # as OpenAI's LLM marks them
                spec["function"]["strict"] = True
                spec["function"]["parameters"]["additionalProperties"] = False
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

    def predict_and_call(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        error_on_no_tool_call: bool = True,
        error_on_tool_error: bool = False,
        **kwargs: Any,
    ) -> AgentChatResponse:
        """As FunctionCallingLLM's, but an invalid call gives an error output (the model's
        mistake, with the reason) instead of a `KeyError` for its tool name."""
        response = self.chat_with_tools(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **kwargs,
        )
        selections = self.get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call
        )
        outputs = [
            _invalid_output(s) if is_invalid_selection(s) else call_tool_with_selection(s, tools)
            for s in selections
        ]
        return _agent_response(response, outputs, allow_parallel_tool_calls, error_on_tool_error)

    async def apredict_and_call(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        error_on_no_tool_call: bool = True,
        error_on_tool_error: bool = False,
        **kwargs: Any,
    ) -> AgentChatResponse:
        """The asynchronous `predict_and_call`."""
        response = await self.achat_with_tools(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **kwargs,
        )
        selections = self.get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call
        )
        outputs = [
            _invalid_output(s)
            if is_invalid_selection(s)
            else await acall_tool_with_selection(s, tools)
            for s in selections
        ]
        return _agent_response(response, outputs, allow_parallel_tool_calls, error_on_tool_error)


def resolve_tool_choice(
    choice: str | dict[str, Any] | None, tool_required: bool
) -> str | dict[str, Any]:
    """LlamaIndex's tool choice (a name, an OpenAI value, or nothing) as OpenAI spells it."""
    if choice is None:
        return "required" if tool_required else "auto"
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    return choice


def _invalid_output(selection: ToolSelection) -> ToolOutput:
    return ToolOutput(
        content=f"Error: {selection.tool_name}; nothing was run.",
        tool_name=selection.tool_name,
        raw_input={},
        raw_output=None,
        is_error=True,
    )


def _agent_response(
    response: ChatResponse,
    outputs: list[ToolOutput],
    allow_parallel_tool_calls: bool,
    error_on_tool_error: bool,
) -> AgentChatResponse:
    """What FunctionCallingLLM.predict_and_call makes of the tool outputs."""
    from llama_index.core.chat_engine.types import AgentChatResponse

    if error_on_tool_error and any(output.is_error for output in outputs):
        raise ValueError("\n\n".join(output.content for output in outputs))
    if allow_parallel_tool_calls:
        text = "\n\n".join(output.content for output in outputs)
        return AgentChatResponse(response=text, sources=outputs)
    if len(outputs) > 1:
        raise ValueError("Invalid")
    if not outputs:
        return AgentChatResponse(response=response.message.content or "", sources=outputs)
    return AgentChatResponse(response=outputs[0].content, sources=outputs)
