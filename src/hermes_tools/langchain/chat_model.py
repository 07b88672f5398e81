"""`ChatHermes`: a LangChain chat model with tool calling on endpoints that have none.

This module is wiring: requests go through `hermes_tools.wrap` (which writes tools into the
prompt and reads calls back), replies through `convert.ChunkTranslator`. `_generate` is the sum
of `_stream`, so `invoke`, `stream` and LangGraph's message streaming give one message.
"""

from __future__ import annotations

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
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
)
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils import from_env, secret_from_env
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import AliasChoices, ConfigDict, Field, SecretStr

from hermes_tools.adapter_settings import HermesSettings
from hermes_tools.json_answer import json_answer_instructions
from hermes_tools.langchain.convert import ChunkTranslator, to_openai_messages

_STRUCTURED_METHODS = ("function_calling", "json_schema", "json_mode")
# Call options that belong to LangChain, not to the endpoint.
_LANGCHAIN_ONLY = ("ls_structured_output_format", "stream")


class ChatHermes(HermesSettings, BaseChatModel):
    """Chat model for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `ChatOpenAI(model=..., base_url=...)` on models or servers without native
    tools: `bind_tools`, `with_structured_output`, LangGraph and LangChain agents work as
    usual. Tools are written into the system prompt in Hermes format and the calls the model
    writes come back as `AIMessage.tool_calls`, streamed or not.

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
        default_factory=from_env("OPENAI_BASE_URL", default=None),
        validation_alias=AliasChoices("base_url", "openai_api_base"),
    )
    """The endpoint, e.g. `http://localhost:8000/v1`; read from `OPENAI_BASE_URL` if unset."""
    api_key: SecretStr | None = Field(
        default_factory=secret_from_env("OPENAI_API_KEY", default=None),
        validation_alias=AliasChoices("api_key", "openai_api_key"),
    )
    """Read from `OPENAI_API_KEY` if unset; local servers usually need none."""
    temperature: float | None = None
    max_tokens: int | None = Field(
        default=None, validation_alias=AliasChoices("max_tokens", "max_completion_tokens")
    )
    timeout: float | None = Field(
        default=None, validation_alias=AliasChoices("timeout", "request_timeout")
    )
    max_retries: int = 2
    stop: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("stop", "stop_sequences")
    )
    streaming: bool = False
    """Stream from the endpoint even when invoked (the result is the same)."""
    stream_usage: bool = True
    """Ask for token usage on streamed replies (`stream_options.include_usage`)."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Other request parameters, sent to the endpoint as they are."""
    extra_body: dict[str, Any] | None = None
    """Extra JSON fields for the endpoint (e.g. `{"top_k": 20}` for vLLM)."""
    default_headers: dict[str, str] | None = None

    def _client_options(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key.get_secret_value() if self.api_key else "not-needed",
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "default_headers": self.default_headers,
        }

    # -- LangChain identity -------------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "hermes-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "base_url": self.base_url,
            "syntax": self.syntax,
            "call_tag": self.call_tag,
            "tool_result_role": self.tool_result_role,
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
        stop = stop or kwargs.get("stop") or self.stop
        if stop:
            params["ls_stop"] = stop
        return params

    @property
    def lc_secrets(self) -> dict[str, str]:
        return {"api_key": "OPENAI_API_KEY"}

    # -- requests -----------------------------------------------------------------------------

    @property
    def _default_params(self) -> dict[str, Any]:
        params = {
            "model": self.model_name,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": self.stop,
            "extra_body": self.extra_body,
            **self.model_kwargs,
        }
        return {key: value for key, value in params.items() if value is not None}

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], ChunkTranslator]:
        params = {**self._default_params, **kwargs}
        for key in _LANGCHAIN_ONLY:
            params.pop(key, None)
        if stop is not None:
            params["stop"] = stop
        openai_messages = to_openai_messages(messages)
        response_format = params.pop("response_format", None)
        if response_format is not None:
            openai_messages = _with_json_instructions(openai_messages, response_format)
        params["messages"] = openai_messages
        params["stream"] = True
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        translator = ChunkTranslator(self.output_version, json_answer=response_format is not None)
        return params, translator

    # -- generation ---------------------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request, translator = self._request(messages, stop, kwargs)
        with self.client.chat.completions.create(**request) as stream:
            for chunk in stream:
                for message in translator.chunk(chunk):
                    yield ChatGenerationChunk(message=message)
        for message in translator.finish():
            yield ChatGenerationChunk(message=message)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request, translator = self._request(messages, stop, kwargs)
        stream = await self.async_client.chat.completions.create(**request)
        async with stream:
            async for chunk in stream:
                for message in translator.chunk(chunk):
                    yield ChatGenerationChunk(message=message)
        for message in translator.finish():
            yield ChatGenerationChunk(message=message)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await agenerate_from_stream(self._astream(messages, stop, run_manager, **kwargs))

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
        OpenAI `{"type": "function", "function": {"name": ...}}`.
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


def _with_json_instructions(
    messages: list[dict[str, Any]], response_format: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Ask for bare JSON in a system message (merged into the first by the format engine)."""
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
    elif kind == "json_object":
        schema = response_format.get("schema")
    else:
        raise ValueError(
            f"response_format type {kind!r} is not supported; use 'json_schema' or 'json_object'."
        )
    instruction = {"role": "system", "content": json_answer_instructions(schema)}
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in ("system", "developer"):
        leading += 1
    return [*messages[:leading], instruction, *messages[leading:]]
