"""`HermesLLM`: a LlamaIndex function-calling LLM for endpoints without tool calling.

This module is wiring: the endpoint is reached with the `openai` SDK (`client.transport`), and
the requests and replies go through what every hermes-tools LLM shares (`base`). As with
`OpenAILike`, responses carry the SDK's objects in `raw`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    closing,
    nullcontext,
)
from typing import Any

from llama_index.core.base.llms.types import LLMMetadata, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW, DEFAULT_TEMPERATURE
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools._adapters.settings import HermesSettings
from hermes_tools._policy.drive import AsyncTransport, Transport
from hermes_tools.client.transport import AsyncOpenAITransport, OpenAITransport
from hermes_tools.llama_index.base import ToolCallingLLM


class HermesLLM(HermesSettings, ToolCallingLLM):
    """LlamaIndex LLM for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `OpenAILike(model=..., api_base=..., is_chat_model=True)` on models or
    servers without native tools: it takes OpenAILike's options, and `FunctionAgent`,
    `AgentWorkflow`, `predict_and_call` and `structured_predict` work as they do on OpenAI.

    Example:
        ```python
        from hermes_tools.llama_index import HermesLLM

        llm = HermesLLM(model="gemma3", api_base="http://localhost:11434/v1")
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
    timeout: float = Field(
        default=600.0,
        ge=0,
        description="Seconds to wait for the endpoint: 600, as the openai SDK and ChatHermes "
        "wait (a model on a CPU may take minutes; OpenAILike's 60 s would time it out).",
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        description="The openai SDK's retries (its default, 2; OpenAILike's is 3).",
    )
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
        # `context_window` (a reply option) unset: LlamaIndex's default window.
        return LLMMetadata(
            context_window=self.context_window or DEFAULT_CONTEXT_WINDOW,
            num_output=self.max_tokens or -1,
            is_chat_model=self.is_chat_model,
            is_function_calling_model=self.is_function_calling_model,
            model_name=self.model,
            system_role=MessageRole.SYSTEM,
        )

    # -- requests -----------------------------------------------------------------------------

    def _request_params(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
            **self.additional_kwargs,
        }

    def _stream_options(self, stream_usage: bool | None, given: Any) -> Any:
        """Those given with the call or in `additional_kwargs`, else usage if the field asks."""
        if given is None and self.stream_usage:
            return {"include_usage": True}
        return given

    def _transport(self) -> OpenAITransport:
        if self.reuse_client:
            return OpenAITransport(self._openai_client())
        return OpenAITransport(OpenAI(**self._client_options(asynchronous=False)))

    def _async_transport(self) -> AsyncOpenAITransport:
        if self.reuse_client:
            return AsyncOpenAITransport(self._async_openai_client())
        return AsyncOpenAITransport(AsyncOpenAI(**self._client_options(asynchronous=True)))

    def _transport_scope(self, transport: Transport) -> AbstractContextManager[Any]:
        """Without `reuse_client`, the client opened for the request is closed after it."""
        if not self.reuse_client and isinstance(transport, OpenAITransport):
            return closing(transport.client)
        return nullcontext()

    def _async_transport_scope(self, transport: AsyncTransport) -> AbstractAsyncContextManager[Any]:
        if not self.reuse_client and isinstance(transport, AsyncOpenAITransport):
            return _closed_after(transport.client)
        return nullcontext()

    def _response_raw(self, reply: Mapping[str, Any], *, whole: bool) -> Any:
        # As OpenAILike: the SDK's own objects.
        if whole:
            return ChatCompletion.model_validate(reply)
        return ChatCompletionChunk.model_validate(reply)

    def _strict_tools(self) -> bool:
        return self.strict


@asynccontextmanager
async def _closed_after(client: AsyncOpenAI) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.close()
