"""`ChatHermes`: a LangChain chat model with tool calling on endpoints that have none.

This module is wiring: requests go through `hermes_tools.wrap` (which writes tools into the
prompt, reads calls back and decides what a reply holds), replies through `convert`. As with
ChatOpenAI, `invoke` makes a plain request (or streams when `streaming=True`), `stream`
streams; both give one message.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LangSmithParams, LanguageModelInput
from langchain_core.language_models.chat_models import (
    BaseChatModel,
    agenerate_from_stream,
    generate_from_stream,
)
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
)
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils import secret_from_env
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import AliasChoices, ConfigDict, Field, SecretStr, model_validator

from hermes_tools._adapters.settings import HermesSettings
from hermes_tools.langchain.convert import ChunkTranslator, chat_result, to_openai_messages
from hermes_tools.langchain.errors import async_langchain_errors, langchain_errors

_STRUCTURED_METHODS = ("function_calling", "json_schema", "json_mode")
# Call options that belong to LangChain, not to the endpoint.
_LANGCHAIN_ONLY = ("ls_structured_output_format", "stream")


def _base_url_from_env() -> str | None:
    # ChatOpenAI reads OPENAI_API_BASE; the SDK reads OPENAI_BASE_URL.
    return os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL") or None


def _organization_from_env() -> str | None:
    return os.environ.get("OPENAI_ORG_ID") or os.environ.get("OPENAI_ORGANIZATION") or None


class ChatHermes(HermesSettings, BaseChatModel):
    """Chat model for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `ChatOpenAI(model=..., base_url=...)` on models or servers without native
    tools: it takes ChatOpenAI's options, and `bind_tools`, `with_structured_output`,
    LangGraph and LangChain agents work as usual. Tools are written into the system prompt in
    Hermes format and the calls the model writes come back as `AIMessage.tool_calls`,
    streamed or not.

    Example:
        ```python
        from hermes_tools.langchain import ChatHermes

        model = ChatHermes(model="qwen2.5-7b-instruct", base_url="http://localhost:8000/v1")
        model.bind_tools([get_weather]).invoke("Weather in Oslo?").tool_calls
        ```
    """

    model_config = ConfigDict(populate_by_name=True, protected_namespaces=())

    model_name: str = Field(validation_alias=AliasChoices("model", "model_name"))
    """The endpoint's model name."""
    base_url: str | None = Field(
        default_factory=_base_url_from_env,
        validation_alias=AliasChoices("base_url", "openai_api_base"),
    )
    """The endpoint, e.g. `http://localhost:8000/v1`; read from `OPENAI_API_BASE` or
    `OPENAI_BASE_URL` if unset."""
    api_key: SecretStr | None = Field(
        default_factory=secret_from_env("OPENAI_API_KEY", default=None),
        validation_alias=AliasChoices("api_key", "openai_api_key"),
    )
    """Read from `OPENAI_API_KEY` if unset; local servers usually need none."""
    organization: str | None = Field(
        default_factory=_organization_from_env,
        validation_alias=AliasChoices("organization", "openai_organization"),
    )
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(
        default=None, validation_alias=AliasChoices("max_tokens", "max_completion_tokens")
    )
    """Sent as `max_tokens`, which local servers understand."""
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    logit_bias: dict[int, int] | None = None
    n: int | None = None
    """Choices per request; `invoke` returns the first, `generate` all of them."""
    reasoning_effort: str | None = None
    stop: list[str] | str | None = Field(
        default=None, validation_alias=AliasChoices("stop", "stop_sequences")
    )
    timeout: Any = Field(default=None, validation_alias=AliasChoices("timeout", "request_timeout"))
    """Seconds, an `httpx.Timeout`, or a `(connect, read)` tuple."""
    max_retries: int | None = None
    """The SDK's retries (its default, 2, when unset)."""
    streaming: bool = False
    """Stream from the endpoint even when invoked (the result is the same)."""
    stream_usage: bool | None = None
    """Ask for token usage on streamed replies (`stream_options.include_usage`). As with
    ChatOpenAI on a custom endpoint, off unless set: some servers reject the option."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Other request parameters, sent to the endpoint as they are."""
    extra_body: dict[str, Any] | None = None
    """Extra JSON fields for the endpoint (e.g. `{"top_k": 20}` for vLLM)."""
    default_headers: Mapping[str, str] | None = None
    default_query: Mapping[str, object] | None = None
    http_client: Any | None = Field(default=None, exclude=True)
    """An `httpx.Client` for the synchronous requests."""
    http_async_client: Any | None = Field(default=None, exclude=True)
    """An `httpx.AsyncClient` for the asynchronous requests."""

    @model_validator(mode="after")
    def _check_choices(self) -> ChatHermes:
        if self.n is not None and self.n < 1:
            raise ValueError("n must be at least 1.")
        if self.n is not None and self.n > 1 and self.streaming:
            raise ValueError(
                "n must be 1 when streaming=True (a stream is one message); "
                "call generate() without streaming to get several choices."
            )
        return self

    def _client_options(self, *, asynchronous: bool) -> dict[str, Any]:
        options: dict[str, Any] = {
            "api_key": self.api_key.get_secret_value() if self.api_key else "not-needed",
            "base_url": self.base_url,
            "organization": self.organization,
            "timeout": self.timeout,
            "default_headers": self.default_headers,
            "default_query": self.default_query,
            "http_client": self.http_async_client if asynchronous else self.http_client,
        }
        if self.max_retries is not None:
            options["max_retries"] = self.max_retries
        return options

    # -- LangChain identity -------------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "hermes-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "base_url": self.base_url,
            **self._format_options(),
            **self._default_params,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="hermes",
            ls_model_name=kwargs.get("model", self.model_name),
            ls_model_type="chat",
        )
        temperature = kwargs.get("temperature", self.temperature)
        if temperature is not None:
            params["ls_temperature"] = temperature
        max_tokens = kwargs.get("max_tokens", self.max_tokens)
        if max_tokens is not None:
            params["ls_max_tokens"] = max_tokens
        stops = stop or kwargs.get("stop") or self.stop
        if stops:
            params["ls_stop"] = [stops] if isinstance(stops, str) else list(stops)
        return params

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["hermes_tools", "langchain"]

    @property
    def lc_secrets(self) -> dict[str, str]:
        return {"api_key": "OPENAI_API_KEY"}

    # -- tokens -------------------------------------------------------------------------------

    def get_num_tokens(self, text: str) -> int:
        """An estimate (about 4 characters a token): the endpoint's tokenizer is unknown."""
        return count_tokens_approximately([AIMessage(text)]) - 3 if text else 0

    def get_num_tokens_from_messages(
        self,
        messages: list[BaseMessage],
        tools: Sequence[Any] | None = None,
    ) -> int:
        """An estimate with LangChain's `count_tokens_approximately`; the tools prompt counts."""
        return count_tokens_approximately(messages, tools=list(tools) if tools else None)

    # -- requests -----------------------------------------------------------------------------

    @property
    def _default_params(self) -> dict[str, Any]:
        params = {
            "model": self.model_name,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "seed": self.seed,
            "logit_bias": self.logit_bias,
            "n": self.n,
            "reasoning_effort": self.reasoning_effort,
            "stop": self.stop or None,
            "extra_body": self.extra_body,
            **self.model_kwargs,
        }
        return {key: value for key, value in params.items() if value is not None}

    def _request(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        *,
        stream: bool,
        stream_usage: bool | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """The `create` keyword arguments, and the `response_format` asked for (or None)."""
        params = {**self._default_params, **kwargs}
        for key in _LANGCHAIN_ONLY:
            params.pop(key, None)
        if stop is not None:
            params["stop"] = stop
        response_format = params.get("response_format")
        if response_format is not None:
            params["response_format"] = openai_response_format(response_format)
        params["messages"] = to_openai_messages(messages)
        options = params.pop("stream_options", None)
        params["stream"] = stream
        if stream:
            if self._should_stream_usage(stream_usage, options):
                params["stream_options"] = {**(options or {}), "include_usage": True}
            elif options:
                params["stream_options"] = options
        return params, response_format

    def _should_stream_usage(self, stream_usage: bool | None, options: Any) -> bool:
        """As ChatOpenAI: the call's `stream_usage`, else `stream_options`, else the field."""
        sources = [
            stream_usage,
            (options or {}).get("include_usage") if isinstance(options, Mapping) else None,
            (self.model_kwargs.get("stream_options") or {}).get("include_usage"),
            self.stream_usage,
        ]
        return next((source for source in sources if isinstance(source, bool)), False)

    # -- generation ---------------------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        stream_usage: bool | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request, response_format = self._request(
            messages, stop, kwargs, stream=True, stream_usage=stream_usage
        )
        translator = ChunkTranslator(self.output_version, response_format=response_format)
        with langchain_errors(), self.client.chat.completions.create(**request) as stream:
            for chunk in stream:
                for message in translator.chunk(chunk):
                    yield self._announce(message, run_manager)
        for message in translator.finish():
            yield self._announce(message, run_manager)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        *,
        stream_usage: bool | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request, response_format = self._request(
            messages, stop, kwargs, stream=True, stream_usage=stream_usage
        )
        translator = ChunkTranslator(self.output_version, response_format=response_format)
        async with async_langchain_errors():
            stream = await self.async_client.chat.completions.create(**request)
            async with stream:
                async for chunk in stream:
                    for message in translator.chunk(chunk):
                        generation = ChatGenerationChunk(message=message)
                        if run_manager is not None:
                            await run_manager.on_llm_new_token(message.text, chunk=generation)
                        yield generation
        for message in translator.finish():
            generation = ChatGenerationChunk(message=message)
            if run_manager is not None:
                await run_manager.on_llm_new_token(message.text, chunk=generation)
            yield generation

    def _announce(
        self, message: AIMessageChunk, run_manager: CallbackManagerForLLMRun | None
    ) -> ChatGenerationChunk:
        generation = ChatGenerationChunk(message=message)
        if run_manager is not None:
            run_manager.on_llm_new_token(message.text, chunk=generation)
        return generation

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))
        request, response_format = self._request(messages, stop, kwargs, stream=False)
        with langchain_errors():
            completion = self.client.chat.completions.create(**request)
        return chat_result(completion, response_format=response_format)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return await agenerate_from_stream(self._astream(messages, stop, run_manager, **kwargs))
        request, response_format = self._request(messages, stop, kwargs, stream=False)
        async with async_langchain_errors():
            completion = await self.async_client.chat.completions.create(**request)
        return chat_result(completion, response_format=response_format)

    # -- tools and structured output ----------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: dict[str, Any] | str | bool | None = None,
        parallel_tool_calls: bool | None = None,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in any form `convert_to_openai_tool` accepts.

        `tool_choice`: "auto", "none", "any"/"required"/True (some call), a tool name or an
        OpenAI `{"type": "function", "function": {"name": ...}}`. `strict=True` marks the
        schemas strict, as ChatOpenAI does; arguments are always checked against them.
        """
        formatted = [convert_to_openai_tool(tool, strict=strict) for tool in tools]
        if tool_choice:
            names = [tool["function"]["name"] for tool in formatted]
            kwargs["tool_choice"] = openai_tool_choice(tool_choice, names)
        if parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parallel_tool_calls
        return super().bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type | None = None,
        *,
        method: Literal["function_calling", "json_schema", "json_mode"] = "function_calling",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | Any]:
        """Structured output from a model without native support.

        - "function_calling": the model must call a tool shaped like `schema`.
        - "json_schema": the model is asked for bare JSON following `schema`; the reply is
          extracted (fences, prose and Python literals repaired) before parsing.
        - "json_mode": bare JSON, `schema` optional (used to parse, and shown to the model).
        """
        if kwargs:
            raise ValueError(f"Unexpected arguments: {sorted(kwargs)}")
        if method not in _STRUCTURED_METHODS:
            raise ValueError(f"method must be one of {_STRUCTURED_METHODS}, not {method!r}.")
        if schema is None and method != "json_mode":
            raise ValueError(f"schema is required for method={method!r}.")
        is_pydantic = isinstance(schema, type) and is_basemodel_subclass(schema)
        llm: Runnable[LanguageModelInput, BaseMessage]
        parser: Runnable[Any, Any]
        if method == "function_calling":
            assert schema is not None
            tool = convert_to_openai_tool(schema, strict=strict)
            name = tool["function"]["name"]
            llm = self.bind_tools(
                [schema],
                tool_choice=name,
                parallel_tool_calls=False,
                strict=strict,
                ls_structured_output_format={
                    "kwargs": {"method": method, "strict": strict},
                    "schema": tool,
                },
            )
            parser = (
                PydanticToolsParser(tools=[schema], first_tool_only=True)  # type: ignore[list-item]
                if is_pydantic
                else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
            )
        else:
            json_schema = convert_to_json_schema(schema) if schema is not None else None
            response_format: dict[str, Any] = {"type": "json_object", "schema": json_schema}
            if method == "json_schema":
                assert json_schema is not None
                response_format = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": json_schema.get("title", "response"),
                        "schema": json_schema,
                        **({"strict": strict} if strict is not None else {}),
                    },
                }
            llm = self.bind(
                response_format=response_format,
                ls_structured_output_format={
                    "kwargs": {"method": method, "strict": strict},
                    "schema": json_schema,
                },
            )
            parser = (
                PydanticOutputParser(pydantic_object=schema)  # type: ignore[arg-type]
                if is_pydantic
                else JsonOutputParser()
            )
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        no_parse = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | parsed.with_fallbacks(
            [no_parse], exception_key="parsing_error"
        )


def openai_tool_choice(
    value: dict[str, Any] | str | bool, names: list[str]
) -> str | dict[str, Any]:
    """LangChain's tool_choice values as the OpenAI API spells them."""
    if value is True or value in ("any", "required"):
        return "required"
    if value in ("auto", "none"):
        return str(value)
    if isinstance(value, str) and value in names:
        return {"type": "function", "function": {"name": value}}
    if isinstance(value, Mapping):
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if value.get("type") == "function" and name in names:
            return dict(value)
    raise ValueError(
        f"tool_choice {value!r} is not understood: use 'auto', 'none', 'any', 'required', True, "
        f"one of the bound tools' names {names}, or "
        '{"type": "function", "function": {"name": ...}}.'
    )


def openai_response_format(response_format: Any) -> dict[str, Any]:
    """A `response_format` as the OpenAI API spells it: dicts in its shapes pass as they are;
    a pydantic class, TypedDict or JSON schema becomes a `json_schema` format, as ChatOpenAI
    makes it. (The endpoint layer asks for the JSON in the prompt and reads it back.)"""
    if isinstance(response_format, Mapping) and "type" in response_format:
        kind = response_format.get("type")
        if kind not in ("json_schema", "json_object", "text"):
            raise ValueError(
                f"response_format type {kind!r} is not supported; use 'json_schema', "
                "'json_object', or a pydantic class."
            )
        return dict(response_format)
    schema = convert_to_json_schema(response_format)
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.get("title", "response"), "schema": schema},
    }
